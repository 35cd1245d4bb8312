"""The SDK example built by shoal.native.toolchain as a Linux .so and, forced to the Windows target,
as a MinGW .dll; tests/platform_driver/step_library.cpp loads each as the core does (dlopen, or
LoadLibraryExW under Wine) and steps it: both must produce the same trajectory digest. A proxy: Wine
is not Windows, MinGW is not MSVC. Needs x86_64-w64-mingw32-gcc, its g++-posix and wine64
(.ci/platforms.sh installs them); missing, it skips, and SHOAL_REQUIRE_CROSS=1 makes that a failure."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import shoal
from shoal.native import toolchain

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "tests" / "platform_driver" / "step_library.cpp"
EXAMPLE = ROOT / "examples" / "custom_env" / "random_walk.c"
OPTIONS = toolchain.Options(optimize=3, std="gnu11", includes=(shoal.get_include(),), libraries=("m",))


def _wine():
    tools = ["x86_64-w64-mingw32-gcc", "x86_64-w64-mingw32-g++-posix", "g++"]
    wine = "/usr/lib/wine/wine64" if os.access("/usr/lib/wine/wine64", os.X_OK) else shutil.which("wine64")
    missing = [t for t in tools if not shutil.which(t)] + ([] if wine else ["wine64"])
    if missing:
        if os.environ.get("SHOAL_REQUIRE_CROSS") == "1":
            pytest.fail(f"cross toolchain missing: {missing}")
        pytest.skip(f"cross toolchain missing: {missing}")
    return wine


def test_the_sdk_example_as_a_windows_dll_steps_as_the_linux_library_does(tmp_path):
    wine = _wine()
    linux, windows = toolchain.toolchain_for("linux", "gcc"), toolchain.toolchain_for("win32", "x86_64-w64-mingw32-gcc")
    for tools, out in ((linux, tmp_path / "rw.so"), (windows, tmp_path / "rw.dll")):
        subprocess.run(tools.shared_library([EXAMPLE], out, OPTIONS), check=True, capture_output=True)
    assert (tmp_path / "rw.dll").read_bytes()[:2] == b"MZ"
    includes = f"-I{ROOT / 'cpp' / 'include'}"
    subprocess.run(["g++", "-std=c++20", "-O2", includes, DRIVER, "-o", tmp_path / "drv", "-ldl"], check=True)
    subprocess.run(
        ["x86_64-w64-mingw32-g++-posix", "-std=c++20", "-O2", "-static", includes, DRIVER, "-o", tmp_path / "drv.exe"],
        check=True,
    )
    args = ["random_walk", "8", "2000", "7"]
    native = subprocess.run([tmp_path / "drv", tmp_path / "rw.so", *args], check=True, capture_output=True, text=True)
    prefix = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "shoal-ci" / "wine"
    env = {**os.environ, "WINEPREFIX": str(prefix), "WINEDEBUG": "-all"}
    emulated = subprocess.run(
        [wine, tmp_path / "drv.exe", tmp_path / "rw.dll", *args], check=True, capture_output=True, text=True,
        env=env, timeout=600,
    )  # fmt: skip
    line = native.stdout.strip()
    assert line.startswith("random_walk envs=8 steps=2000 episodes=") and "episodes=0 " not in line
    assert emulated.stdout.strip() == line
