"""``sketchbo-run`` / ``python -m sketchbo``: the Hydra app that runs bandit algorithms on a problem.

Examples::

    sketchbo-run                                   # BBKB, BKB and GP-UCB on gp_sample, one table
    sketchbo-run algorithm=bbkb problem=cadata T=2000 n_seeds=2 algorithm.qbar=2 algorithm.lam=0.2
    sketchbo-run -m algorithm=bbkb algorithm.qbar=1,2,5 algorithm.C=1.5,2,4 algorithm.lam=0.05,0.2,1
    sketchbo-run algorithm=bbkb logger=wandb       # one offline W&B run per seed

Configs live in the repository's ``sketchbo/cli/configs/`` folder (groups ``algorithm``, ``problem``, ``kernel``,
``logger``, ``experiment``, ``hydra/launcher``). ``algorithm=compare`` runs each of its ``members``
with that member's own config on the same problem, kernel and seeds, writing
``<run_dir>/<member>/{config.yaml,traces.npz,curves.png,summary.json}``, ``<run_dir>/comparison.json`` and
``<run_dir>/comparison.png``; a single algorithm writes ``<run_dir>/{config.yaml,traces.npz,curves.png,summary.json}``.
The pictures (``curves.png``: regret, batch size and dictionary size against t; ``comparison.png``: the members
together) are left out with ``plots=false``; ``sketchbo-plot DIR...`` (``sketchbo.cli.overlay``) overlays runs and
sweeps afterwards.

Resuming: a result directory that already holds the complete result of the same resolved config
(``tracking.load_complete``; the keys of ``RUNTIME_KEYS`` do not count) is not recomputed: the job
prints ``skipping: complete results in <dir>`` and reuses it. Multirun job directories are named by
the job's overrides (``sketchbo/cli/configs/config.yaml``, ``hydra.sweep``), so re-running an interrupted sweep
redoes only the jobs that did not finish.

Checkpoints: with ``checkpoint_every=k`` (rounds; null = off) a job saves its run's progress to
``<run_dir>/checkpoint.npz`` (``sketchbo.run``'s ``checkpoint``) every k rounds; the same job started again
(same command, same directory) resumes there and yields the traces of an uninterrupted run. The file is
deleted once ``summary.json`` and ``traces.npz`` are written. ``checkpoint_every`` changes no result, so it
does not count for resuming complete results and does not name multirun job directories.

Bad input (a ValueError, a missing data file, a failed W&B start) prints
``sketchbo-run: error: <message>`` to stderr and exits with status 2. This is the only module that
imports hydra or omegaconf; what runs after composition is ``sketchbo.cli.jobs`` (Hydra-free, also used by
``scripts/run_jobs.py`` on machines without Hydra).
"""
from __future__ import annotations

import copy
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

import hydra
from hydra import compose, initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra._internal.utils import get_args_parser
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict

from sketchbo.cli import jobs, notes, tracking
from sketchbo.cli.jobs import (  # noqa: F401 (re-exported)
    RUNTIME_KEYS, check_domains, check_hyperparameters, completed, hyperparameters, remove_checkpoint,
)
from sketchbo.engine.compile_cache import requested_dir
from sketchbo.engine.program import enable_compilation_cache
from sketchbo.engine.run import enable_x64, grid_points, run_grid, use_cpu_cores
from sketchbo.engine.validate import check_run_args

PROG = "sketchbo-run"
CONFIG_DIR = Path(__file__).resolve().parent / "configs"  # shipped inside the package (a wheel has them)
COMPARE = "compare"
COMPARE_KEYS = ("name", "members")  # compare.yaml keys that are not shared parameter overrides
USER_ERRORS = (ValueError, OSError, tracking.LoggingError)  # bad parameters, missing data files, W&B failures
INT_KEYS = ("T", "n_seeds", "seed", "devices", "checkpoint_every")  # top-level keys that take whole numbers
BOOL_KEYS = ("progress", "plots", "approximation")  # top-level keys that take true or false
HYDRA_FILES = {".hydra", "sketchbo.log"}  # what Hydra writes into a run directory before the task starts
STARTED = time.time()  # directories created from here on are this process's


def known_algorithms() -> list[str]:
    """Algorithm config names under ``sketchbo/cli/configs/algorithm`` (``compare`` excluded)."""
    return sorted(p.stem for p in (CONFIG_DIR / "algorithm").glob("*.yaml") if p.stem != COMPARE)


def load_algorithm_config(name: str) -> dict:
    """The plain dict of ``sketchbo/cli/configs/algorithm/<name>.yaml``; ValueError for an unknown name."""
    allowed = known_algorithms()
    if name not in allowed:
        raise ValueError(f"algorithm.members contains {name!r}, which is not an algorithm config; "
                         f"choose from {allowed}")
    return OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "algorithm" / f"{name}.yaml"), resolve=True)


def compare_members(compare: dict) -> list[dict]:
    """Each member's own config, with compare's non-null shared keys overriding the keys it has."""
    members = compare.get("members")
    if not isinstance(members, list):
        raise ValueError(f"algorithm.members={members!r} is invalid; give a list of distinct names from "
                         f"{known_algorithms()}")
    members = [str(m) for m in members]
    if not members or len(set(members)) != len(members):
        raise ValueError(f"algorithm.members={members!r} is invalid; list distinct names from {known_algorithms()}")
    shared = {k: v for k, v in compare.items() if k not in COMPARE_KEYS and v is not None}
    configs = []
    for name in members:
        member = load_algorithm_config(name)
        member.update({k: v for k, v in shared.items() if k in member})
        configs.append(member)
    return configs


def algorithm_configs(cfg: DictConfig) -> list[dict]:
    """The algorithm configs this run executes: the compare members, or the one selected. An algorithm
    config with a ``spec: module:NAME`` key names a user's algorithm: its spec is imported and registered."""
    algo = OmegaConf.to_container(cfg.algorithm, resolve=True)
    algos = compare_members(algo) if algo.get("name") == COMPARE else [algo]
    for a in algos:
        if a.get("spec") is not None:
            jobs.load_spec(a["spec"], a.get("name"))
    return algos


def build_problem(cfg: DictConfig):
    """The problem of ``cfg.problem`` (``jobs.build_problem``)."""
    return jobs.build_problem(OmegaConf.to_container(cfg.problem, resolve=True))


def config_text(config: dict) -> str:
    """The resolved config as the YAML of ``config.yaml``."""
    return OmegaConf.to_yaml(OmegaConf.create(config))


def check_logger(cfg: DictConfig) -> None:
    """ValueError for a W&B mode that does not exist, LoggingError for online mode without credentials
    (before anything runs)."""
    logger = OmegaConf.to_container(cfg.logger, resolve=True)
    if logger.get("name") != "wandb":
        return
    if logger.get("mode") not in tracking.WANDB_MODES:
        raise ValueError(f"logger.mode={logger.get('mode')!r} is invalid; choose from {list(tracking.WANDB_MODES)}")
    if logger.get("mode") == "online":
        tracking.check_online_credentials()


def check_run_keys(cfg: DictConfig) -> None:
    """Whole-number keys given as floats (``T=1e3``) become ints; ``progress``, ``plots`` and ``approximation`` must
    be booleans."""
    with open_dict(cfg):
        for key in INT_KEYS:
            value = cfg.get(key)
            if isinstance(value, float) and math.isfinite(value) and value.is_integer():
                cfg[key] = int(value)
    for key in BOOL_KEYS:
        if not isinstance(cfg.get(key), bool):
            raise ValueError(f"{key}={cfg.get(key)!r} is invalid; it must be true or false")


def job_config(cfg: DictConfig, algo: dict) -> dict:
    """The resolved config of one algorithm's result: ``cfg`` with ``algorithm`` replaced by ``algo``.

    Interpolations that use the algorithm (the W&B group) resolve with that algorithm's own name.
    """
    job = copy.deepcopy(cfg)
    with open_dict(job):
        job.algorithm = algo
    return OmegaConf.to_container(job, resolve=True)


def grid_of(cfg: DictConfig) -> dict:
    """The non-null ``grid.<key>`` lists of the config ({} when there is no grid)."""
    grid = OmegaConf.to_container(cfg.grid, resolve=True) if cfg.get("grid") is not None else {}
    return {k: v for k, v in grid.items() if v is not None}


def point_dirname(point: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in point.items())


def check_config(cfg: DictConfig) -> None:
    """Every check of one job's composed config that needs no problem data (ValueError naming the key): run
    arguments, the algorithms (compare members, grid points) and their hyperparameters on the problem's domain,
    the logger. Run on every job of a sweep before the first one starts (`main`), and by each job."""
    check_run_keys(cfg)
    check_run_args(cfg.T, cfg.n_seeds, cfg.seed, cfg.dtype, cfg.seed_axis, None)
    grid = grid_of(cfg)
    if grid:
        if cfg.algorithm.name == COMPARE:
            raise ValueError("grid.* needs a single algorithm (algorithm=<name>), not algorithm=compare")
        algo = algorithm_configs(cfg)[0]
        algos = [{**algo, **pt} for pt in grid_points(algo["name"], grid)]
    else:
        algos = algorithm_configs(cfg)
    check_domains(algos, cfg.problem.name)
    check_hyperparameters(algos, cfg.T)
    check_logger(cfg)


def execute_grid(cfg: DictConfig, run_dir: Path, grid: dict) -> list[dict]:
    """A float grid as one vmapped/mapped program: one result directory per point, ``grid/<k=v,...>/``.

    Each point's files are those of a single run with ``algorithm.<k>=v`` (its stored config has the
    algorithm values set and no grid), so they equal the corresponding multirun job's numbers.
    """
    check_config(cfg)
    algo = algorithm_configs(cfg)[0]
    points = grid_points(algo["name"], grid)
    plain = copy.deepcopy(cfg)
    with open_dict(plain):
        plain.grid = {k: None for k in plain.grid}
    configs = [job_config(plain, {**algo, **pt}) for pt in points]
    outs = [run_dir / "grid" / point_dirname(pt) for pt in points]
    done = [completed(out, config) for out, config in zip(outs, configs)]
    for out, config, summary in zip(outs, configs, done):
        if summary is not None:
            jobs.ensure_curves(out, config)
    if all(d is not None for d in done):
        return [{**d, "label": f"{algo['name']} {point_dirname(pt)}"} for d, pt in zip(done, points)]
    problem = build_problem(cfg)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    results = run_grid(algo["name"], problem, T=cfg.T, grid=grid, n_seeds=cfg.n_seeds, seed=cfg.seed,
                       params=hyperparameters(algo), kernel=jobs.kernel_override(resolved), dtype=cfg.dtype,
                       seed_axis=cfg.seed_axis, progress=cfg.progress,
                       devices=cfg.get("devices"), **jobs.checkpoint_args(resolved, run_dir / "grid"))
    summaries = []
    for (pt, result), out, config, summary in zip(results, outs, configs, done):
        if summary is None:  # finished points are kept as they are
            summary = tracking.write_results(out, result, config, uniform_gap=jobs.uniform_gap(problem),
                                             config_text=config_text(config))
        summaries.append({**summary, "label": f"{algo['name']} {point_dirname(pt)}"})
    remove_checkpoint(run_dir / "grid")
    return summaries


def execute(cfg: DictConfig, run_dir: Path) -> list[dict]:
    """Run everything ``cfg`` asks for and write the result files; return the summaries.

    Results that ``run_dir`` already holds completely for the same config are reused, not recomputed;
    the problem is built only when something has to run.
    """
    grid = grid_of(cfg)
    if grid:
        return execute_grid(cfg, run_dir, grid)
    check_config(cfg)
    algos = algorithm_configs(cfg)
    compare = cfg.algorithm.name == COMPARE
    problem = None
    summaries = []
    ran = False
    for algo in algos:
        out = run_dir / algo["name"] if compare else run_dir
        config = job_config(cfg, algo)
        summary = completed(out, config)
        if summary is None:
            problem = build_problem(cfg) if problem is None else problem
            summary = jobs.run_job(config, out, problem, config_text(config))
            ran = True
        else:  # killed after its results were written: the checkpoint is of no further use
            remove_checkpoint(out)
            jobs.ensure_curves(out, config)
        summaries.append(summary)
    if compare:
        members = [a["name"] for a in algos]
        jobs.write_comparison(run_dir, int(cfg.T), int(cfg.n_seeds), members, summaries)
        if cfg.plots and (ran or not (run_dir / jobs.COMPARISON_FIGURE).exists()):
            jobs.write_comparison_figure(run_dir, members)
        elif ran:  # an earlier picture would show other results than these
            (run_dir / jobs.COMPARISON_FIGURE).unlink(missing_ok=True)
    return summaries


def describe(err: BaseException) -> str:
    """One line for a user error; a file-system error names its path."""
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"cannot write or read {err.filename}: {err.strerror}"
    return str(err)


def fail(message: str) -> None:
    """Report a user error the argparse way (stderr, status 2), without a traceback."""
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(2)


def remove_if_only_hydra(run_dir: Path) -> None:
    """Delete a run directory that holds only what Hydra wrote before the task started (a rejected run), and
    the parents that this process created for it and left empty (``outputs/<date>/``)."""
    try:
        if run_dir.is_dir() and {p.name for p in run_dir.iterdir()} <= HYDRA_FILES:
            shutil.rmtree(run_dir)
        parent = run_dir.absolute().parent
        while parent != Path.cwd() and parent.is_dir() and parent.stat().st_ctime >= STARTED - 1.0:
            parent.rmdir()  # only an empty directory goes; a non-empty one stops the walk (OSError)
            parent = parent.parent
    except OSError:
        pass


def writable_dir_error(path: Path, key: str) -> str | None:
    """Why ``path`` (a directory to be) cannot take result files, or None: its nearest existing ancestor
    must be a writable directory (a file there, a read-only file system, no permission...)."""
    probe = path
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        return f"{key}={str(path)!r} cannot be created: {str(probe)!r} is not a directory"
    try:
        with tempfile.NamedTemporaryFile(dir=probe, prefix=".sketchbo-write-test-"):
            pass
    except OSError as err:
        return f"{key}={str(path)!r} is not writable ({err.strerror or err}: {str(probe)!r})"
    return None


class OutputDirCheck(Callback):
    """Hydra callback (``sketchbo/cli/configs/config.yaml``): the run or sweep directory must be writable before Hydra
    creates it, else ``sketchbo-run: error: ...`` with status 2 instead of Hydra's traceback."""

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        self._check(Path(str(config.hydra.run.dir)), "hydra.run.dir")

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        self._check(Path(str(config.hydra.sweep.dir)), "hydra.sweep.dir")

    @staticmethod
    def _check(path: Path, key: str) -> None:
        message = writable_dir_error(path.expanduser().absolute(), key)
        if message is not None:
            fail(message)


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="config")
def app(cfg: DictConfig) -> None:
    """The Hydra task: set precision, run (or reuse complete results), write results, print the table."""
    enable_x64()  # float64 by default; a float32 run keeps its float64 pieces whatever ran before (engine.run)
    use_cpu_cores()  # a job in a launcher's fresh process (joblib, submitit); a no-op where main() did it
    enable_compilation_cache(requested_dir(str(cfg.compile_cache)) if cfg.get("compile_cache") else None)  # null: off
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        summaries = execute(cfg, run_dir)
    except USER_ERRORS as err:
        remove_if_only_hydra(run_dir)
        fail(describe(err))
    print("\n".join(notes.closing_lines(summaries, run_dir)))


def sweep_jobs(argv: list[str]) -> list[list[str]] | None:
    """The overrides of every job the command line asks for (one for a single run, the basic sweeper's
    Cartesian product for ``-m``); None when the command runs no job of ours (``--cfg``, ``--help``, ``--info``,
    another config path or name)."""
    args = get_args_parser().parse_args(argv)
    if (args.help or args.hydra_help or args.cfg or args.info or args.shell_completion or args.config_path
            or args.config_dir or args.config_name or args.experimental_rerun):
        return None
    if not args.multirun:
        return [list(args.overrides)]
    parsed = OverridesParser.create().parse_overrides(list(args.overrides))
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def validate_jobs(jobs: list[list[str]]) -> None:
    """Compose and check (`check_config`) every job before Hydra creates a directory or starts one: a bad
    value anywhere in a sweep stops it whole, naming the job. A config that does not compose is left to Hydra,
    which reports it the same way before it creates anything."""
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        for k, overrides in enumerate(jobs):
            try:
                cfg = compose(config_name="config", overrides=overrides)
            except HydraException:
                return
            try:
                check_config(cfg)
            except USER_ERRORS as err:
                where = f"job {k + 1} of {len(jobs)} ({' '.join(overrides)}): " if len(jobs) > 1 else ""
                fail(where + describe(err))


def main() -> None:
    """Console entry point of ``sketchbo-run``: every job validated, then Hydra runs them."""
    use_cpu_cores()  # before anything initialises JAX's backends: a CPU run shards its seeds over the cores
    jobs_ = sweep_jobs(sys.argv[1:])
    if jobs_ is not None:
        validate_jobs(jobs_)
    app()


if __name__ == "__main__":
    main()
