"""PufferLib Ocean envs (pufferlib 3.0.0 sdist, C files unmodified) on shoal, in one run.

    python bench/bench_ocean.py [--repeats 3] [--scale 1.0] [--envs go,snake] [--markdown bench/results/ocean.md]

Per env, at a size where a batch is substantial:
  (a) the env's own loop as PufferLib's vec_step runs it: `for i: c_step(&envs[i])` in a plain C
      program built from the same staged sources and flags, libc rand() as in PufferLib, the
      actions of each step copied in from a pool drawn in advance (no shoal, no Python);
  (a') the same loop with each env's rand() on the stream shoal gives it and shoal's actions and
      warm-up: the trajectories shoal steps, so the same work where an env's work depends on its
      random draws (moba's games, for one, cost ~20 % more a step on shoal's streams than on libc's);
  (b) shoal Multithreading T=0 (the caller steps every env), (c) T=2, (d) make() defaults;
      send+recv per batch, actions generated in advance, after reset and 20 warm-up steps.
Every case runs --repeats times, cases interleaved round-robin (seed 001 methodology); medians.
(a) and (b) step on one thread, so they are also timed in that thread's CPU time, which leaves out
what other processes on a shared machine took: the "b/a CPU" column.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import tempfile
import time
import types
from pathlib import Path

import numpy as np

from shoal import benchmark
from shoal.ocean import env_class, harness
from shoal.ocean.unavailable import WRITES_SHARED_STATE
from shoal.vector import make

# env -> (Ocean class keyword arguments, num_envs, agent steps per measurement at --scale 1)
SIZES = {
    "go": ({}, 1024, 400_000),
    "pacman": ({}, 1024, 1_000_000),
    "enduro": ({}, 1024, 1_000_000),
    "terraform": ({}, 128, 1_000_000),
    "drone": ({}, 1024, 4_000_000),
    "snake": ({}, 16, 2_000_000),
    "breakout": ({}, 1024, 2_000_000),
    "tetris": ({}, 1024, 2_000_000),
    "pong": ({}, 4096, 8_000_000),
    "rware": ({}, 256, 4_000_000),
    "cartpole": ({}, 4096, 12_000_000),
    "squared": ({}, 4096, 20_000_000),
    "nmmo3": ({}, 4, 400_000),  # 1,024 players on each 512 x 512 map
    "grid": ({}, 1024, 4_000_000),  # MY_SHARED: 1,000 mazes built once per vector
    "tower_climb": ({}, 1024, 1_000_000),  # MY_SHARED: 50 puzzles built once per vector
    "moba": ({}, 16, 400_000),  # one thread: its steps write the vector's shared path cache
    # the class default size 1.0 cannot fit two army bases 2.0 apart: its c_reset would loop forever
    "school": ({"size_x": 8.0, "size_z": 8.0}, 16, 2_000_000),
}
# Seed 003's table (PufferLib's Multithreading PR, its machine, end to end with training) and the
# issue's single-thread figures of PufferLib 3.0's native vector on a 2-vCPU guest (agent steps/s).
PR_ROWS = {
    "go": "520K → 690K",
    "pacman": "800K → 890K",
    "enduro": "720K → 520K",
    "terraform": "370K → 380K",
    "drone": "drone_swarm 1.1M → 940K",
}
PUFFER_1T = {
    "go": 0.88e6,
    "pacman": 2.2e6,
    "enduro": 2.1e6,
    "terraform": 2.3e6,
    "snake": 4.7e6,
    "breakout": 4.7e6,
    "tetris": 4.4e6,
    "pong": 33e6,
    "drone": 19e6,
    "rware": 19e6,
    "cartpole": 33e6,
    "squared": 71e6,
}


class HarnessCase:
    """(a): the bare C loop, timed inside the program (wall and CPU time)."""

    def __init__(self, name, cls, num_envs, agent_steps, workdir, shoal_rand=False):
        self.name, self.cls, self.num_envs, self.workdir = name, cls, num_envs, workdir
        self.shoal_rand = shoal_rand
        probe = cls(num_envs=1)
        agents = probe.num_agents * num_envs
        self.steps = max(1, agent_steps // agents)
        # The very rows shoal's cases step with (benchmark.time_vecenv: random_actions(vecenv), seed 0).
        shape = types.SimpleNamespace(single_action_space=probe.single_action_space, agents_per_batch=agents)
        self.actions = np.stack(benchmark.random_actions(shape))
        probe.close()
        self.samples, self.cpu_samples = [], []

    def run(self):
        wall, cpu = harness.bench(
            self.cls, self.num_envs, self.steps, self.workdir, actions=self.actions, shoal_rand=self.shoal_rand
        )
        self.samples.append(wall)
        self.cpu_samples.append(cpu)
        return wall


class ShoalCase:
    """(b)-(d): send+recv per batch as benchmark.time_vecenv times it, in wall time and in the
    calling thread's CPU time (all of the work at T=0, where the caller steps every env)."""

    def __init__(self, name, cls, num_envs, threads, agent_steps):
        self.name, self.agent_steps = name, agent_steps
        options = {} if threads == "default" else {"max_num_threads": threads}
        self.build = functools.partial(make, cls, backend="Multithreading", num_envs=num_envs, **options)
        self.samples, self.cpu_samples = [], []

    def run(self):
        vecenv = self.build()
        try:
            actions = benchmark.warm_up(vecenv)
            batches = max(1, self.agent_steps // vecenv.agents_per_batch)
            start, cpu_start = time.perf_counter(), time.thread_time()
            for i in range(batches):
                vecenv.send(actions[i % 16])
                vecenv.recv()
            cpu, wall = time.thread_time() - cpu_start, time.perf_counter() - start
            agent_steps = batches * vecenv.agents_per_batch
        finally:
            vecenv.close()
        self.samples.append(agent_steps / wall)
        self.cpu_samples.append(agent_steps / cpu)
        return self.samples[-1]


def median(samples):
    return statistics.median(samples)


def fmt(sps: float) -> str:
    return f"{sps / 1e6:.2f}M" if sps >= 1e6 else f"{sps / 1e3:.0f}K"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every agent-step budget")
    parser.add_argument("--envs", help="comma-separated subset of: " + ",".join(SIZES))
    parser.add_argument("--source", help="PufferLib tree (default: the pinned pufferlib 3.0.0 sdist)")
    parser.add_argument("--markdown", help="write the table to this file")
    args = parser.parse_args()
    names = args.envs.split(",") if args.envs else list(SIZES)

    info = benchmark.system_info(
        {
            "what is timed": "(a) the C loop inside the program; (b)-(d) send+recv per batch",
            "repeats": args.repeats,
            "agent steps per sample": f"{args.scale:g} x the budgets of SIZES (--scale)",
            "source": args.source or "pufferlib 3.0.0 sdist",
        }
    )
    workdir = Path(tempfile.mkdtemp(prefix="bench_ocean_"))
    rows = {}
    for name in names:
        kwargs, num_envs, budget = SIZES[name]
        steps = int(budget * args.scale)
        cls = env_class(name, args.source, **kwargs)
        one_thread = name in WRITES_SHARED_STATE
        rows[name] = {
            "num_envs": num_envs,
            "agents": cls(num_envs=1).num_agents * num_envs,
            "a": HarnessCase(f"{name} (a) C loop", cls, num_envs, steps, workdir),
            "s": HarnessCase(f"{name} (a') same streams", cls, num_envs, steps, workdir, shoal_rand=True),
            "b": ShoalCase(f"{name} (b) T=0", cls, num_envs, 0, steps),
            # An env whose steps write its vector's shared state runs on one thread (OceanError on more).
            "c": ShoalCase(f"{name} (c) T=2", cls, num_envs, 1 if one_thread else 2, steps),
            "d": ShoalCase(f"{name} (d) default", cls, num_envs, 1 if one_thread else "default", steps),
        }
    for r in range(args.repeats):
        for row in rows.values():
            for key in "asbcd":
                case = row[key]
                sps = case.run()
                print(f"  repeat {r + 1}/{args.repeats}  {case.name:<28} {sps:>14,.0f} SPS", flush=True)

    headers = [
        "env",
        "envs × agents",
        "(a) C loop",
        "(a') same streams",
        "(b) T=0",
        "(c) T=2",
        "(d) default",
        "b/a",
        "c/a",
        "d/b",
        "b/a CPU",
        "b/a'",
        "PufferLib 1 thread (issue)",
        "PR #382 (seed 003)",
    ]
    table = []
    for name, row in rows.items():
        a, same, b, c, d = (median(row[k].samples) for k in "asbcd")
        a_cpu, b_cpu = median(row["a"].cpu_samples), median(row["b"].cpu_samples)
        table.append(
            [
                f"{name} (c, d at T=1)" if name in WRITES_SHARED_STATE else name,
                f"{row['num_envs']} × {row['agents'] // row['num_envs']}",
                fmt(a),
                fmt(same),
                fmt(b),
                fmt(c),
                fmt(d),
                f"{b / a:.2f}",
                f"{c / a:.2f}",
                f"{d / b:.2f}",
                f"{b_cpu / a_cpu:.2f}",
                f"{b / same:.2f}",
                fmt(PUFFER_1T[name]) if name in PUFFER_1T else "",
                PR_ROWS.get(name, ""),
            ]
        )
    info["load average (1 min) at end"] = f"{os.getloadavg()[0]:.2f}"
    notes = [
        "Agent steps per second, medians of the repeats, cases interleaved. T = threads incl. the caller; "
        "default = make() without max_num_threads (physical cores).",
        "(a) is PufferLib's own vec_step loop over the same compiled sources and flags (-O2), without Python.",
        "(a') is that loop on shoal's per-env random streams with shoal's actions and warm-up: the trajectories (b) "
        "steps. b/a' is shoal's own cost where (a) and (b) play different games.",
        "b/a CPU: (b) over (a) in the stepping thread's CPU time (medians of each), which leaves out what other "
        "processes on the machine took; b/a, c/a, d/b are wall time.",
        "PufferLib 1 thread: the issue's figures for PufferLib 3.0's native vector on a 2-vCPU guest (another machine).",
        "PR #382: its before → after SPS (end to end with training, its machine); not comparable in absolute terms.",
    ]
    shutil.rmtree(workdir, ignore_errors=True)
    benchmark.publish(benchmark.format_markdown("Ocean envs on shoal", info, table, headers, notes), args.markdown)


if __name__ == "__main__":
    main()
