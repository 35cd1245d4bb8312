"""The worker machinery shared by Serial, Multiprocessing and Ray: one slice runner, so an env that
fails is reported the same way everywhere; carved blocks; the layout's env ranges."""

import re

import numpy as np
import pytest
from gymnasium import spaces

from shoal.backends.caller_side.env_split import worker_layout
from shoal.backends.wire.blocks import ALIGNMENT, block_buffers, block_size
from shoal.errors import APIUsageError, EnvError, WorkerError
from shoal.seeding import first_env_indices
from shoal.vector import make

from envs_for_tests import make_raise_on_reset, make_raise_on_step

# overwork: two worker processes must run on a one-core runner too.
BACKENDS = {"Serial": {}, "Multiprocessing": {"num_workers": 2, "overwork": True}}


@pytest.fixture(autouse=True)
def bounded(time_limit):
    time_limit(60)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_failing_step_names_the_env_and_needs_a_reset(backend):
    kwargs = [{"step": 100}, {"step": 100}, {"step": 100}, {"step": 2}]
    with make([make_raise_on_step] * 4, env_kwargs=kwargs, backend=backend, num_envs=4, **BACKENDS[backend]) as vecenv:
        vecenv.reset()
        vecenv.step(np.zeros(4, np.int32))
        with pytest.raises(
            EnvError, match=r"env 3\b.*raised RuntimeError: RaiseOnStep: planned failure on step 2"
        ) as info:
            vecenv.step(np.zeros(4, np.int32))
        assert not isinstance(info.value, WorkerError)
        with pytest.raises(APIUsageError, match="reset"):
            vecenv.recv()  # the failed step's arrays are never returned as a result
        vecenv.reset()
        vecenv.step(np.zeros(4, np.int32))


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_failing_reset_names_the_env(backend):
    with make(make_raise_on_reset, backend=backend, num_envs=2, **BACKENDS[backend]) as vecenv:
        with pytest.raises(EnvError, match=r"env [01]\b.*raised RuntimeError: RaiseOnReset"):
            vecenv.reset()


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_every_env_failing_in_one_step_is_reported_by_that_step(backend):
    """Issue 45: every env raises in its 3rd step. The step raises (naming env 0 first, as Serial, and
    every other failure of that step), and the reset after it works: no error of that step comes a call late."""
    with make(make_raise_on_step, env_kwargs={"step": 3}, backend=backend, num_envs=2, **BACKENDS[backend]) as vecenv:
        vecenv.reset()
        actions = np.zeros(2, np.int32)
        vecenv.step(actions)
        vecenv.step(actions)
        with pytest.raises(EnvError, match=r"^env 0\b.*planned failure on step 3") as info:
            vecenv.step(actions)
        vecenv.reset()
        if backend != "Serial":  # Serial stops at the first env that raises: env 1 raises in its next step
            assert re.search(r"env 1 \(worker 1\) raised RuntimeError: .*planned failure on step 3", str(info.value))
            vecenv.step(actions)


def test_the_failures_of_one_step_are_told_in_env_order_whichever_worker_answers_first():
    """Env 0's worker fails 0.5 s after env 1's: the error still opens with env 0, as Serial's does
    (a loaded CI machine once answered worker 1 first and the message began with env 1)."""
    kwargs = [{"step": 2, "delay_s": 0.5}, {"step": 2}]
    with make(
        [make_raise_on_step] * 2,
        env_kwargs=kwargs,
        backend="Multiprocessing",
        num_envs=2,
        **BACKENDS["Multiprocessing"],
    ) as vecenv:
        vecenv.reset()
        vecenv.step(np.zeros(2, np.int32))
        with pytest.raises(EnvError, match=r"^env 0 \(worker 0\)") as info:
            vecenv.step(np.zeros(2, np.int32))
        assert re.search(r"1 more env failure\(s\) in the same call:\n  env 1 \(worker 1\)", str(info.value))


def test_a_failed_step_in_flight_fails_the_async_reset_that_drains_it():
    with make(
        make_raise_on_step,
        env_kwargs={"step": 1},
        backend="Multiprocessing",
        num_envs=2,
        num_workers=2,
        batch_size=1,
        overwork=True,
    ) as vecenv:
        vecenv.async_reset()
        vecenv.recv()
        vecenv.send(np.zeros(1, np.int32))  # this worker's env fails while the step is in flight
        with pytest.raises(EnvError, match="RaiseOnStep: planned failure on step 1"):
            vecenv.async_reset()
        with pytest.raises(APIUsageError, match="reset"):
            vecenv.recv()
        vecenv.async_reset()  # the failure was reported once; this reset goes through
        vecenv.recv()
        vecenv.send(np.zeros(1, np.int32))
        vecenv.recv()


def test_carved_arrays_are_aligned_and_disjoint():
    observation_space = spaces.Box(0, 1, (3,), np.uint8)  # odd sizes: every array needs padding
    memory = np.zeros(block_size(observation_space, spaces.Discrete(3), 5) + ALIGNMENT + 7 * 8, np.uint8)
    buf, carver = block_buffers(memory, observation_space, spaces.Discrete(3), 5)
    extra = carver((7,), np.int64)
    arrays = [*vars(buf).values(), extra]
    for array in arrays:
        assert np.shares_memory(array, memory)
        assert array.__array_interface__["data"][0] % ALIGNMENT == memory.__array_interface__["data"][0] % ALIGNMENT
    for i, a in enumerate(arrays):
        for b in arrays[i + 1 :]:
            assert not np.shares_memory(a, b)
    assert carver.nbytes <= memory.nbytes


def test_layout_names_each_workers_envs():
    layout = worker_layout(12, num_workers=3, overwork=True)
    assert [layout.env_range(w) for w in range(3)] == ["0..3", "4..7", "8..11"]
    assert first_env_indices([2, 1, 3]) == [0, 2, 3]


def test_integer_arguments_accept_numpy_integers_and_reject_bools():
    from shoal.envs import CartPole

    with make(
        CartPole,
        backend="Multithreading",
        num_envs=np.int64(4),
        batch_size=np.int64(2),
        max_num_threads=np.int32(1),
        seed=np.uint64(3),
        env_kwargs={"max_episode_steps": np.int64(9)},
    ) as vecenv:
        assert vecenv.batch_size == 2 and vecenv.max_num_threads == 1
    assert worker_layout(np.int64(4), num_workers=np.int64(2), batch_size=np.int16(2), overwork=True).num_workers == 2
    for bad in ({"num_envs": True}, {"batch_size": True}, {"max_num_threads": False}, {"seed": True}):
        with pytest.raises(APIUsageError):
            make(CartPole, backend="Multithreading", **{"num_envs": 2, **bad})
