"""What the trainer adapters share: checking the wrapped vector, observations out, per-row env objects."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..emulation import ObservationLayout
from ..errors import APIUsageError
from ..seeding import check_seed, env_seed
from ..validation import is_integer

#: attributes every shoal vector env has and the adapters read
REQUIRED = (
    "reset",
    "step",
    "close",
    "closed",
    "single_observation_space",
    "single_action_space",
    "num_envs",
    "num_agents",
    "agents_per_batch",
    "final_observations",
    "driver_env",
    "local_envs",
)


def check_vecenv(vecenv, adapter: str) -> None:
    """Raises APIUsageError unless ``vecenv`` is an open, synchronous shoal vector (every row each step)."""
    missing = [name for name in REQUIRED if not hasattr(vecenv, name)]
    if missing:
        raise APIUsageError(
            f"{adapter} wraps a shoal vector env (shoal.vector.make(...)); {type(vecenv).__name__} has no {missing}"
        )
    if vecenv.closed:
        raise APIUsageError(f"{adapter}: the vector env is closed")
    if vecenv.agents_per_batch != vecenv.num_agents:
        raise APIUsageError(
            f"{adapter} needs every row in every step, but the vector returns batches of "
            f"agents_per_batch={vecenv.agents_per_batch} of num_agents={vecenv.num_agents} rows; "
            "make it with batch_size=num_envs (or None)"
        )


def rows_per_env(vecenv) -> int:
    """Rows (agent slots) held by each env of the vector."""
    return max(1, vecenv.num_agents // max(1, vecenv.num_envs))


def row_seeds(vecenv, seed: int) -> list[int]:
    """The seed shoal gives the env of each row under vector seed ``seed`` (``env_seed(seed, env)``)."""
    seed = check_seed(seed)
    per_env = rows_per_env(vecenv)
    return [env_seed(seed, row // per_env) for row in range(vecenv.num_agents)]


class ResetSeeds:
    """The shoal seed of each reset an adapter makes.

    An explicit seed is used as it is. ``None`` means the vector's own seed (the one given to
    ``make``) on the first reset, and afterwards a fresh seed drawn from a generator seeded by the
    last seed used: like Gymnasium's ``reset(seed=None)``, a later reset starts new episodes instead of
    replaying the first ones (TorchRL resets every row when all of them are done at once), and the
    whole run stays reproducible from the first seed.
    """

    def __init__(self, vecenv):
        seed = getattr(vecenv, "seed", None)
        self.default = int(seed) if is_integer(seed) else None
        self.rng: np.random.Generator | None = None
        #: the shoal seed of the latest reset (None: the vector's own)
        self.last: int | None = None

    def next(self, seed: int | None) -> int | None:
        if seed is not None:
            seed = check_seed(seed)
        elif self.rng is None:
            seed = self.default
        else:
            seed = int(self.rng.integers(0, 2**63))
        self.rng = np.random.default_rng(0 if seed is None else seed)
        self.last = seed
        return seed


class Observations:
    """Turns the vector's flat observation rows into what a trainer sees, as fresh arrays.

    Emulated envs with structured spaces (Dict, Tuple, Discrete ...) get their original structure
    back (``shoal.emulation.nativize``); Box observations stay arrays. ``copy=False`` returns views
    of the vector's buffers where the structure allows (valid until the next step).
    """

    def __init__(self, vecenv, copy: bool = True):
        layout = getattr(vecenv, "emulated", None)
        self.layout: ObservationLayout | None = None
        if isinstance(layout, ObservationLayout) and not layout.is_box:
            self.layout = layout
        self.space = self.layout.space if self.layout is not None else vecenv.single_observation_space
        self.copy = copy

    def batch(self, flat: np.ndarray) -> Any:
        """All rows: an array (or a dict/tuple of arrays) with a leading row dimension."""
        if self.layout is None:
            return np.array(flat) if self.copy else flat
        return _copy_tree(self.layout.unflatten(flat), self.copy)

    def row(self, flat: np.ndarray, index: int) -> Any:
        """One row as a single observation of ``self.space`` (always a copy)."""
        if self.layout is None:
            return np.array(flat[index])
        return _copy_tree(self.layout.unflatten(flat[index : index + 1]), True, index=0)


def _copy_tree(tree, copy: bool, index: int | None = None):
    if isinstance(tree, dict):
        return {key: _copy_tree(value, copy, index) for key, value in tree.items()}
    if isinstance(tree, tuple):
        return tuple(_copy_tree(value, copy, index) for value in tree)
    if index is not None:
        tree = tree[index]
    return np.array(tree) if copy else tree


class RowEnvs:
    """The Python object that holds each row's env, where it lives in this process.

    * Serial: each env object (the wrapped gymnasium env for emulated envs, the PufferEnv otherwise).
    * Multithreading and PufferEnv backends: the one native env object that holds every row.
    * Multiprocessing / Ray: envs live in other processes; only ``vecenv.driver_env`` (a local env
      built from the same creator, never stepped) can be read, and nothing can be changed.
    """

    def __init__(self, vecenv):
        self.vecenv = vecenv
        envs = vecenv.local_envs
        self.local = bool(envs)
        if not envs:
            envs = [vecenv.driver_env]
        # Emulated envs are reached through the Gymnasium/PettingZoo env they wrap.
        self.objects = [env.env if env.emulated is not None else env for env in envs]
        self.per_env = max(1, vecenv.num_agents // len(envs))

    def indices(self, indices) -> list[int]:
        """Row indices of ``None`` (all), an int, or an iterable of ints."""
        rows = self.vecenv.num_agents
        if indices is None:
            return list(range(rows))
        if isinstance(indices, (int, np.integer)):
            indices = [indices]
        out = [int(i) for i in indices]
        bad = [i for i in out if not -rows <= i < rows]
        if bad:
            raise APIUsageError(f"env indices {bad} out of range for {rows} envs")
        return [i % rows for i in out]

    def of_rows(self, indices) -> list:
        """The object of every requested row (shared objects appear once per row)."""
        return [self.objects[row // self.per_env] for row in self.indices(indices)]

    def distinct(self, indices) -> list[tuple[list[int], Any]]:
        """(rows, object) for every distinct object among the requested rows."""
        groups: dict[int, tuple[list[int], Any]] = {}
        for row in self.indices(indices):
            obj = self.objects[row // self.per_env]
            groups.setdefault(id(obj), ([], obj))[0].append(row)
        return list(groups.values())

    def check_local(self, what: str) -> None:
        if not self.local:
            raise APIUsageError(
                f"cannot {what}: the envs of {type(self.vecenv).__name__} live in other "
                "processes; use backend Serial (Python envs) or Multithreading (native envs)"
            )
