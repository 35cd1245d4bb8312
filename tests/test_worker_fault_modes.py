"""Faults under every batching mode (issue 26): a SIGKILLed worker becomes a WorkerError (or a restart
under ``on_worker_failure="restart"``) within 2 s and a hung one within ``timeout`` + 0.5 s, on
Multiprocessing and Ray, with ``sync_traj`` true and false and batches of one worker, half the
workers and all of them, while the other workers keep answering.

Each case runs 4 workers of one HangOnAction env each (observation = steps since reset) and keeps
stepping whatever batch comes back. Worker 3 is the victim: SIGKILLed, or sent the action that hangs
its env. The failure must be reported within the bound even where batches of the other workers keep
coming (one worker per batch, or aligned half blocks, without sync_traj): the caller never sleeps
there. The other envs' step counters never go back, so they were not touched.

"""

import os
import signal
import time

import numpy as np
import psutil
import pytest

from shoal.backends.caller_side.ray_session import AUTH_MODE, restore_auth_mode
from shoal.errors import WorkerError
from shoal.vector import make

from envs_for_tests import HangOnAction

NUM_WORKERS, VICTIM = 4, 3
TIMEOUT_S = 1.0
DEATH_BOUND_S = 2.0  # a SIGKILLed worker
HANG_BOUND_S = TIMEOUT_S + 0.5  # a hung one
# Under restart the replacement is started and reset before its rows come back. A Ray actor past Ray's
# warm pool is a new Python process importing Ray, beside the integration tier's other worker.
REPLACEMENT_S = {"Multiprocessing": 1.0, "Ray": 6.0}
# (batch_size, sync_traj): one worker's worth, half, full (sync_traj means nothing for a full batch).
MODES = [(1, False), (1, True), (2, False), (2, True), (4, False)]
WARMUP_RECVS = 12


@pytest.fixture(scope="module")
def ray_cluster():
    """This module's own 2-CPU local Ray instance, started once for every Ray case.

    Starting it turns Ray's token authentication on for this whole process, and ray.shutdown()
    leaves it on; the fixture undoes it as shoal does for an instance it started
    (backends/caller_side/ray_session.py), or a cluster without authentication joined later in this process
    (tests/test_ray.py's) would cancel every actor."""
    ray = pytest.importorskip("ray")
    mode_before = os.environ.get(AUTH_MODE)
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield
    ray.shutdown()
    if mode_before is None:
        restore_auth_mode()


def cases():
    for backend in ("Multiprocessing", "Ray"):
        for fault in ("SIGKILL", "hang"):
            for batch_size, sync_traj in MODES:
                policies = ["raise", "restart"]
                if backend == "Ray" and (batch_size, sync_traj) != (1, False):
                    policies = ["raise"]  # Ray's restarts are shown in the mode where nothing waits
                for policy in policies:
                    yield pytest.param(
                        backend, fault, batch_size, sync_traj, policy,
                        id=f"{backend}-{fault}-batch{batch_size}-{'sync' if sync_traj else 'async'}-{policy}",
                        marks=pytest.mark.integration if backend == "Ray" else (),  # starts a Ray cluster
                    )  # fmt: skip


@pytest.mark.parametrize(("backend", "fault", "batch_size", "sync_traj", "policy"), list(cases()))
def test_fault_is_reported_in_every_batching_mode(backend, fault, batch_size, sync_traj, policy, request, time_limit):
    if backend == "Ray":
        request.getfixturevalue("ray_cluster")
    time_limit(60)
    vecenv = make(
        HangOnAction,
        backend=backend,
        num_envs=NUM_WORKERS,
        num_workers=NUM_WORKERS,
        batch_size=batch_size,
        sync_traj=sync_traj,
        overwork=True,
        timeout=TIMEOUT_S if fault == "hang" else None,
        on_worker_failure=policy,
    )
    pids = list(vecenv.worker_pids)
    bound = DEATH_BOUND_S if fault == "SIGKILL" else HANG_BOUND_S
    if policy == "restart":
        bound += REPLACEMENT_S[backend]
    counters = np.zeros(NUM_WORKERS)  # each env's last observed step count
    others_answered = 0  # batches without the victim after the fault
    faulted_at = restarted = raised = None
    try:
        vecenv.async_reset()
        for recvs in range(10**7):
            observations, _, _, _, infos, ids, _ = vecenv.recv()
            now = time.monotonic()
            envs = list(ids)
            if any("worker_restart" in info for info in infos):
                restarted = [info["worker_restart"] for info in infos if "worker_restart" in info], now
                break
            for row, env in enumerate(envs):
                assert observations[row, 0] >= counters[env] or env == VICTIM, "another env was reset"
                counters[env] = observations[row, 0]
            actions = np.zeros(len(envs), np.int32)
            if faulted_at is None and recvs >= WARMUP_RECVS:
                if fault == "SIGKILL":
                    os.kill(pids[VICTIM], signal.SIGKILL)
                    faulted_at = time.monotonic()
                elif VICTIM in envs:
                    actions[envs.index(VICTIM)] = 1
                    faulted_at = time.monotonic()  # the hanging step is dispatched just below
            elif faulted_at is not None:
                others_answered += VICTIM not in envs
                assert now - faulted_at < bound + 3.0, f"no failure reported {now - faulted_at:.1f} s after the fault"
            vecenv.send(actions)
    except WorkerError as exc:
        raised = exc, time.monotonic()
    finally:
        vecenv.close()
    assert faulted_at is not None
    if policy == "raise":
        assert raised is not None and restarted is None
        error, at = raised
        assert at - faulted_at < bound, (at - faulted_at, str(error))
        message = str(error)
        assert f"{VICTIM} (pid {pids[VICTIM]}" in message and "envs 3..3" in message, message
        if fault == "hang":
            reported = float(message.split("still busy ")[1].split(" s")[0])
            assert TIMEOUT_S <= reported <= at - faulted_at + 0.05, message
        else:
            assert "killed by signal SIGKILL" in message or "died" in message, message
    else:
        assert raised is None and restarted is not None
        reports, at = restarted
        assert at - faulted_at < bound, at - faulted_at
        assert [r["worker"] for r in reports] == [VICTIM], reports
    # Batches of the other workers kept coming while a hang was being found out (it takes the timeout).
    # A death may be noticed before the others' next batch is ready, under either policy (a restart
    # replaces the worker inside that recv), and reporting it at once is right then.
    if batch_size < NUM_WORKERS and not sync_traj and fault == "hang":
        assert others_answered > 0
    if backend == "Multiprocessing":
        _, alive = psutil.wait_procs([psutil.Process(p) for p in pids if psutil.pid_exists(p)], timeout=5)
        assert not alive
