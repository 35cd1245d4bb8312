"""Ctrl-C and close() during a long native step (issue 13, defect 6): Multithreading stops the step in
flight at an env boundary instead of finishing it, then refuses use until reset(), after which every
result equals a fresh vector's.

The envs are Deep with the largest `work` (about 20 ms per env step), so one step of the vectors
below takes seconds; each test interrupts it after INTERRUPT_S and requires the exception well before
the step could have ended. After the reset both vectors run a short, cheap trajectory (their `work`
lowered in env memory) that crosses the 200-step time limit, so ticks, returns and tallies count too.
"""

import os
import signal
import threading
import time

import numpy as np
import pytest

from shoal import _native
from shoal.envs import Deep
from shoal.errors import APIUsageError
from shoal.vector import make

from fault_checks import close_while_recv_waits

HEAVY = {"work": 10_000_000}  # the most Deep allows: ~20 ms per env step
INTERRUPT_S = 0.2
PROMPT_S = 1.0  # every step interrupted below takes >= 2.5 s
SEED = 11
STEPS = 230  # past Deep's 200-step time limit


def interrupt_after(seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def make_cheap(env, work: int = 50) -> None:
    """Lowers the `work` (Deep's first field after the SDK's base struct) of every env of a NativeEnv."""
    for i in range(env.num_envs):
        np.frombuffer(env.env_memory(i), np.int32, count=1, offset=_native.ENV_BASE_SIZE)[0] = work


def trajectory(vecenv, seed: int = SEED) -> list:
    """reset(seed), then STEPS steps of every env with fixed actions; copies of all that recv returns."""
    rng = np.random.default_rng(5)
    rows = vecenv.agents_per_batch
    vecenv.async_reset(seed)
    history = []
    for t in range(STEPS * vecenv.num_agents // rows + 1):
        obs, rewards, terminals, truncations, infos, agent_ids, masks = vecenv.recv()
        if t == 0:
            make_cheap(vecenv.env)
        done = terminals | truncations
        finals = vecenv.final_observations[done]  # the batch's rows, as recv returned them
        history.append((obs.copy(), rewards.copy(), terminals.copy(), truncations.copy(), masks.copy(), finals, infos))
        vecenv.send(rng.integers(0, 4, rows).astype(np.int32))
    return history


def assert_same(history, expected) -> None:
    assert any(np.any(entry[3]) for entry in expected), "the run must cross the time limit"
    assert any(entry[6] for entry in expected), "the run must report episode stats"
    for t, (got, want) in enumerate(zip(history, expected, strict=True)):
        for a, b in zip(got[:6], want[:6], strict=True):
            np.testing.assert_array_equal(a, b, err_msg=f"step {t}")
        assert got[6] == want[6], f"step {t}"


def interrupted_then_fresh(kwargs, num_envs: int, interrupt) -> None:
    """Interrupts a long step with interrupt(vecenv) (which starts it), checks the refusal, then
    compares a run after reset() with the run of a vector that was never interrupted."""
    with make(Deep, backend="Multithreading", num_envs=num_envs, seed=SEED, env_kwargs=HEAVY, **kwargs) as vecenv:
        elapsed = interrupt(vecenv)
        assert elapsed < PROMPT_S, f"KeyboardInterrupt took {elapsed:.2f} s"
        actions = np.zeros(vecenv.agents_per_batch, np.int32)
        with pytest.raises(APIUsageError, match=r"interrupted by KeyboardInterrupt.*reset\(\)"):
            vecenv.send(actions)
        with pytest.raises(APIUsageError, match=r"interrupted by KeyboardInterrupt.*reset\(\)"):
            vecenv.recv()
        history = trajectory(vecenv)
    with make(Deep, backend="Multithreading", num_envs=num_envs, seed=SEED, env_kwargs=HEAVY, **kwargs) as fresh:
        assert_same(history, trajectory(fresh))


def interrupt_step(vecenv) -> float:
    """SIGINT INTERRUPT_S into a synchronous step; seconds from the step's start to the exception."""
    vecenv.reset()
    timer = interrupt_after(INTERRUPT_S)
    start = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            vecenv.step(np.zeros(vecenv.num_envs, np.int32))
    finally:
        timer.cancel()
    return time.perf_counter() - start


def interrupt_pipelined_recv(vecenv) -> float:
    """SIGINT INTERRUPT_S into a recv() that waits for buffer 0 (buffer 1 queued behind it)."""
    actions = np.zeros(vecenv.agents_per_batch, np.int32)
    vecenv.async_reset()
    for _ in range(2):
        vecenv.recv()  # the reset observations of buffers 0 and 1
        vecenv.send(actions)
    timer = interrupt_after(INTERRUPT_S)
    start = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            vecenv.recv()
    finally:
        timer.cancel()
    return time.perf_counter() - start


@pytest.mark.parametrize("threads", [0, 2])
def test_ctrl_c_stops_a_long_synchronous_step(threads, time_limit):
    """T=0 (the caller steps every env) and T=2 (caller + one pool thread): a 2.5 s step."""
    time_limit(30)
    interrupted_then_fresh({"max_num_threads": threads}, 128 * max(threads, 1), interrupt_step)


def test_ctrl_c_stops_a_long_pipelined_recv(time_limit):
    """batch_size < num_envs: buffers of 256 envs, stepped by the driver with the waiting caller's help."""
    time_limit(30)
    interrupted_then_fresh({"max_num_threads": 1, "batch_size": 256}, 512, interrupt_pipelined_recv)


def test_native_env_refuses_a_step_after_an_interrupted_one(time_limit):
    """A NativeEnv used directly (backend PufferEnv): the native vector itself refuses until reset()."""
    time_limit(30)
    with Deep(num_envs=128, num_threads=0, **HEAVY) as env:
        elapsed = interrupt_step(env)
        assert elapsed < PROMPT_S, f"KeyboardInterrupt took {elapsed:.2f} s"
        with pytest.raises(APIUsageError, match=r"interrupted.*reset\(\)"):
            env.step(np.zeros(128, np.int32))
        env.reset()
        make_cheap(env)
        env.step(np.zeros(128, np.int32))


def test_close_from_another_thread_stops_a_long_pipelined_step(time_limit):
    """close() while another thread waits in recv() for a step of seconds: both return promptly."""
    time_limit(30)
    vecenv = make(Deep, backend="Multithreading", num_envs=512, batch_size=256, max_num_threads=1, env_kwargs=HEAVY)
    vecenv.async_reset()
    for _ in range(2):
        vecenv.recv()
        vecenv.send(np.zeros(256, np.int32))
    start = time.perf_counter()
    waiter, raised = close_while_recv_waits(vecenv, INTERRUPT_S)
    elapsed = time.perf_counter() - start
    assert not waiter.is_alive()
    assert len(raised) == 1 and type(raised[0]) is APIUsageError, raised
    assert "closed (by another thread) while recv() waited" in str(raised[0])
    assert elapsed < PROMPT_S, f"close() took {elapsed:.2f} s"


@pytest.mark.parametrize("call", ["send", "recv"])
def test_a_signal_handler_may_close_the_vector_during_a_long_step(call, time_limit):
    """A handler runs inside the native step or wait (its poll runs it); one that closes the vector
    must not deadlock on the call's own lock: the call stops and reports the close, the threads go."""
    time_limit(30)
    kwargs = {"max_num_threads": 2} if call == "send" else {"max_num_threads": 1, "batch_size": 256}
    vecenv = make(Deep, backend="Multithreading", num_envs=512 if call == "recv" else 256, env_kwargs=HEAVY, **kwargs)
    actions = np.zeros(vecenv.agents_per_batch, np.int32)
    vecenv.async_reset()
    if call == "recv":
        for _ in range(2):
            vecenv.recv()
            vecenv.send(actions)
    else:
        vecenv.recv()
    previous = signal.signal(signal.SIGUSR1, lambda *_: vecenv.close())
    timer = threading.Timer(INTERRUPT_S, os.kill, (os.getpid(), signal.SIGUSR1))
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(APIUsageError, match=rf"closed .* while {call}\(\) waited"):
            if call == "send":
                vecenv.send(actions)
            else:
                vecenv.recv()
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)
    elapsed = time.perf_counter() - start
    assert elapsed < PROMPT_S, f"{call}() took {elapsed:.2f} s"
    assert vecenv.closed and vecenv.env.closed
