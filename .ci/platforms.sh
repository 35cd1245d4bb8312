#!/usr/bin/env bash
# Proxy CI for the platforms this Linux x86-64 machine is not (README "Platforms"). Steps:
#   portable  the Python native/pipelining/interrupt tests and the C++ parity and pool tests on a
#             build with the portable waiting layer forced (SHOAL_PORTABLE_WAIT=ON)
#   libcxx    clang + libc++ (the macOS toolchain's flavour): every C++ test in cpp/tests
#   clang     Ocean envs and MuJoCo tasks built at run time with CC=clang (macOS's compiler), checked
#             against the envs driven directly and against Gymnasium, and 100 libraries loaded in one process
#   windows   the C++ pool/vec/interrupt/pipeline tests cross-compiled with MinGW-w64, under Wine,
#             on the Windows waiting layer (WaitOnAddress)
#   aarch64   the same tests cross-compiled for Linux aarch64, under qemu-aarch64, on the futex layer
#   pythons   the native and vector-API tests on every other CPython 3.10-3.14 that pyenv has here
# Each step fails if any of its tests fails, and checks that the build ran the waiting layer it is
# meant to prove. Usage: bash .ci/platforms.sh [step ...] (default: all), after .ci/run made .venv.
# The cross and emulated runs use the same iteration counts as the native run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

CROSS_TESTS=(pool_stress vec_parity interrupt_test pipeline_test)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/shoal-ci
mkdir -p "$CACHE"

log() { printf 'platforms: %s\n' "$*"; }

# Debian's toolchains, installed when missing (apt keeps the downloaded .debs in its cache, so a
# rerun on the same machine downloads nothing).
ensure_packages() {
    local missing=()
    command -v clang++ >/dev/null || missing+=(clang)
    [ -e /usr/lib/llvm-14/include/c++/v1 ] || [ -n "$(ls /usr/lib/llvm-*/include/c++/v1 2>/dev/null)" ] ||
        missing+=(libc++-dev libc++abi-dev)
    command -v x86_64-w64-mingw32-g++-posix >/dev/null || missing+=(g++-mingw-w64-x86-64)
    [ -x /usr/lib/wine/wine64 ] || command -v wine64 >/dev/null || missing+=(wine64)
    command -v aarch64-linux-gnu-g++ >/dev/null || missing+=(g++-aarch64-linux-gnu)
    command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
    [ ${#missing[@]} -eq 0 ] && return
    if [ "$(id -u)" -ne 0 ]; then
        log "missing Debian packages ${missing[*]} and not root to install them"
        return 1
    fi
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# configure_tests BUILD_DIR [cmake args...]: a Release build of the C++ tests.
configure_tests() {
    local dir=$1
    shift
    cmake -S "$ROOT" -B "$dir" -DSHOAL_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release "$@" >"$dir.configure.log" 2>&1 ||
        { cat "$dir.configure.log"; return 1; }
}

# run_tests BUILD_DIR LAYER RUNNER... -- TEST...: runs each test (through RUNNER, if any) and checks
# that pool_stress reports the waiting layer LAYER.
run_tests() {
    local dir=$1 layer=$2
    shift 2
    local runner=()
    while [ "$1" != "--" ]; do runner+=("$1"); shift; done
    shift
    local test exe
    for test in "$@"; do
        exe=$dir/cpp/tests/$test
        [ -e "$exe.exe" ] && exe=$exe.exe
        if ! timeout 900 "${runner[@]}" "$exe" >"$WORK/$test.log" 2>&1; then
            cat "$WORK/$test.log"
            log "$test FAILED"
            return 1
        fi
        tail -n 1 "$WORK/$test.log"
        if [ "$test" = pool_stress ] && ! grep -q "(wait layer: $layer)" "$WORK/$test.log"; then
            log "pool_stress did not run on the $layer waiting layer"
            return 1
        fi
    done
}

build() { cmake --build "$1" -j2 --target "${@:2}" >"$1.build.log" 2>&1 || { tail -n 50 "$1.build.log"; return 1; }; }

step_portable() {
    local venv=$WORK/portable-venv
    python3 -m venv "$venv"
    # Everything but shoal comes from CI's main venv: a .pth adds its site-packages folders after
    # this venv's own, and their .pth files (the editable shoal's import hook) are not read from there.
    local site
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    "$ROOT/.venv/bin/python" -c 'import sys; print("\n".join(p for p in sys.path if p.endswith("-packages")))' \
        >"$site/shoal_ci_main_venv.pth"
    "$venv/bin/python" -m pip install --quiet --no-deps "$ROOT" -Ccmake.define.SHOAL_PORTABLE_WAIT=ON \
        -Cbuild-dir="$WORK/portable-wheel-build"
    SHOAL_EXPECT_WAIT_LAYER=portable "$venv/bin/python" -m pytest -q -p no:cacheprovider \
        tests/test_platform_layer.py tests/test_native.py tests/test_pipelining.py tests/test_interrupts_native.py
    configure_tests "$WORK/portable" -DSHOAL_PORTABLE_WAIT=ON
    build "$WORK/portable" vec_parity pool_stress
    run_tests "$WORK/portable" portable -- vec_parity pool_stress
}

step_libcxx() {
    CC=clang CXX=clang++ configure_tests "$WORK/libcxx" -DCMAKE_CXX_FLAGS=-stdlib=libc++ \
        -DCMAKE_EXE_LINKER_FLAGS=-stdlib=libc++
    build "$WORK/libcxx" vec_parity pool_stress interrupt_test pipeline_test envs_test
    # ldd's output is read whole before grep: under pipefail, `ldd | grep -q` fails whenever grep exits at
    # the first match while ldd is still writing (ldd dies of SIGPIPE).
    local libs
    libs=$(ldd "$WORK/libcxx/cpp/tests/pool_stress")
    if ! grep -q 'libc++\.so' <<<"$libs"; then
        log "the libc++ build did not link libc++"
        return 1
    fi
    run_tests "$WORK/libcxx" futex -- vec_parity pool_stress interrupt_test pipeline_test envs_test
}

step_clang() {
    CC=clang "$ROOT/.venv/bin/python" -m pytest -q -p no:cacheprovider -m "" tests/test_many_libraries.py \
        tests/test_ocean.py -k "many_libraries or (dynamics_equal and (cartpole or squared or snake or breakout))"
    CC=clang "$ROOT/.venv/bin/python" -m pytest -q -p no:cacheprovider -m "" tests/test_mujoco.py \
        -k "step_for_step and (Hopper or HalfCheetah)"
    # The builds above must have been clang's: one more, and its .comment section names the compiler.
    CC=clang SHOAL_OCEAN_BUILD_CACHE="$WORK/clang-ocean" "$ROOT/.venv/bin/python" -c '
import subprocess
from shoal import ocean
path = ocean.env_class("squared").ocean["library"].path
comment = subprocess.run(["readelf", "-p", ".comment", str(path)], capture_output=True, text=True, check=True).stdout
assert "clang version" in comment, comment
print("squared built by", next(line for line in comment.splitlines() if "clang version" in line).split("]")[1])'
}

step_windows() {
    configure_tests "$WORK/windows" -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchains/mingw-w64-x86_64.cmake"
    build "$WORK/windows" "${CROSS_TESTS[@]}"
    local wine=/usr/lib/wine/wine64
    [ -x "$wine" ] || wine=$(command -v wine64)
    export WINEPREFIX=$CACHE/wine WINEDEBUG=-all
    [ -d "$WINEPREFIX" ] || timeout 300 "$wine" wineboot -i >/dev/null 2>&1
    run_tests "$WORK/windows" win32 "$wine" -- "${CROSS_TESTS[@]}"
}

step_aarch64() {
    configure_tests "$WORK/aarch64" -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchains/aarch64-linux-gnu.cmake"
    build "$WORK/aarch64" "${CROSS_TESTS[@]}"
    run_tests "$WORK/aarch64" futex qemu-aarch64-static -- "${CROSS_TESTS[@]}"
}

# Only the Debian packages (ensure_packages runs before any step): .ci/run installs them before the
# integration tier, whose cross-toolchain tests need MinGW and Wine.
step_packages() { :; }

step_pythons() {
    local current versions=() python version venv found=0
    current=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    for python in "$HOME"/.pyenv/versions/3.1[0-4]*/bin/python3; do
        [ -x "$python" ] || continue
        version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
        [ "$version" = "$current" ] && continue
        found=1
        log "CPython $version"
        venv=$WORK/py$version
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --upgrade pip
        "$venv/bin/python" -m pip install --quiet "$ROOT" "pytest>=8" "pettingzoo>=1.24" "hypothesis>=6.100" \
            -Cbuild-dir="$WORK/build-py$version"
        SHOAL_EXPECT_WAIT_LAYER=futex "$venv/bin/python" -m pytest -q -p no:cacheprovider \
            tests/test_platform_layer.py tests/test_native.py tests/test_vector_api.py
    done
    if [ "$found" -eq 0 ]; then
        log "no other CPython 3.10-3.14 under ~/.pyenv/versions"
        return 1
    fi
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(portable libcxx clang windows aarch64 pythons)
ensure_packages
summary=()
for step in "${steps[@]}"; do
    log "--- $step"
    start=$SECONDS
    "step_$step"
    summary+=("$step $((SECONDS - start)) s")
    log "$step passed in $((SECONDS - start)) s"
done
log "all passed: ${summary[*]}"
