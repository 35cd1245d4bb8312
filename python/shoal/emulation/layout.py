"""How a structured observation maps onto one flat row (and back)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from .._native import StructuredRows
from ..errors import APIUsageError

LEAF_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
_HAS_SHAPE = (np.ndarray, np.generic)


class Leaf(NamedTuple):
    """One array of a structured observation and where it lives in the flat row."""

    path: tuple  # keys (Dict) and indices (Tuple) from the root to this leaf
    space: spaces.Space
    dtype: np.dtype  # stored dtype (the space's own dtype)
    shape: tuple  # shape of one observation of this leaf
    offset: int  # byte offset in the row
    nbytes: int


def _leaf_bounds(space: spaces.Space) -> tuple[np.ndarray, np.ndarray]:
    """Flattened low/high of a leaf space (inclusive)."""
    if isinstance(space, spaces.Box):
        return space.low.ravel(), space.high.ravel()
    if isinstance(space, spaces.Discrete):
        return np.array([space.start]), np.array([space.start + space.n - 1])
    if isinstance(space, spaces.MultiDiscrete):
        return space.start.ravel(), (space.start + space.nvec - 1).ravel()
    size = int(np.prod(space.shape))  # MultiBinary
    return np.zeros(size, np.int64), np.ones(size, np.int64)


def _collect_leaves(space: spaces.Space, path: tuple, out: list) -> Any:
    """Appends (path, space) of every leaf to ``out``; returns the tree used to rebuild the structure."""
    if isinstance(space, spaces.Dict):
        return ("dict", [(key, _collect_leaves(sub, (*path, key), out)) for key, sub in space.spaces.items()])
    if isinstance(space, spaces.Tuple):
        return ("tuple", [_collect_leaves(sub, (*path, i), out) for i, sub in enumerate(space.spaces)])
    if isinstance(space, LEAF_SPACES):
        out.append((path, space))
        return ("leaf", len(out) - 1)
    where = "".join(f"[{k!r}]" for k in path) or "the observation space"
    raise APIUsageError(
        f"cannot emulate {type(space).__name__} at {where}: observation spaces must be "
        "Box, Discrete, MultiDiscrete, MultiBinary, or Dict/Tuple of them"
    )


class ObservationLayout:
    """How one observation of ``space`` maps onto a flat row (``env.emulated``); see the module doc.

    ``flat_space`` is the Box of one row, ``dtype`` its dtype, ``leaves`` where each array lives.
    ``is_box``: the original space is a Box kept as is (the fast path). ``is_bytes``: leaves of
    different dtypes share a uint8 row.
    """

    def __init__(self, space: spaces.Space):
        if not isinstance(space, spaces.Space):
            raise APIUsageError(f"observation space must be a gymnasium Space, got {type(space).__name__}")
        self.space = space
        self.is_box = isinstance(space, spaces.Box)
        self.box_shape = tuple(space.shape) if self.is_box else None  # what a Box observation must match
        found: list = []
        self._tree = _collect_leaves(space, (), found)
        dtypes = [np.dtype(leaf_space.dtype) for _, leaf_space in found]
        self.is_bytes = len(set(dtypes)) > 1
        offset, leaves = 0, []
        for (path, leaf_space), dtype in zip(found, dtypes):
            shape = () if isinstance(leaf_space, spaces.Discrete) else tuple(leaf_space.shape)
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            offset = -(-offset // dtype.itemsize) * dtype.itemsize  # align to the itemsize
            leaves.append(Leaf(path, leaf_space, dtype, shape, offset, nbytes))
            offset += nbytes
        if self.is_bytes:
            align = max(dtype.itemsize for dtype in dtypes)
            offset = -(-offset // align) * align
        self.leaves = tuple(leaves)
        self._batch_writer = None
        self.row_bytes = offset
        if offset == 0:
            raise APIUsageError(f"observation space {space} holds no values; cannot emulate it")
        if self.is_box:
            self.dtype = np.dtype(space.dtype)
            self.flat_space = space
        elif self.is_bytes:
            self.dtype = np.dtype(np.uint8)
            self.flat_space = spaces.Box(0, 255, (offset,), dtype=np.uint8)
        else:
            self.dtype = dtypes[0]
            bounds = [_leaf_bounds(leaf.space) for leaf in leaves]
            low = np.concatenate([lo for lo, _ in bounds]).astype(self.dtype)
            high = np.concatenate([hi for _, hi in bounds]).astype(self.dtype)
            self.flat_space = spaces.Box(low, high, dtype=self.dtype)

    def batch_writer(self):
        """The native writer of batches of this layout's (Dict/Tuple) observations, made once."""
        if self._batch_writer is None:
            self._batch_writer = StructuredRows(
                [(leaf.path, leaf.dtype, leaf.shape, leaf.offset) for leaf in self.leaves]
            )
        return self._batch_writer

    @property
    def shape(self) -> tuple:
        """Shape of one flat row."""
        return tuple(self.flat_space.shape)

    def writer(self, row: np.ndarray) -> Callable[[Any], None]:
        """A function that writes one observation into ``row`` (a C-contiguous row of the buffer).

        Every leaf gets a typed view into ``row`` once, here; writing is one assignment per leaf.
        """
        if row.shape != self.shape or row.dtype != self.dtype or not row.flags.c_contiguous:
            raise APIUsageError(
                f"observation row has shape {row.shape} and dtype {row.dtype}, expected a "
                f"C-contiguous row of shape {self.shape} and dtype {self.dtype}"
            )
        if self.is_box:

            def write_box(observation) -> None:
                row[...] = observation

            return write_box
        raw = row.view(np.uint8)
        targets = [(leaf.path, _leaf_view(raw, leaf, ())) for leaf in self.leaves]
        if len(targets) == 1:
            path, target = targets[0]

            def write_leaf(observation) -> None:
                for key in path:
                    observation = observation[key]
                target[...] = observation

            return write_leaf

        def write(observation) -> None:
            for path, target in targets:
                value = observation
                for key in path:
                    value = value[key]
                target[...] = value

        return write

    def flatten(self, observation, out: np.ndarray | None = None) -> np.ndarray:
        """One observation as a flat row (a new array, or written into ``out``)."""
        if out is None:
            out = np.zeros(self.shape, self.dtype)
        self.writer(out)(observation)
        return out

    def check(self, observation, error: type = APIUsageError, call: str = "") -> None:
        """Raises ``error`` if ``observation`` does not have the structure and shapes of the space
        (``call``, such as "step()", names where the observation came from)."""
        prefix = f"{call} returned an observation whose " if call else ""
        for leaf in self.leaves:
            value = observation
            for depth, key in enumerate(leaf.path):
                try:
                    value = value[key]
                except (KeyError, IndexError, TypeError):
                    where = "".join(f"[{k!r}]" for k in leaf.path[: depth + 1])
                    raise error(f"{prefix}observation has no {where}, but the space {self.space} has") from None
            # An array's or numpy scalar's own shape; np.shape (a Python-level call, most of this
            # check's cost) only for the rest: lists, Python numbers, None.
            shape = value.shape if isinstance(value, _HAS_SHAPE) else None if value is None else np.shape(value)
            if shape != leaf.shape:
                where = "".join(f"[{k!r}]" for k in leaf.path) or "observation"
                got = "None" if value is None else f"shape {shape}"
                raise error(f"{prefix}{where} has {got}, but its space {leaf.space} has shape {leaf.shape}")

    def unflatten(self, flat_batch) -> Any:
        """The original structure of a batch of flat rows (any leading dimensions), bit for bit.

        Arrays are views of ``flat_batch`` where its memory allows (copy them to keep them past a step).
        """
        batch = np.asarray(flat_batch)
        if self.is_box:
            ndim = len(self.space.shape)
            if batch.dtype != self.dtype or batch.shape[batch.ndim - ndim :] != self.space.shape or batch.ndim < ndim:
                raise APIUsageError(
                    f"expected observations of shape (..., *{self.space.shape}) and dtype "
                    f"{self.dtype}, got shape {batch.shape} and dtype {batch.dtype}"
                )
            return batch
        if batch.ndim < 1 or batch.shape[-1] != self.shape[0] or batch.dtype != self.dtype:
            raise APIUsageError(
                f"expected flat observations of shape (..., {self.shape[0]}) and dtype "
                f"{self.dtype}, got shape {batch.shape} and dtype {batch.dtype}"
            )
        if batch.strides[-1] != batch.itemsize:
            batch = np.ascontiguousarray(batch)
        lead = batch.shape[:-1]
        raw = batch.view(np.uint8)
        arrays = [_leaf_view(raw, leaf, lead) for leaf in self.leaves]
        return _build(self._tree, arrays)

    def __eq__(self, other) -> bool:
        return isinstance(other, ObservationLayout) and self.space == other.space

    def __hash__(self) -> int:
        return hash(repr(self.space))

    def __repr__(self) -> str:
        kind = "box" if self.is_box else "bytes" if self.is_bytes else "flat"
        return f"ObservationLayout({self.space}, {kind} row {self.shape} {self.dtype})"


def _leaf_view(raw: np.ndarray, leaf: Leaf, lead: tuple) -> np.ndarray:
    """Typed view of one leaf in rows of bytes ``raw`` (shape ``(*lead, row_bytes)``)."""
    return raw[..., leaf.offset : leaf.offset + leaf.nbytes].view(leaf.dtype).reshape(lead + leaf.shape)


def _build(tree, arrays: list) -> Any:
    kind, content = tree
    if kind == "leaf":
        return arrays[content]
    if kind == "dict":
        return {key: _build(sub, arrays) for key, sub in content}
    return tuple(_build(sub, arrays) for sub in content)


def nativize(flat_batch, layout: ObservationLayout) -> Any:
    """The original observations (dict/tuple/arrays, leading batch dimension) of flat rows."""
    if not isinstance(layout, ObservationLayout):
        raise APIUsageError(f"nativize needs an ObservationLayout (env.emulated), got {type(layout).__name__}")
    return layout.unflatten(flat_batch)
