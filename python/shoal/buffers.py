"""Preallocated batch buffers shared by env code and the caller (views, never copies)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np
import psutil
from gymnasium import spaces

from .errors import APIUsageError
from .spaces import action_dtype, action_shape

Allocator = Callable[[tuple, np.dtype], np.ndarray]


def zeros(shape: tuple, dtype: np.dtype) -> np.ndarray:
    return np.zeros(shape, dtype=dtype)


def out_of_memory(nbytes: int, num_envs: int, what: str) -> MemoryError:
    """The MemoryError of an allocation that a huge num_envs made impossible, with the numbers."""
    return MemoryError(
        f"num_envs={num_envs:,} needs {nbytes:,} bytes ({nbytes / 2**30:,.1f} GiB) of {what}, "
        "more than this machine could allocate; lower num_envs"
    )


def check_fits(nbytes: int, num_envs: int, what: str) -> None:
    """Raises out_of_memory() before allocating more than the machine's physical memory: with memory
    overcommit such an allocation succeeds and the out-of-memory killer ends the process later."""
    if nbytes > psutil.virtual_memory().total:
        raise out_of_memory(nbytes, num_envs, what)


@dataclass
class Buffers:
    """Rows of a vector: one row per agent slot. Env code writes here; recv() returns views."""

    observations: np.ndarray
    final_observations: np.ndarray  # observation that ended each row's episode (valid where done)
    actions: np.ndarray
    rewards: np.ndarray
    terminals: np.ndarray
    truncations: np.ndarray
    masks: np.ndarray

    @staticmethod
    def row_bytes(observation_space: spaces.Box, action_space: spaces.Space) -> int:
        """Bytes of one row over every buffer."""
        observation = int(np.prod(observation_space.shape, dtype=np.int64)) * np.dtype(observation_space.dtype).itemsize
        action = (
            int(np.prod(action_shape(action_space), dtype=np.int64)) * np.dtype(action_dtype(action_space)).itemsize
        )
        return 2 * observation + action + 4 + 3  # + reward (float32), terminal, truncation, mask

    @classmethod
    def allocate(
        cls,
        observation_space: spaces.Box,
        action_space: spaces.Space,
        rows: int,
        allocator: Allocator = zeros,
        envs: int | None = None,
    ) -> Buffers:
        """Buffers of ``rows`` rows from ``allocator``, every mask True. ``envs`` (the envs those rows
        belong to) is for the MemoryError of a size the machine cannot hold."""
        nbytes = rows * cls.row_bytes(observation_space, action_space)
        what, envs = f"buffers for {rows:,} agent rows", rows if envs is None else envs
        check_fits(nbytes, envs, what)
        try:
            buf = cls.from_allocator(observation_space, action_space, rows, allocator)
        except MemoryError:
            raise out_of_memory(nbytes, envs, what) from None
        buf.masks[:] = True
        return buf

    @classmethod
    def from_allocator(
        cls, observation_space: spaces.Box, action_space: spaces.Space, rows: int, allocator: Allocator
    ) -> Buffers:
        """The arrays ``allocator`` hands out, one call per field in field order, left as they are
        (so an allocator that carves existing memory gives views of it, read-only memory included)."""
        obs_shape = (rows, *observation_space.shape)
        return cls(
            observations=allocator(obs_shape, np.dtype(observation_space.dtype)),
            final_observations=allocator(obs_shape, np.dtype(observation_space.dtype)),
            actions=allocator((rows, *action_shape(action_space)), action_dtype(action_space)),
            rewards=allocator((rows,), np.dtype(np.float32)),
            terminals=allocator((rows,), np.dtype(bool)),
            truncations=allocator((rows,), np.dtype(bool)),
            masks=allocator((rows,), np.dtype(bool)),
        )

    def written_by(self, env) -> bool:
        """True when ``env``'s output arrays (observations ... masks) are these arrays' memory, shape for shape."""
        return all(
            _same_memory(getattr(env, name, None), getattr(self, name))
            for name in ("observations", "final_observations", "rewards", "terminals", "truncations", "masks")
        )

    def rows(self, start: int, end: int) -> Buffers:
        """Views of rows [start, end)."""
        return Buffers(**{f.name: getattr(self, f.name)[start:end] for f in fields(self)})

    def check(self, observation_space: spaces.Box, action_space: spaces.Space, rows: int) -> Buffers:
        """Raises APIUsageError unless every buffer has the shape, dtype and layout the env needs."""
        expected = Buffers.allocate(observation_space, action_space, 0)
        for f in fields(self):
            array, model = getattr(self, f.name), getattr(expected, f.name)
            shape = (rows, *model.shape[1:])
            if not isinstance(array, np.ndarray):
                raise APIUsageError(f"buf.{f.name} must be a numpy array, got {type(array).__name__}")
            if array.shape != shape or array.dtype != model.dtype:
                raise APIUsageError(
                    f"buf.{f.name} has shape {array.shape} and dtype {array.dtype}, expected {shape} and {model.dtype}"
                )
            if not array.flags.c_contiguous or not array.flags.writeable:
                raise APIUsageError(f"buf.{f.name} must be C-contiguous and writeable")
        return self


def _same_memory(array, target: np.ndarray) -> bool:
    return (
        isinstance(array, np.ndarray)
        and array.shape == target.shape
        and array.strides == target.strides
        and array.__array_interface__["data"][0] == target.__array_interface__["data"][0]
    )
