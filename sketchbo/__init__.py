"""sketchbo: scalable Gaussian-process bandits and Bayesian optimisation in JAX.

BKB (Calandriello et al., COLT 2019), Batch-BKB (Calandriello et al., ICML 2020), exact GP-UCB and
GP-BUCB as pure, jit-compiled state transitions vmapped across seeds. float64 is enabled by the entry
points (CLI, tests), not on import.
"""
import os

# LAPACK calls here are small (m x m); OpenBLAS threads that spin after each call compete with XLA's own
# threads on small CPUs and measured 2x slower resparsifications on 2 cores. Respect a user's setting.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
