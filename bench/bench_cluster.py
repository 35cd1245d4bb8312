"""The Ray backend's cost per step on a simulated cluster, against Multiprocessing on one machine.

    python bench/bench_cluster.py [--repeats 5] [--seconds 2] [--cases noop3,sleep1ms,bigobs]
                                  [--markdown bench/results/cluster.md]

Cases (each in a process of its own, which starts its own ``ray.cluster_utils.Cluster`` on loopback):
  noop3     a do-nothing env, 3 envs, 3 actors on one node (the driver's: a 3-CPU head)
  sleep1ms  an env that sleeps 1 ms a step, 12 envs, 3 actors on one node (the driver's)
  bigobs    113 KB observations, 12 envs, 3 actors, one per node (a 0-CPU head and three 1-CPU
            nodes, so every actor is on a node other than the driver's)
Baseline: Multiprocessing on this machine, same envs, ``num_workers=3`` (``overwork=True`` where there
are fewer cores). Timed: send + recv of a reset, warmed-up vector for ``--seconds``, actions made in
advance; construction, the cluster's start and the warm-up are not timed. Within a case's process the
Ray and Multiprocessing samples alternate, ``--repeats`` of each; we report medians.
The last lines, one per case, are for scripts: ``cluster: <case> per_step_us=<x> vs_mp=<y>`` where
vs_mp is Ray's env steps/s over Multiprocessing's (the same envs, so the ratio of their times per step).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from gymnasium import spaces

from shoal import benchmark
from shoal.pufferenv import PufferEnv

OBS_FLOATS = {"noop3": 1, "sleep1ms": 1, "bigobs": 113 * 1024 // 4}
SLEEP_S = {"noop3": 0.0, "sleep1ms": 0.001, "bigobs": 0.0}
NUM_ENVS = {"noop3": 3, "sleep1ms": 12, "bigobs": 12}
CASES = tuple(NUM_ENVS)
WORKERS = 3


class BenchEnv(PufferEnv):
    """One agent; each step writes its step count into its observation (all of it) and sleeps ``sleep_s``."""

    def __init__(self, buf=None, seed: int = 0, obs_floats: int = 1, sleep_s: float = 0.0):
        self.single_observation_space = spaces.Box(-np.inf, np.inf, (obs_floats,), np.float32)
        self.single_action_space = spaces.Discrete(2)
        self.num_agents = 1
        super().__init__(buf, seed)
        self.sleep_s = sleep_s
        self.count = 0

    def reset(self, seed=None):
        self.count = 0
        self.observations[:] = 0
        return self.observations, []

    def step(self, actions):
        if self.sleep_s:
            time.sleep(self.sleep_s)
        self.count += 1
        self.observations[:] = self.count
        return self.observations, self.rewards, self.terminals, self.truncations, []


def per_step_us(vecenv, seconds: float) -> float:
    """Median-free mean time of one send + recv over ``seconds`` (after a warm-up), in microseconds."""
    actions = benchmark.warm_up(vecenv, 20)
    steps, start = 0, time.perf_counter()
    while True:
        for _ in range(10):
            vecenv.send(actions[steps % 16])
            vecenv.recv()
            steps += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / steps * 1e6


def ray_floor_us(seconds: float) -> float:
    """Ray's own cost of one round over WORKERS actors that do nothing, through one compiled graph
    each, as shoal's full-sync step uses them (no env, no shoal): the floor under shoal's noop3."""
    import ray
    from ray.dag import InputNode

    from shoal.backends.worker_side.ray_actor import numpy_only_channels

    @ray.remote(num_cpus=1)
    class Noop:
        def __init__(self):
            numpy_only_channels()

        def step(self, actions):
            return None

    actors = [Noop.remote() for _ in range(WORKERS)]
    graphs = []
    for actor in actors:
        with InputNode() as actions:
            graphs.append(actor.step.bind(actions).experimental_compile())
    try:
        for _ in range(20):
            [ref.get(timeout=-1) for ref in [g.execute(None) for g in graphs]]
        rounds, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            [ref.get(timeout=-1) for ref in [g.execute(None) for g in graphs]]
            rounds += 1
        return (time.perf_counter() - start) / rounds * 1e6
    finally:
        for graph in graphs:
            graph.teardown()
        for actor in actors:
            ray.kill(actor)


def start_cluster(case: str):
    from ray.cluster_utils import Cluster

    if case == "bigobs":
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
        for _ in range(WORKERS):
            cluster.add_node(num_cpus=1)
    else:
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": WORKERS, "include_dashboard": False})
    cluster.wait_for_nodes()
    return cluster


def run_case(case: str, repeats: int, seconds: float) -> dict:
    """Ray and Multiprocessing samples of ``case``, alternating, in this process."""
    import ray

    from shoal.vector import make

    kwargs = {"obs_floats": OBS_FLOATS[case], "sleep_s": SLEEP_S[case]}
    common = {"env_kwargs": kwargs, "num_envs": NUM_ENVS[case], "num_workers": WORKERS, "seed": 0}
    cluster = start_cluster(case)
    ray.init(address=cluster.address, logging_level="ERROR")
    builds = {
        "Multiprocessing": lambda: make(
            BenchEnv, backend="Multiprocessing", overwork=os.cpu_count() < WORKERS, **common
        ),
        "Ray": lambda: make(BenchEnv, backend="Ray", compiled_graphs=True, **common),
        "Ray, plain calls": lambda: make(BenchEnv, backend="Ray", **common),
    }
    samples: dict = {name: [] for name in builds}
    paths: dict = {}
    try:
        # One vector at a time: an idle vector's actors may still hold CPU (a compiled graph's wait).
        for _ in range(repeats):
            for name, build in builds.items():
                vecenv = build()
                try:
                    samples[name].append(per_step_us(vecenv, seconds))
                    paths[name] = ", ".join(sorted(set(getattr(vecenv, "worker_paths", ["processes"]))))
                finally:
                    vecenv.close()
            if case != "bigobs":
                samples.setdefault("Ray's floor (bare graphs)", []).append(ray_floor_us(seconds))
                paths["Ray's floor (bare graphs)"] = "3 do-nothing actors, no shoal"
    finally:
        ray.shutdown()
        cluster.shutdown()
    return {"case": case, "samples": samples, "paths": paths}


def child(case: str, repeats: int, seconds: float) -> dict:
    """Runs ``case`` in a process of its own with a temporary HOME and RAY_TMPDIR."""
    with tempfile.TemporaryDirectory(prefix="shoal-bc-") as tmp:
        env = {**os.environ, "HOME": tmp, "RAY_TMPDIR": tmp, "RAY_AUTH_MODE": "disabled"}
        args = [sys.executable, os.path.abspath(__file__), "--child", case, "--repeats", str(repeats)]
        done = subprocess.run(
            [*args, "--seconds", str(seconds)], env=env, capture_output=True, text=True, timeout=600, check=False
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"case {case} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per sample")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--markdown", help="write the result table to this file")
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_case(args.child, args.repeats, args.seconds)), flush=True)
        return 0
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; the cases are {list(CASES)}")
    try:
        import ray
    except ImportError:
        print(
            "bench_cluster needs ray: pip install 'ray>=2.9' (or, in shoal's source folder, pip install '.[ray]')",
            file=sys.stderr,
        )
        return 1

    info = benchmark.system_info({"ray": ray.__version__, "cluster": "ray.cluster_utils.Cluster on loopback"})
    results = []
    for case in cases:
        result = child(case, args.repeats, args.seconds)
        results.append(result)
        for name, values in result["samples"].items():
            print(f"  {case:<9} {name:<16} " + " ".join(f"{v:,.0f}" for v in values) + " us/step", flush=True)
    rows, lines = [], []
    for result in results:
        mp_us = statistics.median(result["samples"]["Multiprocessing"])
        for name, values in result["samples"].items():
            us = statistics.median(values)
            rows.append([result["case"], name, f"{us:,.0f}", f"{mp_us / us:.2f}", result["paths"][name]])
        ray_us = statistics.median(result["samples"]["Ray"])
        lines.append(f"cluster: {result['case']} per_step_us={ray_us:.0f} vs_mp={mp_us / ray_us:.2f}")
    table = benchmark.format_markdown(
        "Ray backend per step on a simulated cluster vs Multiprocessing",
        info,
        rows,
        ["case", "backend", "us/step (median)", "vs_mp", "path"],
        [f"{args.repeats} samples of {args.seconds:g} s each per backend, alternating, one process per case.", ""],
    )
    benchmark.publish(table, args.markdown)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
