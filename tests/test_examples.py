"""The trainer examples run end to end with a tiny budget (each in its own interpreter)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

CASES = {
    "train_sb3.py": (["--steps", "2048", "--num-envs", "8"], "stable_baselines3", "trained 2048 steps"),
    "gymnasium_vector.py": (["--steps", "300"], None, "NEXT_STEP view over Serial ran 300 steps"),
    "torchrl_rollout.py": (["--steps", "30"], "torchrl", "episodes ended in 30 steps"),
}


@pytest.mark.parametrize("script", sorted(CASES))
def test_example_runs(script):
    args, needs, expected = CASES[script]
    if needs is not None:
        pytest.importorskip(needs)
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, f"{script} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    assert expected in result.stdout, result.stdout[-2000:]
