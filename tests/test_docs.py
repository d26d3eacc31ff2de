"""The documentation: every tutorial's code runs, README stays the front door, no citation leaves the repository.

Tutorials (docs/tutorials/*.md) are executed from their markdown, in document order, in a temporary working
directory, with ``SKETCHBO_DOCS_SMALL=1`` (the pages read it to shorten their horizons): a block preceded by
``<!-- docs-test: file PATH -->`` is written to PATH there (a user's own module or config); the ```python blocks
in one namespace, except a block preceded by the line ``<!-- docs-test: skip -->``;
and the shell blocks preceded by ``<!-- docs-test: run -->``, each line one command: ``sketchbo-run`` becomes
``python -m sketchbo`` with a tiny horizon and seed count and no progress output, run in the temporary
directory, so Hydra's ``outputs/``, ``multirun/`` and any relative ``hydra.run.dir`` land there. Shell blocks
without the marker (a SLURM submission, a long run) are shown, not run.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
SKIP, RUN = "<!-- docs-test: skip -->", "<!-- docs-test: run -->"
FILE = re.compile(r"<!-- docs-test: file ([\w./-]+) -->")  # the block is a file of the user's, written there
SMALL_T, SMALL_SEEDS = 12, 1  # the CLI commands' horizon and seeds under test


def blocks(page: Path) -> list[tuple[str, str, str]]:
    """``(language, code, marker)`` of every fenced block of ``page``, the marker being the line above it."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        out.append((m.group(1), m.group(2), before))
    return out


def commands(code: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments and blank lines dropped."""
    joined = code.replace("\\\n", " ")
    return [line.split(" #")[0].strip() for line in joined.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def steps(page: Path) -> list[tuple[str, str]]:
    """What the test runs of ``page``, in document order: ``("python", code)``, ``("shell", command)`` and
    ``("file", (path, text))`` (a block marked ``<!-- docs-test: file PATH -->``: written to PATH)."""
    out = []
    for lang, code, marker in blocks(page):
        if FILE.fullmatch(marker):
            out.append(("file", (FILE.fullmatch(marker).group(1), code)))
        elif lang == "python" and marker != SKIP:
            out.append(("python", code))
        elif lang in ("bash", "sh") and marker == RUN:
            out += [("shell", command) for command in commands(code)]
    return out


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


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs(page, tmp_path, monkeypatch):
    """The page's python blocks in one namespace, its marked commands and files, in document order, in
    ``tmp_path`` (on the import path, as a user's working directory is)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SKETCHBO_DOCS_SMALL", "1")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    namespace = {"__name__": "__docs__"}
    for i, (kind, code) in enumerate(steps(page)):
        if kind == "file":
            path = tmp_path / code[0]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(code[1], encoding="utf-8")
        elif kind == "python":
            exec(compile(code, f"{page.relative_to(ROOT)} (step {i + 1})", "exec"), namespace)
        else:
            done = subprocess.run(small(code), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, f"{code}\n{done.stdout}\n{done.stderr}"


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
