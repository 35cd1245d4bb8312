"""RLlib's PPO trains on a shoal vector env.

RLlib's EnvRunners build their envs with ``gymnasium.make_vec(env_id, num_envs,
vectorization_mode="vector_entry_point", **env_config)``; shoal registers its bundled native envs
(and shoal.mujoco's tasks) with a ``vector_entry_point``, so the runner steps shoal's thread pool
with no wrapper of RLlib's own. RLlib reads NEXT_STEP autoreset (a row's step after an episode end
is its new episode's reset), hence ``autoreset_mode="next_step"``.

    pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu   # without a GPU
    pip install ".[rllib]"                                                      # from the clone
    python examples/rllib_ppo.py --iterations 3
"""

from __future__ import annotations

import argparse
import time

import ray
from ray.rllib.algorithms.ppo import PPOConfig

# "module:id": gymnasium imports the module before looking the id up, so an EnvRunner in another
# process (num_env_runners >= 1) registers shoal's ids there too.
ENV_ID = "shoal.adapters:shoal/CartPole-v1"


def describe(runner) -> str:
    """What an EnvRunner steps: shoal's Gymnasium view and the shoal vector under it."""
    view = runner.env.unwrapped
    return f"{view!r} over {type(view.vecenv).__module__}.{type(view.vecenv).__name__}"


def train(iterations: int, num_envs: int, batch: int, env_runners: int, threads: int) -> None:
    config = (
        PPOConfig()
        .environment(ENV_ID, env_config={"autoreset_mode": "next_step", "max_num_threads": threads, "seed": 0})
        .env_runners(
            num_env_runners=env_runners, num_envs_per_env_runner=num_envs, gym_env_vectorize_mode="vector_entry_point"
        )
        .training(train_batch_size_per_learner=batch, minibatch_size=min(batch, 128), num_epochs=2)
    )
    algo = config.build_algo()
    try:
        if env_runners:
            (env,) = algo.env_runner_group.foreach_env_runner(describe, local_env_runner=False)
        else:
            env = describe(algo.env_runner)
        print(f"env runner's env: {env}")
        start, sampled = time.perf_counter(), 0
        for iteration in range(1, iterations + 1):
            runners = algo.train()["env_runners"]
            sampled = int(runners["num_env_steps_sampled_lifetime"])
            returns = runners.get("episode_return_mean", float("nan"))
            print(f"iteration {iteration}: {sampled} env steps sampled, episode return mean {returns:.1f}")
        seconds = time.perf_counter() - start
        print(
            f"RLlib PPO on shoal: {sampled} env steps in {seconds:.1f} s ({sampled / seconds:.0f} env steps/s, training included)"
        )
    finally:
        algo.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--num-envs", type=int, default=8, help="envs per EnvRunner (one shoal vector each)")
    parser.add_argument("--batch", type=int, default=256, help="env steps per training iteration")
    parser.add_argument("--env-runners", type=int, default=0, help="0: the driver samples itself")
    parser.add_argument("--threads", type=int, default=0, help="shoal's max_num_threads (0: no pool threads)")
    args = parser.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    try:
        train(args.iterations, args.num_envs, args.batch, args.env_runners, args.threads)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
