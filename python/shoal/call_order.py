"""The reset -> recv -> send -> recv ... call order every vectorized env enforces, and the gate that lets
one thread at a time into a vector's calls."""

from __future__ import annotations

import threading
from contextlib import contextmanager

from .errors import APIUsageError

NEEDS_RESET, READY_TO_RECV, READY_TO_SEND, CLOSED, IN_CALL = range(5)
ANY_OPEN = -1  # what enter("reset", ...) expects: reset() is legal in every open state
# IN_CALL: a send/recv/reset is under way (between enter() and leave()), so that a second thread's call
# is refused instead of stepping again or reading rows still being written.


def used_concurrently(owner: str, call: str) -> APIUsageError:
    """The error of a call made while another thread's call on the same vector is under way."""
    return APIUsageError(
        f"{owner}: {call}() while another thread's call on this vector env is under way; a vector env "
        "is used by one thread at a time (close() excepted)"
    )


class CallOrder:
    """Small state machine: each method checks the call is legal, then moves to the next state.

    A call that runs env code in this process goes through the gate: enter(call, expected) takes it
    without waiting (a second thread's call is refused), checks the call is legal and moves to IN_CALL;
    leave(state) ends IN_CALL with ``state`` (unless the vector was closed or marked for reset
    meanwhile) and lets the next call in. The gate is re-entrant, so that a signal handler run inside
    a call by the thread that holds it can tell (held_here()).
    """

    def __init__(self, owner: str):
        self.owner = owner
        self.state = NEEDS_RESET
        self.reason = ""  # why the vector needs a reset, when something other than a fresh start says so
        self._gate = threading.RLock()

    def reset(self) -> None:
        self._check_open("reset")
        self._check_idle("reset")
        self.state = READY_TO_RECV
        self.reason = ""

    def needs_reset(self, reason: str) -> None:
        """Refuses send() and recv() until the next reset, naming ``reason`` in the error."""
        if self.state != CLOSED:
            self.state = NEEDS_RESET
            self.reason = reason

    def send(self) -> None:
        if self.state == READY_TO_SEND:  # the hot case first
            self.state = READY_TO_RECV
            return
        self._check_open("send")
        self._check_idle("send")
        if self.state == NEEDS_RESET:
            raise APIUsageError(f"{self.owner}: {self.reason}call reset() or async_reset() before send()")
        raise APIUsageError(
            f"{self.owner}: send() called twice; call recv() to collect the results of the previous send() first"
        )

    def recv(self) -> None:
        if self.state == READY_TO_RECV:  # the hot case first
            self.state = READY_TO_SEND
            return
        self._check_open("recv")
        self._check_idle("recv")
        if self.state == NEEDS_RESET:
            raise APIUsageError(f"{self.owner}: {self.reason}call reset() or async_reset() before recv()")
        raise APIUsageError(f"{self.owner}: recv() called twice; call send(actions) between recv() calls")

    def enter(self, call: str, expected: int) -> None:
        """Starts ``call`` ("send", "recv" or "reset"), legal in state ``expected`` (reset:
        ANY_OPEN): takes the gate without waiting, else raises; raises the precise
        error of an illegal call; then IN_CALL. Every enter() that returns is paired with a leave()."""
        if not self._gate.acquire(False):
            raise self._busy(call)
        if self.state != expected:
            try:
                getattr(self, call)()  # raises the precise error for the current state (reset: accepts)
            except BaseException:
                self._gate.release()
                raise
        self.state = IN_CALL

    def leave(self, state: int) -> None:
        """Ends the call enter() started with ``state``, unless the vector was closed (or marked for
        reset) meanwhile, and lets the next call in."""
        if self.state == IN_CALL:
            self.state = state
        self._gate.release()

    def hold(self) -> bool:
        """Takes the gate without waiting and without a state change (False: another call is under way)."""
        return self._gate.acquire(False)

    def release(self) -> None:
        """Gives back the gate taken by hold()."""
        self._gate.release()

    def held_here(self) -> bool:
        """Whether this thread is inside a call (a signal handler run by the thread of the call)."""
        return self._gate._is_owned()

    @contextmanager
    def idle(self):
        """Waits until no call is under way and keeps the next one out for the block."""
        with self._gate:
            yield

    def failed(self) -> None:
        """Env code failed mid-call: what the buffers hold is not a result, so only reset() is legal."""
        if self.state != CLOSED:
            self.state = NEEDS_RESET

    def close(self) -> None:
        self.state = CLOSED

    @property
    def closed(self) -> bool:
        return self.state == CLOSED

    def _busy(self, call: str) -> APIUsageError:
        if self.state == CLOSED:
            return APIUsageError(f"{self.owner}: {call}() on a closed vector env")
        return used_concurrently(self.owner, call)

    def _check_idle(self, call: str) -> None:
        if self.state == IN_CALL:
            raise used_concurrently(self.owner, call)

    def _check_open(self, call: str) -> None:
        if self.state == CLOSED:
            raise APIUsageError(f"{self.owner}: {call}() on a closed vector env")
