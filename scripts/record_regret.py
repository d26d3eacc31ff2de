"""Keep result sets' regret curves in a regret record: a small JSON file to commit beside a figure.

Per result found (runs of one config on disjoint seeds read as one), the record keeps its ``summary.json``
without the config, the UTC date it was written, one seed's execution time (``sketchbo.cli.plots.run_time``) and
R_t of every seed at 101 steps (1 and every T/100-th) (``sketchbo.cli.records.write_record``). A job already in the record (same
algorithm, problem, T and hyperparameters) is replaced, every other entry kept, so a figure whose jobs ran in
several sessions is recorded as they finish. The plot and table scripts read a record where they read a result
set, e.g. GSSBO's Fig. 2::

    python scripts/record_regret.py --results results/paper/gssbo_fig2 --record experiments/gssbo_fig2_record.json
    python scripts/plot_gssbo_fig2.py --results experiments/gssbo_fig2_record.json --out docs/figures
    python scripts/table_gssbo.py --results experiments/gssbo_fig2_record.json

With ``--add-seeds`` a result joins the recorded entry of its job on other seeds instead of replacing it, so
that a job too long for one session runs as seed slices (``seed=0 n_seeds=2``, later ``seed=2 n_seeds=2``, ...)
recorded as each finishes, its result directories needed only until then.

With ``--curves`` the record also keeps the batch size, the dictionary size and one seed's time up to t at the
same steps, so that BBKB's Figs. 1-2 redraw from it::

    python scripts/record_regret.py --results results/paper/bbkb_fig1 --record experiments/bbkb_fig1_record.json --curves
    python scripts/plot_bbkb_fig1.py --results experiments/bbkb_fig1_record.json --out docs/figures
"""
from __future__ import annotations

import argparse
from pathlib import Path

from sketchbo.cli import plots, records

HINT = "run the figure's jobs first (scripts/reproduce.sh)"


CURVES = (plots.batch_size, plots.dict_size, plots.cumulative_time)  # kept with --curves, by function name


def curves_of(result) -> dict:
    """The per-seed curves of ``result`` that ``--curves`` keeps, those whose traces the result has."""
    out = {}
    for curve in CURVES:
        try:
            out[curve.__name__] = curve(result)
        except KeyError:  # e.g. no dictionary: exact GP-UCB, EpsGreedy
            continue
    return out


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", required=True, type=Path, help="a result set (searched recursively)")
    parser.add_argument("--record", required=True, type=Path, help="the regret record to write or add to")
    parser.add_argument("--problem", nargs="+", default=None, help="record only these problems' results")
    parser.add_argument("--curves", action="store_true",
                        help="also keep the batch size, dictionary size and one seed's time up to t at the same steps "
                             "(what BBKB's Figs. 1-2 draw besides R_t), each where the result has its trace")
    parser.add_argument("--add-seeds", action="store_true",
                        help="join each result with the recorded entry of the same job on other seeds (a job whose "
                             "seed slices ran in several sessions, e.g. seed=0 n_seeds=2, then seed=2 n_seeds=2), "
                             "instead of replacing it")
    args = parser.parse_args(argv)
    found = [r for r in plots.load_results(args.results, HINT) if args.problem is None or r.problem in args.problem]
    if not found:
        raise plots.ResultsError(f"no results of {args.problem} under {args.results}; {HINT}")
    entries = [records.record_entry(r, plots.cumulative_regret(r), plots.run_time(r),
                                    curves=curves_of(r) if args.curves else None) for r in found]
    merged = records.write_record(args.record, entries, join_seeds=args.add_seeds)
    new_paths = {p for e in entries for p in e["paths"]}
    for e in [m for m in merged if new_paths & set(m["paths"])]:
        print(f"recorded {e['algorithm']} on {e['problem']} (T = {e['T']}, seeds {plots.seed_span(e['seeds'])}, "
              f"written {e['written']})")
    print(f"{args.record}: {len(merged)} results")
    return []


if __name__ == "__main__":
    plots.script_main(main, wrote=False)
