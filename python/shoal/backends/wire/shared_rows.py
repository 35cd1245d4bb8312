"""The caller's rows in memory that a Ray actor on the caller's own node maps, so it steps its envs
straight into the caller's buffers (the way Multiprocessing's workers do) and only a signal crosses Ray.

The caller carves every row's buffers (the same carve as a block, wire/blocks.py) out of an anonymous
memory file (``memfd_create``): nothing is named, so nothing can be left behind; the memory goes away
with the last process that maps it. An actor opens it through the caller's descriptor in ``/proc``,
only when Ray says it runs on the caller's node, and keeps it only when it reads back the random token
the caller wrote after the buffers: proof that it maps the caller's memory, not a namesake's. Where any
of that is missing (another OS, another node, a /proc it may not read), the actor keeps rows of its own
and returns them after each step, as before.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
import weakref
from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from ...buffers import Buffers, check_fits
from .blocks import ALIGNMENT, block_buffers

TOKEN_BYTES = 16


@dataclass(frozen=True)
class RowsSpec:
    """Where an actor finds the caller's rows: the caller's node, process and descriptor, the size and token."""

    node_id: str
    pid: int
    fd: int
    nbytes: int
    token: bytes
    rows: int  # every row of the vector (the actor takes its own from them)


class SharedRows:
    """The caller's side: every row's buffers in one anonymous memory file."""

    def __init__(self, observation_space: spaces.Box, action_space: spaces.Space, rows: int, node_id: str):
        # As Buffers.allocate: a size the machine cannot hold is an error now, not an out-of-memory kill later.
        check_fits(rows * Buffers.row_bytes(observation_space, action_space), rows, f"buffers for {rows:,} agent rows")
        carved = block_buffers(None, observation_space, action_space, rows)[1].nbytes
        token_at = -(-carved // ALIGNMENT) * ALIGNMENT
        nbytes = token_at + TOKEN_BYTES
        self.fd = os.memfd_create("shoal-ray-rows", os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, nbytes)
            self._map = mmap.mmap(self.fd, nbytes)
        except BaseException:
            os.close(self.fd)
            raise
        memory = np.frombuffer(self._map, dtype=np.uint8)
        token = secrets.token_bytes(TOKEN_BYTES)
        memory[token_at:] = np.frombuffer(token, dtype=np.uint8)
        self.buf = block_buffers(memory, observation_space, action_space, rows)[0]
        self.buf.masks[:] = True
        self.spec = RowsSpec(node_id, os.getpid(), self.fd, nbytes, token, rows)
        self.close = weakref.finalize(self, _close_fd, self.fd)
        """Closes the descriptor (no replacement can map the rows after this); the memory stays while
        arrays of it live."""


def _close_fd(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def shared_rows(observation_space: spaces.Box, action_space: spaces.Space, rows: int, node_id: str):
    """SharedRows, or None where this OS has no anonymous memory files or the memory cannot be had."""
    if not hasattr(os, "memfd_create"):
        return None
    try:
        return SharedRows(observation_space, action_space, rows, node_id)
    except OSError:
        return None


def attach(
    spec: RowsSpec | None,
    node_id: str,
    observation_space: spaces.Box,
    action_space: spaces.Space,
    first_row: int,
    rows: int,
) -> Buffers | None:
    """The actor's side: its rows ``[first_row, first_row + rows)`` of the caller's buffers, or None
    where it runs on another node or cannot map the caller's memory (it keeps rows of its own)."""
    if spec is None or spec.node_id != node_id:
        return None
    try:
        fd = os.open(f"/proc/{spec.pid}/fd/{spec.fd}", os.O_RDWR)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_size != spec.nbytes:
            return None
        memory = np.frombuffer(mmap.mmap(fd, spec.nbytes), dtype=np.uint8)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if memory[-TOKEN_BYTES:].tobytes() != spec.token:
        return None
    return block_buffers(memory, observation_space, action_space, spec.rows)[0].rows(first_row, first_row + rows)
