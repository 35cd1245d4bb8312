"""config.ini: [env] picks the env and its parameters, [vec] picks and tunes the backend, [run] sizes a run.

    [env]
    name = cartpole            ; bundled native env, module:callable, gymnasium:<EnvId>, ocean:<env> or mujoco:<EnvId>
    some_param = 3             ; every other key is a keyword parameter of the env (typed)
    ocean_source = PATH        ; ocean:<env> only: a PufferLib tree (default: the pufferlib 3.0.0 sdist)

    [vec]
    backend = Multithreading   ; Serial | Multiprocessing | Multithreading | PufferEnv | Ray
    num_envs = 4096
    max_num_threads = auto     ; Multithreading: threads incl. the caller (0/1 = caller only)
    ...

Every [vec] key is validated here, with errors that name the file, section, key and allowed values;
make_from_config passes on the keys the chosen backend accepts.
"""

from __future__ import annotations

import configparser
import functools
import importlib
import inspect
from dataclasses import dataclass, field
from pathlib import Path

from .backends.multiprocessing import START_METHODS
from .backends.registry import backend_names, backend_options, canonical_name
from .errors import APIUsageError, EnvError
from .native import SCHEDULES, is_native_env


def _default_config() -> Path:
    # The repository's config.ini, installed beside the compiled module (see CMakeLists.txt).
    from . import DATA_DIR

    return DATA_DIR / "config.ini"


DEFAULT_CONFIG = _default_config()


class ConfigError(APIUsageError):
    """A config file or override is invalid; the message names file, section and key."""


def _int(minimum: int, auto: bool = False):
    def parse(text: str):
        if auto and text == "auto":
            return "auto"
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise ValueError(f"an integer >= {minimum}" + (" or 'auto'" if auto else ""))
        return value

    return parse


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0"):
        return False
    raise ValueError("true or false")


def _choice(*choices: str):
    def parse(text: str):
        if text not in choices:
            raise ValueError(" | ".join(choices))
        return text

    return parse


def _seconds(text: str):
    if text.lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not value > 0 or value == float("inf"):
        raise ValueError("a positive number of seconds or 'none'")
    return value


def _backend(text: str) -> str:
    try:
        return canonical_name(text)
    except APIUsageError:
        raise ValueError(" | ".join(backend_names())) from None


VEC_KEYS = {
    "backend": _backend,
    "num_envs": _int(1),
    "seed": _int(0),
    "num_workers": _int(1, auto=True),
    "batch_size": _int(1, auto=True),
    "zero_copy": _bool,
    "sync_traj": _bool,
    "overwork": _bool,
    "start_method": _choice(*START_METHODS),
    "max_num_threads": _int(0, auto=True),
    "schedule": _choice(*SCHEDULES),
    "pin_threads": _bool,
    "ray_address": str,
    "timeout": _seconds,
    "on_worker_failure": _choice("raise", "restart"),
}
RUN_KEYS = {"steps": _int(1), "repeats": _int(1), "warmup": _int(0)}
SECTIONS = ("env", "vec", "run")


def parse_value(text: str):
    """Typed value of an [env] parameter: int, float, bool, else the string."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    try:
        return _bool(text)
    except ValueError:
        return text


@dataclass
class Config:
    """A validated config.ini."""

    path: str
    env_name: str
    env_kwargs: dict = field(default_factory=dict)
    vec: dict = field(default_factory=dict)
    run: dict = field(default_factory=dict)
    ocean_source: str | None = None  # [env] ocean_source, resolved against the config's folder

    def effective_vec(self) -> dict:
        """The [vec] keys the configured backend takes (others are kept for other backends)."""
        accepted = set(backend_options(self.vec.get("backend", "Serial"))) | {"backend", "num_envs", "seed"}
        # "auto" leaves the choice to the backend's default.
        return {k: v for k, v in self.vec.items() if k in accepted and v != "auto"}


def _error(path, section: str, key: str, allowed: str, got) -> ConfigError:
    return ConfigError(f"{path}: [{section}] {key} = {got!r} is invalid; expected {allowed}")


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


def load(path: str | Path | None = None, overrides: dict[str, str] | None = None) -> Config:
    """Reads and validates a config file; ``overrides`` maps "section.key" to a string value."""
    path = Path(path) if path is not None else DEFAULT_CONFIG
    parser = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), interpolation=None)
    parser.optionxform = str  # keep parameter names' case
    text = _read_text(path)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as error:
        raise ConfigError(f"{path}: cannot parse: {error}") from None
    for dotted, value in (overrides or {}).items():
        section, _, key = dotted.partition(".")
        if section not in SECTIONS or not key:
            raise ConfigError(f"override --{dotted}: use --env.<key>, --vec.<key> or --run.<key>")
        if not parser.has_section(section):
            parser.add_section(section)
        parser.set(section, key, str(value))
    for section in parser.sections():
        if section not in SECTIONS:
            raise ConfigError(f"{path}: unknown section [{section}]; valid sections: {list(SECTIONS)}")

    if not parser.has_option("env", "name"):
        raise ConfigError(
            f"{path}: [env] name is missing (a bundled env such as cartpole, module:callable, or gymnasium:<EnvId>)"
        )
    env_kwargs = {k: parse_value(v) for k, v in parser.items("env") if k not in ("name", "ocean_source")}
    config = Config(str(path), parser.get("env", "name"), env_kwargs)
    if parser.has_option("env", "ocean_source"):
        config.ocean_source = str(path.parent / Path(parser.get("env", "ocean_source")).expanduser())
    for section, keys, target in (("vec", VEC_KEYS, config.vec), ("run", RUN_KEYS, config.run)):
        if not parser.has_section(section):
            continue
        for key, text in parser.items(section):
            if key not in keys:
                raise ConfigError(f"{path}: unknown key [{section}] {key}; valid keys: {sorted(keys)}")
            try:
                target[key] = keys[key](text.strip())
            except ValueError as error:
                raise _error(path, section, key, str(error), text) from None
    resolve_env(config)  # fail now on a missing env, not in the middle of a run
    return config


def resolve_env(config: Config):
    """The env creator named by [env] name."""
    name = config.env_name
    from .envs import BUNDLED

    if name in BUNDLED:
        return BUNDLED[name]
    module_name, _, attr = name.partition(":")
    if module_name == "ocean":
        from .ocean import OceanError, available, env_class

        try:
            if not attr:
                raise OceanError(f"name an Ocean env: ocean:<env>, one of {available(config.ocean_source)}")
            return env_class(attr, config.ocean_source, **config.env_kwargs)
        except OceanError as error:
            raise ConfigError(f"{config.path}: [env] name = {name!r}: {error}") from None
    if module_name == "mujoco":  # mujoco:<Gymnasium id>; the other [env] keys are the task's keywords
        from .mujoco import env_class as mujoco_class

        try:
            return mujoco_class(attr, **config.env_kwargs)
        except APIUsageError as error:
            raise ConfigError(f"{config.path}: [env] name = {name!r}: {error}") from None
    if not attr:
        raise ConfigError(
            f"{config.path}: [env] name = {name!r} is not a bundled env "
            f"({sorted(BUNDLED)}) nor module:callable nor gymnasium:<EnvId>"
        )
    if module_name == "gymnasium" and not attr.isidentifier():
        import gymnasium

        if attr not in gymnasium.registry:
            raise ConfigError(f"{config.path}: [env] name = {name!r}: gymnasium has no env id {attr!r}")
        return functools.partial(gymnasium.make, attr)
    try:
        module = importlib.import_module(module_name)
        creator = getattr(module, attr)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"{config.path}: [env] name = {name!r} cannot be imported: {error}") from None
    if not callable(creator):
        raise ConfigError(f"{config.path}: [env] name = {name!r} is not callable")
    _check_callable_with(creator, config)
    return creator


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
