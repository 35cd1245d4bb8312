"""Third-party warnings (MuJoCo's deprecations, gymnasium's) kept out of shoal's progress output."""

from __future__ import annotations

import contextlib
import warnings


class _Count:
    def __init__(self):
        self.value = 0

    def __bool__(self):
        return self.value > 0

    def __str__(self):
        return str(self.value)


@contextlib.contextmanager
def third_party_warnings_kept_out():
    """Counts warnings raised inside (forked workers inherit the filter) instead of printing them."""
    count = _Count()
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # each one reaches showwarning, which counts it
        original = warnings.showwarning

        def counted(*args, **kwargs):
            count.value += 1

        warnings.showwarning = counted
        try:
            yield count
        finally:
            warnings.showwarning = original
