"""Page-locking the host memory a vector's batches live in, so that the GPU copies them directly.

CUDA copies from pageable memory through a staging buffer of its own, synchronously for the host;
from page-locked memory it reads by DMA, and the copy is asynchronous. The vector's buffers are
allocated by its backend (numpy, or shared memory between processes), so they are registered with
CUDA where they are (``cudaHostRegister``) instead of being reallocated.

A copy must lie inside one registration, so each array's whole allocation (the memory its views
come from) is registered, by whole pages; allocations that share a page are registered as one range.
"""

from __future__ import annotations

import mmap
import warnings

import numpy as np

PAGE = mmap.PAGESIZE
_ALREADY_REGISTERED = 712  # cudaErrorHostMemoryAlreadyRegistered: pinned by someone else, fine


def owner(array: np.ndarray) -> np.ndarray:
    """The outermost numpy array ``array`` is a view of (the memory a backend allocated at once)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def page_span(array: np.ndarray) -> tuple[int, int]:
    """[first, end) of the pages holding ``array``'s bytes (a contiguous array)."""
    start = array.__array_interface__["data"][0]
    first = start - start % PAGE
    end = start + max(array.nbytes, 1)
    return first, -(-end // PAGE) * PAGE


def within(span: tuple[int, int], ranges: list[tuple[int, int]]) -> bool:
    return any(first <= span[0] and span[1] <= end for first, end in ranges)


class PinnedRegistry:
    """The page ranges this process registered with CUDA for one vector; ``release()`` unregisters them.

    ``idle()`` waits until no copy uses a registration (before one is replaced by a larger one)."""

    def __init__(self, cudart, idle):
        self._cudart = cudart
        self._idle = idle
        self.ranges: list[tuple[int, int]] = []  # disjoint, page-aligned
        self.failed = False

    def pin(self, array: np.ndarray) -> None:
        """Page-locks the allocation ``array`` belongs to, unless it is already; a refusal (no pinnable
        memory, a runtime that forbids it) leaves copies pageable: slower, never wrong, said once."""
        base = owner(array)
        span = page_span(base if base.flags.contiguous else array)
        if within(span, self.ranges):
            return
        overlapping = [r for r in self.ranges if r[0] < span[1] and span[0] < r[1]]
        if overlapping:
            self._idle()
            for first, _ in overlapping:
                self._cudart.cudaHostUnregister(first)
            self.ranges = [r for r in self.ranges if r not in overlapping]
            span = (min(span[0], *(r[0] for r in overlapping)), max(span[1], *(r[1] for r in overlapping)))
        error = int(self._cudart.cudaHostRegister(span[0], span[1] - span[0], 0))
        if error == 0:
            self.ranges.append(span)
        elif error != _ALREADY_REGISTERED and not self.failed:
            self.failed = True
            warnings.warn(
                f"shoal: cudaHostRegister refused {span[1] - span[0]} bytes of the vector's buffers (CUDA error "
                f"{error}); their copies to the GPU stay pageable (synchronous)",
                RuntimeWarning,
                stacklevel=3,
            )

    def release(self) -> None:
        """Unregisters every range (before the memory is freed)."""
        for first, _ in self.ranges:
            self._cudart.cudaHostUnregister(first)
        self.ranges = []
