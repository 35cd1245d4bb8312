"""Native envs under the Multithreading backend: thread scaling, fork-join cost, a stand-in policy,
a competing process, and EnvPool (if installed) — in one run, methodology of seed 001.

    python bench/bench_native.py [--repeats 3] [--markdown bench/results/native.md]

Ratios are against T=0 (the caller steps every env itself, no pool) measured in the same run and
under the same conditions. "default" is make() without max_num_threads (physical cores).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

import numpy as np

from shoal import _native, benchmark
from shoal.benchmark import Case
from shoal.envs import CartPole, Deep
from shoal.vector import make


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


def fork_join_ns(threads: int, repeats: int) -> list[float]:
    return [_native.measure_fork_join_ns(threads, 200_000) for _ in range(repeats)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every agent-step budget")
    parser.add_argument("--markdown", help="write the result tables to this file")
    args = parser.parse_args()
    steps = lambda n: int(n * args.scale)  # noqa: E731

    groups = {
        "cartpole, 4096 envs": [
            native_case("cartpole 4096", CartPole, 4096, t, steps(40e6)) for t in (0, 2, "default")
        ],
        "cartpole, 1024 envs": [
            native_case("cartpole 1024", CartPole, 1024, t, steps(20e6)) for t in (0, 2, "default")
        ],
        "deep (work=20000, ~40 us/step), 64 envs": [
            native_case("deep 64", Deep, 64, t, steps(64e3)) for t in (0, 2, "default")
        ],
        "cartpole 4096, 100 us caller work between steps: env stepping (send+recv) only": [
            native_case(
                "cartpole 4096 +100us, stepping", CartPole, 4096, t, steps(20e6), pause_us=100, exclude_pause=True
            )
            for t in (0, 2, "default")
        ],
        "cartpole 4096, 100 us caller work between steps: end to end (bounded by Amdahl)": [
            native_case("cartpole 4096 +100us, end to end", CartPole, 4096, t, steps(20e6), pause_us=100)
            for t in (0, 2, "default")
        ],
    }
    info = benchmark.system_info(
        {
            "what is timed": "send+recv per batch, actions generated in advance, "
            "after reset and 20 warm-up steps; no policy unless stated",
            "repeats": args.repeats,
            "threads T": "incl. the caller; T=0 = no pool",
        }
    )
    print("\n".join(f"{k}: {v}" for k, v in info.items()))
    for title, cases in groups.items():
        print(title)
        benchmark.run_cases(cases, args.repeats)
    competition = [
        native_case("cartpole 4096 (competing process)", CartPole, 4096, t, steps(20e6)) for t in (0, 2, "default")
    ]
    print("under one competing CPU-bound process")
    with benchmark.competing_process():
        benchmark.run_cases(competition, args.repeats)
    groups["cartpole 4096, one competing CPU-bound process (T=0 measured under it too)"] = competition

    headers = ["case", "median SPS", "spread", "samples", "vs T=0"]
    rows = []
    for title, cases in groups.items():
        rows.append([f"**{title}**", "", "", "", ""])
        rows += [benchmark.case_row(case, cases[0]) for case in cases]

    fj = {t: fork_join_ns(t, args.repeats) for t in (1, 2)}
    rows.append(["**fork-join round, trivial body (ns)**", "", "", "", ""])
    for t, samples in fj.items():
        rows.append([f"T={t}", f"{statistics.median(samples):.0f} ns", "", ", ".join(f"{s:.0f}" for s in samples), ""])

    pool = []
    if (sps := envpool_sps(4096, 2, steps(4e6))) is not None:
        import envpool

        pool = [envpool_sps(4096, 2, steps(4e6)) for _ in range(args.repeats - 1)] + [sps]
        shoal_default = groups["cartpole, 4096 envs"][2].median
        rows.append([f"**EnvPool {envpool.__version__} CartPole-v1 sync, 4096 envs, 2 threads**", "", "", "", ""])
        rows.append(
            [
                "EnvPool",
                f"{statistics.median(pool):,.0f}",
                "",
                ", ".join(f"{s / 1e6:.3f}M" for s in pool),
                f"shoal default = {shoal_default / statistics.median(pool):.1f}x EnvPool",
            ]
        )
    else:
        rows.append(["EnvPool", "not installed (pip install envpool)", "", "", ""])

    table = benchmark.format_markdown(
        "Native envs, Multithreading backend",
        info,
        rows,
        headers,
        [
            "T = threads stepping envs including the caller (max_num_threads); default = physical cores.",
            "spread = (max - min) / median over the repeats; ratios are medians over the T=0 median of the same group.",
        ],
    )
    benchmark.publish(table, args.markdown)


if __name__ == "__main__":
    main()
