"""Only the process that created a vector drives its workers.

After ``os.fork()`` the child holds a copy of the vector: the same pipes, semaphores, shared rows
and Ray handles as its parent. A step from the child would wake the parent's workers and overwrite
the parent's results, so every send/recv/reset first checks the owner: a fork epoch, bumped in each
child by ``os.register_at_fork`` (a comparison of two ints, no system call), differs in the child,
which gets an APIUsageError before anything is touched. ``close()`` and garbage collection in the
child release only the child's copies (the backends' shutdowns look at ``Owner.here``).

A forked child would also inherit multiprocessing's list of the parent's children, and at its exit
multiprocessing terminates (SIGTERM) every daemon process in that list: the parent's workers. So
the child forgets the worker processes of every live pool right after the fork.
"""

from __future__ import annotations

import multiprocessing.process
import os
import weakref

from ...errors import APIUsageError

_epoch = [0]  # forks since this module was imported, in this process's line of descent
_process_lists: weakref.WeakSet = weakref.WeakSet()  # pools whose processes a forked child forgets


def _after_fork_in_child() -> None:
    _epoch[0] += 1
    children = multiprocessing.process._children  # the set multiprocessing terminates at its exit
    for pool in list(_process_lists):
        for process in pool.processes:
            children.discard(process)


os.register_at_fork(after_in_child=_after_fork_in_child)


def forget_in_forked_children(pool) -> None:
    """Registers a pool (an object with a ``processes`` list) whose processes a forked child forgets."""
    _process_lists.add(pool)


class Owner:
    """The process a vector belongs to."""

    __slots__ = ("backend", "epoch", "pid")

    def __init__(self, backend: str):
        self.backend = backend
        self.epoch = _epoch[0]
        self.pid = os.getpid()

    @property
    def here(self) -> bool:
        return _epoch[0] == self.epoch

    def check(self) -> None:
        if _epoch[0] != self.epoch:
            raise APIUsageError(
                f"{self.backend}: this vector env was created by process {self.pid}, and this process "
                f"(pid {os.getpid()}) is a fork of it; its workers belong to their creator, so a forked child "
                "cannot step or reset it. Create a new vector env in the child (close() here only releases "
                "the child's copies)."
            )
