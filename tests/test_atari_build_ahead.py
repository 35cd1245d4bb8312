"""The real ALE build: its first line comes at once and names the cache; a killed build leaves nothing
the next one keeps; ``shoal build atari`` leaves a cache the next process uses without building.

The first two start a build in a fresh cache and stop it within seconds (the sdist copied from the
default cache, so nothing is downloaded); the last builds into the default cache, which the rest of
the Atari tests share (built once per machine)."""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("ale_py", reason="needs ale-py: pip install -e '.[test]'")
if sys.platform == "win32":
    pytest.skip("process groups and SIGKILL", allow_module_level=True)

from shoal.atari import build, sdist
from shoal.native import builds

FIRST_USE = "import shoal.atari; shoal.atari.env_class('pong')"


def _stderr_lines_until(process, predicate, seconds):
    """stderr lines of ``process`` until one satisfies ``predicate`` or ``seconds`` pass."""
    lines, deadline = [], time.monotonic() + seconds
    selector = selectors.DefaultSelector()
    selector.register(process.stderr, selectors.EVENT_READ)
    while time.monotonic() < deadline:
        if selector.select(timeout=max(0.0, deadline - time.monotonic())):
            line = process.stderr.readline()
            if not line:
                break
            lines.append(line)
            if predicate(line):
                break
    return lines


def _first_use(env):
    """A process that uses Atari for the first time, in a session of its own (its compilers with it)."""
    return subprocess.Popen(
        [sys.executable, "-c", FIRST_USE], env=env, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


@pytest.fixture
def fresh_cache(tmp_path):
    """A private, empty Atari cache holding only the verified sdist (skipped when none is cached here)."""
    version = build.ale_version()
    cached = build.cache_root() / "sdist" / sdist.filename(version)
    if not cached.is_file() or sdist.damage(cached, build.sdist_sha256(version)) is not None:
        pytest.skip(f"no verified {cached.name} in {cached.parent} to copy (run shoal build atari once)")
    root = tmp_path / "atari"
    shutil.copyfile(cached, builds.private_folder(root / "sdist") / cached.name)
    return root


def test_first_use_names_the_cache_within_5_s_and_a_killed_build_is_cleaned_up(fresh_cache):
    env = {**os.environ, "SHOAL_ATARI_BUILD_CACHE": str(fresh_cache)}
    env.pop("SHOAL_QUIET", None)
    started = time.monotonic()
    with _first_use(env) as process:
        try:
            lines = _stderr_lines_until(process, lambda line: str(fresh_cache) in line, 5.0)
            waited = time.monotonic() - started
            lines += _stderr_lines_until(process, lambda line: "compiling ALE" in line, 30.0)
            staged = list(fresh_cache.glob(".build-ale-*"))
        finally:
            os.killpg(process.pid, signal.SIGKILL)  # its compilers too
    named = [line for line in lines if str(fresh_cache) in line]
    assert named and waited < 5.0, f"nothing named the cache in {waited:.1f} s: {lines}"
    assert "building ALE" in named[0]
    assert any("compiling ALE" in line for line in lines), lines
    assert staged, "no staging folder while building"
    assert builds.remove_dead_stages(fresh_cache) >= 1
    assert not list(fresh_cache.glob(".build-*")), "the killed build's staging folder stayed"


def test_quiet_first_use_prints_nothing(fresh_cache):
    env = {**os.environ, "SHOAL_ATARI_BUILD_CACHE": str(fresh_cache), "SHOAL_QUIET": "1"}
    with _first_use(env) as process:
        try:
            lines = _stderr_lines_until(process, lambda line: True, 8.0)
        finally:
            os.killpg(process.pid, signal.SIGKILL)  # its compilers too
    assert not any(line.startswith("shoal:") for line in lines), lines


def test_shoal_build_atari_leaves_a_cache_the_next_process_uses():
    ahead = subprocess.run(
        [sys.executable, "-m", "shoal", "build", "atari"], capture_output=True, text=True, timeout=3600
    )
    assert ahead.returncode == 0, ahead.stderr[-3000:]
    assert str(build.cache_root()) in ahead.stdout
    env = {k: v for k, v in os.environ.items() if k != "SHOAL_QUIET"}
    started = time.monotonic()
    use = subprocess.run([sys.executable, "-c", FIRST_USE], capture_output=True, text=True, timeout=300, env=env)
    assert use.returncode == 0, use.stderr[-3000:]
    assert "shoal: " not in use.stderr, f"the next process built again:\n{use.stderr}"
    assert time.monotonic() - started < 120
