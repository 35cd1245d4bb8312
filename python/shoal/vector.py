"""shoal.vector: make() and the backend registry (PufferLib 3.0 compatible)."""

from __future__ import annotations

import importlib
import numbers
from dataclasses import dataclass

import psutil

from .backends.serial import Serial
from .errors import APIUsageError
from .pufferenv import PufferEnv
from .seeding import check_seed

_BACKENDS: dict[str, type] = {}
# Backends that live in modules with heavier imports; loaded the first time they are asked for.
_LAZY_BACKENDS = {
    "Multiprocessing": "shoal.backends.multiprocessing",
    "Multithreading": "shoal.backends.multithreading",
    "Ray": "shoal.backends.ray",
}


def register_backend(cls: type, name: str | None = None) -> type:
    """Makes ``cls`` selectable by class or by name in make() and config.ini."""
    _BACKENDS[name or cls.__name__] = cls
    return cls


def backend_names() -> list[str]:
    return sorted(set(_BACKENDS) | set(_LAZY_BACKENDS))


def resolve_backend(backend) -> type:
    """The backend class for a class or a (case-insensitive) name."""
    if isinstance(backend, type):
        if backend in _BACKENDS.values():
            return backend
        for name, module in _LAZY_BACKENDS.items():
            if backend.__name__ == name and backend.__module__ == module:
                return backend
        raise APIUsageError(f"backend {backend.__name__} is not registered; register_backend() it first "
                            f"or pick one of {backend_names()}")
    if isinstance(backend, str):
        by_lower = {name.lower(): name for name in backend_names()}
        name = by_lower.get(backend.lower())
        if name is None:
            raise APIUsageError(f"unknown backend {backend!r}; valid backends: {backend_names()}")
        if name not in _BACKENDS:
            importlib.import_module(_LAZY_BACKENDS[name])
        return _BACKENDS[name]
    raise APIUsageError(f"backend must be a class or a name, got {backend!r}")


def __getattr__(name: str):
    # shoal.vector.Multiprocessing etc. without importing every backend up front.
    if name in _LAZY_BACKENDS:
        return resolve_backend(name)
    raise AttributeError(f"module 'shoal.vector' has no attribute {name!r}")


def _check_count(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise APIUsageError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class WorkerLayout:
    """How num_envs envs split over workers and batches (Multiprocessing, Ray)."""

    num_envs: int
    num_workers: int
    batch_size: int
    envs_per_worker: int
    workers_per_batch: int
    zero_copy: bool


def worker_layout(num_envs: int, num_workers=None, batch_size=None, zero_copy: bool = True,
                  overwork: bool = False, limit_to_cores: bool = True) -> WorkerLayout:
    """Validates the worker/batch layout with PufferLib 3.0's rules; errors name the numbers."""
    num_envs = _check_count(num_envs, "num_envs")
    cores = psutil.cpu_count(logical=False) or psutil.cpu_count() or 1
    if num_workers is None or num_workers == "auto":
        num_workers = min(cores, num_envs)
    num_workers = _check_count(num_workers, "num_workers")
    if batch_size is None or batch_size == "auto":
        batch_size = num_envs
    batch_size = _check_count(batch_size, "batch_size")
    if num_envs % num_workers != 0:
        raise APIUsageError(f"num_envs ({num_envs}) must be divisible by num_workers ({num_workers})")
    envs_per_worker = num_envs // num_workers
    if batch_size > num_envs:
        raise APIUsageError(f"batch_size ({batch_size}) must be <= num_envs ({num_envs})")
    if batch_size % envs_per_worker != 0:
        raise APIUsageError(f"batch_size ({batch_size}) must be divisible by num_envs / num_workers "
                            f"({num_envs} / {num_workers} = {envs_per_worker})")
    if zero_copy and num_envs % batch_size != 0:
        raise APIUsageError(f"zero_copy=True needs num_envs ({num_envs}) divisible by batch_size "
                            f"({batch_size}); pick another batch_size or set zero_copy=False")
    if limit_to_cores and num_workers > cores and not overwork:
        raise APIUsageError(f"num_workers ({num_workers}) > physical cores ({cores}) is disallowed by "
                            "default: one process per core is fastest. Set overwork=True to allow it.")
    return WorkerLayout(num_envs, num_workers, batch_size, envs_per_worker,
                        batch_size // envs_per_worker, bool(zero_copy))


def _per_env_list(value, num_envs: int, name: str, kind: tuple, kind_name: str) -> list:
    """Per-env values: a list of num_envs entries, or one shared value (an empty args tuple / a dict)."""
    if isinstance(value, list) and len(value) == num_envs and all(isinstance(v, kind) for v in value):
        return value
    if name == "env_kwargs" and isinstance(value, dict):
        return [value] * num_envs
    if name == "env_args" and value == ():
        return [()] * num_envs
    raise APIUsageError(f"with a list of env creators, {name} must be a list of {num_envs} {kind_name} "
                        f"(one per env), got {value!r}")


def make(env_creator_or_creators, env_args=None, env_kwargs=None, backend=PufferEnv, num_envs=1,
         seed=0, **kwargs):
    """Builds a vectorized env (PufferLib 3.0 semantics).

    ``backend`` is a class or a name: "PufferEnv" (default; one env object holding many agents,
    num_envs must be 1), "Serial", "Multiprocessing", "Multithreading", "Ray".
    ``env_creator_or_creators`` is one callable or a list of num_envs callables; ``env_args`` /
    ``env_kwargs`` are shared by all envs or lists with one entry per env.
    """
    backend_cls = resolve_backend(backend)
    num_envs = _check_count(num_envs, "num_envs")
    seed = check_seed(seed)
    valid = backend_cls.options if backend_cls is not PufferEnv else ()
    unknown = sorted(set(kwargs) - set(valid))
    if unknown:
        raise APIUsageError(f"invalid argument(s) {unknown} for backend {backend_cls.__name__}; "
                            f"valid: {sorted(valid) or 'none beyond num_envs and seed'}")

    env_args = () if env_args is None else env_args
    env_kwargs = {} if env_kwargs is None else env_kwargs
    if isinstance(env_creator_or_creators, (list, tuple)):
        # A list of creators comes with per-env lists of args and kwargs (or shared ones).
        env_creators = list(env_creator_or_creators)
        if len(env_creators) != num_envs:
            raise APIUsageError(f"got {len(env_creators)} env creators for num_envs={num_envs}; "
                                "pass one creator or exactly one per env")
        env_args = _per_env_list(env_args, num_envs, "env_args", (list, tuple), "lists or tuples")
        env_kwargs = _per_env_list(env_kwargs, num_envs, "env_kwargs", (dict,), "dicts")
    else:
        env_creators = [env_creator_or_creators] * num_envs
        if not isinstance(env_args, (list, tuple)):
            raise APIUsageError(f"env_args must be a list or tuple of arguments, got {env_args!r}")
        if not isinstance(env_kwargs, dict):
            raise APIUsageError(f"env_kwargs must be a dict, got {env_kwargs!r}")
        env_args, env_kwargs = [env_args] * num_envs, [env_kwargs] * num_envs
    for i, creator in enumerate(env_creators):
        if not callable(creator):
            raise APIUsageError(f"env creator {i} is not callable: {creator!r}")
    env_args = [tuple(args) for args in env_args]

    if backend_cls is PufferEnv:
        if num_envs != 1:
            raise APIUsageError(f"backend PufferEnv runs one env object that holds its agents itself, "
                                f"so num_envs must be 1 (got {num_envs}); pass the env's own size in "
                                "env_kwargs, or use Serial/Multiprocessing/Multithreading")
        env = env_creators[0](*env_args[0], **env_kwargs[0])
        if not isinstance(env, PufferEnv):
            raise APIUsageError(f"backend PufferEnv needs a creator that returns a shoal PufferEnv, got "
                                f"{type(env).__name__}; wrap Gymnasium/PettingZoo envs with backend Serial "
                                "or Multiprocessing")
        env.seed = seed
        return env
    return backend_cls(env_creators, env_args, env_kwargs, num_envs, seed=seed, **kwargs)


register_backend(Serial)
register_backend(PufferEnv)

__all__ = ["make", "register_backend", "resolve_backend", "backend_names", "worker_layout",
           "Serial", "PufferEnv", "APIUsageError"]
