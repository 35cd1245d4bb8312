"""Reading a config.ini file: its text, its sections and keys, each with where it was written (the
file or the command line), and one error that names every unknown or misplaced key at once."""

from __future__ import annotations

import ast
import configparser
import difflib
from dataclasses import dataclass, field
from pathlib import Path

from ..backends.registry import backend_options
from ..errors import APIUsageError
from .config_options import SECTIONS

#: where an override given as --section.key on the command line is said to come from
COMMAND_LINE = "command line"


class ConfigError(APIUsageError):
    """A config file or override is invalid; the message names file, section and key."""


@dataclass
class Config:
    """A validated config.ini."""

    path: str
    env_name: str
    env_kwargs: dict = field(default_factory=dict)
    vec: dict = field(default_factory=dict)
    run: dict = field(default_factory=dict)
    env_options: dict = field(default_factory=dict)  # an env family's own [env] keys (paths, resolved)
    folder: str = "."  # where relative env paths and modules are looked up: the config file's folder
    class_name: str | None = None  # [env] class_name: the class name of a native env loaded from a .so

    def effective_vec(self) -> dict:
        """The [vec] keys the configured backend takes (others are kept for other backends)."""
        accepted = set(backend_options(self.vec.get("backend", "Serial"))) | {"backend", "num_envs", "seed"}
        # "auto" leaves the choice to the backend's default.
        return {k: v for k, v in self.vec.items() if k in accepted and v != "auto"}


# A config file is a few hundred bytes; anything far larger is not one (and is not read whole).
MAX_CONFIG_BYTES = 1 << 20


def _read_text(path: Path) -> str:
    """The text of a config file, or a ConfigError that says what the path is instead."""
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    if path.is_dir():
        raise ConfigError(f"config file {path} is a directory; pass the path of a config .ini file")
    if not path.is_file():
        raise ConfigError(
            f"config file {path} is not a regular file (a device, pipe or socket); pass the path of a config .ini file"
        )
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"config file {path} cannot be read: {error.strerror or error}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES:,} bytes; it is not a config file")
    try:
        return data.decode("utf-8-sig")  # a byte order mark (some editors write one) is not text
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte 0x{data[error.start]:02x} at offset "
            f"{error.start}); is it a binary file?"
        ) from None


def _parse(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), interpolation=None)
    parser.optionxform = str  # keep parameter names' case
    text = _read_text(path)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as error:
        raise ConfigError(f"{path}: {_parse_problem(error)}") from None
    return parser


def _parse_problem(error: configparser.Error) -> str:
    """configparser's error as one line: the line number, what is there and what is expected (its own
    messages span several lines and quote the file name again)."""
    sections = ", ".join(f"[{s}]" for s in SECTIONS)
    if isinstance(error, configparser.MissingSectionHeaderError):
        return (
            f"line {error.lineno}: {error.line.strip()!r} comes before any section header; "
            f"a config file's keys go under {sections} (e.g. [env] then name = cartpole)"
        )
    if isinstance(error, configparser.DuplicateSectionError):
        return f"line {error.lineno}: section [{error.section}] appears twice; write each section once"
    if isinstance(error, configparser.DuplicateOptionError):
        return f"line {error.lineno}: [{error.section}] {error.option} is set twice; keep one line"
    if isinstance(error, configparser.ParsingError):
        lineno, line = error.errors[0]
        if line[:1] in ("'", '"'):  # Python before 3.12 keeps the line's repr
            line = ast.literal_eval(line)
        more = f" (and {len(error.errors) - 1} more such lines)" if len(error.errors) > 1 else ""
        return (
            f"line {lineno}: cannot parse {line.strip()!r}{more}; "
            f"expected key = value, a [section] header ({sections}) or a ; comment"
        )
    return "cannot parse: " + " ".join(str(error).split())


def _written(path: Path, overrides: dict[str, str] | None) -> dict[tuple[str, str], tuple[str, str]]:
    """(section, key) -> (text, where it was written: the file's path or "command line")."""
    parser = _parse(path)
    for section in parser.sections():
        if section not in SECTIONS:
            raise ConfigError(f"{path}: unknown section [{section}]; valid sections: {list(SECTIONS)}")
    written = {
        (section, key): (text, str(path)) for section in parser.sections() for key, text in parser.items(section)
    }
    for (section, key), (text, _) in written.items():
        if "\n" in text:  # configparser reads an indented line as the continuation of the value above it
            raise ConfigError(
                f"{path}: [{section}] {key} = {text!r} spans several lines: an indented line continues the "
                "value above it; unindent that line"
            )
    for dotted, value in (overrides or {}).items():
        section, _, key = dotted.partition(".")
        if section not in SECTIONS or not key:
            raise ConfigError(f"{COMMAND_LINE}: override --{dotted}: use --env.<key>, --vec.<key> or --run.<key>")
        written[(section, key)] = (str(value), COMMAND_LINE)
    return written


class KeyProblems:
    """Every unknown or misplaced key of a config, gathered so that one error names them all (a user
    fixing one typo per run would otherwise meet them one at a time)."""

    def __init__(self):
        self._unknown: dict[str, list[tuple[str, str, list[str]]]] = {}  # where -> (section, key, valid keys)
        self._other: dict[str, list[str]] = {}

    def unknown(self, where: str, section: str, key: str, valid) -> None:
        self._unknown.setdefault(where, []).append((section, key, sorted(valid)))
        self._other.setdefault(where, [])

    def add(self, where: str, text: str) -> None:
        self._unknown.setdefault(where, [])
        self._other.setdefault(where, []).append(text)

    def message(self) -> str:
        """One line: per place (file or command line), its unknown keys, then its other problems."""
        groups = []
        for where, unknown in self._unknown.items():
            parts = [_unknown_keys_text(unknown)] if unknown else []
            groups.append(f"{where}: " + "; ".join(parts + self._other[where]))
        return "; ".join(groups)

    def raise_any(self) -> None:
        if self._unknown:
            raise ConfigError(self.message())


def _did_you_mean(key: str, valid: list[str]) -> str | None:
    close = difflib.get_close_matches(key, valid, n=1)
    return close[0] if close else None


def _unknown_keys_text(unknown: list[tuple[str, str, list[str]]]) -> str:
    if len(unknown) == 1:
        section, key, valid = unknown[0]
        close = _did_you_mean(key, valid)
        hint = f"; did you mean {close}?" if close else ""
        return f"unknown key [{section}] {key}{hint} (valid keys: {valid})"
    named = []
    for section, key, valid in unknown:
        close = _did_you_mean(key, valid)
        named.append(f"[{section}] {key}" + (f" (did you mean {close}?)" if close else ""))
    valid_of = {section: valid for section, _, valid in unknown}
    listed = "; ".join(f"valid [{section}] keys: {valid}" for section, valid in valid_of.items())
    return f"{len(unknown)} unknown keys: {', '.join(named)} ({listed})"
