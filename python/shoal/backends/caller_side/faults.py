"""Worker faults that Multiprocessing and Ray describe and bound the same way: the wait limits of
creating and closing a worker, and the sentences a WorkerError gives for a dead, late or stuck one.

Creation. A worker (a process or an actor) has ``creation_timeout(timeout)`` seconds from its start
to build its envs and report ready, at its first creation and as a replacement: ``START_TIMEOUT_S``
without a ``timeout``; with one, the timeout but at least ``MIN_START_S`` for a process and
``MIN_ACTOR_START_S`` for a Ray actor, because a start (an interpreter and imports under spawn, the
env constructors) takes longer than a step, and a vector with ``timeout=0.01`` must still be
creatable. An actor's floor is higher: Ray starts a new Python process per actor beyond the few it
keeps warm, and that process imports Ray before shoal, so four actors on a busy 2-core machine took
longer than 5 s. A worker that misses its limit is killed.

Close. Workers get ``CLOSE_TIMEOUT_S`` to close their envs and exit, then they are killed. A worker
known to be stuck (past its deadline, or in flight when a failure closes the vector) is killed at
once instead, so that a deadline's WorkerError is not delayed by the close that follows it.
"""

from __future__ import annotations

import signal

# Without a timeout: how long a worker may take to start and build its envs (a cluster without free
# CPUs leaves an actor pending forever; an env constructor may block).
START_TIMEOUT_S = 60.0
# With a timeout: the least a worker process's creation is given, and a Ray actor's.
MIN_START_S = 5.0
MIN_ACTOR_START_S = 20.0
# close(): how long workers get to close their envs before they are killed.
CLOSE_TIMEOUT_S = 2.0
# How often the caller looks at workers it is not waiting for (dead? past the deadline?) while other
# workers keep answering, and the longest it sleeps between looks at those it waits for.
LIVENESS_CHECK_S = 0.1


def creation_timeout(timeout: float | None, floor: float = MIN_START_S) -> float:
    """Seconds a worker has from its start to report that its envs are built (``floor``: the least,
    with a timeout)."""
    return START_TIMEOUT_S if timeout is None else max(timeout, floor)


MISSED_DEADLINE = "missed its deadline"


def deadline_reason(elapsed: float, timeout: float) -> str:
    return f"{MISSED_DEADLINE}: still busy {elapsed:.2f} s after its command was sent (timeout={timeout:g} s)"


def creation_reason(elapsed: float, limit: float) -> str:
    return f"had not built its envs {elapsed:.2f} s after its start (creation limit {limit:g} s) and was killed"


def exit_reason(exitcode: int) -> str:
    """What a process's exit code says (negative: the signal that killed it)."""
    if exitcode < 0:
        try:
            return f"was killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with code {exitcode}"
