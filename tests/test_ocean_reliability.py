"""No crash from an Ocean build and no wrong verdict from `shoal check` (issue 26, findings 6, 7, 11).

- A damaged cache entry (truncated, empty, garbage of the same size) is rebuilt, never loaded: a
  truncated library used to end the process with SIGBUS, so each load runs in a child process.
- freeway reads an uninitialized pointer: refused at build time (tests/test_ocean_unavailable.py).
- `shoal check` compares NaN observations by their bits, final observations where an episode ended,
  and the infos of two runs; an env that crashes fails the check instead of killing the command.
"""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

import shoal.ocean as ocean
from shoal.native import manifest
from shoal.ocean import build, source
from shoal.ocean.check import check
from shoal.ocean.errors import OceanError

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_TREE = os.path.join(HERE, "ocean_tree")

LOAD_AND_STEP = textwrap.dedent(
    """
    import sys
    import numpy as np
    import shoal.ocean
    from shoal.vector import make

    cls = shoal.ocean.env_class("globalcount", sys.argv[1])
    with make(cls, backend="Multithreading", num_envs=2, seed=1) as vecenv:
        vecenv.reset(seed=1)
        for _ in range(20):
            vecenv.step(np.ones(2, dtype=np.int32))
    print("stepped", cls.ocean["library"].path)
    """
)


def _load_in_child(cache, tree) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", LOAD_AND_STEP, str(tree)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SHOAL_OCEAN_BUILD_CACHE": str(cache)},
    )


def _damage(path, how: str) -> None:
    """Replaces the library with a damaged copy (a new file: a process that mapped the old one keeps it)."""
    data = path.read_bytes()
    if how == "truncated":
        data = data[: len(data) // 2]
    elif how == "empty":
        data = b""
    else:  # garbage of the same size: only the hash can tell
        data = bytes((b + 1) % 256 for b in data)
    damaged = path.with_name(path.name + ".damaged")
    damaged.write_bytes(data)
    os.replace(damaged, path)


@pytest.mark.parametrize("how", ["truncated", "empty", "garbage"])
def test_a_damaged_cached_build_is_rebuilt_not_loaded(tmp_path, how):
    cache = tmp_path / "builds"
    first = _load_in_child(cache, TEST_TREE)
    assert first.returncode == 0, first.stderr
    library = next(cache.glob("globalcount-*/globalcount.so"))
    intact = library.read_bytes()
    _damage(library, how)
    again = _load_in_child(cache, TEST_TREE)
    assert again.returncode == 0, f"loading a {how} cached build: exit {again.returncode}\n{again.stderr[-2000:]}"
    assert f"stepped {library}" in again.stdout
    assert library.stat().st_size == len(intact) and manifest.damage(library) is None
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []  # nothing left aside


def test_a_damaged_build_that_cannot_be_rebuilt_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOAL_OCEAN_BUILD_CACHE", str(tmp_path / "builds"))
    library = ocean.env_class("globalcount", TEST_TREE).ocean["library"]
    _damage(library.path, "truncated")
    with monkeypatch.context() as patch:  # the compiler is gone (CC is part of the key: patch the call)
        patch.setattr(build, "_run_compiler", lambda *args: (_ for _ in ()).throw(OceanError("cc not found")))
        with pytest.raises(
            OceanError, match=r"cached build .*globalcount-\w+ was damaged \(globalcount\.so has .*cc not found"
        ):
            ocean.env_class("globalcount", TEST_TREE)
    assert manifest.damage(ocean.env_class("globalcount", TEST_TREE).ocean["library"].path) is None


@pytest.fixture(scope="module")
def leaky(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SHOAL_OCEAN_BUILD_CACHE", str(tmp_path_factory.mktemp("leaky_builds")))
        yield ocean.env_class("leaky", TEST_TREE)


@pytest.mark.parametrize("backend", ["Multithreading", "PufferEnv"])
def test_check_passes_a_deterministic_env_with_nan_observations(leaky, backend):
    options = {"max_num_threads": 2} if backend == "Multithreading" else {}
    result = check(leaky, backend=backend, num_envs=4, steps=100, env_kwargs={"mode": 0}, **options)
    assert result.passed, str(result)


def test_check_fails_state_shared_only_through_infos(leaky):
    result = check(leaky, backend="Multithreading", num_envs=4, steps=100, env_kwargs={"mode": 1}, max_num_threads=2)
    assert not result.passed
    assert result.mismatch.field == "infos" and result.mismatch.step == 8  # the first report (length 8)
    assert "the env's log depends on state outside the env" in str(result)


def test_check_fails_state_shared_only_through_final_observations(leaky):
    kwargs = {"mode": 2, "max_episode_steps": 8}
    result = check(leaky, backend="Multithreading", num_envs=4, steps=100, env_kwargs=kwargs, max_num_threads=2)
    assert not result.passed
    assert (result.mismatch.field, result.mismatch.step, result.mismatch.env) == ("final_observations", 8, 0)


def test_shoal_check_reports_an_env_that_crashes(leaky, tmp_path):
    config = tmp_path / "crash.ini"
    config.write_text(
        f"[env]\nname = ocean:leaky\nocean_source = {TEST_TREE}\nmode = 3\nlength = 5\n[vec]\nnum_envs = 2\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "shoal", "check", "--config", str(config), "--steps", "20"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SHOAL_OCEAN_BUILD_CACHE": os.environ["SHOAL_OCEAN_BUILD_CACHE"]},
    )
    assert result.returncode == 1, f"exit {result.returncode}: {result.stderr[-2000:]}"
    assert f"FAILED: the env crashed the process that ran it (killed by {signal.SIGSEGV.name})" in result.stdout


def test_a_huge_ocean_layout_is_refused_up_front_with_the_estimate(tmp_path):
    """num_snakes = 100000000: joint_space's full per-agent bounds (11 GiB a Box) were not counted,
    and the process was killed for memory at 24 GB after 53 s."""
    from test_memory_estimate import _capped_cli

    source.ocean_dir()  # the sdist, fetched once into the user's cache
    config = tmp_path / "snakes.ini"
    config.write_text(
        "[env]\nname = ocean:snake\nnum_snakes = 100000000\n[vec]\nbackend = Multithreading\nnum_envs = 1\n"
    )
    result, elapsed, max_rss_kb = _capped_cli(
        ["run", "--config", str(config)], SHOAL_OCEAN_BUILD_CACHE=str(tmp_path / "builds")
    )
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [text for text in result.stderr.strip().splitlines() if not text.startswith("maxrss_kb ")]
    errors = [i for i, text in enumerate(lines) if text.startswith("shoal: error")]
    assert len(errors) == 1, lines
    progress, line = lines[: errors[0]], lines[errors[0]]  # the build's progress lines, then the one-line error
    assert all(text.startswith("shoal: ") for text in progress), progress
    assert "needs" in line and "buffers for 100,000,000 agent rows" in line and "joint spaces' bounds" in line
    assert elapsed < 120 and max_rss_kb < 1 << 20  # the build of the env included


def test_shoal_check_in_its_child_process_can_start_workers(tmp_path):
    config = tmp_path / "mp.ini"
    config.write_text(
        "[env]\nname = cartpole\n[vec]\nbackend = Multiprocessing\nnum_envs = 2\nnum_workers = 2\noverwork = true\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "shoal", "check", "--config", str(config), "--steps", "50"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "CartPole: Multiprocessing, 2 envs, 50 steps vs each env stepped alone: identical" in result.stdout
