"""Atari on shoal against its limit and the native Atari vectors — in one run, methodology of seed 001.

    python bench/bench_atari.py [--games pong breakout] [--num-envs 16 64] [--repeats 3]

Rows per game and number of envs (agent steps per second, random actions generated in advance, medians of
interleaved repeats, warm-up excluded, construction and reset excluded, no policy). Every row does the same
work per step: 4 emulated frames, the last two max-pooled, grayscale, 84x84 INTER_AREA, a stack of 4, noop
resets of up to 30 frames, no sticky actions. shoal runs the preset of the peer it is compared with:
preset="ale_vector" (ale-py AtariVectorEnv's defaults and rules: FIRE resets, clipped rewards) on rows (a)-(d),
preset="envpool" (EnvPool's: FIRE resets, unclipped rewards) on its own (d) row.
  (a) shoal's env callbacks in a bare C++ loop on one thread (bench/native/atari_limit.cpp): the limit
  (a2) two such loops at once, half the envs each: the two-thread limit
  (b) shoal Multithreading T=0 (the caller steps every env)   (c) T=2   (d) default threads
  (e) ale-py AtariVectorEnv, 1 and 2 threads
  (f) EnvPool 1 and 2 threads (where installed)
  (g) gymnasium SyncVectorEnv over FrameStackObservation(AtariPreprocessing(...)), and shoal
      Multiprocessing (2 workers) over the same env
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.metadata
import importlib.util
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: no idle BLAS threads spinning beside the rows

import statistics
import threading
import time
from pathlib import Path

import gymnasium
import numpy as np

import shoal.atari
from shoal import benchmark
from shoal.atari import build
from shoal.atari.build import roms_dir
from shoal.native import builds, toolchain
from shoal.peers import ale_vector, envpool_atari
from shoal.vector import make

# The work every row does (see the docstring): the presets' values.
LIMIT_SOURCE = Path(__file__).resolve().parent / "native" / "atari_limit.cpp"
OPTIONS = {"noop_max": 30, "repeat_action_probability": 0.0}
ALE_VECTOR_RULES = 1


def limit_function(game: str):
    """bench/native/atari_limit.cpp (the env's callbacks in a bare loop) compiled as the env library is, with
    it in place of csrc/shoal_atari.cpp (which it includes), cached beside the env."""
    archive = build.ale_archive()
    name = "atari_limit"
    product = f"{name}{toolchain.current().library_suffix}"
    key = builds.digest(
        [LIMIT_SOURCE.read_bytes(), build.cxx_compiler(), build.ENV_FLAGS, archive.parent.name, *build.csrc_key()]
    )

    def compile_limit(stage: Path) -> None:
        sources = [LIMIT_SOURCE, *(p for p in build.env_sources() if p.name != "shoal_atari.cpp")]
        builds.run_compiler(
            build.env_compile_command(sources, stage / product, archive), stage, "the Atari limit loop", RuntimeError
        )

    folder = builds.cached_build(build.cache_root(), name, key, product, compile_limit, RuntimeError)
    library = ctypes.CDLL(str(folder / product))
    limit = library.shoal_atari_limit_sps
    limit.restype = ctypes.c_double
    limit.argtypes = [ctypes.c_char_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_int32, ctypes.c_int32]
    limit.argtypes += [ctypes.c_float, ctypes.c_int32, ctypes.c_int32]
    rom = str(roms_dir() / f"{game}.bin").encode()
    return lambda num_envs, steps: limit(rom, num_envs, steps, 4, OPTIONS["noop_max"], 0.0, 1, ALE_VECTOR_RULES)


def two_loops_case(limit, num_envs: int, steps: int):
    """Two bare loops at once, half the envs each, in two threads (ctypes lets go of the GIL)."""
    halves = (num_envs // 2, num_envs - num_envs // 2)

    def measure():
        rates = [0.0, 0.0]
        threads = [threading.Thread(target=lambda k=k: rates.__setitem__(k, limit(halves[k], steps))) for k in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return sum(rates)

    return measure


def time_step_loop(step, actions, steps: int, warmup: int = 20) -> float:
    for t in range(warmup):
        step(actions[t % len(actions)])
    start = time.perf_counter()
    for t in range(steps):
        step(actions[t % len(actions)])
    return steps / (time.perf_counter() - start)


def random_actions(n: int, num_envs: int):
    rng = np.random.default_rng(0)
    return [rng.integers(0, n, size=num_envs, dtype=np.int32) for _ in range(16)]


def shoal_case(cls, num_envs: int, steps: int, **options):
    def measure():
        with make(cls, backend="Multithreading", num_envs=num_envs, seed=0, **options) as vecenv:
            return benchmark.time_vecenv(vecenv, steps * num_envs)

    return measure


def ale_vector_case(game: str, num_envs: int, steps: int, threads: int):
    def measure():
        envs = ale_vector(game, num_envs, threads)
        try:
            envs.reset(seed=0)
            actions = random_actions(envs.single_action_space.n, num_envs)
            return num_envs * time_step_loop(envs.step, actions, steps)
        finally:
            envs.close()

    return measure


def envpool_case(game: str, num_envs: int, steps: int, threads: int):
    def measure():
        envs = envpool_atari(game, num_envs, threads)
        try:
            envs.reset()
            actions = random_actions(envs.action_space.n, num_envs)
            return num_envs * time_step_loop(envs.step, actions, steps)
        finally:
            envs.close()

    return measure


def gymnasium_env(game: str):
    import ale_py

    gymnasium.register_envs(ale_py)
    name = "".join(part.capitalize() for part in game.split("_"))
    env = gymnasium.make(f"ALE/{name}-v5", frameskip=1, repeat_action_probability=0.0)
    env = gymnasium.wrappers.AtariPreprocessing(env, noop_max=30)
    env = gymnasium.wrappers.TransformReward(env, np.sign)
    return gymnasium.wrappers.FrameStackObservation(env, 4)


def gymnasium_case(game: str, num_envs: int, steps: int):
    def measure():
        envs = gymnasium.vector.SyncVectorEnv([lambda: gymnasium_env(game)] * num_envs)
        try:
            envs.reset(seed=0)
            actions = random_actions(envs.single_action_space.n, num_envs)
            return num_envs * time_step_loop(envs.step, actions, steps)
        finally:
            envs.close()

    return measure


def python_case(game: str, num_envs: int, steps: int):
    def measure():
        with make(
            lambda: gymnasium_env(game), backend="Multiprocessing", num_envs=num_envs, num_workers=2, seed=0
        ) as vecenv:
            return benchmark.time_vecenv(vecenv, steps * num_envs)

    return measure


def cases_for(game: str, num_envs: int, args) -> list[tuple[str, object]]:
    steps = args.steps
    cls = shoal.atari.env_class(game, preset="ale_vector")
    envpool_cls = shoal.atari.env_class(game, preset="envpool")
    limit = limit_function(game)
    cases = [
        ("(a) bare C++ loop (limit)", lambda: limit(num_envs, steps)),
        ("(a2) two bare loops at once (2-thread limit)", two_loops_case(limit, num_envs, steps)),
        ("(b) shoal T=0", shoal_case(cls, num_envs, steps, max_num_threads=0)),
        ("(c) shoal T=2", shoal_case(cls, num_envs, steps, max_num_threads=2)),
        ("(d) shoal default", shoal_case(cls, num_envs, steps)),
        ("(d) shoal default, preset=envpool", shoal_case(envpool_cls, num_envs, steps)),
        ("(e) ale-py AtariVectorEnv 1 thread", ale_vector_case(game, num_envs, steps, 1)),
        ("(e) ale-py AtariVectorEnv 2 threads", ale_vector_case(game, num_envs, steps, 2)),
    ]
    if importlib.util.find_spec("envpool") is not None:
        cases += [(f"(f) EnvPool {t} thread(s)", envpool_case(game, num_envs, steps, t)) for t in (1, 2)]
    if args.python_rows:
        python_steps = max(1, steps // 5)
        cases += [
            ("(g) gymnasium SyncVectorEnv", gymnasium_case(game, num_envs, python_steps)),
            ("(g) shoal Multiprocessing 2 workers, gymnasium env", python_case(game, num_envs, python_steps)),
        ]
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", nargs="+", default=["pong", "breakout"])
    parser.add_argument("--num-envs", nargs="+", type=int, default=[16, 64])
    parser.add_argument("--steps", type=int, default=200, help="timed steps per env of the native rows")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-python-rows", dest="python_rows", action="store_false")
    parser.add_argument("--markdown", help="also write the report here")
    args = parser.parse_args()
    versions = {d: importlib.metadata.version(d) for d in ("ale-py", "gymnasium")}
    if importlib.util.find_spec("envpool"):
        versions["envpool"] = importlib.metadata.version("envpool")
    info = benchmark.system_info({**versions, "steps per env": args.steps, "repeats": args.repeats, **OPTIONS})
    rows = []
    for game in args.games:
        for num_envs in args.num_envs:
            cases = cases_for(game, num_envs, args)
            samples = {name: [] for name, _ in cases}
            for r in range(args.repeats):  # interleaved: every case once per round
                for name, measure in cases:
                    samples[name].append(measure())
                    print(f"  {game} {num_envs} repeat {r + 1}/{args.repeats}  {name:<52} {samples[name][-1]:>10,.0f}")
            limit = statistics.median(samples["(a) bare C++ loop (limit)"])
            for name, values in samples.items():
                median = statistics.median(values)
                spread = (max(values) - min(values)) / median
                rows.append([game, num_envs, name, f"{median:,.0f}", f"{100 * spread:.0f}%", f"{median / limit:.2f}x"])
    headers = ["game", "envs", "configuration", "agent steps/s (median)", "spread", "vs (a)"]
    notes = [f"pid {os.getpid()}; the Python rows time {args.steps // 5} steps per env."]
    benchmark.publish(benchmark.format_markdown("shoal.atari", info, rows, headers, notes), args.markdown)


if __name__ == "__main__":
    main()
