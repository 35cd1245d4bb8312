"""``shoal build <family>``: the builds a family needs at first use, done ahead (a Dockerfile step, a
cluster image), into the cache the next process uses without building."""

from __future__ import annotations

import argparse

from ..errors import APIUsageError

FAMILIES = ("atari", "mujoco", "ocean")


def add_commands(sub) -> None:
    parser = sub.add_parser(
        "build",
        help="build a family's native code ahead of its first use (atari, mujoco, ocean)",
        description="Builds what a family compiles at first use into its cache, so that later processes "
        "(an image's, a cluster's) use it without building. Progress goes to stderr.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("family", choices=FAMILIES)
    parser.add_argument("names", nargs="*", help="mujoco tasks or Ocean envs to build (default: every one)")
    parser.add_argument("--source", help="ocean: a PufferLib repository root or its pufferlib/ocean folder")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines (as SHOAL_QUIET=1)")
    parser.set_defaults(func=cmd_build)


def cmd_build(args, overrides) -> int:
    from ..native import progress

    if overrides:
        raise APIUsageError(f"shoal build takes no overrides, got {' '.join(overrides)}")
    if args.source and args.family != "ocean":
        raise APIUsageError(f"--source names a PufferLib tree, for shoal build ocean, not {args.family}")
    if args.quiet:
        progress.set_quiet(True)
    if args.family == "ocean":
        return build_ocean(args.names, args.source)
    return {"atari": build_atari, "mujoco": build_mujoco}[args.family](args.names)


def build_atari(names) -> int:
    from ..atari import build

    if names:
        raise APIUsageError("shoal build atari builds ALE and the env for every game; it takes no names")
    library = build.env_library()
    print(f"shoal build atari: ALE {build.ale_version()} and shoal's Atari env are built: {library}")
    print(f"  cache: {build.cache_root()}")
    return 0


def build_mujoco(names) -> int:
    from ..mujoco import build, tasks

    every = tasks.all_tasks()
    unknown = [name for name in names if name not in every]
    if unknown:
        raise APIUsageError(f"shoal.mujoco has no task {', '.join(unknown)}; available: {', '.join(every)}")
    for name in names or every:
        print(f"shoal build mujoco: {name}: {build.build_task(every[name])}")
    print(f"  cache: {build.build_cache_dir()}")
    return 0


def build_ocean(names, source=None) -> int:
    from ..ocean import available, env_class
    from ..ocean.source import build_cache_dir
    from ..ocean.unavailable import PENDING, UNAVAILABLE

    failed = []
    for name in names or [n for n in available(source) if n not in UNAVAILABLE and n not in PENDING]:
        try:
            print(f"shoal build ocean: {name}: {env_class(name, source).ocean['library'].path}")
        except APIUsageError as error:
            if names:
                raise
            failed.append(f"{name}: {error}")
    print(f"  cache: {build_cache_dir()}")
    for line in failed:
        print(f"shoal build ocean: not built: {line}")
    return 1 if failed else 0
