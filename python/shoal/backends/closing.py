"""Closing envs whose close() may raise or hang: close every one, then raise one EnvError listing
what failed (a failing env never keeps the others open)."""

from __future__ import annotations

import threading
import time

from ..errors import EnvError


def close_each(envs) -> list[str]:
    """Calls close() on every ``(name, env)``; returns "name: ExceptionType: message" per failure."""
    failures = []
    for name, env in envs:
        try:
            env.close()
        except Exception as exc:
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
    return failures


class BoundedClose:
    """One env's close() running in its own daemon thread; ``wait`` reports its failure or hang."""

    def __init__(self, name: str, env):
        self.name = name
        self.failures: list[str] = []
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._run, args=(env,), name=f"shoal-close-{name}", daemon=True)
        self.thread.start()

    def _run(self, env) -> None:
        self.failures = close_each([(self.name, env)])

    def wait(self, timeout: float) -> list[str]:
        """Waits until ``timeout`` s after the close started; its failures, or that it hangs."""
        self.thread.join(max(0.0, self.started + timeout - time.monotonic()))
        if self.thread.is_alive():
            return [f"{self.name}: close() did not return within {timeout:g} s (left running in a daemon thread)"]
        return self.failures


def raise_failures(owner: str, failures: list[str]) -> None:
    if failures:
        raise EnvError(
            f"{owner}.close() closed everything, but {len(failures)} env close() call(s) failed:\n  "
            + "\n  ".join(failures)
        )
