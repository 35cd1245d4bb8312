"""PufferEnv: one env object that holds many agents and writes them into caller-owned buffers."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from .buffers import Buffers
from .call_order import ANY_OPEN, READY_TO_RECV, READY_TO_SEND, CallOrder
from .errors import APIUsageError
from .spaces import ActionChecker, joint_space
from .validation import is_integer


class PufferEnv:
    """Base class of envs that step many agents at once, in place.

    A subclass sets ``single_observation_space`` (a Box), ``single_action_space`` (Discrete,
    MultiDiscrete or Box) and ``num_agents`` before calling ``super().__init__(buf)``, then
    implements ``reset(seed=None) -> (observations, infos)`` and
    ``step(actions) -> (observations, rewards, terminals, truncations, infos)`` by writing into
    ``self.observations``, ``self.rewards``, ... (``infos`` is a list of dicts). Episodes that end
    must be reset inside the same step, with the ended observation written to
    ``self.final_observations``.

    ``buf`` is a :class:`shoal.buffers.Buffers` of ``num_agents`` rows when a vectorizer owns the
    memory, or None to allocate it here. ``num_envs`` is how many independent envs the object holds
    (it decides how seeds are spread, see :mod:`shoal.seeding`).
    """

    num_envs = 1
    emulated = None  # layout of the original spaces, for envs that flatten them (see shoal.emulation)

    def __init__(self, buf: Buffers | None = None, seed: int = 0):
        for name in ("single_observation_space", "single_action_space", "num_agents"):
            if not hasattr(self, name):
                raise APIUsageError(f"{type(self).__name__} must set self.{name} before PufferEnv.__init__")
        if not isinstance(self.single_observation_space, spaces.Box):
            raise APIUsageError(
                f"{type(self).__name__}.single_observation_space must be a Box, "
                f"got {type(self.single_observation_space).__name__}"
            )
        if not is_integer(self.num_agents) or self.num_agents < 1:
            raise APIUsageError(f"{type(self).__name__}.num_agents must be a positive int, got {self.num_agents!r}")
        self._check_actions = ActionChecker(self.single_action_space, self.num_agents)
        self.observation_space = joint_space(self.single_observation_space, self.num_agents)
        self.action_space = joint_space(self.single_action_space, self.num_agents)
        if buf is None:
            buf = Buffers.allocate(
                self.single_observation_space, self.single_action_space, self.num_agents, envs=self.num_envs
            )
        elif not isinstance(buf, Buffers):
            raise APIUsageError(f"buf must be a shoal.buffers.Buffers (or None), got {type(buf).__name__}")
        else:
            buf.check(self.single_observation_space, self.single_action_space, self.num_agents)
        self.buf = buf
        self.observations = buf.observations
        self.final_observations = buf.final_observations
        self.actions = buf.actions
        self.rewards = buf.rewards
        self.terminals = buf.terminals
        self.truncations = buf.truncations
        self.masks = buf.masks
        self.agent_ids = np.arange(self.num_agents)
        self.constant_agent_ids = True  # recv() hands out these ids (or fixed slices of them)
        self.seed = seed
        self.infos: list = []
        self._order = CallOrder(type(self).__name__)

    @property
    def box_actions(self) -> str:
        """What Box actions outside the bounds do: "pass" (the default), "clip" or "strict" (make()'s option)."""
        return self._check_actions.box_actions

    def set_box_actions(self, box_actions: str) -> None:
        """Makes ``send``/``step`` pass ("pass"), clip ("clip") or refuse ("strict") Box actions outside
        the bounds (make()'s ``box_actions``); an env whose ``step`` checks actions itself uses
        ``self._check_actions``."""
        self._check_actions = ActionChecker(self.single_action_space, self.num_agents, box_actions)

    # The vector API over this single object (what make(..., backend=PufferEnv) returns).
    @property
    def agents_per_batch(self) -> int:
        return self.num_agents

    @property
    def driver_env(self) -> PufferEnv:
        return self

    @property
    def local_envs(self) -> list:
        """The env objects in this process that hold the rows: this one."""
        return [self]

    @property
    def closed(self) -> bool:
        return self._order.closed

    def reset(self, seed: int | None = None):
        raise NotImplementedError

    def step(self, actions):
        raise NotImplementedError

    def async_reset(self, seed: int | None = None) -> None:
        order = self._order
        order.enter("reset", ANY_OPEN)
        try:
            _, self.infos = self.reset(seed)
        finally:
            order.leave(READY_TO_RECV)

    def send(self, actions) -> None:
        actions = self._check_actions(actions)
        order = self._order
        # In the call while the env steps: another thread's send or recv is refused, not run on
        # rows being written.
        order.enter("send", READY_TO_SEND)
        try:
            _, _, _, _, self.infos = self.step(actions)
        finally:
            order.leave(READY_TO_RECV)

    def recv(self):
        self._order.recv()
        return (
            self.observations,
            self.rewards,
            self.terminals,
            self.truncations,
            self.infos,
            self.agent_ids,
            self.masks,
        )

    def close(self) -> None:
        self._order.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
