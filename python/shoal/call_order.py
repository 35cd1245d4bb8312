"""The reset -> recv -> send -> recv ... call order every vectorized env enforces."""

from __future__ import annotations

from .errors import APIUsageError

NEEDS_RESET, READY_TO_RECV, READY_TO_SEND, CLOSED, IN_CALL = range(5)
# IN_CALL: a send/recv/reset is under way (set by a backend while its call steps or waits, so that a
# second thread's call is refused instead of stepping again or reading rows still being written).


def used_concurrently(owner: str, call: str) -> APIUsageError:
    """The error of a call made while another thread's call on the same vector is under way."""
    return APIUsageError(
        f"{owner}: {call}() while another thread's call on this vector env is under way; a vector env "
        "is used by one thread at a time (close() excepted)"
    )


class CallOrder:
    """Small state machine: each method checks the call is legal, then moves to the next state."""

    def __init__(self, owner: str):
        self.owner = owner
        self.state = NEEDS_RESET
        self.reason = ""  # why the vector needs a reset, when something other than a fresh start says so

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

    def check_send(self) -> None:
        """Raises unless send() is legal now; does not change the state (see sent())."""
        if self.state != READY_TO_SEND:
            self.send()  # raises the precise error for the current state

    def sent(self) -> None:
        """Records a send() whose actions were accepted (after check_send())."""
        self.state = READY_TO_RECV

    def send(self) -> None:
        self._check_open("send")
        self._check_idle("send")
        if self.state == NEEDS_RESET:
            raise APIUsageError(f"{self.owner}: {self.reason}call reset() or async_reset() before send()")
        if self.state == READY_TO_RECV:
            raise APIUsageError(
                f"{self.owner}: send() called twice; call recv() to collect the results of the previous send() first"
            )
        self.state = READY_TO_RECV

    def recv(self) -> None:
        self._check_open("recv")
        self._check_idle("recv")
        if self.state == NEEDS_RESET:
            raise APIUsageError(f"{self.owner}: {self.reason}call reset() or async_reset() before recv()")
        if self.state == READY_TO_SEND:
            raise APIUsageError(f"{self.owner}: recv() called twice; call send(actions) between recv() calls")
        self.state = READY_TO_SEND

    def failed(self) -> None:
        """Env code failed mid-call: what the buffers hold is not a result, so only reset() is legal."""
        if self.state != CLOSED:
            self.state = NEEDS_RESET

    def close(self) -> None:
        self.state = CLOSED

    @property
    def closed(self) -> bool:
        return self.state == CLOSED

    def _check_idle(self, call: str) -> None:
        if self.state == IN_CALL:
            raise used_concurrently(self.owner, call)

    def _check_open(self, call: str) -> None:
        if self.state == CLOSED:
            raise APIUsageError(f"{self.owner}: {call}() on a closed vector env")
