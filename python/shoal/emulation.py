"""Emulation: Gymnasium and PettingZoo envs as shoal PufferEnvs that write flat rows.

:func:`wrap` turns a ``gymnasium.Env`` into a :class:`GymnasiumPufferEnv` (one agent row) and a
PettingZoo ``ParallelEnv`` into a :class:`PettingZooPufferEnv` (one row per possible agent). Both
write into caller-owned :class:`shoal.buffers.Buffers`, so every backend hands the same arrays back.

Observations
    Every observation becomes one contiguous row. A plain ``Box`` observation space is kept as it is
    (same shape, dtype and bounds) and written with one numpy assignment. Any other standard space
    (Discrete, MultiDiscrete, MultiBinary, and Dict/Tuple of them, nested) is flattened by an
    :class:`ObservationLayout`, kept in ``env.emulated``. The dtype rule:

    * each leaf is stored in its own space's dtype (``space.dtype``): a Box in its dtype, a
      Discrete in int64 (what gymnasium samples), a MultiDiscrete in its dtype (int64 by default),
      a MultiBinary in int8;
    * if every leaf has the same dtype, the row is a 1-D Box of that dtype whose bounds are the
      leaves' bounds, leaf after leaf (Dict keys in the Dict space's order);
    * otherwise the row is raw bytes: a uint8 Box in which each leaf lives at a fixed byte offset,
      aligned to its itemsize (padding bytes stay zero).

    No value is ever converted, so :func:`nativize` (or ``layout.unflatten``) gives back the original
    structure bit for bit.

Actions
    Discrete, MultiDiscrete and Box action spaces only (the rows are int32 or float32, see
    :func:`shoal.spaces.action_dtype`). The env receives a numpy integer for Discrete (as gymnasium's
    own vector envs pass), a fresh int64 (the space's dtype) array for MultiDiscrete and a fresh
    array of the Box's dtype for Box.

Autoreset (the same on every backend): same-step.
    When an episode ends (terminated or truncated), the observation of that last step is written to
    ``final_observations[row]``, the env is reset inside the same step with ``seed=None`` (so it
    continues its own RNG), and the returned observation row is the first one of the next episode.
    ``terminals``/``truncations`` are the env's own flags; time limits come out as truncations
    because gymnasium's TimeLimit reports them so (for an env that is only ``gymnasium.make``'s
    default wrappers, shoal steps the base env and applies the same limit itself: see
    :mod:`shoal.default_wrappers`). On episode end the step's infos list gets
    ``{"episode_return": float, "episode_length": int, **final_info}`` (the info of the last step);
    any other non-empty info dict (including the info of the autoreset) is passed through as is.
    ``infos`` is always a list.

Seeding
    ``reset(seed)`` resets the env with ``seed=shoal.seeding.env_seed(seed, 0)``; ``seed=None``
    means ``self.seed``. A vector gives its env ``i`` the vector seed ``offset_seed(seed, i)``, so env
    ``i`` is reset with ``env_seed(seed, i)`` on every backend.

PettingZoo
    Agent slot ``i`` is ``possible_agents[i]``; all agents must share one observation space and one
    action space. Rows of agents that are absent from the env's returned dicts (dead, or not spawned
    yet) are padding: mask False, zero observation, zero reward, flags False. An agent's terminal or
    truncation flag is True only on the step the env reports it (its final observation is written
    then). When every agent is done (or ``env.agents`` is empty) the env is reset in the same step.
    The episode info adds ``"agent_returns"`` ({agent: return}); ``episode_return`` is their sum.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import gymnasium
import numpy as np
from gymnasium import spaces

from .buffers import Buffers
from .default_wrappers import StepFunction, default_stack
from .errors import APIUsageError
from .optional import optional_module
from .pufferenv import PufferEnv
from .seeding import check_seed, env_seed
from .spaces import check_action_space

LEAF_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


# ---------------------------------------------------------------------------------------------------
# Observation layout
# ---------------------------------------------------------------------------------------------------


class Leaf(NamedTuple):
    """One array of a structured observation and where it lives in the flat row."""

    path: tuple  # keys (Dict) and indices (Tuple) from the root to this leaf
    space: spaces.Space
    dtype: np.dtype  # stored dtype (the space's own dtype)
    shape: tuple  # shape of one observation of this leaf
    offset: int  # byte offset in the row
    nbytes: int


def _leaf_bounds(space: spaces.Space) -> tuple[np.ndarray, np.ndarray]:
    """Flattened low/high of a leaf space (inclusive)."""
    if isinstance(space, spaces.Box):
        return space.low.ravel(), space.high.ravel()
    if isinstance(space, spaces.Discrete):
        return np.array([space.start]), np.array([space.start + space.n - 1])
    if isinstance(space, spaces.MultiDiscrete):
        return space.start.ravel(), (space.start + space.nvec - 1).ravel()
    size = int(np.prod(space.shape))  # MultiBinary
    return np.zeros(size, np.int64), np.ones(size, np.int64)


def _collect_leaves(space: spaces.Space, path: tuple, out: list) -> Any:
    """Appends (path, space) of every leaf to ``out``; returns the tree used to rebuild the structure."""
    if isinstance(space, spaces.Dict):
        return ("dict", [(key, _collect_leaves(sub, (*path, key), out)) for key, sub in space.spaces.items()])
    if isinstance(space, spaces.Tuple):
        return ("tuple", [_collect_leaves(sub, (*path, i), out) for i, sub in enumerate(space.spaces)])
    if isinstance(space, LEAF_SPACES):
        out.append((path, space))
        return ("leaf", len(out) - 1)
    where = "".join(f"[{k!r}]" for k in path) or "the observation space"
    raise APIUsageError(
        f"cannot emulate {type(space).__name__} at {where}: observation spaces must be "
        "Box, Discrete, MultiDiscrete, MultiBinary, or Dict/Tuple of them"
    )


class ObservationLayout:
    """How one observation of ``space`` maps onto a flat row (``env.emulated``); see the module doc.

    ``flat_space`` is the Box of one row, ``dtype`` its dtype, ``leaves`` where each array lives.
    ``is_box``: the original space is a Box kept as is (the fast path). ``is_bytes``: leaves of
    different dtypes share a uint8 row.
    """

    def __init__(self, space: spaces.Space):
        if not isinstance(space, spaces.Space):
            raise APIUsageError(f"observation space must be a gymnasium Space, got {type(space).__name__}")
        self.space = space
        self.is_box = isinstance(space, spaces.Box)
        found: list = []
        self._tree = _collect_leaves(space, (), found)
        dtypes = [np.dtype(leaf_space.dtype) for _, leaf_space in found]
        self.is_bytes = len(set(dtypes)) > 1
        offset, leaves = 0, []
        for (path, leaf_space), dtype in zip(found, dtypes):
            shape = () if isinstance(leaf_space, spaces.Discrete) else tuple(leaf_space.shape)
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            offset = -(-offset // dtype.itemsize) * dtype.itemsize  # align to the itemsize
            leaves.append(Leaf(path, leaf_space, dtype, shape, offset, nbytes))
            offset += nbytes
        if self.is_bytes:
            align = max(dtype.itemsize for dtype in dtypes)
            offset = -(-offset // align) * align
        self.leaves = tuple(leaves)
        self.row_bytes = offset
        if offset == 0:
            raise APIUsageError(f"observation space {space} holds no values; cannot emulate it")
        if self.is_box:
            self.dtype = np.dtype(space.dtype)
            self.flat_space = space
        elif self.is_bytes:
            self.dtype = np.dtype(np.uint8)
            self.flat_space = spaces.Box(0, 255, (offset,), dtype=np.uint8)
        else:
            self.dtype = dtypes[0]
            bounds = [_leaf_bounds(leaf.space) for leaf in leaves]
            low = np.concatenate([lo for lo, _ in bounds]).astype(self.dtype)
            high = np.concatenate([hi for _, hi in bounds]).astype(self.dtype)
            self.flat_space = spaces.Box(low, high, dtype=self.dtype)

    @property
    def shape(self) -> tuple:
        """Shape of one flat row."""
        return tuple(self.flat_space.shape)

    def writer(self, row: np.ndarray) -> Callable[[Any], None]:
        """A function that writes one observation into ``row`` (a C-contiguous row of the buffer).

        Every leaf gets a typed view into ``row`` once, here; writing is one assignment per leaf.
        """
        if row.shape != self.shape or row.dtype != self.dtype or not row.flags.c_contiguous:
            raise APIUsageError(
                f"observation row has shape {row.shape} and dtype {row.dtype}, expected a "
                f"C-contiguous row of shape {self.shape} and dtype {self.dtype}"
            )
        if self.is_box:

            def write_box(observation) -> None:
                row[...] = observation

            return write_box
        raw = row.view(np.uint8)
        targets = [(leaf.path, _leaf_view(raw, leaf, ())) for leaf in self.leaves]
        if len(targets) == 1:
            path, target = targets[0]

            def write_leaf(observation) -> None:
                for key in path:
                    observation = observation[key]
                target[...] = observation

            return write_leaf

        def write(observation) -> None:
            for path, target in targets:
                value = observation
                for key in path:
                    value = value[key]
                target[...] = value

        return write

    def flatten(self, observation, out: np.ndarray | None = None) -> np.ndarray:
        """One observation as a flat row (a new array, or written into ``out``)."""
        if out is None:
            out = np.zeros(self.shape, self.dtype)
        self.writer(out)(observation)
        return out

    def check(self, observation) -> None:
        """Raises APIUsageError if ``observation`` does not have the structure and shapes of the space."""
        for leaf in self.leaves:
            value = observation
            for depth, key in enumerate(leaf.path):
                try:
                    value = value[key]
                except (KeyError, IndexError, TypeError):
                    where = "".join(f"[{k!r}]" for k in leaf.path[: depth + 1])
                    raise APIUsageError(f"observation has no {where}, but the space {self.space} has") from None
            if np.shape(value) != leaf.shape:
                where = "".join(f"[{k!r}]" for k in leaf.path) or "observation"
                raise APIUsageError(
                    f"{where} has shape {np.shape(value)}, but its space {leaf.space} has shape {leaf.shape}"
                )

    def unflatten(self, flat_batch) -> Any:
        """The original structure of a batch of flat rows (any leading dimensions), bit for bit.

        Arrays are views of ``flat_batch`` where its memory allows (copy them to keep them past a step).
        """
        batch = np.asarray(flat_batch)
        if self.is_box:
            ndim = len(self.space.shape)
            if batch.dtype != self.dtype or batch.shape[batch.ndim - ndim :] != self.space.shape or batch.ndim < ndim:
                raise APIUsageError(
                    f"expected observations of shape (..., *{self.space.shape}) and dtype "
                    f"{self.dtype}, got shape {batch.shape} and dtype {batch.dtype}"
                )
            return batch
        if batch.ndim < 1 or batch.shape[-1] != self.shape[0] or batch.dtype != self.dtype:
            raise APIUsageError(
                f"expected flat observations of shape (..., {self.shape[0]}) and dtype "
                f"{self.dtype}, got shape {batch.shape} and dtype {batch.dtype}"
            )
        if batch.strides[-1] != batch.itemsize:
            batch = np.ascontiguousarray(batch)
        lead = batch.shape[:-1]
        raw = batch.view(np.uint8)
        arrays = [_leaf_view(raw, leaf, lead) for leaf in self.leaves]
        return _build(self._tree, arrays)

    def __eq__(self, other) -> bool:
        return isinstance(other, ObservationLayout) and self.space == other.space

    def __hash__(self) -> int:
        return hash(repr(self.space))

    def __repr__(self) -> str:
        kind = "box" if self.is_box else "bytes" if self.is_bytes else "flat"
        return f"ObservationLayout({self.space}, {kind} row {self.shape} {self.dtype})"


def _leaf_view(raw: np.ndarray, leaf: Leaf, lead: tuple) -> np.ndarray:
    """Typed view of one leaf in rows of bytes ``raw`` (shape ``(*lead, row_bytes)``)."""
    return raw[..., leaf.offset : leaf.offset + leaf.nbytes].view(leaf.dtype).reshape(lead + leaf.shape)


def _build(tree, arrays: list) -> Any:
    kind, content = tree
    if kind == "leaf":
        return arrays[content]
    if kind == "dict":
        return {key: _build(sub, arrays) for key, sub in content}
    return tuple(_build(sub, arrays) for sub in content)


def nativize(flat_batch, layout: ObservationLayout) -> Any:
    """The original observations (dict/tuple/arrays, leading batch dimension) of flat rows."""
    if not isinstance(layout, ObservationLayout):
        raise APIUsageError(f"nativize needs an ObservationLayout (env.emulated), got {type(layout).__name__}")
    return layout.unflatten(flat_batch)


# ---------------------------------------------------------------------------------------------------
# Actions
# ---------------------------------------------------------------------------------------------------


def _array_action(space) -> Callable[[np.ndarray], np.ndarray]:
    """Converter of one action row to a fresh array of the space's dtype (MultiDiscrete, Box)."""
    dtype = np.dtype(space.dtype)

    def convert(row) -> np.ndarray:
        return np.array(row, dtype=dtype)

    return convert


# ---------------------------------------------------------------------------------------------------
# Wrappers
# ---------------------------------------------------------------------------------------------------


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


class _EmulatedEnv(PufferEnv):
    """A PufferEnv over a wrapped ``self.env``: rendering and closing go to that env (once)."""

    env: Any
    _closed = False

    def render(self):
        return self.env.render()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.env.close()
        super().close()

    def _clear_step_outputs(self) -> None:
        """After a reset: no final observation, reward or episode end yet."""
        self.final_observations[...] = 0
        self.rewards[...] = 0
        self.terminals[...] = False
        self.truncations[...] = False


class GymnasiumPufferEnv(_EmulatedEnv):
    """A gymnasium.Env as a one-row PufferEnv (flattened observations, same-step autoreset)."""

    def __init__(self, env: gymnasium.Env, buf: Buffers | None = None, seed: int = 0):
        self.env = env
        owner = type(env).__name__
        check_action_space(env.action_space, owner)
        self.emulated = ObservationLayout(env.observation_space)
        self.single_observation_space = self.emulated.flat_space
        self.single_action_space = env.action_space
        self.num_agents = 1
        super().__init__(buf, check_seed(seed))
        self._obs_row = self.observations[0]
        # The fast path writes a Box observation inline; everything else goes through the layout.
        self._write = None if self.emulated.is_box else self.emulated.writer(self._obs_row)
        self._write_final = self.emulated.writer(self.final_observations[0])
        self._discrete = isinstance(env.action_space, spaces.Discrete)
        self._convert_action = None if self._discrete else _array_action(env.action_space)
        self._stack = default_stack(env)
        self._time_limit = self._stack.time_limit if self._stack else None
        self._step: StepFunction = self._step_until_checked if self._stack else env.step
        self._episode_return = 0.0
        self._episode_length = 0
        self._closed = False

    def reset(self, seed: int | None = None):
        seed = self.seed if seed is None else check_seed(seed)
        observation, info = self.env.reset(seed=env_seed(seed, 0))
        self.emulated.check(observation)
        self._write_observation(observation)
        self._clear_step_outputs()
        self.masks[...] = True
        self._episode_return = 0.0
        self._episode_length = 0
        return self.observations, ([info] if info else [])

    def _write_observation(self, observation) -> None:
        if self._write is None:
            self._obs_row[...] = observation
        else:
            self._write(observation)

    def _step_until_checked(self, action):
        """Steps through the whole wrapper stack until its checker is done, then the base env."""
        result = self.env.step(action)
        if self._stack.checker_done():
            self._step = self._stack.base.step
        return result

    def transition(self, action):
        """One step with same-step autoreset: ``(observation, reward, terminated, truncated, infos)``.

        ``action`` is this env's action row (a numpy integer for Discrete). Writes only the final
        observation when an episode ends; :meth:`step` (or a batched caller) writes the rest.
        """
        if not self._discrete:
            action = self._convert_action(action)
        observation, reward, terminated, truncated, info = self._step(action)
        self._episode_return += reward
        length = self._episode_length = self._episode_length + 1
        if length == self._time_limit:
            truncated = True
        if terminated or truncated:
            return self._end_episode(observation, reward, terminated, truncated, info)
        return observation, reward, terminated, truncated, ([info] if info else [])

    def _end_episode(self, observation, reward, terminated, truncated, info: dict):
        self._write_final(observation)
        infos = [{"episode_return": float(self._episode_return), "episode_length": self._episode_length, **info}]
        self._episode_return = 0.0
        self._episode_length = 0
        observation, reset_info = self.env.reset()
        if reset_info:
            infos.append(reset_info)
        return observation, reward, terminated, truncated, infos

    def step(self, actions):
        observation, reward, terminated, truncated, infos = self.transition(actions[0])
        self._write_observation(observation)
        self.rewards[0] = reward
        self.terminals[0] = terminated
        self.truncations[0] = truncated
        return self.observations, self.rewards, self.terminals, self.truncations, infos


class BatchStepError(Exception):
    """Env ``index`` of a :func:`step_box_rows` batch raised the exception that is this one's cause."""

    def __init__(self, index: int):
        super().__init__(f"env {index} of the batch raised")
        self.index = index


def batchable(envs: list) -> bool:
    """True when :func:`step_box_rows` can step ``envs``: one-row gymnasium envs, Box observations."""
    return bool(envs) and all(type(env) is GymnasiumPufferEnv and env.emulated.is_box for env in envs)


def step_box_rows(envs: list[GymnasiumPufferEnv], actions: np.ndarray, buf: Buffers) -> list[dict]:
    """Steps ``envs`` (env ``i`` owns row ``i`` of ``buf``) and writes each output column once.

    Same arrays as stepping every env with :meth:`GymnasiumPufferEnv.step`, but one numpy write per
    column per batch instead of four per env, which is most of the emulation's per-step overhead.
    Returns the batch's infos; an env that raises is named by a :class:`BatchStepError`.
    """
    observations, rewards, terminals, truncations, infos = [], [], [], [], []
    # Bound once: this loop runs once per env step.
    add_observation, add_reward = observations.append, rewards.append
    add_terminal, add_truncation = terminals.append, truncations.append
    for index, (env, action) in enumerate(zip(envs, actions)):
        try:
            observation, reward, terminated, truncated, env_infos = env.transition(action)
        except Exception as exc:
            raise BatchStepError(index) from exc
        add_observation(observation)
        add_reward(reward)
        add_terminal(terminated)
        add_truncation(truncated)
        if env_infos:
            infos.extend(env_infos)
    buf.observations[...] = observations
    buf.rewards[...] = rewards
    buf.terminals[...] = terminals
    buf.truncations[...] = truncations
    return infos


class PettingZooPufferEnv(_EmulatedEnv):
    """A PettingZoo ParallelEnv as a PufferEnv with one row per possible agent (see the module doc)."""

    def __init__(self, env, buf: Buffers | None = None, seed: int = 0):
        self.env = env
        owner = type(env).__name__
        agents = list(env.possible_agents)
        if not agents:
            raise APIUsageError(f"{owner}.possible_agents is empty")
        if len(set(agents)) != len(agents):
            raise APIUsageError(f"{owner}.possible_agents has duplicates: {agents}")
        observation_space = env.observation_space(agents[0])
        action_space = env.action_space(agents[0])
        for agent in agents[1:]:
            if env.observation_space(agent) != observation_space:
                raise APIUsageError(
                    f"{owner}: agent {agent!r} has observation space "
                    f"{env.observation_space(agent)} but {agents[0]!r} has "
                    f"{observation_space}; all agents must share one"
                )
            if env.action_space(agent) != action_space:
                raise APIUsageError(
                    f"{owner}: agent {agent!r} has action space {env.action_space(agent)} but "
                    f"{agents[0]!r} has {action_space}; all agents must share one"
                )
        check_action_space(action_space, owner)
        self.possible_agents = agents
        self.emulated = ObservationLayout(observation_space)
        self.single_observation_space = self.emulated.flat_space
        self.single_action_space = action_space
        self.num_agents = len(agents)
        super().__init__(buf, check_seed(seed))
        layout = self.emulated
        self._slots = list(enumerate(agents))
        self._writers = [layout.writer(self.observations[i]) for i in range(self.num_agents)]
        self._slot_of = {agent: i for i, agent in self._slots}
        self._discrete = isinstance(action_space, spaces.Discrete)
        self._convert_action = None if self._discrete else _array_action(action_space)
        self._agent_returns = np.zeros(self.num_agents)
        self._episode_length = 0
        self._closed = False

    def _write_observations(self, observations: dict) -> None:
        """Writes present agents' rows; absent agents get a zero row and mask False."""
        for i, agent in self._slots:
            observation = observations.get(agent)
            if observation is None:
                self.observations[i] = 0
                self.masks[i] = False
            else:
                self._writers[i](observation)
                self.masks[i] = True

    def reset(self, seed: int | None = None):
        seed = self.seed if seed is None else check_seed(seed)
        observations, infos = self.env.reset(seed=env_seed(seed, 0))
        self._check_agents(observations)
        for observation in observations.values():
            self.emulated.check(observation)
        self._write_observations(observations)
        self._clear_step_outputs()
        self._agent_returns[...] = 0
        self._episode_length = 0
        return self.observations, [info for info in infos.values() if info]

    def _check_agents(self, observations: dict) -> None:
        unknown = [agent for agent in observations if agent not in self._slot_of]
        if unknown:
            raise APIUsageError(
                f"{type(self.env).__name__} returned agents {unknown} that are not in "
                f"possible_agents {self.possible_agents}"
            )

    def step(self, actions):
        env = self.env
        slot_of = self._slot_of
        if self._discrete:
            joint = {agent: int(actions[slot_of[agent]]) for agent in env.agents}
        else:
            convert = self._convert_action
            joint = {agent: convert(actions[slot_of[agent]]) for agent in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(joint)
        self._write_observations(observations)
        step_infos = []
        ended = False
        for i, agent in self._slots:
            reward = rewards.get(agent, 0.0)
            terminated = bool(terminations.get(agent, False))
            truncated = bool(truncations.get(agent, False))
            self.rewards[i] = reward
            self.terminals[i] = terminated
            self.truncations[i] = truncated
            self._agent_returns[i] += reward
            if terminated or truncated:
                self.final_observations[i] = self.observations[i]
                ended = True
            info = infos.get(agent)
            if info:
                step_infos.append(info)
        self._episode_length += 1
        live = env.agents
        if not live or (
            ended and all(terminations.get(agent, False) or truncations.get(agent, False) for agent in live)
        ):
            step_infos.append(
                {
                    "episode_return": float(self._agent_returns.sum()),
                    "episode_length": self._episode_length,
                    "agent_returns": {agent: float(self._agent_returns[i]) for i, agent in self._slots},
                }
            )
            self._agent_returns[...] = 0
            self._episode_length = 0
            observations, reset_infos = env.reset()
            self._write_observations(observations)
            step_infos.extend(info for info in reset_infos.values() if info)
        return self.observations, self.rewards, self.terminals, self.truncations, step_infos


__all__ = ["wrap", "nativize", "ObservationLayout", "Leaf", "GymnasiumPufferEnv", "PettingZooPufferEnv"]
