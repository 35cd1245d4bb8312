"""Backend names -> classes, imported on first use, and the options each backend accepts.

``make`` and ``config.ini`` both read this table, so neither imports a backend it does not use,
and no backend imports the modules that dispatch to it.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import APIUsageError
from ..native.env import MAX_THREADS, SCHEDULES, check_schedule, check_threads
from ..seeding import check_seed
from ..spaces import BOX_ACTIONS, check_box_actions
from ..validation import check_bool, check_integer, check_ray_address
from .caller_side.deadlines import FAILURE_POLICIES, check_on_worker_failure, check_timeout
from .caller_side.env_split import WORKER_OPTIONS as WORKER_DEFAULTS
from .caller_side.restart import RESTART_OPTIONS, check_max_restarts, check_restart_window
from .ray_elastic import RAY_FAILURE_POLICIES, check_ray_on_worker_failure
from .ray_placement import PLACEMENTS, check_actor_options, check_exclude_driver_node, check_placement
from .start_methods import START_METHODS, check_start_method


@dataclass(frozen=True)
class Option:
    """One keyword of make() (and key of config.ini's [vec]): its default, check, config syntax and doc.

    ``kind`` says how config.ini's text becomes a value ("int", "bool", "seconds", "text"); the value
    then goes through ``check``, the same function make() applies, so both report a bad value alike.
    """

    name: str
    default: object
    kind: str
    check: Callable[[object], object]
    doc: str
    allowed: str  # the values it takes, as the docs' table shows them

    def from_text(self, text: str):
        """The value config.ini's ``text`` stands for, checked (APIUsageError as make() raises it)."""
        value = _TEXT_PARSERS[self.kind](text)
        self.check(value)
        return value


def _int_text(text: str):
    if text == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        return text  # the check names it


def _bool_text(text: str):
    return {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}.get(text.lower(), text)


def _seconds_text(text: str):
    if text.lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        return text


def _json_text(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text  # the check names it


_TEXT_PARSERS = {"int": _int_text, "bool": _bool_text, "seconds": _seconds_text, "text": str, "json": _json_text}


def _auto_or(check):
    """``check`` for values other than None/"auto", which leave the choice to the backend."""

    def checked(value):
        return value if value is None or value == "auto" else check(value)

    return checked


def _flag(name: str, doc: str) -> Option:
    return Option(name, WORKER_DEFAULTS.get(name, False), "bool", lambda v: check_bool(v, name), doc, "true | false")


def _count(name: str, doc: str, default=None) -> Option:
    return Option(name, default, "int", _auto_or(lambda v: check_integer(v, name, 1)), doc, "integer >= 1 | auto")


#: PufferLib 3.0's options for splitting envs over workers (Serial takes them too, so that one
#: configuration works across backends)
WORKER = (
    _count("num_workers", "worker processes/actors; auto = physical cores (at most num_envs)"),
    _count("batch_size", "envs per batch returned by recv(); auto = num_envs (every env each step)"),
    _flag("zero_copy", "batches are views of consecutive workers' shared memory (num_envs % batch_size == 0)"),
    _flag("sync_traj", "recv() returns workers in the order they were sent"),
    _flag("overwork", "allow more workers than physical cores"),
)
#: what Multiprocessing and Ray do about a worker that hangs or dies (see backends/caller_side/deadlines.py)
FAULTS = (
    Option(
        "timeout",
        None,
        "seconds",
        check_timeout,
        "seconds a worker has to finish a step or reset, else WorkerError; none = no limit",
        "seconds > 0 | none",
    ),
    Option(
        "on_worker_failure",
        "raise",
        "text",
        check_on_worker_failure,
        "raise: WorkerError and the vector closes; restart: replace the worker and reset its envs",
        " | ".join(FAILURE_POLICIES),
    ),
    Option(
        "max_restarts",
        RESTART_OPTIONS["max_restarts"],
        "int",
        check_max_restarts,
        "under restart: replacements of one worker allowed within restart_window; one more failure is "
        "WorkerError (replacements after the first within the window wait 0.1 s, doubling, at most 2 s)",
        "integer >= 0",
    ),
    Option(
        "restart_window",
        RESTART_OPTIONS["restart_window"],
        "seconds",
        check_restart_window,
        "the sliding window, in seconds, over which max_restarts counts; none = the vector's life",
        "seconds > 0 | none",
    ),
)
#: Ray's own on_worker_failure: the shared policies and elastic (backends/ray_elastic.py)
RAY_ON_WORKER_FAILURE = Option(
    "on_worker_failure",
    "raise",
    "text",
    check_ray_on_worker_failure,
    "as Multiprocessing's; elastic: the others keep stepping while a replacement starts, "
    "the lost rows masked (docs/cluster.md)",
    " | ".join(RAY_FAILURE_POLICIES),
)
THREADS = Option(
    "max_num_threads",
    None,
    "int",
    _auto_or(check_threads),
    "threads stepping native envs, the caller included (0/1 = the caller only); auto = physical cores",
    f"0..{MAX_THREADS} | auto",
)

#: make()'s arguments of every backend (config.ini's [vec] keys beside backend)
COMMON = (
    Option("num_envs", 1, "int", lambda v: check_integer(v, "num_envs", 1), "envs in the vector", "integer >= 1"),
    Option(
        "seed",
        0,
        "int",
        check_seed,
        "seed of the first reset; env i is seeded with env_seed(seed, i) (SplitMix64, shoal.seeding)",
        "0 .. 2**64 - 1",
    ),
)

#: what Box actions outside the bounds do, on every backend (spaces.py's ActionChecker applies it)
ACTIONS = Option(
    "box_actions",
    "pass",
    "text",
    check_box_actions,
    "Box actions outside the bounds (and NaN): pass = to the env as given, as Gymnasium and PufferLib do; "
    "clip = clipped to the bounds; strict = refused with an APIUsageError",
    " | ".join(BOX_ACTIONS),
)

#: every built-in backend's options beyond num_envs and seed: the one list of them
OPTIONS: dict[str, tuple[Option, ...]] = {
    "PufferEnv": (ACTIONS,),
    "Serial": (*WORKER, ACTIONS),
    "Multiprocessing": (
        *WORKER,
        ACTIONS,
        Option(
            "start_method",
            None,
            "text",
            check_start_method,
            "how workers start; unset = fork on Linux, else spawn",
            " | ".join(START_METHODS),
        ),
        *FAULTS,
    ),
    "Multithreading": (
        THREADS,
        ACTIONS,
        Option(
            "schedule",
            "static",
            "text",
            check_schedule,
            "static slices, or dynamic chunks for uneven envs",
            " | ".join(SCHEDULES),
        ),
        Option(
            "pin_threads",
            False,
            "bool",
            lambda v: check_bool(v, "pin_threads"),
            "pin each thread to a core",
            "true | false",
        ),
        _count("batch_size", "envs per batch; auto = num_envs, fewer pipeline batches over the pool"),
    ),
    "Ray": (
        *WORKER,
        ACTIONS,
        Option(
            "ray_address",
            None,
            "text",
            check_ray_address,
            "Ray cluster address ('auto', 'host:6379'); unset = a local Ray instance",
            "address",
        ),
        THREADS,
        *(RAY_ON_WORKER_FAILURE if o.name == "on_worker_failure" else o for o in FAULTS),
        Option(
            "placement",
            "spread",
            "text",
            check_placement,
            "actors over nodes: spread = evenly, pack = fewest nodes, strict_spread = one per node",
            " | ".join(PLACEMENTS),
        ),
        Option(
            "exclude_driver_node",
            False,
            "bool",
            check_exclude_driver_node,
            "no actor on the node of the process that calls make()",
            "true | false",
        ),
        Option(
            "ray_actor_options",
            None,
            "json",
            check_actor_options,
            "options of every actor (resources, runtime_env, label_selector, scheduling_strategy ...)",
            "a dict (JSON in config.ini)",
        ),
        Option(
            "compiled_graphs",
            False,
            "bool",
            lambda v: check_bool(v, "compiled_graphs"),
            "full-sync steps through Ray compiled graphs (shared-memory channels) where Ray has them: "
            "faster steps, but each actor spins while it waits and the caller keeps a descriptor a graph",
            "true | false",
        ),
    ),
}


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


def option(backend: str, name: str) -> Option | None:
    """The table's entry for ``name`` under a built-in ``backend``; None for others."""
    return next((o for o in OPTIONS.get(backend, ()) if o.name == name), None)


def check_options(backend_cls: type, kwargs: dict) -> None:
    """make()'s check of each option's value, before anything is built (cross-option rules, such as
    batch_size dividing num_envs, are the backend's)."""
    for klass in backend_cls.__mro__:
        if klass.__name__ in OPTIONS and klass.__module__ == BUILTIN[klass.__name__].module:
            for name, value in kwargs.items():
                entry = option(klass.__name__, name)
                if entry is not None:
                    entry.check(value)
            return


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
