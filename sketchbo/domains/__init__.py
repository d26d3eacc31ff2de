"""The engine's domains (docs/architecture.md#domains): what differs between a finite candidate set and a box.

Each module registers an ``engine.domain.Domain`` with the engine (``check_space``, ``check_options``,
``setup``), so that the engine never imports a domain: ``finite`` (a query is an arm index, feedback
``f[q] + xi * noise``, its round program in ``finite_program``) and ``box`` (a query is a point evaluated by
the problem's JAX objective, its round program in ``box_program``).
"""
from sketchbo.domains import box, finite
from sketchbo.engine.domain import DOMAINS

__all__ = ["DOMAINS", "box", "finite"]
