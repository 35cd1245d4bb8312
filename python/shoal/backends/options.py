"""The options of the built-in backends, and where they are checked: the one table of them.

Each make() keyword (config.ini's [vec] key) is an Option: its default, its check, its config syntax
and its doc. A backend's constructor (``VecEnv.__init__``, which make() and a backend class built
directly both go through) applies the table with ``check_options``: num_envs and seed, each option
given, then the backend's rule across options (how batch_size relates to num_envs, which differs by
backend). Below the constructor the backends only assert what the table made sure of.

make() applies the value checks (``check_common``, ``check_values``) before its memory estimate,
so a bad value is refused before anything is counted or built; ``backends/registry.py`` reads the
table for config.ini, the docs' table and make()'s help.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import APIUsageError
from ..native.env import MAX_THREADS, check_threads
from ..seeding import check_seed
from ..spaces import BOX_ACTIONS, check_box_actions
from ..validation import SCHEDULES, check_bool, check_integer, check_num_envs, check_ray_address, check_schedule
from .caller_side.deadlines import FAILURE_POLICIES, check_on_worker_failure, check_timeout
from .caller_side.env_split import WORKER_OPTIONS as WORKER_DEFAULTS
from .caller_side.env_split import worker_layout
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
    Option("num_envs", 1, "int", check_num_envs, "envs in the vector", "integer >= 1"),
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


def option(backend: str, name: str) -> Option | None:
    """The table's entry for ``name`` under a built-in ``backend``; None for others."""
    return next((o for o in OPTIONS.get(backend, ()) if o.name == name), None)


def builtin_name(backend_cls: type) -> str | None:
    """The built-in backend ``backend_cls`` is or derives from (its options are that one's), or None.
    (registry.py knows the modules; this layer, below it, knows shoal's classes by their package.)"""
    for klass in backend_cls.__mro__:
        if klass.__name__ in OPTIONS and klass.__module__.startswith("shoal."):
            return klass.__name__
    return None


# The rules across options, one per built-in backend: each is the only place its message is worded.


def _one_env_object(num_envs: int, options: dict) -> None:
    if num_envs != 1:
        raise APIUsageError(
            f"backend PufferEnv runs one env object that holds its agents itself, "
            f"so num_envs must be 1 (got {num_envs}); pass the env's own size in "
            "env_kwargs, or use Serial/Multiprocessing/Multithreading"
        )


def _every_env_each_batch(num_envs: int, options: dict) -> None:
    batch_size = options.get("batch_size")
    if not (batch_size is None or batch_size == "auto" or batch_size == num_envs):
        raise APIUsageError(
            f"Serial steps all num_envs={num_envs} envs every batch; batch_size "
            f"must be num_envs or None, got {batch_size}"
        )


def _equal_buffers(num_envs: int, options: dict) -> None:
    batch_size = options.get("batch_size")
    if not (batch_size is None or batch_size == "auto") and num_envs % batch_size:
        raise APIUsageError(
            f"batch_size ({batch_size!r}) must divide num_envs ({num_envs}): the envs form "
            "num_envs / batch_size equal buffers"
        )


def _worker_rule(limit_to_cores: bool):
    """worker_layout's rules (PufferLib 3.0's, worded there: make() exports it), options' defaults
    filled in; Ray's cores are the cluster's, counted once connected."""

    def rule(num_envs: int, options: dict) -> None:
        given = {name: options.get(name, default) for name, default in WORKER_DEFAULTS.items()}
        worker_layout(
            num_envs,
            given["num_workers"],
            given["batch_size"],
            given["zero_copy"],
            given["overwork"],
            limit_to_cores=limit_to_cores,
        )

    return rule


RULES: dict[str, Callable[[int, dict], None]] = {
    "PufferEnv": _one_env_object,
    "Serial": _every_env_each_batch,
    "Multiprocessing": _worker_rule(limit_to_cores=True),
    "Multithreading": _equal_buffers,
    "Ray": _worker_rule(limit_to_cores=False),
}


def check_common(num_envs, seed) -> tuple[int, int]:
    """num_envs and seed, every backend's (COMMON), as ints."""
    return check_num_envs(num_envs), check_seed(seed)


def check_values(backend_cls: type, options: dict) -> None:
    """Each option's value, by its entry under the built-in backend ``backend_cls`` is (or derives
    from); box_actions by every backend's rule."""
    name = builtin_name(backend_cls)
    for key, value in options.items():
        entry = option(name, key) if name is not None else (ACTIONS if key == "box_actions" else None)
        if entry is not None:
            entry.check(value)


def check_rule(backend_cls: type, num_envs: int, options: dict) -> None:
    """The built-in backend's rule across options (``num_envs`` already checked)."""
    name = builtin_name(backend_cls)
    if name is not None:
        RULES[name](num_envs, options)


def check_options(backend_cls: type, num_envs, seed, options: dict) -> tuple[int, int]:
    """The table applied, as a backend's constructor applies it: num_envs and seed (returned as ints),
    each option, then the backend's rule across them. An APIUsageError names the first bad one."""
    num_envs, seed = check_common(num_envs, seed)
    check_values(backend_cls, options)
    check_rule(backend_cls, num_envs, options)
    return num_envs, seed
