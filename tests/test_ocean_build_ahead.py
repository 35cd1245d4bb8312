"""``shoal build ocean ENV --source TREE`` compiles ahead into the cache the next process uses without
building, and says where."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TREE = Path(__file__).resolve().parent / "ocean_tree"


def test_shoal_build_ocean_leaves_a_cache_the_next_process_uses(tmp_path):
    cache = tmp_path / "ocean"
    env = {k: v for k, v in os.environ.items() if k != "SHOAL_QUIET"} | {"SHOAL_OCEAN_BUILD_CACHE": str(cache)}
    command = [sys.executable, "-m", "shoal", "build", "ocean", "globalcount", "--source", str(TREE)]
    ahead = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert ahead.returncode == 0, ahead.stderr
    assert "shoal: compiling Ocean env 'globalcount'" in ahead.stderr and f"cached in {cache}" in ahead.stderr
    assert str(cache) in ahead.stdout
    entries = sorted(p.name for p in cache.iterdir())
    use = f"import shoal.ocean; shoal.ocean.env_class('globalcount', {str(TREE)!r})"
    second = subprocess.run([sys.executable, "-c", use], capture_output=True, text=True, timeout=300, env=env)
    assert second.returncode == 0, second.stderr
    assert "shoal: " not in second.stderr, f"the next process built again:\n{second.stderr}"
    assert sorted(p.name for p in cache.iterdir()) == entries
    refused = subprocess.run(
        [sys.executable, "-m", "shoal", "build", "atari", "--source", str(TREE)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert refused.returncode == 2 and "--source names a PufferLib tree" in refused.stderr
