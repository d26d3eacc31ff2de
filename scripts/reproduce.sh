#!/usr/bin/env bash
# Reproduce the papers' figures: every experiment of experiments/*.yaml, then every plot script.
#   scripts/reproduce.sh [quick|paper] [--only FIGURE ...] [--results DIR] [--figures DIR]
#                        [--plots-only] [--dry-run] [key=value ...]
# quick (default) finishes in minutes on a laptop CPU; paper is the papers' scale (T = 10^4, 10 seeds).
# Figures: figures/<scale>/<figure>.png and .pdf; results: results/<scale>/<result set>/.
# A re-run resumes: complete results are skipped. See scripts/reproduce.py and README.
set -euo pipefail
exec python "$(dirname "$0")/reproduce.py" "$@"
