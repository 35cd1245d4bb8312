"""Which wrapper an env needs: Gymnasium, PettingZoo, or none it can take."""

from __future__ import annotations

import gymnasium

from ..buffers import Buffers
from ..errors import APIUsageError
from ..optional import optional_module
from ..pufferenv import PufferEnv
from .gymnasium_env import GymnasiumPufferEnv
from .pettingzoo_env import PettingZooPufferEnv


def _is_aec_env(env) -> bool:
    pettingzoo = optional_module("pettingzoo")
    return (pettingzoo is not None and isinstance(env, pettingzoo.AECEnv)) or hasattr(env, "agent_selection")


def _is_parallel_env(env) -> bool:
    pettingzoo = optional_module("pettingzoo")
    if pettingzoo is not None and isinstance(env, pettingzoo.ParallelEnv):
        return True
    return (
        not _is_aec_env(env) and hasattr(env, "possible_agents") and callable(getattr(env, "observation_space", None))
    )


def wrap(env, buf: Buffers | None = None, seed: int = 0) -> PufferEnv:
    """A shoal PufferEnv over a gymnasium.Env or a PettingZoo ParallelEnv, writing into ``buf``."""
    if isinstance(env, PufferEnv):
        raise APIUsageError(
            f"{type(env).__name__} is already a shoal PufferEnv; pass it to a backend directly instead of emulating it"
        )
    if isinstance(env, gymnasium.Env):
        return GymnasiumPufferEnv(env, buf=buf, seed=seed)
    if _is_parallel_env(env):
        return PettingZooPufferEnv(env, buf=buf, seed=seed)
    hint = " (a PettingZoo AEC env: convert it with pettingzoo.utils.aec_to_parallel)" if _is_aec_env(env) else ""
    raise APIUsageError(
        f"cannot emulate {type(env).__module__}.{type(env).__name__}{hint}; shoal accepts a "
        "gymnasium.Env, a PettingZoo ParallelEnv, or a shoal PufferEnv (native, not wrapped)"
    )


def onto_rows(env: PufferEnv, buf: Buffers) -> PufferEnv | None:
    """``env`` as a PufferEnv that writes into ``buf``, or None when it cannot be one.

    An env that writes there already is returned as is. One of shoal's own emulation wrappers (that
    exact class, no subclass) over buffers of its own is rebuilt over ``buf`` around the same inner
    env, with the same seed: what :func:`wrap` of that env gives, so it steps as a plain gymnasium
    (or PettingZoo) env does, through one layer. Nothing of the discarded wrapper matters: it holds
    no env state (the inner env does) and a vector resets every env before stepping it.
    """
    if buf.written_by(env):
        return env
    if type(env) is GymnasiumPufferEnv or type(env) is PettingZooPufferEnv:
        return type(env)(env.env, buf=buf, seed=env.seed)
    return None
