"""The platform layer (cpp/include/shoal/platform/): no OS-specific call outside it, the build's
waiting layer is the one asked for, and per-OS paths follow each OS's rules."""

import configparser
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from shoal import _native
from shoal.native import builds

ROOT = Path(__file__).resolve().parents[1]
PLATFORM_LAYER = ROOT / "cpp" / "include" / "shoal" / "platform"

# Linux-only calls, headers and paths: each belongs in the platform layer (or, in Python, behind
# the standard library's own per-OS choice).
LINUX_ONLY = re.compile(
    r"\bsyscall\s*\(|<sys/syscall\.h>|\bSYS_futex\b|\bFUTEX_[A-Z_]+|<linux/futex\.h>|\bfutex_wait\b|"
    r"\bfutex_wake_all\b|\bsched_getaffinity\b|\bpthread_setaffinity_np\b|/dev/shm"
)
SOURCE_TREES = ("cpp", "bench", "examples", "python/shoal")
SOURCE_SUFFIXES = {".c", ".h", ".cpp", ".hpp", ".py"}
# Hits in files another change owns, each with why it is left: the test fails once the hit is gone,
# so that the entry goes too.
PENDING: dict[str, str] = {}


def linux_only_hits() -> dict[str, list[str]]:
    hits: dict[str, list[str]] = {}
    for tree in SOURCE_TREES:
        for path in sorted((ROOT / tree).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or PLATFORM_LAYER in path.parents or "results" in path.parts:
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if LINUX_ONLY.search(line):
                    hits.setdefault(str(path.relative_to(ROOT)), []).append(f"{number}: {line.strip()}")
    return hits


def test_no_linux_only_call_outside_the_platform_layer():
    hits = linux_only_hits()
    unexpected = {path: lines for path, lines in hits.items() if path not in PENDING}
    assert not unexpected, f"Linux-only calls outside {PLATFORM_LAYER.relative_to(ROOT)}: {unexpected}"
    stale = set(PENDING) - set(hits)
    assert not stale, f"no longer needed in PENDING: {stale}"


def test_the_check_sees_a_linux_only_call():
    # The pattern must catch what the platform layer itself contains (else the check above proves nothing).
    futex = (PLATFORM_LAYER / "wait_futex.hpp").read_text()
    cpus = (PLATFORM_LAYER / "cpus.hpp").read_text()
    threads = (PLATFORM_LAYER / "threads.hpp").read_text()
    for text, call in ((futex, "syscall("), (futex, "FUTEX_WAIT_PRIVATE"), (cpus, "sched_getaffinity")):
        assert call in text and LINUX_ONLY.search(text)
    assert LINUX_ONLY.search(threads)  # pthread_setaffinity_np


def built_wait_layer() -> str:
    config = configparser.ConfigParser()
    assert config.read(Path(_native.__file__).parent / "native_build.ini"), "native_build.ini is not installed"
    return config["native"]["wait_layer"]


def test_the_build_uses_the_waiting_layer_asked_for():
    """CI's proxy steps set SHOAL_EXPECT_WAIT_LAYER to the layer their build must have; a default
    build on Linux has the futex layer."""
    import sys

    expected = os.environ.get("SHOAL_EXPECT_WAIT_LAYER")
    if expected is None:
        expected = {"linux": "futex", "darwin": "ulock", "win32": "win32"}.get(sys.platform, "portable")
    assert built_wait_layer() == expected


@pytest.mark.parametrize("name", ["wait_darwin.hpp", "wait_portable.hpp"])
def test_other_waiting_layers_compile_here(name, tmp_path):
    """The macOS layer cannot run here, but it must at least compile (its kernel calls declared as
    libSystem has them); the portable layer is also built whole by CI's portable step."""
    compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    program = tmp_path / "uses_layer.cpp"
    program.write_text(
        f'#include "shoal/platform/{name}"\n'
        "void use(std::atomic<uint32_t>* w) {\n"
        "    shoal::platform::wait(w, 0);\n"
        "    shoal::platform::wait_for(w, 0, 1000);\n"
        "    shoal::platform::wake_all(w);\n"
        "}\n"
    )
    result = subprocess.run(
        [compiler, "-std=c++20", "-fsyntax-only", "-Wall", "-Werror", f"-I{ROOT / 'cpp' / 'include'}", program],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


# ---- per-OS paths ------------------------------------------------------------------------------


@pytest.fixture
def no_cache_env(monkeypatch):
    for name in ("SHOAL_CACHE_DIR", "XDG_CACHE_HOME", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_cache_dir_follows_each_os(no_cache_env, tmp_path):
    home = tmp_path / "home"
    no_cache_env.setattr(Path, "home", classmethod(lambda cls: home))
    no_cache_env.setattr(builds.sys, "platform", "linux")
    assert builds.cache_dir() == home / ".cache" / "shoal"
    no_cache_env.setattr(builds.sys, "platform", "darwin")
    assert builds.cache_dir() == home / "Library" / "Caches" / "shoal"
    no_cache_env.setattr(builds.sys, "platform", "win32")
    assert builds.cache_dir() == home / "AppData" / "Local" / "shoal" / "Cache"
    no_cache_env.setenv("LOCALAPPDATA", str(tmp_path / "local"))
    assert builds.cache_dir() == tmp_path / "local" / "shoal" / "Cache"


def test_cache_dir_settings_win_on_every_os(no_cache_env, tmp_path):
    for platform in ("linux", "darwin", "win32"):
        no_cache_env.setattr(builds.sys, "platform", platform)
        no_cache_env.setenv("SHOAL_CACHE_DIR", str(tmp_path / "mine"))
        assert builds.cache_dir() == tmp_path / "mine"
        no_cache_env.delenv("SHOAL_CACHE_DIR")
        if platform != "win32":  # XDG is a Unix convention
            no_cache_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
            assert builds.cache_dir() == tmp_path / "xdg" / "shoal"
            no_cache_env.delenv("XDG_CACHE_HOME")


def test_wheels_are_configured_for_every_platform_and_cpython():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(ROOT / "pyproject.toml", "rb") as f:
        config = tomllib.load(f)["tool"]["cibuildwheel"]
    assert config["build"].split() == [f"cp3{minor}-*" for minor in range(10, 15)]
    assert set(config["linux"]["archs"]) == {"x86_64", "aarch64"}
    assert set(config["macos"]["archs"]) == {"arm64", "x86_64"}
    assert config["windows"]["archs"] == ["AMD64"]
