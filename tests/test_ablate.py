"""scripts/ablate_box_core.py: a row assembled from one-seed runs (``--per-seed``) equals the one S-seed run."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "ablate_box_core.py"


@pytest.fixture(scope="module")
def ablate():
    spec = importlib.util.spec_from_file_location("ablate_box_core", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ARGS = ["--problems", "hartmann6", "--algorithms", "std_gp_ucb", "--variants", "protocol", "--T", "24"]


def test_per_seed_rows_assemble_to_the_one_program_row(ablate, tmp_path, capsys):
    assert ablate.main([*ARGS, "--seeds", "2", "--first-seed", "1", "--out", str(tmp_path / "one")]) == 0
    assert ablate.main([*ARGS, "--seeds", "2", "--first-seed", "1", "--per-seed", "--out", str(tmp_path / "per")]) == 0
    name = "hartmann6_std_gp_ucb_protocol_T24_S2_from1.json"
    one = json.loads((tmp_path / "one" / name).read_text())
    per = json.loads((tmp_path / "per" / name).read_text())
    assert sorted(p.name for p in (tmp_path / "per").iterdir()) == sorted(
        [name, "hartmann6_std_gp_ucb_protocol_T24_S1_from1.json", "hartmann6_std_gp_ucb_protocol_T24_S1_from2.json"])
    assert per["assembled_from"] == ["hartmann6_std_gp_ucb_protocol_T24_S1_from1.json",
                                     "hartmann6_std_gp_ucb_protocol_T24_S1_from2.json"]
    for key in ("regret_ratio", "simple_regret", "on_face"):
        assert per[key] == one[key], key  # the same seeds' numbers, to the last digit
    assert (per["seeds"], per["first_seed"]) == (2, 1)
    seed2 = json.loads((tmp_path / "per" / "hartmann6_std_gp_ucb_protocol_T24_S1_from2.json").read_text())
    assert seed2["regret_ratio"] == one["regret_ratio"][1:]
    # a second call finds everything on disk and runs nothing
    capsys.readouterr()
    assert ablate.main([*ARGS, "--seeds", "2", "--first-seed", "1", "--per-seed", "--out", str(tmp_path / "per")]) == 0
    assert "on disk" in capsys.readouterr().err


def test_one_seed_per_seed_is_the_seed_file_written_once(ablate, tmp_path):
    """``--per-seed --seeds 1`` (a seed run beside another) writes the seed's own file, not an assembly of it."""
    assert ablate.main([*ARGS, "--seeds", "1", "--first-seed", "2", "--per-seed", "--out", str(tmp_path)]) == 0
    files = list(tmp_path.iterdir())
    assert [p.name for p in files] == ["hartmann6_std_gp_ucb_protocol_T24_S1_from2.json"]
    row = json.loads(files[0].read_text())
    assert "assembled_from" not in row and (row["seeds"], row["first_seed"]) == (1, 2)


def test_bad_first_seed_is_a_clear_error(ablate, tmp_path, capsys):
    with pytest.raises(SystemExit):
        ablate.main([*ARGS, "--first-seed", "-1", "--out", str(tmp_path)])
    assert "--first-seed must be >= 0 (got -1)" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_a_variant_the_algorithm_lacks_is_a_clear_error_before_any_run(ablate, tmp_path, capsys):
    """dkl_ucb has no gp_core (its fit is its own): its variants start from the protocol's fit and width; an
    output warp, which it lacks, is refused before anything runs."""
    assert ablate.variant_params("dkl_ucb", "protocol") == {"gp_fit": "adam", "beta_c": 0.2}
    assert ablate.variant_params("dkl_ucb", "map+beta") == {"gp_fit": "map", "beta_c": 0.02}
    assert ablate.variant_params("std_gp_ucb", "beta") == {"gp_core": "protocol", "beta_c": 0.02}
    with pytest.raises(SystemExit):
        ablate.main([*ARGS, "--algorithms", "std_gp_ucb", "dkl_ucb", "--variants", "beta", "map+beta+copula",
                     "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert "'map+beta+copula' sets ['output_warp'], which --algorithms 'dkl_ucb' does not have" in err
    assert "its variants: ['protocol', 'map', 'beta', 'map+beta', 'theory'" in err
    assert not any(tmp_path.iterdir())  # nothing ran, nothing written
