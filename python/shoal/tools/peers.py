"""Other libraries stepping the same env, timed beside shoal's rows by `shoal bench`: EnvPool (when
it has the env) and gymnasium's SyncVectorEnv and AsyncVectorEnv (for any Gymnasium env); for an Atari
game, ale-py's AtariVectorEnv and EnvPool's Atari, each with its own defaults, which are shoal's presets
``ale_vector`` and ``envpool`` (bench/bench_atari.py builds them here too)."""

from __future__ import annotations

import functools

from .. import cpus
from ..optional import optional_module

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


def envpool_atari_id(game: str) -> str:
    """EnvPool's id of an Atari game of ale-py's ROM name ("space_invaders" -> "SpaceInvaders-v5")."""
    return "".join(part.capitalize() for part in game.split("_")) + "-v5"


def ale_vector(game: str, num_envs: int, threads: int):
    """ale-py's AtariVectorEnv with its defaults (shoal's preset ale_vector)."""
    from ale_py.vector_env import AtariVectorEnv

    return AtariVectorEnv(game=game, num_envs=num_envs, num_threads=threads)


def envpool_atari(game: str, num_envs: int, threads: int):
    """EnvPool's Atari with its defaults (shoal's preset envpool)."""
    import envpool

    return envpool.make(
        envpool_atari_id(game), env_type="gymnasium", num_envs=num_envs, batch_size=num_envs, num_threads=threads
    )


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


#: the preset of shoal's Atari that is each Atari peer's defaults
ATARI_PEER_PRESETS = {"ale-py AtariVectorEnv": "ale_vector", "EnvPool": "envpool"}


def _atari_peers(game: str, num_envs: int, preset: str, shoal_row) -> tuple[list, list[str]]:
    """ale-py's vector and EnvPool on ``game``, each beside a shoal row on its preset (``shoal_row(preset)``:
    (label, build)) where the configured ``preset`` is another."""
    threads = cpus.physical_cores()
    available, left_out = [], []
    if optional_module("ale_py") is None:
        left_out.append("ale-py AtariVectorEnv: not installed (pip install ale-py)")
    else:
        available.append(
            ("ale-py AtariVectorEnv", functools.partial(ale_vector, game, num_envs, threads), GymnasiumAdapter)
        )
    envpool = optional_module("envpool")
    if envpool is None:
        left_out.append("EnvPool: not installed (pip install envpool)")
    elif envpool_atari_id(game) not in envpool.list_all_envs():
        left_out.append(f"EnvPool: has no {envpool_atari_id(game)}")
    else:
        available.append(("EnvPool", functools.partial(envpool_atari, game, num_envs, threads), EnvPoolAdapter))
    builders = []
    for name, make_peer, adapter in available:
        peer_preset = ATARI_PEER_PRESETS[name]
        if peer_preset != preset:
            builders.append(shoal_row(peer_preset))
        label = f"{name} {game} T={threads} (its defaults: preset {peer_preset})"
        builders.append((label, _adapted(make_peer, adapter, num_envs)))
    left_out.append("gymnasium vector envs: an Atari game's vector peers are ale-py's vector and EnvPool")
    return builders, left_out


def _adapted(make_peer, adapter, num_envs: int):
    return lambda: adapter(make_peer(), num_envs)


def peer_builders(
    env_name: str, creator, num_envs: int, preset: str = "gymnasium", shoal_row=None
) -> tuple[list[tuple[str, object]], list[str]]:
    """([(label, build)], [why a peer is left out]) for the env config.ini names; for an Atari game
    (``preset`` its configured one) the rows include shoal's on each peer's preset (``shoal_row``)."""
    prefix, _, game = env_name.partition(":")
    if prefix == "atari" and shoal_row is not None:
        return _atari_peers(getattr(creator, "game", game), num_envs, preset, shoal_row)
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
