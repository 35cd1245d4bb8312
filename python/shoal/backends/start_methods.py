"""How Multiprocessing may start its worker processes, known without importing that backend."""

from __future__ import annotations

import multiprocessing

from ..errors import APIUsageError

START_METHODS = ("fork", "spawn", "forkserver")


def check_start_method(method) -> str | None:
    """None (the backend's default) or a start method this platform offers."""
    if method is None:
        return None
    available = [m for m in START_METHODS if m in multiprocessing.get_all_start_methods()]
    if method not in available:
        raise APIUsageError(f"start_method must be one of {available} on this platform, got {method!r}")
    return method
