"""What a vector may leave behind in this process: child processes, threads, file descriptors and
/dev/shm entries (tests/test_worker_lifecycle.py, tests/test_interrupt_discipline.py)."""

import contextlib
import gc
import multiprocessing.heap
import os
import time

import psutil


def free_heap_arenas() -> set[str]:
    """Files of the arenas multiprocessing's heap keeps for reuse, every block of them free or waiting
    to be freed (it keeps small ones once made, and frees a block released while its lock is held at
    its next allocation; they are multiprocessing's cache, reused by the next vector, not a leak)."""
    heap = multiprocessing.heap.BufferWrapper._heap
    pending = set(heap._pending_free_blocks)
    return {
        os.readlink(f"/proc/self/fd/{a.fd}")
        for a in heap._arenas
        if all((a, start, stop) in pending for start, stop in heap._allocated_blocks.get(a, ()))
    }


def resources() -> dict:
    """Child processes, threads, open file descriptors (but the heap's free arenas) and /dev/shm entries
    named after this process."""
    pid, cached = str(os.getpid()), free_heap_arenas()
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the fd of listdir itself is gone by now
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target not in cached:
                fds.append(target)
    shm = sorted(name for name in os.listdir("/dev/shm") if pid in name)
    me = psutil.Process()
    return {"children": len(me.children(recursive=True)), "threads": me.num_threads(), "fds": sorted(fds), "shm": shm}


def settled(baseline: dict, seconds: float = 10) -> dict:
    """The resources once they equal ``baseline`` (garbage collected meanwhile), or after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        gc.collect()
        now = resources()
        if now == baseline or time.monotonic() > deadline:
            return now
        time.sleep(0.05)
