"""Test configuration: float64 everywhere (docs/architecture.md#numerics), set here and not on import; the
``real_data`` marker.

Tests marked ``@pytest.mark.real_data("abalone.data", ...)`` need the original data files. When a file
cannot be found without downloading (``find_data_file(..., download=False)``: $SKETCHBO_DATA_DIR; CI's
``.ci/run`` points it at its copy of the data), the test is skipped with a reason naming the missing files, so a
fresh clone without data passes. With ``SKETCHBO_REQUIRE_DATA=1`` (set by ``.ci/run``) such a test fails
instead, so CI always runs them.
"""
import os
import tempfile

# XLA's CPU backend at optimisation level 0 in the test processes (and the subprocesses they start), before
# anything initialises a backend: the suite's programs are small and each compiled once, so LLVM's optimisation
# passes were most of their time (tests/test_api.py + tests/test_gssbo.py: 84 s -> 64 s on the 2-core CPU).
# The reference traces (tests/test_reference_traces.py) and every bit-for-bit check pass at either level.
# SKETCHBO_TEST_FULL_OPT=1 keeps XLA's default level (.ci/run runs the extended set so); so does an XLA_FLAGS
# that already sets the level.
if (os.environ.get("SKETCHBO_TEST_FULL_OPT", "").strip() in ("", "0")
        and "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", "")):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

import pytest  # noqa: E402

import sketchbo  # noqa: F401  (first: sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS, for subprocesses too)

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
# The test processes and the CLI subprocesses they start share one compilation cache, private to this test session.
os.environ.setdefault("SKETCHBO_COMPILE_CACHE", tempfile.mkdtemp(prefix="sketchbo-jax-cache-"))
# The program store (sketchbo.engine.compile_cache) is off in the test processes: tests patch module globals (e.g.
# finite_program.ROUND_BUFFER) that its keys cannot see; tests/test_compile_cache.py turns it on where it tests it.
from sketchbo.engine import compile_cache  # noqa: E402

compile_cache.STORE = False

REQUIRE_DATA_ENV = "SKETCHBO_REQUIRE_DATA"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "real_data(*files): needs the original data files; skipped when they are missing, a failure "
        f"when ${REQUIRE_DATA_ENV}=1")


def missing_data_files(files) -> list[str]:
    """The files of ``files`` that no data directory holds (the user's download cache is not looked at)."""
    from sketchbo.problems import datasets

    dirs = [d for d in datasets.search_dirs() if d != datasets.cache_dir()]
    return [f for f in files if not any((d / f).is_file() for d in dirs)]


def _require_data() -> bool:
    return os.environ.get(REQUIRE_DATA_ENV, "").strip() not in ("", "0")


def pytest_collection_modifyitems(config, items):
    for item in items:
        marker = item.get_closest_marker("real_data")
        if marker is None:
            continue
        missing = missing_data_files(marker.args)
        if missing and not _require_data():
            item.add_marker(pytest.mark.skip(reason=(
                f"needs the data file(s) {missing}: put them in $SKETCHBO_DATA_DIR "
                f"(docs/problems.md#data-files); {REQUIRE_DATA_ENV}=1 makes this a failure")))


@pytest.fixture(autouse=True)
def _required_data_present(request):
    """Under SKETCHBO_REQUIRE_DATA=1 a ``real_data`` test whose files are missing fails with that reason."""
    marker = request.node.get_closest_marker("real_data")
    if marker is not None and _require_data():
        missing = missing_data_files(marker.args)
        assert not missing, (f"{REQUIRE_DATA_ENV}=1 and the data file(s) {missing} are not in $SKETCHBO_DATA_DIR")


# Small stand-ins for the original files, in their formats: the lookup, checksum and download mechanisms are
# tested on these (with SHA256 patched to their own hashes), so they need no real data.
FAKE_ABALONE = (b"M,0.455,0.365,0.095,0.514,0.2245,0.101,0.15,15\nF,0.53,0.42,0.135,0.677,0.2565,0.1415,0.21,9\n"
                b"I,0.33,0.255,0.08,0.205,0.0895,0.0395,0.055,7\nM,0.44,0.365,0.125,0.516,0.2155,0.114,0.155,10\n")
FAKE_CADATA = (b"-122.23,37.88,41,880,129,322,126,8.3252,452600\n-122.22,37.86,21,7099,1106,2401,1138,8.3014,358500\n"
               b"-122.24,37.85,52,1467,190,496,177,7.2574,352100")


@pytest.fixture
def fake_data(tmp_path, monkeypatch):
    """{filename: bytes} of small stand-in files whose sha256 is patched in as the published one."""
    from sketchbo.problems import datasets

    files = {datasets.ABALONE_FILE: FAKE_ABALONE, datasets.CADATA_FILE: FAKE_CADATA}
    for name, payload in files.items():
        src = tmp_path / "fake-hash-source" / name
        src.parent.mkdir(exist_ok=True)
        src.write_bytes(payload)
        monkeypatch.setitem(datasets.SHA256, name, datasets.sha256_of(src))
    return files
