"""The documentation: every tutorial's code runs and shows what it prints, README stays the front door, no citation
leaves the repository.

Tutorials (docs/tutorials/*.md) are executed from their markdown, in document order, in a temporary working
directory, at the sizes the page shows: a block preceded by ``<!-- docs-test: file PATH -->`` is written to PATH
there (a user's own module or config); the ```python blocks in one namespace, except a block preceded by the line
``<!-- docs-test: skip -->``; and the shell blocks preceded by ``<!-- docs-test: run -->``, each line one command:
``sketchbo-run`` becomes ``python -m sketchbo`` with a tiny horizon and seed count and no progress output, run in
the temporary directory, so Hydra's ``outputs/``, ``multirun/`` and any relative ``hydra.run.dir`` land there.
Shell blocks without the marker (a SLURM submission, a long run) are shown, not run.

**Outputs.** What a python block prints is shown under it, in a ```text block preceded by
``<!-- docs-test: output -->``, and checked: the test fails when a block prints something its page does not show,
or when the page shows what the block no longer prints. Text must match (runs of spaces aside); numbers match to a
relative 1e-6, or, for a number printed with decimals, to one unit of its last printed digit (a value on a
rounding boundary may print either way on another CPU); integers match exactly. Outputs hold no wall-clock time.
**Figures.** A block may save a figure in the working directory; the line ``<!-- docs-test: figure NAME -->`` after
it, above the ``<figure>`` that shows it, names the file, and the figure's image (docs/figures/tutorial_*.png) is
checked against it pixel by pixel, with a tolerance for antialiasing.
``SKETCHBO_DOCS_UPDATE=1 python -m pytest tests/test_docs.py`` runs the same code and rewrites the output blocks
(keeping each block's first line, its title) and the figures from what it printed and saved.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
SKIP, RUN, OUTPUT = "<!-- docs-test: skip -->", "<!-- docs-test: run -->", "<!-- docs-test: output -->"
FILE = re.compile(r"<!-- docs-test: file ([\w./-]+) -->")  # the block is a file of the user's, written there
FIGURE = re.compile(r"^<!-- docs-test: figure ([\w.-]+) -->\n+<figure[^>]*>\s*!\[[^\]]*\]\(([^)\s]+)\)", re.M)
OUTPUT_FENCE = '```text title="Output"'  # the first line of a new output block
SMALL_T, SMALL_SEEDS = 12, 1  # the CLI commands' horizon and seeds under test
UPDATE = os.environ.get("SKETCHBO_DOCS_UPDATE", "").strip() not in ("", "0")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
CLOCK = re.compile(r"\d\s*(?:s|ms|sec|seconds|min)\b|elapsed|wall[ _-]?time", re.I)  # a time in an output


def blocks(page: Path) -> list[tuple[str, str, str, re.Match]]:
    """``(language, code, marker, match)`` of every fenced block of ``page``, the marker being the line above it."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        out.append((m.group(1), m.group(2), before, m))
    return out


def commands(code: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments and blank lines dropped."""
    joined = code.replace("\\\n", " ")
    return [line.split(" #")[0].strip() for line in joined.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def steps(page: Path) -> list[tuple[str, object]]:
    """What the test runs of ``page``, in document order: ``("python", (code, fence, shown))``, ``fence`` being the
    block's match and ``shown`` the output block under it (its match, or None); ``("shell", command)``; and
    ``("file", (path, text))`` (a block marked ``<!-- docs-test: file PATH -->``: written to PATH)."""
    text = page.read_text(encoding="utf-8")
    out = []
    for lang, code, marker, m in blocks(page):
        if marker == OUTPUT:
            kind, previous = out[-1] if out else (None, None)
            assert kind == "python" and previous[2] is None and text[previous[1].end():m.start()].strip() == OUTPUT, (
                f"{page.name}: the output block at line {text.count(chr(10), 0, m.start()) + 1} does not follow a "
                "python block directly")
            out[-1] = ("python", (previous[0], previous[1], m))
        elif FILE.fullmatch(marker):
            out.append(("file", (FILE.fullmatch(marker).group(1), code)))
        elif lang == "python" and marker != SKIP:
            out.append(("python", (code, m, None)))
        elif lang in ("bash", "sh") and marker == RUN:
            out += [("shell", command) for command in commands(code)]
    return out


def same_output(shown: str, printed: str) -> bool:
    """Whether ``printed`` is what the page ``shows``: the same text between the numbers (runs of whitespace as one
    space), the same integers, decimals to a relative 1e-6 or one unit of the shown number's last digit."""
    def split(text):
        text = " ".join(text.split())
        return NUMBER.split(text), NUMBER.findall(text)

    (words_a, numbers_a), (words_b, numbers_b) = split(shown), split(printed)
    if [w.strip() for w in words_a] != [w.strip() for w in words_b] or len(numbers_a) != len(numbers_b):
        return False
    for a, b in zip(numbers_a, numbers_b):
        decimal = "." in a or "e" in a.lower()
        if not decimal:
            if "." in b or "e" in b.lower() or int(a) != int(b):
                return False
            continue
        x, y = float(a), float(b)
        digits = len(a.lower().split("e")[0].partition(".")[2])
        unit = 10.0 ** (-digits) * (10.0 ** int(a.lower().split("e")[1]) if "e" in a.lower() else 1.0)
        if abs(x - y) > max(1e-6 * max(abs(x), abs(y)), unit * (1 + 1e-9)):
            return False
    return True


def same_figure(shown: Path, made: Path) -> str | None:
    """None when the image ``made`` is the page's ``shown`` one up to antialiasing (the same size, at most 0.5% of
    the pixels differing by more than 0.25 in a channel); else what differs."""
    import matplotlib.image

    a, b = matplotlib.image.imread(shown), matplotlib.image.imread(made)
    if a.shape != b.shape:
        return f"the sizes differ: {a.shape} shown, {b.shape} made"
    differ = float((abs(a.astype(float) - b.astype(float)).max(axis=-1) > 0.25).mean())
    return None if differ <= 0.005 else f"{differ:.1%} of the pixels differ"


def small(command: str) -> list[str]:
    """A tutorial's ``sketchbo-run`` command at the test's scale, as an argument list."""
    args = shlex.split(command)
    assert args[0] == "sketchbo-run", command
    out = [sys.executable, "-m", "sketchbo"]
    for arg in args[1:]:
        if arg.startswith("T="):
            arg = f"T={SMALL_T}"
        elif arg.startswith("n_seeds="):
            arg = f"n_seeds={SMALL_SEEDS}"
        out.append(arg)
    return out + ["progress=false"]


def test_every_tutorial_is_in_the_site_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert TUTORIALS, "no tutorials found"
    for page in TUTORIALS:
        assert f"tutorials/{page.name}" in nav, f"{page.name} is not in mkdocs.yml's nav"
        assert steps(page), f"{page.name} has no code the tests run"


def run_page(page: Path, tmp_path: Path, monkeypatch) -> list[tuple[re.Match, re.Match | None, str]]:
    """Runs ``page``'s steps in ``tmp_path`` (on the import path, as a user's working directory is); returns, for
    each python block, its fence, the output block under it and what it printed."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    namespace = {"__name__": "__docs__"}
    printed = []
    for i, (kind, step) in enumerate(steps(page)):
        if kind == "file":
            path = tmp_path / step[0]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(step[1], encoding="utf-8")
        elif kind == "python":
            code, fence, shown = step
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                exec(compile(code, f"{page.relative_to(ROOT)} (step {i + 1})", "exec"), namespace)
            printed.append((fence, shown, buffer.getvalue()))
        else:
            done = subprocess.run(small(step), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, f"{step}\n{done.stdout}\n{done.stderr}"
    return printed


def rewrite(page: Path, printed) -> None:
    """Rewrites ``page``'s output blocks from what its python blocks printed: replaced, added, or removed where a
    block now prints nothing."""
    text = page.read_text(encoding="utf-8")
    edits = []  # (start, end, new text), in order
    for fence, shown, out in printed:
        if shown is not None and out.strip():  # the block's first line, its title, is kept
            header = text[shown.start():text.index("\n", shown.start())]
            start = text.rindex(OUTPUT, fence.end(), shown.start())
            edits.append((start, shown.end(), f"{OUTPUT}\n{header}\n{out.rstrip()}\n```"))
        elif shown is not None:
            edits.append((fence.end(), shown.end(), ""))
        elif out.strip():
            edits.append((fence.end(), fence.end(), f"\n\n{OUTPUT}\n{OUTPUT_FENCE}\n{out.rstrip()}\n```"))
    for start, end, block in reversed(edits):
        text = text[:start] + block + text[end:]
    page.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_and_shows_its_output(page, tmp_path, monkeypatch):
    """The page's code runs; every python block's output block is what it prints; every figure is what it saves.
    Under SKETCHBO_DOCS_UPDATE=1 the page's output blocks and figures are rewritten instead of checked."""
    printed = run_page(page, tmp_path, monkeypatch)
    text = page.read_text(encoding="utf-8")
    figures = [(tmp_path / name, (page.parent / src).resolve()) for name, src in FIGURE.findall(text)]
    if UPDATE:
        rewrite(page, printed)
        for made, shown in figures:
            assert made.is_file(), f"{page.name}: the code saved no {made.name}"
            shutil.copyfile(made, shown)
        return
    wrong = []
    for fence, shown, out in printed:
        code = fence.group(2).strip().splitlines()
        where = f"the block starting {code[0]!r}" if code else "an empty block"
        if shown is None and out.strip():
            wrong.append(f"{where} prints\n{out}but the page shows no output block under it")
        elif shown is not None and not same_output(shown.group(2), out):
            wrong.append(f"{where} prints\n{out}but the page shows\n{shown.group(2)}")
        if CLOCK.search(out):
            wrong.append(f"{where} prints a time, which no two runs share: {CLOCK.search(out).group(0)!r}")
    for made, shown in figures:
        assert shown.name.startswith("tutorial_") and shown.parent == ROOT / "docs" / "figures", (
            f"{page.name}: a tutorial's figure is docs/figures/tutorial_*.png, not {shown}")
        if not made.is_file() or not shown.is_file():
            wrong.append(f"the figure {shown.name}: {made.name} saved: {made.is_file()}, shown: {shown.is_file()}")
        elif (differ := same_figure(shown, made)) is not None:
            wrong.append(f"the figure {shown.name} is not what the code saves as {made.name}: {differ}")
    assert not wrong, (f"{page.name}: " + "\n\n".join(wrong) +
                       "\n(SKETCHBO_DOCS_UPDATE=1 python -m pytest tests/test_docs.py rewrites the pages' outputs)")


def test_tutorial_figures_are_captioned():
    """Every image of a tutorial is in a ``<figure>`` with a ``<figcaption>``."""
    for page in TUTORIALS:
        text = page.read_text(encoding="utf-8")
        figures = re.findall(r"<figure[^>]*>(.*?)</figure>", text, re.S)
        images = re.findall(r"!\[[^\]]*\]\([^)]+\)", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
        captioned = [f for f in figures if re.search(r"!\[", f) and re.search(r"<figcaption[^>]*>\s*\S", f)]
        assert len(images) == len(captioned), f"{page.name}: {len(images)} images, {len(captioned)} captioned"


def test_output_blocks_are_compared_by_text_and_numbers():
    assert same_output("R_T [0.121 0.123]\nbest: 265", "R_T [0.121  0.124]\nbest: 265")  # one unit of the last digit
    assert not same_output("R_T [0.121 0.123]", "R_T [0.121 0.125]")
    assert not same_output("best: 265", "best: 266")  # integers exactly
    assert not same_output("same queries: True", "same queries: False")
    assert same_output("mean=-0.055146833147079626", "mean=-0.05514683314708")  # relative 1e-6
    assert not same_output("mean=-0.0551468", "mean=-0.0551498")
    assert CLOCK.search("compiled in 3.3 s of 8.3 s") and CLOCK.search("elapsed 0.1s")
    assert not CLOCK.search("206 evaluations in 48 batches; 2 seeds; queries: (2, 100, 2)")


def test_readme_is_the_front_door():
    words = len((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert words <= 1500, f"README.md has {words} words; the front door holds <= 1,500 and links into the docs"


def test_readme_links_resolve():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((?!https?://|#)([^)#\s]+)(?:#[^)\s]*)?\)", readme)
    assert links, "README links into nothing"
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, f"README links to missing files: {missing}"


def anchors(page: Path) -> set[str]:
    """The ids of ``page``'s headings: explicit ``{#id}`` and the slugs MkDocs gives the others."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        m = re.match(r"#{1,6} (.*?)\s*(\{#([\w-]+)\})?\s*$", line)
        if m and m.group(3):
            out.add(m.group(3))
        elif m:
            title = unicodedata.normalize("NFKD", m.group(1).replace("`", "")).encode("ascii", "ignore").decode()
            out.add(re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", title).strip().lower()))
    return out


def test_citations_of_the_docs_resolve():
    """Every ``docs/<page>.md#<anchor>`` that code, configs, tests or the README cite names a page and a heading."""
    done = subprocess.run(["git", "grep", "--untracked", "-ohE", r"docs/[a-z_/-]+\.md(#[A-Za-z0-9_-]+)?", "--", ".",
                           ":!docs"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode in (0, 1), f"git grep failed: {done.stderr.strip()}"  # 1: nothing found
    broken = []
    for ref in sorted(set(done.stdout.split())):
        page, _, anchor = ref.partition("#")
        if not (ROOT / page).is_file() or (anchor and anchor not in anchors(ROOT / page)):
            broken.append(ref)
    assert not broken, f"citations of pages or headings that do not exist: {broken}"


def test_no_citation_of_documents_outside_the_repository():
    """The project documents itself (docs/): no citation of the design or protocol notes kept outside the repository,
    and no path out of the checkout to them."""
    section = " \u00a7"  # the section sign, kept out of this file's text: the search must not find itself
    pattern = "|".join(["DESIGN" + section, "PROTOCOLS" + section, r"DESIGN\.md", r"PROTOCOLS\.md", r"\.\./shared",
                        r"(DESIGN|PROTOCOLS)\s*$"])  # the last: a citation broken after the document's name
    done = subprocess.run(["git", "grep", "--untracked", "-nE", pattern, "--", ".", ":!.ci"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode in (0, 1), f"git grep failed: {done.stderr.strip()}"  # 1: nothing found
    assert done.stdout == "", "citations of documents outside the repository:\n" + done.stdout


def test_update_rewrites_output_blocks(tmp_path):
    """SKETCHBO_DOCS_UPDATE's rewrite: an output block added, one replaced (its title kept), one removed."""
    page = tmp_path / "page.md"
    page.write_text("```python\nprint(1)\n```\n\ntext\n\n```python\nprint(2)\n```\n\n" + OUTPUT
                    + '\n```text title="Output (small)"\nold\n```\n\n```python\npass\n```\n\n' + OUTPUT
                    + "\n```text\nstale\n```\n", encoding="utf-8")
    pythons = [step for kind, step in steps(page) if kind == "python"]
    rewrite(page, [(fence, shown, out) for (_, fence, shown), out in zip(pythons, ["1\n", "2\n", ""])])
    assert page.read_text(encoding="utf-8") == (
        "```python\nprint(1)\n```\n\n" + OUTPUT + "\n" + OUTPUT_FENCE + "\n1\n```\n\ntext\n\n"
        "```python\nprint(2)\n```\n\n" + OUTPUT + '\n```text title="Output (small)"\n2\n```\n\n```python\npass\n```\n')
