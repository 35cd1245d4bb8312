"""One vector, two threads: while one thread's call steps or waits, a second thread's send, recv or
reset is an APIUsageError that says so; it never steps the same batch again (which lost the first
step's results) nor reads rows still being written, and the first call's results stay intact."""

import threading
import time

import numpy as np
import pytest

from shoal.envs import Deep
from shoal.errors import APIUsageError
from shoal.vector import make

NUM_ENVS = 4
WORK = 10_000_000  # Deep's busy work per env step (~20 ms): the first call is still stepping when the second comes
KINDS = ["Multithreading", "Multithreading pipelined", "PufferEnv"]


def slow_vector(kind):
    if kind == "PufferEnv":
        return Deep(num_envs=NUM_ENVS, seed=1, work=WORK)
    options = {"batch_size": NUM_ENVS // 2} if kind.endswith("pipelined") else {}  # 2 buffers of 2 envs
    return make(
        Deep,
        backend="Multithreading",
        num_envs=NUM_ENVS,
        seed=1,
        max_num_threads=1,
        env_kwargs={"work": WORK},
        **options,
    )


def one_step_reference(kind):
    """The first batch's observations after one step from reset: what the first caller must get."""
    with slow_vector(kind) as vecenv:
        vecenv.async_reset(1)
        vecenv.recv()
        vecenv.send(np.ones(vecenv.agents_per_batch, np.int32))
        if kind.endswith("pipelined"):  # round-robin: the next recv is buffer 1's reset rows
            vecenv.recv()
            vecenv.send(np.ones(vecenv.agents_per_batch, np.int32))
        return vecenv.recv()[0].copy()


def race(vecenv, kind, second_call):
    """Thread A makes the call that steps or waits (a synchronous send, or a pipelined recv waiting for
    a buffer in flight) and then collects that step; while it runs, this thread makes ``second_call``.
    Returns (A's observations or error, the second call's error or None), or None if the second call
    did not come while A's call was under way (the host was too busy)."""
    pipelined = kind.endswith("pipelined")
    actions = np.ones(vecenv.agents_per_batch, np.int32)
    vecenv.async_reset(1)
    vecenv.recv()
    if pipelined:  # both buffers in flight: A's recv waits for buffer 0
        vecenv.send(actions)
        vecenv.recv()
        vecenv.send(actions)
    span = {}
    outcome = []

    def first():
        span["start"] = time.monotonic()
        try:
            observations = vecenv.recv()[0].copy() if pipelined else vecenv.send(actions)
            span["end"] = time.monotonic()  # the call that steps or waits is over
            outcome.append(observations if pipelined else vecenv.recv()[0].copy())
        except BaseException as error:
            span.setdefault("end", time.monotonic())
            outcome.append(error)

    thread = threading.Thread(target=first)
    thread.start()
    time.sleep(0.01)
    at = time.monotonic()
    try:
        second_call(vecenv)
        refusal = None
    except APIUsageError as error:
        refusal = error
    thread.join()
    if not span["start"] < at < span["end"]:
        return None
    return outcome[0], refusal


def second_send(vecenv):
    vecenv.send(np.ones(vecenv.agents_per_batch, np.int32))


def second_recv(vecenv):
    vecenv.recv()


def second_reset(vecenv):
    vecenv.async_reset(1)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("second_call", [second_send, second_recv, second_reset])
def test_a_second_thread_is_refused_while_a_call_steps(kind, second_call, time_limit):
    time_limit(120)
    reference = one_step_reference(kind)
    with slow_vector(kind) as vecenv:
        for _ in range(5):
            result = race(vecenv, kind, second_call)
            if result is not None:
                break
        else:
            pytest.skip("the host never let the second call come while the first stepped")
        first, refusal = result
        assert isinstance(refusal, APIUsageError), f"{second_call.__name__} from a second thread was accepted"
        assert "another thread" in str(refusal), refusal
        assert not isinstance(first, BaseException), first
        np.testing.assert_array_equal(first, reference)  # stepped once, its rows untouched


def test_serial_refuses_a_second_thread_while_its_envs_step(time_limit):
    time_limit(60)
    import gymnasium

    entered, release = threading.Event(), threading.Event()

    class Blocking(gymnasium.Env):
        observation_space = gymnasium.spaces.Box(-1, 1, (1,), np.float32)
        action_space = gymnasium.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            return np.zeros(1, np.float32), {}

        def step(self, action):
            entered.set()
            release.wait(30)
            return np.ones(1, np.float32), 1.0, False, False, {}

    with make(Blocking, backend="Serial", num_envs=1) as vecenv:
        vecenv.reset(0)
        thread = threading.Thread(target=vecenv.send, args=(np.zeros(1, np.int32),))
        thread.start()
        entered.wait(30)
        try:
            for call in (vecenv.recv, lambda: vecenv.send(np.zeros(1, np.int32)), vecenv.async_reset):
                with pytest.raises(APIUsageError, match="another thread"):
                    call()
        finally:
            release.set()
            thread.join()
        assert vecenv.recv()[0][0, 0] == 1.0  # the first send's step, intact
