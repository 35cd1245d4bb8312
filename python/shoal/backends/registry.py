"""Backend names -> classes, imported on first use, and the options each backend accepts.

``make`` and ``config.ini`` both read this table (the option table itself, with its checks, is
backends/options.py's, since every backend's constructor applies it), so neither imports a backend
it does not use, and no backend imports the modules that dispatch to it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..errors import APIUsageError

# The table itself, and its checks, are options.py's (a backend's constructor applies them); config.ini
# and the docs read it here.
from .options import COMMON as COMMON
from .options import OPTIONS, Option
from .options import option as option


@dataclass(frozen=True)
class BackendEntry:
    """Where a backend class lives and the keyword arguments of make() it takes (beyond num_envs, seed)."""

    module: str
    options: tuple[str, ...]


_MODULES = {
    "PufferEnv": "shoal.pufferenv",
    "Serial": "shoal.backends.serial",
    "Multiprocessing": "shoal.backends.multiprocessing",
    "Multithreading": "shoal.backends.multithreading",
    "Ray": "shoal.backends.ray",
}
BUILTIN: dict[str, BackendEntry] = {
    name: BackendEntry(module, tuple(o.name for o in OPTIONS[name])) for name, module in _MODULES.items()
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


def options_table() -> str:
    """The option table as Markdown: config.ini's [vec] reference and make()'s keywords, from OPTIONS."""
    rows = ["| key | backends | default | values | what it does |", "|---|---|---|---|---|"]
    rows.append(
        "| `backend` | | `PufferEnv` (make), `Multithreading` (config.ini) | "
        + " \\| ".join(OPTIONS)
        + " | which backend steps the envs |"
    )
    # One row per option; a backend's own variant of a shared name (Ray's on_worker_failure) gets its own.
    seen: dict[tuple, list[str]] = {}
    entries: dict[tuple, Option] = {}
    for backend, opts in {"(all)": COMMON, **OPTIONS}.items():
        for opt in opts:
            key = (opt.name, opt.allowed, opt.doc)
            seen.setdefault(key, []).append(backend)
            entries.setdefault(key, opt)
    for key, backends in seen.items():
        opt = entries[key]
        default = "unset" if opt.default is None else f"`{opt.default}`"
        allowed = opt.allowed.replace("|", "\\|")
        rows.append(f"| `{opt.name}` | {', '.join(backends)} | {default} | {allowed} | {opt.doc} |")
    return "\n".join(rows) + "\n"


def options_doc() -> str:
    """The options of each backend as a definition list, for make()'s docstring (help(shoal.vector.make))."""
    lines = []
    for backend, opts in OPTIONS.items():
        lines.append(f"    {backend}")
        if not opts:
            lines.append("        - no options beyond num_envs and seed")
        for opt in opts:
            default = "unset" if opt.default is None else repr(opt.default)
            lines.append(f"        - {opt.name} ({opt.allowed}; default {default}): {opt.doc}")
    return "\n".join(lines)
