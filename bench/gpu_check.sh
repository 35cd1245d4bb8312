#!/usr/bin/env bash
# Issue 41's GPU checks in one run on a lent device machine (Python 3.12 with torch, no network):
# the hand-off's tests on CUDA, then bench_trainer (HalfCheetah-v5 512 envs, native cartpole 16384).
#
#   here, once:  bash bench/gpu_check.sh --fetch-wheels   (cp312 wheels of what the image lacks, into .whl/)
#   there:       bash bench/gpu_check.sh                   (carry .whl; results under $OUT, else /tmp/gpu_check)
#
# The image has torch, numpy, pybind11, scikit-build-core, cmake, ninja and pytest; gymnasium and MuJoCo
# travel as wheels. shoal is built there, into the same folder as the wheels.
set -uo pipefail
cd "$(dirname "$0")/.."

WHEELS=(gymnasium==1.4.0 farama-notifications==0.0.6 mujoco==4.0.1 mujoco-core==4.0.1 glfw==2.11.0 pyopengl==3.1.10)

if [[ ${1:-} == --fetch-wheels ]]; then
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >>.git/info/exclude
    platforms=()
    for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64; do
        platforms+=(--platform "$p")
    done
    exec python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        "${platforms[@]}" -d .whl "${WHEELS[@]}"
fi

out=${OUT:-/tmp/gpu_check}
site=/tmp/shoal_site
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl ||
    exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target "$site" . >"$out/build.log" 2>&1 || {
    tail -40 "$out/build.log"
    exit 1
}
export PYTHONPATH=$site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
# The CUDA cases of the hand-off's tests (the CPU ones too: the same file, seconds).
timeout 240 python3 -m pytest -q -p no:cacheprovider -o addopts= tests/test_handoff.py 2>&1 | tee "$out/tests.log" |
    tail -15
timeout 420 python3 bench/bench_trainer.py --envs halfcheetah,cartpole --repeats 3 --seconds 0.6 2>&1 |
    tee "$out/trainer.md"
