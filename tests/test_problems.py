"""Tests of the finite-arm problems (docs/protocols.md#finite-arm-protocol): synthetic problems, dataset loaders,
data lookup."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

from sketchbo.problems import PROBLEMS, TABULAR_PROBLEMS, Problem, datasets, make_problem, synthetic
from sketchbo.problems.datasets import (
    ABALONE_FILE,
    CADATA_FILE,
    SHA256,
    find_data_file,
    load_abalone_raw,
    load_cadata_raw,
    scale_features,
)
from sketchbo.problems.synthetic import gp_sample, linear


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Never read or write the user's cache; an explicit SKETCHBO_DATA_DIR does not leak in."""
    monkeypatch.setenv(datasets.CACHE_DIR_ENV, str(tmp_path / "cache"))


@pytest.fixture
def no_local_sources(tmp_path, monkeypatch):
    """Only the (empty) cache is searched: no SKETCHBO_DATA_DIR."""
    monkeypatch.delenv(datasets.DATA_DIR_ENV, raising=False)
    cache = tmp_path / "cache"
    return cache


def _shared_copy(filename: str) -> Path:
    return find_data_file(filename, download=False)


# ----------------------------------------------------------------------------- datasets


@pytest.mark.real_data(ABALONE_FILE, CADATA_FILE)
def test_data_files_found_and_verified():
    for filename in (ABALONE_FILE, CADATA_FILE):
        path = _shared_copy(filename)
        assert path.name == filename
        assert datasets.sha256_of(path) == SHA256[filename]


@pytest.mark.real_data(ABALONE_FILE)
def test_abalone_problem():
    p = make_problem("abalone")
    assert isinstance(p, Problem) and p.name == "abalone"
    assert p.arms.shape == (4177, 8) and p.f.shape == (4177,)
    assert p.arms.dtype == np.float64 and p.f.dtype == np.float64
    np.testing.assert_array_equal(p.arms.min(axis=0), -np.ones(8))
    np.testing.assert_array_equal(p.arms.max(axis=0), np.ones(8))
    assert abs(p.f.mean()) < 1e-12 and abs(p.f.std() - 1.0) < 1e-12
    assert p.kernel == {"name": "rbf", "sigma2": 5.0}
    assert p.noise_std is None
    assert p.suggested == {"lam": 0.2, "F": 20.0}  # the papers' protocol values (docs/protocols.md#finite-arm-protocol)


@pytest.mark.real_data(ABALONE_FILE)
def test_abalone_sex_encoding_and_target():
    X, y = load_abalone_raw()
    sex = X[:, 0]
    assert set(np.unique(sex)) == {1.0, 2.0, 3.0}
    assert [int(np.sum(sex == c)) for c in (1.0, 2.0, 3.0)] == [1528, 1307, 1342]  # M, F, I
    assert sex[0] == 1.0 and sex[2] == 2.0  # the file starts M, M, F
    assert y.min() == 1 and y.max() == 29 and abs(y.mean() - 9.934) < 1e-3
    arms = make_problem("abalone").arms
    assert set(np.unique(arms[:, 0])) == {-1.0, 0.0, 1.0}
    np.testing.assert_array_equal(arms[:, 0], sex - 2.0)  # M -> -1, F -> 0, I -> 1
    # f is the standardised rings, row by row
    np.testing.assert_allclose(make_problem("abalone").f, (y - y.mean()) / y.std(), atol=1e-12)


@pytest.mark.real_data(CADATA_FILE)
def test_cadata_problem():
    p = make_problem("cadata")
    assert p.name == "cadata"
    assert p.arms.shape == (20640, 8) and p.f.shape == (20640,)
    np.testing.assert_array_equal(p.arms.min(axis=0), -np.ones(8))
    np.testing.assert_array_equal(p.arms.max(axis=0), np.ones(8))
    assert abs(p.f.mean()) < 1e-12 and abs(p.f.std() - 1.0) < 1e-12
    assert p.kernel == {"name": "rbf", "sigma2": 5.0} and p.noise_std is None
    X, y = load_cadata_raw()
    # censored target: 965 rows tie at 500001 (and 27 more at 500000), so there are many optima
    assert y.max() == 500001.0 and int(np.sum(y == y.max())) == 965 and int(np.sum(y >= 5e5)) == 992
    assert int(np.sum(p.f == p.f.max())) == 965
    assert np.argmax(p.f) == np.argmax(y)
    assert X[0, 0] == -122.23 and X[0, 7] == 8.3252  # longitude, medianIncome of the first row


@pytest.mark.real_data(CADATA_FILE)
def test_scaling_options():
    X, _ = load_cadata_raw()
    z = make_problem("cadata", scaling="zscore").arms
    np.testing.assert_allclose(z.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(z.std(axis=0), 1.0, atol=1e-10)
    np.testing.assert_array_equal(make_problem("cadata", scaling="none").arms, X)
    const = scale_features(np.array([[1.0, 5.0], [1.0, 7.0], [1.0, 6.0]]), "minmax")
    np.testing.assert_array_equal(const, [[0.0, -1.0], [0.0, 1.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match=r"scaling='l2'.*minmax.*zscore.*none"):
        make_problem("abalone", scaling="l2")


def test_checksum_mismatch_in_data_dir(tmp_path, fake_data):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    good = fake_data[ABALONE_FILE]
    (data_dir / ABALONE_FILE).write_bytes(good[: len(good) // 2])  # truncated copy
    with pytest.raises(ValueError) as info:
        make_problem("abalone", data_dir=str(data_dir))
    message = str(info.value)
    assert SHA256[ABALONE_FILE] in message
    assert str(data_dir / ABALONE_FILE) in message
    assert "SKETCHBO_DATA_DIR" in message
    # an altered byte (same size) is caught as well
    altered = bytearray(good)
    altered[100] ^= 1
    (data_dir / ABALONE_FILE).write_bytes(bytes(altered))
    with pytest.raises(ValueError, match=SHA256[ABALONE_FILE]):
        find_data_file(ABALONE_FILE, data_dir=data_dir)


def test_data_dir_env_var_is_used(tmp_path, monkeypatch, no_local_sources, fake_data):
    data_dir = tmp_path / "env_data"
    data_dir.mkdir()
    (data_dir / ABALONE_FILE).write_bytes(fake_data[ABALONE_FILE])
    monkeypatch.setenv(datasets.DATA_DIR_ENV, str(data_dir))
    assert find_data_file(ABALONE_FILE, download=False) == data_dir / ABALONE_FILE
    with pytest.raises(ValueError, match="data_dir="):
        find_data_file(ABALONE_FILE, data_dir=tmp_path / "does_not_exist")


def test_missing_file_without_download(no_local_sources):
    with pytest.raises(FileNotFoundError) as info:
        find_data_file(ABALONE_FILE, download=False)
    assert ABALONE_FILE in str(info.value) and "SKETCHBO_DATA_DIR" in str(info.value)
    assert not no_local_sources.exists() or not any(no_local_sources.iterdir())


def test_download_success_plain_file(tmp_path, monkeypatch, no_local_sources, fake_data):
    source = tmp_path / "mirror" / ABALONE_FILE
    source.parent.mkdir()
    source.write_bytes(fake_data[ABALONE_FILE])
    monkeypatch.setitem(datasets.DATA_URLS, ABALONE_FILE, source.as_uri())
    p = make_problem("abalone")  # not found anywhere: downloaded into the empty cache
    assert p.arms.shape == (4, 8) and p.arms[:, 0].tolist() == [-1.0, 0.0, 1.0, -1.0]  # sex M, F, I, M scaled
    assert sorted(x.name for x in no_local_sources.iterdir()) == [ABALONE_FILE]
    assert datasets.sha256_of(no_local_sources / ABALONE_FILE) == SHA256[ABALONE_FILE]
    source.unlink()  # the second lookup hits the cache, no download
    assert find_data_file(ABALONE_FILE) == no_local_sources / ABALONE_FILE


def _write_tgz(path: Path, member: str, payload: bytes) -> None:
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(member)
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))


def test_download_success_archive_member(tmp_path, monkeypatch, no_local_sources, fake_data):
    archive = tmp_path / "cal_housing.tgz"
    _write_tgz(archive, "CaliforniaHousing/cal_housing.data", fake_data[CADATA_FILE])
    monkeypatch.setitem(datasets.DATA_URLS, CADATA_FILE, archive.as_uri())
    path = find_data_file(CADATA_FILE)
    assert path == no_local_sources / CADATA_FILE
    assert sorted(x.name for x in no_local_sources.iterdir()) == [CADATA_FILE]  # no archive, no temp
    assert datasets.sha256_of(path) == SHA256[CADATA_FILE]


def test_download_corrupt_leaves_nothing(tmp_path, monkeypatch, no_local_sources, fake_data):
    source = tmp_path / "bad.data"
    source.write_bytes(fake_data[ABALONE_FILE][:-10])  # a truncated download
    monkeypatch.setitem(datasets.DATA_URLS, ABALONE_FILE, source.as_uri())
    with pytest.raises(ValueError) as info:
        make_problem("abalone")
    assert SHA256[ABALONE_FILE] in str(info.value) and "nothing was saved" in str(info.value)
    assert list(no_local_sources.iterdir()) == []  # no partial or temporary file


def test_download_archive_without_member_leaves_nothing(tmp_path, monkeypatch, no_local_sources):
    archive = tmp_path / "wrong.tgz"
    _write_tgz(archive, "Other/file.data", b"1,2,3\n")
    monkeypatch.setitem(datasets.DATA_URLS, CADATA_FILE, archive.as_uri())
    with pytest.raises(FileNotFoundError, match="CaliforniaHousing/cal_housing.data"):
        find_data_file(CADATA_FILE)
    assert list(no_local_sources.iterdir()) == []


def test_download_failure_is_file_not_found(tmp_path, monkeypatch, no_local_sources):
    monkeypatch.setitem(datasets.DATA_URLS, ABALONE_FILE, (tmp_path / "missing.data").as_uri())
    with pytest.raises(FileNotFoundError) as info:
        make_problem("abalone")
    message = str(info.value)
    assert ABALONE_FILE in message and str(no_local_sources) in message
    assert "SKETCHBO_DATA_DIR" in message and "data_dir" in message
    assert list(no_local_sources.iterdir()) == []


# ----------------------------------------------------------------------------- synthetic


def test_gp_sample_shapes_determinism_standardisation():
    p = gp_sample(A=300, d=3, sigma2=0.5, seed=7)
    assert p.name == "gp_sample" and p.arms.shape == (300, 3) and p.f.shape == (300,)
    assert p.arms.min() >= -1.0 and p.arms.max() <= 1.0
    assert abs(p.f.mean()) < 1e-12 and abs(p.f.std() - 1.0) < 1e-12
    assert p.kernel == {"name": "rbf", "sigma2": 0.5} and p.noise_std is None
    q = gp_sample(A=300, d=3, sigma2=0.5, seed=7)
    np.testing.assert_array_equal(p.arms, q.arms)
    np.testing.assert_array_equal(p.f, q.f)
    r = gp_sample(A=300, d=3, sigma2=0.5, seed=8)
    assert not np.allclose(p.f, r.f)
    default = make_problem("gp_sample")
    assert default.arms.shape == (1000, 2) and default.kernel["sigma2"] == 0.1


@pytest.mark.parametrize("A, sigma2", [(1000, 0.1), (1500, 1.0)])
def test_gp_sample_is_smooth(A, sigma2):
    p = gp_sample(A=A, d=1, sigma2=sigma2, seed=3)
    order = np.argsort(p.arms[:, 0])
    neighbour_gap = np.mean(np.abs(np.diff(p.f[order])))
    assert np.all(np.isfinite(p.f)) and abs(p.f.std() - 1.0) < 1e-12
    assert neighbour_gap < 0.1  # an independent (non-GP) f would give about 2 / sqrt(pi) = 1.13


def test_gp_prior_draw_eigh_fallback():
    # K = 11^T - 1e-8 I is indefinite, so the Cholesky of K + 1e-10 I fails and eigh is used
    K = np.ones((3, 3)) - 1e-8 * np.eye(3)
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(K + synthetic.JITTER * np.eye(3))
    z = np.random.default_rng(0).standard_normal((3, 20000))
    draws = synthetic.sample_gp_prior(K, z)
    assert np.all(np.isfinite(draws))
    np.testing.assert_allclose(draws[0], draws[1], atol=1e-3)  # perfectly correlated entries
    np.testing.assert_allclose(np.cov(draws), np.ones((3, 3)), atol=0.05)
    L = synthetic.sample_gp_prior(np.eye(3) * 4.0, z)  # the Cholesky branch: 2 z
    np.testing.assert_allclose(L, 2.0 * z, rtol=1e-9)


def test_gp_sample_validation():
    with pytest.raises(ValueError, match=r"A=0 .*integer >= 1"):
        gp_sample(A=0)
    with pytest.raises(ValueError, match=r"d=1\.5"):
        gp_sample(d=1.5)
    with pytest.raises(ValueError, match=r"sigma2=-1.*> 0"):
        make_problem("gp_sample", sigma2=-1)
    with pytest.raises(ValueError, match=r"noise_std=-0\.1"):
        gp_sample(noise_std=-0.1)
    assert gp_sample(A=1).f.tolist() == [0.0]


def test_linear_problem():
    p = linear(A=500, d=4, seed=1)
    assert p.arms.shape == (500, 4) and p.kernel == {"name": "linear", "variance": 1.0}
    assert p.noise_std == pytest.approx(np.sqrt((p.f.max() - p.f.min()) * 0.01), rel=1e-14)
    w, residual, *_ = np.linalg.lstsq(p.arms, p.f, rcond=None)
    assert residual[0] < 1e-20 * len(p.f)  # f is exactly linear in the arms
    rng = np.random.default_rng(1)
    rng.standard_normal((500, 4))
    np.testing.assert_allclose(w, rng.standard_normal(4), atol=1e-10)  # w* drawn after the arms
    assert make_problem("linear", noise_std=0.0).noise_std == 0.0
    np.testing.assert_array_equal(linear(seed=1).f, make_problem("linear", seed=1).f)


# ----------------------------------------------------------------------------- registry


def test_registry_and_errors():
    assert set(PROBLEMS) == {"gp_sample", "linear", "abalone", "cadata", "eggholder2", "hartmann6", "levy20",
                             "powell50", "rastrigin100", "diabetes"} | set(TABULAR_PROBLEMS)
    assert len(TABULAR_PROBLEMS) == 15  # NB201 x 3, FCNet x 4, HPOBench x 8 (tests/test_tabular.py)
    with pytest.raises(ValueError) as info:
        make_problem("branin")
    assert "problem='branin'" in str(info.value) and "gp_sample" in str(info.value)
    with pytest.raises(ValueError, match=r"\['bogus'\].*sigma2"):
        make_problem("gp_sample", bogus=1)
    with pytest.raises(ValueError, match=r"\['d'\]"):
        make_problem("abalone", d=3)
    with pytest.raises(ValueError, match=r"seed=-1"):
        make_problem("linear", seed=-1)
    with pytest.raises(ValueError, match=r"sigma2=0"):
        make_problem("cadata", sigma2=0)
    with pytest.raises(ValueError, match="filename='pima"):
        find_data_file("pima.csv")
