"""Multithreading with batch_size < num_envs: buffers stepped by a native driver thread while the
caller works. Per-env trajectories must equal Serial's; send returns at once; close is clean."""

import os
import threading
import time

import numpy as np
import psutil
import pytest

from shoal import _native
from shoal.envs import BUNDLED, CartPole, Deep
from shoal.errors import APIUsageError
from shoal.vector import make

NUM_ENVS = 8
ROUNDS = 300
KWARGS = {"deep": {"work": 40}}


def per_env_actions(vecenv_single_space, agents, rounds, seed=3):
    rng = np.random.default_rng(seed)
    return rng.integers(0, vecenv_single_space.n, size=(rounds + 1, NUM_ENVS * agents)).astype(np.int32)


def serial_reference(name, rounds):
    """Serial: every env stepped each round with actions[t]; arrays per round."""
    cls = BUNDLED[name]
    with make(cls, backend="Serial", num_envs=NUM_ENVS, seed=4, env_kwargs=KWARGS.get(name, {})) as vecenv:
        agents = vecenv.agents_per_batch // NUM_ENVS
        actions = per_env_actions(vecenv.single_action_space, agents, rounds)
        obs, _ = vecenv.reset()
        history = [dict(obs=obs.copy(), masks=vecenv.buf.masks.copy())]
        for t in range(rounds):
            obs, rewards, terminals, truncations, _ = vecenv.step(actions[t])
            history.append(
                dict(
                    obs=obs.copy(),
                    rewards=rewards.copy(),
                    terminals=terminals.copy(),
                    truncations=truncations.copy(),
                    masks=vecenv.buf.masks.copy(),
                    finals=vecenv.buf.final_observations.copy(),
                )
            )
        return agents, actions, history


@pytest.fixture(scope="module", params=["cartpole", "grid", "deep"])
def reference(request):
    return request.param, *serial_reference(request.param, ROUNDS)


@pytest.mark.parametrize("num_buffers", [2, 4])
@pytest.mark.parametrize("threads", [0, 1, 2])
def test_per_env_trajectories_match_serial(reference, num_buffers, threads, time_limit):
    time_limit(120)
    name, agents, actions, history = reference
    batch = NUM_ENVS // num_buffers
    rows = batch * agents
    with make(
        BUNDLED[name],
        backend="Multithreading",
        num_envs=NUM_ENVS,
        batch_size=batch,
        seed=4,
        max_num_threads=threads,
        env_kwargs=KWARGS.get(name, {}),
    ) as vecenv:
        assert vecenv.agents_per_batch == rows and vecenv.num_buffers == num_buffers
        vecenv.async_reset()
        steps_done = [0] * num_buffers
        ended = 0
        for i in range(ROUNDS * num_buffers):
            obs, rewards, terminals, truncations, infos, agent_ids, masks = vecenv.recv()
            k = int(agent_ids[0]) // rows
            assert k == i % num_buffers, "buffers must come back round-robin"
            np.testing.assert_array_equal(agent_ids, np.arange(k * rows, (k + 1) * rows))
            t = steps_done[k]
            expected = history[t]
            sl = slice(k * rows, (k + 1) * rows)
            np.testing.assert_array_equal(obs, expected["obs"][sl], err_msg=f"obs, buffer {k}, step {t}")
            np.testing.assert_array_equal(masks, expected["masks"][sl], err_msg=f"masks, buffer {k}, step {t}")
            if t:
                np.testing.assert_array_equal(rewards, expected["rewards"][sl])
                np.testing.assert_array_equal(terminals, expected["terminals"][sl])
                np.testing.assert_array_equal(truncations, expected["truncations"][sl])
                done = terminals | truncations
                ended += int(done.sum())
                np.testing.assert_array_equal(vecenv.buf.final_observations[sl][done], expected["finals"][sl][done])
            vecenv.send(actions[t][sl])
            steps_done[k] += 1
        assert ended > 0, "the rollout must cross episode boundaries"


@pytest.mark.parametrize("threads", [0, 2])
def test_chunks_the_caller_helps_with_keep_serial_trajectories(reference, threads, time_limit):
    """help_step() (the caller stepping a chunk of the buffer in flight while it waits for a GPU) changes
    who steps an env, never what it steps."""
    time_limit(120)
    name, agents, actions, history = reference
    rows = NUM_ENVS // 2 * agents
    helped = 0
    with make(
        BUNDLED[name],
        backend="Multithreading",
        num_envs=NUM_ENVS,
        batch_size=NUM_ENVS // 2,
        seed=4,
        max_num_threads=threads,
        env_kwargs=KWARGS.get(name, {}),
    ) as vecenv:
        vecenv.async_reset()
        assert not vecenv.help_step()  # nothing in flight after a reset: nothing to step
        for i in range(ROUNDS * 2):
            obs = vecenv.recv()[0]
            k, t = i % 2, i // 2
            np.testing.assert_array_equal(obs, history[t]["obs"][k * rows : (k + 1) * rows], err_msg=f"step {t}")
            while vecenv.help_step():  # the other buffer, submitted last round, may still be stepping
                helped += 1
            vecenv.send(actions[t][k * rows : (k + 1) * rows])
            if i % 3 == 0:
                while vecenv.help_step():  # this buffer, just submitted
                    helped += 1
    assert helped > 0


def test_send_returns_while_the_driver_steps_and_the_gil_is_free(time_limit):
    time_limit(60)
    # A buffer step long enough that the caller losing its core for a few time slices (a loaded
    # machine) stays small beside it.
    with make(
        Deep, backend="Multithreading", num_envs=1024, batch_size=512, max_num_threads=1, env_kwargs={"work": 60000}
    ) as vecenv:
        vecenv.async_reset()
        vecenv.recv()
        ticks = []
        spinner = threading.Thread(
            target=lambda: [ticks.append(time.perf_counter()) or time.sleep(0) for _ in range(20000)]
        )
        start = time.perf_counter()
        vecenv.send(np.zeros(512, np.int32))
        sent = time.perf_counter() - start
        spinner.start()
        vecenv.recv()  # buffer 1, from the reset: no wait
        vecenv.send(np.zeros(512, np.int32))
        wait_start = time.perf_counter()
        vecenv.recv()  # buffer 0: waits for its step
        wait_end = time.perf_counter()
        spinner.join()
    # send() returns long before the step it queued is done (a bound relative to that step: another
    # process on the machine can take the CPU for a few ms at any moment).
    assert 0.003 < wait_end - start and sent < 0.25 * (wait_end - start), (sent, wait_end - start)
    # Another Python thread made progress while this one waited in recv (GIL released).
    assert sum(1 for t in ticks if wait_start < t < wait_end) > 20


def test_waiting_caller_steps_envs_instead_of_sleeping(time_limit):
    time_limit(60)
    # One buffer step is ~20 ms of env work; the caller waits for it right away, so it should step
    # chunks of it itself while it waits (counted by the pool, whatever else this machine runs), not sleep.
    with make(
        Deep, backend="Multithreading", num_envs=1024, batch_size=512, max_num_threads=1, env_kwargs={"work": 20000}
    ) as vecenv:
        vecenv.async_reset()
        for _ in range(2):  # buffer 0, then buffer 1, each handed back to the driver at once
            vecenv.recv()
            vecenv.send(np.zeros(512, np.int32))
        by_caller = []
        for _ in range(10):
            before = vecenv.pool_stats()["chunks_by_caller"]
            vecenv.recv()
            by_caller.append(vecenv.pool_stats()["chunks_by_caller"] - before)
            vecenv.send(np.zeros(512, np.int32))
    # A wait may find its buffer done already: the worker ran alone while the driver was away, or while
    # another process held the caller's core; not every one of ten.
    assert max(by_caller) >= 1, f"chunks the caller stepped in each wait: {by_caller}"


def test_close_with_buffers_in_flight_is_clean(time_limit):
    time_limit(60)
    process = psutil.Process()
    baseline = process.num_threads()
    for _ in range(20):
        vecenv = make(
            Deep, backend="Multithreading", num_envs=64, batch_size=16, max_num_threads=2, env_kwargs={"work": 5000}
        )
        vecenv.async_reset()
        for _ in range(4):
            vecenv.recv()
            vecenv.send(np.zeros(16, np.int32))
        vecenv.close()
        vecenv.close()
    assert process.num_threads() == baseline


def test_async_reset_resets_every_buffer():
    with (
        make(CartPole, backend="Multithreading", num_envs=8, batch_size=4, seed=9) as vecenv,
        make(CartPole, backend="Serial", num_envs=8, seed=9) as serial,
    ):
        reset_obs, _ = serial.reset()
        vecenv.async_reset()
        for _ in range(6):
            vecenv.recv()
            vecenv.send(np.ones(4, np.int32))
        vecenv.async_reset()  # with a buffer in flight: drained, then everything reset
        first = vecenv.recv()[0].copy()
        vecenv.send(np.ones(4, np.int32))
        second = vecenv.recv()[0]
        np.testing.assert_array_equal(first, reset_obs[:4])
        np.testing.assert_array_equal(second, reset_obs[4:])


@pytest.mark.parametrize("batch_size", [3, 0, 9, 2.5])
def test_batch_size_must_divide_num_envs(batch_size):
    with pytest.raises(APIUsageError, match="batch_size"):
        make(CartPole, backend="Multithreading", num_envs=8, batch_size=batch_size)


def test_bad_actions_rejected_and_nothing_queued():
    with make(CartPole, backend="Multithreading", num_envs=8, batch_size=4) as vecenv:
        vecenv.async_reset()
        vecenv.recv()
        for bad in (np.full(4, 7, np.int32), np.zeros(8, np.int32), np.zeros(4, np.float32)):
            with pytest.raises(APIUsageError):
                vecenv.send(bad)
        vecenv.send(np.arange(4, dtype=np.int64) % 2)  # converted, accepted
        ids = vecenv.recv()[5]
        np.testing.assert_array_equal(ids, np.arange(4, 8))


def test_thread_count_change_drains_first():
    """Changing the thread count with a buffer in flight loses no step: every buffer still returns
    exactly the Serial trajectory of its envs."""
    with make(CartPole, backend="Serial", num_envs=64, seed=2) as serial:
        history = [serial.reset()[0].copy()]
        for _ in range(26):
            history.append(serial.step(np.zeros(64, np.int32))[0].copy())
    thread_counts = [0, 3, 1, 2]
    with make(CartPole, backend="Multithreading", num_envs=64, batch_size=32, max_num_threads=2, seed=2) as vecenv:
        vecenv.async_reset()
        for i in range(51):
            obs, *_, agent_ids, _ = vecenv.recv()
            k, step = int(agent_ids[0]) // 32, i // 2
            np.testing.assert_array_equal(obs, history[step][k * 32 : (k + 1) * 32], err_msg=f"round {i}")
            vecenv.send(np.zeros(32, np.int32))
            if i % 10 == 5:
                vecenv.max_num_threads = thread_counts[i // 10 % 4]
        assert vecenv.max_num_threads == thread_counts[45 // 10 % 4]


def test_pipelined_pool_keeps_a_cpu_for_the_vectors_caller():
    """Pipelined, three kinds of thread step envs: the driver (the pool's caller), the pool's workers
    and the vector's caller, which steps chunks of the buffer in flight whenever it waits. Each is busy
    for the whole round, so the pool lets allowed CPUs - 2 workers spin (the driver and the caller
    have the other two); the synchronous mode, whose caller is the pool's caller, lets CPUs - 1."""
    cpus = len(os.sched_getaffinity(0))
    threads = cpus + 1  # the caller (or driver) plus one worker per CPU: the thread count caps nothing
    with (
        make(CartPole, backend="Multithreading", num_envs=64, batch_size=32, max_num_threads=threads) as piped,
        make(CartPole, backend="Multithreading", num_envs=64, max_num_threads=threads) as sync,
        make(CartPole, backend="Multithreading", num_envs=64, batch_size=32) as default,
    ):
        assert sync.pool_stats()["active_limit"] == cpus - 1
        assert piped.pool_stats()["active_limit"] == max(0, cpus - 2)
        piped.schedule = "dynamic"  # new pool options keep the limit
        assert piped.schedule == "dynamic"
        assert piped.pool_stats()["active_limit"] == max(0, cpus - 2)
        assert default.max_num_threads == max(1, _native.physical_cores() - 1)
