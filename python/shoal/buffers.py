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


class VectorTooLarge(APIUsageError, MemoryError):
    """A vector (or one of its allocations) needs more memory than the machine has available; the
    message gives the estimate. A MemoryError too, for code that catches those."""


def available_memory() -> int:
    """Bytes this process can allocate without swapping (what the kernel reports as available)."""
    return psutil.virtual_memory().available


def _too_large(nbytes: int, num_envs: int, what: str, available: int) -> VectorTooLarge:
    return VectorTooLarge(
        f"num_envs={num_envs:,} needs {nbytes:,} bytes ({_size(nbytes)}) of {what}, more than "
        f"the {_size(available)} this machine has available; lower num_envs (or the agents per env)"
    )


def out_of_memory(nbytes: int, num_envs: int, what: str) -> VectorTooLarge:
    """The error of an allocation that a huge num_envs made impossible, with the numbers."""
    return _too_large(nbytes, num_envs, what, available_memory())


def check_fits(nbytes: int, num_envs: int, what: str) -> None:
    """Raises out_of_memory() before allocating more than the machine has available: with memory
    overcommit such an allocation succeeds and the out-of-memory killer ends the process later."""
    available = available_memory()
    if nbytes > available:
        raise _too_large(nbytes, num_envs, what, available)


def check_estimate(parts: list[tuple[str, int]], num_envs: int) -> None:
    """Raises VectorTooLarge, naming every part, unless all of ``parts`` ((what, bytes), everything a
    vector will allocate) fit together in the available memory."""
    total = sum(nbytes for _, nbytes in parts)
    available = available_memory()
    if total > available:
        detail = ", ".join(f"{what} {_size(nbytes)}" for what, nbytes in parts if nbytes)
        raise _too_large(total, num_envs, f"memory for the vector ({detail})", available)


def _size(nbytes: int) -> str:
    return f"{nbytes / 2**30:,.1f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:,.1f} MiB"


# Bytes per element of a joint space (joint_space) at its peak, as tracemalloc measures it: a Box
# keeps low and high (its dtype) and the bool masks bounded_below/above, and builds through a
# temporary of its dtype (at least two bytes) and one more mask; (Multi)Discrete keeps nvec and start
# (int64) and builds through two (one) more int64 copies.
def joint_space_bytes(space: spaces.Space, agents: int) -> int:
    """Bytes joint_space(space, agents) allocates."""
    elements = agents * int(np.prod(space.shape, dtype=np.int64)) if space.shape else agents
    if isinstance(space, spaces.Box):
        itemsize = np.dtype(space.dtype).itemsize
        return elements * (2 * itemsize + 2 + max(itemsize, 2) + 1)
    if isinstance(space, spaces.Discrete):
        return elements * (4 * 8 + 1)
    return elements * (3 * 8 + 1)


def native_vector_estimate(info: dict, num_envs: int, observation_space, action_space, joint_rows=()) -> list:
    """(what, bytes) of everything a native vector of ``num_envs`` envs of ``info`` (a spec's
    describe()) allocates: its buffers, the joint spaces of its rows (and of each count in
    ``joint_rows``: a backend's batches around it), the env structs (one cache line at least, as the
    core aligns them), their parameters and episode tallies."""
    rows = num_envs * int(info["num_agents"])
    env_struct = -(-max(int(info.get("env_size", 0)), 1) // 64) * 64
    joints = sum(
        joint_space_bytes(observation_space, n) + joint_space_bytes(action_space, n) for n in (rows, *joint_rows)
    )
    return [
        (f"buffers for {rows:,} agent rows", rows * Buffers.row_bytes(observation_space, action_space)),
        ("joint spaces' bounds", joints),
        ("env structs", num_envs * env_struct),
        ("per-env parameters and episode tallies", num_envs * 8 * (1 + len(info["params"]) + 3 + len(info["stats"]))),
    ]


# A floor for the memory of one Python env object and shoal's wrapper around it: every env, even one
# with nothing but its spaces, holds more, so an estimate with it never refuses a vector that fits.
PYTHON_ENV_BYTES = 1024


def python_vector_estimate(
    num_envs: int, buffer_rows: str, buffer_bytes: int, observation_space, action_space, joint_rows=()
) -> list:
    """(what, bytes) of what a vector of ``num_envs`` Python envs allocates once its driver env told
    the spaces: its buffers (``buffer_bytes``, named by ``buffer_rows``), the joint spaces of each
    count of rows in ``joint_rows``, and the env objects (at least ``PYTHON_ENV_BYTES`` each)."""
    joints = sum(joint_space_bytes(observation_space, n) + joint_space_bytes(action_space, n) for n in joint_rows)
    return [
        (f"buffers for {buffer_rows} agent rows", buffer_bytes),
        ("joint spaces' bounds", joints),
        (f"{num_envs:,} env objects (at least)", num_envs * PYTHON_ENV_BYTES),
    ]


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
