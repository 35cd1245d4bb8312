"""Carving consecutive, cache-line-aligned arrays out of one byte block.

The side that creates a block and every side that maps it run the same sequence of carves, so
they agree on every offset without sending any.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from ... import _native
from ...buffers import Buffers

#: bytes; every carved array starts on its own cache line, so workers writing neighbouring arrays
#: do not share one (the native core's one cache-line constant)
ALIGNMENT = _native.CACHE_LINE_BYTES


class Carver:
    """An allocator that cuts arrays out of ``memory`` (a uint8 array), or only measures with None."""

    def __init__(self, memory: np.ndarray | None = None):
        self.memory = memory
        self.nbytes = 0

    def __call__(self, shape: tuple, dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        start = -(-self.nbytes // ALIGNMENT) * ALIGNMENT
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self.nbytes = start + size
        if self.memory is None:
            return np.empty(shape, dtype)
        return self.memory[start : start + size].view(dtype).reshape(shape)


def block_buffers(
    memory: np.ndarray | None, observation_space: spaces.Box, action_space: spaces.Space, rows: int
) -> tuple[Buffers, Carver]:
    """Buffers of ``rows`` rows carved from the start of ``memory``; the carver goes on after them."""
    carver = Carver(memory)
    return Buffers.from_allocator(observation_space, action_space, rows, carver), carver


def block_size(observation_space: spaces.Box, action_space: spaces.Space, rows: int) -> int:
    """Bytes of a block holding only the buffers of ``rows`` rows."""
    return block_buffers(None, observation_space, action_space, rows)[1].nbytes
