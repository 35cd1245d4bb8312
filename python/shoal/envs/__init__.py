"""Bundled native envs, each usable with every backend.

CartPole  Gymnasium CartPole-v1 dynamics, bit for bit
Squared   tiny grid target task
Grid      multi-agent grid: 4 agents per env, traps that kill, masks for dead agents
Deep      CPU-deep env whose per-step cost is the parameter `work`

The list comes from the native core (one folder per env under cpp/envs/), not from this file.
"""

from .. import _native
from ..native import NativeEnv, env_class


def _bundled() -> dict[str, type[NativeEnv]]:
    classes = {}
    for name in _native.bundled_names():
        spec = _native.bundled_spec(name)
        classes[name] = env_class(spec, spec.describe()["class_name"])
    return classes


BUNDLED = _bundled()
globals().update({cls.__name__: cls for cls in BUNDLED.values()})

__all__ = [*(cls.__name__ for cls in BUNDLED.values()), "BUNDLED", "NativeEnv"]
