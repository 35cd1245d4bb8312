"""atari:<game>: Atari 2600 games on ALE (this family's entry in shoal.families)."""

from __future__ import annotations

from . import AtariError, games
from . import env_class as game_class
from .env import UNSUPPORTED

#: num_envs per usable CPU where the user sets none: a quick reset (each env loads its ROM) on any machine
ENVS_PER_CPU = 8
#: keywords whose values are paths to resolve against the config's folder
PATH_KEYS = {"rom": lambda text: True}


def default_num_envs(cpus: int) -> int:
    return ENVS_PER_CPU * cpus


def names(options: dict | None = None) -> list[str]:
    return games()


def env_class(name: str, options: dict | None = None, **kwargs):
    return game_class(name, **kwargs)


def parameters(name: str, options: dict | None = None) -> list[str]:
    """``preset``, the native options a preset does not fix (its ``rules`` are set by the preset alone,
    and refused when given), Gymnasium's names of the observation's form (taken with the one value
    shoal's Atari has) and ``max_episode_steps``."""
    native = [p["name"] for p in game_class(name).describe()["params"] if p["name"] != "rules"]
    return ["preset", *native, *UNSUPPORTED, "max_episode_steps"]


def summary() -> str:
    try:
        return f"Atari games ([env] name = atari:<game>; needs pip install '.[atari]'): {', '.join(games())}"
    except AtariError as error:
        return f"Atari games ([env] name = atari:<game>): {error}"
