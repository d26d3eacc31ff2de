"""The experiment system, on top of the core (docs/architecture.md#experiment-system): nothing outside this
subpackage imports it (``tests/test_layers.py``).

| module | what it holds |
|---|---|
| ``app.py`` | ``sketchbo-run`` / ``python -m sketchbo``: the Hydra app (the only module that imports Hydra) |
| ``configs/`` | the app's Hydra configs, shipped inside the package (an installed wheel has a working CLI) |
| ``jobs.py`` | one job: build the problem, run, write its result files; completeness and resuming (Hydra-free) |
| ``tracking.py`` | result files (``config.yaml``, ``traces.npz``, ``summary.json``) and W&B (the only module that imports wandb) |
| ``results.py`` | result directories read back (seed slices joined) and kept as regret records |
| ``plots.py`` | the figures, from result files only (never the W&B API) |
"""
