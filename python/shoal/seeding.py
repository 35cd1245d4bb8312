"""Seeds of individual envs, derived from one vector seed.

The rule is shared with the native core (cpp/include/shoal/rng.h): env ``i`` of a vector with seed
``s`` is seeded with ``env_seed(s, i)``, the i-th output of a SplitMix64 stream started at ``s``.
A sub-vector holding envs ``[k, k + n)`` receives ``offset_seed(s, k)`` and seeds its own env ``j``
with ``env_seed(offset_seed(s, k), j) == env_seed(s, k + j)``. So every backend, worker count and
thread count gives each env the same seed.
"""

from __future__ import annotations

from .errors import APIUsageError
from .validation import is_integer

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15


def mix64(z: int) -> int:
    """SplitMix64 finalizer (bijective on 64-bit integers)."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def env_seed(seed: int, index: int) -> int:
    """Seed of env ``index`` under vector seed ``seed`` (a 64-bit integer)."""
    return mix64(seed + (index + 1) * GOLDEN_GAMMA)


def offset_seed(seed: int, offset: int) -> int:
    """Vector seed of the sub-vector whose first env has global index ``offset``."""
    return (seed + offset * GOLDEN_GAMMA) & MASK64


def check_seed(seed, name: str = "seed") -> int:
    """Validates a user seed: a non-negative integer (numpy integers accepted)."""
    if not is_integer(seed):
        raise APIUsageError(f"{name} must be a non-negative integer, got {seed!r} ({type(seed).__name__})")
    seed = int(seed)
    if seed < 0 or seed > MASK64:
        raise APIUsageError(f"{name} must be in [0, 2**64), got {seed}")
    return seed


# Odd constant that separates the seeds of successive restarts (another SplitMix64-style gamma).
RESTART_GAMMA = 0xD1B54A32D192ED03


def restart_seed(seed: int, restarts: int) -> int:
    """Vector seed with which the envs of a worker replaced for the ``restarts``-th time are reset.

    Env ``i`` of that worker is then seeded with ``env_seed(restart_seed(seed, r), i)``: a function of
    (seed, env index, restart count) only, so a run with the same faults repeats exactly.
    """
    if restarts == 0:
        return seed
    return mix64(seed + restarts * RESTART_GAMMA)


def first_env_indices(env_counts: list[int]) -> list[int]:
    """Global index of the first env of each part, given how many envs each part holds.

    A part (an env object, a worker) reset with ``offset_seed(seed, first)`` seeds its envs as the
    whole vector would, so every env draws the same stream on every backend.
    """
    firsts, total = [], 0
    for count in env_counts:
        firsts.append(total)
        total += count
    return firsts
