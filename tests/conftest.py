import faulthandler
import os
import signal

import pytest


def pytest_collection_modifyitems(config, items):
    """Slow soak tests run in CI (SHOAL_RUN_SLOW=1, set by .ci/run) and locally when asked for."""
    if os.environ.get("SHOAL_RUN_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow soak: set SHOAL_RUN_SLOW=1 to run (CI does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def time_limit():
    """Fails the test (instead of hanging CI) if it runs longer than the given seconds."""

    def arm(seconds: int):
        if not hasattr(signal, "SIGALRM"):  # Windows: no alarm; a hang ends the run, with tracebacks
            faulthandler.dump_traceback_later(seconds, exit=True)
            return

        def expire(signum, frame):
            raise TimeoutError(f"test exceeded its {seconds} s time limit")

        signal.signal(signal.SIGALRM, expire)
        signal.alarm(seconds)

    yield arm
    if hasattr(signal, "SIGALRM"):
        signal.alarm(0)
    else:
        faulthandler.cancel_dump_traceback_later()
