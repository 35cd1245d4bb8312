"""The `shoal` command: run the configured vector env, list envs, benchmark, autotune."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

from .. import __version__, _native, cpus, families
from ..errors import APIUsageError, EnvError
from .arguments import OneLineParser, bounded_int, run_option_arg
from .benchmark import Progress, cpu_model, random_actions
from .config import RUN_OPTIONS, ConfigError, load, make_from_config


def split_overrides(extra: list[str]) -> dict[str, str]:
    """PufferLib-style overrides: --vec.max_num_threads 2 (or --vec.max_num_threads=2)."""
    overrides, i = {}, 0
    while i < len(extra):
        arg = extra[i]
        if not arg.startswith("--") or "." not in arg:
            raise ConfigError(f"command line: unrecognized argument {arg!r}; overrides look like --vec.num_envs 1024")
        key, eq, value = arg[2:].partition("=")
        if not eq:
            if i + 1 >= len(extra):
                raise ConfigError(f"command line: override {arg} needs a value")
            value, i = extra[i + 1], i + 1
        overrides[key] = value
        i += 1
    return overrides


OVERRIDES_HELP = """overrides:
  --section.key VALUE (or --section.key=VALUE) sets one key of the config file, e.g.
    shoal run --vec.backend Serial --vec.num_envs 64 --env.name gymnasium:CartPole-v1
  [env] name and the env's parameters, [vec] backend, num_envs, seed and the backend's
  options (max_num_threads, num_workers, batch_size, ...), [run] steps, seconds, repeats
  and warmup.
  Keys the config does not set come from the embedded config.ini; a [vec] key must apply
  to the chosen backend. Errors in an override are reported as "command line: ...".
"""


def describe_vecenv(vecenv) -> dict:
    desc = {"backend": type(vecenv).__name__, "num_envs": vecenv.num_envs, "agents_per_batch": vecenv.agents_per_batch}
    for attr in ("max_num_threads", "num_workers", "batch_size", "start_method", "schedule"):
        if hasattr(vecenv, attr):
            desc[attr] = getattr(vecenv, attr)
    nodes = getattr(vecenv, "worker_nodes", None)  # Ray: the node of each actor, in worker order
    if nodes:
        desc["worker_nodes"] = ", ".join(f"{n.node_id[:12]} ({n.address})" for n in nodes)
    desc.update(
        shoal=__version__,
        python=platform.python_version(),
        numpy=np.__version__,
        cpu=cpu_model(),
        physical_cores=_native.physical_cores(),
        usable_cpus=cpus.usable_cpus(),
        logical_cpus=os.cpu_count(),
    )
    return desc


#: a timed chunk shorter than this doubles the batch steps between two clock reads, so that reading
#: the clock (and the progress line) costs nothing against the steps timed
CHUNK_SECONDS = 0.01
#: the warm-up ends after its batch steps or this long (the timed window's length if longer), whichever
#: comes first: a batch of thousands of slow envs (emulated consoles) would otherwise warm up for minutes
WARMUP_SECONDS = 1.0
#: a window shorter than this gives a figure that can differ from shoal bench's ~1 s samples (clock
#: boost and caches favour short runs); the report says so
SHORT_WINDOW = 1.0


def run_steps(
    vecenv,
    agent_steps: int | None,
    warmup: int,
    progress: bool | None = None,
    seed: int = 0,
    min_seconds: float = 0.0,
    repeats: int = 1,
    clock=time.perf_counter,
) -> dict:
    """Steps with random valid actions: reset, ``warmup`` untimed batch steps (or as many as fit in a
    window's time, at least WARMUP_SECONDS, if fewer), then ``repeats`` timed windows, each of at least
    ``min_seconds`` seconds and, where ``agent_steps`` is given, at least that many agent steps.
    Returns the median SPS of the windows, each window's SPS and seconds, and episode stats of the
    timed part. ``progress`` as benchmark.Progress's mode (None: a bar on a terminal, else lines)."""
    actions = random_actions(vecenv, 16, seed)
    per_batch = vecenv.agents_per_batch
    vecenv.async_reset(seed)
    vecenv.recv()
    bar = Progress("shoal run: warm-up", warmup, "batch step", mode=progress if warmup else False)
    warm_until = clock() + max(min_seconds, WARMUP_SECONDS)
    for i in range(warmup):
        vecenv.send(actions[i % 16])
        vecenv.recv()
        bar.update(1)
        if clock() >= warm_until:
            break
    bar.close()
    warmed = bar.done
    batches = max(1, -(-agent_steps // per_batch)) if agent_steps else 1
    stats = {"episodes": 0, "returns": 0.0, "lengths": 0.0}
    windows: list[tuple[int, float]] = []
    for window in range(repeats):
        what = "shoal run: timed" + (f" window {window + 1} of {repeats}" if repeats > 1 else "")
        bar = Progress(what, batches * per_batch if agent_steps else None, "agent step", mode=progress)
        windows.append(_timed_window(vecenv, actions, batches, min_seconds, bar, clock, stats))
        bar.close()
    steps = sum(n for n, _ in windows)
    episodes = stats["episodes"]
    rates = [n / seconds for n, seconds in windows]
    return {
        "warmup": warmed,
        "agent_steps": steps,
        "seconds": sum(seconds for _, seconds in windows),
        "sps": statistics.median(rates),
        "windows": [{"agent_steps": n, "seconds": seconds, "sps": n / seconds} for n, seconds in windows],
        "episodes": episodes,
        "mean_return": stats["returns"] / episodes if episodes else float("nan"),
        "mean_length": stats["lengths"] / episodes if episodes else float("nan"),
    }


def _timed_window(vecenv, actions, batches: int, min_seconds: float, bar, clock, stats: dict) -> tuple[int, float]:
    """(agent steps, seconds) of one window: ``batches`` batch steps, then more until ``min_seconds``."""
    per_batch = vecenv.agents_per_batch
    start = now = clock()
    done, chunk = 0, 1
    while done < batches or now - start < min_seconds:
        n = min(chunk, batches - done) if done < batches else chunk
        chunk_start = now
        for i in range(done, done + n):
            vecenv.send(actions[i % 16])
            for info in vecenv.recv()[4]:
                if "episode_return" in info:
                    count = info.get("episodes", 1)
                    stats["episodes"] += count
                    stats["returns"] += info["episode_return"] * count
                    stats["lengths"] += info["episode_length"] * count
        done += n
        now = clock()
        if now - chunk_start < CHUNK_SECONDS:
            chunk *= 2
        elapsed = max(now - start, 1e-9)
        left = max(min_seconds - elapsed, (batches - done) * elapsed / done, 0.0)
        bar.describe(f"{done * per_batch / elapsed:,.0f} SPS so far, ETA {left:.0f} s")
        bar.update(n * per_batch)
    return done * per_batch, now - start


def cmd_run(args, overrides) -> int:
    config = load(args.config, overrides)
    run = {name: option.default for name, option in RUN_OPTIONS.items()} | config.run
    steps = args.steps if args.steps is not None else run["steps"]  # None: bounded by seconds alone
    seconds = args.seconds if args.seconds is not None else run["seconds"]
    with make_from_config(config) as vecenv:
        desc = describe_vecenv(vecenv)
        print(f"shoal run: {config.env_name} from {config.path}")
        for key, value in desc.items():
            print(f"  {key}: {value}")
        sys.stdout.flush()  # before progress lines on stderr, so that a log keeps the order
        result = run_steps(
            vecenv,
            steps,
            run["warmup"],
            progress=None,
            seed=config.vec.get("seed", 0),
            min_seconds=seconds,
            repeats=run["repeats"],
        )
    windows = result["windows"]
    bound = f"at least {steps:,} agent steps and {seconds:g} s" if steps else f"{seconds:g} s"
    print(
        f"  timed: {len(windows)} window{'s' if len(windows) > 1 else ''} of {bound} after "
        f"{result['warmup']:,} warm-up batch steps: " + ", ".join(f"{w['seconds']:.2f} s" for w in windows)
    )
    print(f"  agent steps: {result['agent_steps']:,} in {result['seconds']:.2f} s")
    print(
        f"  episodes: {result['episodes']:,}  mean return: {result['mean_return']:.2f}  "
        f"mean length: {result['mean_length']:.1f}"
    )
    if len(windows) > 1:
        rates = [w["sps"] for w in windows]
        spread = (max(rates) - min(rates)) / result["sps"]
        print(
            f"  SPS per window: {', '.join(f'{r:,.0f}' for r in rates)} (spread {100 * spread:.0f} %; "
            "SPS below is their median)"
        )
    shortest = min(w["seconds"] for w in windows)
    if shortest < SHORT_WINDOW:
        print(
            f"  note: a {shortest:.2f} s window; short windows can read faster than shoal bench's ~1 s samples "
            "(set [run] seconds, or --seconds, to time longer)"
        )
    print(f"SPS: {result['sps']:,.0f}")
    return 0


def cmd_envs(args, overrides) -> int:
    from ..envs import BUNDLED

    for name, cls in BUNDLED.items():
        info = cls.describe()
        print(f"{name}  ({cls.__name__}): {info['doc']}")
        print(
            f"  agents/env: {info['num_agents']}  obs: {info['obs_dtype']}{list(info['obs_shape'])}  "
            f"action: {info['action_kind']}{info['action_nvec'] if info['action_kind'] != 'box' else ''}  "
            f"time limit: {info['max_episode_steps'] or 'none'}"
        )
        for p in info["params"]:
            print(
                f"  param {p['name']} ({p['type']}, default {p['default']:g}, "
                f"range [{p['min']:g}, {p['max']:g}]): {p['doc']}"
            )
        if info["stats"]:
            print(f"  stats: {', '.join(info['stats'])}")
    for prefix in families.prefixes():
        line = families.load(prefix).summary()
        if line:
            print(line)
    return 0


#: `shoal check` steps the vector and each env alone: past these the check takes hours
MAX_CHECK_STEPS, MAX_CHECK_ENVS = 10**7, 1024


def cmd_check(args, overrides) -> int:
    from .check import isolated_check
    from .config import resolve_env

    config = load(args.config, overrides)
    vec = config.effective_vec()
    backend = vec.pop("backend", "Serial")
    num_envs = args.num_envs or min(vec.pop("num_envs", 8), 8)
    vec.pop("num_envs", None)
    seed = vec.pop("seed", 0)
    result = isolated_check(
        resolve_env(config),
        backend=backend,
        num_envs=num_envs,
        steps=args.steps,
        seed=seed,
        env_kwargs=config.env_kwargs,
        **vec,
    )
    print(f"shoal check: {config.env_name} from {config.path}")
    print(f"  {result}")
    return 0 if result.passed else 1


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="shoal", description="Vectorized RL environments, fast.")
    parser.add_argument("--version", action="version", version=f"shoal {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run",
        help="step the configured env under the configured backend, report SPS",
        description="Steps the env of a config file with random actions under its backend and reports SPS.",
        epilog=OVERRIDES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("--config", help="config file (default: the embedded config.ini)")
    run.add_argument(
        "--steps",
        type=run_option_arg("steps"),
        help="agent steps to time, at least (default: [run] steps if set, else the window is [run] seconds long)",
    )
    run.add_argument(
        "--seconds",
        type=run_option_arg("seconds"),
        help="seconds to time (more only where --steps asks for more; default: [run] seconds)",
    )
    run.set_defaults(func=cmd_run)
    envs = sub.add_parser("envs", help="list the bundled native envs with spaces and parameters")
    envs.set_defaults(func=cmd_envs)
    for prefix in families.BUILTIN:  # the families' own subcommands
        add_commands = getattr(families.load(prefix), "add_commands", None)
        if add_commands:
            add_commands(sub)
    checker = sub.add_parser("check", help="the configured backend vs each env stepped alone: first difference")
    checker.add_argument("--config", help="config file (default: the embedded config.ini)")
    checker.add_argument(
        "--steps",
        type=bounded_int("steps", 1, MAX_CHECK_STEPS, "a check that long runs for hours"),
        default=1000,
        help="random-action steps (default 1000)",
    )
    checker.add_argument(
        "--num-envs",
        type=bounded_int("num-envs", 1, MAX_CHECK_ENVS, "each env is also stepped alone, one vector each"),
        help="envs (default: [vec] num_envs, at most 8)",
    )
    checker.set_defaults(func=cmd_check)
    from . import bench_command, build_command, tuning

    bench_command.add_commands(sub)
    build_command.add_commands(sub)
    tuning.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    try:
        overrides = split_overrides(extra)
        return args.func(args, overrides)
    except (ConfigError, APIUsageError, EnvError) as error:
        print(f"shoal: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
