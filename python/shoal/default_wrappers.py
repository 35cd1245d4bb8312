"""Stepping past the wrappers ``gymnasium.make`` adds by default.

``gymnasium.make("CartPole-v1")`` returns ``TimeLimit(OrderEnforcing(PassiveEnvChecker(env)))``.
None of the three changes a transition: PassiveEnvChecker inspects the first reset and the first
two steps, OrderEnforcing refuses a step before a reset (shoal's call-order checks already do), and
TimeLimit counts steps and reports ``truncated`` once ``elapsed >= max_episode_steps``. Together
they are three Python calls per step, as many as a light env's own step makes. So when an env
is exactly such a stack, shoal steps its base env directly once the checker has seen what it
inspects, applies the same time limit itself, and from then on resets the base env too when an
episode ends (the three wrappers' resets only clear their own counters and flags). Any other
wrapper in the stack (or a subclass of one of these three) and the env is stepped as given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker, TimeLimit

StepFunction = Callable[[Any], tuple]


class DefaultStack:
    """What stepping a default-wrapped env directly needs: its base env, time limit and checker."""

    def __init__(self, base: gymnasium.Env, time_limit: int | None, checker: PassiveEnvChecker | None):
        self.base = base
        self.time_limit = time_limit
        self.checker = checker

    def checker_done(self) -> bool:
        """True once the passive checker has inspected everything it looks at."""
        checker = self.checker
        return checker is None or (checker.checked_step and getattr(checker, "checked_data_reuse", True))


def default_stack(env: gymnasium.Env) -> DefaultStack | None:
    """The base env under ``env`` when every wrapper around it is one of make's default three."""
    time_limit = checker = None
    layer = env
    while isinstance(layer, gymnasium.Wrapper):
        kind = type(layer)
        if kind is TimeLimit and time_limit is None:
            time_limit = getattr(layer, "_max_episode_steps", None)
            if not isinstance(time_limit, int):
                return None
        elif kind is PassiveEnvChecker and checker is None:
            checker = layer
        elif kind is not OrderEnforcing:
            return None
        layer = layer.env
    if layer is env:
        return None
    return DefaultStack(layer, time_limit, checker)
