"""The table of BBKB's Fig. 1-2 runs (Calandriello et al., ICML 2020) from a result set on disk.

One row per (problem, algorithm) found: horizon, seeds, cumulative regret R_T and R_T / R_T^unif (mean ± sd
over seeds), execution time of one seed (compilation excluded: ``sketchbo.cli.plots.run_time``), number of
batches, largest batch and largest dictionary (mean over seeds, and the largest seed's), and, where the run
stored its theory certificates (``sketchbo.certificates``), d_eff(λ, X_T) and the smallest ``dict_bound`` /
``batch_bound`` over seeds. The paper's column holds what the BBKB text states for that cell (its Fig. 2:
batches grow to about 3700 arms on Abalone and 3900 on Cadata); it states no other number. Printed as a
Markdown table (the tables of docs/reproductions-bbkb.md#bbkb-fig-1 are this output)::

    python scripts/table_bbkb.py --results results/paper/bbkb_fig1 [--json bbkb_fig1.json]

Per (problem, algorithm) the result with the longest horizon and then the most seeds is used. Times compare
only within one machine and load: each row states the device its run recorded. ``--at t`` adds, for runs of
at least t steps, R_t / R_t^unif and one seed's time up to t (the exact GP methods stop at T = 2000 where the
others run to 10⁴, so ``--at 2000`` compares them at equal t)::

    python scripts/table_bbkb.py --results results/paper/tabular_poster --at 2000

A regret record (``scripts/record_regret.py --curves``) is read where a result set is, ``--at`` then at one of its
recorded steps.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from sketchbo.cli import plots

HINT = "run `scripts/reproduce.sh paper --only bbkb_fig1` (or quick) first"
PAPER_LARGEST_BATCH = {("abalone", "bbkb"): 3700, ("cadata", "bbkb"): 3900}  # BBKB text, Fig. 2: "about"


def best_results(results) -> dict:
    """``{(problem, algorithm): result}``: per pair the longest horizon, then the most seeds, then the first found."""
    chosen = {}
    for res in sorted(results, key=lambda r: (-r.T, -r.n_seeds)):
        chosen.setdefault((res.problem, res.algorithm), res)
    return chosen


def per_seed(res, key: str) -> np.ndarray | None:
    """A per-seed summary field as floats, None when the run did not record it (EpsGreedy has no dictionary)."""
    values = res.summary.get(key)
    if values is None or len(values) == 0 or any(v is None for v in values):
        return None
    return np.asarray(values, dtype=np.float64)


def certificate(res, key: str) -> np.ndarray | None:
    """One field of the run's per-seed certificates, None without certificates (box runs, older results)."""
    certs = res.summary.get("certificates") or []
    values = [c.get(key) for c in certs if isinstance(c, dict)]
    return np.asarray(values, dtype=np.float64) if values and None not in values else None


def at_step(res, t: int | None) -> dict:
    """R_t / R_t^unif (mean ± sd) and one seed's time up to step t, None where t is not given or beyond T. Of a
    regret record's result, t must be one of its recorded steps (`plots.time_up_to`'s ValueError)."""
    if t is None or t > res.T:
        return {"at_t": t, "ratio_at_t_mean": None, "ratio_at_t_std": None, "exec_s_at_t": None}
    exec_s = plots.time_up_to(res, t)
    ratio = plots.regret_ratio(res)[:, int(np.flatnonzero(plots.steps(res) == t)[0])]
    return {"at_t": t, "ratio_at_t_mean": float(np.mean(ratio)), "ratio_at_t_std": float(np.std(ratio)),
            "exec_s_at_t": exec_s}


def row(res, at: int | None = None) -> dict:
    """The table's fields of one result (``None`` where the run has no such quantity), with :func:`at_step`'s."""
    final = plots.cumulative_regret(res)[:, -1]
    ratio = plots.regret_ratio(res)[:, -1]
    out = {"problem": res.problem, "algorithm": res.algorithm, "T": res.T, "seeds": res.n_seeds,
           "regret_mean": float(np.mean(final)), "regret_std": float(np.std(final)),
           "ratio_mean": float(np.mean(ratio)), "ratio_std": float(np.std(ratio)),
           "exec_s_per_seed": plots.run_time(res),
           "paper_largest_batch": PAPER_LARGEST_BATCH.get((res.problem, res.algorithm)),
           "device": res.summary.get("device", ""), "dtype": res.summary.get("dtype", ""),
           "path": " + ".join(str(part.path) for part in res.parts or (res,))}
    for key in ("n_batches", "max_batch_size", "max_dict_size"):
        values = per_seed(res, key)
        if key == "max_dict_size" and values is not None and not np.any(values):
            values = None  # EpsGreedy records 0: it has no dictionary
        out[f"{key}_mean"] = None if values is None else float(np.mean(values))
        out[f"{key}_max"] = None if values is None else float(np.max(values))
    for key, reduce in (("d_eff", np.mean), ("dict_bound", np.min), ("batch_bound", np.min)):
        values = certificate(res, key)
        out[key] = None if values is None else float(reduce(values))
    return {**out, **at_step(res, at)}


def rows(results, at: int | None = None) -> list[dict]:
    """The rows, problems in name order and algorithms in the plots' order."""
    chosen = best_results(results)
    order = {a: i for i, a in enumerate(plots.ordered({a for _, a in chosen}))}
    return [row(chosen[key], at) for key in sorted(chosen, key=lambda k: (k[0], order[k[1]]))]


def mean_max(r: dict, key: str) -> str:
    """'82.0 (85)': the mean over seeds and the largest seed's value; '–' when the run has none."""
    return "–" if r[f"{key}_mean"] is None else f"{r[f'{key}_mean']:.1f} ({r[f'{key}_max']:.0f})"


def markdown(table: list[dict]) -> str:
    at = next((r["at_t"] for r in table if r.get("at_t")), None)
    extra = f" R_t/R_unif at t = {at} | exec s / seed to t = {at} |" if at else ""
    lines = ["| problem | algorithm | T | seeds | R_T mean ± sd | R_T/R_unif mean ± sd | exec s / seed | batches "
             "| largest batch | paper's largest batch | largest dictionary | d_eff | dict_bound | batch_bound "
             "| device |" + extra, "|---" * (17 if at else 15) + "|"]
    for r in table:
        cells = [r["problem"], f"`{r['algorithm']}`", str(r["T"]), str(r["seeds"]),
                 f"{plots.number(r['regret_mean'])} ± {plots.number(r['regret_std'])}",
                 f"{r['ratio_mean']:.4f} ± {r['ratio_std']:.4f}", f"{r['exec_s_per_seed']:.1f}",
                 mean_max(r, "n_batches"), mean_max(r, "max_batch_size"),
                 "–" if r["paper_largest_batch"] is None else f"≈ {r['paper_largest_batch']}",
                 mean_max(r, "max_dict_size"), *("–" if r[k] is None else plots.number(r[k])
                                                 for k in ("d_eff", "dict_bound", "batch_bound")),
                 f"{r['device']} {r['dtype']}"]
        if at:
            cells += (["–", "–"] if r["ratio_at_t_mean"] is None else
                      [f"{r['ratio_at_t_mean']:.4f} ± {r['ratio_at_t_std']:.4f}", f"{r['exec_s_at_t']:.1f}"])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", required=True, type=Path, help="a result set (searched recursively)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON to this file")
    parser.add_argument("--at", type=int, default=None, help="also R_t/R_unif and the time up to this step t ≥ 1")
    args = parser.parse_args(argv)
    if args.at is not None and args.at < 1:
        parser.error(f"--at={args.at}: a step t ≥ 1 is needed")
    table = rows(plots.load_results(args.results, HINT), args.at)
    plots.print_table(table, markdown(table), args.json)
    return table


if __name__ == "__main__":
    plots.script_main(main, wrote=False)
