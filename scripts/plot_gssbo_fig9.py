"""GSSBO App. Fig. 9: cumulative regret R_t against t of GSSBO and the random-embedding methods REMBO and HeSBO.

GSSBO, REMBO (``rembo``, Wang et al. 2016) and HeSBO (``hesbo``, Nayebi et al. 2019) on the high-dimensional
problems (Levy20, Powell50, Rastrigin100 in the paper), mean ± std over seeds of R_t = sum_{s <= t} (f(x_s) -
f_min) (Wei et al. 2025, App. B, Fig. 9). One panel per problem on which REMBO or HeSBO ran. Reads the runs of
``experiments/gssbo_fig9.yaml`` and, with ``--also``, further result sets (at paper scale Fig. 2's, which hold
GSSBO's runs), and writes ``gssbo_fig9.png`` and ``.pdf``::

    python scripts/plot_gssbo_fig9.py --results results/quick/gssbo_fig9 --out figures/quick
    python scripts/plot_gssbo_fig9.py --results results/paper/gssbo_fig9 --also results/paper/gssbo_fig2 \\
        --out figures/paper
"""
from __future__ import annotations

from sketchbo.cli import plots

NAME = "gssbo_fig9"
HINT = "run `scripts/reproduce.sh quick --only gssbo_fig9` (or paper) first"
METHODS = ("gssbo", "rembo", "hesbo")
EMBEDDINGS = ("rembo", "hesbo")


def main(argv=None):
    return plots.methods_figure(argv, __doc__, NAME, HINT, METHODS, panels_of=EMBEDDINGS)


if __name__ == "__main__":
    plots.script_main(main)
