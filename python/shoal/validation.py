"""Checks of user-supplied arguments, each raising an APIUsageError that names the argument."""

from __future__ import annotations

import numbers

import numpy as np

from .errors import APIUsageError


def is_integer(value) -> bool:
    """True for Python and numpy integers; False for bools, which are integers only to Python."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def check_integer(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int, or an APIUsageError unless it is an integer within [minimum, maximum]."""
    in_range = is_integer(value) and (minimum is None or value >= minimum) and (maximum is None or value <= maximum)
    if not in_range:
        if maximum is None:
            bounds = f" >= {minimum}" if minimum is not None else ""
        else:
            bounds = f" in [{minimum}, {maximum}]"
        raise APIUsageError(f"{name} must be an integer{bounds}, got {value!r}")
    return int(value)


def check_bool(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise APIUsageError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_choice(value, name: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise APIUsageError(f"{name} must be one of {choices}, got {value!r}")
    return value


def parse_bool(text: str) -> bool:
    """A config's boolean: true/yes/on/1 or false/no/off/0 (any case); ValueError otherwise."""
    lowered = text.lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0"):
        return False
    raise ValueError("true or false")


def parse_value(text: str):
    """Typed value of an [env] parameter: int, float, bool, else the string."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    try:
        return parse_bool(text)
    except ValueError:
        return text


def check_ray_address(address):
    """A Ray cluster address ('host:port', 'auto', 'ray://...') or None (a local instance)."""
    if address is not None and (not isinstance(address, str) or not address.strip()):
        raise APIUsageError(
            f"ray_address must be a Ray cluster address such as '10.0.0.1:6379' or "
            f"'auto', or None to start a local Ray instance; got {address!r}"
        )
    return address


# The options every vector shares with the native env classes (make()'s option table applies them to
# the backends, NativeEnv's constructor to the envs made directly): each rule worded here only.

#: how a native vector shares its envs out to its threads (Multithreading's schedule)
SCHEDULES = ("static", "dynamic")


def check_num_envs(num_envs) -> int:
    """The number of envs of a vector: an integer >= 1."""
    return check_integer(num_envs, "num_envs", 1)


def check_schedule(schedule) -> str:
    return check_choice(schedule, "schedule", SCHEDULES)


def check_num_buffers(num_buffers, num_envs: int) -> int:
    """A native vector's buffers: equal shares of its (checked) ``num_envs`` envs."""
    num_buffers = check_integer(num_buffers, "num_buffers", 1)
    if num_envs % num_buffers:
        raise APIUsageError(f"num_buffers must divide num_envs ({num_envs}), got {num_buffers}")
    return num_buffers
