"""The runner: validation before compilation, capacity growth, traces, truncation of the last batch."""
import numpy as np
import pytest

from sketchbo.algorithms import finite_hyper
from sketchbo.domains import finite, finite_program
from sketchbo.engine import program
from sketchbo.problems import make_problem
import sketchbo as sb
from sketchbo import run

SMALL = make_problem("gp_sample", A=100, d=2, sigma2=0.2, seed=2)


@pytest.fixture
def no_compile(monkeypatch):
    """Fail the test if the runner reaches compilation."""

    def boom(*a, **k):
        raise AssertionError("compilation started before the input was validated")

    monkeypatch.setattr(finite, "make_program", boom)
    monkeypatch.setattr(program, "_PROGRAMS", {})


BAD_HYPER = [
    ("bbkb", {"lam": 0.0}, "lam"), ("bbkb", {"lam": -1}, "lam"), ("bbkb", {"lam": float("nan")}, "lam"),
    ("bbkb", {"qbar": 0}, "qbar"), ("bkb", {"qbar": -2}, "qbar"), ("bbkb", {"C": 0.5}, "C"),
    ("gp_bucb", {"C": 0.99}, "C"), ("bbkb", {"m_max": 0}, "m_max"), ("bbkb", {"m_max": 2.5}, "m_max"),
    ("bbkb", {"delta": 1.5}, "delta"), ("bbkb", {"F": -1}, "F"), ("bbkb", {"beta": "fancy"}, "beta"),
    ("bbkb", {"resample": "sometimes"}, "resample"), ("gp_bucb", {"batch_rule": "max"}, "batch_rule"),
    ("bbkb", {"lam": "abc"}, "lam"), ("bbkb", {"gamma": 1.0}, "gamma"), ("eps_greedy", {"eps": 2}, "eps"),
]


@pytest.mark.parametrize("algorithm,params,name", BAD_HYPER)
def test_bad_hyperparameters_are_named_before_compilation(no_compile, algorithm, params, name):
    with pytest.raises(ValueError, match=name) as err:
        run(algorithm, SMALL, T=10, params=params, progress=False)
    assert "invalid" in str(err.value) or "no parameter" in str(err.value)


@pytest.mark.parametrize("kwargs,name", [
    ({"T": 0}, "T"), ({"T": 2.5}, "T"), ({"n_seeds": 0}, "n_seeds"), ({"seed": -1}, "seed"),
    ({"dtype": "float16"}, "dtype"), ({"seed_axis": "pmap"}, "seed_axis"),
])
def test_bad_run_arguments_are_named_before_compilation(no_compile, kwargs, name):
    args = {"T": 10, **kwargs}
    with pytest.raises(ValueError, match=rf"\b{name}=") as err:
        run("bbkb", SMALL, progress=False, **args)
    assert repr(kwargs[name]) in str(err.value)


def test_unknown_algorithm_problem_and_kernel(no_compile):
    with pytest.raises(ValueError, match="algorithm='bkkb'.*choose one of"):
        run("bkkb", SMALL, T=10)
    with pytest.raises(ValueError, match="problem='nope'.*choose one of"):
        make_problem("nope")
    with pytest.raises(ValueError, match="kernel.name='cosine'"):
        run("bbkb", SMALL, T=10, kernel={"name": "cosine"})
    with pytest.raises(ValueError, match="kernel.sigma2"):
        run("bbkb", SMALL, T=10, kernel={"name": "rbf", "sigma2": -1.0})


def test_bad_arms_and_rewards_are_rejected(no_compile):
    arms = np.array(SMALL.arms)
    arms[3, 1] = np.nan
    with pytest.raises(ValueError, match="problem.arms contains NaN or inf.*row 3"):
        run("bbkb", SMALL._replace(arms=arms), T=10)
    f = np.array(SMALL.f)
    f[7] = np.inf
    with pytest.raises(ValueError, match="problem.f contains NaN or inf.*arm 7"):
        run("bbkb", SMALL._replace(f=f), T=10)
    with pytest.raises(ValueError, match=r"problem.f has shape \(99,\)"):
        run("bbkb", SMALL._replace(f=SMALL.f[:-1]), T=10)
    with pytest.raises(ValueError, match="problem.arms has shape"):
        run("bbkb", SMALL._replace(arms=SMALL.arms[:, 0]), T=10)
    # ARD lengthscales of the wrong dimension for these 2-D arms
    with pytest.raises(ValueError, match="kernel.lengthscales has shape"):
        run("bbkb", SMALL, T=10, kernel={"name": "matern52", "lengthscales": [1.0, 1.0, 1.0]})


def test_first_dictionary_capacity_is_the_backends_default_unless_given(monkeypatch):
    """m_max: None (the registry's default) starts at DEFAULT_M_MAX: 64 on the CPU from MANY_ARMS arms, else
    128; a user's value stays, and an invalid one is rejected."""
    monkeypatch.setattr(finite_hyper.jax, "default_backend", lambda: "cpu")
    many, few = finite.MANY_ARMS, finite.MANY_ARMS - 1
    for name in ("bkb", "bbkb", "bbkb_local"):
        assert sb.ALGORITHMS[name].defaults["m_max"] is None
        hyper = finite.resolve_hyperparameters(name, None, T=100)
        assert finite.initial_capacities(name, hyper, many, 100)["m_max"] == finite.DEFAULT_M_MAX["cpu_many_arms"]
        assert finite.initial_capacities(name, hyper, few, 100)["m_max"] == finite.DEFAULT_M_MAX["other"]
        hyper = finite.resolve_hyperparameters(name, {"m_max": 40}, T=100)
        assert finite.initial_capacities(name, hyper, many, 100)["m_max"] == 40
    with pytest.raises(ValueError, match="algorithm.m_max=0 is invalid"):
        finite.resolve_hyperparameters("bbkb", {"m_max": 0}, T=100)
    monkeypatch.setattr(finite_hyper.jax, "default_backend", lambda: "gpu")
    hyper = finite.resolve_hyperparameters("bbkb", None, T=100)
    assert finite.initial_capacities("bbkb", hyper, many, 100)["m_max"] == finite.DEFAULT_M_MAX["other"]
    sbpe = finite.resolve_hyperparameters("sbpe", None, T=100)
    assert finite.initial_capacities("sbpe", sbpe, many, 100)["m_max"] == sb.ALGORITHMS["sbpe"].defaults["m_max"]


@pytest.mark.extended
def test_dictionary_overflow_is_reported_and_the_run_redone_with_a_larger_capacity():
    kw = dict(T=60, n_seeds=2, progress=False)
    small = run("bbkb", SMALL, params={"m_max": 3, "u_max": 4, "F": 1.0}, **kw)
    large = run("bbkb", SMALL, params={"m_max": 100, "u_max": 100, "F": 1.0}, **kw)
    assert any("m_max=3 overflowed" in e for e in small.capacity_events)
    assert any("u_max=4 overflowed" in e for e in small.capacity_events)
    assert small.hyperparameters["m_max_final"] > 3
    assert small.max_dict_size.max() > 3  # never truncated
    np.testing.assert_array_equal(small.traces["query"], large.traces["query"])
    np.testing.assert_array_equal(small.traces["dict_size"], large.traces["dict_size"])
    assert large.capacity_events == []


def test_traces_are_consistent_and_the_last_batch_is_truncated_at_T():
    T = 57
    res = run("bbkb", SMALL, T=T, n_seeds=3, progress=False, params={"C": 4.0, "F": 1.0, "lam": 0.2})
    f = np.asarray(SMALL.f)
    q = res.traces["query"]
    assert q.shape == (3, T) and q.min() >= 0 and q.max() < 100
    np.testing.assert_allclose(res.traces["instant_regret"], f.max() - f[q])
    np.testing.assert_allclose(res.cumulative_regret, (f.max() - f[q]).sum(1))
    np.testing.assert_allclose(res.regret_ratio, res.cumulative_regret / (T * (f.max() - f.mean())))
    b = res.traces["batch_index"]
    assert np.all(np.diff(b, axis=1) >= 0) and np.all(b[:, 0] == 0)
    assert np.all(b[:, -1] + 1 == res.n_batches)
    assert np.all(res.max_batch_size == [np.bincount(row).max() for row in b])
    assert len(res.round_time_s) == res.n_batches.max()
    # the first batch is the uniformly drawn x_1 alone; feedback noise has std sqrt(lam)
    assert np.all(b[:, 1] == 1)
    noise = res.traces["reward"] - f[q]
    assert 0.25 < noise.std() < 0.65  # sqrt(0.2) = 0.447


def test_batches_longer_than_the_round_buffer_are_recorded_in_parts(monkeypatch):
    """The in-batch loop records into a buffer of ROUND_BUFFER steps written into the traces when it stops;
    batches longer than the buffer (C = 4 gives batches of up to 9 here) take several parts, with the same
    traces, under vmap and lax.map."""
    kw = dict(T=57, n_seeds=3, progress=False, params={"C": 4.0, "F": 1.0, "lam": 0.2})
    ref = {axis: run("bbkb", SMALL, seed_axis=axis, **kw) for axis in ("map", "vmap")}
    assert ref["map"].max_batch_size.max() > 2
    monkeypatch.setattr(finite_program, "ROUND_BUFFER", 2)
    monkeypatch.setattr(program, "_PROGRAMS", {})
    for axis in ("map", "vmap"):
        res = run("bbkb", SMALL, seed_axis=axis, **kw)
        for name in ("query", "batch_index", "dict_size", "loop_iterations", "reward"):
            np.testing.assert_array_equal(res.traces[name], ref[axis].traces[name])
            np.testing.assert_array_equal(res.traces[name], ref["map"].traces[name])


def test_noiseless_problem_gives_exact_rewards():
    prob = SMALL._replace(noise_std=0.0)
    res = run("gp_ucb", prob, T=20, progress=False)
    np.testing.assert_array_equal(res.traces["reward"][0], np.asarray(prob.f)[res.traces["query"][0]])


def test_seeds_do_not_depend_on_how_many_run_beside_them():
    a = run("bkb", SMALL, T=30, n_seeds=4, seed=10, progress=False)
    b = run("bkb", SMALL, T=30, n_seeds=2, seed=12, progress=False)
    np.testing.assert_array_equal(a.traces["query"][2:], b.traces["query"])


def test_elements_mapped_on_one_device_run_as_waves_of_one_element(monkeypatch):
    """engine.program.wave_bounds: where one device maps over several elements the program is compiled for one
    element and called once per element (the same trajectories: the test above); a vmap and several devices keep one
    wave of every element."""
    assert program.wave_bounds(3, 1, "map") == [(0, 1), (1, 2), (2, 3)]
    assert program.wave_bounds(3, 1, "vmap") == [(0, 3)]
    assert program.wave_bounds(4, 2, "map") == [(0, 4)]
    assert program.wave_bounds(1, 1, "map") == [(0, 1)]
    assert program.per_device_waves(2, "map", storable=True)  # the CPU's devices, a program of the store
    assert not program.per_device_waves(1, "map", storable=True)
    assert not program.per_device_waves(2, "vmap", storable=True)
    assert not program.per_device_waves(2, "map", storable=False)  # a user's algorithm, a box: partitioned
    shapes = []
    compiled = program.compiled_program

    def spy(cache_key, make_fns, init_args, *rest, **kw):
        shapes.append(init_args[0].shape)
        return compiled(cache_key, make_fns, init_args, *rest, **kw)

    monkeypatch.setattr("sketchbo.engine.prepare.compiled_program", spy)
    res = run("bkb", SMALL, T=30, n_seeds=3, seed=10, seed_axis="map", devices=1, progress=False)
    assert shapes and set(shapes) == {(1,)}  # the program's elements: one seed
    assert res.traces["query"].shape == (3, 30) and res.n_devices == 1


def test_chunks_started_ahead_or_one_at_a_time_give_the_same_run(monkeypatch, tmp_path):
    """engine.host: on the CPU each chunk starts before the loop reads the one before, elsewhere after; with capacity
    growth (the chunk started from an overflowed carry is dropped) and checkpoints both runs are the same."""
    from sketchbo.engine import host

    kw = dict(T=60, n_seeds=2, progress=False, params={"m_max": 3, "u_max": 4, "F": 1.0})
    runs = []
    for backends in (("cpu",), ()):
        monkeypatch.setattr(host, "AHEAD_BACKENDS", backends)
        runs.append(run("bbkb", SMALL, checkpoint=tmp_path / f"ck{len(backends)}.npz", checkpoint_every=2, **kw))
    ahead, one_at_a_time = runs
    assert ahead.capacity_events == one_at_a_time.capacity_events != []
    for name in ahead.traces:
        np.testing.assert_array_equal(ahead.traces[name], one_at_a_time.traces[name], err_msg=name)


def test_grid_of_hyperparameters_in_one_program_equals_separate_runs():
    from sketchbo import run_grid

    res = run_grid("bbkb", SMALL, T=40, grid={"qbar": [1, 3], "lam": [0.1, 0.3]}, n_seeds=2, progress=False,
                   params={"F": 1.0})
    assert [pt for pt, _ in res] == [{"qbar": 1, "lam": 0.1}, {"qbar": 1, "lam": 0.3},
                                     {"qbar": 3, "lam": 0.1}, {"qbar": 3, "lam": 0.3}]
    for pt, r in res:
        one = run("bbkb", SMALL, T=40, n_seeds=2, progress=False, params={"F": 1.0, **pt})
        for key in ("query", "reward", "dict_size", "batch_index"):
            np.testing.assert_array_equal(r.traces[key], one.traces[key], err_msg=f"{key} at {pt}")
        assert r.hyperparameters["xi"] == pytest.approx(pt["lam"] ** 0.5)  # xi^2 = lam per point


def test_grid_is_validated_before_compilation(no_compile):
    from sketchbo import run_grid

    with pytest.raises(ValueError, match="grid.C is not a grid axis of 'bkb'"):
        run_grid("bkb", SMALL, T=10, grid={"C": [1.5]})
    with pytest.raises(ValueError, match=r"grid.qbar=\[\] is invalid"):
        run_grid("bbkb", SMALL, T=10, grid={"qbar": []})
    with pytest.raises(ValueError, match="algorithm.qbar=-1"):
        run_grid("bbkb", SMALL, T=10, grid={"qbar": [1, -1]})


SHARDED = """
import json, sys
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
from sketchbo.problems import make_problem
from sketchbo import run, run_grid
assert len(jax.devices()) == 4, jax.devices()
p = make_problem("gp_sample", A=100, d=2, sigma2=0.2, seed=2)
out = {}
for alg, axis in (("bbkb", "map"), ("bbkb", "vmap"), ("gp_ucb", "map")):
    many = run(alg, p, T=30, n_seeds=3, seed_axis=axis, progress=False, params={"F": 1.0})  # 3 -> pad to 4
    one = run(alg, p, T=30, n_seeds=3, seed_axis=axis, progress=False, params={"F": 1.0}, devices=1)
    out[f"{alg}/{axis}"] = all(np.array_equal(many.traces[k], one.traces[k]) for k in many.traces)
grid4 = run_grid("bbkb", p, T=30, grid={"qbar": [1, 3]}, n_seeds=3, progress=False, params={"F": 1.0})
grid1 = run_grid("bbkb", p, T=30, grid={"qbar": [1, 3]}, n_seeds=3, progress=False, params={"F": 1.0}, devices=1)
out["grid"] = all(np.array_equal(a.traces["query"], b.traces["query"]) for (_, a), (_, b) in zip(grid4, grid1))
h, bo = make_problem("hartmann6"), {"n0": 5, "n_uniform": 64, "n_local": 16, "fit_steps": 3, "acq_steps": 3}
box4 = run("std_gp_ucb", h, T=10, n_seeds=3, progress=False, params=bo)  # a box algorithm sharded the same way
box1 = run("std_gp_ucb", h, T=10, n_seeds=3, progress=False, params=bo, devices=1)
# boxes: the same to rounding (3e-15 measured; the per-device programs fuse their fits differently)
out["box"] = bool(np.allclose(box4.traces["x"], box1.traces["x"], rtol=0, atol=1e-9))
print(json.dumps(out))
"""


@pytest.mark.extended
def test_seeds_sharded_over_four_devices_equal_one_device():
    """A mesh over the seed axis (padded to a multiple of the device count) changes no trajectory."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {k: True for k in result} and len(result) == 5, result


def test_device_count_is_validated(no_compile):
    with pytest.raises(ValueError, match="devices=99 is invalid; this process sees"):
        run("bbkb", SMALL, T=10, devices=99)


def test_problem_suggestions_fill_what_the_user_leaves_unset():
    from sketchbo.domains.finite import resolve_hyperparameters
    suggested = {"lam": 0.01, "F": 1.0}
    assert resolve_hyperparameters("bbkb", None, 10, suggested)["lam"] == 0.01
    assert resolve_hyperparameters("bbkb", {"lam": 0.3}, 10, suggested)["lam"] == 0.3  # the user wins
    assert resolve_hyperparameters("bbkb", {"lam": None}, 10, None)["lam"] == 0.2  # no suggestion: the protocol's fallback
    res = run("gp_ucb", SMALL, T=5, progress=False)  # gp_sample suggests lam = 0.01, F = 1
    assert (res.hyperparameters["lam"], res.hyperparameters["F"]) == (0.01, 1.0)


def test_recorded_repetitions_are_the_feedback():
    """On a problem with recorded repetitions every reward is one of the pulled arm's recorded values, drawn
    uniformly (both values of a two-repetition arm appear)."""
    A = SMALL.arms.shape[0]
    spread = np.linspace(-0.5, 0.5, A)
    samples = np.stack([SMALL.f + spread, SMALL.f - spread], axis=1)  # mean f, two repetitions each
    prob = SMALL._replace(samples=samples, n_samples=np.full(A, 2))
    res = run("eps_greedy", prob, T=200, n_seeds=2, progress=False)
    q, y = res.traces["query"], res.traces["reward"]
    first = np.isclose(y, samples[q, 0]) & (spread[q] != 0)
    second = np.isclose(y, samples[q, 1]) & (spread[q] != 0)
    assert np.all(np.isclose(y, samples[q, 0]) | np.isclose(y, samples[q, 1]))
    assert first.sum() > 20 and second.sum() > 20


def test_keys_derived_in_a_program_and_elements_are_the_per_seed_ones():
    """The keys a program derives from the elements' seeds equal each seed's own keys (64-bit seeds too), the
    element seeds are the grid points outer, seeds inner, padded by the last one, and so are the elements."""
    import jax

    seeds = [0, 1, 7, 2**31 + 5, 2**33 + 5]
    el_seeds = program.element_seeds(seeds, n_points=2, n_devices=4)  # 10 elements padded to 12
    np.testing.assert_array_equal(np.asarray(el_seeds), seeds + seeds + [seeds[-1]] * 2)
    in_program = jax.jit(jax.vmap(program.seed_keys))(el_seeds)
    for i, seed in enumerate(seeds + seeds):
        for own, derived in zip(program.seed_keys(seed), in_program):
            np.testing.assert_array_equal(jax.random.key_data(own), jax.random.key_data(derived[i]))
    points = [{"a": np.float64(p), "b": np.full(2, 10.0 * p)} for p in range(3)]
    el = program.stack_elements(points, n_seeds=2, n_devices=4)  # 6 elements padded to 8
    np.testing.assert_array_equal(np.asarray(el["a"]), [0, 0, 1, 1, 2, 2, 2, 2])
    np.testing.assert_array_equal(np.asarray(el["b"])[:, 0], [0, 0, 10, 10, 20, 20, 20, 20])


CORES = """
import json
import sketchbo as sb
from sketchbo.engine.validate import check_devices
import jax
import numpy as np
n = sb.use_cpu_cores(2)  # a fresh process: nothing has touched the backends yet
out = {"requested": n, "devices": len(jax.devices()), "one_seed": check_devices(None, 1),
       "five_seeds": check_devices(None, 5), "too_late": sb.use_cpu_cores(3)}
p = sb.make_problem("gp_sample", A=100, d=2, sigma2=0.2, seed=2)
two = sb.run("bbkb", p, T=30, n_seeds=3, progress=False, params={"F": 1.0})  # 3 seeds over 2 devices (pad to 4)
one = sb.run("bbkb", p, T=30, n_seeds=3, progress=False, params={"F": 1.0}, devices=1)
out["same"] = all(np.array_equal(two.traces[k], one.traces[k]) for k in one.traces)
out["layouts"] = [[r.seed_axis, r.n_devices, r.elements_per_device] for r in (two, one)]
from sketchbo.engine import program, replicas
out["per_device"] = sorted(len(c.by_device) if isinstance(c, replicas.OnDevices) else 0
                           for fns in program._PROGRAMS.values() for c in fns)
print(json.dumps(out))
"""


def _in_fresh_cpu_process(script: str, timeout: int) -> dict:
    """The JSON of ``script``'s last line, run by a fresh CPU-only Python whose device count is its own."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "JAX_NUM_CPU_DEVICES"}
    env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f)
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_use_cpu_cores_shards_the_seeds_over_cpu_devices_with_the_same_trajectories():
    """``sb.use_cpu_cores`` in a fresh process gives the CPU one device per core (here 2); a run's default
    device count is then min(devices, elements); once the backends are up it changes nothing."""
    out = _in_fresh_cpu_process(CORES, timeout=600)
    assert out == {"requested": 2, "devices": 2, "one_seed": 1, "five_seeds": 2, "too_late": 2, "same": True,
                   "layouts": [["map", 2, 2], ["map", 1, 3]],  # each device ran its share one after another
                   "per_device": [0, 0, 2, 2]}, out  # two's init and chunk: one program on both devices


PER_DEVICE = """
import json, os, tempfile
os.environ["SKETCHBO_COMPILE_CACHE"] = tempfile.mkdtemp()  # a cache of its own: both layers empty
import jax
import numpy as np
import sketchbo as sb
sb.use_cpu_cores(2)
from sketchbo.engine import compile_cache, program, replicas
compiles = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kw: compiles.append(1) if event == "/jax/core/compile/backend_compile_duration" else None)
p = sb.make_problem("gp_sample", A=100, d=2, sigma2=0.2, seed=2)
kw = dict(T=30, n_seeds=3, progress=False, params={"F": 1.0})
one = sb.run("bbkb", p, devices=1, **kw)
out = {}
for case in ("compiled", "store", "compiled per device"):
    program._PROGRAMS.clear()  # as a new process: the program store, JAX's cache, or XLA
    if case == "compiled per device":  # no executable to load: JAX's cache served the first device's
        compile_cache.STORE = False
        replicas.load_on = lambda entry, device: None
    del compiles[:]
    res = sb.run("bbkb", p, **kw)
    progs = [c for fns in program._PROGRAMS.values() for c in fns]
    out[case] = {"same": all(np.array_equal(res.traces[k], one.traces[k]) for k in one.traces),
                 "compiles": len(compiles), "devices": [len(c.by_device) for c in progs]}
small = {**kw, "params": {"F": 1.0, "m_max": 3, "u_max": 4}}  # capacity growth, checkpoints written and resumed
grown, ck = sb.run("bbkb", p, devices=1, **small), os.path.join(tempfile.mkdtemp(), "ck.npz")
two = [sb.run("bbkb", p, checkpoint=ck, checkpoint_every=1, **small) for _ in range(2)]  # the second resumes
out["growth"] = [all(np.array_equal(r.traces[k], grown.traces[k]) for k in grown.traces)
                 and r.capacity_events == grown.capacity_events != [] for r in two]
print(json.dumps(out))
"""


@pytest.mark.extended
def test_one_program_runs_on_every_cpu_device_compiled_once_loaded_from_the_store_or_compiled_per_device():
    """engine.replicas: the seeds' one-element program on two CPU devices is compiled once (init and chunk) and
    loaded onto the second device; a later run loads both from the program store without compiling; where there is
    no executable to load (JAX's cache served it) each device's is compiled. The trajectories are one device's, with
    capacity growth and a resumed checkpoint too."""
    out = _in_fresh_cpu_process(PER_DEVICE, timeout=600)
    for case in (out[k] for k in ("compiled", "store", "compiled per device")):
        assert case["same"] and case["devices"] == [2, 2], out
    assert out["compiled"]["compiles"] == 2 and out["store"]["compiles"] == 0, out
    assert out["growth"] == [True, True], out  # grown and resumed as on one device


ONE_CPU_DEVICE = """
import json
import sketchbo as sb
sb.use_cpu_cores(2)
p = sb.make_problem("eggholder2")
r = sb.run("vecchia_bo", p, T=24, n_seeds=3, progress=False, params={"m": 8})
out = {"layout": [r.n_devices, r.elements_per_device]}
try:
    sb.run("vecchia_bo", p, T=24, n_seeds=3, progress=False, params={"m": 8}, devices=2)
except ValueError as err:
    out["error"] = str(err)
print(json.dumps(out))
"""


def test_an_algorithm_with_batched_lapack_calls_runs_on_one_cpu_device():
    """VecchiaBO's batched Choleskys, run by two CPU devices at once, hung XLA's CPU runtime on a 2-core machine
    (engine.lapack_overlap): with two CPU devices its seeds run on one by default, and asking for two is an error."""
    out = _in_fresh_cpu_process(ONE_CPU_DEVICE, timeout=300)  # a hang fails here
    assert out["layout"] == [1, 3], out
    assert out["error"].startswith("devices=2 is invalid") and "one device" in out["error"], out


def test_time_per_seed_divides_the_round_times_by_the_seeds_each_device_ran():
    """The time curves' one-seed time: sharded seeds ran side by side, so a round's time is that of the
    ``elements_per_device`` seeds one device ran in sequence (3 seeds on 2 devices: 2), not of all seeds."""
    from pathlib import Path

    from sketchbo.cli import plots

    def scale(**summary):
        return plots.time_scale(plots.Result(Path("."), {"n_seeds": 10, "device": "cpu:cpu", **summary}, {}))

    assert scale(seed_axis="map", n_devices=2, elements_per_device=5) == pytest.approx(1 / 5)
    assert scale(seed_axis="vmap", n_devices=2, elements_per_device=5) == 1.0  # seeds together: the job's time
    assert scale() == pytest.approx(1 / 10)  # a summary of before 2026-11-27: one device, every seed in sequence
    assert scale(device="cuda:H100") == 1.0  # ... and on an accelerator, vmapped


@pytest.mark.parametrize("algorithm,dtype", [("bbkb", "float64"), ("bkb", "float32"), ("gp_ucb", "float64")])
def test_finite_programs_compiled_with_the_fast_cpu_options_give_the_same_trajectories(monkeypatch, algorithm, dtype):
    """program.FAST_CPU_COMPILE changes XLA's fusion emitters on the CPU, not a bit of the run."""
    monkeypatch.setattr(program, "_PROGRAMS", {})
    fast = run(algorithm, SMALL, T=60, n_seeds=2, dtype=dtype, progress=False)
    monkeypatch.setattr(program, "_PROGRAMS", {})
    monkeypatch.setattr(finite, "FAST_CPU_COMPILE", {})
    default = run(algorithm, SMALL, T=60, n_seeds=2, dtype=dtype, progress=False)
    for name in default.traces:
        np.testing.assert_array_equal(fast.traces[name], default.traces[name], err_msg=name)


@pytest.mark.parametrize("algorithm", ["bbkb", "gssbo"])
def test_programs_lowered_without_source_tracebacks_give_the_same_trajectories(monkeypatch, algorithm):
    """program.lean_locations drops the Python traceback chains JAX attaches to each lowered operation (debug
    information only): a finite and a box run are the same to the last bit with them kept
    (SKETCHBO_SOURCE_LOCATIONS=1), and a program lowered in the context has none while one outside has them."""
    import jax
    import jax.numpy as jnp

    def inner(x):
        return jnp.sin(x) * 2.0

    def lowered_text():  # a new function each time: JAX caches a function's lowering
        return jax.jit(lambda x: inner(x) + 1.0).lower(1.0).as_text(debug_info=True)

    with program.lean_locations():
        assert "callsite(" not in lowered_text()
    monkeypatch.setenv(program.SOURCE_LOCATIONS_ENV, "1")
    with program.lean_locations():
        assert "callsite(" in lowered_text()
    problem, kw = (SMALL, {}) if algorithm == "bbkb" else (make_problem("hartmann6"), {
        "params": {"n0": 5, "n_uniform": 64, "n_local": 16, "fit_steps": 3, "acq_steps": 3}})
    runs = []
    for keep in ("1", "0"):
        monkeypatch.setenv(program.SOURCE_LOCATIONS_ENV, keep)
        monkeypatch.setattr(program, "_PROGRAMS", {})
        runs.append(run(algorithm, problem, T=12 if algorithm == "gssbo" else 60, n_seeds=2, progress=False, **kw))
    for name in runs[0].traces:
        np.testing.assert_array_equal(runs[0].traces[name], runs[1].traces[name], err_msg=name)


def test_compiler_options_this_xla_does_not_have_fall_back_to_its_defaults():
    import jax
    import jax.numpy as jnp

    lowered = jax.jit(lambda x: 2 * x).lower(jnp.arange(3.0))
    compiled = program.compile_lowered(lowered, {"xla_cpu_no_such_option_at_all": True})
    np.testing.assert_array_equal(compiled(jnp.arange(3.0)), [0.0, 2.0, 4.0])
    with pytest.raises(Exception, match="not a valid bool"):  # other errors are not swallowed
        program.compile_lowered(lowered, {"xla_cpu_use_fusion_emitters": "maybe"})


def test_default_rounds_per_call():
    """Sequential algorithms chunk up to 64 single-step rounds; batched ones 4 rounds, 8 where several devices each
    map over several elements (ten seeds, or one seed at four grid points, over two CPU devices)."""
    from types import SimpleNamespace

    def spec(n_seeds, n_devices, seed_axis, points=1):
        return SimpleNamespace(seeds=list(range(n_seeds)), points=[{}] * points, n_devices=n_devices,
                               seed_axis=seed_axis)

    assert finite.default_rounds_per_call(False, 10_000, spec(10, 2, "map")) == 64
    assert finite.default_rounds_per_call(False, 300, spec(1, 1, "map")) == 3
    assert finite.default_rounds_per_call(True, 10_000, spec(1, 1, "map")) == 4
    assert finite.default_rounds_per_call(True, 10_000, spec(2, 2, "map")) == 4
    assert finite.default_rounds_per_call(True, 10_000, spec(10, 2, "map")) == 8
    assert finite.default_rounds_per_call(True, 10_000, spec(10, 1, "map")) == 4  # one device: nothing waits
    assert finite.default_rounds_per_call(True, 10_000, spec(1, 2, "map", points=4)) == 8
    assert finite.default_rounds_per_call(True, 10_000, spec(100, 1, "vmap")) == 4
