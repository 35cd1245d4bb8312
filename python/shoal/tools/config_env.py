"""[env] name resolved: the env creator it names (bundled, a library built against shoal/env.h, an
env family's, gymnasium:<EnvId>, module:callable), the keyword parameters it takes, and the [env]
values that are paths, made absolute."""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import sys
from pathlib import Path

from .. import families
from ..errors import APIUsageError
from ..native import is_native_env, load_env
from .config_file import COMMAND_LINE, Config, ConfigError


def _resolve_paths(config: Config, env: dict) -> None:
    """[env] values that are file paths, relative ones resolved against the config file's folder (a
    command line's against the working directory), absolute so that worker processes find them too."""
    for key, is_path in getattr(_family(config), "PATH_KEYS", {}).items():
        if key not in env or not isinstance(config.env_kwargs.get(key), str) or not is_path(config.env_kwargs[key]):
            continue
        folder = Path(config.folder) if env[key][1] != COMMAND_LINE else Path.cwd()
        config.env_kwargs[key] = str((folder / Path(config.env_kwargs[key]).expanduser()).absolute())


def env_parameters(config: Config) -> list[str] | None:
    """The keyword parameters the env of [env] name takes, where they are known before it is built:
    a native env's (bundled, mujoco:, a library) from its spec, a Python creator's from its signature,
    gymnasium:<EnvId>'s from its entry point and gymnasium.make. None when they are not known (an
    Ocean env's, a creator taking **kwargs) or the name itself is wrong (resolve_env says why)."""
    from ..envs import BUNDLED

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


def resolve_env(config: Config):
    """The env creator named by [env] name."""
    name = config.env_name
    from ..envs import BUNDLED

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
