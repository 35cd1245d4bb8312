"""RLlib as a client: its PPO trains on a shoal id that its EnvRunner builds through the id's
``vector_entry_point`` (examples/rllib_ppo.py, in its own interpreter with its own Ray instance)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rllib_ppo.py"
TIMEOUT_S = 240


@pytest.fixture
def ray_home():
    """A temporary HOME and RAY_TMPDIR (short: Ray's socket paths must fit 107 bytes); afterwards no
    process of the Ray instance started there may be left."""
    folder = tempfile.mkdtemp(prefix="rllib", dir="/tmp")
    yield folder
    leftover = [p for p in psutil.process_iter(["cmdline"]) if folder in " ".join(p.info["cmdline"] or ())]
    _, alive = psutil.wait_procs(leftover, timeout=15)
    for process in alive:
        process.kill()
    shutil.rmtree(folder, ignore_errors=True)
    assert not alive, f"Ray processes outlived the example: {alive}"


@pytest.mark.parametrize("env_runners", [0, 1], ids=["driver-samples", "one-env-runner"])
def test_rllib_ppo_trains_on_a_shoal_vector(ray_home, env_runners):
    pytest.importorskip("ray.rllib", reason="needs RLlib's dependencies, in the [full] extra")
    pytest.importorskip("torch", reason="RLlib's PPO needs torch, in the [full] extra")
    env = {**os.environ, "HOME": ray_home, "RAY_TMPDIR": ray_home, "RAY_USAGE_STATS_ENABLED": "0"}
    command = [sys.executable, str(EXAMPLE), "--iterations", "3", "--batch", "256"]
    result = subprocess.run(
        [*command, "--env-runners", str(env_runners)], capture_output=True, text=True, timeout=TIMEOUT_S, env=env
    )
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    out = result.stdout
    assert re.search(
        r"env runner's env: GymnasiumVectorEnv\(shoal/CartPole-v1, num_envs=8, NextStep\) over "
        r"shoal\.backends\.multithreading\.Multithreading",
        out,
    ), out
    sampled = [int(n) for n in re.findall(r"iteration \d+: (\d+) env steps sampled", out)]
    assert len(sampled) == 3 and sampled[0] >= 256 and sampled[0] < sampled[1] < sampled[2], out
    print(re.search(r"RLlib PPO on shoal: .*", out).group(0))
