"""The shared memory of a Multiprocessing vector: one unlinked file, mapped by the caller and every worker.

multiprocessing's RawArray takes a block of an arena of its heap and gives it back through a Python
finalizer once the array is collected. A half-built vector is often collected by the garbage
collector, at a moment nobody chose: a signal handler's KeyboardInterrupt raised inside that
finalizer is ignored and leaves the block taken, and the heap keeps every arena it grew meanwhile,
each an open file descriptor, for the life of the process.

Here nothing in Python runs when the memory goes: the mmap object holds its own descriptor of the
file and closes it, with the mapping, in C once the last view of it is gone. Where workers are
spawned (not forked) the file's first descriptor stays open too, to be handed to each worker that
starts; release() closes it (the pool's shutdown, with signals held). Windows has no such files: there
the mapping is an anonymous one with a unique tag, which a spawned worker opens by its tag.
"""

from __future__ import annotations

import errno
import mmap
import os
import sys
import tempfile
import uuid
from multiprocessing import reduction


class SharedMapping:
    """``size`` bytes of zeroed memory shared with the worker processes; ``buffer`` is the mapping.

    ``keep_fd``: keep the file's descriptor for pickling into spawned workers (a forked worker
    inherits the mapping itself). Create it with signals held: the file has a name until it is unlinked.
    """

    def __init__(self, size: int, keep_fd: bool = False, fd: int = -1, tag: str | None = None):
        self.size = size
        self.fd = -1
        if sys.platform == "win32":
            self.tag = tag or f"shoal-vector-{os.getpid()}-{uuid.uuid4().hex}"
            self.buffer = mmap.mmap(-1, size, tagname=self.tag)
            return
        owned = fd < 0
        if owned:
            fd = _anonymous_file()
        try:
            if owned:
                _reserve(fd, size)
            self.buffer = mmap.mmap(fd, size)
        except BaseException:
            os.close(fd)
            raise
        if keep_fd:
            self.fd = fd
        else:
            self.fd = -1
            os.close(fd)

    def release(self) -> None:
        """Closes the descriptor kept for spawning workers; the mapping goes with its last view."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __reduce__(self):
        if sys.platform == "win32":
            return _attach_tag, (self.size, self.tag)
        if self.fd < 0:
            raise TypeError("this shared memory was made for forked workers (or released); it cannot be pickled")
        return _attach, (self.size, reduction.DupFd(self.fd))


def _attach(size: int, dupfd) -> SharedMapping:
    """A spawned worker's mapping of the caller's file."""
    return SharedMapping(size, fd=dupfd.detach())


def _attach_tag(size: int, tag: str) -> SharedMapping:
    return SharedMapping(size, tag=tag)


def _anonymous_file() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("shoal-vector", os.MFD_CLOEXEC)
    fd, name = tempfile.mkstemp(prefix="shoal-vector-")
    os.unlink(name)
    return fd


def _reserve(fd: int, size: int) -> None:
    """Gives the file its size, its pages allocated where the OS can (a full tmpfs or memory then
    fails here with MemoryError, not later with SIGBUS at the first write)."""
    if hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(fd, 0, size)
            return
        except OSError as error:
            if error.errno in (errno.ENOSPC, errno.ENOMEM, errno.EFBIG):
                raise MemoryError(f"cannot allocate {size:,} bytes of shared memory: {error.strerror}") from None
            if error.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
    os.ftruncate(fd, size)
