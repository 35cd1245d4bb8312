"""config.ini: [env] picks the env and its parameters, [vec] picks and tunes the backend, [run] sizes a run.

    [env]
    name = cartpole            ; bundled native env, module:callable, gymnasium:<EnvId>, ocean:<env>,
                               ; mujoco:<EnvId>, atari:<game>, or path/to/env.so[:EXPORT] (class_name = ... optional)
    some_param = 3             ; every other key is a keyword parameter of the env (typed)
    ocean_source = PATH        ; ocean:<env> only: a PufferLib tree (default: the pufferlib 3.0.0 sdist)

    [vec]
    backend = Multithreading   ; Serial | Multiprocessing | Multithreading | PufferEnv | Ray
    num_envs = 4096
    max_num_threads = auto     ; the backend's options: see backends/options.py's OPTIONS
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

import difflib
from pathlib import Path

from .. import families
from ..backends.registry import Option, backend_names, backend_options, canonical_name
from ..errors import APIUsageError, EnvError
from ..native import is_native_env
from ..validation import parse_value

# The parts, re-exported: shoal.config's names (and the private ones tests reach) stay where they were.
from .config_env import (  # noqa: F401
    _check_callable_with,
    _family,
    _gymnasium_parameters,
    _keywords,
    _look_beside_config,
    _native_library,
    _resolve_paths,
    env_parameters,
    resolve_env,
)
from .config_file import (  # noqa: F401
    COMMAND_LINE,
    MAX_CONFIG_BYTES,
    Config,
    ConfigError,
    KeyProblems,
    _did_you_mean,
    _parse,
    _parse_problem,
    _read_text,
    _unknown_keys_text,
    _written,
)
from .config_options import (  # noqa: F401
    ENV_KEYS,
    MAX_REPEATS,
    MAX_RUN_SECONDS,
    MAX_RUN_STEPS,
    MAX_WARMUP,
    RUN_OPTIONS,
    SECTIONS,
    USERS_ONLY_RUN_KEYS,
    VEC_KEYS,
    VEC_OPTIONS,
    _option,
    _seconds,
    _vec_options,
    bounded_count,
)


def _default_config() -> Path:
    # The repository's config.ini, installed beside the compiled module (see CMakeLists.txt).
    from .. import DATA_DIR

    return DATA_DIR / "config.ini"


DEFAULT_CONFIG = _default_config()


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
        from ..cpus import usable_cpus

        config.vec["num_envs"] = family.default_num_envs(usable_cpus())
    resolve_env(config)  # fail now on a missing env, not in the middle of a run
    return config


def make_from_config(config: Config | str | Path | None = None, overrides: dict[str, str] | None = None):
    """Builds the vector env a config describes."""
    from ..vector import make

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
