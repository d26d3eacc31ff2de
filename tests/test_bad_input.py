"""Bad input, everywhere a user can give it (property-based, hypothesis).

Generated bad run arguments, hyperparameters, kernels, problems, ask/tell calls, CLI configs and data files
are thrown at the validation layer. Each must raise a ValueError that names the parameter, before any
program is built (``make_program`` of both domains and the ask/tell programs are patched to fail, so reaching them
fails the test) and without writing a file. ``EXAMPLES`` counts the examples tried; the last test checks
that they add up to at least 500.
"""
from __future__ import annotations

import copy
import math
import shutil
import tempfile
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf, open_dict

import sketchbo.api as api
from sketchbo.engine import asktell
import sketchbo.cli.app as cli
import sketchbo as sb
from sketchbo.domains import box, finite
from sketchbo.engine import program
from sketchbo.algorithms import ALGORITHMS, BO_ALGORITHMS
from sketchbo.kernels import KERNELS
from sketchbo.problems import datasets, make_problem
from sketchbo.problems.datasets import ABALONE_FILE, SHA256

SMALL = make_problem("gp_sample", A=40, d=2, sigma2=0.2, seed=2)
ORIGINAL_PROGRAMS = (asktell.finite_programs, asktell.box_programs)  # the real ask/tell programs, for the one test that needs a pending batch
EXAMPLES: dict[str, int] = {}
MAX = 90  # examples per property
# derandomize: the same examples on every run (no flaky suite); database=None: no .hypothesis/ directory
SETTINGS = settings(max_examples=MAX, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def count(name: str) -> None:
    EXAMPLES[name] = EXAMPLES.get(name, 0) + 1


def boom(*args, **kwargs):
    raise AssertionError("a program was built before the input was rejected")


@pytest.fixture(scope="module", autouse=True)
def no_programs():
    """Building the runner's or the ask/tell API's programs fails the test; jitted helpers are left alone."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(finite, "make_program", boom)
        m.setattr(box, "make_program", boom)
        m.setattr(program, "_PROGRAMS", {})
        m.setattr(asktell, "finite_programs", boom)
        m.setattr(asktell, "box_programs", boom)
        yield


@pytest.fixture(scope="module")
def scratch():
    """A directory that must stay empty: runs that are rejected write nothing."""
    path = Path(tempfile.mkdtemp(prefix="sketchbo-bad-input-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def assert_nothing_written(path: Path):
    assert not path.exists() or not any(path.iterdir()), sorted(path.rglob("*"))


# --------------------------------------------------------------------------------------- strategies

TEXT = st.text(max_size=6)
NUMBERS = st.one_of(st.integers(-10, 10), st.floats(allow_nan=True, allow_infinity=True))
JSONISH = st.one_of(TEXT, st.booleans(), st.lists(NUMBERS, max_size=3),
                    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def bad_int(lo: int, none_is_valid: bool = False):
    """Not an integer >= lo for the runner (which takes no strings, booleans or fractional floats as integers)."""
    whole_ok = lambda v: math.isfinite(v) and v.is_integer() and v >= lo  # noqa: E731  (T=1e3 is taken as 1000)
    bad = st.one_of(st.integers(max_value=lo - 1), st.floats(allow_nan=True).filter(lambda v: not whole_ok(v)), JSONISH)
    return bad if none_is_valid else st.one_of(bad, st.none())


def accepted_as_float(value, ok) -> bool:
    """Whether ``finite.resolve_hyperparameters`` takes ``value`` as a number (strings like '0.5' included)."""
    if isinstance(value, (bool, list, dict)) or value is None:
        return False
    try:
        v = float(value)
    except (TypeError, ValueError):
        return False
    return math.isfinite(v) and ok(v)


FLOAT_RANGES = {  # the documented ranges of the float hyperparameters
    "lam": lambda v: v > 0, "qbar": lambda v: v > 0, "rls_qbar": lambda v: v > 0, "C": lambda v: v >= 1, "F": lambda v: v >= 0,
    "delta": lambda v: 0 < v < 1, "eps": lambda v: 0 <= v <= 1,
}


def bad_float(key: str):
    ok = FLOAT_RANGES[key]
    values = st.one_of(NUMBERS, JSONISH, st.none())
    # None is valid for delta (1/T), lam and F (the problem's suggested value): it is no bad value for them
    return values.filter(lambda v: not accepted_as_float(v, ok) and not (key in ("delta", "lam", "F") and v is None))


def bad_choice(key: str):
    return st.one_of(TEXT, NUMBERS, st.booleans(), st.none(), st.lists(TEXT, max_size=2)).filter(
        lambda v: v not in finite.CHOICES[key])


@st.composite
def bad_hyperparameter(draw):
    """(algorithm, params, name that the error must contain) with exactly one bad entry."""
    algorithm = draw(st.sampled_from(sorted(ALGORITHMS)))
    defaults = ALGORITHMS[algorithm].defaults
    checked = [k for k in sorted(defaults) if k in FLOAT_RANGES or k in finite.CHOICES or k in ("m_max", "u_max")]
    kind = draw(st.sampled_from(["known", "unknown"]) if checked else st.just("unknown"))
    if kind == "unknown":
        key = draw(st.from_regex(r"[a-z_]{1,8}", fullmatch=True).filter(lambda k: k not in defaults and k != "name"))
        return algorithm, {key: draw(NUMBERS)}, repr(key)
    key = draw(st.sampled_from(checked))
    if key in FLOAT_RANGES:
        value = draw(bad_float(key))
    elif key in finite.CHOICES:
        value = draw(bad_choice(key))
    else:  # m_max None is valid: the backend's first capacity (finite.default_m_max)
        value = draw(bad_int(1, none_is_valid=key == "m_max"))
    return algorithm, {key: value}, f"algorithm.{key}="


# ------------------------------------------------------------------------------------------ runner

RUN_ARGUMENTS = {  # argument -> strategy of bad values
    "T": bad_int(1), "n_seeds": bad_int(1), "seed": bad_int(0), "rounds_per_call": bad_int(1, none_is_valid=True),
    "devices": st.one_of(bad_int(1, none_is_valid=True), st.integers(1000, 10 ** 6)),
    "dtype": st.one_of(TEXT, NUMBERS, st.none(), st.lists(TEXT, max_size=2)).filter(
        lambda v: v not in ("float64", "float32")),
    "seed_axis": st.one_of(TEXT, NUMBERS, st.none()).filter(lambda v: v not in ("auto", "map", "vmap")),
    "checkpoint_every": bad_int(1),  # with a checkpoint path (None included: the pair is incomplete)
    "checkpoint": st.one_of(st.integers(), st.just(""), st.just(b"x.npz"), st.lists(TEXT, max_size=2)),
}


@SETTINGS
@given(data=st.data())
def test_bad_run_arguments(data, scratch):
    name = data.draw(st.sampled_from(sorted(RUN_ARGUMENTS)))
    value = data.draw(RUN_ARGUMENTS[name])
    kwargs = {"T": 10, "progress": False, name: value}
    if name == "checkpoint_every":
        kwargs["checkpoint"] = scratch / "ck.npz"
    elif name == "checkpoint":
        kwargs["checkpoint_every"] = 1
    count("run arguments")
    with pytest.raises(ValueError, match=rf"\b{name}="):
        sb.run("bbkb", SMALL, **kwargs)
    assert_nothing_written(scratch)


@SETTINGS
@given(case=bad_hyperparameter())
def test_bad_hyperparameters(case, scratch):
    algorithm, params, name = case
    count("hyperparameters")
    with pytest.raises(ValueError) as err:
        sb.run(algorithm, SMALL, T=10, params=params, progress=False, checkpoint=scratch / "ck.npz",
                   checkpoint_every=1)
    assert name in str(err.value)
    assert_nothing_written(scratch)


@st.composite
def bad_kernel(draw):
    """(kernel dict or other value, name the error must contain)."""
    kind = draw(st.sampled_from(["name", "value", "unknown", "type"]))
    if kind == "type":
        return draw(st.one_of(TEXT, NUMBERS, st.lists(TEXT, max_size=2))), "kernel="
    if kind == "name":
        return {"name": draw(st.one_of(TEXT, NUMBERS, st.none()).filter(lambda v: v not in KERNELS))}, "kernel.name="
    name = draw(st.sampled_from(sorted(KERNELS)))
    defaults = KERNELS[name].default_params(2)
    if kind == "unknown":
        key = draw(st.from_regex(r"[a-z]{1,8}", fullmatch=True).filter(lambda k: k not in defaults))
        return {"name": name, key: 1.0}, repr(key)
    key = draw(st.sampled_from(sorted(defaults)))
    bad_number = st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not (math.isfinite(v) and v > 0))
    value = draw(st.one_of(
        bad_number, st.integers(max_value=0), TEXT, st.booleans(),
        st.lists(st.floats(0.1, 10.0), min_size=3, max_size=4),  # neither a scalar nor d = 2 values
        st.lists(st.lists(st.floats(0.1, 10.0), min_size=1, max_size=2), min_size=1, max_size=2),  # nested
        st.lists(bad_number, min_size=2, max_size=2)))
    return {"name": name, key: value}, f"kernel.{key}"


@SETTINGS
@given(case=bad_kernel())
def test_bad_kernels(case):
    kernel, name = case
    count("kernels")
    with pytest.raises(ValueError) as err:
        sb.run("bbkb", SMALL, T=10, kernel=kernel, progress=False)
    assert name in str(err.value)


@st.composite
def bad_problem(draw):
    """(a Problem with one defect, name of the field the error must contain)."""
    A, d = SMALL.arms.shape
    kind = draw(st.sampled_from(["arms_value", "f_value", "f_shape", "arms_shape", "noise", "arms_type"]))
    if kind == "arms_value":
        arms = SMALL.arms.copy()
        arms[draw(st.integers(0, A - 1)), draw(st.integers(0, d - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
        return SMALL._replace(arms=arms), "problem.arms contains NaN or inf"
    if kind == "f_value":
        f = SMALL.f.copy()
        f[draw(st.integers(0, A - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
        return SMALL._replace(f=f), "problem.f contains NaN or inf"
    if kind == "f_shape":
        n = draw(st.integers(0, 2 * A).filter(lambda n: n != A))
        f = np.resize(SMALL.f, (n,) if draw(st.booleans()) else (n, 1))
        return SMALL._replace(f=f), "problem.f has shape"
    if kind == "arms_shape":
        shape = draw(st.sampled_from([(A,), (A, d, 1), (0, d), (A, 0), ()]))
        return SMALL._replace(arms=np.zeros(shape)), "problem.arms has shape"
    if kind == "arms_type":
        return SMALL._replace(arms=np.full((A, d), draw(TEXT), dtype=object)), "problem.arms"
    noise = draw(st.one_of(st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not (math.isfinite(v) and v >= 0)),
                           TEXT, st.booleans(), st.lists(NUMBERS, max_size=2)))
    return SMALL._replace(noise_std=noise), "problem.noise_std"


@SETTINGS
@given(case=bad_problem())
def test_bad_problems(case):
    problem, name = case
    count("problems")
    with pytest.raises(ValueError) as err:
        sb.run("bbkb", problem, T=10, progress=False)
    assert name in str(err.value)


FACTORY_ARGUMENTS = {  # problem -> argument -> strategy of bad values (factories accept integral floats)
    "gp_sample": {"A": st.one_of(st.integers(max_value=0), st.floats(allow_nan=True).filter(lambda v: not (math.isfinite(v) and v.is_integer() and v >= 1)), TEXT),
                  "d": st.one_of(st.integers(max_value=0), TEXT, st.booleans()),
                  "sigma2": st.one_of(st.floats(max_value=0.0), st.just(math.inf), st.just(math.nan), TEXT, st.booleans()),
                  "seed": st.one_of(st.integers(max_value=-1), TEXT, st.lists(st.integers(), max_size=2)),
                  "noise_std": st.one_of(st.floats(max_value=-1e-300), st.just(math.nan), TEXT, st.booleans())},
    "linear": {"A": st.one_of(st.integers(max_value=0), TEXT), "d": st.one_of(st.integers(max_value=0), st.floats(0.1, 0.9)),
               "noise_std": st.one_of(st.floats(max_value=-1e-300), st.just(-math.inf), TEXT)},
    "abalone": {"scaling": st.one_of(TEXT, NUMBERS).filter(lambda v: v not in datasets.SCALINGS),
                "sigma2": st.one_of(st.floats(max_value=0.0), TEXT),
                "data_dir": st.one_of(st.integers(), st.just("/nonexistent/sketchbo-data")),
                "download": st.one_of(TEXT, st.integers(), st.none())},
}


@SETTINGS
@given(data=st.data())
def test_bad_problem_arguments(data):
    problem = data.draw(st.sampled_from(sorted(FACTORY_ARGUMENTS)))
    name = data.draw(st.sampled_from(sorted(FACTORY_ARGUMENTS[problem])))
    value = data.draw(FACTORY_ARGUMENTS[problem][name])
    count("problem factories")
    with pytest.raises(ValueError, match=rf"\b{name}="):
        make_problem(problem, **{name: value})


# ------------------------------------------------------------------------------------------ ask/tell

OPTIMIZER_ARGUMENTS = {
    "candidates": st.one_of(TEXT, st.lists(NUMBERS, max_size=4),  # 1-D, strings, NaN / inf rows
                            st.integers(1, 5).map(lambda n: np.full((n, 2), np.nan)),
                            st.just([[0.0, 1.0], [0.0, np.inf]])),
    "algorithm": st.one_of(TEXT, NUMBERS).filter(lambda v: v not in ALGORITHMS),  # None: the space's default
    "params": st.one_of(bad_hyperparameter().map(lambda c: c[1]), TEXT, st.lists(TEXT, min_size=1, max_size=2)),
    "kernel": bad_kernel().map(lambda c: c[0]),
    "seed": bad_int(0), "horizon": bad_int(1),
    "dtype": RUN_ARGUMENTS["dtype"],
    "noise_std": st.one_of(st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not (math.isfinite(v) and v >= 0)),
                           TEXT, st.booleans()),
}


@SETTINGS
@given(data=st.data())
def test_bad_optimizer_arguments(data):
    name = data.draw(st.sampled_from(sorted(OPTIMIZER_ARGUMENTS)))
    value = data.draw(OPTIMIZER_ARGUMENTS[name])
    args = {"candidates": SMALL.arms, "algorithm": "bbkb", **{name: value}}
    if name == "params" and isinstance(value, dict):
        args["algorithm"] = "bbkb" if set(value) <= set(ALGORITHMS["bbkb"].defaults) else args["algorithm"]
    count("optimizer arguments")
    with pytest.raises(ValueError):
        api.Optimizer(args.pop("candidates"), args.pop("algorithm"), **args)


def _pending_optimizer():
    """An optimiser with a pending batch of several arms, built with the real programs."""
    real = pytest.MonkeyPatch()
    real.setattr(asktell, "finite_programs", ORIGINAL_PROGRAMS[0])
    real.setattr(asktell, "box_programs", ORIGINAL_PROGRAMS[1])
    try:
        opt = api.Optimizer(SMALL.arms, "bbkb", params={"C": 5.0, "F": 1.0}, kernel=SMALL.kernel, horizon=40,
                            noise_std=0.0, seed=3)
        while True:
            idx, _ = opt.ask()
            if len(idx) >= 2:
                return opt
            opt.tell(idx, SMALL.f[idx])
    finally:
        real.undo()


@st.composite
def bad_tell(draw, batch):
    """(indices, ys) with at least one defect for the pending ``batch``."""
    n, A = len(batch), SMALL.arms.shape[0]
    kind = draw(st.sampled_from(["nan", "foreign", "length", "partial", "types", "shape"]))
    idx, ys = list(draw(st.permutations(batch.tolist()))), draw(st.lists(st.floats(-5, 5), min_size=n, max_size=n))
    if kind == "nan":
        ys[draw(st.integers(0, n - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    elif kind == "foreign":
        idx[draw(st.integers(0, n - 1))] = draw(st.one_of(st.integers(-10 ** 6, -1), st.integers(A, 10 ** 6),
                                                          st.integers(0, A - 1).filter(lambda i: i not in batch)))
    elif kind == "length":
        ys = ys + draw(st.lists(st.floats(-5, 5), min_size=1, max_size=3)) if draw(st.booleans()) else ys[:-1]
    elif kind == "partial":
        idx, ys = idx[:-1], ys[:-1]
    elif kind == "types":
        if draw(st.booleans()):
            idx = [float(i) + 0.5 for i in idx]
        else:
            ys = [draw(TEXT.filter(lambda s: not accepted_as_float(s, lambda v: True)))] * n
    else:
        idx = np.asarray(idx)[:, None] if draw(st.booleans()) else idx
        ys = np.asarray(ys)[None, :] if not isinstance(idx, np.ndarray) else ys
    return idx, ys


def test_bad_tells_never_reach_the_gp():
    """Generated bad tells raise ValueError naming the argument and leave the optimiser unchanged; the
    compiled ``tell`` (the GP update) is never called with them (it is replaced by a failing function)."""
    opt = _pending_optimizer()
    batch, _ = opt.ask()
    state = [np.asarray(x) for x in jax.tree.leaves(opt.state)]
    opt._s.prog = opt._s.prog._replace(tell=boom, ask=boom)

    @SETTINGS
    @given(case=bad_tell(batch))
    def check(case):
        idx, ys = case
        count("tells")
        with pytest.raises(ValueError) as err:
            opt.tell(idx, ys)
        assert any(word in str(err.value) for word in ("keys", "key", "rewards", "length mismatch")), err.value
        np.testing.assert_array_equal(opt.ask()[0], batch)  # still pending, unchanged

    check()
    assert all(np.array_equal(a, np.asarray(b)) for a, b in zip(state, jax.tree.leaves(opt.state)))


# ------------------------------------------------------------------------------------------------ CLI

def compose(*overrides: str):
    from hydra import compose as hydra_compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(cli.CONFIG_DIR), version_base="1.3"):
        return hydra_compose(config_name="config",
                             overrides=["problem.A=40", "T=10", "n_seeds=1", "progress=false", *overrides])


@pytest.fixture(scope="module")
def configs():
    """Composed base configs: one algorithm, the comparison, a kernel override, the W&B logger."""
    return {"bbkb": compose("algorithm=bbkb"), "compare": compose(), "rbf": compose("algorithm=bbkb", "kernel=rbf"),
            "matern52": compose("algorithm=gp_ucb", "kernel=matern52"), "wandb": compose("algorithm=bbkb", "logger=wandb")}


@st.composite
def bad_override(draw):
    """(base config name, dotted key, bad value, text the error must contain), as a CLI override would give."""
    kind = draw(st.sampled_from(["top", "algorithm", "problem", "kernel", "logger", "grid", "members", "progress",
                                 "domain"]))
    if kind == "progress":
        return "bbkb", "progress", draw(st.one_of(TEXT, NUMBERS, st.none())), "progress="
    if kind == "domain":  # a member of another domain than the problem's: refused before any member runs
        members = draw(st.permutations(["bbkb", draw(st.sampled_from(sorted(BO_ALGORITHMS)))]))
        return "compare", "algorithm.members", list(members), "cannot run on problem='gp_sample'"
    if kind == "top":
        key = draw(st.sampled_from(["T", "n_seeds", "seed", "dtype", "seed_axis", "devices", "checkpoint_every"]))
        value = draw(RUN_ARGUMENTS[key].filter(lambda v: not isinstance(v, bytes)) if key != "checkpoint_every" else bad_int(1, True))
        return "bbkb", key, value, f"{key}="
    if kind == "algorithm":
        base = draw(st.sampled_from(["bbkb", "compare"]))
        _, params, name = draw(bad_hyperparameter().filter(lambda c: c[0] == "bbkb"))
        (key, value), = params.items()
        if base == "compare" and key not in ALGORITHMS["bbkb"].defaults:
            base = "bbkb"  # a key that no member (bbkb, bkb, gp_ucb) has is refused by Hydra's struct mode
        if base == "compare" and value is None:
            base = "bbkb"  # in compare, null is valid: every member keeps its own default
        return base, f"algorithm.{key}", value, name
    if kind == "problem":
        key = draw(st.sampled_from(sorted(FACTORY_ARGUMENTS["gp_sample"])))
        return "bbkb", f"problem.{key}", draw(FACTORY_ARGUMENTS["gp_sample"][key]), f"problem.{key}="
    if kind == "kernel":
        base = draw(st.sampled_from(["rbf", "matern52"]))
        kernel, name = draw(bad_kernel().filter(lambda c: isinstance(c[0], dict) and c[0].get("name") == base))
        (key, value), = [(k, v) for k, v in kernel.items() if k != "name"]
        if name.startswith("'"):
            assume(False)  # unknown keys are refused by Hydra's struct mode already
        return base, f"kernel.{key}", value, name
    if kind == "logger":
        return "wandb", "logger.mode", draw(TEXT.filter(lambda v: v not in ("offline", "online", "disabled"))), "logger.mode="
    if kind == "grid":
        key = draw(st.sampled_from(finite.GRID_KEYS))
        if key not in ALGORITHMS["bbkb"].defaults:
            return "bbkb", f"grid.{key}", [0.5], f"grid.{key}"
        value = draw(st.one_of(st.just([]), NUMBERS, TEXT, bad_float(key).map(lambda v: [1.0, v] if key != "C" else [2.0, v])))
        return "bbkb", f"grid.{key}", value, key
    members = draw(st.one_of(st.lists(TEXT, max_size=3), st.just([]), st.just(["bbkb", "bbkb"]), TEXT, NUMBERS))
    assume(not (isinstance(members, list) and members and set(members) <= set(cli.known_algorithms())
                and len(set(members)) == len(members)))
    return "compare", "algorithm.members", members, "algorithm.members"


@SETTINGS
@given(case=bad_override())
def test_bad_cli_configs(case, configs, scratch):
    """What ``sketchbo-run`` executes for a config with one bad override: a ValueError (the CLI prints it as
    ``sketchbo-run: error: ...`` with status 2) naming the key, nothing written in the run directory."""
    base, key, value, name = case
    cfg = copy.deepcopy(configs[base])
    with open_dict(cfg):
        OmegaConf.update(cfg, key, value, merge=False, force_add=True)
    run_dir = scratch / "run"
    count("CLI configs")
    with pytest.raises(cli.USER_ERRORS) as err:
        cli.execute(cfg, run_dir)
    assert isinstance(err.value, ValueError) and name in str(err.value), (key, value, err.value)
    assert_nothing_written(scratch)


# ----------------------------------------------------------------------------------------- data files

@st.composite
def corruption(draw, good: bytes):
    kind = draw(st.sampled_from(["truncate", "flip", "insert", "line", "empty"]))
    if kind == "truncate":
        return good[:draw(st.integers(0, len(good) - 1))]
    if kind == "flip":
        data = bytearray(good)
        pos = draw(st.integers(0, len(good) - 1))
        data[pos] ^= draw(st.integers(1, 255))
        return bytes(data)
    if kind == "insert":
        pos = draw(st.integers(0, len(good)))
        return good[:pos] + draw(st.binary(min_size=1, max_size=8)) + good[pos:]
    if kind == "line":
        lines = good.split(b"\n")
        lines[draw(st.integers(0, len(lines) - 2))] = draw(st.text(max_size=30)).encode("utf-8", "replace")
        return b"\n".join(lines)
    return b""


def test_corrupted_data_files_are_rejected(tmp_path, fake_data):
    """A corrupted abalone.data is rejected naming its published checksum; with the checksum bypassed
    (patched to the corrupt file's own), the parser either gives a valid problem or a ValueError naming
    the file or the field."""
    good = fake_data[ABALONE_FILE]  # a valid file in abalone.data's format, its sha256 patched in as the published one
    path = tmp_path / "corrupted" / ABALONE_FILE
    path.parent.mkdir()

    @settings(max_examples=60, deadline=None, database=None, derandomize=True)
    @given(data=corruption(good))
    def check(data):
        assume(data != good)
        path.write_bytes(data)
        count("data files")
        with pytest.raises(ValueError) as err:
            make_problem("abalone", data_dir=path.parent)
        assert SHA256[ABALONE_FILE] in str(err.value) and str(path) in str(err.value)
        with pytest.MonkeyPatch.context() as m:
            m.setitem(SHA256, ABALONE_FILE, datasets.sha256_of(path))
            try:
                problem = make_problem("abalone", data_dir=path.parent)
            except ValueError as parse_error:
                assert str(path) in str(parse_error) or "problem." in str(parse_error), parse_error
            else:
                assert problem.arms.shape[1] == 8 and np.all(np.isfinite(problem.arms))

    check()
    assert sorted(p.name for p in path.parent.iterdir()) == [ABALONE_FILE]  # nothing else was written


# ------------------------------------------------------------------------------ continuous domains

HARTMANN = make_problem("hartmann6")
# the box algorithms with an initial design n0 and a sample buffer (box_hyper's family)
BO_BUFFERED = sorted(n for n, s in BO_ALGORITHMS.items() if s.hooks.buffer_rows is not None)
BO_RUN_ARGUMENTS = {**{k: RUN_ARGUMENTS[k] for k in ("T", "n_seeds", "seed", "rounds_per_call", "dtype",
                                                     "seed_axis", "checkpoint_every", "checkpoint")},
                    "capacity": bad_int(10, none_is_valid=True)}  # at least n0 (= 10 below)


@st.composite
def bad_bo_input(draw):
    """(algorithm, run keyword arguments, name that the error must contain) with exactly one bad entry."""
    algorithm = draw(st.sampled_from(BO_BUFFERED))  # sbpe_box's bad inputs: tests/test_sbpe_box.py
    defaults = BO_ALGORITHMS[algorithm].defaults
    kwargs = {"T": 30, "params": {"n0": 10}}
    kind = draw(st.sampled_from(["run", "int", "float", "choice", "unknown"]))
    ints = [k for k in sorted(box._INTS) if k in defaults and k != "n0"] + (["M"] if "M" in defaults else [])
    floats = [k for k in sorted(box._FLOATS) if k in defaults]
    if kind == "run":
        name = draw(st.sampled_from(sorted(BO_RUN_ARGUMENTS)))
        kwargs[name] = draw(BO_RUN_ARGUMENTS[name])
        if name == "checkpoint_every":
            kwargs["checkpoint"] = None  # set to a file in the scratch directory by the test
        elif name == "checkpoint":
            kwargs["checkpoint_every"] = 1
        return algorithm, kwargs, rf"\b{name}="
    if kind == "int" and ints:
        key = draw(st.sampled_from(ints))
        lo = 11 if key == "M" else box._INTS[key]  # M > n0
        kwargs["params"][key] = draw(bad_int(lo, none_is_valid=key == "M"))
    elif kind == "float" and floats:
        key = draw(st.sampled_from(floats))
        ok = box._FLOATS[key][0]
        kwargs["params"][key] = draw(st.one_of(NUMBERS, JSONISH, st.none()).filter(
            lambda v: not accepted_as_float(v, ok)))
    elif kind == "choice" and ("selection" in defaults or "keep_best" in defaults):
        key = draw(st.sampled_from([k for k in ("selection", "keep_best") if k in defaults]))
        bad = (TEXT.filter(lambda v: v not in box._SELECTIONS) if key == "selection"
               else st.one_of(TEXT, st.integers(), st.none()))
        kwargs["params"][key] = draw(bad)
    else:
        key = draw(st.from_regex(r"[a-z_]{1,8}", fullmatch=True).filter(lambda k: k not in defaults and k != "name"))
        kwargs["params"][key] = draw(NUMBERS)
        return algorithm, kwargs, repr(key)
    return algorithm, kwargs, rf"algorithm\.{key}="


@SETTINGS
@given(case=bad_bo_input())
def test_bad_continuous_inputs(case, scratch):
    """The continuous-domain runner (GSSBO and its baselines): bad run arguments and hyperparameters."""
    algorithm, kwargs, name = case
    if "checkpoint" in kwargs and kwargs["checkpoint"] is None:
        kwargs["checkpoint"] = scratch / "ck.npz"
    elif "checkpoint" not in kwargs:  # every other case runs with checkpoints on: nothing may be written
        kwargs.update(checkpoint=scratch / "ck.npz", checkpoint_every=1)
    count("continuous runs")
    with pytest.raises(ValueError, match=name):
        sb.run(algorithm, HARTMANN, progress=False, **kwargs)
    assert_nothing_written(scratch)


def test_continuous_algorithms_refuse_finite_problems_and_the_reverse():
    count("continuous runs")
    with pytest.raises(ValueError, match="optimises over a box: pass a box problem"):
        sb.run("gssbo", SMALL, T=10, progress=False)
    with pytest.raises(ValueError, match="runs on a finite arm set: pass a sketchbo Problem"):
        sb.run("bbkb", HARTMANN, T=10, progress=False)


# ------------------------------------------------------------------------------------------- the count

def test_at_least_500_bad_inputs_were_tried():
    expected = {"run arguments", "hyperparameters", "kernels", "problems", "problem factories",
                "optimizer arguments", "tells", "CLI configs", "data files", "continuous runs"}
    print(f"bad inputs tried: {sum(EXAMPLES.values())} {EXAMPLES}")
    assert EXAMPLES and set(EXAMPLES) <= expected, EXAMPLES
    assert min(EXAMPLES.values()) >= 50, EXAMPLES  # every group that ran tried enough examples
    if set(EXAMPLES) == expected:  # the whole file ran (not a -k selection)
        assert sum(EXAMPLES.values()) >= 500, EXAMPLES
