"""GSSBO App. B.5 (Figs. 10-11): cumulative regret R_t against t on Hartmann6 for the neural surrogates.

Standard GP-UCB, GSSBO, deep-kernel UCB (``dkl_ucb``) and BNN-UCB (``bnn_ucb``), whichever were run, mean ± std
over seeds of R_t = sum_{s <= t} (f(x_s) - f_min) (Wei et al. 2025, App. B.5; one panel per problem on
which DKL or BNN-UCB ran, Hartmann6 in the paper). Reads the runs of
``experiments/gssbo_dkl_bnn.yaml`` and, with ``--also``, further result sets (at paper scale Fig. 2's, which hold
GP-UCB's and GSSBO's runs), and writes ``gssbo_dkl_bnn.png`` and ``.pdf``::

    python scripts/plot_gssbo_dkl_bnn.py --results results/quick/gssbo_dkl_bnn --out figures/quick
    python scripts/plot_gssbo_dkl_bnn.py --results results/paper/gssbo_dkl_bnn --also results/paper/gssbo_fig2 \\
        --out figures/paper
"""
from __future__ import annotations

from sketchbo.cli import plots

NAME = "gssbo_dkl_bnn"
HINT = "run `scripts/reproduce.sh quick --only gssbo_dkl_bnn` (or paper) first"
METHODS = ("std_gp_ucb", "gssbo", "dkl_ucb", "bnn_ucb")
NEURAL = ("dkl_ucb", "bnn_ucb")


def main(argv=None):
    return plots.methods_figure(argv, __doc__, NAME, HINT, METHODS, panels_of=NEURAL)


if __name__ == "__main__":
    plots.script_main(main)
