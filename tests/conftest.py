"""Test configuration: float64 everywhere (DESIGN §4), set here and not on import."""
import os
import tempfile

# XLA:CPU's multi-threaded Eigen pool can wedge while materialising large vmapped programs (seen with jaxlib
# 0.10.2 here: the S-BPE / coverage trials hung with every worker idle; the same symptom and this flag as its
# remedy: PyAutoLabs/PyAutoFit issues 1528, 1530). Tests and their subprocesses run with it off.
if "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()

import sketchbo  # noqa: F401  (first: sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS, for subprocesses too)

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
# CLI subprocesses of the tests share one persistent compilation cache, private to this test session.
os.environ.setdefault("SKETCHBO_COMPILE_CACHE", tempfile.mkdtemp(prefix="sketchbo-jax-cache-"))
