"""Errors that say what happened (issue 13, defect 5): config paths that are not config files, a
num_envs too large for the machine, bad native options and PufferEnv keywords, `shoal run --steps -1`."""

import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from shoal.buffers import Buffers
from shoal.config import ConfigError, load
from shoal.envs import CartPole
from shoal.errors import APIUsageError
from shoal.pufferenv import PufferEnv
from shoal.vector import make

from envs_for_tests import make_cartpole


def test_binary_config_file_is_named_not_a_traceback(tmp_path):
    path = tmp_path / "config.ini"
    path.write_bytes(b"[env]\nname = cartpole\n\xff\xfe\x00binary")
    with pytest.raises(ConfigError, match=r"config\.ini is not UTF-8 text \(byte 0xff at offset 22\)"):
        load(path)


@pytest.mark.parametrize("kind", ["directory", "device"])
def test_config_path_that_is_not_a_file(tmp_path, kind):
    path = tmp_path if kind == "directory" else "/dev/zero"
    expected = "is a directory" if kind == "directory" else "is not a regular file"
    with pytest.raises(ConfigError, match=expected) as info:
        load(path)
    assert "does not exist" not in str(info.value)


@pytest.mark.parametrize(
    "backend, kwargs", [("Serial", {}), ("Multiprocessing", {"num_workers": 1}), ("Multithreading", {})]
)
def test_huge_num_envs_says_how_many_bytes_for_how_many_envs(backend, kwargs):
    creator = CartPole if backend == "Multithreading" else make_cartpole
    with pytest.raises(MemoryError, match=r"num_envs=100,000,000,000 needs [\d,]+ bytes \([\d,.]+ GiB\) of "):
        make(creator, backend=backend, num_envs=10**11, **kwargs)


def test_huge_native_env_and_buffers_say_how_many_bytes():
    with pytest.raises(MemoryError, match=r"num_envs=1,099,511,627,776 needs [\d,]+ bytes"):
        make(CartPole, env_kwargs={"num_envs": 2**40})
    space = spaces.Box(0, 1, (10**6,), np.float32)
    with pytest.raises(
        MemoryError,
        match=r"num_envs=5 needs 80,000,110,000,000 bytes \(74,505\.9 GiB\) of buffers "
        r"for 10,000,000 agent rows",
    ):
        Buffers.allocate(space, spaces.Discrete(2), 10**7, envs=5)


@pytest.mark.parametrize("backend", ["Multithreading", "PufferEnv"])
def test_pin_threads_is_validated(backend):
    kwargs = {"pin_threads": "yes"}
    if backend == "PufferEnv":
        options = {"env_kwargs": kwargs}
    else:
        options = {"backend": backend, "num_envs": 4, **kwargs}
    with pytest.raises(APIUsageError, match="pin_threads must be True or False, got 'yes'"):
        make(CartPole, **options)


class SizedEnv(PufferEnv):
    """A Python PufferEnv with one keyword of its own."""

    def __init__(self, size: int = 3, buf=None, seed: int = 0):
        self.single_observation_space = spaces.Box(0, 1, (size,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(2)
        self.num_agents = 1
        super().__init__(buf, seed)


@pytest.mark.parametrize(
    "creator, env_kwargs, match",
    [
        (SizedEnv, {"sise": 4}, r"SizedEnv\(size: int = 3, buf=None, seed: int = 0\) cannot take .*'sise'"),
        (SizedEnv, {"buf": 3}, r"buf must be a shoal\.buffers\.Buffers \(or None\), got int"),
        (CartPole, {"buf": 3}, r"buf must be a shoal\.buffers\.Buffers \(or None\), got int"),
        (CartPole, {"num_buffers": 0}, r"num_buffers must be an integer >= 1, got 0"),
        (CartPole, {"num_buffers": "x"}, r"num_buffers must be an integer"),
        (CartPole, {"num_envs": 4, "num_buffers": 3}, r"num_buffers must divide num_envs \(4\), got 3"),
    ],
)
def test_pufferenv_keyword_errors_are_api_usage_errors(creator, env_kwargs, match):
    with pytest.raises(APIUsageError, match=match):
        make(creator, env_kwargs=env_kwargs)


@pytest.mark.parametrize("steps", ["-1", "0", "ten"])
def test_shoal_run_rejects_steps_below_one(steps):
    result = subprocess.run(
        [sys.executable, "-m", "shoal", "run", "--steps", steps], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert f"argument --steps: must be an integer >= 1, got '{steps}'" in result.stderr
    assert "SPS" not in result.stdout
