"""Assertions shared by the fault tests of several backends (tests/test_reliability_faults.py, test_ray.py)."""

import threading
import time

import numpy as np
import pytest

from shoal.errors import APIUsageError, EnvError

from envs_for_tests import BAD_OUTPUTS


def step_until_bad_outputs(vecenv) -> list[EnvError]:
    """For each entry of BAD_OUTPUTS: reset, step once (fine), step again (malformed); the EnvErrors."""
    errors = []
    actions = np.zeros(vecenv.num_envs, np.int32)
    for _ in BAD_OUTPUTS:
        vecenv.reset()
        vecenv.step(actions)
        with pytest.raises(EnvError) as info:
            vecenv.step(actions)
        errors.append(info.value)
        with pytest.raises(APIUsageError, match="reset"):
            vecenv.step(actions)
    return errors


def check_bad_output_errors(errors: list, where: str) -> list[str]:
    """Each error names the env (and worker) and the malformed output; returns what they say about it."""
    said = []
    for error, (_, _, expected) in zip(errors, BAD_OUTPUTS):
        message = str(error)
        assert type(error) is EnvError, message
        assert message.startswith(f"{where} raised EnvError: step() returned {expected}"), message
        said.append(message.split(" raised ", 1)[1].split("\n", 1)[0])
    return said


def close_while_recv_waits(vecenv, delay: float) -> tuple[threading.Thread, list]:
    """Close ``vecenv`` from this thread ``delay`` seconds after another thread entered recv(); returns
    that thread (joined for up to 10 s) and whatever it raised."""
    raised = []

    def wait():
        try:
            vecenv.recv()
        except BaseException as exc:  # noqa: B036 - the caller asserts on whatever the thread got
            raised.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(delay)
    vecenv.close()
    waiter.join(10)
    return waiter, raised
