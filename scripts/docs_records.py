"""Every number the docs quote, generated from the committed records (experiments/records.yaml).

A page holds generated text between markers; everything between them is written by this script:

* a table, or any block: a line ``<!-- table: NAME -->``, a blank line, the generated Markdown, a blank line, a
  line ``<!-- end table -->`` (without the blank lines Markdown would read the table as part of the comment);
* a number in a sentence: ``<!--v NAME-->40.4×<!--/v-->`` (the comments do not show in the site or on GitHub).

The generators are the modules ``scripts/docs_*.py`` beside this one (one per page family, e.g.
``docs_results.py``), each with ``tables()`` and/or ``values()`` returning ``{name: text}``, computed from
records read with ``load(name)``. ``tests/test_docs_records.py`` regenerates every marker of every page
(``docs/**/*.md`` and README.md) and fails on any difference, on a marker nobody generates, and on a record
whose entry lacks a field, so the docs cannot drift from the data. The figures on the pages are redrawn from
the same records by ``FIGURES`` (``--figures``).

    python scripts/docs_records.py                 # check: print every difference, exit 1 if any
    python scripts/docs_records.py --write         # rewrite the generated parts of the pages
    python scripts/docs_records.py --list          # every generated name and the pages using it
    python scripts/docs_records.py --figures --out /tmp/figs   # redraw the figures from their records
"""
from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import yaml

# Generators import this module as ``docs_records``: run as a script, this copy is the one they must see (a
# test loading it by path registers it under that name itself), so that its cache is the one that counts.
if __name__ == "__main__":
    sys.modules["docs_records"] = sys.modules["__main__"]

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
INDEX = EXPERIMENTS / "records.yaml"
FIELDS = ("files", "what", "command", "commit", "machine", "date")  # every entry's fields (experiments/README.md)
TABLE = re.compile(r"^<!-- table: ([\w.-]+) -->\n(.*?)^<!-- end table -->$", re.S | re.M)
VALUE = re.compile(r"<!--v ([\w.-]+)-->(.*?)<!--/v-->")
ANY_MARKER = re.compile(r"<!--(?:v |/v|\s*(?:end )?table)")

# Figures of the docs and how each is drawn. ("record", name, argv): from a committed record by a plot script
# ({out} is the output folder); ("computed", script, [argv, ...]): computed afresh in seconds by a script, then
# drawn; ("tutorial", page): by the docs tests' output machinery (tests/test_docs.py); ("guide", where): an
# example drawn as that page says;
# ("runs", reason): from result sets not committed — named so, with what redrawing it needs.
FIGURES: dict[str, tuple] = {
    "gssbo_fig2.png": ("record", "gssbo_fig2",
                       ["scripts/plot_gssbo_fig2.py", "--results", "experiments/gssbo_fig2_record.json",
                        "--out", "{out}"]),
    "bkb_fig1.png": ("computed", "experiments/bkb_fig1.py",
                     [["experiments/bkb_fig1.py", "--out", "{out}/bkb_fig1"],
                      ["scripts/plot_bkb_fig1.py", "--results", "{out}/bkb_fig1", "--out", "{out}"]]),
    "gssbo_fig3.png": ("record", "gssbo_fig2",
                       ["scripts/plot_gssbo_fig3.py", "--results", "experiments/gssbo_fig2_record.json",
                        "--out", "{out}"]),
    "gssbo_fig4.png": ("record", "gssbo_fig4",
                       ["scripts/plot_gssbo_fig4.py", "--results", "experiments/gssbo_fig4_record.json",
                        "--also", "experiments/gssbo_fig2_record.json", "--out", "{out}"]),
    "gssbo_fig7.png": ("record", "gssbo_fig7",
                       ["scripts/plot_gssbo_fig7.py", "--results", "experiments/gssbo_fig7_record.json",
                        "--out", "{out}"]),
    "gssbo_fig9.png": ("runs", "drawn from result sets `results/paper/gssbo_fig9` and `gssbo_fig2`, not committed; "
                               "redraw with `scripts/reproduce.sh paper --only gssbo_fig9 --seeds 10 --seeds rembo=1 "
                               "--seeds hesbo=1`"),
    "gssbo_dkl_bnn.png": ("runs", "drawn from result sets `results/paper/gssbo_dkl_bnn` and `gssbo_fig2`, not "
                                  "committed; redraw with `scripts/reproduce.sh paper --only gssbo_dkl_bnn --seeds 10 "
                                  "--seeds std_gp_ucb=3 --seeds dkl_ucb=3`"),
    "tabular_poster.png": ("record", "tabular_poster_curves",
                           ["scripts/plot_tabular_poster.py", "--results", "experiments/tabular_poster_record.json",
                            "--out", "{out}"]),
    "tutorial_finite_batches.png": ("tutorial", "docs/tutorials/finite-black-box.md"),
    "tutorial_many_seeds_grid.png": ("tutorial", "docs/tutorials/many-seeds.md"),
    "run_curves_example.png": ("guide", "docs/guide.md: drawn by a small sketchbo-run, as that page says"),
    "time_vs_T.png": ("record", "time_vs_T_cadata",
                      ["scripts/bench_time_vs_T.py", "--plot", "experiments/time_vs_T_cadata.json", "--out", "{out}"]),
    "sbpe_scale.png": ("record", "sbpe_scale",
                       ["scripts/sbpe_scale.py", "--plot", "experiments/sbpe_scale.json", "--out", "{out}"]),
    "bbkb_fig1.png": ("record", "bbkb_fig1_curves",
                      ["scripts/plot_bbkb_fig1.py", "--results", "experiments/bbkb_fig1_record.json", "--out", "{out}"]),
    "bbkb_fig2.png": ("record", "bbkb_fig1_curves",
                      ["scripts/plot_bbkb_fig2.py", "--results", "experiments/bbkb_fig1_record.json", "--out", "{out}"]),
}


def pages() -> list[Path]:
    """Every page that may hold generated text: the docs and README."""
    return sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]


# ---------------------------------------------------------------------------------------------------- records

def index() -> dict[str, dict]:
    """The records' index, ``{name: entry}`` (experiments/records.yaml)."""
    return yaml.safe_load(INDEX.read_text(encoding="utf-8"))


def record_files(name: str) -> list[Path]:
    """The files of record ``name``, sorted; a glob names a set of files."""
    entry = index()[name]
    return sorted(Path(p) for p in glob.glob(str(EXPERIMENTS / entry["files"]), recursive=True))


_CACHE: dict[str, object] = {}


def load(name: str):
    """The raw numbers of record ``name``: the JSON of its file, or ``{path: JSON}`` for a set of files, the
    path relative to experiments/ (``box_core/rerun/x.json``) without the glob's fixed prefix (``rerun/x.json``).

    Raises:
        KeyError: ``name`` is not in experiments/records.yaml.
    """
    if name not in _CACHE:
        entries = index()
        if name not in entries:
            raise KeyError(f"record {name!r} is not in {INDEX.relative_to(ROOT)}; known: {sorted(entries)}")
        files = record_files(name)
        if "*" in entries[name]["files"]:
            base = EXPERIMENTS / entries[name]["files"].split("*")[0]
            _CACHE[name] = {str(f.relative_to(base)): json.loads(f.read_text(encoding="utf-8")) for f in files}
        else:
            _CACHE[name] = json.loads(files[0].read_text(encoding="utf-8"))
    return _CACHE[name]


def check_index() -> list[str]:
    """What is wrong with the index: entries missing a field or a file, JSON files under experiments/ that no
    entry names."""
    problems, named = [], set()
    for name, entry in index().items():
        missing = [f for f in FIELDS if not entry.get(f)]
        if missing:
            problems.append(f"record {name}: missing field(s) {missing}")
            continue
        files = record_files(name)
        if not files:
            problems.append(f"record {name}: no file matches {entry['files']!r}")
        named.update(files)
    for path in sorted(EXPERIMENTS.rglob("*.json")):
        if path not in named:
            problems.append(f"{path.relative_to(ROOT)} is in no entry of {INDEX.relative_to(ROOT)}")
    return problems


# ------------------------------------------------------------------------------------------------ formatting

def sig(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, without an exponent for ordinary magnitudes (``0.109``, ``40.4``)."""
    if x == 0 or not math.isfinite(x):
        return str(x)
    decimals = max(digits - 1 - math.floor(math.log10(abs(x))), 0)
    return f"{round(x, decimals):.{decimals}f}"


def times(x: float, digits: int = 3) -> str:
    """A ratio as ``40.4×``."""
    return sig(x, digits) + "×"


def pm(mean: float, std: float, digits: int = 3) -> str:
    """``mean ± std``, the std to as many decimals as the mean."""
    text = sig(mean, digits)
    decimals = len(text.split(".")[1]) if "." in text else 0
    return f"{text} ± {std:.{decimals}f}"


def percent(x: float, digits: int = 2) -> str:
    """A fraction as a percentage, ``0.028`` → ``2.8%``."""
    return sig(100 * x, digits) + "%"


def md_table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    """A Markdown table; ``align`` one character per column, ``l`` or ``r`` (default: first left, rest right)."""
    align = align or "l" + "r" * (len(header) - 1)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = [header, rule] + rows
    return "\n".join("| " + " | ".join(str(c) for c in line) + " |" for line in lines) + "\n"


# ------------------------------------------------------------------------------------------------ generation

class Generated(NamedTuple):
    tables: dict[str, str]  # name -> Markdown block (ends with a newline)
    values: dict[str, str]  # name -> inline text
    owner: dict[str, str]  # name -> generator module


def generators() -> list[Path]:
    """The generator modules: ``scripts/docs_*.py`` but this one."""
    here = Path(__file__).resolve()
    return sorted(p for p in here.parent.glob("docs_*.py") if p.resolve() != here)


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(f"_docs_gen_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generate() -> Generated:
    """Every generator's tables and values, computed now from the records.

    Raises:
        ValueError: two generators give the same name.
    """
    tables, values, owner = {}, {}, {}
    for path in generators():
        module = _module(path)
        for kind, out in (("tables", tables), ("values", values)):
            made = getattr(module, kind, lambda: {})()
            for name, text in made.items():
                if name in owner:
                    raise ValueError(f"{name!r} is generated by both {owner[name]} and {path.name}")
                owner[name] = path.name
                out[name] = text if kind == "values" else text.rstrip("\n") + "\n"
    return Generated(tables, values, owner)


class Difference(NamedTuple):
    page: str  # relative to the repository root
    line: int
    name: str
    shown: str
    expected: str | None  # None: nothing generates this name


def render(text: str, made: Generated) -> tuple[str, list[tuple[int, str, str, str | None]]]:
    """``text`` with every marker filled from ``made``, and the markers whose text differed:
    ``(line, name, shown, expected)``, ``expected`` None for a name nothing generates (left as it was)."""
    found = []

    def table(m):
        name, shown = m.group(1), m.group(2)
        expected = made.tables.get(name)
        if expected is None or expected.strip("\n") != shown.strip("\n") or not shown.startswith("\n"):
            found.append((text.count("\n", 0, m.start()) + 1, name, shown, expected))
        return m.group(0) if expected is None else f"<!-- table: {name} -->\n\n{expected}\n<!-- end table -->"

    def value(m):
        name, shown = m.group(1), m.group(2)
        expected = made.values.get(name)
        if expected != shown:
            found.append((text.count("\n", 0, m.start()) + 1, name, shown, expected))
        return m.group(0) if expected is None else f"<!--v {name}-->{expected}<!--/v-->"

    out = VALUE.sub(value, TABLE.sub(table, text))
    return out, found


def check(made: Generated | None = None, write: bool = False) -> list[Difference]:
    """Regenerate every marker of every page; return the differences (and, with ``write``, rewrite the pages
    where a generated text differs). A marker that is opened and not closed is a difference too."""
    made = made or generate()
    diffs = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        if not ANY_MARKER.search(text):
            continue
        rel = str(page.relative_to(ROOT))
        new, found = render(text, made)
        diffs += [Difference(rel, line, name, shown, expected) for line, name, shown, expected in found]
        for m in re.finditer(r"^<!--v ([\w.-]+)-->", text, re.M):
            diffs.append(Difference(rel, text.count("\n", 0, m.start()) + 1, m.group(1),
                                    "a value marker at the start of a line (it splits the paragraph)", None))
        stripped = VALUE.sub("", TABLE.sub("", text))
        for m in ANY_MARKER.finditer(stripped):
            diffs.append(Difference(rel, 0, "?", stripped[m.start():m.start() + 60], None))
        if write and new != text:
            page.write_text(new, encoding="utf-8")
    return diffs


def usage(made: Generated | None = None) -> dict[str, list[str]]:
    """``{name: [pages using it]}`` for every generated name (an empty list: generated, used nowhere)."""
    made = made or generate()
    used = {name: [] for name in made.owner}
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for m in list(TABLE.finditer(text)) + list(VALUE.finditer(text)):
            used.setdefault(m.group(1), []).append(str(page.relative_to(ROOT)))
    return used


def draw_figures(out: Path, only: list[str] | None = None) -> list[Path]:
    """Redraw the figures that come from records (or are computed in seconds) into ``out``; returns the files
    written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for figure, how in FIGURES.items():
        if how[0] not in ("record", "computed") or (only and figure not in only):
            continue
        for argv in (how[2] if how[0] == "computed" else [how[2]]):
            subprocess.run([sys.executable, *[a.replace("{out}", str(out)) for a in argv]], cwd=ROOT, check=True)
        written.append(out / figure)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the generated parts of the pages")
    parser.add_argument("--list", action="store_true", help="list every generated name and where it is used")
    parser.add_argument("--figures", action="store_true", help="redraw the figures that come from records")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "figures", help="folder for --figures")
    args = parser.parse_args(argv)
    problems = check_index()
    for p in problems:
        print(f"index: {p}")
    if args.figures:
        for path in draw_figures(args.out):
            print(f"drew {path}")
        return 0
    made = generate()
    if args.list:
        for name, where in sorted(usage(made).items()):
            print(f"{name:40s} {made.owner.get(name, '(nobody)'):20s} {', '.join(where) or '(unused)'}")
        return 0
    diffs = check(made, write=args.write)
    for d in diffs:
        what = "nothing generates it" if d.expected is None else f"records give {d.expected.strip()[:80]!r}"
        print(f"{d.page}:{d.line}: {d.name}: page shows {d.shown.strip()[:80]!r}, {what}")
    if args.write:
        fixed = [d for d in diffs if d.expected is not None]
        print(f"rewrote {len(fixed)} generated part(s)")
        return 1 if problems or len(fixed) < len(diffs) else 0
    print(f"{len(diffs)} difference(s)")
    return 1 if diffs or problems else 0


if __name__ == "__main__":
    sys.exit(main())
