"""The tables and numbers of the S-BPE scale study on docs/reproductions-bbkb.md#sbpe-scale and its rows on
docs/reliability.md, computed from the committed records (experiments/records.yaml):

* ``sbpe_scale`` — scripts/sbpe_scale.py: S-BPE's R_N against N on gp_sample, both widths, and gamma_N;
* ``sbpe_box`` — scripts/sbpe_scale.py --box: continuous S-BPE (``sbpe_box``) on Hartmann6.

``tables()`` maps a name to a Markdown block, ``values()`` a name to inline text; ``scripts/docs_records.py`` fills
and checks the pages' markers (``python scripts/docs_sbpe.py`` prints them). No JAX program runs.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docs_records import index, load, md_table, pm, sig  # noqa: E402

WIDTHS = {"code": "`beta: code`", "paper": "`beta: paper`"}


def source(name: str, note: str = "") -> str:
    """The provenance line under a table: the record's files, commit, date and machine (records.yaml)."""
    e = index()[name]
    extra = f" {note}" if note else ""
    return (f"*Record `{name}` (`experiments/{e['files']}`): commit {e['commit']}, {e['date']}; "
            f"{e['machine']}.{extra}*")


def _scale():
    return load("sbpe_scale")


def _rate(d: dict, width: str) -> list[float]:
    """c sqrt(gamma_N N) with c meeting ``width``'s mean R_N at the smallest N (scripts/sbpe_scale.py)."""
    rows = d["results"][width]["rows"]
    rate = [math.sqrt(d["gamma"]["gamma"][str(r["N"])] * r["N"]) for r in rows]
    return [v * rows[0]["mean"] / rate[0] for v in rate]


def scale_table() -> str:
    """R_N (mean ± sd over seeds) per N for both widths, gamma_N and the scaled rate beside each."""
    d = _scale()
    widths = [w for w in WIDTHS if w in d["results"]]
    rates = {w: _rate(d, w) for w in widths}
    header = ["$N$"] + [f"$R_N$, {WIDTHS[w]}" for w in widths] + [r"$\hat\gamma_N$"]
    header += [rf"$c\sqrt{{\hat\gamma_N N}}$, {WIDTHS[w]}" for w in widths] + ["batches"]
    rows = []
    for i, N in enumerate(d["Ns"]):
        cells = [f"{N:,}"]
        cells += [pm(d["results"][w]["rows"][i]["mean"], d["results"][w]["rows"][i]["sd"]) for w in widths]
        cells.append(sig(d["gamma"]["gamma"][str(N)]))
        cells += [sig(rates[w][i]) for w in widths]
        cells.append(str(int(max(d["results"][widths[0]]["rows"][i]["batches"]))))
        rows.append(cells)
    fits = ["fitted slope"] + [f"{d['results'][w]['fit']['slope']:.2f}" for w in widths] + [""]
    fits += [f"{d['rate_fit']['slope']:.2f}" for _ in widths] + [""]
    table = md_table(header, rows + [fits])
    note = (f"{d['n_seeds']} seeds (0 – {d['n_seeds'] - 1}) per $N$ in one program; sd over seeds. "
            r"$\hat\gamma_N$: the greedy maximum-variance design's information gain on the same arms, "
            r"$\tau^2$ = " + f"{d['results'][widths[0]]['hyperparameters']['lam']}.")
    return "\n" + table + "\n" + source("sbpe_scale", note) + "\n"


def box_table() -> str:
    """sbpe_box on Hartmann6: R_T / R_T^unif, the last batch's mean instant regret and the best regret per row."""
    d = load("sbpe_box")
    rows = []
    for r in d["rows"]:
        p = r["params"]
        rows.append([WIDTHS[p["beta"]], sig(p["sigma2"], 2), pm(np.mean(r["ratio"]), np.std(r["ratio"], ddof=1)),
                     pm(np.mean(r["last_batch_regret"]), np.std(r["last_batch_regret"], ddof=1)),
                     sig(float(np.mean(r["best_regret"])))])
    table = md_table(["width", "$\\sigma^2$", r"$R_T/R_T^{\mathrm{unif}}$", "last batch: mean regret",
                      "best regret (mean)"], rows, "llrrr")
    note = (f"`{d['problem']}` (noiseless), $T$ = {d['T']:,}, {d['n_seeds']} seeds; the other hyperparameters at "
            f"their defaults; uniform random search's mean regret {sig(d['uniform_mean_minus_f_min'])}; the last "
            f"batch has {d['rows'][0]['last_batch_length']} evaluations.")
    return "\n" + table + "\n" + source("sbpe_box", note) + "\n"


def values() -> dict[str, str]:
    d = _scale()
    code, paper = d["results"]["code"], d["results"]["paper"]
    last_code = code["rows"][-1]["mean"] / _rate(d, "code")[-1]
    last_paper = paper["rows"][-1]["mean"] / _rate(d, "paper")[-1]
    box = load("sbpe_box")
    by = {(r["params"]["beta"], r["params"]["sigma2"]): r for r in box["rows"]}
    default = by[("code", 0.5)]
    small = by[("code", min(s for b, s in by if b == "code"))]
    paper_box = next(r for (b, _), r in by.items() if b == "paper")
    return {
        "sbpe.scale.slope_code": f"{code['fit']['slope']:.2f}",
        "sbpe.scale.slope_paper": f"{paper['fit']['slope']:.2f}",
        "sbpe.scale.last_code": f"{code['fit']['last_slope']:.2f}",
        "sbpe.scale.last_paper": f"{paper['fit']['last_slope']:.2f}",
        "sbpe.scale.slope_rate": f"{d['rate_fit']['slope']:.2f}",
        "sbpe.scale.slope_log_rate": f"{d['log_rate_fit']['slope']:.2f}",
        "sbpe.scale.range": f"{d['Ns'][0]:,} to {d['Ns'][-1]:,}",
        "sbpe.scale.seeds": str(d["n_seeds"]),
        "sbpe.scale.gamma": " to ".join(sig(d["gamma"]["gamma"][str(N)]) for N in (d["Ns"][0], d["Ns"][-1])),
        "sbpe.scale.below": f"{sig(last_code, 2)} and {sig(last_paper, 2)}",
        "sbpe.scale.paper_over_code": sig(paper["rows"][-1]["mean"] / code["rows"][-1]["mean"], 2) + "×",
        "sbpe.box.default": pm(np.mean(default["ratio"]), np.std(default["ratio"], ddof=1)),
        "sbpe.box.small": pm(np.mean(small["ratio"]), np.std(small["ratio"], ddof=1)),
        "sbpe.box.small_sigma2": sig(small["params"]["sigma2"], 2),
        "sbpe.box.paper": pm(np.mean(paper_box["ratio"]), np.std(paper_box["ratio"], ddof=1)),
    }


def tables() -> dict[str, str]:
    return {"sbpe.scale": scale_table(), "sbpe.box": box_table()}


if __name__ == "__main__":
    for name, text in {**tables(), **values()}.items():
        print(f"--- {name}\n{text}")
