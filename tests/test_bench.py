"""The benchmark suite (scripts/bench.py --quick) and its figures (scripts/plot_bench.py), end to end.

The scripts run in a subprocess with XLA's backend optimisation off: this checks the suite's output, not
its speed, and cuts the compilation time of the quick suite by about a third.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
RUN_FIELDS = ("case", "group", "algorithm", "problem", "A", "T", "n_seeds", "seed_axis", "dtype", "device", "wall_s",
              "compile_s", "exec_s", "rounds", "round_median_ms", "step_us", "seed_steps_per_s", "peak_host_mb",
              "peak_device_mb", "regret_ratio_mean", "regret_ratio", "max_batch", "max_dict", "reused")


def run_script(name, *args, timeout=300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, str(SCRIPTS / name), *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    proc = run_script("bench.py", "--quick", "--out", out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, json.loads(out.read_text()), proc.stdout


def test_machine_info_and_table(bench):
    _, data, stdout = bench
    meta = data["meta"]
    for key in ("date", "date_end", "platform", "cpu_count", "jax", "jaxlib", "device", "memory_method", "config"):
        assert meta[key], key
    for key in ("load_avg_start", "load_avg_end"):
        assert len(meta[key]) == 3 and all(v >= 0 for v in meta[key])
    assert meta["device"].startswith("cpu")
    assert "seed-st/s" in stdout and "ratios measured in this run" in stdout


def test_run_rows_are_consistent(bench):
    _, data, _ = bench
    runs = data["runs"]
    assert {r["group"] for r in runs} == {"protocols", "seeds", "dtype", "gp_sample"}
    for r in runs:
        assert all(key in r for key in RUN_FIELDS), sorted(set(RUN_FIELDS) - set(r))
        assert r["wall_s"] >= r["exec_s"] > 0 and r["wall_s"] >= r["compile_s"] >= 0
        steps = r["T"] * r["n_seeds"]
        assert r["seed_steps_per_s"] == pytest.approx(steps / r["exec_s"])
        assert r["step_us"] == pytest.approx(1e6 * r["exec_s"] / steps)
        assert r["peak_host_mb"] > 0 and len(r["regret_ratio"]) == r["n_seeds"]
        assert r["rounds"] >= 1 and r["max_batch"] >= 1
        assert r["rounds"] <= r["T"] and r["max_batch"] <= r["T"]
        if r["n_seeds"] == 1 or r["seed_axis"] == "sequential":  # seed 0: t at each round end, time up to it
            t, ex = np.array(r["timeline"]["t"]), np.array(r["timeline"]["exec_s"])
            assert t[-1] == r["T"] and np.all(np.diff(t) > 0) and np.all(np.diff(ex) >= 0)
            assert ex[-1] == pytest.approx(r["exec_s"]) if r["n_seeds"] == 1 else ex[-1] < r["exec_s"]
        else:
            assert "timeline" not in r


def test_seed_axes_give_the_same_trajectories(bench):
    """S seeds in one program (map, vmap) and S sequential runs: same regret, ratios from this run."""
    _, data, _ = bench
    seeds = {r["seed_axis"]: r for r in data["runs"] if r["group"] == "seeds"}
    assert set(seeds) == {"sequential", "map", "vmap"}
    for axis in ("map", "vmap"):
        np.testing.assert_allclose(seeds[axis]["regret_ratio"], seeds["sequential"]["regret_ratio"], rtol=1e-9)
        key = f"bbkb/gp_sample/S=2/{axis}_vs_sequential_exec"
        assert data["ratios"][key] == pytest.approx(seeds[axis]["exec_s"] / seeds["sequential"]["exec_s"])
        assert data["ratios"][f"bbkb/gp_sample/S=2/{axis}_same_regret_as_sequential"] is True


def test_float32_against_float64(bench):
    _, data, _ = bench
    rows = {r["dtype"]: r for r in data["runs"] if r["group"] == "dtype"}
    assert set(rows) == {"float64", "float32"}
    diff = np.subtract(rows["float32"]["regret_ratio"], rows["float64"]["regret_ratio"])
    prefix = "bbkb/gp_sample/S=2/"
    assert data["ratios"][prefix + "regret_ratio_f32_minus_f64_mean"] == pytest.approx(diff.mean())
    assert data["ratios"][prefix + "float32_vs_float64_exec"] == pytest.approx(
        rows["float32"]["exec_s"] / rows["float64"]["exec_s"])
    assert abs(diff.mean()) < 0.2  # same algorithm, same seeds: R_T / R_unif close in both precisions


def test_step_costs_have_full_dictionaries(bench):
    _, data, _ = bench
    costs = data["step_costs"]
    assert [c["m"] for c in costs["vs_m"]] == [8, 16] and [c["A"] for c in costs["vs_A"]] == [150, 300]
    for c in costs["vs_m"] + costs["vs_A"]:
        assert c["dict_size"] == c["m"] and not c["overflow"]
        assert c["step_us"] > 0 and c["resparsify_ms"] > 0 and c["refresh_per_step"] >= 0


def test_plots_are_written(bench, tmp_path):
    path, _, _ = bench
    proc = run_script("plot_bench.py", "--results", path, "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in ("bench_step_cost", "bench_amortised"):
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert (tmp_path / f"{name}.pdf").read_bytes()[:4] == b"%PDF"


def test_bad_input_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    proc = run_script("plot_bench.py", "--results", bad)
    assert proc.returncode == 2 and "unreadable benchmark results" in proc.stderr
    proc = run_script("bench.py", "--quick", "--seeds", "0", "--out", tmp_path / "x.json")
    assert proc.returncode == 2 and "--seeds 0 is invalid" in proc.stderr
    proc = run_script("bench.py", "--quick", "--m-max", "0", "--out", tmp_path / "x.json")
    assert proc.returncode == 2 and "--m-max 0 is invalid" in proc.stderr


def test_initial_capacity_reaches_the_sparse_algorithms_only():
    sys.path.insert(0, str(SCRIPTS))
    try:
        import bench as bench_module
    finally:
        sys.path.remove(str(SCRIPTS))
    assert bench_module.hyperparameters("bbkb", 96)["m_max"] == 96
    assert "m_max" not in bench_module.hyperparameters("bbkb")
    assert "m_max" not in bench_module.hyperparameters("gp_ucb", 96)
    assert bench_module.hyperparameters("gp_ucb", 96)["lam"] == bench_module.PROTOCOL["lam"]


def test_selection_benchmark_rows_and_bad_input(tmp_path):
    """scripts/bench_selection.py: both inverses agree, every timing is a positive number, bad sizes are
    refused with the option's name."""
    out = tmp_path / "sel.json"
    proc = run_script("bench_selection.py", "--n", 130, "--repeats", 1, "--out", out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rep = json.loads(out.read_text())
    (row,) = rep["rows"]
    assert row["n"] == 130 and row["inverse_max_rel_diff"] < 1e-10
    for key in ("cho_solve_inverse_ms", "product_inverse_ms", "cosine_rule_ms", "projection_rule_ms", "pivoted_rule_ms"):
        assert np.isfinite(row[key]) and row[key] > 0
    assert "product_inverse_ms" in proc.stdout and rep["machine"]["device"].startswith("cpu")
    proc = run_script("bench_selection.py", "--n", 50, "--out", tmp_path / "x.json")
    assert proc.returncode == 2 and "--n: every size must exceed M = 102" in proc.stderr
    assert not (tmp_path / "x.json").exists()


@pytest.mark.extended  # ~25 s of compilations; .ci/run runs it after the default suite
def test_growth_benchmark_runs_and_grows_without_changing_the_queries(tmp_path):
    out = tmp_path / "growth.json"
    proc = run_script("bench_growth.py", "--quick", "--out", out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "| exec ratio |" in proc.stdout  # the table
    (row,) = json.loads(out.read_text())["rows"]
    assert row["events"] and row["final"]["m_max"] > row["first"]["m_max"]  # it grew
    assert row["same_queries"] and row["exec_small_s"] > 0 and row["exec_final_s"] > 0


def test_accelerator_table_on_cpu(tmp_path):
    """``--only accelerator`` at tiny scale: one row per seed count and dtype, with loop iterations per step."""
    out = tmp_path / "accel.json"
    proc = run_script("bench.py", "--quick", "--only", "accelerator", "--seeds", "1,2", "--T", 40, "--out", out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads(out.read_text())["runs"]
    assert [(r["n_seeds"], r["dtype"]) for r in rows] == [(1, "float64"), (1, "float32"), (2, "float64"),
                                                         (2, "float32")]
    for r in rows:
        assert r["group"] == "accelerator" and r["algorithm"] == "bbkb" and r["T"] == 40
        assert r["seed_axis"] == "map" and r["gpu_busy"] is None  # CPU: lax.map, no GPU to sample
        assert r["wall_s"] >= r["exec_s"] > 0 and r["wall_s"] >= r["compile_s"] >= 0
        assert 0 <= r["loop_iter_mean"] <= r["loop_iter_max"] and 1 <= r["batches_mean"] <= 40
        sd = np.std(r["regret_ratio"], ddof=1) if r["n_seeds"] > 1 else 0.0
        assert r["regret_ratio_sd"] == pytest.approx(sd)
    assert "accelerator table" in proc.stdout and "n/a" in proc.stdout and "loop it. mean" in proc.stdout
    proc = run_script("bench.py", "--quick", "--only", "accelerator", "--seeds", "1,x", "--out", tmp_path / "x.json")
    assert proc.returncode == 2 and "comma-separated list of integers" in proc.stderr
    proc = run_script("bench.py", "--quick", "--only", "accelerator", "--seeds", "1", "--dtypes", "float32", "--T", 40,
                      "--out", out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [(r["n_seeds"], r["dtype"]) for r in json.loads(out.read_text())["runs"]] == [(1, "float32")]


def load_script(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(Path(name).stem, SCRIPTS / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gp_ucb_time_estimate_sums_the_interpolated_time_per_iteration(monkeypatch):
    """bench_gssbo --gp-ucb-per-iteration: GP-UCB's time to N is Σ_{n=20}^{N-1} of its time per iteration,
    interpolated linearly between the measured n (and from 0 at n = 0)."""
    bg = load_script("bench_gssbo.py")
    measured = {50: 0.5, 100: 2.0}
    monkeypatch.setattr(bg, "time_per_iteration", lambda problem, n: {"n": n, "s_per_iteration": measured[n],
                                                                      "rounds_s": [], "compile_time_s": 1.0})
    row = bg.estimated_reference(type("P", (), {"name": "hartmann6"}), 100, [100, 50])
    by_hand = sum(0.5 * n / 50 if n <= 50 else 0.5 + 1.5 * (n - 50) / 50 for n in range(20, 100))
    assert row["exec_time_s"] == pytest.approx(by_hand) and row["compile_time_s"] == 2.0
    assert row["algorithm"] == "std_gp_ucb (estimated)" and [p["n"] for p in row["per_iteration"]] == [50, 100]
    rows = [{"problem": "hartmann6", "algorithm": "gssbo", "exec_time_s": by_hand / 10, "cumulative_regret": 1.0},
            {**row, "cumulative_regret": float("nan")}]
    bg.add_ratios(rows)
    assert rows[0]["time_vs_gp_ucb"] == pytest.approx(0.1)


def test_gp_ucb_time_estimate_needs_sample_counts_up_to_n():
    proc = run_script("bench_gssbo.py", "--N", "100", "--gp-ucb-per-iteration", "50", "80", "--algorithms")
    assert proc.returncode == 2 and "--gp-ucb-per-iteration=[50, 80]" in proc.stderr and "Traceback" not in proc.stderr


def test_float32_benchmark_records_both_dtypes_on_the_same_seeds(tmp_path):
    """scripts/bench_f32.py (record bench_f32_cadata): every seed's R_T/R_unif in both dtypes, and a summary computed
    from them; a single seed is refused before anything runs."""
    out = tmp_path / "f32.json"
    proc = run_script("bench_f32.py", "--problem", "gp_sample", "--T", 40, "--seeds", 2, "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = json.loads(out.read_text())
    a, b = np.asarray(rec["ratios"]["float64"]), np.asarray(rec["ratios"]["float32"])
    assert a.shape == b.shape == (2,) and np.all(np.isfinite(a)) and np.all(np.isfinite(b))
    m = rec["summary"]
    assert m["mean_float64"] == pytest.approx(a.mean()) and m["gap_relative"] == pytest.approx(b.mean() / a.mean() - 1)
    assert m["paired_diff_mean"] == pytest.approx((b - a).mean())
    bad = run_script("bench_f32.py", "--seeds", 1)
    assert bad.returncode != 0 and "--seeds >= 2" in bad.stderr


def test_profile_summary_counts_device_kernels_and_their_busy_time():
    """scripts/profile_accelerator.py: per-kernel sums and counts over the device's streams only, the busy time as
    the union of overlapping kernels, the XLA modules; on a CPU trace the PjRt threads stand for the device."""
    pa = load_script("profile_accelerator.py")
    meta = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
            {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/device:GPU:0"}}]
    kernels = [(2, 7, 0.0, 10.0, "fusion_a", "jit_chunk_all"), (2, 8, 5.0, 10.0, "fusion_a", "jit_chunk_all"),
               (2, 7, 30.0, 5.0, "gemm", "jit_init_all"), (1, 1, 0.0, 1000.0, "python_call", None)]
    events = meta + [{"ph": "X", "pid": p, "tid": t, "ts": ts, "dur": d, "name": n,
                      "args": {"hlo_module": m} if m else {}} for p, t, ts, d, n, m in kernels]
    s = pa.summarise(events, top=5)
    assert s["devices"] == ["/device:GPU:0"] and s["kernel_events"] == 3
    assert s["kernel_s"] == pytest.approx(25e-6) and s["busy_s"] == pytest.approx(20e-6)  # [0, 15] and [30, 35]
    assert s["span_s"] == pytest.approx(35e-6)
    assert [(r["kernel"], r["count"]) for r in s["top"]] == [("fusion_a", 2), ("gemm", 1)]
    assert s["top"][0]["share"] == pytest.approx(0.8)
    assert {m["module"]: m["count"] for m in s["modules"]} == {"jit_chunk_all": 2, "jit_init_all": 1}
    cpu = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
           {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "python"}},
           {"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "tf_XLAPjRtCpuClient/1"}},
           {"ph": "X", "pid": 1, "tid": 1, "ts": 0.0, "dur": 100.0, "name": "python_call"},
           {"ph": "X", "pid": 1, "tid": 2, "ts": 10.0, "dur": 4.0, "name": "fusion.3"}]
    s = pa.summarise(cpu, top=5)
    assert s["devices"] == ["/host:CPU"] and s["kernel_events"] == 1 and s["busy_s"] == pytest.approx(4e-6)


def test_profile_counts_a_cpu_thunk_by_its_own_time():
    """On a CPU trace a control-flow thunk holds its branch's thunks: each counts its own time only, and the
    executor's scheduling events and the compiler's threads are not kernels."""
    pa = load_script("profile_accelerator.py")
    meta = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}}] + [
        {"ph": "M", "pid": 1, "tid": t, "name": "thread_name", "args": {"name": n}}
        for t, n in ((1, "python"), (2, "tf_XLAEigen/1"), (3, "tf_PjRtCompilerThreadPool/1"))]
    spans = [(2, 0.0, 100.0, "ThunkExecutor::Execute"), (2, 0.0, 50.0, "cond.1"), (2, 10.0, 30.0, "ynn_fusion"),
             (2, 60.0, 20.0, "dot.2"), (3, 0.0, 500.0, "Codegen"), (1, 0.0, 900.0, "python_call")]
    events = meta + [{"ph": "X", "pid": 1, "tid": t, "ts": ts, "dur": d, "name": n} for t, ts, d, n in spans]
    s = pa.summarise(events, top=5)
    assert {r["kernel"]: round(r["s"] * 1e6, 6) for r in s["top"]} == {"cond.1": 20.0, "ynn_fusion": 30.0, "dot.2": 20.0}
    assert s["kernel_events"] == 3 and s["kernel_s"] == pytest.approx(70e-6) and s["busy_s"] == pytest.approx(70e-6)


def test_compile_phases_split_each_programs_xla_time_by_own_time():
    """scripts/bench_compile.py: a program's compilation events (tagged with its module) and the events nested in
    them: the phases' wall times, each pass by its own time, other programs and untagged events apart."""
    bc = load_script("bench_compile.py")

    def x(tid, ts, dur, event, **args):
        return {"ph": "X", "pid": 1, "tid": tid, "ts": ts, "dur": dur, "name": event, "args": args}

    events = [x(1, 0, 100, "HLO passes through layout assignment (jit_a)", module="jit_a"),
              x(1, 10, 30, "simplification (jit_a)", module="jit_a"), x(1, 15, 20, "algsimp"),
              x(1, 120, 100, "CpuCompiler::RunBackend", name="jit_a"), x(1, 130, 70, "Codegen"),
              x(1, 130, 70, "JitCompiler::Compile"), x(1, 300, 10, "unrelated"),
              x(2, 50, 40, "HLO passes after layout assignment (jit_b)", module="jit_b"), x(2, 60, 5, "algsimp")]
    ph = bc.xla_phases(events)
    assert set(ph) == {"jit_a", "jit_b"}
    a = ph["jit_a"]
    assert [a[k] for k in ("total_s", "hlo_passes_s", "backend_s", "codegen_s")] == pytest.approx(
        [200e-6, 100e-6, 100e-6, 70e-6])
    own = {n: (t, c) for n, t, c in a["passes"]}
    assert own["HLO passes through layout assignment"] == (pytest.approx(70e-6, abs=1e-9), 1)
    assert own["simplification"][0] == pytest.approx(10e-6, abs=1e-9) and own["algsimp"][0] == pytest.approx(20e-6)
    assert own["JitCompiler::Compile"][0] == pytest.approx(70e-6) and own["Codegen"][0] == pytest.approx(0.0)
    assert "unrelated" not in own and ph["jit_b"]["total_s"] == pytest.approx(40e-6)
    assert {n: c for n, _, c in ph["jit_b"]["passes"]} == {"HLO passes after layout assignment": 1, "algsimp": 1}
    line = bc.phase_table({"this": {"phases": [ph, ph]}})
    assert "this jit_a: XLA 0.000 s" in line and "JitCompiler::Compile" in line


def test_profile_names_a_kernel_by_its_hlo():
    """A profiled kernel is described by its instruction in the optimized program: shape, opcode and what its fused
    computation computes (or the library routine it calls); a GPU kernel's "_N" suffix stands for ".N"."""
    pa = load_script("profile_accelerator.py")
    text = "\n".join([
        "%fused_computation.2 (p0: f64[20640,8], p1: f64[32,8]) -> f64[20640,32] {",
        "  %dot.1 = f64[20640,32]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}",
        "  ROOT %exp.7 = f64[20640,32]{1,0} exponential(%dot.1)",
        "}",
        "ENTRY %main.9 (a: f64[20640,8]) -> f64[20640,32] {",
        "  %ynn_fusion.2 = f64[20640,32]{1,0} fusion(%a, %b), kind=kCustom, calls=%fused_computation.2",
        '  %eigh.3 = (f64[32,32]{0,1}, f64[32]{0}) custom-call(%c), custom_call_target="lapack_dsyevd_ffi"',
        "}"])
    ins = pa.hlo_instructions(text)
    assert pa.describe("ynn_fusion.2", *ins) == "f64[20640,32]{1,0} fusion [dot, exponential]"
    assert pa.describe("ynn_fusion_2", *ins) == pa.describe("ynn_fusion.2", *ins)
    assert pa.describe("eigh.3", *ins) == "(f64[32,32]{0,1}, f64[32]{0}) custom-call [lapack_dsyevd_ffi]"
    assert pa.describe("fusion.9", *ins) == ""


def test_profile_and_compile_phases_end_to_end_on_cpu(tmp_path):
    """Both scripts on this CPU at tiny scale: the profile finds XLA:CPU's kernels of the chunk program and names
    them by their HLO; the compile breakdown finds XLA's phases of both programs, LLVM's code generation within
    the backend."""
    out = tmp_path / "profile.json"
    proc = run_script("profile_accelerator.py", "--problem", "gp_sample", "--seeds", 1, "--T", 60, "--warm",
                      "--top", 5, "--out", out)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    prof = json.loads(out.read_text())
    assert prof["warm"] and prof["arms"] > 0 and prof["profile"]["kernel_events"] > 0 and prof["compile_s"] == 0.0
    assert any(r["hlo"] for r in prof["profile"]["top"]) and 0 < prof["profile"]["busy_s"] <= prof["wall_s"]
    out = tmp_path / "compile.json"
    proc = run_script("bench_compile.py", "--problem", "gp_sample", "--T", 60, "--repeats", 1, "--out", out)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    phases = json.loads(out.read_text())["results"]["this"]["phases"][0]
    assert set(phases) == {"jit_init_all", "jit_chunk_all"}
    for rec in phases.values():
        assert 0 < rec["codegen_s"] <= rec["backend_s"] <= rec["total_s"] and rec["hlo_passes_s"] > 0
    assert "LLVM code generation" in proc.stdout
