"""Exceptions raised by shoal."""


class APIUsageError(Exception):
    """The vectorization API was called wrongly: bad arguments, shapes, dtypes or call order.

    Raised before anything is touched, with a message that names the values involved.
    """


class EnvError(RuntimeError):
    """Environment code failed while the vector stepped it (names the env and, for processes, the worker)."""


class WorkerError(EnvError):
    """A worker process died or could not be reached."""
