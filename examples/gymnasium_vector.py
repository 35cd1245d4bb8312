"""shoal as a Gymnasium vector env: gymnasium.make_vec, Gymnasium's own wrappers, both autoreset modes.

python examples/gymnasium_vector.py --steps 1000
"""

import argparse

import gymnasium
import numpy as np
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import shoal.adapters  # registers shoal/CartPole-v1, shoal/Squared-v0, shoal/Deep-v0
import shoal.vector
from shoal.adapters import GymnasiumVectorEnv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--num-envs", type=int, default=8)
    args = parser.parse_args()

    # 1. A bundled native env through gymnasium.make_vec (a Multithreading vector underneath).
    envs = gymnasium.make_vec(
        "shoal/CartPole-v1", num_envs=args.num_envs, vectorization_mode="vector_entry_point", seed=0, max_num_threads=2
    )
    envs = RecordEpisodeStatistics(envs)
    print(envs, envs.metadata["autoreset_mode"])
    obs, info = envs.reset(seed=0)
    for _ in range(args.steps):
        obs, rewards, terminated, truncated, info = envs.step(envs.action_space.sample())
        if "final_obs" in info:  # SAME_STEP: the observation that ended each finished episode
            ended = np.flatnonzero(info["_final_obs"])
            assert all(info["final_obs"][i].shape == (4,) for i in ended)
    returns = list(envs.return_queue)
    print(f"{envs.episode_count} episodes, mean return {np.mean(returns):.1f}")
    envs.close()

    # 2. Any Python env under any synchronous backend, in NEXT_STEP mode for trainers that expect it.
    vecenv = shoal.vector.make(lambda: gymnasium.make("CartPole-v1"), backend="Serial", num_envs=args.num_envs, seed=0)
    with GymnasiumVectorEnv(vecenv, autoreset_mode="next_step") as envs:
        obs, _ = envs.reset(seed=0)
        done_before = np.zeros(args.num_envs, dtype=bool)
        for _ in range(args.steps):
            obs, rewards, terminated, truncated, _ = envs.step(envs.action_space.sample())
            assert (rewards[done_before] == 0).all()  # the step after an episode end
            done_before = terminated | truncated
        print(f"NEXT_STEP view over Serial ran {args.steps} steps of {args.num_envs} envs")


if __name__ == "__main__":
    main()
