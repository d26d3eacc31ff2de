"""The one engine (docs/architecture.md#the-engine): every run of every algorithm, on either domain, goes through it.

| module | what it holds |
|---|---|
| ``run.py`` | ``run`` and ``run_grid``: validation of a whole run, then its domain's program driven by the host loop |
| ``domain.py`` | ``RunSpec`` and ``Prepared``: what the engine hands a domain and what the domain hands back |
| ``validate.py`` | checks of run arguments, hyperparameter dicts, devices, checkpoint arguments |
| ``program.py`` | seed keys, the seed axis (vmap / map), elements, a chunk of rounds, device sharding, the compiled-program cache, capacity growth by padding |
| ``rounds.py`` | the two halves of a round (``select_batch``, ``finish_batch``), shared by runs and ask/tell |
| ``host.py`` | the host loop: chunks, progress, per-round times, checkpoints, capacity growth that continues |
| ``asktell.py`` | ask/tell sessions on both domains: the two halves of a round, one at a time |
| ``checkpoint.py`` | run identity, atomic checkpoint files, resuming |
| ``files.py`` | atomic file writes and plain JSON values (the core's only file writing) |
| ``progress.py`` | the progress bar / log lines |
| ``result.py`` | ``RunResult``, the result of every run |

A domain (``sketchbo.domains``) gives the engine its round and its capacities: ``finite`` (a query is an arm
index, feedback ``f[q] + xi * noise``, capacities ``m_max``/``u_max``) and ``box`` (a query is a point evaluated
by the problem's JAX function, capacity ``cap`` of the sample buffer).
"""
