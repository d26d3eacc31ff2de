"""Result files of a run (DESIGN §5): ``summary.json``, ``traces.npz`` and the comparison table.

Every run directory gets

* ``summary.json``: per-seed end-of-run metrics (cumulative regret at T on the noiseless f, the
  ratio R_T / R_T^unif, batches, batch and dictionary sizes), timings, device, dtype, the
  resolved config and the runner's capacity events;
* ``traces.npz``: per-seed, per-step arrays ``query``, ``reward``, ``instant_regret``,
  ``batch_index``, ``dict_size`` of shape (n_seeds, T), and ``round_time_s`` (one entry per round).

Files are written atomically (temporary file in the same directory, fsync, ``os.replace``), so a
reader never sees a half-written result. Plot scripts read these files only. This module is the
only one allowed to import wandb; nothing here needs it yet.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

TRACE_KEYS = ("query", "reward", "instant_regret", "batch_index", "dict_size")
PER_SEED_KEYS = ("cumulative_regret", "regret_ratio", "n_batches", "max_batch_size", "max_dict_size")


def to_jsonable(value):
    """``value`` with numpy arrays and scalars turned into lists and Python numbers."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic_write(path: Path, write) -> Path:
    """Call ``write(file)`` on a temporary file beside ``path``, fsync it, then rename it to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file ordinary permissions
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return path


def atomic_write_json(path, obj) -> Path:
    """Write ``obj`` (numpy values allowed) as indented JSON to ``path`` atomically."""
    text = json.dumps(to_jsonable(obj), indent=2, allow_nan=True) + "\n"
    return _atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))


def atomic_savez(path, **arrays) -> Path:
    """``np.savez(path, **arrays)`` atomically (``path`` is used as given, no ``.npz`` appended)."""
    return _atomic_write(path, lambda fh: np.savez(fh, **arrays))


def summary_of(result, config: dict) -> dict:
    """The ``summary.json`` content of a runner ``RunResult`` and the run's resolved config."""
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
    return summary


def write_results(run_dir, result, config: dict) -> dict:
    """Write ``summary.json`` and ``traces.npz`` of ``result`` into ``run_dir``; return the summary."""
    run_dir = Path(run_dir)
    arrays = {key: np.asarray(result.traces[key]) for key in TRACE_KEYS}
    arrays["round_time_s"] = np.asarray(result.round_time_s, dtype=np.float64)
    atomic_savez(run_dir / "traces.npz", **arrays)
    summary = summary_of(result, config)
    atomic_write_json(run_dir / "summary.json", summary)
    return summary


def table_row(summary: dict) -> dict:
    """The numbers shown for one run in the comparison table (means and std over seeds)."""
    regret = np.asarray(summary["cumulative_regret"], dtype=np.float64)
    ratio = np.asarray(summary["regret_ratio"], dtype=np.float64)
    return {
        "algorithm": summary["algorithm"],
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
    return "\n".join(lines)
