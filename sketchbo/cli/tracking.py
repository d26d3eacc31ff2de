"""Result files of a run (docs/architecture.md#experiment-system), their completeness check, W&B logging and the comparison table.

Every run directory gets

* ``config.yaml``: the resolved config (YAML text from the CLI);
* ``summary.json``: per-seed end-of-run metrics (cumulative regret at T on the noiseless f, the
  ratio R_T / R_T^unif, batches, batch and dictionary sizes), timings, device, dtype, the CPU cores
  the process could use (``cpu_cores``), the resolved config and the runner's capacity events;
* ``traces.npz``: per-seed, per-step arrays ``query``, ``reward``, ``instant_regret``,
  ``batch_index``, ``dict_size`` of shape (n_seeds, T), and ``round_time_s`` (one entry per round);
  continuous-domain runs add ``x`` (n_seeds, T, d), the queried points;
* ``curves.png`` (when the config's ``plots`` is true, as ``sketchbo-run``'s is by default): the picture of the
  result's regret, batch-size and dictionary-size curves over its seeds (``pictures.write_run_figure``).

Files are written atomically (temporary file in the same directory, fsync, ``os.replace``), so a
reader never sees a half-written result, and ``traces.npz`` before ``summary.json``: a run directory
whose ``summary.json`` and ``traces.npz`` load and whose stored config equals the current one holds a
complete result (``load_complete``), which a re-run skips. Plot scripts read these files only.

W&B (``log_wandb``): one W&B run per seed with the per-round metrics of its traces and the picture
``curves.png`` as an image, logged after ``traces.npz`` and ``curves.png`` and before ``summary.json``. This
module is the only one that imports wandb, and only inside ``log_wandb``, so runs without the W&B logger never
import it.
"""
from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path

import numpy as np

from sketchbo.approximation import summary_line as approximation_line
from sketchbo.engine.files import (  # noqa: F401  (re-exported: the result files use the core's atomic writes)
    atomic_savez, atomic_write, atomic_write_json, atomic_write_text, differences, plain, remove_temporaries, to_jsonable,
    without_keys,
)
from sketchbo.engine.run import usable_cores

TRACE_KEYS = ("query", "reward", "instant_regret", "batch_index", "dict_size")
# Config keys that do not change a result: a stored result whose config differs only here is complete.
RUNTIME_KEYS = ("progress", "logger", "problem.data_dir", "problem.download", "compile_cache", "devices",
                "checkpoint_every", "plots")
PER_SEED_KEYS = ("cumulative_regret", "regret_ratio", "n_batches", "max_batch_size", "max_dict_size")
CURVES_FILE = "curves.png"  # a result's picture beside its summary.json (pictures.write_run_figure)


def summary_of(result, config: dict, approximation: list | None = None) -> dict:
    """The ``summary.json`` content of a runner ``RunResult`` and the run's resolved config; ``approximation``: the
    sketch-accuracy certificates of its seeds (``sketchbo.approximation.of_run``), stored under that key."""
    summary = {
        "algorithm": result.algorithm,
        "problem": result.problem,
        "T": int(result.T),
        "n_seeds": int(result.n_seeds),
        "seeds": [int(s) for s in result.seeds],
    }
    for key in PER_SEED_KEYS:
        summary[key] = to_jsonable(np.asarray(getattr(result, key)))
    summary.update(
        wall_time_s=float(result.wall_time_s),
        compile_time_s=float(result.compile_time_s),
        device=str(result.device),
        dtype=str(result.dtype),
        capacity_events=[str(e) for e in result.capacity_events],
        hyperparameters=to_jsonable(result.hyperparameters),
        config=to_jsonable(config),
    )
    for key in ("seed_axis", "n_devices", "elements_per_device"):  # what the round times cover (plots.time_scale)
        if getattr(result, key, None) is not None:
            summary[key] = to_jsonable(getattr(result, key))
    # A CPU run's rounding can depend on the cores it may use, not only on its devices: bit-for-bit repeats
    # need the same count (docs/reliability.md#determinism).
    summary["cpu_cores"] = usable_cores()
    if getattr(result, "certificates", None) is not None:  # finite-arm runs: the papers' bounds on this run
        summary["certificates"] = to_jsonable(result.certificates)
        for key in ("d_eff", "dict_bound", "batch_bound"):
            if all(key in c for c in result.certificates):
                summary[key] = [c[key] for c in result.certificates]
    if approximation is not None:
        summary["approximation"] = to_jsonable(approximation)
    if "on_face" in result.traces:  # boxes: per seed, the fraction of the model's queries (after n0) on a face
        summary["on_face"] = on_face_rates(result)
    return summary


def on_face_rates(result) -> list[float] | None:
    """Per seed, the fraction of a box run's model-chosen queries (after the n₀ initial points) that lie on a
    face of the box (``traces["on_face"]``); None when the run has no such query (T ≤ n₀)."""
    n0 = int(result.hyperparameters.get("n0", 0))
    faces = np.asarray(result.traces["on_face"], dtype=np.float64)[:, n0:]
    return [float(v) for v in faces.mean(axis=1)] if faces.shape[1] else None


def trace_arrays(result) -> dict:
    """The ``traces.npz`` arrays of a runner ``RunResult``."""
    arrays = {key: np.asarray(value) for key, value in result.traces.items()}  # TRACE_KEYS and any extras
    arrays["round_time_s"] = np.asarray(result.round_time_s, dtype=np.float64)
    return arrays


def write_results(run_dir, result, config: dict, uniform_gap: float | None = None,
                  config_text: str | None = None, approximation: list | None = None) -> dict:
    """Write the result files of ``result`` into ``run_dir``, ``summary.json`` last; return the summary.

    Order: a ``summary.json`` and a ``curves.png`` already there are removed (so that they always belong
    to the files beside them), then ``config.yaml`` (``config_text``, the resolved config as YAML, when
    given), ``traces.npz``, ``curves.png`` when ``config["plots"]`` is true (`write_curves`), the W&B
    runs when ``config["logger"]["name"]`` is ``wandb`` (see ``log_wandb``; ``uniform_gap`` = f* - mean f
    gives the per-round regret ratio), and ``summary.json``. A result with a ``summary.json`` is therefore
    complete, logged included. Temporary files that an earlier, killed write left in ``run_dir`` are
    deleted first. ``approximation``: per-seed sketch-accuracy certificates for ``summary.json`` (`summary_of`).
    """
    run_dir = Path(run_dir)
    arrays = trace_arrays(result)
    summary = summary_of(result, config, approximation)
    remove_temporaries(run_dir)  # of an earlier write killed half-way
    (run_dir / "summary.json").unlink(missing_ok=True)
    (run_dir / CURVES_FILE).unlink(missing_ok=True)
    if config_text is not None:
        atomic_write_text(run_dir / "config.yaml", config_text)
    atomic_savez(run_dir / "traces.npz", **arrays)
    picture = write_curves(run_dir, summary, arrays) if config.get("plots") else None
    logger = config.get("logger") or {}
    if logger.get("name") == "wandb":
        log_wandb(summary, arrays, logger, run_dir, uniform_gap, picture=picture)
    atomic_write_json(run_dir / "summary.json", summary)
    return summary


def write_curves(run_dir, summary: dict, traces: dict) -> Path | None:
    """Draw ``<run_dir>/curves.png`` from a result's summary and traces (``pictures.write_run_figure``, written
    atomically) and return its path. A picture that cannot be drawn is a warning on stderr and None, not an
    error: the result files stand without it, and ``sketchbo-plot`` can draw them later."""
    from sketchbo.cli import pictures  # lazy: matplotlib is imported only by runs that draw

    path = Path(run_dir) / CURVES_FILE
    try:
        return pictures.write_run_figure(path, summary, traces)
    except Exception as err:  # noqa: BLE001 (matplotlib's errors have no common base; the result must not be lost)
        print(f"warning: {path} not drawn ({type(err).__name__}: {err})", file=sys.stderr)
        return None


# ------------------------------------------------------------------------------------- completeness

def _lookup(config: dict, dotted: str):
    """``(True, value)`` of a dotted key of ``config``, ``(False, None)`` when it is absent."""
    node = config
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


def load_complete(run_dir, config: dict, ignore=(), added=None) -> tuple[dict | None, str]:
    """``(summary, "")`` when ``run_dir`` holds the complete result of ``config``, else ``(None, why)``.

    Complete: ``summary.json`` and ``traces.npz`` are present and load, the traces have every array with
    the summary's shape, and the summary's stored config equals ``config`` apart from the dotted keys
    in ``ignore`` (settings that do not change results, such as the progress display or the logger).
    ``added`` maps dotted keys introduced after results were stored to the value that reproduces those
    results: a stored config without such a key equals a config holding that value there.
    ``why`` is empty when there is no ``summary.json`` at all (nothing was finished there).
    """
    run_dir = Path(run_dir)
    summary_path, traces_path = run_dir / "summary.json", run_dir / "traces.npz"
    if not summary_path.exists():
        return None, ""
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        stored = summary["config"]
        shape = (int(summary["n_seeds"]), int(summary["T"]))
    except (OSError, ValueError, KeyError, TypeError) as err:  # truncated or foreign file
        return None, f"unreadable summary.json ({type(err).__name__}: {err})"
    config = plain(config)
    older = [key for key, value in (added or {}).items()
             if not _lookup(stored, key)[0] and _lookup(config, key) == (True, value)]
    diff = differences(without_keys(stored, ignore), without_keys(config, [*ignore, *older]))
    if diff:
        shown = ", ".join(diff[:5]) + (", ..." if len(diff) > 5 else "")
        return None, f"results of a different config (differs in {shown})"
    try:
        with np.load(traces_path) as traces:
            for key in TRACE_KEYS:
                if traces[key].shape != shape:
                    return None, f"traces.npz has {key} of shape {traces[key].shape}, not {shape}"
            if traces["round_time_s"].ndim != 1:
                return None, "traces.npz has no per-round times"
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as err:  # missing, truncated, foreign
        return None, f"unreadable traces.npz ({type(err).__name__}: {err})"
    return summary, ""


# ---------------------------------------------------------------------------------------------- W&B

def round_metrics(traces: dict, seed_index: int, uniform_gap: float | None = None) -> list[dict]:
    """Per-round metrics of one seed from its traces, one dict per round (index = round).

    ``t`` (pulls done), ``cumulative_regret`` R_t at the end of the round, ``regret_ratio`` R_t / (t·gap)
    with gap = f* - mean f (``uniform_gap``; NaN when unknown or 0), ``batch_size``, ``dict_size`` (the
    dictionary of the round's last selection) and ``round_time_s`` (the wall time of that round, for
    all seeds together).
    """
    batch = np.asarray(traces["batch_index"][seed_index]).astype(np.int64)
    regret = np.cumsum(np.asarray(traces["instant_regret"][seed_index], dtype=np.float64))
    dict_size = np.asarray(traces["dict_size"][seed_index])
    times = np.asarray(traces["round_time_s"], dtype=np.float64)
    n_rounds = int(batch.max()) + 1 if batch.size else 0
    sizes = np.bincount(batch, minlength=n_rounds)
    ends = np.maximum(np.searchsorted(batch, np.arange(n_rounds), side="right") - 1, 0)
    gap = float(uniform_gap) if uniform_gap is not None else float("nan")
    rows = []
    for r in range(n_rounds):
        t = int(ends[r]) + 1
        unif = t * gap
        rows.append({
            "round": r,
            "t": t,
            "cumulative_regret": float(regret[ends[r]]),
            "regret_ratio": float(regret[ends[r]] / unif) if unif > 0 else float("nan"),
            "batch_size": int(sizes[r]),
            "dict_size": int(dict_size[ends[r]]),
            "round_time_s": float(times[r]) if r < times.size else float("nan"),
        })
    return rows


class LoggingError(RuntimeError):
    """W&B could not start or record a run (e.g. online mode without an account)."""


WANDB_MODES = ("offline", "online", "disabled")


def check_online_credentials() -> None:
    """LoggingError, before anything runs, when ``logger.mode=online`` would fail for want of credentials: no
    API key in $WANDB_API_KEY, W&B's settings file or ~/.netrc (looked up locally, without the network)."""
    os.environ.setdefault("WANDB_SILENT", "true")
    import wandb  # lazy: only runs that log to W&B import it

    if not wandb.login(prompt=False, verify=False):
        raise LoggingError("logger.mode=online needs W&B credentials and none are configured: run `wandb login` "
                           "or set WANDB_API_KEY; or log offline (logger.mode=offline, the default) and upload "
                           "later with `wandb sync`")


def log_wandb(summary: dict, traces: dict, logger: dict, run_dir, uniform_gap: float | None = None,
              picture=None) -> list[str]:
    """Log every seed of a result as its own W&B run; return the runs' local directories.

    ``logger`` is the resolved ``sketchbo/cli/configs/logger/wandb.yaml``: ``mode`` (offline | online | disabled),
    ``project``, ``entity``, ``group``, ``dir`` (null = ``$WANDB_DIR`` if set, else ``run_dir``) and
    ``tags``. Run name ``<algorithm>-seed<seed>``; config = the resolved config with ``seed`` set to the
    run's seed; history = ``round_metrics`` with the round as step, and with the last round the image
    ``picture`` (the result's ``curves.png``, all its seeds) as ``curves`` when given; summary = the seed's
    end-of-run numbers. Offline mode writes ``<dir>/wandb/offline-run-*`` and never uses the network;
    ``disabled`` logs nothing and does not import wandb.
    """
    mode = str(logger.get("mode") or "offline")
    if mode not in WANDB_MODES:
        raise ValueError(f"logger.mode={mode!r} is invalid; choose from {list(WANDB_MODES)}")
    if mode == "disabled":
        return []
    os.environ.setdefault("WANDB_SILENT", "true")
    import wandb  # lazy: only runs that log to W&B import it

    root = logger.get("dir") or os.environ.get("WANDB_DIR") or run_dir
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    config = summary.get("config") or {}
    notes = (config.get("experiment") or {}).get("description")
    settings = wandb.Settings(silent=True, quiet=True, console="off", x_disable_stats=True, save_code=False)
    dirs = []
    for i, seed in enumerate(summary["seeds"]):
        try:
            run = wandb.init(
                project=logger.get("project") or "sketchbo", entity=logger.get("entity"),
                group=logger.get("group"), name=f"{summary['algorithm']}-seed{seed}",
                job_type=str(summary["algorithm"]), tags=[str(t) for t in logger.get("tags") or []],
                notes=notes, config={**config, "seed": int(seed), "seed_index": i}, dir=str(root),
                mode=mode, reinit="create_new", settings=settings)
            with run:
                rows = round_metrics(traces, i, uniform_gap)
                for k, row in enumerate(rows):
                    if picture is not None and k == len(rows) - 1:
                        row = {**row, "curves": wandb.Image(str(picture), caption=curves_caption(summary))}
                    run.log(row, step=row["round"])
                run.summary.update({key: summary[key][i] for key in PER_SEED_KEYS})
                run.summary.update({key: summary[key] for key in ("problem", "T", "wall_time_s", "compile_time_s")})
                dirs.append(str(Path(run.dir).parent))
        except Exception as err:  # wandb's own errors have no common public base class
            raise LoggingError(f"W&B logging failed (logger.mode={mode}): {type(err).__name__}: {err}") from err
    return dirs


def curves_caption(summary: dict) -> str:
    """The W&B caption of a result's picture: what it shows, of which run."""
    return (f"{summary['algorithm']} on {summary['problem']}, T = {summary['T']}, {summary['n_seeds']} seeds: "
            "cumulative regret, batch size and dictionary size against t (median over seeds, band: lowest to "
            "highest seed)")


def table_row(summary: dict) -> dict:
    """The numbers shown for one run in the comparison table (means and std over seeds)."""
    regret = np.asarray(summary["cumulative_regret"], dtype=np.float64)
    ratio = np.asarray(summary["regret_ratio"], dtype=np.float64)
    return {
        "algorithm": summary.get("label", summary["algorithm"]),  # a grid run labels each point
        "regret_mean": float(regret.mean()),
        "regret_std": float(regret.std()),
        "ratio_mean": float(ratio.mean()),
        "ratio_std": float(ratio.std()),
        "wall_time_s": float(summary["wall_time_s"]),
        "compile_time_s": float(summary["compile_time_s"]),
        "n_batches_mean": float(np.mean(summary["n_batches"])),
        "max_dict_size": int(np.max(summary["max_dict_size"])),
    }


TABLE_HEADER = ("algorithm", "regret R_T mean ± std", "R_T/R_unif", "wall time s (compile s)",
                "batches", "max dict size")


def _cells(row: dict) -> tuple[str, ...]:
    return (
        row["algorithm"],
        f"{row['regret_mean']:.2f} ± {row['regret_std']:.2f}",
        f"{row['ratio_mean']:.3f} ± {row['ratio_std']:.3f}",
        f"{row['wall_time_s']:.2f} ({row['compile_time_s']:.2f})",
        f"{row['n_batches_mean']:g}",
        str(row["max_dict_size"]),
    )


def format_table(summaries: list[dict]) -> str:
    """A plain-text table, one row per summary: regret, regret ratio, time, batches, dictionary.

    Regret and ratio are mean ± std over seeds (population std); batches is the mean number of
    batches per seed; max dict size is the largest dictionary of any seed.
    """
    rows = [TABLE_HEADER] + [_cells(table_row(s)) for s in summaries]
    widths = [max(len(r[i]) for r in rows) for i in range(len(TABLE_HEADER))]
    lines = [" | ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    notes = (line for s in summaries for line in (certificate_line(s), approximation_line(s)))
    return "\n".join([*lines, TABLE_FOOTER, *filter(None, notes)])


def certificate_line(summary: dict) -> str | None:
    """One footer line of a finite-arm run's theory certificates (``sketchbo.certificates``), None without them:
    d_eff, the largest dictionary and the batch count beside their bounds (worst seed), the theorem's note."""
    certs = summary.get("certificates")
    if not certs:
        return None
    name = summary.get("label", summary["algorithm"])
    parts = [f"d_eff {np.mean([c['d_eff'] for c in certs]):.1f}",
             f"sum sigma^2 {np.mean([c['sum_variance'] for c in certs]):.1f}"]
    if all("dict_bound" in c for c in certs):
        ok = all(c["max_dict_size"] <= c["dict_bound"] for c in certs)
        parts.append(f"dictionary {max(c['max_dict_size'] for c in certs)} vs bound "
                     f"{min(c['dict_bound'] for c in certs):.4g} ({'within' if ok else 'EXCEEDED'})")
    if all("batch_bound" in c for c in certs):
        ok = all(c["n_batches"] <= c["batch_bound"] for c in certs)
        parts.append(f"batches {max(c['n_batches'] for c in certs)} vs bound "
                     f"{min(c['batch_bound'] for c in certs):.4g} ({'within' if ok else 'EXCEEDED'})")
    notes = sorted({c["note"] for c in certs if c.get("note")})
    return f"{name}: " + "; ".join(parts) + "".join(f" [{n}]" for n in notes)


TABLE_FOOTER = ("R_T/R_unif: cumulative regret over that of uniformly random choices (1 = no better than random, "
                "lower is better); mean ± std over seeds. batches: mean number of batches per seed (hence "
                "fractional); max dict size: largest dictionary (model rows) of any seed.")
