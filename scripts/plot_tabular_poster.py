"""ICML 2020 BBKB poster style on tabular HPO / NAS problems: R_t / R_t^unif and time against t.

One row per problem found (NAS-Bench-201 cifar10 and one HPOLib FCNet table in
``experiments/tabular_poster.yaml``), two panels: the ratio R_t / R_t^unif (R_t^unif = t·(f* − mean f),
the expected regret of uniform arm choice; y axis clipped at 1.5) and the cumulative wall time up to t
(one seed, compilation excluded, log scale; see ``sketchbo.cli.plots.cumulative_time``), each as mean ± std
over seeds for every algorithm found (BBKB, GlobalLocal-BBKB, BKB, GP-UCB, GP-BUCB, EpsGreedy). Each
row's title gives the number of arms, the horizons and seeds of its runs and exact GP-UCB's time over BBKB's
up to the smaller of their horizons; the figure's title names the machine (the
``device`` of the runs, plus ``--machine``: time curves only compare within one machine and load).

Reads the ``summary.json`` / ``traces.npz`` files under ``--results`` (any layout), or a curves record of
them (``scripts/record_regret.py --curves``, e.g. ``experiments/tabular_poster_record.json``), and writes
``tabular_poster.png`` and ``tabular_poster.pdf``; with ``--numbers FILE.json`` also the final numbers of
every run (R_T / R_T^unif, times, dictionary sizes, the time ratios) as JSON, printed as a markdown table::

    python scripts/plot_tabular_poster.py --results results/quick/tabular_poster --out figures/quick
    python scripts/plot_tabular_poster.py --results results/measured/tabular_poster --out figures/measured \\
        --machine "2-core CPU shared with other jobs" --numbers experiments/tabular_poster_results.json
"""
from __future__ import annotations

import numpy as np

from sketchbo.cli import plots, tracking

NAME = "tabular_poster"
HINT = "run `scripts/reproduce.sh quick --only tabular_poster` (or paper) first"
ARMS = {"nb201": 15_625, "fcnet": 62_208, "hpobench": 30_000}  # table sizes (sketchbo/problems/tabular.py)


def arms(problem: str) -> int | None:
    return ARMS.get(problem.split("_", 1)[0])


def chosen_runs(results) -> dict:
    """``{problem: {algorithm: Result}}``: the run each curve shows (``plots.pick``: the longest horizon),
    NB201 problems first."""
    problems = sorted(plots.problems_of(results), key=lambda p: (not p.startswith("nb201"), p))
    return {p: {a: plots.pick(results, p, a) for a in plots.ordered({r.algorithm for r in results if r.problem == p})}
            for p in problems}


def horizons(runs: dict) -> str:
    """``T = 2000, 3 seeds`` or, when they differ, ``T = 500 (BKB, GP-UCB: 200), 2 seeds`` for one problem's runs."""
    by_t = {}
    for algorithm, res in runs.items():
        by_t.setdefault(res.T, []).append(algorithm)
    main_t = max(by_t, key=lambda t: (len(by_t[t]), t))
    text = f"T = {main_t}"
    others = [f"{', '.join(plots.label(a) for a in by_t[t])}: {t}" for t in sorted(by_t, reverse=True) if t != main_t]
    if others:
        text += f" ({'; '.join(others)})"
    seeds = sorted({res.n_seeds for res in runs.values()})
    return f"{text}, {'/'.join(map(str, seeds))} seed{'s' if seeds != [1] else ''}"


def time_ratio(runs: dict, over: str = "gp_ucb", under: str = "bbkb") -> tuple[float, int] | None:
    """(time of ``over`` / time of ``under``, t) up to their common horizon t = the smaller T (one seed's time,
    compilation excluded, mean over seeds); None when either is missing."""
    a, b = runs.get(over), runs.get(under)
    if a is None or b is None:
        return None
    t = min(a.T, b.T)
    ta, tb = plots.time_up_to(a, t), plots.time_up_to(b, t)
    return (ta / tb, t) if tb > 0 else None


def machine_text(results, extra: str) -> str:
    devices = sorted({str(r.summary.get("device", "?")) for r in results})
    return f"machine: {', '.join(devices)}" + (f", {extra}" if extra else "")


def numbers(results, chosen: dict, machine: str) -> dict:
    """The final numbers of every (problem, algorithm) run the figure shows, and GP-UCB / BBKB time ratios."""
    rows, ratios = [], {}
    for problem, runs in chosen.items():
        for algorithm, res in runs.items():
            ratio = np.asarray(res.summary["regret_ratio"], dtype=np.float64)
            final_dict = plots.dict_size(res)[:, -1]
            rows.append({
                "problem": problem, "arms": arms(problem), "algorithm": algorithm, "T": res.T,
                "n_seeds": res.n_seeds, "seeds": res.summary.get("seeds"),
                "ratio_mean": float(ratio.mean()), "ratio_std": float(ratio.std()),
                "ratio_per_seed": ratio.tolist(),
                "exec_time_per_seed_s": plots.run_time(res),  # compilation excluded (round times)
                "wall_time_s": float(res.summary["wall_time_s"]),  # the whole job, all seeds, compilation included
                "compile_time_s": float(res.summary["compile_time_s"]),
                "final_dict_size_mean": float(final_dict.mean()), "final_dict_size_max": int(final_dict.max()),
                "n_batches_mean": float(np.mean(res.summary["n_batches"])),
                "hyperparameters": res.hyperparameters, "device": res.summary.get("device"),
            })
        ratio = time_ratio(runs)
        if ratio is not None:
            ratios[problem] = {"ratio": ratio[0], "t": ratio[1]}
    return {"machine": machine_text(results, machine), "gp_ucb_over_bbkb_exec_time": ratios, "runs": rows}


def markdown(table: dict) -> str:
    lines = ["| problem | algorithm | T | seeds | R_T/R_unif | exec s / seed | wall s (compile s), job | final dict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in table["runs"]:
        size = f"{r['final_dict_size_mean']:.0f} (max {r['final_dict_size_max']})"
        size = "–" if r["algorithm"] == "eps_greedy" else size
        lines.append(f"| `{r['problem']}` | {plots.label(r['algorithm'])} | {r['T']} | {r['n_seeds']} | "
                     f"{r['ratio_mean']:.3f} ± {r['ratio_std']:.3f} | {r['exec_time_per_seed_s']:.1f} | "
                     f"{r['wall_time_s']:.0f} ({r['compile_time_s']:.0f}) | {size} |")
    return "\n".join(lines)


def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], "directory holding the runs (searched recursively)")
    parser.add_argument("--machine", default="", help="words about the machine added to the title "
                                                      "(e.g. '2-core CPU shared with other jobs')")
    parser.add_argument("--numbers", default=None, help="also write the final numbers to this JSON file")
    args = parser.parse_args(argv)
    results = plots.load_results(args.results, HINT)
    chosen = chosen_runs(results)
    fig, axes = plots.pyplot().subplots(len(chosen), 2, figsize=(9.4, 3.8 * len(chosen) + 0.5), squeeze=False)
    handles = {}
    for (ax_ratio, ax_time), (problem, runs) in zip(axes, chosen.items()):
        for algorithm, res in runs.items():
            t = plots.steps(res)
            handles[algorithm] = plots.band(ax_ratio, t, plots.regret_ratio(res), algorithm)
            plots.band(ax_time, t, plots.cumulative_time(res), algorithm)
        n_arms = arms(problem)
        title = f"{problem}" + (f" (A = {n_arms:,})" if n_arms else "") + f": {horizons(runs)}"
        ratio = time_ratio(runs)
        if ratio is not None:
            title += f"; GP-UCB / BBKB time at t = {ratio[1]}: {ratio[0]:.1f}×"
        ax_ratio.set_title(title, loc="left", fontsize=9)
        ax_ratio.set_ylabel(r"$R_t / R_t^{\mathrm{unif}}$ (mean ± std)")
        ax_ratio.set_ylim(0, min(ax_ratio.get_ylim()[1], 1.5))  # the first steps' ratios (up to ~8) clipped
        ax_time.set_ylabel("time up to t (s, one seed, no compile)")
        ax_time.set_yscale("log")
    fig.suptitle(f"BBKB poster comparison on tabular benchmarks; {machine_text(results, args.machine)}",
                 fontsize=10)
    paths = plots.finish_with_legend(fig, handles, args.out or args.results, NAME)
    if args.numbers:
        table = numbers(results, chosen, args.machine)
        tracking.atomic_write_json(args.numbers, table)
        print(markdown(table))
        paths.append(args.numbers)
    return paths


if __name__ == "__main__":
    plots.script_main(main)
