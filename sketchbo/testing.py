"""The conformance check every algorithm passes, for yours too: ``sketchbo.testing.check_algorithm(spec)``
(docs/tutorials/new-algorithm.md#2-check-it).

It runs, on a small problem of the spec's domain, the checks the registry's algorithms pass
(``tests/test_conformance.py`` calls it for each of them):

| check | what it asserts |
|---|---|
| ``contract`` | the factory returns an ``Algorithm``; ``init``/``select``/``update``/``refit`` return what ``sketchbo.contract`` says, the state has ``t`` and ``batch_open``, and no step changes a state's structure, shapes or dtypes (traced, nothing compiled) |
| ``compiles_once`` | a run compiles; a second identical run compiles nothing and repeats the first bit for bit; its rewards are finite and its queries valid |
| ``seeds_agree`` | each seed run alone == beside another, bit for bit; vmapped == mapped, bit for bit (or within ``vmap_atol``) |
| ``resume`` | a run interrupted after its first checkpoint resumes to the uninterrupted run's traces, bit for bit |
| ``ask_tell`` | ``sb.Optimizer`` told the run's rewards asks the run's queries, bit for bit |

A failed check raises [`ConformanceError`][] naming the algorithm, the check and what differed.
"""
from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING
from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo.algorithms import get_spec
from sketchbo.api import Optimizer
from sketchbo.contract import AlgorithmState, ArmSet, BoxSet, Feedback
from sketchbo.engine import checkpoint as ckpt
from sketchbo.engine.run import enable_x64, run
from sketchbo.problems import make_problem
from sketchbo.problems.continuous import ContinuousProblem
from sketchbo.spaces import Box
from sketchbo.spec import AlgorithmSpec, Setting

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sketchbo.problems.base import Problem

CHECKS = ("contract", "compiles_once", "seeds_agree", "resume", "ask_tell")
"""The checks of [`check_algorithm`][], in the order they run."""


class ConformanceError(AssertionError):
    """A conformance check failed: the message names the algorithm, the check and what differed."""


def default_problem(domain: str):
    """The small problem of a domain the checks run on: a 2-d GP sample of 120 arms, or Hartmann6."""
    if domain == "arms":  # no suggested lam / F: an Optimizer knows no problem, so both sides use the defaults
        return make_problem("gp_sample", A=120, d=2, sigma2=0.2, seed=1)._replace(suggested=None)
    return make_problem("hartmann6")


class _Case:
    """What every check shares: the spec, the problem, the run's arguments and the reference run."""

    def __init__(self, spec: AlgorithmSpec, problem, T: int, params: dict | None, seed: int, vmap_atol):
        self.spec, self.problem, self.T, self.params, self.seed = spec, problem, T, params, seed
        self.vmap_atol = vmap_atol
        self.base = dict(T=T, params=params, progress=False, rounds_per_call=1, devices=1)
        self._reference = None

    def fail(self, check: str, what: str) -> ConformanceError:
        return ConformanceError(f"{self.spec.name}: check {check!r} failed: {what}")

    def run(self, **kw):
        return run(self.spec, self.problem, **{**self.base, "n_seeds": 2, "seed": self.seed, "seed_axis": "map",
                                               **kw})

    @property
    def reference(self):
        if self._reference is None:
            self._reference = self.run()
        return self._reference

    def same(self, check: str, a, b, what: str) -> None:
        """Bit-identical traces of two results (ConformanceError naming the trace and the first step)."""
        for key in sorted(set(a.traces) & set(b.traces)):
            x, y = np.asarray(a.traces[key]), np.asarray(b.traces[key])
            if x.shape != y.shape:
                raise self.fail(check, f"{what}: trace {key!r} has shape {x.shape}, not {y.shape}")
            differ = (x != y) & ~(np.isnan(x) & np.isnan(y)) if x.dtype.kind == "f" else x != y  # NaN == NaN
            if differ.any():
                first = np.argwhere(differ)[0].tolist()
                raise self.fail(check, f"{what}: trace {key!r} differs (first at seed/step {first})")


def _leaves(tree):
    return {jax.tree_util.keystr(path): (leaf.shape, leaf.dtype)
            for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}


def _same_layout(case: _Case, step: str, before, after) -> None:
    a, b = _leaves(before), _leaves(after)
    if jax.tree.structure(before) != jax.tree.structure(after):
        hint = (" (update must return the state alone, not (state, info))" if step == "update"
                and isinstance(after, tuple) and not hasattr(after, "_fields") else "")
        raise case.fail("contract", f"{step} changed the state's structure{hint}: {sorted(set(a) ^ set(b))[:4]}")
    for path in a:
        if a[path] != b[path]:
            raise case.fail("contract", f"{step} changed state{path} from {a[path][1]}{a[path][0]} to "
                            f"{b[path][1]}{b[path][0]}: a state keeps fixed shapes (capacities are static)")


def _parts(case: _Case):
    """(algorithm, space view, params, feedback) of the case's static config, for tracing."""
    spec, p, T = case.spec, case.problem, case.T
    hyper = spec.resolve(case.params, T, p)
    dt = jnp.float64
    if spec.domain == "arms":
        from sketchbo.domains.finite import resolve_kernel  # noqa: PLC0415

        name, kparams = resolve_kernel(p, None, p.arms.shape[1], dt)
        setting = Setting(T, p.arms.shape[1], p.arms.shape[0], name)
        params = spec.make_params(hyper, dt, xi=0.1, kernel=kparams)
        space = ArmSet(jnp.asarray(p.arms, dt))
        fb = Feedback(jnp.arange(T, dtype=jnp.int32) % p.arms.shape[0], jnp.zeros(T), jnp.arange(T) < 3)
    else:
        setting = Setting(T, p.d, None, None)
        params = spec.make_params(hyper, dt, xi=np.asarray(p.noise_std, dt))
        space = BoxSet(jnp.zeros(p.d, dt), jnp.ones(p.d, dt))
        fb = Feedback(jnp.full((T, p.d), 0.5), jnp.zeros(T), jnp.arange(T) < 3)
    alg = spec.build(spec.static(hyper, setting, spec.first_capacities(hyper, setting)))
    if not all(callable(getattr(alg, f, None)) for f in ("init", "select", "update", "refit")):
        raise case.fail("contract", f"the factory returned {type(alg).__name__}, not a sketchbo.Algorithm(init, "
                        "select, update, refit)")
    return alg, space, jax.tree.map(jnp.asarray, params), fb


def check_contract(case: _Case) -> None:
    """The four functions' types, traced with ``jax.eval_shape`` (nothing compiled)."""
    alg, space, params, fb = _parts(case)
    key = jax.random.key(0)
    state = jax.eval_shape(alg.init, key, space, params)
    if not isinstance(state, AlgorithmState):
        raise case.fail("contract", "init's state has no field t or batch_open (sketchbo.contract.AlgorithmState)")
    out = jax.eval_shape(alg.select, key, state, params)
    if not (isinstance(out, tuple) and len(out) == 3):
        raise case.fail("contract", "select must return (query, state, info)")
    query, selected, _ = out
    want = ((), "i") if case.spec.domain == "arms" else ((case.problem.d,), "f")
    if query.shape != want[0] or query.dtype.kind != want[1]:
        raise case.fail("contract", f"select's query is {query.dtype}{query.shape}; the {case.spec.domain!r} domain "
                        f"wants {'an int arm index ()' if want[1] == 'i' else f'a float point {want[0]}'}")
    _same_layout(case, "select", state, selected)
    updated = jax.eval_shape(alg.update, selected, fb, params)
    _same_layout(case, "update", state, updated)
    out = jax.eval_shape(alg.refit, key, updated, params)
    if not (isinstance(out, tuple) and len(out) == 2):
        raise case.fail("contract", "refit must return (state, info)")
    _same_layout(case, "refit", state, out[0])


@contextlib.contextmanager
def backend_compilations():
    """Counts the XLA compilations inside the block (``jax.monitoring``'s backend-compile event)."""
    count = [0]

    def listener(event, duration, **_):
        if event == "/jax/core/compile/backend_compile_duration":
            count[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield count
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


def check_compiles_once(case: _Case) -> None:
    first = case.reference
    with backend_compilations() as count:
        second = case.run()
    if count[0]:
        raise case.fail("compiles_once", f"a second identical run compiled {count[0]} program(s); a static config "
                        "must be hashable and equal across calls, and params arrays, not Python floats")
    case.same("compiles_once", first, second, "the second run does not repeat the first")
    if not np.all(np.isfinite(first.traces["reward"])):
        raise case.fail("compiles_once", "a reward is not finite")
    q = np.asarray(first.traces["query"])
    if case.spec.domain == "arms" and not np.all((q >= 0) & (q < case.problem.arms.shape[0])):
        raise case.fail("compiles_once", f"a query is not an arm index in [0, {case.problem.arms.shape[0]})")


def check_seeds_agree(case: _Case) -> None:
    """Each seed alone == beside another, bit for bit; vmapped == mapped within ``case.vmap_atol`` (0: bit for
    bit; None: not compared)."""
    if case.vmap_atol is not None:
        vmapped = case.run(seed_axis="vmap")
        if case.vmap_atol == 0.0:
            case.same("seeds_agree", case.reference, vmapped, "seeds vmapped differ from seeds mapped")
        else:
            key = "x" if case.spec.domain == "box" else "reward"
            gap = float(np.max(np.abs(vmapped.traces[key] - case.reference.traces[key])))
            if not gap <= case.vmap_atol:
                raise case.fail("seeds_agree", f"seeds vmapped differ from seeds mapped by {gap:.3g} in trace "
                                f"{key!r} (> vmap_atol={case.vmap_atol})")
    for i in range(2):
        alone = case.run(n_seeds=1, seed=case.seed + i)
        for key in ("query", "reward"):
            if not np.array_equal(alone.traces[key][0], case.reference.traces[key][i]):
                raise case.fail("seeds_agree", f"seed {case.seed + i} alone differs from the same seed beside "
                                f"another (trace {key!r}): a draw depends on the seeds run beside it")


def check_resume(case: _Case) -> None:
    save = ckpt.save_checkpoint

    def save_then_stop(*args, **kwargs):
        save(*args, **kwargs)
        raise KeyboardInterrupt

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "check.npz"
        with mock.patch.object(ckpt, "save_checkpoint", save_then_stop):
            try:
                case.run(checkpoint=path, checkpoint_every=1)
            except KeyboardInterrupt:
                pass
        if not path.exists():
            return  # the run ended before its first checkpoint: nothing to resume
        resumed = case.run(checkpoint=path, checkpoint_every=1)
    case.same("resume", case.reference, resumed, "the resumed run differs from the uninterrupted one")


def check_ask_tell(case: _Case) -> None:
    spec, p, T, ref = case.spec, case.problem, case.T, case.reference
    hyper = {k: v for k, v in ref.hyperparameters.items() if k in spec.defaults}
    reward = np.r_[ref.traces["reward"][0], np.zeros(T)]  # zeros: past T, where the run stops
    if spec.domain == "arms":
        opt = Optimizer(p.arms, spec, horizon=T, seed=case.seed, params=hyper, kernel=dict(p.kernel),
                        noise_std=p.noise_std)
        while opt.n_told < T:
            idx, _ = opt.ask()
            opt.tell(idx, reward[opt.n_told:opt.n_told + len(idx)])
        asked = np.concatenate([i for i, _ in opt.history])[:T]
        expected = ref.traces["query"][0]
    else:
        space = Box(p.lower, p.upper)
        opt = Optimizer(space, spec, horizon=T, seed=case.seed, params=hyper)
        points = []
        while opt.n_told < T:
            keys, X = opt.ask()
            opt.tell(keys, reward[keys])
            points.append(X)
        asked, expected = np.concatenate(points), space.from_unit(ref.traces["x"][0])
    if not np.array_equal(asked, expected):
        step = int(np.argwhere(np.any((asked != expected).reshape(len(asked), -1), axis=1))[0][0])
        raise case.fail("ask_tell", f"told the run's rewards, the Optimizer asks another query at step {step}")


_CHECKS = {"contract": check_contract, "compiles_once": check_compiles_once, "seeds_agree": check_seeds_agree,
           "resume": check_resume, "ask_tell": check_ask_tell}


def check_algorithm(spec: AlgorithmSpec | str, problem: Problem | ContinuousProblem | None = None, *, T: int = 24,
                    params: dict | None = None, seed: int = 0, checks: Sequence[str] = CHECKS,
                    vmap_atol: float | None = 0.0) -> list[str]:
    """Run the conformance checks on an algorithm; raise [`ConformanceError`][] at the first that fails.

    Args:
        spec: an [`AlgorithmSpec`][] (or a registered name).
        problem: a benchmark of the spec's domain (default [`default_problem`][]).
        T: evaluations per seed of each run (small: every check compiles a few programs).
        params: hyperparameters for every run (the spec's defaults otherwise).
        seed: the first of the two seeds.
        checks: which checks to run, in order ([`CHECKS`][]).
        vmap_atol: how far seeds vmapped may be from seeds mapped (``seeds_agree``): 0.0, bit for bit (every
            finite-arm algorithm of the registry); None, not compared. XLA:CPU orders a batched reduction
            otherwise than an unbatched one (1 ulp), and an algorithm whose steps decide on a comparison (a
            line search, an argmax over near ties) can amplify it: the registry's box algorithms that fit a
            GP agree only so on some seeds (docs/reliability.md#determinism), and the suite runs them with None.

    Returns:
        The names of the checks that passed.

    Raises:
        ConformanceError: at the first check that fails, naming the algorithm, the check and what differed.
        ValueError: for an unknown check or a problem of the other domain.

    Examples:
        Any spec, yours or the registry's (a registered name works too):

        ```python
        import sketchbo as sb

        sb.testing.check_algorithm("eps_greedy")
        # ['contract', 'compiles_once', 'seeds_agree', 'resume', 'ask_tell']
        sb.testing.check_algorithm("eps_greedy", checks=("contract",), T=12)   # one quick check
        ```

        In a test suite, one line per algorithm of yours: ``assert sb.testing.check_algorithm(MY_SPEC)``.
    """
    spec = get_spec(spec)
    unknown = [c for c in checks if c not in _CHECKS]
    if unknown or isinstance(checks, str):
        raise ValueError(f"checks={checks!r} is invalid; choose from {list(CHECKS)}")
    enable_x64()
    problem = default_problem(spec.domain) if problem is None else problem
    if (spec.domain == "box") != isinstance(problem, ContinuousProblem):
        raise ValueError(f"problem {getattr(problem, 'name', problem)!r} is not of {spec.name!r}'s domain "
                         f"{spec.domain!r}")
    case = _Case(spec, problem, T, params, seed, vmap_atol)
    for name in checks:
        _CHECKS[name](case)
    return list(checks)


__all__ = ["CHECKS", "ConformanceError", "backend_compilations", "check_algorithm", "default_problem"]
