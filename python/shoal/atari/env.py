"""AtariEnv: an Atari 2600 game on ALE with the standard preprocessing, as a shoal native env class."""

from __future__ import annotations

import copy
import os
import stat
from pathlib import Path

from .. import _native
from ..errors import APIUsageError
from ..native import NativeEnv
from ..native.spec import configured, resolve_params
from ..seeding import Pcg32, env_seed
from .build import env_library, roms_dir
from .presets import PRESETS, preset_options

# Atari 2600 cartridges hold 2 KiB to 512 KiB (the largest bank-switching scheme Stella, so ALE, knows);
# the bounds leave a margin on either side.
ROM_BYTES = (1024, 1 << 20)

# Gymnasium's names for what shoal's Atari env does not do (yet): a clear error instead of a silent default.
UNSUPPORTED = {
    "grayscale_obs": (True, "RGB observations are not available: shoal's Atari observations are grayscale"),
    "grayscale_newaxis": (False, "observations are (stack_size, screen_size, screen_size), with no channel axis"),
    "scale_obs": (False, "observations are uint8; scale them in the policy"),
}


class AtariEnv(NativeEnv):
    """``num_envs`` envs of one Atari game, emulated by ALE (built from ale-py's sources) and
    preprocessed natively: ``frame_skip`` frames per step with the last two max-pooled, grayscale,
    an INTER_AREA resize to ``screen_size`` squared, a stack of ``stack_size`` frames (oldest first),
    ``noop_max`` random NOOP frames after a reset, ``terminal_on_life_loss``, ``reward_clipping``,
    sticky actions (``repeat_action_probability``, drawn from each env's own stream),
    ``full_action_space`` and ``max_num_frames_per_episode`` (a truncation).

    ``preset="gymnasium"`` (the default) is FrameStackObservation(AtariPreprocessing(
    gym.make("ALE/<Game>-v5", frameskip=1)), 4); ``"ale_vector"`` is ale-py's AtariVectorEnv and
    ``"envpool"`` EnvPool's Atari, each with its defaults and rules (``use_fire_reset`` included, see
    docs/atari.md); keywords with Gymnasium's names override the preset's values.
    Env i's ALE is seeded as ale-py's ``reset(seed=gymnasium_seed(seed, i))`` seeds it.
    """

    game: str = ""
    bound: dict = {}  # keyword arguments given to env_class
    library: Path | None = None

    def _bound_params(self, per_env: list[dict]) -> list[dict]:
        resolved: dict[int, dict] = {}
        for given in per_env:
            if id(given) not in resolved:
                resolved[id(given)] = self._native_kwargs(given)
        return [resolved[id(given)] for given in per_env]

    @classmethod
    def _native_kwargs(cls, kwargs: dict) -> dict:
        merged = {**cls.bound, **kwargs}
        preset = merged.pop("preset", "gymnasium")
        if "rules" in merged:
            raise APIUsageError(f"shoal.atari {cls.game!r}: rules are set by the preset (preset=...), not given")
        for name, (supported, why) in UNSUPPORTED.items():
            if name in merged and merged.pop(name) != supported:
                raise APIUsageError(f"shoal.atari {cls.game!r}: {name}={not supported!r} is not supported: {why}")
        params = {**preset_options(preset), **merged}
        params.setdefault("rom", str(roms_dir() / f"{cls.game}.bin"))  # or the caller's own ROM file
        check_rom(params["rom"], cls.game)
        return params

    @classmethod
    def describe(cls) -> dict:
        """The game's spaces (for the bound keyword arguments), parameters and their defaults."""
        if cls.spec is None:
            raise APIUsageError(f"{cls.__name__} has no game; use shoal.atari.env_class")
        if "_description" not in cls.__dict__:  # ALE loads the ROM to tell the action set: once per class
            info = cls.spec.describe()
            matrix, _, texts = resolve_params(info, [cls._native_kwargs({})])
            cls._description = configured(cls.spec, info, matrix, texts)[1]
        return copy.deepcopy(cls._description)


def check_rom(rom, game: str) -> None:
    """A ROM path must name a regular file of a cartridge's size. Checked with stat() before ALE opens it:
    /dev/zero would be read without end, a FIFO would block the open, a folder or a huge file is no ROM."""
    if not isinstance(rom, (str, os.PathLike)) or not str(rom):
        raise APIUsageError(f"shoal.atari {game!r}: rom must be the path of a ROM file, got {rom!r}")
    try:
        info = os.stat(rom)
    except OSError as error:
        raise APIUsageError(f"shoal.atari {game!r}: rom {rom}: {error.strerror or error}") from None
    if not stat.S_ISREG(info.st_mode):
        raise APIUsageError(f"shoal.atari {game!r}: rom {rom} is {_file_kind(info.st_mode)}, not a regular file")
    low, high = ROM_BYTES
    if not low <= info.st_size <= high:
        raise APIUsageError(
            f"shoal.atari {game!r}: rom {rom} has {info.st_size:,} bytes; an Atari 2600 ROM has {low:,} to {high:,}"
        )


def _file_kind(mode: int) -> str:
    kinds = [
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ]
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def gymnasium_seed(seed: int, index: int) -> int:
    """The seed that makes ale-py's ``reset(seed=...)`` start env ``index`` of a shoal Atari vector made
    with ``seed`` from the same ALE state: the env's first two 32-bit draws (high word first)."""
    stream = Pcg32(env_seed(seed, index))
    high = stream.next()
    return (high << 32) | stream.next()


_LIBRARY_SPEC = None


def game_class(game: str, **kwargs) -> type[AtariEnv]:
    """An AtariEnv class for ``game`` (a ROM name of ale-py: "pong", "space_invaders"); ``kwargs`` are
    bound as the class's defaults and checked here."""
    global _LIBRARY_SPEC
    if "preset" in kwargs and kwargs["preset"] not in PRESETS:
        raise APIUsageError(f"unknown Atari preset {kwargs['preset']!r}; presets: {', '.join(PRESETS)}")
    library = env_library()
    if _LIBRARY_SPEC is None:
        _LIBRARY_SPEC = _native.load_spec(str(library), "atari")
    name = "".join(part.capitalize() for part in game.split("_"))
    cls = type(
        name,
        (AtariEnv,),
        {
            "spec": _LIBRARY_SPEC,
            "game": game,
            "bound": dict(kwargs),
            "library": library,
            "__doc__": f"Atari {name} on ALE, preprocessed natively.\n\n" + (AtariEnv.__doc__ or ""),
            "__module__": "shoal.atari",
        },
    )
    cls.describe()
    return cls
