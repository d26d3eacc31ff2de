"""The docs cannot drift from the data: every generated number and table on every page equals what the
committed records give (scripts/docs_records.py, experiments/records.yaml)."""
from __future__ import annotations

import copy
import re
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def docs_records():
    spec = importlib.util.spec_from_file_location("docs_records", ROOT / "scripts" / "docs_records.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["docs_records"] = module  # the generators import it by this name: the same copy, one cache
    spec.loader.exec_module(module)
    return module


def test_every_record_has_its_provenance_and_every_json_is_a_record(docs_records):
    assert docs_records.check_index() == []


def test_every_page_matches_its_records(docs_records):
    diffs = docs_records.check()
    assert diffs == [], "pages differ from their records (python scripts/docs_records.py --write):\n" + \
        "\n".join(f"{d.page}:{d.line} {d.name}: shown {d.shown.strip()[:60]!r}, expected "
                  f"{(d.expected or 'nothing generates it').strip()[:60]!r}" for d in diffs)


def test_a_changed_record_number_is_caught(docs_records, monkeypatch):
    """Change one number in one record (BKB's time per seed on Cadata, +10%): the check must name a page."""
    rows = copy.deepcopy(docs_records.load("bbkb_fig1"))
    row = next(r for r in rows if r["problem"] == "cadata" and r["algorithm"] == "bkb")
    row["exec_s_per_seed"] *= 1.1
    monkeypatch.setitem(docs_records._CACHE, "bbkb_fig1", rows)
    diffs = docs_records.check()
    assert any(d.name == "bbkb.speedup_over_bkb.cadata" for d in diffs), diffs


def test_a_marker_nothing_generates_is_caught(docs_records, tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("BBKB is <!--v no.such.value-->2×<!--/v--> faster.\n<!-- table: x -->\n| a |\n", "utf-8")
    monkeypatch.setattr(docs_records, "pages", lambda: [page])
    monkeypatch.setattr(docs_records, "ROOT", tmp_path)
    names = [d.name for d in docs_records.check()]
    assert "no.such.value" in names and "?" in names  # the unclosed table marker too


def test_formatting(docs_records):
    assert docs_records.sig(0.109234) == "0.109" and docs_records.sig(40.38) == "40.4"
    assert docs_records.times(154.53) == "155×" and docs_records.pm(0.10924, 0.0032) == "0.109 ± 0.003"
    assert docs_records.percent(0.0281) == "2.8%"


def test_every_figure_of_the_docs_says_where_it_comes_from(docs_records):
    """Every image under docs/figures is in FIGURES (a record, a tutorial, or result sets named as not
    committed), every FIGURES entry has its image, and every image a page shows exists."""
    figures = ROOT / "docs" / "figures"
    on_disk = {p.name for p in figures.glob("*.png")}
    assert on_disk == set(docs_records.FIGURES), (on_disk ^ set(docs_records.FIGURES))
    for page in docs_records.pages():
        for name in re.findall(r"figures/([\w.-]+\.png)", page.read_text(encoding="utf-8")):
            if page.parent.name != "figures" and "docs" in page.parts:
                assert name in on_disk, f"{page.relative_to(ROOT)} shows figures/{name}, which does not exist"


@pytest.mark.extended
def test_the_recorded_figures_redraw_from_their_records(docs_records, tmp_path):
    drawn = docs_records.draw_figures(tmp_path)
    assert drawn and all(p.stat().st_size > 10_000 for p in drawn), drawn
