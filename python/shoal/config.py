"""config.ini: [env] picks the env and its parameters, [vec] picks and tunes the backend, [run] sizes a run.

    [env]
    name = cartpole            ; bundled native env, module:callable, gymnasium:<EnvId>, ocean:<env>,
                               ; mujoco:<EnvId>, atari:<game>, or path/to/env.so[:EXPORT] (class_name = ... optional)
    some_param = 3             ; every other key is a keyword parameter of the env (typed)
    ocean_source = PATH        ; ocean:<env> only: a PufferLib tree (default: the pufferlib 3.0.0 sdist)

    [vec]
    backend = Multithreading   ; Serial | Multiprocessing | Multithreading | PufferEnv | Ray
    num_envs = 4096
    max_num_threads = auto     ; the backend's options: see backends/registry.py's OPTIONS
    ...

A config file (or command-line overrides) need not say everything: [vec] and [run] start from the
embedded config.ini, of whose [vec] keys only those the chosen backend takes are kept. Two values
are the user's only, never inherited: [run] steps (a run is bounded by [run] seconds unless the user
asks for a step count) and, for an Atari game, [vec] num_envs (the embedded one is CartPole's 4096:
each Atari env loads its ROM on reset, so the family's default is shoal.atari.family.ENVS_PER_CPU per usable CPU).
A [vec] key the file or command line sets must apply to the chosen backend. Relative paths in [env]
(ocean_source, a library's path, Atari's rom, a MuJoCo xml_file starting with ".") are resolved
against the config file's folder, those of the command line against the working directory. Values
are checked by the registry's option table, so a bad value reads as make() would report it, prefixed
by where it was written.
"""

from __future__ import annotations

import ast
import configparser
import difflib
import functools
import importlib
import inspect
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import families
from .backends.registry import COMMON, OPTIONS, Option, backend_names, backend_options, canonical_name
from .errors import APIUsageError, EnvError
from .native import is_native_env, load_env
from .validation import parse_value

#: where an override given as --section.key on the command line is said to come from
COMMAND_LINE = "command line"


def _default_config() -> Path:
    # The repository's config.ini, installed beside the compiled module (see CMakeLists.txt).
    from . import DATA_DIR

    return DATA_DIR / "config.ini"


DEFAULT_CONFIG = _default_config()


class ConfigError(APIUsageError):
    """A config file or override is invalid; the message names file, section and key."""


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
    from .validation import check_integer, is_integer

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


def _value(option: Option | None, section: str, key: str, text: str, where: str):
    if option is None:  # an option of a backend registered at run time: typed as [env] values are
        return parse_value(text)
    try:
        return option.from_text(text.strip())
    except APIUsageError as error:  # the registry's check: the words make() uses for the same value
        raise ConfigError(f"{where}: [{section}] {key} = {text!r}: {error}") from None


def _backend(written, defaults) -> tuple[str, str]:
    """(the chosen backend, where it was chosen)."""
    text, where = written.get(("vec", "backend")) or (defaults[("vec", "backend")][0], "the embedded config.ini")
    try:
        return canonical_name(text.strip()), where
    except APIUsageError:
        raise ConfigError(
            f"{where}: [vec] backend = {text!r} is invalid; expected {' | '.join(backend_names())}"
        ) from None


def load(path: str | Path | None = None, overrides: dict[str, str] | None = None) -> Config:
    """Reads and validates a config file; ``overrides`` maps "section.key" to a string value.

    [vec] and [run] keys the file does not set come from the embedded config.ini (see the module doc).
    Every unknown or misplaced key is reported in one error, each with the nearest valid key.
    """
    path = Path(path) if path is not None else DEFAULT_CONFIG
    written = _written(path, overrides)
    defaults = {} if path == DEFAULT_CONFIG else _written(DEFAULT_CONFIG, None)
    defaults = {**defaults, **{k: v for k, v in written.items() if v[1] == str(DEFAULT_CONFIG)}}
    written = {k: v for k, v in written.items() if v[1] != str(DEFAULT_CONFIG)}

    backend, _ = _backend(written, defaults)
    takes = set(backend_options(backend))
    problems = KeyProblems()
    for (section, key), (_, where) in written.items():
        if section == "vec" and key != "backend":
            known = set(VEC_KEYS) | takes
            if key not in known:
                problems.unknown(where, "vec", key, known)
            elif key not in takes and key not in ("num_envs", "seed"):
                problems.add(
                    where,
                    f"[vec] {key} does not apply to backend {backend}; "
                    f"{backend} takes: {', '.join(['num_envs', 'seed', *sorted(takes)])}",
                )
        elif section == "run" and key not in RUN_OPTIONS:
            problems.unknown(where, "run", key, RUN_OPTIONS)

    # [env] is the user's own: a file naming no env does not inherit cartpole's
    env_source = {**defaults, **written} if path == DEFAULT_CONFIG else written
    env = {key: (text, where) for (section, key), (text, where) in env_source.items() if section == "env"}
    if "name" not in env:
        close = difflib.get_close_matches("name", list(env), n=1)
        problems.add(
            str(path),
            "[env] name is missing (a bundled env such as cartpole, module:callable, gymnasium:<EnvId>, "
            f"{families.syntax()} or path/to/env.so)" + (f"; is [env] {close[0]} meant to be name?" if close else ""),
        )
        problems.raise_any()
    config = Config(
        str(path),
        env["name"][0].strip(),
        {k: parse_value(text) for k, (text, _) in env.items() if k not in ENV_KEYS},
    )
    config.folder = str(path.parent) if path != DEFAULT_CONFIG else "."
    config.class_name = env.get("class_name", ("",))[0].strip() or None
    for key in families.BUILTIN_OPTIONS:
        if key in env:
            config.env_options[key] = str(Path(config.folder) / Path(env[key][0]).expanduser())
    _resolve_paths(config, env)
    parameters = env_parameters(config)
    if parameters is not None:
        for key, (_, where) in env.items():
            if key not in ENV_KEYS and key not in parameters:
                problems.unknown(where, "env", key, {"name", *parameters})
    problems.raise_any()

    config.vec["backend"] = backend
    for (section, key), (text, where) in written.items():
        if section == "vec" and key != "backend":
            config.vec[key] = _value(_option(backend, key), "vec", key, text, where)
        elif section == "run":
            config.run[key] = _value(RUN_OPTIONS[key], "run", key, text, where)
    for (section, key), (text, where) in defaults.items():
        if section == "vec" and key not in config.vec and (key in takes or key in ("num_envs", "seed")):
            config.vec[key] = _value(_option(backend, key), "vec", key, text, where)
        elif section == "run" and key not in config.run and key not in USERS_ONLY_RUN_KEYS:
            config.run[key] = _value(RUN_OPTIONS[key], "run", key, text, where)
    family = _family(config)
    if hasattr(family, "default_num_envs") and ("vec", "num_envs") not in written:
        from .cpus import usable_cpus

        config.vec["num_envs"] = family.default_num_envs(usable_cpus())
    resolve_env(config)  # fail now on a missing env, not in the middle of a run
    return config


def _resolve_paths(config: Config, env: dict) -> None:
    """[env] values that are file paths, relative ones resolved against the config file's folder (a
    command line's against the working directory), absolute so that worker processes find them too."""
    for key, is_path in getattr(_family(config), "PATH_KEYS", {}).items():
        if key not in env or not isinstance(config.env_kwargs.get(key), str) or not is_path(config.env_kwargs[key]):
            continue
        folder = Path(config.folder) if env[key][1] != COMMAND_LINE else Path.cwd()
        config.env_kwargs[key] = str((folder / Path(config.env_kwargs[key]).expanduser()).absolute())


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


def env_parameters(config: Config) -> list[str] | None:
    """The keyword parameters the env of [env] name takes, where they are known before it is built:
    a native env's (bundled, mujoco:, a library) from its spec, a Python creator's from its signature,
    gymnasium:<EnvId>'s from its entry point and gymnasium.make. None when they are not known (an
    Ocean env's, a creator taking **kwargs) or the name itself is wrong (resolve_env says why)."""
    from .envs import BUNDLED

    name = config.env_name
    module_name, _, attr = name.partition(":")
    try:
        if name in BUNDLED or re.fullmatch(r"(.+\.(?:so|dylib|dll))(?::(\w+))?", name):
            creator = resolve_env(config)
        elif module_name in families.prefixes():
            return families.load(module_name).parameters(attr, config.env_options)
        elif not attr:
            return None
        elif module_name == "gymnasium" and not attr.isidentifier():
            return _gymnasium_parameters(attr)
        else:
            _look_beside_config(config, module_name)
            creator = getattr(importlib.import_module(module_name), attr)
    except Exception:  # a wrong name: resolve_env reports it, in its own words
        return None
    if is_native_env(creator):
        return [p["name"] for p in creator.describe()["params"]] + ["max_episode_steps"]
    return _keywords(creator)


def _family(config: Config):
    """The module of the env family [env] name belongs to (shoal.families), or None."""
    prefix = config.env_name.partition(":")[0]
    return families.load(prefix) if ":" in config.env_name and prefix in families.prefixes() else None


def _keywords(creator) -> list[str] | None:
    """The keyword arguments ``creator`` takes; None when it takes any (**kwargs) or does not say."""
    try:
        parameters = inspect.signature(creator).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in parameters if p.kind in kinds]


def _gymnasium_parameters(env_id: str) -> list[str] | None:
    """gymnasium.make(env_id, **kwargs)'s keywords: make's own and those of the env's entry point."""
    import gymnasium
    from gymnasium.envs.registration import load_env_creator

    spec = gymnasium.spec(env_id)
    entry = load_env_creator(spec.entry_point) if isinstance(spec.entry_point, str) else spec.entry_point
    own = _keywords(entry)
    if own is None:
        return None
    made = [k for k in inspect.signature(gymnasium.make).parameters if k not in ("id", "kwargs")]
    return sorted({*own, *spec.kwargs, *made})


def _option(backend: str, key: str) -> Option | None:
    """The registry's entry for ``key`` under ``backend`` (a registered class's options have none)."""
    from .backends.registry import option

    return next((o for o in COMMON if o.name == key), None) or option(backend, key)


def resolve_env(config: Config):
    """The env creator named by [env] name."""
    name = config.env_name
    from .envs import BUNDLED

    if name in BUNDLED:
        return BUNDLED[name]
    library = re.fullmatch(r"(.+\.(?:so|dylib|dll))(?::(\w+))?", name)  # path/to/env.so[:EXPORT] (.dylib, .dll)
    if library:
        return _native_library(config, Path(library.group(1)), library.group(2) or "")
    module_name, _, attr = name.partition(":")
    if module_name in families.prefixes():  # <family>:<env>; the other [env] keys are the env's keywords
        try:
            return families.load(module_name).env_class(attr, config.env_options, **config.env_kwargs)
        except APIUsageError as error:
            raise ConfigError(f"{config.path}: [env] name = {name!r}: {error}") from None
    if not attr:
        raise ConfigError(
            f"{config.path}: [env] name = {name!r} is not a bundled env "
            f"({sorted(BUNDLED)}) nor module:callable, gymnasium:<EnvId>, {families.syntax()} or path/to/env.so"
        )
    if module_name == "gymnasium" and not attr.isidentifier():
        import gymnasium

        if attr not in gymnasium.registry:
            raise ConfigError(f"{config.path}: [env] name = {name!r}: gymnasium has no env id {attr!r}")
        return functools.partial(gymnasium.make, attr)
    _look_beside_config(config, module_name)
    try:
        module = importlib.import_module(module_name)
        creator = getattr(module, attr)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"{config.path}: [env] name = {name!r} cannot be imported: {error}") from None
    if not callable(creator):
        raise ConfigError(f"{config.path}: [env] name = {name!r} is not callable")
    _check_callable_with(creator, config)
    return creator


def _native_library(config: Config, path: Path, export: str):
    """A native env class from a library built against shoal/env.h; its export NAME defaults to the file's stem."""
    path = Path(config.folder) / path.expanduser()
    try:
        return load_env(path, export or path.stem, config.class_name)
    except APIUsageError as error:
        hint = (
            ""
            if export
            else f" (the library's SHOAL_EXPORT_ENV NAME is taken to be {path.stem!r}; name = {path}:NAME picks another)"
        )
        raise ConfigError(f"{config.path}: [env] name = {config.env_name!r}: {error}{hint}") from None


def _look_beside_config(config: Config, module_name: str) -> None:
    """Puts the config file's folder first on sys.path when ``module_name`` is a module there, as a
    script's own folder is (worker processes inherit sys.path)."""
    folder = Path(config.folder).resolve()
    top = module_name.split(".")[0]
    if (folder / f"{top}.py").is_file() or (folder / top / "__init__.py").is_file():
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))


def _check_callable_with(creator, config: Config) -> None:
    """ConfigError unless ``creator`` takes the [env] parameters as keywords (and nothing else)."""
    try:
        signature = inspect.signature(creator)
    except (TypeError, ValueError):
        return  # builtins and extension types may not tell; calling them will
    try:
        signature.bind(**config.env_kwargs)
    except TypeError as error:
        keys = ", ".join(config.env_kwargs) or "none"
        raise ConfigError(
            f"{config.path}: [env] name = {config.env_name!r}: {config.env_name}{signature} cannot be called "
            f"with the [env] parameters ({keys}): {error}"
        ) from None


def make_from_config(config: Config | str | Path | None = None, overrides: dict[str, str] | None = None):
    """Builds the vector env a config describes."""
    from .vector import make

    if not isinstance(config, Config):
        config = load(config, overrides)
    creator = resolve_env(config)
    vec = config.effective_vec()
    env_kwargs = dict(config.env_kwargs)
    backend = vec.pop("backend", "Serial")
    num_envs = vec.pop("num_envs", 1)
    if backend == "PufferEnv" and is_native_env(creator):
        env_kwargs["num_envs"] = num_envs  # one native object holding every env
        num_envs = 1
    try:
        return make(creator, env_kwargs=env_kwargs, backend=backend, num_envs=num_envs, **vec)
    except APIUsageError as error:
        raise ConfigError(f"{config.path}: {error}") from None
    except EnvError:
        raise
    except Exception as error:
        if is_native_env(creator):  # shoal's own env classes: a bug of shoal's, with its traceback
            raise
        raise ConfigError(  # the Python creator [env] name picks (user code) failed
            f"{config.path}: [env] name = {config.env_name!r}: making the env failed: {type(error).__name__}: {error}"
        ) from error
