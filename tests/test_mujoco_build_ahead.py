"""``shoal build mujoco TASK`` compiles ahead into the cache the next process uses without building,
and says where; a first use that builds says so at once."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("mujoco", reason='needs MuJoCo: pip install ".[mujoco]"')

TASK = "HalfCheetah-v5"
USE = f"import shoal.mujoco; shoal.mujoco.env_class({TASK!r})"


def test_shoal_build_mujoco_leaves_a_cache_the_next_process_uses(tmp_path):
    cache = tmp_path / "mujoco"
    env = {k: v for k, v in os.environ.items() if k != "SHOAL_QUIET"} | {"SHOAL_MUJOCO_BUILD_CACHE": str(cache)}
    ahead = subprocess.run(
        [sys.executable, "-m", "shoal", "build", "mujoco", TASK], capture_output=True, text=True, timeout=600, env=env
    )
    assert ahead.returncode == 0, ahead.stderr
    assert "shoal: compiling MuJoCo task" in ahead.stderr and f"cached in {cache}" in ahead.stderr
    assert str(cache) in ahead.stdout
    entries = sorted(p.name for p in cache.iterdir() if not p.name.startswith("."))
    use = subprocess.run([sys.executable, "-c", USE], capture_output=True, text=True, timeout=300, env=env)
    assert use.returncode == 0, use.stderr
    assert "shoal: " not in use.stderr, f"the next process built again:\n{use.stderr}"
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".")) == entries
