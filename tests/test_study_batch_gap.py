"""scripts/study_batch_gap.py: the variants' problems, the command line's errors and the study's core on the small
embedded ``gp_sample`` problem with our code only (no data files, no authors' code)."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(path.stem, module)
    spec.loader.exec_module(module)
    return module


sg = load_module(REPO / "scripts" / "study_batch_gap.py")


def test_scalings():
    X = np.array([[1.0, 10.0, 5.0], [3.0, 30.0, 5.0], [2.0, -10.0, 5.0]])
    m = sg.scale_rows(X, "minmax01")
    assert m.min(axis=0).tolist() == [0.0, 0.0, 0.0] and m.max(axis=0).tolist() == [1.0, 1.0, 0.0]
    z = sg.scale_rows(X, "zscore")
    np.testing.assert_allclose(z[:, :2].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(z[:, :2].std(axis=0), 1.0)
    assert np.all(z[:, 2] == 0.0)
    np.testing.assert_allclose(np.linalg.norm(sg.scale_rows(X, "unitnorm"), axis=1), 1.0)
    with pytest.raises(ValueError, match="scaling='protocol'"):
        sg.scale_rows(X, "protocol")


def test_width_readings_are_one_function_each():
    w, d2 = 5.0, np.array([0.0, 1.0, 4.0])
    as_ours = {name: np.exp(-d2 / (2 * f(w))) for name, (_, f) in sg.WIDTH_READINGS.items()}
    np.testing.assert_allclose(as_ours["protocol"], np.exp(-d2 / (2 * w)))
    np.testing.assert_allclose(as_ours["no_two"], np.exp(-d2 / w))
    np.testing.assert_allclose(as_ours["lengthscale"], np.exp(-d2 / (2 * w ** 2)))


def test_variant_problem_keeps_the_rest():
    import sketchbo as sb

    base = sb.make_problem("gp_sample")
    v = next(v for v in sg.VARIANTS if v.name == "unitnorm")
    p = sg.variant_problem("gp_sample", v, base)
    np.testing.assert_allclose(np.linalg.norm(p.arms, axis=1), 1.0)
    assert np.array_equal(p.f, base.f) and p.kernel == base.kernel
    no_two = sg.variant_problem("gp_sample", next(v for v in sg.VARIANTS if v.name == "no_two"), base)
    assert no_two.kernel["sigma2"] == base.kernel["sigma2"] / 2 and np.array_equal(no_two.arms, base.arms)


def test_command_line_errors(tmp_path, capsys):
    with pytest.raises(SystemExit):
        sg.parse_args(["--only", "protocol,nonsense"])
    err = capsys.readouterr().err
    assert "nonsense" in err and "protocol" in err
    with pytest.raises(SystemExit):
        sg.parse_args(["--authors-dir", str(tmp_path / "nowhere")])
    assert "--authors-dir" in capsys.readouterr().err
    assert [v.name for v in sg.parse_args(["--only", "C4,protocol"]).variants] == ["protocol", "C4"]


def test_study_core_on_gp_sample():
    T, seeds = 200, 2
    variants = sg.parse_variants("protocol,local,zscore")
    rows = sg.run_study("gp_sample", variants, T, seeds, authors=None, short_T=120, short_seeds=1)
    assert [(r["variant"], r["implementation"], r["code"]) for r in rows] == [
        ("protocol", "sketchbo", "bbkb"), ("local", "sketchbo", "bbkb_local"), ("zscore", "sketchbo", "bbkb")]
    for r in rows:
        t = 120 if r["variant"] == "zscore" else T
        assert r["T"] == t and r["n_seeds"] == len(r["batch_sizes"]) == (1 if r["variant"] == "zscore" else seeds)
        s = r["summary"]
        assert set(s) == {key for key, _, _ in sg.ba.METRICS}
        for i, sizes in enumerate(r["batch_sizes"]):
            assert sum(sizes) == t and min(sizes) >= 1
            assert s["max_batch"]["values"][i] == max(sizes) and s["n_batches"]["values"][i] == len(sizes)
        assert all(0.0 < v < 2.0 for v in s["ratio"]["values"])
        assert r["setting"]["C"] == 2.0 and r["setting"]["rule"] == ("local" if r["variant"] == "local" else "global")
    table = sg.format_rows(rows)
    assert len(table.splitlines()) == 2 + len(rows)
    record = json.loads(sg.dumps({"rows": rows}))
    assert record["rows"][0]["batch_sizes"] == rows[0]["batch_sizes"]
