"""Progress of long work (a build, a download): what it does, where its cache is, how far it is.

A build that takes minutes prints its first line at once, naming the cache folder; then, on a terminal,
one status line that updates in place, and elsewhere (logs, CI) a new line every LOG_INTERVAL seconds.
Everything goes to stderr. SHOAL_QUIET=1 (or ``shoal build -q``) silences it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

QUIET_ENV = "SHOAL_QUIET"
TTY_INTERVAL = 0.5
LOG_INTERVAL = 5.0

_quiet: bool | None = None  # set_quiet()'s choice, over the environment's
_active: list[Progress] = []


def set_quiet(flag: bool | None) -> None:
    """Silences progress in this process (None: follow $SHOAL_QUIET again)."""
    global _quiet
    _quiet = flag


def quiet() -> bool:
    if _quiet is not None:
        return _quiet
    return os.environ.get(QUIET_ENV, "").strip().lower() not in ("", "0", "false", "no")


def current() -> Progress:
    """The innermost running Progress, or one that reports nothing."""
    return _active[-1] if _active else Progress("", None, silent=True)


class Progress:
    """A context manager around long work: ``phase()`` names a step (with a count to reach),
    ``advance()`` counts it."""

    def __init__(self, title: str, cache: Path | None, stream=None, silent: bool | None = None):
        self.title = title
        self.cache = cache
        self.stream = stream if stream is not None else sys.stderr
        self.silent = quiet() if silent is None else silent
        self.text, self.total, self.done, self.unit = "", None, 0, ""
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._drawn = False  # a status line is on the terminal, without its newline

    def __enter__(self) -> Progress:
        self.started = time.monotonic()
        where = f" (once; cached in {self.cache})" if self.cache is not None else ""
        self._line(f"shoal: {self.title}{where}")
        _active.append(self)
        if not self.silent:
            self._ticker = threading.Thread(target=self._tick, name="shoal-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self in _active:
            _active.remove(self)
        elapsed = time.monotonic() - self.started
        if kind is None:
            self._line(f"shoal: {self.title}: done in {elapsed:.0f} s")
        else:
            how = "interrupted" if issubclass(kind, KeyboardInterrupt) else "failed"
            self._line(f"shoal: {self.title}: {how} after {elapsed:.0f} s")

    def phase(self, text: str, total: int | None = None, unit: str = "") -> None:
        with self._lock:
            self.text, self.total, self.done, self.unit = text, total, 0, unit
        self._line(self.status())

    def advance(self, count: int = 1) -> None:
        with self._lock:
            self.done += count

    def status(self) -> str:
        with self._lock:
            text, total, done, unit = self.text, self.total, self.done, self.unit
        elapsed = time.monotonic() - self.started
        if total:
            text += f" {_amount(done, unit)}/{_amount(total, unit)} ({100 * done // total}%)"
        return f"shoal: {self.title}: {text or 'working'}, {elapsed:.0f} s"

    def _tick(self) -> None:
        interval = TTY_INTERVAL if self._tty else LOG_INTERVAL
        while not self._stop.wait(interval):
            self._line(self.status(), update=self._tty)

    def _line(self, text: str, update: bool = False) -> None:
        if self.silent:
            return
        with self._lock:
            try:
                if update:
                    self.stream.write("\r" + text + "\033[K")
                    self._drawn = True
                else:
                    self.stream.write(("\n" if self._drawn else "") + text + "\n")
                    self._drawn = False
                self.stream.flush()
            except (OSError, ValueError):  # a closed stream: progress is not worth an error
                pass


def _amount(value: int, unit: str) -> str:
    if unit == "B":
        return f"{value / 1e6:.1f} MB"
    return str(value)
