"""What a worker backend does when send/recv/async_reset is left by an exception it did not plan for.

A KeyboardInterrupt (or a signal handler's exception, or a bug) can leave a call half done: actions
sent to some workers, results of a step still being written, a message half read. Such a step must
never be returned later as if it were fresh. So the vector refuses send() and recv() until reset()
(an APIUsageError that says why), and the reset first brings every worker back to a known state
(``_resync``) before it starts anything new. The errors the backends raise on purpose pass through:
APIUsageError (raised before anything runs) and EnvError/WorkerError (each leaves its own state).
"""

from __future__ import annotations

import functools

from ..errors import APIUsageError, EnvError


def guarded(method):
    """Decorates send/recv/async_reset of a backend that has ``_interrupted(call, exc)``."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (APIUsageError, EnvError):
            raise
        except BaseException as exc:
            self._interrupted(method.__name__, exc)
            raise

    return call


def interrupted_reason(call: str, exc: BaseException) -> str:
    """The sentence CallOrder puts before "call reset() ..." once ``call`` was interrupted by ``exc``."""
    return (
        f"{call}() was interrupted by {type(exc).__name__} with a step in flight; that step's results "
        "are discarded, so "
    )
