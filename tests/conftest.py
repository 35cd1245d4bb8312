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
        def expire(signum, frame):
            raise TimeoutError(f"test exceeded its {seconds} s time limit")

        signal.signal(signal.SIGALRM, expire)
        signal.alarm(seconds)

    yield arm
    signal.alarm(0)
