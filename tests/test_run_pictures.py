"""Pictures of one's own runs: every ``sketchbo-run`` result draws ``curves.png`` beside its ``summary.json``
(and a comparison ``comparison.png``), W&B runs carry it, ``plots=false`` draws nothing, ``sketchbo-plot``
overlays a sweep or exits 2 naming a directory without runs, and the default table's closing line is computed
from the committed record."""
from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import tomllib
import zlib

import numpy as np
import pytest

from sketchbo.cli import notes, overlay
from test_cli import REPO, cli_env, mtimes, run_cli, run_multirun

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
RED, GREEN = (0xD6, 0x27, 0x28), (0x2C, 0xA0, 0x2C)  # tab:red (BBKB) and tab:green (GP-UCB) as 8-bit RGB


def png_size(path) -> tuple[int, int]:
    """Width and height of a complete PNG file: the signature, a valid IHDR first and IEND last (CRCs checked)."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert len(data) > 10_000, f"{path} has only {len(data)} bytes"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    assert struct.unpack(">I", data[29:33])[0] == zlib.crc32(data[12:29])
    assert data[-12:] == b"\x00\x00\x00\x00IEND\xaeB`\x82", f"{path} is cut short"
    return struct.unpack(">II", data[16:24])


def pixels_of(path, rgb) -> int:
    """How many pixels of the image are the colour ``rgb`` (within 12 of each channel): a drawn curve's."""
    from matplotlib.image import imread

    image = np.asarray(imread(path))[..., :3] * 255.0
    return int(np.sum(np.all(np.abs(image - np.asarray(rgb)) <= 12, axis=-1)))


def check_picture(path, *colors) -> None:
    width, height = png_size(path)
    assert width >= 800 and height >= 300, (width, height)
    for rgb in colors:  # each algorithm's curve is on it, in its colour
        assert pixels_of(path, rgb) > 300, (path, rgb)


def test_a_run_draws_its_curves_beside_summary_json_and_logs_them_to_wandb(tmp_path):
    no_network = "http://127.0.0.1:9"  # nothing listens there: a connection attempt would fail
    env = cli_env(WANDB_DIR=str(tmp_path / "wandb_dir"), WANDB_BASE_URL=no_network, HTTP_PROXY=no_network,
                  HTTPS_PROXY=no_network, NO_PROXY="", HOME=str(tmp_path / "home"))
    run = tmp_path / "run"
    proc = run_cli(run, "algorithm=bbkb", "problem.A=100", "T=40", "n_seeds=2", "progress=false", "logger=wandb",
                   env=env)
    assert proc.returncode == 0, proc.stderr
    check_picture(run / "curves.png", RED)
    assert f"picture: {run / 'curves.png'}" in proc.stdout
    assert not list(run.glob(".*.tmp"))  # written through a temporary file, renamed into place
    assert (run / "summary.json").stat().st_mtime_ns >= (run / "curves.png").stat().st_mtime_ns  # summary last
    offline = sorted((tmp_path / "wandb_dir" / "wandb").glob("offline-run-*"))
    assert len(offline) == 2  # one W&B run per seed, each with the picture as an image
    for one in offline:
        images = list(one.glob("files/media/images/curves_*.png"))
        assert len(images) == 1, list(one.rglob("*"))
        assert images[0].read_bytes() == (run / "curves.png").read_bytes()


def test_plots_false_draws_nothing_and_a_rerun_with_pictures_draws_them_without_recomputing(tmp_path):
    args = ("algorithm.members=[bbkb,gp_ucb]", "problem.A=100", "T=40", "n_seeds=1", "progress=false")
    proc = run_cli(tmp_path, *args, "plots=false")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "bbkb" / "summary.json").exists() and (tmp_path / "comparison.json").exists()
    assert not list(tmp_path.rglob("*.png")) and "picture" not in proc.stdout
    results = [tmp_path / m / f for m in ("bbkb", "gp_ucb") for f in ("summary.json", "traces.npz")]
    before = mtimes(*results)
    proc = run_cli(tmp_path, *args)  # plots=true, the default, does not change the result: reused
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("skipping: complete results") == 2 and mtimes(*results) == before
    check_picture(tmp_path / "bbkb" / "curves.png", RED)
    check_picture(tmp_path / "gp_ucb" / "curves.png", GREEN)
    check_picture(tmp_path / "comparison.png", RED, GREEN)  # both members on the same panels
    assert f"picture: {tmp_path / 'comparison.png'}" in proc.stdout


def test_sketchbo_plot_overlays_a_sweep_and_exits_2_on_a_directory_without_runs(tmp_path):
    sweep = tmp_path / "sweep"
    proc = run_multirun(sweep, "progress=false")
    assert proc.returncode == 0, proc.stderr
    jobs = sorted(p.parent for p in sweep.glob("*/summary.json"))
    assert len(jobs) == 2
    for job in jobs:
        check_picture(job / "curves.png", RED)
    out = tmp_path / "figs" / "sweep.png"
    cmd = [sys.executable, "-m", "sketchbo.cli.overlay", str(sweep), "-o", str(out)]
    proc = subprocess.run(cmd, cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    png_size(out)
    assert [p.name for p in tmp_path.rglob("*.png") if p.parent.parent != sweep] == ["sweep.png"]  # one image
    assert "swept keys: algorithm.qbar" in proc.stdout and proc.stdout.strip().endswith(f"wrote {out}")
    for qbar, job in zip((1, 2), jobs):
        assert re.search(rf"BBKB qbar={qbar} +20 +1 seed \(0\).*{re.escape(str(job))}", proc.stdout), proc.stdout

    empty = tmp_path / "empty"
    empty.mkdir()
    cmd = [sys.executable, "-m", "sketchbo.cli.overlay", str(empty)]
    proc = subprocess.run(cmd, cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"sketchbo-plot: error: no runs under {empty}: expected directories holding "
                                   "summary.json and traces.npz, as sketchbo-run writes them")
    assert not list(empty.iterdir())


def test_sketchbo_plot_names_a_missing_directory_and_has_help(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        overlay.main([str(tmp_path / "nope")])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip() == f"sketchbo-plot: error: {tmp_path / 'nope'} does not exist"
    with pytest.raises(SystemExit) as exit_:
        overlay.main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: sketchbo-plot") and "DIR" in text and "--out" in text and "median" in text
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["sketchbo-plot"] == "sketchbo.cli.overlay:main"


def test_the_closing_line_is_computed_from_the_committed_record(tmp_path):
    """BBKB's speed-up over BKB is the ratio of the record's times, whatever they are; this run's numbers come
    from its summaries; a table without BBKB and BKB or GP-UCB has no such line."""
    record = json.loads(notes.BBKB_RECORD.read_text())
    cadata = {r["algorithm"]: r for r in record if r["problem"] == "cadata"}
    speedup = cadata["bkb"]["exec_s_per_seed"] / cadata["bbkb"]["exec_s_per_seed"]
    summaries = [{"algorithm": name, "problem": "gp_sample", "T": 500, "regret_ratio": [ratio], "n_batches": [n],
                  "max_dict_size": [m]} for name, ratio, n, m in
                 (("bbkb", 0.222, 112.5, 104), ("bkb", 0.199, 500, 98), ("gp_ucb", 0.151, 500, 96))]
    lines = notes.bbkb_note(summaries)
    assert f"it ran {speedup:.1f}x faster than BKB" in lines[0] and "experiments/bbkb_fig1_results.json" in lines[0]
    g = cadata["gp_ucb"]
    assert (f"to the same T, at R_T/R_unif {g['ratio_mean']:.3f}" if g["T"] == cadata["bbkb"]["T"]
            else f"for only T = {g['T']}") in lines[0]
    assert "is too small to show it" in lines[1] and "112.5 batches" in lines[1]
    assert "0.151 for exact GP-UCB" in lines[1] and "dictionary of 104" in lines[1]
    changed = tmp_path / "record.json"
    record = [dict(r, exec_s_per_seed=r["exec_s_per_seed"] * 2) if r["problem"] == "cadata" and r["algorithm"] == "bkb"
              else r for r in record]
    changed.write_text(json.dumps(record))
    assert f"it ran {2 * speedup:.1f}x faster" in notes.bbkb_note(summaries, record=changed)[0]
    assert notes.bbkb_note(summaries[1:]) == [] and notes.bbkb_note(summaries[:1]) == []
