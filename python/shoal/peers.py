"""Other libraries stepping the same env, timed beside shoal's rows by `shoal bench`: EnvPool (when
it has the env) and gymnasium's SyncVectorEnv and AsyncVectorEnv (for any Gymnasium env)."""

from __future__ import annotations

import functools

from . import cpus
from .optional import optional_module

#: AsyncVectorEnv starts one process per env: beyond this many it measures process thrashing
MAX_ASYNC_ENVS = 64
#: SyncVectorEnv steps envs one by one in Python; beyond this a sample takes minutes
MAX_SYNC_ENVS = 1024


def gymnasium_id(env_name: str) -> str | None:
    """The Gymnasium id of the same env as config.ini's ``[env] name``, if it has one."""
    if env_name == "cartpole":
        return "CartPole-v1"  # the bundled env implements CartPole-v1's dynamics
    prefix, _, rest = env_name.partition(":")
    return rest if prefix in ("gymnasium", "mujoco") and rest else None


class GymnasiumAdapter:
    """Just enough of the shoal API around a gymnasium VectorEnv (or EnvPool) to time it the same way."""

    def __init__(self, env, num_envs: int):
        self.env = env
        self.single_action_space = getattr(env, "single_action_space", None) or env.action_space
        self.agents_per_batch = num_envs

    def async_reset(self, seed):
        self.out = self.env.reset(seed=seed)

    def send(self, actions):
        self.out = self.env.step(actions)

    def recv(self):
        return self.out

    def close(self):
        self.env.close()


class EnvPoolAdapter(GymnasiumAdapter):
    def async_reset(self, seed):
        self.out = self.env.reset()  # EnvPool seeds at construction


def _gymnasium_vector(kind: str, env_id: str, num_envs: int) -> GymnasiumAdapter:
    import gymnasium

    envs = [functools.partial(gymnasium.make, env_id)] * num_envs
    cls = gymnasium.vector.SyncVectorEnv if kind == "Sync" else gymnasium.vector.AsyncVectorEnv
    return GymnasiumAdapter(cls(envs), num_envs)


def _envpool(env_id: str, num_envs: int) -> GymnasiumAdapter:
    import envpool

    env = envpool.make(
        env_id,
        env_type="gymnasium",
        num_envs=num_envs,
        batch_size=num_envs,
        num_threads=cpus.physical_cores(),
        seed=0,
    )
    return EnvPoolAdapter(env, num_envs)


def peer_builders(env_name: str, creator, num_envs: int) -> tuple[list[tuple[str, object]], list[str]]:
    """([(label, build)], [why a peer is left out]) for the env config.ini names."""
    builders, left_out = [], []
    env_id = gymnasium_id(env_name)
    if env_id is None and not isinstance(creator, type):
        left_out.append("gymnasium vector envs: the env is a Python creator, not a Gymnasium id")
    if env_id is not None:
        envpool = optional_module("envpool")
        if envpool is None:
            left_out.append("EnvPool: not installed (pip install envpool)")
        elif env_id in envpool.list_all_envs():
            builders.append(
                (f"EnvPool {env_id} T={cpus.physical_cores()}", functools.partial(_envpool, env_id, num_envs))
            )
        else:
            left_out.append(f"EnvPool: has no {env_id}")
        if num_envs <= MAX_SYNC_ENVS:
            builders.append(
                (f"gymnasium SyncVectorEnv {env_id}", functools.partial(_gymnasium_vector, "Sync", env_id, num_envs))
            )
        else:
            left_out.append(f"gymnasium SyncVectorEnv: num_envs {num_envs} > {MAX_SYNC_ENVS}")
        if num_envs <= MAX_ASYNC_ENVS:
            builders.append(
                (f"gymnasium AsyncVectorEnv {env_id}", functools.partial(_gymnasium_vector, "Async", env_id, num_envs))
            )
        else:
            left_out.append(f"gymnasium AsyncVectorEnv: num_envs {num_envs} > {MAX_ASYNC_ENVS} (one process per env)")
    return builders, left_out
