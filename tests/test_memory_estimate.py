"""An oversized vector is refused up front with the estimate, never killed for memory (issue 26, finding 8).

make() estimates everything the vector will allocate (per-env lists, buffers, the joint spaces'
bounds, the env structs and their parameters) and compares the sum with the available memory
before allocating any of it. The fake-limit tests shrink the available memory; the real ones run
in a child process capped by RLIMIT_AS, so that the code before the fix (which allocated part after
part, each checked alone) fails there instead of filling the machine.
"""

import os
import subprocess
import sys
import time

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

import shoal.buffers as buffers
from shoal import _native
from shoal.buffers import VectorTooLarge, joint_space_bytes
from shoal.envs import CartPole
from shoal.errors import APIUsageError
from shoal.native.spec import action_space, observation_space
from shoal.spaces import joint_space
from shoal.vector import make

NUM_ENVS = 20_000


def _parts(num_envs: int, joint_rows=()) -> dict:
    info = CartPole.describe()
    parts = buffers.native_vector_estimate(info, num_envs, observation_space(info), action_space(info), joint_rows)
    return dict(parts)


@pytest.fixture
def nothing_allocated(monkeypatch):
    """Fails the test if the native vector or its buffers are allocated."""

    def refuse(*args, **kwargs):
        raise AssertionError("allocated although the estimate does not fit")

    monkeypatch.setattr(buffers.Buffers, "allocate", classmethod(refuse))
    monkeypatch.setattr(_native, "Vector", refuse)


@pytest.mark.parametrize("backend", ["Multithreading", "PufferEnv"])
def test_the_parts_are_counted_together_not_each_alone(monkeypatch, nothing_allocated, backend):
    joint_rows = () if backend == "PufferEnv" else (NUM_ENVS,)
    parts = _parts(NUM_ENVS, joint_rows)
    total = sum(parts.values()) + 3 * 8 * (1 if backend == "PufferEnv" else NUM_ENVS)  # + per-env lists
    limit = int(0.75 * total)
    assert max(parts.values()) < limit  # each part alone fits: only their sum does not
    monkeypatch.setattr(buffers, "available_memory", lambda: limit)
    kwargs = {"env_kwargs": {"num_envs": NUM_ENVS}} if backend == "PufferEnv" else {"num_envs": NUM_ENVS}
    with pytest.raises(VectorTooLarge) as info:
        make(CartPole, backend=backend, **kwargs)
    message = str(info.value)
    assert f"num_envs={NUM_ENVS:,} needs {total:,} bytes" in message
    for what in ("buffers for 20,000 agent rows", "joint spaces' bounds", "env structs", "per-env parameters"):
        assert what in message
    assert isinstance(info.value, APIUsageError) and isinstance(info.value, MemoryError)


def test_a_vector_that_fits_is_made(monkeypatch):
    parts = _parts(64, (64,))
    monkeypatch.setattr(buffers, "available_memory", lambda: 2 * sum(parts.values()) + 4096)
    with make(CartPole, backend="Multithreading", num_envs=64) as vecenv:
        vecenv.reset(seed=0)


def test_a_native_env_made_directly_counts_its_structs_and_joint_spaces(monkeypatch, nothing_allocated):
    parts = _parts(NUM_ENVS)
    monkeypatch.setattr(buffers, "available_memory", lambda: sum(parts.values()) - 1)
    with pytest.raises(VectorTooLarge, match=r"env structs [\d.]+ MiB"):
        CartPole(num_envs=NUM_ENVS)


@pytest.mark.parametrize(
    "space",
    [
        spaces.Box(-1, 1, (4,), np.float32),
        spaces.Box(0, 127, (11, 11), np.int8),
        spaces.Box(0, 1, (3,), np.float64),
        spaces.Discrete(4),
        spaces.MultiDiscrete([3, 5]),
    ],
)
def test_the_joint_space_estimate_covers_what_joint_space_allocates(space):
    import tracemalloc

    agents = 100_000
    tracemalloc.start()
    try:
        joint = joint_space(space, agents)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del joint
    estimate = joint_space_bytes(space, agents)
    assert peak <= estimate + 16_384 <= 1.5 * peak  # + the space objects themselves


CAPPED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
from shoal.cli import main
try:
    code = main(sys.argv[1:])
finally:
    # The peak RSS of this process image: getrusage's ru_maxrss survives exec, so it would report the
    # pytest process that forked this one.
    peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(f"maxrss_kb {peak.split()[1]}", file=sys.stderr)
sys.exit(code)
"""


def _capped_cli(args, **env) -> tuple[subprocess.CompletedProcess, float, int]:
    """The shoal command in a child capped at 6 GiB of address space: (result, seconds, its max RSS in KiB)."""
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", CAPPED, *args], capture_output=True, text=True, timeout=300, env={**os.environ, **env}
    )
    elapsed = time.perf_counter() - start
    rss = [line for line in result.stderr.splitlines() if line.startswith("maxrss_kb ")]
    assert rss, result.stderr[-2000:]
    max_rss_kb = int(rss[-1].split()[-1])
    return result, elapsed, max_rss_kb


def test_a_real_huge_vector_fails_fast_with_the_estimate(tmp_path):
    """6e8 CartPole envs: every part alone fitted the old per-allocation check (14 GB of lists first)."""
    config = tmp_path / "huge.ini"
    config.write_text("[env]\nname = cartpole\n[vec]\nbackend = Multithreading\nnum_envs = 600000000\n")
    result, elapsed, max_rss_kb = _capped_cli(["run", "--config", str(config)])
    assert result.returncode == 2, result.stderr[-2000:]
    line = result.stderr.strip().splitlines()[0]
    assert (
        line.startswith(f"shoal: error: {config}: num_envs=600,000,000 needs ")
        and "GiB) of memory for the vector (" in line
    )
    assert elapsed < 30 and max_rss_kb < 1 << 20  # seconds (here, a loaded machine), under 1 GiB resident


@pytest.mark.parametrize("backend", ["Multiprocessing", "Serial"])
def test_a_hundred_million_python_envs_fail_fast_with_the_estimate(backend):
    """Issue 45: Multiprocessing with 10^8 Gymnasium envs failed after 89 s, at the workers' creation
    limit. Each Python env object counts at least PYTHON_ENV_BYTES, before any list or env is made."""
    from envs_for_tests import make_cartpole

    started = time.monotonic()
    with pytest.raises(VectorTooLarge, match=r"num_envs=100,000,000 needs .*100,000,000 env objects \(at least\)"):
        make(make_cartpole, backend=backend, num_envs=100_000_000)
    assert time.monotonic() - started < 5


class WideObservations(gymnasium.Env):
    observation_space = spaces.Box(-1, 1, (100_000,), np.float32)
    action_space = spaces.Discrete(2)


def test_python_env_buffers_are_estimated_once_the_driver_env_tells_the_spaces(monkeypatch):
    """The spaces of a Python env are known once its driver env is built: Multiprocessing counts its
    shared buffers and joint spaces then, before the shared memory is allocated or a worker started."""
    import shoal.backends.multiprocessing

    monkeypatch.setattr(buffers, "available_memory", lambda: 2**30)
    monkeypatch.setattr(
        shoal.backends.multiprocessing, "SharedMapping", lambda *a, **k: pytest.fail("allocated the shared memory")
    )
    with pytest.raises(VectorTooLarge, match=r"num_envs=2,000 needs .*buffers for 2,000 agent rows 1\.5 GiB"):
        make(WideObservations, backend="Multiprocessing", num_envs=2_000, num_workers=2)
