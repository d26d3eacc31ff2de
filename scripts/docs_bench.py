"""The Benchmarks page's generated tables and numbers (docs/benchmarks.md), from the committed records.

Every name below is shown on docs/benchmarks.md between markers (scripts/docs_records.py explains them); a
table or number computed here is never typed in the page. The records (experiments/records.yaml):

* ``bbkb_authors_abalone``, ``bbkb_authors_cadata`` — scripts/bench_authors.py, the authors' code beside ours;
* ``bench_authors_speed`` — scripts/bench_authors.py --speed, the speed table (1 and 10 seeds, cold and warm);
* ``bench_compile_cadata`` — scripts/bench_compile.py, where compilation goes, before and after issue 63;
* ``compile_phases_cadata`` — scripts/bench_compile.py, XLA's phases and passes per program;
* ``profile_cpu_cadata`` — scripts/profile_accelerator.py on the CPU, one seed's execution kernel by kernel;
* ``time_vs_T_cadata`` — scripts/bench_time_vs_T.py, execution time against the horizon T;
* ``bench_cpu_2026_11_27`` — scripts/bench.py's accelerator group on the 2-core CPU, one file per run;
* ``accelerator_h200``, ``accelerator_h100`` — the same group on one GPU (and bench_eig's table on the H100);
* ``box_core`` (its ``bench_gssbo_*`` files) — scripts/bench_gssbo.py;
* ``gssbo_fig2``, ``bbkb_fig1``, ``tabular_poster`` — the times of the paper-scale reproductions.

Where a case ran more than once, a table shows the median of its runs; every ratio is of two numbers from the
same record and the same hour.

    python scripts/docs_bench.py        # print every table and value (the check itself: docs_records.py)
"""
from __future__ import annotations

import math
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docs_records import index, load, md_table, percent, pm, sig, times

RU = r"$R_T/R_T^{\mathrm{unif}}$"  # the regret ratio as the pages write it (LaTeX, rendered as MathML)
LABELS = {"bbkb": "BBKB", "bbkb_local": "GlobalLocal-BBKB", "bkb": "BKB", "eps_greedy": "EpsGreedy",
          "gp_ucb": "GP-UCB", "gp_bucb": "GP-BUCB", "std_gp_ucb": "Standard GP-UCB", "gssbo": "GSSBO",
          "rssbo": "RSSBO", "kmeans_pp": "K-means++", "lr_first_m": "LR-First m", "sparse_gp": "SparseGP",
          "ipa": "IPA", "mini_gp_ucb": "mini-META", "vecchia_bo": "VecchiaBO"}
PROBLEMS = {"abalone": "Abalone", "cadata": "Cadata", "hartmann6": "Hartmann6", "eggholder2": "Eggholder2",
            "levy20": "Levy20", "powell50": "Powell50", "rastrigin100": "Rastrigin100", "diabetes": "diabetes",
            "nb201_cifar10": "NAS-Bench-201 (cifar10)", "fcnet_protein_structure": "FCNet (protein structure)"}
BOXES = ("hartmann6", "eggholder2", "levy20", "powell50", "rastrigin100", "diabetes")

# The CPU record's files by the code they ran. The last block of 2026-11-27 (21:10-21:25 UTC) alternated the code
# later committed as 92b0033 (whose commit added these files) with the code of 2026-11-23 (4f1e51c).
CPU_CURRENT = "92b0033"
CPU_REFERENCE = "4f1e51c"
CPU_BLOCK = {CPU_CURRENT: ("accelerator_seeds_in_program_run1.json", "accelerator_seeds_in_program_run2.json",
                           "accelerator_seeds_in_program_vs7b_run1.json",
                           "accelerator_seeds_in_program_vs7b_run2.json"),
             CPU_REFERENCE: ("accelerator_4f1e51c_night_run1.json", "accelerator_4f1e51c_night_run2.json",
                             "accelerator_4f1e51c_late_run1.json", "accelerator_4f1e51c_late_run2.json")}
# The same reference code at three times of the same day: how far this CPU's speed moves within hours.
CPU_SESSIONS = (("afternoon", ("accelerator_4f1e51c_run1.json", "accelerator_4f1e51c_run2.json")),
                ("evening", ("accelerator_4f1e51c_evening_run1.json", "accelerator_4f1e51c_evening_run2.json")),
                ("night", CPU_BLOCK[CPU_REFERENCE]))


# ------------------------------------------------------------------------------------------------ helpers

def s(x: float) -> str:
    """Seconds (or any time) to 3 significant digits, whole numbers from 100 on."""
    return sig(x, 3)


def ratio(x: float) -> str:
    """A ratio of two times: two significant digits below 10 (``0.23×``, ``3.6×``), three from 10 (``40.4×``)."""
    return times(x, 2 if abs(x) < 10 else 3)


def median(xs) -> float:
    return float(statistics.median(xs))


def source(name: str, note: str = "") -> str:
    """The provenance line under a table: the record's files, commit, date and machine (records.yaml)."""
    e = index()[name]
    extra = f" {note}" if note else ""
    return (f"*Record `{name}` (`experiments/{e['files']}`): commit {e['commit']}, {e['date']}; "
            f"{e['machine']}.{extra}*")


def block(table: str, *sources: str) -> str:
    """A generated block: a blank line, the table, a blank line, the provenance line(s)."""
    return "\n" + table + "\n" + "\n\n".join(sources) + "\n"


def hhmm(iso: str) -> str:
    return iso[11:16]


# ------------------------------------------------------------------------------------------------ the authors

def authors_quality_table() -> str:
    rows = []
    for problem in ("abalone", "cadata"):
        d = load(f"bbkb_authors_{problem}")
        for who, label in (("authors", "authors' code"), ("sketchbo", "sketchbo")):
            m = d["summaries"][who]
            rows.append([PROBLEMS[problem], label, pm(m["ratio"]["mean"], m["ratio"]["std"]),
                         pm(m["n_batches"]["mean"], m["n_batches"]["std"]),
                         pm(m["max_batch"]["mean"], m["max_batch"]["std"]),
                         pm(m["dict_max"]["mean"], m["dict_max"]["std"])])
    table = md_table(["problem", "code", RU, "batches", "largest batch", "largest dictionary"],
                     rows, "llrrrr")
    seeds = {load(f"bbkb_authors_{p}")["n_seeds"] for p in ("abalone", "cadata")}
    return block(table, source("bbkb_authors_abalone"), source("bbkb_authors_cadata"),
                 f"*Mean ± sample standard deviation over the {'/'.join(map(str, sorted(seeds)))} seeds.*")


def authors_values() -> dict:
    out = {}
    # do the two codes' statistics agree within one sample standard deviation (the larger of the two)?
    agree = True
    for problem in ("abalone", "cadata"):
        m = load(f"bbkb_authors_{problem}")["summaries"]
        for key in ("ratio", "n_batches", "max_batch", "dict_max"):
            a, b = m["authors"][key], m["sketchbo"][key]
            agree &= abs(a["mean"] - b["mean"]) <= max(a["std"], b["std"])
    out["bench.authors.agree"] = "within one standard deviation" if agree else "not all within one standard deviation"
    return out


# ------------------------------------------------------------------------------------------------ the CPU

def cpu_runs(files) -> list[dict]:
    """The runs of the given files of the CPU record, each with its file's meta."""
    record = load("bench_cpu_2026_11_27")
    out = []
    for f in files:
        for r in record[f]["runs"]:
            out.append({**r, "meta": record[f]["meta"], "file": f})
    return out


def cpu_cell(files, n_seeds: int, dtype: str) -> dict:
    rs = [r for r in cpu_runs(files) if r["n_seeds"] == n_seeds and r["dtype"] == dtype]
    ratios = {round(r["regret_ratio_mean"], 12) for r in rs}
    return {"runs": len(rs), "wall": median(r["wall_s"] for r in rs), "compile": median(r["compile_s"] for r in rs),
            "exec": median(r["exec_s"] for r in rs), "ratio": rs[0]["regret_ratio_mean"], "same": len(ratios) == 1,
            "devices": {r["meta"]["n_devices"] for r in rs}}


def cpu_sessions_table() -> str:
    rows = []
    for label, files in CPU_SESSIONS:
        c = cpu_cell(files, 10, "float64")
        metas = [r["meta"] for r in cpu_runs(files)]
        window = f"{hhmm(min(m['date'] for m in metas))}–{hhmm(max(m['date_end'] for m in metas))}"
        rows.append([f"{label} ({window} UTC)", str(c["runs"]), s(c["wall"]), s(c["compile"]), s(c["exec"])])
    table = md_table(["time of day", "runs", "wall s", "compile s", "exec s"], rows, "lrrrr")
    return block(table, source("bench_cpu_2026_11_27", f"The code {CPU_REFERENCE}, 10 seeds, float64; medians."))


def cpu_values() -> dict:
    first = cpu_cell(CPU_SESSIONS[0][1], 10, "float64")
    last = cpu_cell(CPU_SESSIONS[-1][1], 10, "float64")
    record = load("bench_cpu_2026_11_27")
    f64 = {(r["n_seeds"], tuple(r["regret_ratio"])) for f in record.values() for r in f["runs"]
           if r["dtype"] == "float64"}
    devices = cpu_cell(CPU_BLOCK[CPU_CURRENT], 10, "float64")["devices"]
    return {
        "bench.cpu.drift": ratio(first["exec"] / last["exec"]),
        "bench.cpu.drift_first": s(first["exec"]) + " s",
        "bench.cpu.drift_last": s(last["exec"]) + " s",
        "bench.cpu.files": str(len(record)),
        "bench.cpu.f64_same": "identical" if len({k[1] for k in f64 if k[0] == 10}) == 1 and
                              len({k[1] for k in f64 if k[0] == 1}) == 1 else "not identical",
        "bench.cpu.devices": "/".join(str(d) for d in sorted(devices)),
    }


# ------------------------------------------------------------------------------------------------ accelerators

MAIN = "accelerator_seeds_1_10_100_1000"  # the part of an accelerator record that holds its main table

def accel_runs(name: str, key: str = MAIN) -> list[dict]:
    return load(name)[key]["runs"]


def accel_time_table(name: str) -> str:
    rows = []
    for r in accel_runs(name):
        busy = "n/a" if r["gpu_busy"] is None else f"{r['gpu_busy']:.2f}"
        rows.append([str(r["n_seeds"]), r["dtype"], s(r["wall_s"]), s(r["compile_s"]), s(r["exec_s"]),
                     s(r["step_us"]), busy])
    table = md_table(["seeds", "dtype", "wall s", "compile s", "exec s", "µs per seed-step", "GPU busy"],
                     rows, "rlrrrrr")
    return block(table, source(name))


def accel_run_table(name: str) -> str:
    rows = []
    for r in accel_runs(name):
        rr = sig(r["regret_ratio_mean"]) if r["n_seeds"] == 1 else pm(r["regret_ratio_mean"], r["regret_ratio_sd"])
        rows.append([str(r["n_seeds"]), r["dtype"], rr, sig(r["batches_mean"]), str(r["max_dict"]),
                     f"{r['loop_iter_mean']:.1g} ({r['loop_iter_max']})"])
    table = md_table(["seeds", "dtype", RU, "batches", "largest dictionary", "fallback rounds per step (max)"],
                     rows, "rlrrrr")
    return block(table, f"*Same record; {RU} mean ± sample standard deviation over the seeds.*")


def accel_cell(name: str, key: str, n_seeds: int, dtype: str) -> dict:
    return next(r for r in accel_runs(name, key) if r["n_seeds"] == n_seeds and r["dtype"] == dtype)


def autotune_table() -> str:
    rows = []
    for r in accel_runs("accelerator_h200", "autotune_level_0_seeds_10_100"):
        d = accel_cell("accelerator_h200", MAIN, r["n_seeds"], r["dtype"])
        rows.append([str(r["n_seeds"]), r["dtype"]] +
                    [f"{s(d[k])} → {s(r[k])}" for k in ("compile_s", "exec_s", "wall_s")])
    table = md_table(["seeds", "dtype", "compile s", "exec s", "wall s"], rows, "rlrrr")
    return block(table, source("accelerator_h200", "Default autotuning (the table above) → "
                                                   "`XLA_FLAGS=--xla_gpu_autotune_level=0` (a second process "
                                                   "of the same session)."))


def eig_table() -> str:
    e = load("accelerator_h100")["eig"]
    rows = []
    for r in e["rows"]:
        rows.append([str(r["m"]), s(r["eigh_single_ms"]), s(r["jacobi_single_ms"]), s(r["eigh_vmap_ms"]),
                     s(r["jacobi_vmap_ms"]), ratio(r["jacobi_over_eigh_vmap"])])
    seeds = e["rows"][0]["seeds"]
    table = md_table(["$m$", "eigh, one matrix ms", "Jacobi, one matrix ms", f"eigh, {seeds} vmapped ms",
                      f"Jacobi, {seeds} vmapped ms", "Jacobi / eigh, vmapped"], rows, "rrrrrr")
    return block(table, source("accelerator_h100", f"The file's `eig` part: `scripts/bench_eig.py --seeds {seeds}`, "
                                                   f"float64, medians of {e['repeats']} calls, {e['default_sweeps']} "
                                                   f"Jacobi sweeps."))


def accel_values() -> dict:
    out = {}
    h200 = "accelerator_h200"
    passed = re.search(r"(\d+) passed", load(h200)["what"])
    out["bench.h200.conformance_passed"] = passed.group(1) if passed else "not recorded"
    for name, tag in (("accelerator_h200", "h200"), ("accelerator_h100", "h100")):
        runs = accel_runs(name)
        first = runs[0]
        big = accel_cell(name, MAIN, 1000, "float64")
        out[f"bench.{tag}.one_wall"] = s(first["wall_s"]) + " s"
        out[f"bench.{tag}.one_compile"] = s(first["compile_s"]) + " s"
        out[f"bench.{tag}.one_exec"] = s(first["exec_s"]) + " s"
        out[f"bench.{tag}.compile_range"] = (f"{s(min(r['compile_s'] for r in runs[1:]))}–"
                                             f"{s(max(r['compile_s'] for r in runs[1:]))} s")
        out[f"bench.{tag}.big_wall"] = s(big["wall_s"]) + " s"
        out[f"bench.{tag}.big_exec"] = s(big["exec_s"]) + " s"
        out[f"bench.{tag}.big_busy"] = f"{big['gpu_busy']:.2f}"
        out[f"bench.{tag}.big_dict"] = str(big["max_dict"])
        out[f"bench.{tag}.ten_dict"] = str(accel_cell(name, MAIN, 10, "float64")["max_dict"])
        f32 = [abs(accel_cell(name, MAIN, r["n_seeds"], "float32")["regret_ratio_mean"] /
                   r["regret_ratio_mean"] - 1) for r in runs if r["dtype"] == "float64" and r["n_seeds"] >= 10]
        out[f"bench.{tag}.f32_gap"] = percent(max(f32), 2)
        out[f"bench.{tag}.exec_1000_over_1"] = ratio(big["exec_s"] / first["exec_s"])
        out[f"bench.{tag}.loop_max"] = str(max(r["loop_iter_max"] for r in runs))
    h100_shown = ("one_wall", "one_compile", "big_wall", "big_exec", "big_busy", "f32_gap")
    out = {k: v for k, v in out.items() if not k.startswith("bench.h100.") or k.split(".")[2] in h100_shown}
    auto = {(r["n_seeds"], r["dtype"]): r for r in accel_runs(h200, "autotune_level_0_seeds_10_100")}
    saved = [accel_cell(h200, MAIN, *k)["compile_s"] - r["compile_s"]
             for k, r in auto.items() if k[0] == 100]
    cost = [r["exec_s"] / accel_cell(h200, MAIN, *k)["exec_s"] - 1
            for k, r in auto.items() if k[0] == 100]
    out["bench.h200.autotune_saved"] = f"{sig(min(saved), 2)}–{sig(max(saved), 2)} s"
    out["bench.h200.autotune_cost"] = f"{percent(min(cost), 1)}–{percent(max(cost), 1)}"
    e = load("accelerator_h100")["eig"]["rows"]
    out["bench.eig.single_range"] = (f"{ratio(min(r['jacobi_over_eigh_single'] for r in e))}–"
                                     f"{ratio(max(r['jacobi_over_eigh_single'] for r in e))}")
    out["bench.eig.vmap_range"] = (f"{ratio(min(r['jacobi_over_eigh_vmap'] for r in e))}–"
                                   f"{ratio(max(r['jacobi_over_eigh_vmap'] for r in e))}")
    return out


# ------------------------------------------------------------------------------------------------ GSSBO

def bench_gssbo_files() -> dict:
    return {k: v for k, v in load("box_core").items() if k.startswith("bench_gssbo_")}


def gssbo_bench_table() -> str:
    rows = []
    for fname, d in sorted(bench_gssbo_files().items(), key=lambda kv: (kv[1]["N"], kv[0])):
        g = next(r for r in d["rows"] if r["algorithm"] == "gssbo")
        for ref in (r for r in d["rows"] if r["algorithm"].startswith("std_gp_ucb")):
            estimated = "estimated" in ref["algorithm"]
            r_ratio = "—" if estimated else sig(g["cumulative_regret"] / ref["cumulative_regret"])
            short = fname.removeprefix("bench_gssbo_hartmann6_").removesuffix(".json")
            rows.append([f"`{short}`", str(d["N"]), s(g["exec_time_s"]), s(ref["exec_time_s"]),
                         "estimated" if estimated else "run", percent(g["exec_time_s"] / ref["exec_time_s"], 2),
                         r_ratio])
    table = md_table(["file", "$N$", "GSSBO exec s", "GP-UCB exec s", "GP-UCB", "time ratio", "$R_N$ ratio"],
                     rows, "lrrrlrr")
    return block(table, source("box_core", "Hartmann6, one seed; ratios GSSBO / Standard GP-UCB within one file."))


def gp_ucb_per_iteration_table() -> str:
    d = bench_gssbo_files()["bench_gssbo_hartmann6_N1000_estimate.json"]
    est = next(r for r in d["rows"] if r["algorithm"].startswith("std_gp_ucb"))
    rows = [[str(p["n"]), s(p["s_per_iteration"]), s(p["compile_time_s"])] for p in est["per_iteration"]]
    table = md_table(["$n$ (model rows)", "s per iteration (median of 3)", "compile s"], rows, "rrr")
    return block(table, source("box_core", "File `bench_gssbo_hartmann6_N1000_estimate.json`, Hartmann6."))


def fig2_rows() -> dict:
    return {(r["problem"], r["algorithm"]): r for r in load("gssbo_fig2")["results"]}


def gssbo_fig2_table() -> str:
    rows_by = fig2_rows()
    rows = []
    for p in BOXES:
        g, b = rows_by[p, "std_gp_ucb"], rows_by[p, "gssbo"]
        rows.append([PROBLEMS[p], s(g["exec_s_per_seed"]), s(b["exec_s_per_seed"]),
                     percent(b["exec_s_per_seed"] / g["exec_s_per_seed"], 2),
                     s(rows_by[p, "rssbo"]["exec_s_per_seed"]), s(rows_by[p, "vecchia_bo"]["exec_s_per_seed"]),
                     s(rows_by[p, "mini_gp_ucb"]["exec_s_per_seed"])])
    seeds = {a: rows_by["hartmann6", a]["n_seeds"] for a in ("std_gp_ucb", "gssbo", "vecchia_bo", "mini_gp_ucb")}
    table = md_table(["problem", f"Standard GP-UCB s ({seeds['std_gp_ucb']} seeds)",
                      f"GSSBO s ({seeds['gssbo']} seeds)", "GSSBO / GP-UCB", "RSSBO s",
                      f"VecchiaBO s ({seeds['vecchia_bo']} seeds)", f"mini-META s ({seeds['mini_gp_ucb']} seeds)"],
                     rows, "lrrrrrr")
    return block(table, source("gssbo_fig2", "One seed's execution (mean over the job's seeds), $N = 1000$."))


def gssbo_fig2_more_table() -> str:
    rows_by = fig2_rows()
    algos = ("kmeans_pp", "lr_first_m", "sparse_gp", "ipa")
    rows = [[PROBLEMS[p]] + [s(rows_by[p, a]["exec_s_per_seed"]) for a in algos] for p in BOXES]
    seeds = rows_by["hartmann6", "ipa"]["n_seeds"]
    return block(md_table(["problem"] + [f"{LABELS[a]} s" for a in algos], rows, "lrrrr"),
                 f"*Same record, {seeds} seeds each.*")


def gssbo_values() -> dict:
    rows_by = fig2_rows()
    shares = {p: rows_by[p, "gssbo"]["exec_s_per_seed"] / rows_by[p, "std_gp_ucb"]["exec_s_per_seed"] for p in BOXES}
    files = bench_gssbo_files()
    measured = files["bench_gssbo_hartmann6_N1000_measured.json"]["rows"]
    g = next(r for r in measured if r["algorithm"] == "gssbo")
    ref = next(r for r in measured if r["algorithm"] == "std_gp_ucb")
    est = next(r for r in files["bench_gssbo_hartmann6_N1000_estimate.json"]["rows"]
               if r["algorithm"].startswith("std_gp_ucb"))
    per = {p["n"]: p["s_per_iteration"] for p in est["per_iteration"]}
    n300 = files["bench_gssbo_hartmann6_N300_estimate.json"]["rows"]
    run300 = next(r for r in n300 if r["algorithm"] == "std_gp_ucb")
    est300 = next(r for r in n300 if r["algorithm"].startswith("std_gp_ucb ("))
    vecchia_over = max((rows_by[p, "vecchia_bo"]["exec_s_per_seed"] / rows_by[p, "std_gp_ucb"]["exec_s_per_seed"], p)
                       for p in BOXES)
    return {
        "bench.gssbo.share_range": f"{percent(min(shares.values()), 2)}–{percent(max(shares.values()), 2)}",
        "bench.gssbo.share_hartmann6": percent(shares["hartmann6"], 2),
        "bench.gssbo.share_powell50": percent(shares["powell50"], 2),
        "bench.gssbo.n1000_share": percent(g["exec_time_s"] / ref["exec_time_s"], 2),
        "bench.gssbo.n1000_regret": ratio(g["cumulative_regret"] / ref["cumulative_regret"]),
        "bench.gssbo.gp_ucb_n1000": s(ref["exec_time_s"]) + " s",
        "bench.gssbo.per_iter_500": s(per[500]) + " s",
        "bench.gssbo.per_iter_1000": s(per[1000]) + " s",
        "bench.gssbo.per_iter_growth": ratio(per[1000] / per[500]),
        "bench.gssbo.estimate_over_run_300": ratio(est300["exec_time_s"] / run300["exec_time_s"]),
        "bench.gssbo.fit_steps": str(rows_by["hartmann6", "std_gp_ucb"]["hyperparameters"]["fit_steps"]),
        "bench.gssbo.vecchia_over": ratio(vecchia_over[0]),
        "bench.gssbo.vecchia_over_problem": PROBLEMS[vecchia_over[1]],
    }


# ------------------------------------------------------------------------------------------------ reproductions

def bbkb_fig1_rows() -> dict:
    return {(r["problem"], r["algorithm"]): r for r in load("bbkb_fig1")}


def repro_bbkb_table() -> str:
    rows_by = bbkb_fig1_rows()
    algos = ("bbkb", "bbkb_local", "bkb", "eps_greedy", "gp_ucb", "gp_bucb")
    rows = []
    for a in algos:
        done = [rows_by[p, a] for p in ("abalone", "cadata") if (p, a) in rows_by]
        rows.append([LABELS[a], str(done[0]["T"])] +
                    [s(rows_by[p, a]["exec_s_per_seed"]) if (p, a) in rows_by else "not recorded"
                     for p in ("abalone", "cadata")])
    return block(md_table(["algorithm", "$T$", "Abalone s", "Cadata s"], rows, "lrrr"),
                 source("bbkb_fig1", "One seed's execution, compilation excluded; 10 seeds per job."))


def repro_gssbo_table() -> str:
    results = load("gssbo_fig2")["results"]
    rows = []
    for p in BOXES:
        jobs = [r for r in results if r["problem"] == p]
        slow = max(jobs, key=lambda r: r["wall_time_s"])
        rows.append([PROBLEMS[p], str(len(jobs)), sig(sum(r["wall_time_s"] for r in jobs) / 3600, 2),
                     f"{LABELS[slow['algorithm']]}, {slow['n_seeds']} seeds", sig(slow["wall_time_s"] / 3600, 2)])
    table = md_table(["problem", "jobs", "all jobs h", "longest job", "its wall h"], rows, "lrrlr")
    return block(table, source("gssbo_fig2", "Wall time of each job (compilation included), summed."))


def tabular_table() -> str:
    rows = []
    arms = {r["problem"]: r["arms"] for r in load("tabular_poster_t2000")["runs"]}
    for r in load("tabular_poster"):
        if r["algorithm"] == "bkb":  # its jobs were paused at times: no time to compare
            continue
        rows.append([f"{PROBLEMS[r['problem']]}, A = {arms[r['problem']]}", LABELS[r["algorithm"]], str(r["T"]),
                     s(r["exec_s_per_seed"]), s(r["exec_s_at_t"]), pm(r["ratio_at_t_mean"], r["ratio_at_t_std"])])
    at = load("tabular_poster")[0]["at_t"]
    table = md_table(["problem", "algorithm", "$T$", "exec s to $T$", f"exec s to $t = {at}$",
                      f"$R_t/R_t^{{\\mathrm{{unif}}}}$ at $t = {at}$"],
                     rows, "llrrrr")
    return block(table, source("tabular_poster", "One seed's execution, compilation excluded; 10 seeds; "
                                                 "A from record `tabular_poster_t2000`; BKB's paused jobs "
                                                 "left out."))


def repro_values() -> dict:
    rows_by = bbkb_fig1_rows()
    out = {}
    for p in ("abalone", "cadata"):
        out[f"bench.repro.bkb_over_bbkb.{p}"] = ratio(rows_by[p, "bkb"]["exec_s_per_seed"] /
                                                     rows_by[p, "bbkb"]["exec_s_per_seed"])
        out[f"bench.repro.bkb_job_h.{p}"] = sig(rows_by[p, "bkb"]["exec_s_per_seed"] * rows_by[p, "bkb"]["seeds"] /
                                                3600, 2)
    results = load("gssbo_fig2")["results"]
    out["bench.repro.fig2_jobs"] = str(len(results))
    out["bench.repro.fig2_hours"] = sig(sum(r["wall_time_s"] for r in results) / 3600, 2)
    tab = {(r["problem"], r["algorithm"]): r for r in load("tabular_poster")}
    for p, tag in (("nb201_cifar10", "nb201"), ("fcnet_protein_structure", "fcnet")):
        out[f"bench.tabular.gp_ucb_over_bbkb.{tag}"] = ratio(tab[p, "gp_ucb"]["exec_s_at_t"] /
                                                            tab[p, "bbkb"]["exec_s_at_t"])
    return out


# ------------------------------------------------------------------------------------------------ the page

# ------------------------------------------------------------------------------------------------ speed and compile

SPEED_TARGETS = {"1 seed, cold": 3.0, "1 seed, warm": 5.0, "10 seeds float64": 8.0, "10 seeds float32": 10.0}
"""Issue 63's targets, authors' time over sketchbo's, for the rows that have one."""


def speed_table() -> str:
    """scripts/bench_authors.py --speed: medians of each row, both codes, one run."""
    d = load("bench_authors_speed")
    rows = []
    for r in d["rows"]:
        m = r["median"]
        ours = r["impl"] == "sketchbo"
        variant = r["variant"] + (", cache " + ("off (compiles)" if r["cache"] == "off" else "warm")
                                  if r["cache"] else "")
        rows.append([r["row"], "sketchbo" if ours else "authors' code", variant, s(m["wall_s"]),
                     s(m["compile_s"]) if ours else "–", s(m["exec_s"]) if ours else "–", sig(m["ratio"], 3),
                     ", ".join(s(run["wall_s"]) for run in r["runs"])])
    table = md_table(["seeds", "code", "variant", "wall s (median)", "compile s", "exec s", RU, "runs s"], rows,
                     "lllrrrrl")
    return block(table, source("bench_authors_speed", f"Medians of {d['repeats']} alternations of the two codes, "
                                                       "each measurement a fresh process (imports and data loading "
                                                       "left out for both)."))


SPEED_RECORDS = ("bench_authors_speed", "bench_authors_speed_recheck", "bench_authors_speed_later",
                 "bench_authors_speed_later_recheck", "bench_authors_speed_noon", "bench_authors_speed_devices",
                 "bench_authors_speed_ahead", "bench_authors_speed_final")
"""The same benchmark run several times (the first one's medians in the speed table)."""
SPEED_CHANGES = {"f6cd1d9": "one program on both devices (ten seeds)", "717eb7d": "chunks started ahead"}
"""The commits between the runs of [`SPEED_RECORDS`][] that changed what the benchmark measures."""


def speed_ratio_table() -> str:
    """The speed ratios of every run's record ([`SPEED_RECORDS`][]) against issue 63's targets."""
    runs = [load(name) for name in SPEED_RECORDS]
    rows = []
    for name in runs[0]["ratios"]:
        target = SPEED_TARGETS.get(name)
        cells = []
        for d in runs:
            value = d["ratios"][name]
            cells.append(f"{value:.2f}×" + ("" if target is None else (" met" if value >= target else " **not met**")))
        rows.append([name, "–" if target is None else ratio(target), *cells])
    heads = [f"`{n}`, {index()[n]['commit'].split()[0]}, {hhmm(d['meta']['date'])} UTC" for n, d in zip(SPEED_RECORDS, runs)]
    table = md_table(["comparison (authors' time / sketchbo's)", "target (issue 63)", *heads], rows,
                     "lr" + "r" * len(runs))
    changes = ", ".join(f"{commit} {what}" for commit, what in SPEED_CHANGES.items())
    return block(table, "*First column: the medians above; the others: the same command run again. Changed between "
                        + f"runs: {changes}; no other change to the measured code.*")


def speed_values() -> dict:
    d = load("bench_authors_speed")
    by = {(r["row"], r["impl"], r["variant"]): r["median"] for r in d["rows"]}
    f64, f32 = by[("10 seeds", "sketchbo", "float64")], by[("10 seeds", "sketchbo", "float32")]
    runs = [load(name) for name in SPEED_RECORDS]  # runs[0] is d
    gap = max(abs(1.0 - b["ratios"][k] / a["ratios"][k]) for a in runs for b in runs for k in a["ratios"])
    one = [next(r["median"]["wall_s"] for r in x["rows"] if (r["row"], r["impl"], r["variant"]) ==
                ("1 seed", "authors", "1 thread")) for x in runs]
    return {"bench.speed.recheck_gap": percent(gap), "bench.speed.authors_one": ", ".join(s(v) for v in one) + " s",
            "bench.speed.ten_f64_two_cores": ratio(d["ratios"]["10 seeds float64, authors on 2 cores"]),
            "bench.speed.f32_ratio_gap": percent(abs(f32["ratio"] / f64["ratio"] - 1.0)),
            "bench.speed.warm_compile": s(by[("1 seed, warm", "sketchbo", "float64")]["compile_s"]) + " s",
            **f32_values()}


def f32_values() -> dict:
    """scripts/bench_f32.py: float32 against float64 on many seeds."""
    d = load("bench_f32_cadata")
    m = d["summary"]
    return {"bench.f32.seeds": str(d["n_seeds"]), "bench.f32.gap": percent(abs(m["gap_relative"])),
            "bench.f32.diff": f"{m['paired_diff_mean']:+.4f} ± {m['paired_diff_se']:.4f}"}


def _compile_runs(label: str, kind: str) -> list:
    return load("bench_compile_cadata")["results"][label][kind]


def compile_table() -> str:
    """scripts/bench_compile.py: per program, tracing, lowering and XLA's compilation, before and after the change."""
    d = load("bench_compile_cadata")
    # the checkouts measured (their commits: the record's provenance line), in the record's order
    names = {"before": "before", "tracebacks": "with tracebacks", "previous": "previous", "this": "after"}
    rows = []
    for label in d["results"]:
        cold = _compile_runs(label, "cold")
        for prog, short in (("jit(init_all)", "init"), ("jit(chunk_all)", "chunk")):
            p = [r["programs"][prog] for r in cold]
            rows.append([names[label], short, *(s(median([x[k] for x in p])) for k in ("trace_s", "lower_s", "backend_s")),
                         str(p[0]["kernels"])])
        for kind in ("cold", "warm"):
            r = _compile_runs(label, kind)
            rows.append([names[label], f"the run, cache {'off' if kind == 'cold' else 'warm'}", "", "", "",
                         f"compile {s(median([x['compile_s'] for x in r]))} s, exec {s(median([x['exec_s'] for x in r]))} s"])
    table = md_table(["code", "program", "trace s", "lower s", "XLA compile s", "kernels"], rows, "llrrrl")
    repeats = len(d["results"]["this"]["cold"])
    return block(table, source("bench_compile_cadata", f"Medians of {repeats} alternations, BBKB on Cadata, "
                                                        "T = 10^4, one seed, float64, a fresh process each."))


PHASE_PROGRAMS = (("jit_init_all", "init"), ("jit_chunk_all", "chunk"))


def _phases(module: str) -> tuple[dict, list]:
    """The medians of a program's XLA phases over the record's profiled runs, and its first run's passes."""
    recs = [p[module] for p in load("compile_phases_cadata")["results"]["this"]["phases"] if module in p]
    return {k: median([r[k] for r in recs]) for k in ("total_s", "hlo_passes_s", "backend_s", "codegen_s")}, \
        recs[0]["passes"]


def compile_phases_table() -> str:
    """scripts/bench_compile.py's profiled runs: per program, XLA's pass pipelines, its backend and LLVM's code
    generation within it, and the events of the most own time."""
    d = load("compile_phases_cadata")
    rows = []
    for module, short in PHASE_PROGRAMS:
        med, passes = _phases(module)
        rows.append([short, s(med["total_s"]), s(med["hlo_passes_s"]), s(med["backend_s"]), s(med["codegen_s"]),
                     ", ".join(f"`{n}` {s(t)}" for n, t, _ in passes[:4])])
    table = md_table(["program", "XLA s", "HLO passes s", "backend s", "of which LLVM s", "most own time (s)"],
                     rows, "lrrrrl")
    n = len(d["results"]["this"]["phases"])
    return block(table, source("compile_phases_cadata", f"Medians of {n} profiled cold runs (own times: the first), "
                                                        "BBKB on Cadata, T = 10^4, one seed, float64."))


def compile_phases_values() -> dict:
    med, _ = _phases("jit_chunk_all")
    return {"bench.phases.llvm_share": percent(med["codegen_s"] / med["total_s"]),
            "bench.phases.passes_share": percent(med["hlo_passes_s"] / med["total_s"])}


def _hlo_short(desc: str) -> str:
    return re.sub(r"\{[0-9,]*\}", "", desc) or "–"


def cpu_profile_table(top: int = 12) -> str:
    """scripts/profile_accelerator.py on the CPU: the kernels of the most own time in one seed's execution."""
    d = load("profile_cpu_cadata")
    rows = [[f"`{r['kernel']}`", f"`{_hlo_short(r['hlo'])}`", str(r["count"]), s(r["s"]), percent(r["share"])]
            for r in d["profile"]["top"][:top]]
    table = md_table(["kernel", "what (optimized HLO)", "calls", "own s", "share"], rows, "llrrr")
    return block(table, source("profile_cpu_cadata", f"BBKB on Cadata, T = {d['T']}, {d['seeds']} seed, "
                                                     f"{d['dtype']}, compiled before the profiled run."))


def cpu_profile_values() -> dict:
    d = load("profile_cpu_cadata")
    prof = d["profile"]
    over_arms = [r for r in prof["top"] if r["hlo"].startswith(f"f64[{d['arms']}") or
                 r["hlo"].startswith(f"f32[{d['arms']}")]
    return {"bench.cpuprof.all_arms": percent(sum(r["share"] for r in over_arms)),
            "bench.cpuprof.arms": str(d["arms"]), "bench.cpuprof.batches": str(d["batches"][0]), "bench.cpuprof.T": str(d["T"]),
            "bench.cpuprof.busy": percent(prof["busy_s"] / d["exec_s"])}


def time_vs_T_values() -> dict:
    res = load("time_vs_T_cadata")["results"]["bbkb"]
    a, b = res["rows"][-2], res["rows"][-1]
    return {"bench.tvt.bbkb_fit": f"{res['slope']:.2f}",
            "bench.tvt.bbkb_last": f"{math.log(b['exec_s'] / a['exec_s']) / math.log(b['T'] / a['T']):.2f}"}


def compile_values() -> dict:
    return {"bench.compile.this.cold": s(median([x["compile_s"] for x in _compile_runs("this", "cold")])) + " s"}


def time_vs_T_table() -> str:
    """scripts/bench_time_vs_T.py: execution time against T and the fitted slope of each algorithm."""
    d = load("time_vs_T_cadata")
    labels = {"bbkb": "BBKB", "bkb": "BKB", "gp_ucb": "exact GP-UCB"}
    rows = []
    for algorithm, res in d["results"].items():
        times_at = ", ".join(f"{r['T']}: {s(r['exec_s'])}" for r in res["rows"])
        a, b = res["rows"][-2], res["rows"][-1]
        last = math.log(b["exec_s"] / a["exec_s"]) / math.log(b["T"] / a["T"])
        rows.append([labels.get(algorithm, algorithm), times_at, f"{res['slope']:.2f}", f"{last:.2f}",
                     d["paper_rate"][algorithm]])
    table = md_table(["algorithm", "T: exec s (median)", "fitted slope", "slope, two largest T", "the paper's bound"],
                     rows, "llrrl")
    return block(table, source("time_vs_T_cadata"))


def tables() -> dict[str, str]:
    return {
        "bench.authors_quality": authors_quality_table(),
        "bench.speed": speed_table(),
        "bench.speed_ratios": speed_ratio_table(),
        "bench.compile": compile_table(),
        "bench.compile_phases": compile_phases_table(),
        "bench.cpu_profile": cpu_profile_table(),
        "bench.time_vs_T": time_vs_T_table(),
        "bench.cpu_sessions": cpu_sessions_table(),
        "bench.h200_time": accel_time_table("accelerator_h200"),
        "bench.h200_run": accel_run_table("accelerator_h200"),
        "bench.h200_autotune": autotune_table(),
        "bench.h100_time": accel_time_table("accelerator_h100"),
        "bench.h100_run": accel_run_table("accelerator_h100"),
        "bench.eig": eig_table(),
        "bench.gssbo_bench": gssbo_bench_table(),
        "bench.gp_ucb_per_iteration": gp_ucb_per_iteration_table(),
        "bench.gssbo_fig2": gssbo_fig2_table(),
        "bench.gssbo_fig2_more": gssbo_fig2_more_table(),
        "bench.repro_bbkb": repro_bbkb_table(),
        "bench.repro_gssbo": repro_gssbo_table(),
        "bench.tabular": tabular_table(),
    }


def values() -> dict[str, str]:
    return {**authors_values(), **speed_values(), **compile_values(), **compile_phases_values(), **cpu_profile_values(), **time_vs_T_values(), **cpu_values(), **accel_values(), **gssbo_values(), **repro_values()}


if __name__ == "__main__":
    for name, text in tables().items():
        print(f"== {name}\n{text}")
    for name, text in values().items():
        print(f"{name}: {text}")
