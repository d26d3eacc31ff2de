"""The experiment system, on top of the core (docs/architecture.md#experiment-system): nothing outside this
subpackage imports it (``tests/test_layers.py``).

| module | what it holds |
|---|---|
| ``app.py`` | ``sketchbo-run`` / ``python -m sketchbo``: the Hydra app (the only module that imports Hydra) |
| ``notes.py`` | what ``sketchbo-run`` prints after its table: where BBKB wins, where the results and pictures are |
| ``configs/`` | the app's Hydra configs, shipped inside the package (an installed wheel has a working CLI) |
| ``jobs.py`` | one job: configs checked, problem built, run, result files written; completeness, resuming (no Hydra) |
| ``tracking.py`` | result files (``config.yaml``, ``traces.npz``, ``curves.png``, ``summary.json``), W&B (its only importer) |
| ``results.py`` | result directories read back (seed slices joined) and kept as regret records |
| ``plots.py`` | figures from result files only (never the W&B API): per-step curves, the plot scripts' helpers |
| ``pictures.py`` | pictures of one's runs: a result's ``curves.png``, results on the same panels (``comparison.png``) |
| ``overlay.py`` | ``sketchbo-plot``: the runs found under directories drawn on the same panels, in one image |
"""
