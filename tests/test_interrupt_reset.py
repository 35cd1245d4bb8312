"""Ctrl-C and close() during a long native reset (issue 55, item 3): Multithreading's reset polls for
a stop as its step does, stops at an env boundary, and the error names the reset, not a step.

The envs (tests/native_envs/slow_reset.c) sleep RESET_MS in each reset, so a reset of NUM_ENVS of
them on two threads takes about NUM_ENVS * RESET_MS / 2 = 2.4 s; each test stops it after
INTERRUPT_S and requires the exception (or the close) well before the reset could have ended.
"""

import os
import shlex
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import shoal
from shoal.errors import APIUsageError
from shoal.native import load_env
from shoal.vector import make

from echo_envs import SOURCE as ECHO_SOURCE

SOURCE = ECHO_SOURCE.parent / "slow_reset.c"
NUM_ENVS = 48
RESET_MS = 100
INTERRUPT_S = 0.2
PROMPT_S = 0.8  # a whole reset takes >= 2.4 s


@pytest.fixture(scope="module")
def slow_reset(tmp_path_factory):
    library = tmp_path_factory.mktemp("slow_reset") / "slow_reset.so"
    compiler = shlex.split(os.environ.get("CC", "cc"))
    subprocess.run(
        [*compiler, "-O2", "-shared", "-fPIC", f"-I{shoal.get_include()}", str(SOURCE), "-o", str(library)],
        check=True,
        capture_output=True,
    )
    return load_env(library, "slow_reset", "SlowReset")


def slow_vector(env_class, **kwargs):
    return make(
        env_class,
        backend="Multithreading",
        num_envs=NUM_ENVS,
        max_num_threads=2,
        env_kwargs={"reset_ms": RESET_MS},
        **kwargs,
    )


def test_ctrl_c_stops_a_long_reset_and_the_error_names_the_reset(slow_reset):
    with slow_vector(slow_reset) as vecenv:
        timer = threading.Timer(INTERRUPT_S, os.kill, (os.getpid(), signal.SIGINT))
        start = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            vecenv.async_reset(3)
        elapsed = time.monotonic() - start - INTERRUPT_S
        timer.join()
        assert elapsed < PROMPT_S, f"KeyboardInterrupt came {elapsed:.2f} s after Ctrl-C"
        with pytest.raises(APIUsageError, match=r"async_reset\(\) was interrupted by KeyboardInterrupt") as refused:
            vecenv.send(np.zeros(NUM_ENVS, np.int32))
        assert "step" not in str(refused.value).split("reset()")[0], str(refused.value)
        # the envs refuse steps until a reset that runs to the end
        with pytest.raises(APIUsageError, match=r"reset of this vector was interrupted"):
            vecenv.env.step(np.zeros(NUM_ENVS, np.int32))
        for i in range(NUM_ENVS):  # a quick full reset: the envs' sleep lowered in env memory
            np.frombuffer(vecenv.env.env_memory(i), np.int32, count=1, offset=shoal._native.ENV_BASE_SIZE)[0] = 0
        vecenv.async_reset(3)
        obs, *_ = vecenv.recv()
        assert np.all(obs[:, 0] >= 1)
        vecenv.send(np.zeros(NUM_ENVS, np.int32))
        vecenv.recv()


def test_close_from_another_thread_stops_a_long_reset(slow_reset):
    vecenv = slow_vector(slow_reset)
    raised = []

    def resetting():
        try:
            vecenv.async_reset(3)
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=resetting)
    thread.start()
    time.sleep(INTERRUPT_S)
    start = time.monotonic()
    vecenv.close()
    closed_after = time.monotonic() - start
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert closed_after < PROMPT_S, f"close() waited {closed_after:.2f} s for the reset"
    assert len(raised) == 1 and isinstance(raised[0], APIUsageError), raised
    assert "closed" in str(raised[0]) and "reset" in str(raised[0]), str(raised[0])
