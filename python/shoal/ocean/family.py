"""ocean:<env>: PufferLib's Ocean envs compiled against shoal (this family's entry in shoal.families)."""

from __future__ import annotations

from ..errors import APIUsageError
from . import OceanError, available
from . import env_class as ocean_class

#: this family's own [env] keys: a PufferLib tree (a path, resolved against the config's folder)
OPTIONS = ("ocean_source",)


def names(options: dict | None = None) -> list[str]:
    return available((options or {}).get("ocean_source"))


def env_class(name: str, options: dict | None = None, **kwargs):
    source = (options or {}).get("ocean_source")
    if not name:
        raise OceanError(f"name an Ocean env: ocean:<env>, one of {available(source)}")
    return ocean_class(name, source, **kwargs)


def parameters(name: str, options: dict | None = None) -> None:
    """Not known before the env's class is read and built."""
    return None


def summary() -> None:
    """None: `shoal ocean list` lists them (reading a PufferLib tree)."""
    return None


def add_commands(sub) -> None:
    """`shoal ocean list|build|clean`."""
    ocean = sub.add_parser("ocean", help="PufferLib Ocean envs: list them, build one")
    ocean_sub = ocean.add_subparsers(dest="ocean_command", required=True)
    ocean_list = ocean_sub.add_parser("list", help="the Ocean envs of a PufferLib tree (default: the 3.0.0 sdist)")
    ocean_list.add_argument("--source", help="PufferLib repository root or its pufferlib/ocean folder")
    ocean_list.set_defaults(func=cmd_ocean_list)
    ocean_build = ocean_sub.add_parser("build", help="compile an Ocean env (cached) and describe it")
    ocean_build.add_argument("env")
    ocean_build.add_argument("kwargs", nargs="*", help="the Ocean class's keyword arguments, key=value")
    ocean_build.add_argument("--source", help="PufferLib repository root or its pufferlib/ocean folder")
    ocean_build.set_defaults(func=cmd_ocean_build)
    ocean_clean = ocean_sub.add_parser(
        "clean", help="remove every compiled Ocean env from the cache (rebuilt when used)"
    )
    ocean_clean.set_defaults(func=cmd_ocean_clean)


def cmd_ocean_list(args, overrides) -> int:
    from . import available, ocean_dir
    from .source import sdist_ocean_path
    from .unavailable import PENDING, UNAVAILABLE, status

    folder = ocean_dir(args.source)
    sdist = folder.resolve() == sdist_ocean_path().resolve()
    names = set(available(args.source))
    if sdist:  # listed envs whose folder does not follow the usual layout (impulse_wars: env.h) too
        names |= set(UNAVAILABLE) | set(PENDING)
    print(f"Ocean envs in {folder}:")
    for name in sorted(names):
        reason = status(name) if sdist else None
        print(f"  {name}" + (f"  ({reason})" if reason else ""))
    return 0


def cmd_ocean_build(args, overrides) -> int:
    from ..validation import parse_value

    kwargs = {}
    for item in args.kwargs:
        key, eq, value = item.partition("=")
        if not eq:
            raise APIUsageError(f"keyword arguments look like num_snakes=64, got {item!r}")
        kwargs[key] = parse_value(value)
    cls = ocean_class(args.env, args.source, **kwargs)
    info, ocean = cls.describe(), cls.ocean
    print(f"{args.env}: {ocean['library'].path}")
    print(
        f"  agents/env: {info['num_agents']}  obs: {info['obs_dtype']}{list(info['obs_shape'])}  "
        f"action: {info['action_kind']}{info['action_nvec'] if info['action_kind'] != 'box' else ''}"
    )
    print(f"  my_init keywords: {', '.join(name for name, _ in ocean['params']) or '(none)'}")
    print(f"  stats: {', '.join(ocean['stats'])}")
    return 0


def cmd_ocean_clean(args, overrides) -> int:
    from .build import clean_builds
    from .source import build_cache_dir

    root = build_cache_dir()
    removed, freed = clean_builds(root)
    print(f"removed {removed} Ocean build(s), {freed / 1e6:.1f} MB, from {root}")
    return 0
