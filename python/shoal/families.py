"""Env families: the prefix of [env] name (``<prefix>:<env>``) -> a lazily imported module.

The built-in families are listed here by module name, so nothing is imported until a name with that
prefix is used; a third-party package adds one through the ``shoal.env_families`` entry point group
(``corridor = my_package``, see docs/native-sdk.md "Env families"). A family module provides:

    env_class(name, options, **kwargs)   the env creator of ``<prefix>:<name>``; ``options`` holds the
                                         family's own [env] keys (BUILTIN_OPTIONS); an APIUsageError for a bad name
    parameters(name, options)            the keywords the env takes, or None when they are not known
    names(options)                       the env names it offers
    summary()                            its line in `shoal envs`

and optionally PATH_KEYS (keyword -> whether a value is a path to resolve), default_num_envs(cpus) (num_envs when the
user sets none) and add_commands(subparsers) (subcommands of `shoal`).
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

from .errors import APIUsageError

GROUP = "shoal.env_families"
#: prefix -> module; the order is that of `shoal envs` and of the messages naming the syntax
BUILTIN = {"mujoco": "shoal.mujoco.family", "atari": "shoal.atari.family", "ocean": "shoal.ocean.family"}
#: the built-in families' own [env] keys (each a path, resolved against the config's folder), known
#: without importing them
BUILTIN_OPTIONS = ("ocean_source",)
#: how the built-in families' names read in messages
_SYNTAX = {"mujoco": "mujoco:<EnvId>", "atari": "atari:<game>", "ocean": "ocean:<env>"}


@cache
def _entry_points() -> dict:
    from importlib.metadata import entry_points

    found: dict = {}
    for point in entry_points(group=GROUP):
        if point.name in BUILTIN:
            raise APIUsageError(f"env family {point.name!r} of {point.value} clashes with shoal's own")
        if point.name in found and found[point.name].value != point.value:
            raise APIUsageError(
                f"env family {point.name!r} is claimed by both {found[point.name].value} and {point.value}"
            )
        found[point.name] = point
    return found


def prefixes() -> list[str]:
    """Every family's prefix: the built-in ones, then the installed packages' ones."""
    return [*BUILTIN, *sorted(_entry_points())]


def load(prefix: str) -> ModuleType:
    """The module of family ``prefix`` (KeyError when there is none)."""
    if prefix in BUILTIN:
        return importlib.import_module(BUILTIN[prefix])
    return _entry_points()[prefix].load()


def syntax() -> str:
    """The families' names as messages write them: "mujoco:<EnvId>, atari:<game>, ocean:<env>"."""
    return ", ".join([*_SYNTAX.values(), *(f"{p}:<env>" for p in sorted(_entry_points()))])


def option_keys() -> tuple[str, ...]:
    """The built-in families' own [env] keys (not parameters of the env)."""
    return tuple(key for prefix in BUILTIN for key in getattr(load(prefix), "OPTIONS", ()))
