#!/usr/bin/env bash
# Reproduce the papers' figures: every experiment of experiments/*.yaml job by job, then every plot script.
#   scripts/reproduce.sh [quick|paper] [--only FIGURE ...] [--results DIR] [--figures DIR] [--experiments DIR]
#                        [--seeds N|ALGO=N ...] [--sweeps] [--plots-only] [--dry-run] [key=value ...]
# quick (default) finishes in minutes on a laptop CPU; paper is the papers' scale (T = 10^4, 10 seeds).
# Figures: figures/<scale>/<figure>.png and .pdf; results: results/<scale>/<result set>/.
# A re-run resumes: complete jobs are skipped, a killed job continues from its checkpoint; a progress line
# with an ETA precedes each job. See scripts/reproduce.py and docs/reproducing.md.
set -euo pipefail
exec python "$(dirname "$0")/reproduce.py" "$@"
