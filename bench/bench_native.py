"""Native envs under the Multithreading backend: thread scaling against the limit, fork-join cost, a
stand-in policy, a competing process, and EnvPool (if installed) — in one run, methodology of seed 001.

    python bench/bench_native.py [--repeats 5] [--markdown bench/results/native.md]
    python bench/bench_native.py --compare-wait-layers [--repeats 9]

--compare-wait-layers measures only cartpole 4096 at T=2 on two builds of the same sources, made
here with pip into build/bench-native/wait-<layer>: the default (futex on Linux) and the portable
waiting layer (SHOAL_PORTABLE_WAIT=ON). Each sample is one fresh process; the two alternate.

Ratios are against T=0 (the caller steps every env itself, no pool) and against the **limit**: the
env's own callbacks in a bare C loop (bench/native/limit.c: same-step reset, the time limit, actions
copied in every step; no Python, no pool, no episode log), built by CMake from the same sources with
the flags the extension compiles env code with. Both are measured in the same run, interleaved with
the cases they are compared to. "default" is make() without max_num_threads (physical cores).
The template env of examples/custom_env is built like a third-party env and measured the same way.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import shoal
from shoal import _native, benchmark
from shoal.benchmark import Case
from shoal.envs import CartPole, Deep, Squared
from shoal.native import load_env
from shoal.vector import make

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "bench-native"


def cmake_build(source: Path, build: Path, *options: str, targets: tuple = ()) -> None:
    subprocess.run(
        ["cmake", "-S", str(source), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", *options],
        check=True,
        capture_output=True,
    )
    command = ["cmake", "--build", str(build), "-j2"] + [arg for t in targets for arg in ("--target", t)]
    subprocess.run(command, check=True, capture_output=True)


def limit_library(name: str) -> ctypes.CDLL:
    """bench/native/limit.c compiled around env `name` (a bundled env or random_walk)."""
    cmake_build(ROOT, BUILD / "limit", "-DSHOAL_BUILD_BENCH=ON", targets=(f"shoal_limit_{name}",))
    library = ctypes.CDLL(str(BUILD / "limit" / "bench" / "native" / f"shoal_limit_{name}.so"))
    library.shoal_limit_sps.restype = ctypes.c_double
    library.shoal_limit_sps.argtypes = [ctypes.c_size_t, ctypes.c_uint64]
    library.shoal_limit_cpu_sps.restype = ctypes.c_double
    library.shoal_limit_cpu_sps.argtypes = [ctypes.c_size_t, ctypes.c_uint64]
    library.shoal_limit_sps_threads.restype = ctypes.c_double
    library.shoal_limit_sps_threads.argtypes = [ctypes.c_size_t, ctypes.c_uint64, ctypes.c_uint]
    return library


def template_env():
    """examples/custom_env built against the installed shoal, as its README says a user does."""
    build = BUILD / "custom_env"
    cmake_build(ROOT / "examples" / "custom_env", build, f"-Dshoal_DIR={shoal.get_cmake_dir()}")
    return load_env(build / "random_walk.so", "random_walk", "RandomWalk")


@dataclass
class LimitCase(Case):
    """The bare C loop of one env: measured in-process through ctypes (which releases the GIL)."""

    library: ctypes.CDLL | None = None
    num_envs: int = 0
    threads: int = 1

    def measure(self) -> float:
        steps_per_env = max(1, self.agent_steps // self.num_envs)
        if self.threads == 1:
            sps = self.library.shoal_limit_sps(self.num_envs, steps_per_env)
        else:
            sps = self.library.shoal_limit_sps_threads(self.num_envs, steps_per_env, self.threads)
        if sps <= 0:
            raise RuntimeError(f"{self.name}: the limit loop failed")
        self.samples.append(sps)
        return sps


def limit_cases(name: str, env_name: str, num_envs: int, agent_steps: int) -> list[LimitCase]:
    """The limit on one thread and split over two (a spinning barrier per step, no Python)."""
    library = limit_library(env_name)
    return [
        LimitCase(f"{name} limit", None, agent_steps, library=library, num_envs=num_envs),
        LimitCase(f"{name} limit, 2 threads", None, agent_steps, library=library, num_envs=num_envs, threads=2),
    ]


def run_interleaved(cases: list, repeats: int) -> None:
    """Every case once per repeat, in turn, so that machine noise hits them alike."""
    for r in range(repeats):
        for case in cases:
            if isinstance(case, LimitCase):
                print(f"  repeat {r + 1}/{repeats}  {case.name:<48} {case.measure():>14,.0f} SPS")
            else:
                benchmark.run_cases(
                    [case], 1, log=lambda line, r=r: print(line.replace("repeat 1/1", f"repeat {r + 1}/{repeats}"))
                )


def native_case(name, env, num_envs, threads, agent_steps, pause_us=0.0, exclude_pause=False, **kwargs):
    options = {} if threads == "default" else {"max_num_threads": threads}
    build = functools.partial(make, env, backend="Multithreading", num_envs=num_envs, env_kwargs=kwargs, **options)
    return Case(f"{name} T={threads}", build, agent_steps, pause_us=pause_us, exclude_pause=exclude_pause)


def envpool_sps(num_envs: int, threads: int, agent_steps: int) -> float | None:
    try:
        import envpool
    except ImportError:
        return None
    env = envpool.make(
        "CartPole-v1", env_type="gymnasium", num_envs=num_envs, batch_size=num_envs, num_threads=threads, seed=0
    )
    env.reset()
    actions = np.random.default_rng(0).integers(0, 2, size=(16, num_envs), dtype=np.int32)
    for i in range(20):
        env.step(actions[i % 16])
    batches = max(1, agent_steps // num_envs)
    start = time.perf_counter()
    for i in range(batches):
        env.step(actions[i % 16])
    sps = batches * num_envs / (time.perf_counter() - start)
    env.close()
    return sps


def python_share_us(repeats: int, calls: int = 20_000) -> tuple[list[float], list[float]]:
    """send+recv of a 1-env CartPole at T=0 and a bare native call with the GIL released, in us."""
    with make(CartPole, backend="Multithreading", num_envs=1, max_num_threads=0) as vecenv:
        actions = benchmark.random_actions(vecenv)
        vecenv.async_reset(0)
        vecenv.recv()
        batch, bare = [], []
        for _ in range(repeats):
            start = time.perf_counter()
            for i in range(calls):
                vecenv.send(actions[i % 16])
                vecenv.recv()
            batch.append((time.perf_counter() - start) / calls * 1e6)
            start = time.perf_counter()
            for _ in range(calls):
                _native.release_gil()
            bare.append((time.perf_counter() - start) / calls * 1e6)
    return batch, bare


def cpu_time_ratios(cases: dict, repeats: int, batches: int = 200) -> dict:
    """T=0 against the limit in this thread's CPU time: the ratio without the time other processes
    take from this CPU (a shared machine). cases: title -> (limit library, env class, num_envs)."""
    ratios = {title: [] for title in cases}
    vecs = {
        title: make(env, backend="Multithreading", num_envs=n, max_num_threads=0)
        for title, (_, env, n) in cases.items()
    }
    try:
        actions = {title: benchmark.random_actions(vecenv) for title, vecenv in vecs.items()}
        for vecenv in vecs.values():
            vecenv.async_reset(0)
            vecenv.recv()
        for _ in range(repeats):
            for title, (library, _, n) in cases.items():
                vecenv, batch = vecs[title], actions[title]
                limit_sps = library.shoal_limit_cpu_sps(n, batches)  # its loop alone, not its setup
                start = time.thread_time()
                for i in range(batches):
                    vecenv.send(batch[i % 16])
                    vecenv.recv()
                ratios[title].append(batches * n / (time.thread_time() - start) / limit_sps)
    finally:
        for vecenv in vecs.values():
            vecenv.close()
    return ratios


def fork_join_ns(threads: int, repeats: int) -> list[float]:
    return [_native.measure_fork_join_ns(threads, 200_000) for _ in range(repeats)]


# One sample of one build, in a fresh process: the build's directory goes first on sys.path, and an
# editable install's import hook (which would take precedence over sys.path) is dropped.
WAIT_LAYER_SAMPLE = """
import configparser, sys
from pathlib import Path
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "ScikitBuildRedirectingFinder"]
sys.path.insert(0, sys.argv[1])
from shoal import _native, benchmark
from shoal.envs import CartPole
from shoal.vector import make
config = configparser.ConfigParser()
config.read(Path(_native.__file__).parent / "native_build.ini")
case = benchmark.Case("cartpole 4096 T=2", lambda: make(CartPole, backend="Multithreading", num_envs=4096,
                      max_num_threads=2), int(sys.argv[2]))
benchmark.run_cases([case], 1, log=lambda line: None)
print(config["native"]["wait_layer"], case.samples[0])
"""


def wait_layer_builds() -> dict[str, Path]:
    """The default and the portable-wait build of these sources, each pip-installed into its own folder."""
    builds = {}
    for layer, define in (("default", "OFF"), ("portable", "ON")):
        target = BUILD / f"wait-{layer}"
        if not (target / "shoal").is_dir():
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(ROOT),
                 f"-Ccmake.define.SHOAL_PORTABLE_WAIT={define}", f"-Cbuild-dir={BUILD / f'wait-{layer}-build'}"],
                check=True,
            )  # fmt: skip
        builds[layer] = target
    return builds


def compare_wait_layers(repeats: int, agent_steps: int) -> None:
    samples: dict[str, list[float]] = {}
    for r in range(repeats):
        for build in wait_layer_builds().values():
            result = subprocess.run(
                [sys.executable, "-c", WAIT_LAYER_SAMPLE, str(build), str(agent_steps)],
                check=True,
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": ""},
            )
            layer, sps = result.stdout.split()
            samples.setdefault(layer, []).append(float(sps))
            print(f"  repeat {r + 1}/{repeats}  cartpole 4096 T=2, {layer:<10} {float(sps):>14,.0f} SPS")
    medians = {layer: statistics.median(values) for layer, values in samples.items()}
    for layer, values in samples.items():
        print(
            f"{layer:<10} median {medians[layer]:>14,.0f} SPS  spread {(max(values) - min(values)) / medians[layer]:.1%}"
        )
    if "portable" in medians and len(medians) == 2:
        (other,) = set(medians) - {"portable"}
        print(f"portable / {other}: {medians['portable'] / medians[other]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every agent-step budget")
    parser.add_argument("--markdown", help="write the result tables to this file")
    parser.add_argument(
        "--compare-wait-layers", action="store_true", help="only cartpole 4096 T=2: portable-wait vs default build"
    )
    args = parser.parse_args()
    steps = lambda n: int(n * args.scale)  # noqa: E731
    if args.compare_wait_layers:
        compare_wait_layers(args.repeats, steps(40e6))
        return

    RandomWalk = template_env()
    template_title = "template env (examples/custom_env random_walk, built as a third-party env), 4096 envs"
    threads = (0, 2, "default")
    limit_groups = {
        "cartpole, 4096 envs": limit_cases("cartpole 4096", "cartpole", 4096, steps(40e6))
        + [native_case("cartpole 4096", CartPole, 4096, t, steps(40e6)) for t in threads],
        "cartpole, 1024 envs": limit_cases("cartpole 1024", "cartpole", 1024, steps(20e6))
        + [native_case("cartpole 1024", CartPole, 1024, t, steps(20e6)) for t in threads],
        "squared, 4096 envs": limit_cases("squared 4096", "squared", 4096, steps(40e6))
        + [native_case("squared 4096", Squared, 4096, t, steps(40e6)) for t in threads],
        template_title: limit_cases("random_walk 4096", "random_walk", 4096, steps(40e6))
        + [native_case("random_walk 4096", RandomWalk, 4096, t, steps(40e6)) for t in threads],
    }
    groups = {
        "deep (work=20000, ~40 us/step), 64 envs": [native_case("deep 64", Deep, 64, t, steps(64e3)) for t in threads],
        "cartpole 4096, 100 us caller work between steps: env stepping (send+recv) only": [
            native_case(
                "cartpole 4096 +100us, stepping", CartPole, 4096, t, steps(20e6), pause_us=100, exclude_pause=True
            )
            for t in threads
        ],
        "cartpole 4096, 100 us caller work between steps: end to end (bounded by Amdahl)": [
            native_case("cartpole 4096 +100us, end to end", CartPole, 4096, t, steps(20e6), pause_us=100)
            for t in threads
        ],
    }
    info = benchmark.system_info(
        {
            "what is timed": "send+recv per batch, actions generated in advance, "
            "after reset and 20 warm-up steps; no policy unless stated",
            "repeats": args.repeats,
            "threads T": "incl. the caller; T=0 = no pool",
            "limit": "the env's callbacks in a bare C loop (bench/native/limit.c), same sources and flags, one thread",
        }
    )
    print("\n".join(f"{k}: {v}" for k, v in info.items()))
    for title, cases in {**limit_groups, **groups}.items():
        print(title)
        run_interleaved(cases, args.repeats)
    competition = [native_case("cartpole 4096 (competing process)", CartPole, 4096, t, steps(20e6)) for t in threads]
    print("under one competing CPU-bound process")
    with benchmark.competing_process():
        run_interleaved(competition, args.repeats)
    groups["cartpole 4096, one competing CPU-bound process (T=0 measured under it too)"] = competition

    headers = ["case", "median SPS", "spread", "samples", "vs T=0", "vs limit", "vs 2-thread limit"]
    rows = []
    for title, cases in limit_groups.items():
        rows.append([f"**{title}**", "", "", "", "", "", ""])
        limit, limit2, t0 = cases[0], cases[1], cases[2]
        rows.append(benchmark.case_row(limit) + ["1.00x", ""])
        rows.append(benchmark.case_row(limit2) + [f"{limit2.median / limit.median:.2f}x", "1.00x"])
        for case in cases[2:]:
            versus_two = "" if case is t0 else f"{case.median / limit2.median:.2f}x"
            rows.append(benchmark.case_row(case, t0) + [f"{case.median / limit.median:.2f}x", versus_two])
    for title, cases in groups.items():
        rows.append([f"**{title}**", "", "", "", "", "", ""])
        rows += [benchmark.case_row(case, cases[0]) + ["", ""] for case in cases]

    fj = {t: fork_join_ns(t, args.repeats) for t in (1, 2)}
    rows.append(["**fork-join round, trivial body (ns)**", "", "", "", "", ""])
    for t, samples in fj.items():
        rows.append(
            [f"T={t}", f"{statistics.median(samples):.0f} ns", "", ", ".join(f"{s:.0f}" for s in samples), "", ""]
        )

    cpu = cpu_time_ratios(
        {
            "cartpole 4096": (limit_groups["cartpole, 4096 envs"][0].library, CartPole, 4096),
            "squared 4096": (limit_groups["squared, 4096 envs"][0].library, Squared, 4096),
            "random_walk 4096": (limit_groups[template_title][0].library, RandomWalk, 4096),
        },
        args.repeats,
    )
    rows.append(
        ["**T=0 vs limit in thread CPU time (what other processes take from the CPU left out)**", "", "", "", "", ""]
    )
    for title, samples in cpu.items():
        rows.append(
            [f"{title} T=0", "", "", ", ".join(f"{s:.3f}" for s in samples), "", f"{statistics.median(samples):.2f}x"]
        )

    batch, bare = python_share_us(args.repeats)
    rows.append(["**Python's share: one batch step at T=0, 1 env (us)**", "", "", "", "", ""])
    rows.append(["send+recv", f"{statistics.median(batch):.2f} us", "", ", ".join(f"{s:.2f}" for s in batch), "", ""])
    rows.append(
        [
            "bare native call, GIL released",
            f"{statistics.median(bare):.2f} us",
            "",
            ", ".join(f"{s:.2f}" for s in bare),
            "",
            "",
        ]
    )

    pool = []
    if (sps := envpool_sps(4096, 2, steps(4e6))) is not None:
        import envpool

        pool = [envpool_sps(4096, 2, steps(4e6)) for _ in range(args.repeats - 1)] + [sps]
        shoal_default = next(c for c in limit_groups["cartpole, 4096 envs"] if c.name.endswith("T=default")).median
        rows.append([f"**EnvPool {envpool.__version__} CartPole-v1 sync, 4096 envs, 2 threads**", "", "", "", "", ""])
        rows.append(
            [
                "EnvPool",
                f"{statistics.median(pool):,.0f}",
                "",
                ", ".join(f"{s / 1e6:.3f}M" for s in pool),
                f"shoal default = {shoal_default / statistics.median(pool):.1f}x EnvPool",
                "",
            ]
        )
    else:
        rows.append(["EnvPool", "not installed (pip install envpool)", "", "", "", ""])

    rows = [row + [""] * (len(headers) - len(row)) for row in rows]
    table = benchmark.format_markdown(
        "Native envs, Multithreading backend",
        info,
        rows,
        headers,
        [
            "T = threads stepping envs including the caller (max_num_threads); default = physical cores.",
            "spread = (max - min) / median over the repeats; ratios are medians over the T=0 (or limit) median of "
            "the same group, measured interleaved in the same run.",
            "limit = the env's own callbacks in a bare C loop (bench/native/limit.c), one thread, no Python; "
            "2-thread limit = the same loop split over two threads meeting at a spinning barrier after each step.",
        ],
    )
    benchmark.publish(table, args.markdown)


if __name__ == "__main__":
    main()
