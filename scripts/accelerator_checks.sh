#!/bin/bash
# The accelerator checks of issue 63 in one bounded run, for a machine lent for minutes: the accelerator table
# cold (BBKB on Cadata, T = 10^4, 1/10/100/1000 seeds vmapped, float64 and float32, compilation cache empty), a
# second process on the warm cache, a kernel profile of 1000 seeds (scripts/profile_accelerator.py), where one
# seed's compilation goes (scripts/bench_compile.py), the conformance suite on the device, and 10^4 seeds in
# float32 with the time left. Each step has a time budget and is skipped when too little time is left, so the
# whole ends within DEADLINE seconds (default 575) and every finished step's file is there.
#
#   SKETCHBO_DATA_DIR=/path/to/data bash scripts/accelerator_checks.sh OUT_DIR
#
# OUT_DIR receives session.log (every step's output), accel.json, warm.json, profile.json, compile.json,
# s10000.json and the profile's trace.json.gz when under 15 MB. Smaller sizes for a try on a CPU:
# A_SEEDS=1,2 W_SEEDS=1 P_SEEDS=2 P_T=200 BIG=3 XT="--T 200" bash scripts/accelerator_checks.sh /tmp/out
set -u
OUT=${1:?usage: bash scripts/accelerator_checks.sh OUT_DIR}
mkdir -p "$OUT"
if ! ls "${SKETCHBO_DATA_DIR:-/nonexistent}"/cal_housing.data >/dev/null 2>&1; then
  echo "SKETCHBO_DATA_DIR=${SKETCHBO_DATA_DIR:-} holds no cal_housing.data (Cadata; docs/problems.md#data-files)" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
DEADLINE=${DEADLINE:-575}
PY=${PY:-python3}
A_SEEDS=${A_SEEDS:-1,10,100,1000}; W_SEEDS=${W_SEEDS:-1,10}; P_SEEDS=${P_SEEDS:-1000}; P_T=${P_T:-2000}
BIG=${BIG:-10000}; XT=${XT:-}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export SKETCHBO_COMPILE_CACHE=${SKETCHBO_COMPILE_CACHE:-$(mktemp -d)}  # empty: the first step runs cold
START=$(date +%s)
LOG=$OUT/session.log
el() { echo $(( $(date +%s) - START )); }
step() {  # step NAME BUDGET MIN command...: runs it with at most BUDGET seconds, skipped under MIN seconds left
  local name=$1 budget=$2 min=$3; shift 3
  local left=$(( DEADLINE - $(el) )); local t=$(( budget < left ? budget : left ))
  if [ $t -lt "$min" ]; then echo "=== SKIP $name: $left s left, needs $min" | tee -a "$LOG"; return; fi
  echo "=== $name (at most $t s) starts at $(el) s: $*" | tee -a "$LOG"
  timeout -k 5 $t "$@" >> "$LOG" 2>&1
  echo "=== $name rc $? at $(el) s" | tee -a "$LOG"
}
step info 30 5 bash -c "nvidia-smi; $PY -c 'import jax, jaxlib; print(jax.__version__, jaxlib.__version__, jax.devices())'; git log -1 --format=%H; git status --short"
step accel_cold 260 120 $PY scripts/bench.py --only accelerator --problems cadata --seeds $A_SEEDS $XT --out "$OUT/accel.json"
step accel_warm 60 30 $PY scripts/bench.py --only accelerator --problems cadata --seeds $W_SEEDS $XT --out "$OUT/warm.json"
TRACE=$(mktemp -d)/trace.json.gz
step profile 110 60 $PY scripts/profile_accelerator.py --seeds $P_SEEDS --T $P_T --out "$OUT/profile.json" --trace-out "$TRACE"
if [ -f "$TRACE" ] && [ "$(stat -c %s "$TRACE")" -lt 15000000 ]; then cp "$TRACE" "$OUT/trace.json.gz"; fi
step compile 90 50 $PY scripts/bench_compile.py --T 500 --seeds 1 --repeats 1 --out "$OUT/compile.json"
step conformance 150 60 env XLA_PYTHON_CLIENT_PREALLOCATE=false $PY -m pytest -q -n 6 --dist load -p no:cacheprovider \
  tests/test_conformance.py tests/test_loops.py tests/test_reference_traces.py
step seeds10000 400 150 $PY scripts/bench.py --only accelerator --problems cadata --seeds $BIG --dtypes float32 $XT \
  --out "$OUT/s10000.json"
echo "=== done at $(el) s" | tee -a "$LOG"
