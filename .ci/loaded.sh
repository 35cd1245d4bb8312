#!/usr/bin/env bash
# The fast tier on a loaded machine (issue 45): users and CI run the tests while other work keeps a
# core busy. A busy loop pinned to one core runs beside FIRST (a command, e.g. the README's test
# command, if given), then beside the fast tier, which must pass RUNS times in a row (default 5).
#     bash .ci/loaded.sh [RUNS] [FIRST]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
first=${2:-}
if command -v taskset >/dev/null; then
    taskset -c 0 python -c 'while True: pass' &
else
    python -c 'while True: pass' &
fi
load=$!
trap 'kill "$load"' EXIT
if [ -n "$first" ]; then
    echo "ci: under load: $first"
    bash -c "$first"
fi
# One xdist worker more than CPUs: the tests that wait (worker start-ups, deadlines) overlap, and the
# machine is busier still than with one worker per CPU.
workers=$(( $(python -c 'import os; print(os.cpu_count() or 1)') + 1 ))
for run in $(seq "$runs"); do
    echo "ci: fast tier under load, run $run of $runs ($workers workers)"
    pytest -n "$workers" -p no:cacheprovider
done
