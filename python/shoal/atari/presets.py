"""Whose Atari: the preprocessing defaults and rules of the libraries shoal is compared with, by name.

Where the three differ beyond their defaults (the order of a reset's FIRE and NOOPs, the stack's padding,
the frame that ends an episode, how the episode limit counts, what follows a life loss), the native env
follows the preset's ``rules``; docs/atari.md sets them side by side."""

from __future__ import annotations

from ..errors import APIUsageError

#: FrameStackObservation(AtariPreprocessing(gym.make("ALE/<Game>-v5", frameskip=1)), 4) with Gymnasium's
#: defaults: ALE v5's sticky actions (0.25) and 108,000-frame limit, AtariPreprocessing's noop_max=30,
#: frame_skip=4, 84x84 grayscale, no life-loss terminal, unclipped rewards; the minimal action set.
GYMNASIUM = {
    "rules": 0,
    "frame_skip": 4,
    "noop_max": 30,
    "screen_size": 84,
    "stack_size": 4,
    "terminal_on_life_loss": False,
    "reward_clipping": False,
    "full_action_space": False,
    "max_num_frames_per_episode": 108_000,
    "repeat_action_probability": 0.25,
    "use_fire_reset": False,
}

#: ale-py's AtariVectorEnv(game, num_envs) with its defaults: FIRE pressed on reset, 0..29 NOOPs, rewards
#: clipped, no sticky actions, 108,000 frames after the reset, the stack padded with zeros.
ALE_VECTOR = {
    **GYMNASIUM,
    "rules": 1,
    "reward_clipping": True,
    "repeat_action_probability": 0.0,
    "use_fire_reset": True,
}

#: EnvPool's make("<Game>-v5") with its defaults: 1..30 NOOPs then FIRE, unclipped rewards, no sticky
#: actions, 27,000 steps (108,000 frames) per game; with terminal_on_life_loss (EnvPool's episodic_life)
#: the reset after a lost life goes on with the game.
ENVPOOL = {
    **GYMNASIUM,
    "rules": 2,
    "repeat_action_probability": 0.0,
    "use_fire_reset": True,
}

PRESETS = {"gymnasium": GYMNASIUM, "ale_vector": ALE_VECTOR, "envpool": ENVPOOL}


def preset_options(name) -> dict:
    """The options of preset ``name``."""
    if name not in PRESETS:
        raise APIUsageError(f"unknown Atari preset {name!r}; presets: {', '.join(PRESETS)}")
    return dict(PRESETS[name])
