"""Seeds of individual envs, derived from one vector seed.

The rule is shared with the native core (cpp/include/shoal/rng.h): env ``i`` of a vector with seed
``s`` is seeded with ``env_seed(s, i)``, the i-th output of a SplitMix64 stream started at ``s``.
A sub-vector holding envs ``[k, k + n)`` receives ``offset_seed(s, k)`` and seeds its own env ``j``
with ``env_seed(offset_seed(s, k), j) == env_seed(s, k + j)``. So every backend, worker count and
thread count gives each env the same seed.

``Pcg32`` is the generator every native env draws from (shoal_rng of rng.h), in Python: what a native
env draws can be told here (shoal.atari's gymnasium_seed is an Atari env's first two draws).
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


class Pcg32:
    """shoal_rng of cpp/include/shoal/rng.h (PCG32, XSH-RR 64/32), draw for draw: ``Pcg32(env_seed(s, i))``
    is the stream of env ``i`` of a native vector reset with seed ``s``."""

    MULTIPLIER = 6364136223846793005

    __slots__ = ("_increment", "_state")

    def __init__(self, seed64: int) -> None:
        """shoal_rng_seed: the stream of an env seeded with ``seed64`` (an env_seed)."""
        self._state = 0
        self._increment = ((mix64(seed64 ^ GOLDEN_GAMMA) << 1) | 1) & MASK64
        self.next()
        self._state = (self._state + mix64(seed64)) & MASK64
        self.next()

    def next(self) -> int:
        """shoal_rng_next: the next 32-bit draw."""
        old = self._state
        self._state = (old * self.MULTIPLIER + self._increment) & MASK64
        xorshifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & 0xFFFFFFFF

    def next_double(self) -> float:
        """shoal_rng_double: a float in [0, 1) from one draw (32 random bits)."""
        return self.next() * (1.0 / 4294967296.0)


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
