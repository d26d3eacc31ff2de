"""sketchbo: scalable Gaussian-process bandits and Bayesian optimisation in JAX.

BKB (Calandriello et al., COLT 2019), Batch-BKB (Calandriello et al., ICML 2020), exact GP-UCB and
GP-BUCB as pure, jit-compiled state transitions vmapped across seeds. float64 is enabled by the entry
points (CLI, tests), not on import.
"""
__version__ = "0.1.0"
