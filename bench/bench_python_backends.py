"""Python-env backends against Gymnasium's vector envs, on gymnasium CartPole-v1.

What is timed: only stepping -- shoal ``send`` + ``recv`` (Gymnasium ``step``) -- with every action
batch generated in advance and no policy. Construction, reset and warm-up are not timed. Every
configuration is built once; each repeat then runs every configuration for the same fixed number
of agent steps, one after another (interleaved, in a rotating order), so load changes on a shared
machine hit all of them alike. Reported: every sample, the median and the spread; for the
configurations that run in this process, also steps per CPU-second of the process (from the same
samples), which barely moves when other processes take the cores.

Configurations (``--num-envs`` envs each, 64 by default):
  gymnasium SyncVectorEnv     vs  shoal Serial, with two kinds of creator: the plain
                                  ``gymnasium.make("CartPole-v1")`` and the PufferLib-style
                                  ``GymnasiumPufferEnv(env=gymnasium.make("CartPole-v1"))``
  gymnasium AsyncVectorEnv    vs  shoal Multiprocessing, 2 workers: full sync, and half-batch async
                                  (batch_size=num_envs/2, zero_copy=True)
Both Gymnasium vector envs use SAME_STEP autoreset, the semantics shoal implements, and
AsyncVectorEnv uses the same start method as shoal. ``--env dict-cartpole`` runs the same with a Dict
observation (CartPole's state split into leaves): the structured-observation path.

    python bench/bench_python_backends.py [--env dict-cartpole] [--steps 64000] [--repeats 5] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import os
import platform
import statistics
import sys
import time

import gymnasium
import numpy as np

import shoal
from shoal import _native, benchmark
from shoal.backends.multiprocessing import default_start_method
from shoal.emulation import GymnasiumPufferEnv
from shoal.vector import make


class DictCartPole(gymnasium.ObservationWrapper):
    """CartPole-v1 with a Dict observation (cart and pole state as float32 leaves, the pole's side as a
    Discrete leaf): the structured-observation workload, same dynamics."""

    def __init__(self, env):
        super().__init__(env)
        low, high = env.observation_space.low, env.observation_space.high
        self.observation_space = gymnasium.spaces.Dict(
            {
                "cart": gymnasium.spaces.Box(low[:2], high[:2], dtype=np.float32),
                "pole": gymnasium.spaces.Box(low[2:], high[2:], dtype=np.float32),
                "leaning_right": gymnasium.spaces.Discrete(2),
            }
        )

    def observation(self, observation):
        return {"cart": observation[:2], "pole": observation[2:], "leaning_right": np.int64(observation[2] > 0)}


ENVS = {"cartpole": "gymnasium CartPole-v1", "dict-cartpole": "CartPole-v1 with a Dict observation (DictCartPole)"}


def make_env(kind: str = "cartpole"):
    env = gymnasium.make("CartPole-v1")
    return DictCartPole(env) if kind == "dict-cartpole" else env


def make_wrapped_env(kind: str = "cartpole"):
    """A PufferLib-style creator: the env already wrapped, over buffers of its own (no buf argument)."""
    return GymnasiumPufferEnv(env=make_env(kind))


def rates(agent_steps: int, start: float, cpu_start: float) -> tuple[float, float]:
    """Agent steps per second of wall time and per second of this process's CPU time since the starts."""
    return agent_steps / (time.perf_counter() - start), agent_steps / (time.process_time() - cpu_start)


class ShoalRunner:
    """send + recv over actions made in advance; leaves the vector ready to send."""

    def __init__(self, vecenv, seed: int):
        self.vecenv = vecenv
        rng = np.random.default_rng(seed)
        self.actions = rng.integers(0, 2, size=(256, vecenv.agents_per_batch), dtype=np.int32)
        self.rows = vecenv.agents_per_batch
        vecenv.async_reset(seed)
        vecenv.recv()

    def run(self, agent_steps: int) -> tuple[float, float]:
        vecenv, actions = self.vecenv, self.actions
        iterations = -(-agent_steps // self.rows)
        start, cpu_start = time.perf_counter(), time.process_time()
        for i in range(iterations):
            vecenv.send(actions[i & 255])
            vecenv.recv()
        return rates(iterations * self.rows, start, cpu_start)

    def close(self):
        self.vecenv.close()


class GymnasiumRunner:
    def __init__(self, vecenv, seed: int):
        self.vecenv = vecenv
        rng = np.random.default_rng(seed)
        self.rows = vecenv.num_envs
        self.actions = rng.integers(0, 2, size=(256, self.rows), dtype=np.int64)
        vecenv.reset(seed=seed)

    def run(self, agent_steps: int) -> tuple[float, float]:
        vecenv, actions = self.vecenv, self.actions
        iterations = -(-agent_steps // self.rows)
        start, cpu_start = time.perf_counter(), time.process_time()
        for i in range(iterations):
            vecenv.step(actions[i & 255])
        return rates(iterations * self.rows, start, cpu_start)

    def close(self):
        self.vecenv.close()


def build(name: str, num_envs: int, workers: int, start_method: str, seed: int, env: str = "cartpole"):
    same_step = {"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP}
    creator, wrapped_creator = functools.partial(make_env, env), functools.partial(make_wrapped_env, env)
    if name == "gymnasium SyncVectorEnv":
        env = gymnasium.vector.SyncVectorEnv([creator] * num_envs, **same_step)
        return GymnasiumRunner(env, seed)
    if name == "gymnasium AsyncVectorEnv":
        env = gymnasium.vector.AsyncVectorEnv([creator] * num_envs, context=start_method, **same_step)
        return GymnasiumRunner(env, seed)
    if name == "shoal Serial":
        return ShoalRunner(make(creator, backend="Serial", num_envs=num_envs, seed=seed), seed)
    if name == "shoal Serial, wrapped creator":
        return ShoalRunner(make(wrapped_creator, backend="Serial", num_envs=num_envs, seed=seed), seed)
    if name == "shoal Multiprocessing sync":
        return ShoalRunner(
            make(
                creator,
                backend="Multiprocessing",
                num_envs=num_envs,
                seed=seed,
                num_workers=workers,
                start_method=start_method,
            ),
            seed,
        )
    if name == "shoal Multiprocessing async":
        return ShoalRunner(
            make(
                creator,
                backend="Multiprocessing",
                num_envs=num_envs,
                seed=seed,
                num_workers=workers,
                batch_size=num_envs // 2,
                zero_copy=True,
                start_method=start_method,
            ),
            seed,
        )
    raise ValueError(name)


CONFIGS = [
    "gymnasium SyncVectorEnv",
    "shoal Serial",
    "shoal Serial, wrapped creator",
    "gymnasium AsyncVectorEnv",
    "shoal Multiprocessing sync",
    "shoal Multiprocessing async",
]
# Configurations that step every env in this process: their steps per CPU-second of the process are
# meaningful too, and barely move when other processes take the cores (wall-clock SPS does).
IN_PROCESS = ("gymnasium SyncVectorEnv", "shoal Serial", "shoal Serial, wrapped creator")
# (numerator, denominator, target) -- the goals.
TARGETS = [
    ("shoal Serial", "gymnasium SyncVectorEnv", 1.2),
    ("shoal Serial, wrapped creator", "gymnasium SyncVectorEnv", 1.2),
    ("shoal Serial, wrapped creator", "shoal Serial", None),
    ("shoal Multiprocessing sync", "shoal Serial", 1.3),
    ("shoal Multiprocessing sync", "gymnasium AsyncVectorEnv", 10.0),
    ("shoal Multiprocessing async", "shoal Serial", None),
]


def environment(args, load_at_start) -> list[str]:
    return [
        f"- python {platform.python_version()}, numpy {np.__version__}, gymnasium {gymnasium.__version__}, "
        f"shoal {shoal.__version__}, {platform.system()} {platform.release()}",
        f"- CPU: {benchmark.cpu_model()}; {_native.physical_cores()} physical / {os.cpu_count()} logical cores",
        f"- start method: {args.start_method}; {args.num_envs} envs; Multiprocessing num_workers={args.workers}",
        f"- timed: send+recv (Gymnasium: step) only, actions generated in advance, no policy; "
        f"{args.steps} agent steps per sample after {args.warmup} warm-up agent steps; "
        f"{args.repeats} interleaved repeats",
        f"- load average at start: {' '.join(f'{x:.2f}' for x in load_at_start)}",
    ]


def ratio_lines(medians: dict[str, float], title: str) -> list[str]:
    """The TARGETS table over ``medians`` (rows whose two configurations both ran)."""
    lines = ["", f"| {title} | value | target | met |", "|---|---:|---:|---|"]
    for numerator, denominator, target in TARGETS:
        if numerator in medians and denominator in medians:
            ratio = medians[numerator] / medians[denominator]
            goal = f">= {target:g}x" if target else "-"
            met = ("yes" if ratio >= target else "NO") if target else "-"
            lines.append(f"| {numerator} / {denominator} | {ratio:.2f}x | {goal} | {met} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=64_000, help="agent steps per sample")
    parser.add_argument("--warmup", type=int, default=6_400, help="agent steps before timing")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--start-method", default=default_start_method(), choices=multiprocessing.get_all_start_methods()
    )
    parser.add_argument("--only", nargs="*", choices=CONFIGS, help="run a subset of the configurations")
    parser.add_argument("--markdown", metavar="PATH", help="also write the report to PATH")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--env", choices=sorted(ENVS), default="cartpole", help="the workload")
    args = parser.parse_args(argv)
    if args.repeats < 5:
        print("note: fewer than 5 repeats; the methodology asks for medians of at least 5", file=sys.stderr)

    configs = args.only or CONFIGS
    load_at_start = os.getloadavg()
    runners = {}
    samples: dict[str, list[float]] = {name: [] for name in configs}
    cpu_samples: dict[str, list[float]] = {name: [] for name in configs if name in IN_PROCESS}
    try:
        for name in configs:
            runners[name] = build(name, args.num_envs, args.workers, args.start_method, args.seed, args.env)
            runners[name].run(args.warmup)
        for repeat in range(args.repeats):
            order = configs[repeat % len(configs) :] + configs[: repeat % len(configs)]
            for name in order:
                sps, cpu_sps = runners[name].run(args.steps)
                samples[name].append(sps)
                if name in cpu_samples:
                    cpu_samples[name].append(cpu_sps)
                print(f"repeat {repeat + 1}/{args.repeats}  {name:30s} {sps:12,.0f} SPS", file=sys.stderr)
    finally:
        for runner in runners.values():
            runner.close()

    medians = {name: statistics.median(values) for name, values in samples.items()}
    lines = [f"## shoal Python backends on {ENVS[args.env]}", ""]
    lines += environment(args, load_at_start)
    lines.append(
        f"- load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
        f"(above ~0.5 other processes shared the cores: the numbers are pessimistic)"
    )
    lines += ["", "| configuration | median SPS | spread (max-min)/median | samples (SPS) |", "|---|---:|---:|---|"]
    for name in configs:
        values = samples[name]
        spread = (max(values) - min(values)) / medians[name]
        lines.append(f"| {name} | {medians[name]:,.0f} | {spread:.1%} | {', '.join(f'{v:,.0f}' for v in values)} |")
    lines += ratio_lines(medians, "ratio of medians")
    if cpu_samples:
        cpu_medians = {name: statistics.median(values) for name, values in cpu_samples.items()}
        lines += [
            "",
            "Steps per CPU-second of this process (in-process configurations only; the same samples):",
            "",
            "| configuration | median SPS of CPU time | samples |",
            "|---|---:|---|",
        ]
        for name, values in cpu_samples.items():
            lines.append(f"| {name} | {cpu_medians[name]:,.0f} | {', '.join(f'{v:,.0f}' for v in values)} |")
        lines += ratio_lines(cpu_medians, "ratio of medians (CPU time)")
    report = "\n".join(lines) + "\n"
    benchmark.publish(report, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
