"""The engine's domains (docs/architecture.md#domains): what differs between a finite candidate set and a box.

Each module gives the engine (``sketchbo.engine.run``) the same functions: ``check_space(algorithm, problem)``,
``resolve(algorithm, params, T, problem)``, ``prepare(RunSpec) -> Prepared`` and its ``GRID_KEYS``.
"""
from sketchbo.domains import box, finite

DOMAINS = {"arms": finite, "box": box}  # AlgorithmSpec.domain -> the domain's module

__all__ = ["DOMAINS", "box", "finite"]
