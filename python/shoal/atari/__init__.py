"""Atari 2600 games on ALE as shoal native envs, with the standard preprocessing in native code.

    Pong = shoal.atari.env_class("pong")
    vecenv = shoal.vector.make(Pong, backend="Multithreading", num_envs=16)

ALE is built at first use from the installed ale-py's source distribution and cached; the ROMs are
ale-py's (``pip install ".[atari]"`` from shoal's source folder). See AtariEnv for the options and presets.
"""

from __future__ import annotations

from ..errors import APIUsageError
from .build import AtariError, roms_dir
from .env import AtariEnv, game_class, gymnasium_seed
from .presets import PRESETS

# ROMs ale-py ships without a single-player game (ale-py registers no env for them either).
MULTI_PLAYER_ONLY = frozenset({"combat", "joust", "maze_craze", "warlords"})


def games() -> list[str]:
    """The single-player games whose ROM the installed ale-py ships."""
    return sorted(path.stem for path in roms_dir().glob("*.bin") if path.stem not in MULTI_PLAYER_ONLY)


def env_class(game: str, **kwargs) -> type[AtariEnv]:
    """The native env class of Atari ``game`` ("pong", "Pong", "SpaceInvaders", "ALE/Pong-v5");
    ``kwargs`` (``preset`` and Gymnasium's option names) are bound as the class's defaults."""
    name = _rom_name(game)
    available = games()
    if name in MULTI_PLAYER_ONLY:
        raise APIUsageError(f"Atari {name!r} is a multi-player game (ALE has no single-player version of it)")
    if name not in available:
        raise APIUsageError(f"shoal.atari has no game {game!r}; available: {', '.join(available)}")
    return game_class(name, **kwargs)


def _rom_name(game: str) -> str:
    if not isinstance(game, str) or not game:
        raise APIUsageError(f"an Atari game is a name such as 'pong', got {game!r}")
    text = game.split("/")[-1].split("-v")[0]
    if text.islower() or "_" in text:
        return text.lower()
    return "".join(("_" + c.lower()) if c.isupper() and i else c.lower() for i, c in enumerate(text))


__all__ = ["PRESETS", "AtariEnv", "AtariError", "env_class", "games", "gymnasium_seed"]
