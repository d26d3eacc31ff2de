"""MkDocs hook: the site's formulas as MathML, made when the site is built, so a page needs no script or network.

``pymdownx.arithmatex`` (mkdocs.yml, ``generic: true``) leaves every ``$...$`` of a page as
``<span class="arithmatex">\\(...\\)</span>`` and every ``$$...$$`` as ``<div class="arithmatex">\\[...\\]</div>``,
the LaTeX HTML-escaped; this hook replaces each with the MathML that ``latex2mathml`` makes of it, which browsers
render natively (MathML Core). A formula latex2mathml cannot read (an error, unbalanced braces, a command it does
not know, which it would print as text, or an alignment it would print as a literal &) fails the build with the
page and the formula.
"""
from __future__ import annotations

import html
import re

from latex2mathml.converter import convert
from mkdocs.exceptions import PluginError

INLINE = re.compile(r'<span class="arithmatex">\\\((.*?)\\\)</span>', re.S)
DISPLAY = re.compile(r'<div class="arithmatex">\\\[(.*?)\\\]</div>', re.S)
UNKNOWN = re.compile(r">(\\[A-Za-z]+)<")  # a command latex2mathml does not know, left as the text of an element


def mathml(latex: str, display: str, where: str) -> str:
    """The MathML of one formula (its LaTeX HTML-escaped, as arithmatex leaves it)."""
    tex = html.unescape(latex).strip()
    unescaped = re.sub(r"\\[{}]", "", tex)
    problem = "unbalanced braces" if unescaped.count("{") != unescaped.count("}") else None
    try:
        out = convert(tex, display=display)
    except Exception as err:  # latex2mathml raises several types; any of them is a formula to fix
        problem, out = f"{type(err).__name__}: {err}", ""
    unknown = UNKNOWN.search(out)
    problem = problem or (unknown and f"unknown command {unknown.group(1)}")
    problem = problem or ("<mi>&</mi>" in out and "an & outside an environment latex2mathml aligns, such as align*")
    problem = problem or ('linebreak="newline"' in out and "a line break \\\\ outside an environment")
    if problem:
        raise PluginError(f"{where}: the formula {tex!r} is not LaTeX that latex2mathml reads ({problem})")
    return out


def on_page_content(html_text: str, page, config, files) -> str:
    where = page.file.src_uri
    html_text = DISPLAY.sub(
        lambda m: f'<div class="math-display">{mathml(m.group(1), "block", where)}</div>', html_text)
    return INLINE.sub(lambda m: mathml(m.group(1), "inline", where), html_text)
