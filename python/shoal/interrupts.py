"""What a worker backend does when send/recv/async_reset is left by an exception it did not plan for.

A KeyboardInterrupt (or a signal handler's exception, or a bug) can leave a call half done: actions
sent to some workers, results of a step still being written, a message half read. Such a step must
never be returned later as if it were fresh. So the vector refuses send() and recv() until reset()
(an APIUsageError that says why), and the reset first brings every worker back to a known state
(``_resync``) before it starts anything new. The errors the backends raise on purpose pass through:
APIUsageError (raised before anything runs) and EnvError/WorkerError (each leaves its own state).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import signal
import sys
import threading

from .errors import APIUsageError, EnvError

# Errors raised on purpose: raised before anything ran, or leaving a state of their own.
_PLANNED = (APIUsageError, EnvError)
_VARIADIC = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def guarded(method):
    """Decorates send/recv/async_reset of a backend that has ``_interrupted(call, exc)``.

    send(actions) and recv() get wrappers of their own arity: a ``*args, **kwargs`` wrapper builds a
    tuple and a dict on every call of the hot path.
    """
    name = method.__name__
    code = method.__code__
    fixed_arity = not (method.__defaults__ or code.co_kwonlyargcount or code.co_flags & _VARIADIC)

    if fixed_arity and code.co_argcount == 1:

        def call(self):
            try:
                return method(self)
            except _PLANNED:
                raise
            except BaseException as exc:
                self._interrupted(name, exc)
                raise

    elif fixed_arity and code.co_argcount == 2:

        def call(self, arg):
            try:
                return method(self, arg)
            except _PLANNED:
                raise
            except BaseException as exc:
                self._interrupted(name, exc)
                raise

    else:

        def call(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except _PLANNED:
                raise
            except BaseException as exc:
                self._interrupted(name, exc)
                raise

    return functools.wraps(method)(call)


def interrupted_reason(call: str, exc: BaseException) -> str:
    """The sentence CallOrder puts before "call reset() ..." once ``call`` was interrupted by ``exc``."""
    if "reset" in call:
        return f"{call}() was interrupted by {type(exc).__name__} before every env was reset, so "
    return (
        f"{call}() was interrupted by {type(exc).__name__} with a step in flight; that step's results "
        "are discarded, so "
    )


@contextlib.contextmanager
def signals_held():
    """Holds back every signal with a Python handler (Ctrl-C's, and any other a program installed,
    such as a SIGALRM or SIGTERM handler that raises) until the block is done, then runs the handlers
    of those that came, each once.

    For the steps that must not be cut in two: starting a worker process and recording it (a process
    started but not recorded would outlive the vector), tearing a half-built vector down, and close().
    Python runs signal handlers in the main thread only, so elsewhere nothing needs holding.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: dict[int, object] = {}  # signal -> the handler it had
    caught: list[int] = []  # the signals that came, each once
    # A held handler runs with the frame that runs it, not the one the signal came in: an exception it
    # raises keeps its frames alive with the traceback, and the frame the signal came in may hold
    # what the block was making (views of a vector's shared memory) until the garbage collector comes.

    def defer(signum, frame):
        if signum not in caught:
            caught.append(signum)

    try:
        for signum in signal.valid_signals():
            handler = signal.getsignal(signum)
            if callable(handler):
                held[signum] = handler  # recorded first: a signal right after the swap finds it here
                signal.signal(signum, defer)
        yield
    finally:
        error = _restore(held)
        for signum in caught:
            try:
                held[signum](signum, sys._getframe())
            except BaseException as exc:  # noqa: B036 - raised once every handler ran
                error = error or exc
        if error is not None:
            raise error


def _restore(held: dict) -> BaseException | None:
    """Puts every held handler back, even if one of them (restored already) raises meanwhile; returns
    what it raised."""
    error = None
    pending = list(held.items())
    while pending:
        try:
            while pending:
                signum, handler = pending[-1]
                signal.signal(signum, handler)
                pending.pop()
        except BaseException as exc:  # noqa: B036 - a restored handler ran and raised
            error = error or exc
    return error
