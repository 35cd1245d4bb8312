#!/usr/bin/env bash
# Issue 41's GPU checks in one run on a lent device machine (Python 3.12 with torch, no network):
# the hand-off's tests on CUDA, then bench_trainer (HalfCheetah-v5 512 envs, native cartpole 16384) with
# two diagnostic rows of (d). About 7 minutes; the baseline (--fetch-wheels REV) adds about 2.
#
#   here, once:  bash bench/gpu_check.sh --fetch-wheels [REV]   (cp312 wheels of what the image lacks,
#                into .whl/; with REV, also that commit's sources as the baseline to compare with)
#   there:       bash bench/gpu_check.sh                         (carry .whl; results under $OUT)
#
# With a baseline, cartpole's loop is measured again with the baseline's shoal (same bench script, same
# machine, right after): an A/B of the hand-off where the policy, not the envs, is the limit.
# The image has torch, numpy, pybind11, scikit-build-core, cmake, ninja and pytest; gymnasium and MuJoCo
# travel as wheels. shoal is built there, into the folder the wheels go to.
set -uo pipefail
cd "$(dirname "$0")/.."

WHEELS=(gymnasium==1.4.0 farama-notifications==0.0.6 mujoco==4.0.1 mujoco-core==4.0.1 glfw==2.11.0 pyopengl==3.1.10)

if [[ ${1:-} == --fetch-wheels ]]; then
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >>.git/info/exclude
    platforms=()
    for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64; do
        platforms+=(--platform "$p")
    done
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        "${platforms[@]}" -d .whl "${WHEELS[@]}" || exit 1
    rm -f .whl/baseline.tar.gz
    if [[ -n ${2:-} ]]; then
        git archive --format=tar.gz -o .whl/baseline.tar.gz "$2" || exit 1
        git rev-parse "$2" >.whl/baseline.rev
    fi
    exit 0
fi

out=${OUT:-/tmp/gpu_check}
wheels=/tmp/shoal_wheels
mkdir -p "$out"
export PYTHONUNBUFFERED=1

# build SOURCE_DIR SITE: shoal from its sources into SITE, beside the carried wheels
build() {
    python3 -m pip install -q --no-index --no-deps --no-build-isolation --target "$2" "$1" >"$out/build.log" 2>&1 || {
        tail -40 "$out/build.log"
        return 1
    }
}

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$wheels" .whl/*.whl ||
    exit 1
build . /tmp/shoal_site || exit 1
export PYTHONPATH=/tmp/shoal_site:$wheels
# check_import SITE: fails unless `import shoal` finds the build in SITE (not another install)
check_import() {
    local found
    found=$(PYTHONPATH=$1:$wheels python3 -c "import shoal; print(shoal.__file__)") || return 1
    [[ $found == "$1"/* ]] || {
        echo "gpu_check: import shoal finds $found, not the build in $1"
        return 1
    }
}
check_import /tmp/shoal_site || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
# The hand-off's tests, CUDA cases included (seconds): copies through the CUDA driver, then through torch.
timeout 240 python3 -m pytest -q -p no:cacheprovider -o addopts= tests/test_handoff.py 2>&1 | tee "$out/tests.log" |
    tail -15
SHOAL_CUDA_COPIES=torch timeout 120 python3 -m pytest -q -p no:cacheprovider -o addopts= tests/test_handoff.py \
    -k cuda 2>&1 | tee "$out/tests_torch_copies.log" | tail -5
# (d) again with the copies through torch (an A/B of the two paths, interleaved in the same run) and over
# the N envs of (a) in two buffers of N/2.
timeout 420 python3 bench/bench_trainer.py --envs halfcheetah,cartpole --repeats 3 --seconds 0.6 \
    --d-torch-copies --d-halves 2>&1 | tee "$out/trainer.md"

if [[ -f .whl/baseline.tar.gz ]]; then
    base=/tmp/shoal_baseline
    mkdir -p "$base/src" && tar -xzf .whl/baseline.tar.gz -C "$base/src" || exit 1
    build "$base/src" "$base/site" && check_import "$base/site" || exit 1
    echo "## Baseline $(cat .whl/baseline.rev 2>/dev/null): cartpole with its shoal" | tee "$out/baseline.md"
    PYTHONPATH=$base/site:$wheels timeout 200 python3 bench/bench_trainer.py --envs cartpole --repeats 3 \
        --seconds 0.6 2>&1 | tee -a "$out/baseline.md"
fi
