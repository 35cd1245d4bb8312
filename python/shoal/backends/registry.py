"""Backend names -> classes, imported on first use, and the options each backend accepts.

``make`` and ``config.ini`` both read this table, so neither imports a backend it does not use,
and no backend imports the modules that dispatch to it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..errors import APIUsageError
from .workers.layout import WORKER_OPTIONS as WORKER_DEFAULTS

#: options of the backends whose envs are split over workers (PufferLib 3.0's Multiprocessing)
WORKER_OPTIONS = tuple(WORKER_DEFAULTS)
#: what Multiprocessing and Ray do about a worker that hangs or dies (see backends/deadlines.py)
FAULT_OPTIONS = ("timeout", "on_worker_failure")


@dataclass(frozen=True)
class BackendEntry:
    """Where a backend class lives and the keyword arguments of make() it takes (beyond num_envs, seed)."""

    module: str
    options: tuple[str, ...]


BUILTIN: dict[str, BackendEntry] = {
    "PufferEnv": BackendEntry("shoal.pufferenv", ()),
    # Serial takes the worker options so that one configuration works across backends.
    "Serial": BackendEntry("shoal.backends.serial", WORKER_OPTIONS),
    "Multiprocessing": BackendEntry(
        "shoal.backends.multiprocessing", (*WORKER_OPTIONS, "start_method", *FAULT_OPTIONS)
    ),
    "Multithreading": BackendEntry(
        "shoal.backends.multithreading", ("max_num_threads", "schedule", "pin_threads", "batch_size")
    ),
    "Ray": BackendEntry("shoal.backends.ray", (*WORKER_OPTIONS, "ray_address", "max_num_threads", *FAULT_OPTIONS)),
}

# Backends registered at run time by register_backend(), by name.
_registered: dict[str, type] = {}


def backend_names() -> list[str]:
    return sorted(set(BUILTIN) | set(_registered))


def backend_options(backend: str | type) -> tuple[str, ...]:
    """The options of a backend (a name or a class), without importing it.

    Built-in backends are described by BUILTIN; a registered class by its own ``options`` attribute,
    or else by the built-in backend it derives from.
    """
    if isinstance(backend, type):
        return _class_options(backend)
    name = canonical_name(backend)
    return _class_options(_registered[name]) if name in _registered else BUILTIN[name].options


def _class_options(cls: type) -> tuple[str, ...]:
    for klass in cls.__mro__:
        if "options" in vars(klass):
            return tuple(klass.options)
        entry = BUILTIN.get(klass.__name__)
        if entry is not None and klass.__module__ == entry.module:
            return entry.options
    return ()


def register_backend(cls: type, name: str | None = None) -> type:
    """Makes ``cls`` selectable by class or by name in make() and config.ini."""
    _registered[name or cls.__name__] = cls
    return cls


def canonical_name(name: str) -> str:
    """The registered spelling of a (case-insensitive) backend name."""
    by_lower = {known.lower(): known for known in backend_names()}
    if not isinstance(name, str) or name.lower() not in by_lower:
        raise APIUsageError(f"unknown backend {name!r}; valid backends: {backend_names()}")
    return by_lower[name.lower()]


def _builtin_class(name: str) -> type:
    return getattr(importlib.import_module(BUILTIN[name].module), name)


def resolve_backend(backend) -> type:
    """The backend class for a class or a (case-insensitive) name."""
    if isinstance(backend, str):
        name = canonical_name(backend)
        return _registered[name] if name in _registered else _builtin_class(name)
    if isinstance(backend, type):
        if backend in _registered.values():
            return backend
        entry = BUILTIN.get(backend.__name__)
        if entry is not None and backend.__module__ == entry.module:
            return backend
        raise APIUsageError(
            f"backend {backend.__name__} is not registered; register_backend() it first "
            f"or pick one of {backend_names()}"
        )
    raise APIUsageError(f"backend must be a class or a name, got {backend!r}")
