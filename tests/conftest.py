import signal

import pytest


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
