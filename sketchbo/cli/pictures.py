"""Pictures of one's own runs (docs/guide.md#plotting-your-runs): a result's ``curves.png`` and results drawn on
the same panels (a comparison's ``comparison.png``, ``sketchbo-plot``'s image).

`write_run_figure` draws a result's ``curves.png`` (cumulative regret, batch size and dictionary size against t;
the median over seeds as a line, the lowest to the highest seed as a band), which every ``sketchbo-run`` job
writes beside its ``summary.json`` (``plots=false`` turns it off); `write_overlay` draws several results on the
same panels, one curve per result, named by the config keys that differ between them (`overlay_curves`). The
command ``sketchbo-plot`` ([`sketchbo.cli.overlay`][sketchbo.cli.overlay]) draws with it the runs it finds.

Like the figures of the plot scripts ([`sketchbo.cli.plots`][sketchbo.cli.plots], whose per-step curves these
pictures draw), they read only what runs wrote, never the W&B API. Figures are made on matplotlib's Agg canvas
without pyplot (no display needed) and written atomically.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sketchbo.cli import tracking
from sketchbo.cli.plots import (
    ORDER, batch_size, color, cumulative_regret, dict_size, result_label, seeds_note, steps, thin,
)
from sketchbo.cli.results import Result, ResultsError, SLICE_FREE_KEYS, consecutive, problems_of, seed_span

RUN_POINTS = 600  # points drawn per curve of a run picture (evenly spaced steps)
RUN_DPI = 110
PANEL_SIZE = (3.4, 2.4)  # inches per panel of a run picture
# margins and gaps of a run picture, in inches: beside the panels, per line of title and of legend, between panels
LAYOUT = {"left": 0.75, "right": 0.15, "top": 0.3, "title_line": 0.22, "bottom": 0.48,
          "legend_line": 0.3, "wspace": 0.8, "hspace": 0.8}
PANEL_LABELS = {"regret": "cumulative regret $R_t$", "batch": "size of the pull's batch",
                "dict": "dictionary size (model rows)"}
BAND_NOTE = "line: median over seeds; band: lowest to highest seed"
FORMATS = ("png", "pdf", "svg")
# config keys that never tell runs apart in a picture: their seeds (a band), the name of their result set and
# the keys that do not change a result (jobs.RUNTIME_KEYS); ``grid`` is null in every stored result
SAME_KEYS = (*SLICE_FREE_KEYS, "grid")


@dataclass
class Curve:
    """One result drawn as one curve per panel: its legend name and line style (colour None: the next one).

    Attributes:
        result: the result whose seeds the curve shows.
        name: the curve's name in the legend (``BBKB qbar=2``).
        color: a matplotlib colour; None takes the next one of the axes' cycle.
        linestyle: a matplotlib line style (``-``, ``--``, ``:``, ``-.``).
    """

    result: Result
    name: str
    color: str | None = None
    linestyle: str = "-"


def agg_figure(width: float, height: float):
    """A matplotlib Figure on the Agg canvas, made without pyplot: no display, no figure left open in pyplot's
    registry, and a user's own pyplot backend is left as it is."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def median_band(ax, x, curves, name: str | None = None, color=None, linestyle: str = "-"):
    """The median over seeds of ``curves`` (n_seeds, len(x)) as a line, and the range from the lowest to the
    highest seed at each step as a shaded band (none for one seed). Returns the line."""
    idx = thin(len(x), RUN_POINTS)
    x = np.asarray(x)[idx]
    curves = np.asarray(curves, dtype=np.float64)[:, idx]
    (handle,) = ax.plot(x, np.median(curves, axis=0), color=color, linestyle=linestyle, lw=1.5, label=name)
    if curves.shape[0] > 1:
        ax.fill_between(x, curves.min(axis=0), curves.max(axis=0), color=handle.get_color(), alpha=0.2, lw=0)
    return handle


def largest_batch(result: Result) -> int:
    """The largest batch of any seed (``max_batch_size`` of ``summary.json``, else from the traces)."""
    sizes = result.summary.get("max_batch_size")
    return int(np.max(sizes)) if sizes else int(np.max(batch_size(result)))


def curves_figure(rows, title: str, legend: bool = True):
    """Rows of panels, one row per ``(name, [Curve, ...])`` of ``rows``: the cumulative regret R_t, the size of
    the batch each step belongs to (left out when every batch of every result holds one pull) and the
    dictionary size (the model's rows) against t, each curve as `median_band`. ``title`` goes above the
    panels; with ``legend`` one legend of every curve's name goes below them. The margins are fixed in inches
    (`LAYOUT`) rather than computed by a layout engine, which would draw the figure once more."""
    results = [c.result for _, curves in rows for c in curves]
    panels = ("regret", "batch", "dict") if any(largest_batch(r) > 1 for r in results) else ("regret", "dict")
    names = list(dict.fromkeys(c.name for _, curves in rows for c in curves))
    columns = min(3, len(names)) or 1
    legend_rows = math.ceil(len(names) / columns) if legend else 0
    n_rows, n_panels = len(rows), len(panels)
    (pw, ph), box = PANEL_SIZE, LAYOUT
    left = box["left"]
    top = box["title_line"] * (title.count("\n") + 1) + box["top"]
    bottom = box["bottom"] + box["legend_line"] * legend_rows
    width = left + n_panels * pw + (n_panels - 1) * box["wspace"] + box["right"]
    height = top + n_rows * ph + (n_rows - 1) * box["hspace"] + bottom
    fig = agg_figure(width, height)
    axes = fig.subplots(n_rows, n_panels, squeeze=False, gridspec_kw={
        "left": left / width, "right": 1 - box["right"] / width, "top": 1 - top / height,
        "bottom": bottom / height, "wspace": box["wspace"] / pw, "hspace": box["hspace"] / ph})
    handles = {}
    for row, (row_name, curves) in zip(axes, rows):
        for curve in curves:
            res, t = curve.result, steps(curve.result)
            line = median_band(row[0], t, cumulative_regret(res), curve.name, curve.color, curve.linestyle)
            handles.setdefault(curve.name, line)
            for ax, panel in zip(row[1:], panels[1:]):
                values = batch_size(res) if panel == "batch" else dict_size(res)
                median_band(ax, t, values, None, line.get_color(), curve.linestyle)
        T = max(c.result.T for c in curves)
        row[0].set_title(f"{row_name} (T = {T}, {seeds_note([c.result for c in curves])})", loc="left", fontsize=10)
        for ax, panel in zip(row, panels):
            ax.set_xlabel("t", labelpad=1, fontsize=10)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=9)
            ax.set_ylabel(PANEL_LABELS[panel], fontsize=10)
            if panel == "batch" and max(largest_batch(c.result) for c in curves) >= 20:
                from matplotlib.ticker import FuncFormatter

                ax.set_yscale("log")
                ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # 1, 10, 100: not 10^k
    fig.suptitle(title, y=1 - 0.08 / height, va="top", fontsize=11)
    if legend:
        fig.legend(list(handles.values()), list(handles), loc="lower center", ncols=columns, frameon=False,
                   fontsize=10, bbox_to_anchor=(0.5, 0.02 / height))
    return fig


def seeds_text(seeds) -> str:
    """'1 seed (0)', '10 seeds (0-9)'; seeds that are not consecutive by their count only."""
    n = len(seeds)
    span = seed_span(seeds)
    return f"{n} seed{'s' if n != 1 else ''}" + (f" ({span})" if consecutive(seeds) else "")


def run_figure(result: Result):
    """The picture of one result: `curves_figure` of its curves, titled with the algorithm, the problem, T,
    the seeds and the median R_T/R_unif."""
    ratio = np.asarray(result.summary.get("regret_ratio") or [np.nan], dtype=np.float64)
    title = (f"{result_label(result)} on {result.problem}: T = {result.T}, "
             f"{seeds_text(result.summary.get('seeds') or [])}, R_T/R_unif {np.median(ratio):.3g} (median)\n"
             f"{BAND_NOTE}")
    return curves_figure([(result.problem, [Curve(result, result_label(result), color(result.algorithm))])], title,
                         legend=False)


def save_image(fig, path, dpi: int = RUN_DPI) -> Path:
    """Write ``fig`` to ``path`` atomically (temporary file + rename) in the format of its suffix (png, pdf,
    svg); return the path."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise ResultsError(f"cannot write {path}: give a file ending in {', '.join('.' + f for f in FORMATS)}")
    tracking.atomic_write(path, lambda fh: fig.savefig(fh, format=fmt, dpi=dpi))
    return path


def write_run_figure(path, summary: dict, traces: dict) -> Path:
    """Draw the result of ``summary`` (the content of ``summary.json``) and ``traces`` (the arrays of
    ``traces.npz``) with `run_figure` and write it to ``path`` (a run's ``curves.png``), atomically."""
    path = Path(path)
    return save_image(run_figure(Result(path.parent, summary, traces)), path)


# ------------------------------------------------------------------------------------------ overlays

def flat_config(config: dict, prefix: str = "") -> dict[str, str]:
    """``config`` as dotted keys (``algorithm.qbar``) mapped to their values as JSON text."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            out.update(flat_config(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = json.dumps(value, sort_keys=True, default=str)
    return out


def settings(result: Result) -> dict[str, str]:
    """The dotted config keys of a result that can tell it from another run (`SAME_KEYS` left out), with its
    algorithm and problem as ``algorithm.name`` and ``problem.name``."""
    config = result.summary.get("config")
    flat = flat_config(config if isinstance(config, dict) else {})
    flat = {k: v for k, v in flat.items() if not any(k == s or k.startswith(s + ".") for s in SAME_KEYS)}
    flat["algorithm.name"], flat["problem.name"] = json.dumps(result.algorithm), json.dumps(result.problem)
    return flat


def varying(flats) -> list[str]:
    """The keys of `settings` dicts whose values differ between them (a key some lack counts), sorted."""
    keys = sorted(set().union(*flats)) if flats else []
    return [k for k in keys if len({f.get(k) for f in flats}) > 1]


def swept_keys(results) -> list[str]:
    """What tells ``results`` apart: ``algorithm.name`` and ``problem.name`` when they differ, and the config
    keys that differ between the results of one algorithm on one problem (not those in which two algorithms'
    configs differ, such as a key only one of them has), sorted."""
    groups: dict[tuple, list] = {}
    for res in results:
        groups.setdefault((res.problem, res.algorithm), []).append(settings(res))
    keys = {k for flats in groups.values() for k in varying(flats)}
    if len({r.algorithm for r in results}) > 1:
        keys.add("algorithm.name")
    if len({r.problem for r in results}) > 1:
        keys.add("problem.name")
    return sorted(keys)


def key_name(key: str) -> str:
    """A swept key as pictures and labels name it: ``algorithm`` for algorithm.name, ``qbar`` for
    algorithm.qbar, others in full (``problem.A``, ``T``)."""
    return {"algorithm.name": "algorithm", "problem.name": "problem"}.get(key, key.removeprefix("algorithm."))


def shown_value(text: str) -> str:
    """A config value of `flat_config` as a label shows it: 2 for 2.0, code for "code"."""
    value = json.loads(text)
    if isinstance(value, float):
        return f"{value:g}"
    return value if isinstance(value, str) else json.dumps(value)


def overlay_curves(results) -> list[tuple[str, list[Curve]]]:
    """The rows of an overlay (`curves_figure`): one per problem (`problems_of`), one curve per result, named
    by its algorithm and the config keys that differ between the results of that algorithm on that problem
    (``BBKB qbar=2``); the same name twice gets the result's directory. Algorithms keep their colours when
    every name is an algorithm's alone; otherwise each name has its own colour, then line style."""
    rows = []
    for problem in problems_of(results):
        mine = [r for r in results if r.problem == problem]
        flats = [settings(r) for r in mine]
        named = []
        for res, flat in zip(mine, flats):
            keys = varying([f for r, f in zip(mine, flats) if r.algorithm == res.algorithm])
            parts = [f"{key_name(k)}={shown_value(flat[k]) if k in flat else '-'}" for k in keys]
            order = ORDER.index(res.algorithm) if res.algorithm in ORDER else len(ORDER)
            named.append(((order, res.algorithm, [sort_key(flat.get(k)) for k in keys]),
                          " ".join([result_label(res), *parts]), res))
        named.sort(key=lambda item: item[0])
        counts = {}
        for _, name, _ in named:
            counts[name] = counts.get(name, 0) + 1
        rows.append((problem, [Curve(res, f"{name} [{res.path.name}]" if counts[name] > 1 else name)
                               for _, name, res in named]))
    names = [c.name for _, curves in rows for c in curves]
    plain = all(c.name == result_label(c.result) for _, curves in rows for c in curves)
    colors = {name: i for i, name in enumerate(dict.fromkeys(names))}
    for _, curves in rows:
        for curve in curves:
            if plain and color(curve.result.algorithm):
                curve.color = color(curve.result.algorithm)
            else:
                i = colors[curve.name]
                curve.color, curve.linestyle = f"C{i % 10}", ("-", "--", ":", "-.")[(i // 10) % 4]
    return rows


def sort_key(text: str | None):
    """Config values in their natural order: numbers by value before text, absent last."""
    if text is None:
        return (2, 0.0, "")
    value = json.loads(text)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def write_overlay(path, results, title: str) -> Path:
    """Draw ``results`` on the same panels (`overlay_curves`, `curves_figure`) under ``title`` and write the
    image to ``path`` atomically; return the path."""
    return save_image(curves_figure(overlay_curves(results), title), path)


__all__ = ["BAND_NOTE", "Curve", "agg_figure", "median_band", "curves_figure", "seeds_text", "run_figure",
           "write_run_figure", "overlay_curves", "write_overlay", "swept_keys"]
