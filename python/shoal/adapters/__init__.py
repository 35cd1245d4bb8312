"""Meet trainers where they are: views of a shoal vector env in other frameworks' APIs.

    shoal.adapters.gymnasium  GymnasiumVectorEnv (gymnasium.vector.VectorEnv; TorchRL through GymWrapper),
                              make_vector, and the gymnasium.make_vec ids shoal/CartPole-v1 ...
    shoal.adapters.sb3        SB3VecEnv (stable_baselines3 VecEnv; needs stable-baselines3)
    shoal.adapters.pufferl    drive_like_pufferl: the contract PufferLib's trainer relies on, checked

Each adapter sits on the synchronous API (``reset``/``step``) of any backend whose batches hold every
row, and copies at its boundary; the vector itself stays zero-copy. Importing this package registers
the ``shoal/...`` ids with Gymnasium; ``SB3VecEnv`` is imported on first use (SB3 pulls in torch).
"""

from . import gymnasium
from .gymnasium import GymnasiumVectorEnv, make_vector


def __getattr__(name: str):
    if name == "SB3VecEnv":
        from .sb3 import SB3VecEnv

        return SB3VecEnv
    raise AttributeError(f"module 'shoal.adapters' has no attribute {name!r}")


__all__ = ["GymnasiumVectorEnv", "make_vector", "SB3VecEnv", "gymnasium"]
