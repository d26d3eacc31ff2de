"""GSSBO App. B.5 (Figs. 10-11): cumulative regret R_t against t on Hartmann6 for the neural surrogates.

Standard GP-UCB, GSSBO, deep-kernel UCB (``dkl_ucb``) and BNN-UCB (``bnn_ucb``), whichever were run, mean ± std
over seeds of R_t = sum_{s <= t} (f(x_s) - f_min) (Wei et al. 2025, App. B.5; one panel per problem found,
Hartmann6 in the paper). Reads the runs of ``experiments/gssbo_dkl_bnn.yaml`` and writes ``gssbo_dkl_bnn.png``
and ``.pdf``::

    python scripts/plot_gssbo_dkl_bnn.py --results results/quick/gssbo_dkl_bnn --out figures/quick
"""
from __future__ import annotations

from sketchbo import plots

NAME = "gssbo_dkl_bnn"
HINT = "run `scripts/reproduce.sh quick --only gssbo_dkl_bnn` (or paper) first"
METHODS = ("std_gp_ucb", "gssbo", "dkl_ucb", "bnn_ucb")


def main(argv=None):
    return plots.methods_figure(argv, __doc__, NAME, HINT, METHODS)


if __name__ == "__main__":
    plots.script_main(main)
