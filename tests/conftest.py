"""Test configuration: float64 everywhere (DESIGN §4), set here and not on import."""
import os
import tempfile

import sketchbo  # noqa: F401  (first: sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS, for subprocesses too)

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
# CLI subprocesses of the tests share one persistent compilation cache, private to this test session.
os.environ.setdefault("SKETCHBO_COMPILE_CACHE", tempfile.mkdtemp(prefix="sketchbo-jax-cache-"))
