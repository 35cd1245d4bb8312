"""The native test programs of cpp/tests (pool stress, env checks), built with CMake and run in a
plain build and under ASan+UBSan and TSan. Each must exit 0 with no sanitizer report."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = sorted(p.stem for p in (ROOT / "cpp" / "tests").glob("*.cpp"))
SANITIZERS = {"plain": "", "address": "address", "thread": "thread"}


@pytest.fixture(scope="module", params=sorted(SANITIZERS))
def build_dir(request, tmp_path_factory):
    build = tmp_path_factory.mktemp(f"native_{request.param}")
    configure = [
        "cmake",
        "-S",
        str(ROOT),
        "-B",
        str(build),
        "-DSHOAL_BUILD_TESTS=ON",
        f"-DSHOAL_SANITIZE={SANITIZERS[request.param]}",
        "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
    ]
    subprocess.run(configure, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build), "-j2"], check=True, capture_output=True)
    return request.param, build


@pytest.mark.parametrize("program", PROGRAMS)
def test_native_program(build_dir, program):
    kind, build = build_dir
    env = dict(
        os.environ,
        ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1",
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
        TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1",
    )
    result = subprocess.run(
        [str(build / "cpp" / "tests" / program)], capture_output=True, text=True, timeout=600, env=env
    )
    output = result.stdout[-3000:] + result.stderr[-3000:]
    assert result.returncode == 0, f"{program} ({kind}) failed:\n{output}"
    assert "Sanitizer" not in result.stderr, f"{program} ({kind}) sanitizer report:\n{output}"
    assert "runtime error" not in result.stderr, f"{program} ({kind}) UBSan report:\n{output}"
