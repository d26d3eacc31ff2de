"""The one round engine (DESIGN §3, §3a): every run of every algorithm goes through it.

| module | what it holds |
|---|---|
| ``validate.py`` | checks of run arguments, hyperparameter dicts, devices, checkpoint arguments |
| ``program.py`` | seed keys, the seed axis (vmap / map), a chunk of rounds, the compiled-program cache, capacity growth by padding |
| ``host.py`` | the host loop: chunks, progress, per-round times, checkpoints, capacity growth that continues |
| ``checkpoint.py`` | run identity, atomic checkpoint files, resuming |
| ``progress.py`` | the progress bar / log lines |
| ``result.py`` | ``RunResult``, the result of every run, and the regret summary both domains share |

A domain gives the engine its round and its capacities: ``sketchbo.runner`` (finite arm sets: a query is an
arm index, feedback ``f[q] + xi * noise``, capacities ``m_max``/``u_max``) and ``sketchbo.continuous``
(boxes: a query is a point evaluated by the problem's JAX function, capacity ``cap`` of the sample buffer).
The ask/tell API (``sketchbo.api``) runs the two halves of the finite round (``runner.select_batch`` and
``runner.finish_batch``) one at a time and grows capacities with the same padding.
"""
