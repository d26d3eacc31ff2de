"""sketchbo: scalable Gaussian-process bandits and Bayesian optimisation in JAX.

BKB (Calandriello et al., COLT 2019), Batch-BKB (Calandriello et al., ICML 2020), exact GP-UCB and GP-BUCB,
S-BPE (Vakili et al., ICML 2022) on finite candidate sets, and GSSBO (Wei et al. 2025) with its baselines on
boxes: pure, jit-compiled state transitions that run many seeds and hyperparameter points in one program.

The public face:

```python
import sketchbo as sb
res = sb.run("bbkb", sb.make_problem("gp_sample"), T=500, n_seeds=4)      # a benchmark, many seeds
opt = sb.Optimizer(sb.Box([0, 0], [1, 1]), "gssbo", horizon=60)          # ask/tell for any black box
sb.run(my_spec, problem, T=500)            # your own algorithm: an AlgorithmSpec (sketchbo.spec), no registry
```

float64 is enabled by the entry points (``run``, ``run_grid``, ``Optimizer``, the CLI), not on import. On a
CPU, ``sb.use_cpu_cores()`` before anything else touches JAX runs the seeds of a run on all cores (the CLI
does it).
"""
import os

# LAPACK calls here are small (m x m); OpenBLAS threads that spin after each call compete with XLA's own
# threads on small CPUs and measured 2x slower resparsifications on 2 cores. Respect a user's setting.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from sketchbo import domains  # noqa: E402, F401  (registers the engine's two domains)
from sketchbo import testing  # noqa: E402  (sb.testing.check_algorithm: the conformance check of any spec)
from sketchbo.algorithms import REGISTRY as ALGORITHMS  # noqa: E402  (every algorithm of both domains)
from sketchbo.algorithms import register  # noqa: E402
from sketchbo.contract import Algorithm, Feedback  # noqa: E402
from sketchbo.spec import AlgorithmSpec, StaticConfig  # noqa: E402
from sketchbo.api import Best, Optimizer  # noqa: E402
from sketchbo.engine.result import RunResult  # noqa: E402
from sketchbo.engine.run import run, run_grid, use_cpu_cores  # noqa: E402
from sketchbo.problems import PROBLEMS, Problem, make_problem  # noqa: E402
from sketchbo.problems.continuous import ContinuousProblem, box_problem  # noqa: E402
from sketchbo.spaces import Box  # noqa: E402

__version__ = "0.1.0"

__all__ = ["Algorithm", "ALGORITHMS", "AlgorithmSpec", "Best", "Box", "box_problem", "ContinuousProblem", "Feedback",
           "make_problem", "Optimizer", "Problem", "PROBLEMS", "register", "run", "run_grid", "RunResult",
           "StaticConfig", "testing", "use_cpu_cores", "__version__"]
