"""PPO from stable-baselines3 on shoal's native CartPole, stepped by the thread pool.

pip install -e ".[adapters]"
python examples/train_sb3.py --steps 50000
"""

import argparse

import torch
from stable_baselines3 import PPO

import shoal.vector
from shoal.adapters.sb3 import SB3VecEnv
from shoal.envs import CartPole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50_000, help="agent steps to train for")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2, help="shoal threads stepping the envs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.set_num_threads(1)  # the network is tiny; leave the cores to the envs
    vecenv = shoal.vector.make(
        CartPole, backend="Multithreading", num_envs=args.num_envs, max_num_threads=args.threads, seed=args.seed
    )
    env = SB3VecEnv(vecenv)  # episode stats are in infos["episode"]: no VecMonitor needed
    model = PPO("MlpPolicy", env, n_steps=128, batch_size=256, n_epochs=4, device="cpu", seed=args.seed)
    model.learn(args.steps)
    episodes = list(model.ep_info_buffer)
    mean_return = sum(e["r"] for e in episodes) / max(1, len(episodes))
    print(f"trained {model.num_timesteps} steps; mean return of the last {len(episodes)} episodes: {mean_return:.1f}")
    env.close()


if __name__ == "__main__":
    main()
