"""RLlib's EnvRunner sampling CartPole: shoal's id through vector_entry_point against Gymnasium's
CartPole-v1 under RLlib's default (a SyncVectorEnv), same runner, same PPO module, same step count.

    python bench/bench_rllib.py [--num-envs 8] [--steps 2048] [--repeats 5] [--markdown FILE]

Timed: ``env_runner.sample(num_timesteps=steps)`` of the driver's own EnvRunner (num_env_runners=0):
env steps plus RLlib's per-step work (connectors, the module's forward pass, episode bookkeeping), no
learner update. The two runners sample in turns, so both see the same machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import ray
from ray.rllib.algorithms.ppo import PPOConfig

from shoal import benchmark

CASES = {
    "shoal/CartPole-v1 (vector_entry_point, NEXT_STEP view over Multithreading)": (
        "shoal.adapters:shoal/CartPole-v1",
        "vector_entry_point",
        {"autoreset_mode": "next_step", "max_num_threads": 0, "seed": 0},
    ),
    "Gymnasium CartPole-v1 (RLlib's default: SyncVectorEnv)": ("CartPole-v1", "sync", {}),
}


def build(env_id: str, mode: str, env_config: dict, num_envs: int):
    config = (
        PPOConfig()
        .environment(env_id, env_config=env_config)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=num_envs, gym_env_vectorize_mode=mode)
    )
    return config.build_algo()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=2048, help="env steps per timed sample() call")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--markdown")
    args = parser.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    algos = {}
    try:
        algos = {name: build(*case, args.num_envs) for name, case in CASES.items()}
        for algo in algos.values():
            algo.env_runner.sample(num_timesteps=256, explore=True)  # warm-up
        samples = {name: [] for name in algos}
        for _ in range(args.repeats):
            for name, algo in algos.items():
                start = time.perf_counter()
                algo.env_runner.sample(num_timesteps=args.steps, explore=True)
                samples[name].append(args.steps / (time.perf_counter() - start))
    finally:
        for algo in algos.values():
            algo.stop()
        ray.shutdown()
    base = statistics.median(samples[list(CASES)[1]])
    rows = [
        [
            name,
            f"{statistics.median(values):,.0f}",
            f"{(max(values) - min(values)) / statistics.median(values):.0%}",
            ", ".join(f"{v:,.0f}" for v in values),
            f"{statistics.median(values) / base:.2f}x",
        ]
        for name, values in samples.items()
    ]
    info = benchmark.system_info(
        {
            "ray": ray.__version__,
            "sampled": f"{args.steps} env steps per sample() call, {args.num_envs} envs, PPO's default module",
            "repeats": f"{args.repeats}, the two runners in turns",
        }
    )
    table = benchmark.format_markdown(
        "RLlib EnvRunner sampling: shoal's id vs Gymnasium's CartPole-v1",
        info,
        rows,
        ["env", "median env steps/s", "spread", "samples", "vs Gymnasium"],
        ["RLlib's own per-step work sets this pace; the env step is a small share of it."],
    )
    benchmark.publish(table, args.markdown)


if __name__ == "__main__":
    main()
