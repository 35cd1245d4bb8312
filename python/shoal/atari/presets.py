"""Whose Atari: the preprocessing defaults of the libraries shoal is compared with, by name."""

from __future__ import annotations

from ..errors import APIUsageError

#: FrameStackObservation(AtariPreprocessing(gym.make("ALE/<Game>-v5", frameskip=1)), 4) with Gymnasium's
#: defaults: ALE v5's sticky actions (0.25) and 108,000-frame limit, AtariPreprocessing's noop_max=30,
#: frame_skip=4, 84x84 grayscale, no life-loss terminal, unclipped rewards; the minimal action set.
GYMNASIUM = {
    "frame_skip": 4,
    "noop_max": 30,
    "screen_size": 84,
    "stack_size": 4,
    "terminal_on_life_loss": False,
    "reward_clipping": False,
    "full_action_space": False,
    "max_num_frames_per_episode": 108_000,
    "repeat_action_probability": 0.25,
}

PRESETS = {"gymnasium": GYMNASIUM}


def preset_options(name) -> dict:
    """The options of preset ``name``."""
    if name not in PRESETS:
        raise APIUsageError(f"unknown Atari preset {name!r}; presets: {', '.join(PRESETS)}")
    return dict(PRESETS[name])
