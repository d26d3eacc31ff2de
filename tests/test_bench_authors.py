"""scripts/bench_authors.py: its own logic, without the authors' code (error messages, regret from pulled arms,
metrics, table), and, only when $SKETCHBO_AUTHORS_DIR names a clone of their code, a small side-by-side run.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from sketchbo.problems import make_problem

REPO = Path(__file__).resolve().parent.parent
AUTHORS_DIR = os.environ.get("SKETCHBO_AUTHORS_DIR", "")


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ba = load_module(REPO / "scripts" / "bench_authors.py")


@pytest.fixture
def clean_imports(monkeypatch):
    """Undo what load_authors adds to sys.path and sys.modules."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    saved = {name: sys.modules.pop(name) for name in ("bkb_lib", "utils") if name in sys.modules}
    yield
    for name in ("bkb_lib", "utils"):
        sys.modules.pop(name, None)
    sys.modules.update(saved)


def test_missing_directory_names_the_option(tmp_path):
    with pytest.raises(ba.AuthorsCodeError, match="--authors-dir .*not an existing directory"):
        ba.load_authors(tmp_path / "nowhere")


def test_directory_without_their_code(tmp_path):
    with pytest.raises(ba.AuthorsCodeError) as info:
        ba.load_authors(tmp_path)
    msg = str(info.value)
    assert "--authors-dir" in msg and "bkb_lib.py" in msg and ba.AUTHORS_REPO in msg


def test_files_without_their_classes(tmp_path, clean_imports):
    for name in ba.AUTHORS_FILES:
        (tmp_path / name).write_text("x = 1\n")
    with pytest.raises(ba.AuthorsCodeError, match="--authors-dir .*without Batch_BKB"):
        ba.load_authors(tmp_path)


def test_command_line_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        ba.parse_args(["--authors-dir", str(tmp_path), "--T", "100"])
    assert info.value.code == 2
    assert "--authors-dir" in capsys.readouterr().err


def test_regret_from_pulled_arms():
    f = np.array([0.0, 1.0, 3.0])
    assert ba.cumulative_regret(f, [0, 2, 1, 2]) == pytest.approx(3.0 + 0.0 + 2.0 + 0.0)
    assert ba.uniform_regret(f, 4) == pytest.approx(4 * (3.0 - 4.0 / 3.0))
    assert ba.cumulative_regret(f, [2, 2]) == 0.0


def test_metrics_and_summary():
    f = np.array([0.0, 1.0, 3.0])
    a = ba.make_record([1, 2, 2, 0], [1, 2, 1], [0, 2, 3], 1.5)
    b = ba.make_record([2, 2, 2, 2], [1, 3], [0, 4], 2.5)
    m = ba.seed_metrics(a, f)
    assert m["R_T"] == pytest.approx(5.0) and m["ratio"] == pytest.approx(5.0 / ba.uniform_regret(f, 4))
    assert (m["n_batches"], m["max_batch"], m["dict_final"], m["dict_max"]) == (3, 2, 3, 3)
    s = ba.summarise([a, b], f)
    assert set(s) == {key for key, _, _ in ba.METRICS}
    assert s["R_T"]["values"] == [5.0, 0.0] and s["R_T"]["mean"] == 2.5
    assert s["R_T"]["std"] == pytest.approx(np.std([5.0, 0.0], ddof=1))
    assert s["time_s"]["mean"] == 2.0 and ba.summarise([a], f)["time_s"]["std"] == 0.0


def test_batch_starts():
    assert ba.batch_starts([0, 1, 1, 2, 2, 2]).tolist() == [0, 1, 3]
    assert ba.batch_starts([0]).tolist() == [0]


def test_table_format():
    f = np.array([0.0, 1.0, 3.0])
    rec = ba.make_record([1, 2, 2, 0], [1, 2, 1], [0, 2, 3], 1.5)
    table = ba.format_table({"authors": ba.summarise([rec, rec], f), "sketchbo": ba.summarise([rec], f)})
    lines = table.splitlines()
    assert len(lines) == 4 and set(lines[1]) == {"-"}
    for _, title, _ in ba.METRICS:
        assert title in lines[0]
    assert lines[2].startswith("authors") and lines[3].startswith("sketchbo")
    assert "5.0 ± 0.0" in lines[2] and "0.7500 ± 0.0000" in lines[2] and "3.0 ± 0.0" in lines[3]
    column = lines[0].index("R_T/R_unif")
    assert lines[2][column:].startswith("0.7500") and lines[3][column:].startswith("0.7500")


def test_protocol_noise_and_delta():
    problem = make_problem("gp_sample")
    proto = ba.protocol(problem, 500)
    assert proto["xi"] == pytest.approx(np.sqrt(0.2)) and proto["delta"] == pytest.approx(1 / 500)
    assert (proto["lam"], proto["F"], proto["qbar"], proto["C"]) == (0.2, 20.0, 2.0, 2.0)
    assert ba.protocol(problem._replace(noise_std=0.3), 10)["xi"] == 0.3
    assert ba.protocol(problem, 10, lam=0.01)["xi"] == pytest.approx(0.1)
    assert ba.our_params(proto, 500) == {"lam": 0.2, "F": 20.0, "delta": 1 / 500, "qbar": 2.0, "C": 2.0}


def test_kernel_mapping():
    with pytest.raises(ValueError, match="only"):
        ba.authors_kernel(types.SimpleNamespace(), {"name": "matern52", "lengthscales": 1.0, "variance": 1.0})
    pytest.importorskip("sklearn")
    fake_utils = types.SimpleNamespace(FastMixinKernel=lambda small, large: (small, large))
    small, large = ba.authors_kernel(fake_utils, {"name": "rbf", "sigma2": 5.0})
    X = np.random.default_rng(0).normal(size=(4, 3))
    expected = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / (2 * 5.0))
    np.testing.assert_allclose(small(X), expected, rtol=1e-12)
    np.testing.assert_allclose(large(X), expected, rtol=1e-12)


def test_qr_update_wrapper():
    from scipy.linalg import qr, qr_update

    fake = types.SimpleNamespace(qr_update=qr_update)
    ba.patch_qr_update(fake)
    wrapped = fake.qr_update
    ba.patch_qr_update(fake)
    assert fake.qr_update is wrapped
    Q, R = qr(np.array([[2.0]]))
    Q1, R1 = fake.qr_update(Q, R, np.array(3.0), np.array(3.0))  # 0-d vectors: a one-arm embedding
    np.testing.assert_allclose(Q1 @ R1, [[2.0 + 9.0]])
    Q2, R2 = fake.qr_update(Q, R, np.array([3.0]), np.array([3.0]))
    np.testing.assert_allclose(Q2 @ R2, Q1 @ R1)


@pytest.mark.skipif(not AUTHORS_DIR, reason="set SKETCHBO_AUTHORS_DIR to a clone of the authors' batch-bkb code")
def test_side_by_side_small(clean_imports):
    problem = make_problem("gp_sample")
    T = 300
    proto = ba.protocol(problem, T, **problem.suggested)
    ours, _ = ba.run_ours(problem, proto, T, 2)
    theirs = ba.run_authors(AUTHORS_DIR, problem, proto, T, 2)
    for records in (theirs, ours):
        assert all(len(r["pulled"]) == T and r["batch_sizes"].sum() == T for r in records)
        ratio = ba.summarise(records, problem.f)["ratio"]["values"]
        assert np.all(np.isfinite(ratio)) and np.all(np.asarray(ratio) < 1.0), ratio
