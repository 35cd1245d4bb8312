"""A forked Multiprocessing worker does not finalize the caller's uncollected garbage: a finalizer that
talks to a library's threads or sockets (Ray's, gRPC's: a fork does not carry them over) crashed a
worker with SIGSEGV in CI's soak run, right after the Ray cluster soaks in the same process."""

import gc
import os

import numpy as np
import pytest

from shoal.vector import make

from envs_for_tests import make_cartpole


class Finalized:
    """Part of a reference cycle; its finalizer writes the pid of the process that runs it."""

    def __init__(self, path):
        self.path = path
        self.me = self

    def __del__(self):
        with open(self.path, "a") as log:
            log.write(f"{os.getpid()}\n")


CALLER = os.getpid()


def collecting_cartpole():
    if os.getpid() != CALLER:  # make() also builds one env in the caller, to read its spaces
        gc.collect()  # the worker's collection, as any allocation-heavy env code would trigger
    return make_cartpole()


@pytest.fixture(autouse=True)
def bounded(time_limit):
    time_limit(60)


def test_a_forked_worker_leaves_the_callers_garbage_alone(tmp_path):
    log = tmp_path / "finalized_in"
    gc.disable()  # the cycle stays uncollected until the workers have been forked
    try:
        Finalized(log)
        with make(
            collecting_cartpole,
            backend="Multiprocessing",
            num_envs=2,
            num_workers=2,
            overwork=True,
            start_method="fork",
        ) as vecenv:
            vecenv.reset()
            vecenv.step(np.zeros(2, np.int32))
    finally:
        gc.enable()
    gc.collect()
    pids = [int(line) for line in log.read_text().split()]
    assert pids == [os.getpid()], f"finalized in {pids}; the caller is {os.getpid()}"
