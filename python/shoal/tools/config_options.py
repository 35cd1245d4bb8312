"""config.ini's option tables: each [vec] key as the backend registry describes it, each [run] key
with its bounds, the sections, and the [env] keys that are not the env's parameters."""

from __future__ import annotations

from .. import families
from ..backends.registry import COMMON, OPTIONS, Option
from ..errors import APIUsageError


def _vec_options() -> dict[str, Option]:
    """Every [vec] key of the built-in backends (beside backend), each as the registry describes it."""
    table: dict[str, Option] = {}
    for opt in (*COMMON, *(opt for opts in OPTIONS.values() for opt in opts)):
        table.setdefault(opt.name, opt)
    return table


VEC_OPTIONS = _vec_options()
VEC_KEYS = ("backend", *VEC_OPTIONS)
#: Upper bounds of [run] values, each where a larger value can only be a mistake (a typo, a
#: value meant for another key): a run that long would take more than a day at any speed a
#: machine steps (10**10 agent steps, or 10**7 batch steps, a second), and a timing window or a
#: repeat count beyond them measures nothing a shorter one does not.
MAX_RUN_STEPS = 10**15
MAX_WARMUP = 10**12
MAX_RUN_SECONDS = 86_400.0
MAX_REPEATS = 1000
RUN_OPTIONS = {
    "steps": Option(
        "steps",
        None,
        "int",
        lambda v: bounded_count(v, "steps", 1, MAX_RUN_STEPS, "more agent steps than a day of stepping at any speed"),
        "agent steps timed, at least (unset: the window is bounded by seconds alone)",
        f"1 .. {MAX_RUN_STEPS:.0e}",
    ),
    "seconds": Option(
        "seconds",
        5.0,
        "seconds",
        lambda v: _seconds(v, "seconds", MAX_RUN_SECONDS),
        "the timed window lasts this long (longer only where steps asks for more)",
        "0 .. 86400",
    ),
    "repeats": Option(
        "repeats",
        1,
        "int",
        lambda v: bounded_count(v, "repeats", 1, MAX_REPEATS, "more timed windows than a run needs for a spread"),
        "timed windows (median and range reported when > 1)",
        f"1 .. {MAX_REPEATS}",
    ),
    "warmup": Option(
        "warmup",
        10,
        "int",
        lambda v: bounded_count(v, "warmup", 0, MAX_WARMUP, "more batch steps than a day of stepping at any speed"),
        "untimed batch steps first",
        f"0 .. {MAX_WARMUP:.0e}",
    ),
}
#: [run] keys a config takes only from the user (the file or command line), never from the embedded file
USERS_ONLY_RUN_KEYS = ("steps",)
SECTIONS = ("env", "vec", "run")
#: [env] keys that are not the env's parameters: its name, a library's class name, the env families' own
ENV_KEYS = ("name", "class_name", *families.BUILTIN_OPTIONS)


def bounded_count(value, name: str, minimum: int, maximum: int, why: str) -> int:
    """An integer in [minimum, maximum]; the error says why a larger one is refused."""
    from ..validation import check_integer, is_integer

    if is_integer(value) and value > maximum:
        raise APIUsageError(f"{name} must be an integer in [{minimum}, {maximum:,}], got {value:,} ({why}: a typo?)")
    return check_integer(value, name, minimum, maximum)


def _seconds(value, name: str, maximum: float) -> float:
    """A finite number of seconds in [0, maximum]."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise APIUsageError(f"{name} must be a number of seconds in [0, {maximum:g}], got {value!r}")
    if not 0 <= value <= maximum:
        raise APIUsageError(
            f"{name} must be a number of seconds in [0, {maximum:g}], got {value:g} (a window over a day is a mistake)"
            if value > maximum
            else f"{name} must be a number of seconds in [0, {maximum:g}], got {value:g}"
        )
    return float(value)


def _option(backend: str, key: str) -> Option | None:
    """The registry's entry for ``key`` under ``backend`` (a registered class's options have none)."""
    from ..backends.registry import option

    return next((o for o in COMMON if o.name == key), None) or option(backend, key)
