"""The Ray backend against its same-machine peers, in one run, methodology of seed 001.

    python bench/bench_ray.py [--repeats 3] [--scale 1.0] [--markdown bench/results/ray.md]

Two groups, each measured against its peer on this machine:
  native CartPole, 4096 envs:          Multithreading (2 threads)  vs  Ray, 2 actors x 1 thread
  gymnasium CartPole-v1, 64 envs:      Serial, Multiprocessing (2 workers)  vs  Ray, 2 actors
                                       (full sync, and half-batch async: batch_size=32)
Timed: send + recv only, random valid actions generated in advance, no policy; construction, reset
and warm-up untimed; cases interleaved round-robin, every sample reported with the median and the
spread. One Ray instance (2 CPUs, no dashboard) is started for the whole run and every Ray vector
joins it, so Ray's start-up is not timed either; it is shut down at the end.
"""

from __future__ import annotations

import argparse
import functools
import logging
import sys

import gymnasium

from shoal import benchmark
from shoal.benchmark import Case
from shoal.envs import CartPole
from shoal.vector import make


def make_cartpole():
    return gymnasium.make("CartPole-v1")


def cases(scale: float) -> dict[str, list[Case]]:
    def steps(n: float) -> int:
        return max(1, int(n * scale))

    native = functools.partial(make, CartPole, num_envs=4096, seed=0)
    python = functools.partial(make, make_cartpole, num_envs=64, seed=0)
    return {
        "native CartPole, 4096 envs": [
            Case(
                "Multithreading, 2 threads",
                functools.partial(native, backend="Multithreading", max_num_threads=2),
                steps(2e7),
            ),
            Case(
                "Ray, 2 actors x 1 thread",
                functools.partial(native, backend="Ray", num_workers=2, max_num_threads=1),
                steps(2e6),
                warmup_steps=10,
            ),
        ],
        "gymnasium CartPole-v1, 64 envs": [
            Case("Serial", functools.partial(python, backend="Serial"), steps(1.5e5)),
            Case(
                "Multiprocessing, 2 workers",
                functools.partial(python, backend="Multiprocessing", num_workers=2),
                steps(2e5),
            ),
            Case("Ray, 2 actors", functools.partial(python, backend="Ray", num_workers=2), steps(3e4), warmup_steps=10),
            Case(
                "Ray, 2 actors, batch_size=32",
                functools.partial(python, backend="Ray", num_workers=2, batch_size=32),
                steps(3e4),
                warmup_steps=10,
            ),
        ],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every agent-step budget")
    parser.add_argument("--markdown", help="write the result table to this file")
    args = parser.parse_args(argv)
    try:
        import ray
    except ImportError:
        print(
            "bench_ray needs ray: pip install 'ray>=2.9' (or, in shoal's source folder, pip install '.[ray]')",
            file=sys.stderr,
        )
        return 1

    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    try:
        info = benchmark.system_info({"ray": ray.__version__, "Ray instance": "local, num_cpus=2"})
        groups = cases(args.scale)
        for group in groups.values():
            benchmark.run_cases(group, args.repeats)
    finally:
        ray.shutdown()

    headers = ["case", "median SPS", "spread", "samples", "vs first row"]
    rows, notes = [], []
    for title, group in groups.items():
        rows.append([f"**{title}**", "", "", "", ""])
        rows += [benchmark.case_row(case, group[0]) for case in group]
        for case in group:
            if case.name.startswith("Ray"):
                for peer in group:
                    if not peer.name.startswith("Ray"):
                        notes.append(
                            f"- {title}: {case.name} is {peer.median / case.median:.1f}x slower than {peer.name}."
                        )
    table = benchmark.format_markdown(
        "Ray backend vs same-machine backends",
        info,
        rows,
        headers,
        [
            "spread = (max - min) / median over the repeats; 'vs first row' = median / median of the group's "
            "first row.",
            "",
        ]
        + notes,
    )
    benchmark.publish(table, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
