"""TorchRL rollouts over shoal through the Gymnasium view (SAME_STEP mode, which TorchRL requires).

python examples/torchrl_rollout.py --steps 100
"""

import argparse

import torch
from torchrl.envs import GymWrapper

import shoal.vector
from shoal.adapters.gymnasium import GymnasiumVectorEnv
from shoal.envs import CartPole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--num-envs", type=int, default=16)
    args = parser.parse_args()

    vecenv = shoal.vector.make(CartPole, backend="Multithreading", num_envs=args.num_envs, max_num_threads=2, seed=0)
    # TorchRL reads view.autoreset_mode and accepts SAME_STEP (shoal's own mode): "next" holds the
    # final observation where an episode ended, the next root observation starts the new episode.
    env = GymWrapper(GymnasiumVectorEnv(vecenv, autoreset_mode="same_step"), categorical_action_encoding=True)
    env.set_seed(0)
    rollout = env.rollout(args.steps, break_when_any_done=False)
    print(rollout)
    done = rollout["next", "done"].squeeze(-1)
    print(
        f"{int(done.sum())} episodes ended in {args.steps} steps of {args.num_envs} envs; "
        f"mean reward {rollout['next', 'reward'].mean().item():.2f}"
    )
    assert rollout.batch_size == torch.Size([args.num_envs, args.steps])
    env.close()


if __name__ == "__main__":
    main()
