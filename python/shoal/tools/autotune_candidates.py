"""The configurations `shoal autotune` measures: the candidates the configured env can run under
(backends x threads/workers x batch sizes, pipelined ones with a policy in the loop), the num_envs
sweep, and how simple each is (the recommendation is the simplest of the fastest)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import cpus
from ..native import is_native_env
from ..validation import is_integer
from .config import Config, resolve_env

#: simpler first: fewer moving parts (no threads, then threads, then processes, then a cluster)
BACKEND_SIMPLICITY = {"Serial": 0, "PufferEnv": 1, "Multithreading": 2, "Multiprocessing": 3, "Ray": 4}


def num_envs_sweep(num_envs: int, sizes: int = 5) -> list[int]:
    """Powers of two around the configured num_envs (at least ``sizes`` of them, however small it is)."""
    low = max(1, num_envs // 4)
    return sorted({num_envs, *(low * 2**i for i in range(sizes))})


def candidate_configs(
    config: Config, sizes: list[int] | None = None, pipelined: bool = False
) -> list[tuple[str, dict]]:
    """(label, [vec] settings) pairs applicable to the configured env. Each size is a batch: the rows a
    recv returns. ``pipelined`` adds, per size n, two buffers of n (num_envs = 2n, batch_size = n)."""
    creator = resolve_env(config)
    cores = cpus.physical_cores()
    sizes = sizes or [rows_per_call(config.vec) if pipelined else config.vec.get("num_envs", 1)]
    out = []
    if is_native_env(creator):
        for n in sizes:
            for threads in range(0, cores + 1):
                out.append(
                    (
                        f"Multithreading n={n} T={threads}",
                        dict(backend="Multithreading", num_envs=n, max_num_threads=threads),
                    )
                )
            if pipelined:
                for threads in range(1, cores + 1):  # the driver thread counts: 1 = the driver alone
                    out.append(
                        (
                            f"Multithreading n={2 * n} batch={n} T={threads}",
                            dict(backend="Multithreading", num_envs=2 * n, batch_size=n, max_num_threads=threads),
                        )
                    )
    for n in sizes:
        out.append((f"Serial n={n}", dict(backend="Serial", num_envs=n)))
        for workers in range(2, cores + 1):
            if n % workers == 0:
                out.append(
                    (
                        f"Multiprocessing n={n} workers={workers}",
                        dict(backend="Multiprocessing", num_envs=n, num_workers=workers, batch_size=n),
                    )
                )
            # A batch of whole workers' envs: half the workers step while the policy runs on the others.
            if pipelined and workers % 2 == 0 and (2 * n) % workers == 0:
                out.append(
                    (
                        f"Multiprocessing n={2 * n} batch={n} workers={workers}",
                        dict(backend="Multiprocessing", num_envs=2 * n, num_workers=workers, batch_size=n),
                    )
                )
    return out


def rows_per_call(vec: dict) -> int:
    """The rows one recv returns (what a policy sees per call): batch_size where it is set below
    num_envs, else num_envs."""
    num_envs = vec.get("num_envs", 1)
    batch = vec.get("batch_size")
    return batch if is_integer(batch) and 0 < batch < num_envs else num_envs


def is_pipelined(vec: dict) -> bool:
    return rows_per_call(vec) < vec["num_envs"]


def simplicity(vec: dict, configured_rows: int) -> tuple:
    """Sort key: simpler backend, not pipelined, fewer threads/workers, a batch nearer the configured one."""
    helpers = vec.get("max_num_threads", vec.get("num_workers", 0))
    return (
        BACKEND_SIMPLICITY.get(vec["backend"], 9),
        is_pipelined(vec),
        helpers,
        abs(math.log2(rows_per_call(vec) / configured_rows)),
    )


@dataclass
class Candidate:
    label: str
    vec: dict
    samples: list[float] = field(default_factory=list)

    @property
    def family(self) -> tuple:
        """The settings other than num_envs: one curve over the num_envs sweep (pipelined or not)."""
        settings = tuple(sorted((k, v) for k, v in self.vec.items() if k not in ("num_envs", "batch_size")))
        return (*settings, ("pipelined", is_pipelined(self.vec)))

    @property
    def median(self) -> float:
        ordered = sorted(self.samples)
        mid = len(ordered) // 2
        return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)
