"""4,096 Humanoid envs construct and step; each costs its mjData's touched pages, not a model of its own."""

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import json, warnings
    import numpy as np, psutil
    import shoal.mujoco

    warnings.simplefilter("ignore", shoal.mujoco.MujocoWarning)
    cls = shoal.mujoco.env_class("Humanoid-v5")
    process = psutil.Process()
    before = process.memory_info().rss
    with cls(num_envs=4096, seed=1) as env:
        obs, _ = env.reset()
        for _ in range(3):
            obs, *_ = env.step(np.zeros((4096, 17), np.float32))
        rss = (process.memory_info().rss - before) / 4096
        print(json.dumps({"rss_per_env": rss, "finite": bool(np.isfinite(obs).all()), "shape": list(obs.shape)}))
    """
)


def test_4096_humanoid_envs_construct_and_step(tmp_path, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SHOAL_MUJOCO_BUILD_CACHE", str(tmp_path_factory.getbasetemp() / "mujoco_memory_builds"))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["shape"] == [4096, 348] and result["finite"]
    # 212 KiB measured here (RSS growth, as bench_mujoco's "memory per env" row): the mjData's buffer and
    # the arena pages a step touches. A model per env (its buffer alone is 540 KiB) would exceed the bound.
    assert 0 < result["rss_per_env"] < 512 * 1024, result
