"""argparse types of the `shoal` command's numbers: each checked as it is parsed, so that a bad value
is a usage message naming the option, its bounds and, past the upper one, why it is there (a value that
would run far past any budget is a typo), never a traceback or a run that does not end."""

from __future__ import annotations

import argparse
import math

from ..errors import APIUsageError
from .config import RUN_OPTIONS, bounded_count


def bounded_int(name: str, minimum: int, maximum: int, why: str):
    """A count in [minimum, maximum]; ``why`` says why a larger one is refused."""

    def parse(text: str) -> int:
        value = at_least(text, minimum)
        try:
            return bounded_count(value, name, minimum, maximum, why)
        except APIUsageError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def at_least(text: str, minimum: int) -> int:
    """An integer >= minimum, refused in the words `shoal` has always used ("must be an integer >= 1,
    got '0'"); the upper bound is the caller's."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
    return value


def bounded_float(name: str, minimum: float, maximum: float, what: str, why: str, above_minimum: bool = False):
    """A finite number in [minimum, maximum] (or (minimum, maximum] with ``above_minimum``); ``what``
    names it ("a number of seconds"), ``why`` says why a larger one is refused."""
    bounds = f"{'(' if above_minimum else '['}{_number(minimum)}, {_number(maximum)}]"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be {what} in {bounds}, got {text!r}") from None
        low_ok = value > minimum if above_minimum else value >= minimum
        if not (math.isfinite(value) and low_ok and value <= maximum):
            reason = f" ({why})" if math.isfinite(value) and value > maximum else ""
            raise argparse.ArgumentTypeError(f"{name} must be {what} in {bounds}, got {text}{reason}")
        return value

    return parse


def _number(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:g}"


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser whose errors are one line (argparse's own print the usage first)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (usage: {self.prog} --help)\n")


def run_option_arg(name: str):
    """A [run] key given as an option (`shoal run --steps`, `--seconds`): the key's own check."""

    def parse(text: str):
        if RUN_OPTIONS[name].kind == "int":
            at_least(text, 1)
        try:
            return RUN_OPTIONS[name].from_text(text)
        except APIUsageError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse
