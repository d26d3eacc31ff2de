"""``sketchbo-run`` / ``python -m sketchbo``: the Hydra app that runs bandit algorithms on a problem.

Examples::

    sketchbo-run                                   # BBKB, BKB and GP-UCB on gp_sample, one table
    sketchbo-run algorithm=bbkb problem=cadata T=2000 n_seeds=2 algorithm.qbar=2 algorithm.lam=0.2

Configs live in the repository's ``configs/`` folder (groups ``algorithm``, ``problem``, ``kernel``).
``algorithm=compare`` runs each of its ``members`` with that member's own config on the same
problem, kernel and seeds, writing ``<run_dir>/<member>/{summary.json,traces.npz}`` and
``<run_dir>/comparison.json``; a single algorithm writes ``<run_dir>/{summary.json,traces.npz}``.
Bad input (a ValueError or a missing data file) prints ``sketchbo-run: error: <message>`` to stderr
and exits with status 2. This is the only module that imports hydra or omegaconf.
"""
from __future__ import annotations

import sys
from pathlib import Path

import hydra
import jax
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from sketchbo import tracking
from sketchbo.problems import make_problem
from sketchbo.runner import resolve_hyperparameters, run

PROG = "sketchbo-run"
CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
COMPARE = "compare"
COMPARE_KEYS = ("name", "members")  # compare.yaml keys that are not shared parameter overrides
USER_ERRORS = (ValueError, OSError)  # bad parameters, missing or corrupt data files


def known_algorithms() -> list[str]:
    """Algorithm config names under ``configs/algorithm`` (``compare`` excluded)."""
    return sorted(p.stem for p in (CONFIG_DIR / "algorithm").glob("*.yaml") if p.stem != COMPARE)


def load_algorithm_config(name: str) -> dict:
    """The plain dict of ``configs/algorithm/<name>.yaml``; ValueError for an unknown name."""
    allowed = known_algorithms()
    if name not in allowed:
        raise ValueError(f"algorithm.members contains {name!r}, which is not an algorithm config; "
                         f"choose from {allowed}")
    return OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "algorithm" / f"{name}.yaml"), resolve=True)


def compare_members(compare: dict) -> list[dict]:
    """Each member's own config, with compare's non-null shared keys overriding the keys it has."""
    members = [str(m) for m in compare.get("members") or []]
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
    """The algorithm configs this run executes: the compare members, or the one selected."""
    algo = OmegaConf.to_container(cfg.algorithm, resolve=True)
    return compare_members(algo) if algo.get("name") == COMPARE else [algo]


def build_problem(cfg: DictConfig):
    """The problem of ``cfg.problem``: ``make_problem(name, **other keys)``."""
    kwargs = OmegaConf.to_container(cfg.problem, resolve=True)
    return make_problem(kwargs.pop("name"), **kwargs)


def kernel_override(cfg: DictConfig) -> dict | None:
    """``None`` (the problem's kernel) when ``kernel.name`` is null, else the kernel dict."""
    kernel = OmegaConf.to_container(cfg.kernel, resolve=True)
    return None if kernel.get("name") is None else kernel


def hyperparameters(algo: dict) -> dict:
    """The runner's ``params`` of an algorithm config: every key but ``name``."""
    return {k: v for k, v in algo.items() if k != "name"}


def check_hyperparameters(algos: list[dict], T) -> None:
    """Validate every algorithm config before the first one compiles (ValueError naming the key).

    A T that is not an integer is left for ``run`` to report; only delta's default depends on it.
    """
    T = T if isinstance(T, int) else 1
    for algo in algos:
        resolve_hyperparameters(algo["name"], hyperparameters(algo), T)


def run_algorithm(algo: dict, problem, cfg: DictConfig, run_dir: Path) -> dict:
    """Run one algorithm config, write its result files into ``run_dir``, return its summary."""
    result = run(
        algo["name"], problem, T=cfg.T, n_seeds=cfg.n_seeds, seed=cfg.seed, params=hyperparameters(algo),
        kernel=kernel_override(cfg), dtype=cfg.dtype, seed_axis=cfg.seed_axis, progress=cfg.progress,
    )
    config = OmegaConf.to_container(cfg, resolve=True)
    config["algorithm"] = algo
    return tracking.write_results(run_dir, result, config)


def execute(cfg: DictConfig, run_dir: Path) -> list[dict]:
    """Run everything ``cfg`` asks for and write the result files; return the summaries."""
    algos = algorithm_configs(cfg)
    check_hyperparameters(algos, cfg.T)
    problem = build_problem(cfg)
    if cfg.algorithm.name != COMPARE:
        return [run_algorithm(algos[0], problem, cfg, run_dir)]
    summaries = [run_algorithm(a, problem, cfg, run_dir / a["name"]) for a in algos]
    tracking.atomic_write_json(run_dir / "comparison.json", {
        "problem": problem.name, "T": cfg.T, "n_seeds": cfg.n_seeds, "seeds": summaries[0]["seeds"],
        "members": [a["name"] for a in algos], "rows": [tracking.table_row(s) for s in summaries],
    })
    return summaries


def fail(message: str) -> None:
    """Report a user error the argparse way (stderr, status 2), without a traceback."""
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(2)


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="config")
def app(cfg: DictConfig) -> None:
    """The Hydra task: set precision, run, write results, print the table."""
    if cfg.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        summaries = execute(cfg, run_dir)
    except USER_ERRORS as err:
        fail(str(err))
    print(tracking.format_table(summaries))
    print(f"results: {run_dir}")


def main() -> None:
    """Console entry point of ``sketchbo-run``."""
    app()


if __name__ == "__main__":
    main()
