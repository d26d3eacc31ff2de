"""The regret and time table of GSSBO's figures (Wei et al. 2025, §6.1, Figs. 2-3) from result sets on disk.

One row per (problem, algorithm) found: seeds, cumulative regret R_N (mean ± std over seeds), R_N relative to
Standard GP-UCB's, execution time of one seed (compilation excluded: ``sketchbo.cli.plots.run_time``) and that
time relative to GP-UCB's; the rows (``--json``) also hold R_N / R_N^unif (uniform random search's regret is 1:
mean, lowest and highest seed), which ``--wide --ratio`` prints. Printed as a Markdown table (the tables of
docs/reproductions.md are this output)::

    python scripts/table_gssbo.py --results results/paper/gssbo_fig2
    python scripts/table_gssbo.py --results results/paper/gssbo_fig4 --also results/paper/gssbo_fig2 --json t.json
    python scripts/table_gssbo.py --results experiments/gssbo_fig2_record.json --wide   # Fig. 2's table
    python scripts/table_gssbo.py --results experiments/gssbo_fig2_record.json --wide --ratio   # its R_T/R_unif

Per (problem, algorithm, GSSBO's Z) the result with the longest horizon and then the most seeds is used; runs of
one config on disjoint seeds (``seed=0 n_seeds=3`` and ``seed=3 n_seeds=7``) count as one result
(``sketchbo.cli.plots.join_seed_slices``), whose ``path`` names its directories joined by `` + ``.
GP-UCB's ratios are left empty on problems without a GP-UCB run. Times compare only within one machine and
load: each row states the device its run recorded.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from sketchbo.cli import plots

HINT = "run `scripts/reproduce.sh paper --only gssbo_fig2` (or quick) first"
REFERENCE = "std_gp_ucb"


def variant(res) -> str:
    """The row name: the algorithm; for GSSBO the subset rule it ran, and Z / M when not the default (Fig. 4)."""
    if res.algorithm != "gssbo":
        return res.algorithm
    h = res.hyperparameters
    name = f"gssbo ({h['selection']})" if h.get("selection") else "gssbo"  # results from before the rules: none
    if h.get("M") is not None:
        return f"{name} M={h['M']}"
    z = float(h.get("Z", 4.0))
    return name if z == 4.0 else f"{name} Z={z:g}"


def best_results(results) -> dict:
    """``{(problem, row name): result}``: per pair the longest horizon, then the most seeds, then the first found."""
    chosen = {}
    for res in sorted(results, key=lambda r: (-r.T, -r.n_seeds)):
        chosen.setdefault((res.problem, variant(res)), res)
    return chosen


def rows(results) -> list[dict]:
    """The table's rows (problems in name order; GP-UCB first, then the plots' order, GSSBO's variants after it)."""
    chosen = best_results(results)
    algorithms = plots.ordered({res.algorithm for res in chosen.values()} - {REFERENCE})
    order = {a: i for i, a in enumerate([REFERENCE, *algorithms])}
    out = []
    for problem in sorted({p for p, _ in chosen}):
        ref = chosen.get((problem, REFERENCE))
        ref_regret = float(np.mean(plots.cumulative_regret(ref)[:, -1])) if ref is not None else None
        ref_time = plots.run_time(ref) if ref is not None else None
        names = sorted((n for p, n in chosen if p == problem), key=lambda n: (order[chosen[problem, n].algorithm], n))
        for name in names:
            res = chosen[problem, name]
            final = plots.cumulative_regret(res)[:, -1]
            ratio = np.asarray(res.summary["regret_ratio"], dtype=np.float64)
            seconds = plots.run_time(res)
            out.append({
                "problem": problem, "algorithm": name, "T": res.T, "seeds": res.n_seeds,
                "regret_mean": float(np.mean(final)), "regret_std": float(np.std(final)),
                "regret_vs_gp_ucb": float(np.mean(final)) / ref_regret if ref_regret else None,
                "ratio_mean": float(np.mean(ratio)), "ratio_min": float(np.min(ratio)),
                "ratio_max": float(np.max(ratio)),
                "exec_s_per_seed": seconds, "time_vs_gp_ucb": seconds / ref_time if ref_time else None,
                "device": res.summary.get("device", ""), "dtype": res.summary.get("dtype", ""),
                "path": " + ".join(str(part.path) for part in res.parts or (res,)),
            })
    return out


def markdown(table: list[dict]) -> str:
    lines = ["| problem | algorithm | T | seeds | R_T mean ± sd | R_T / GP-UCB | exec s / seed | time / GP-UCB "
             "| device |", "|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        ratio = "" if r["regret_vs_gp_ucb"] is None else f"{r['regret_vs_gp_ucb']:.2f}×"
        share = "" if r["time_vs_gp_ucb"] is None else f"{r['time_vs_gp_ucb']:.1%}"
        lines.append(f"| {r['problem']} | `{r['algorithm']}` | {r['T']} | {r['seeds']} | "
                     f"{plots.number(r['regret_mean'])} ± {plots.number(r['regret_std'])} | {ratio} | "
                     f"{r['exec_s_per_seed']:.1f} | {share} | {r['device']} {r['dtype']} |")
    return "\n".join(lines)


def cell(mean: float, sd: float) -> str:
    """``mean ± sd`` as the docs write it: "240 ± 56", "250 ± 1.9", "(2.77 ± 0.15)e8" from 10^5 on."""
    if abs(mean) >= 1e5:
        exponent = int(np.floor(np.log10(abs(mean))))
        return f"({mean / 10 ** exponent:.2f} ± {sd / 10 ** exponent:.2f})e{exponent}"
    spread = f"{sd:.0f}" if sd >= 10 else f"{sd:.1f}" if sd >= 1 else f"{sd:.2g}"
    return f"{plots.number(mean)} ± {spread}"


def header(name: str) -> str:
    """A wide table's column name: the algorithm's label, GSSBO's rule and setting after it (``gssbo (pivoted)
    Z=2`` -> GSSBO (`pivoted`) Z=2)."""
    algorithm, _, rest = name.partition(" ")
    rule, _, setting = rest.partition(" ")
    rule = f" (`{rule.strip('()')}`)" if rule else ""
    return f"{plots.label(algorithm)}{rule}{' ' + setting if setting else ''}"


def ratio_cell(row: dict) -> str:
    """R_T / R_T^unif as the docs write it, to 3 significant digits: the mean over the seeds, then the lowest and
    highest seed ("0.0612 (0.0481–0.118)")."""
    return f"{row['ratio_mean']:#.3g} ({row['ratio_min']:#.3g}–{row['ratio_max']:#.3g})"


def wide(table: list[dict], ratio: bool = False) -> str:
    """The rows as one line per problem and one column per algorithm, in the rows' order: R_T mean ± sd, or
    with ``ratio`` R_T / R_T^unif (mean, lowest–highest seed); a cell of fewer or more seeds than most says how
    many."""
    names = list(dict.fromkeys(r["algorithm"] for r in table))
    seeds = [r["seeds"] for r in table]
    common = max(set(seeds), key=lambda n: (seeds.count(n), n))
    cells = {(r["problem"], r["algorithm"]): (ratio_cell(r) if ratio else cell(r["regret_mean"], r["regret_std"]))
             + ("" if r["seeds"] == common else f" ({r['seeds']} seeds)") for r in table}
    lines = ["| problem | " + " | ".join(header(n) for n in names) + " |", "|---" * (len(names) + 1) + "|"]
    for problem in dict.fromkeys(r["problem"] for r in table):
        lines.append(f"| {problem} | " + " | ".join(cells.get((problem, n), "–") for n in names) + " |")
    return "\n".join(lines)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", required=True, type=Path, help="a result set (searched recursively)")
    plots.add_also(parser)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON to this file")
    parser.add_argument("--wide", action="store_true",
                        help="one line per problem, one column per algorithm (R_T mean ± sd), "
                        "as in docs/reproductions.md")
    parser.add_argument("--ratio", action="store_true",
                        help="with --wide: R_T / R_T^unif per cell (mean over the seeds, lowest–highest seed)")
    args = parser.parse_args(argv)
    if args.ratio and not args.wide:
        parser.error("--ratio is a form of the wide table: pass --wide --ratio")
    results = plots.load_results(args.results, HINT) + plots.also_results(args, HINT)
    table = rows(results)
    plots.print_table(table, wide(table, args.ratio) if args.wide else markdown(table), args.json)
    return table


if __name__ == "__main__":
    plots.script_main(main, wrote=False)
