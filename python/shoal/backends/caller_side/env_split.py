"""How a vector's envs split over workers and batches, and where each worker's envs start."""

from __future__ import annotations

from dataclasses import dataclass

from ... import cpus
from ...errors import APIUsageError
from ...validation import check_integer, check_num_envs

#: make()'s options for splitting envs over workers, with their defaults (PufferLib 3.0's)
WORKER_OPTIONS = {"num_workers": None, "batch_size": None, "zero_copy": True, "sync_traj": True, "overwork": False}


@dataclass(frozen=True)
class WorkerLayout:
    """How num_envs envs split over workers and batches (Multiprocessing, Ray)."""

    num_envs: int
    num_workers: int
    batch_size: int
    envs_per_worker: int
    workers_per_batch: int
    zero_copy: bool

    def env_slice(self, worker: int) -> slice:
        """Positions, in make()'s list of envs, of the envs of ``worker``."""
        return slice(worker * self.envs_per_worker, (worker + 1) * self.envs_per_worker)

    def env_range(self, worker: int) -> str:
        """The envs of ``worker`` as error messages name them: "first..last"."""
        envs = self.env_slice(worker)
        return f"{envs.start}..{envs.stop - 1}"


def worker_layout(
    num_envs: int,
    num_workers=None,
    batch_size=None,
    zero_copy: bool = True,
    overwork: bool = False,
    limit_to_cores: bool = True,
) -> WorkerLayout:
    """Validates the worker/batch layout with PufferLib 3.0's rules; errors name the numbers.

    These rules are Multiprocessing's and Ray's in the option table (backends/options.py), worded
    only here: make() exports this function to check a layout without building anything."""
    num_envs = check_num_envs(num_envs)
    cores = cpus.physical_cores()
    if num_workers is None or num_workers == "auto":
        num_workers = min(cores, num_envs)
    num_workers = check_integer(num_workers, "num_workers", 1)
    if batch_size is None or batch_size == "auto":
        batch_size = num_envs
    batch_size = check_integer(batch_size, "batch_size", 1)
    if num_envs % num_workers != 0:
        raise APIUsageError(f"num_envs ({num_envs}) must be divisible by num_workers ({num_workers})")
    envs_per_worker = num_envs // num_workers
    if batch_size > num_envs:
        raise APIUsageError(f"batch_size ({batch_size}) must be <= num_envs ({num_envs})")
    if batch_size % envs_per_worker != 0:
        raise APIUsageError(
            f"batch_size ({batch_size}) must be divisible by num_envs / num_workers "
            f"({num_envs} / {num_workers} = {envs_per_worker})"
        )
    if zero_copy and num_envs % batch_size != 0:
        raise APIUsageError(
            f"zero_copy=True needs num_envs ({num_envs}) divisible by batch_size "
            f"({batch_size}); pick another batch_size or set zero_copy=False"
        )
    if limit_to_cores and num_workers > cores and not overwork:
        raise APIUsageError(
            f"num_workers ({num_workers}) > physical cores ({cores}) is disallowed by "
            "default: one process per core is fastest. Set overwork=True to allow it."
        )
    return WorkerLayout(
        num_envs, num_workers, batch_size, envs_per_worker, batch_size // envs_per_worker, bool(zero_copy)
    )
