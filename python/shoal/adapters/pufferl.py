"""The contract PufferLib 3.0's trainer (``pufferl``) relies on, as an executable check.

PufferLib's trainer takes a vector env as it is: no adapter. :func:`drive_like_pufferl` drives a shoal
vector env the way the trainer's rollout loop does and raises :class:`ContractViolation` at the first
thing the trainer would trip on:

* it builds its policy and storage from ``driver_env.single_observation_space`` /
  ``single_action_space`` and ``vecenv.num_agents`` (one storage row per agent);
* ``async_reset(seed)``, then ``recv()`` -> ``(obs, rewards, terminals, truncations, infos, env_ids,
  masks)`` with ``agents_per_batch`` rows, observations in the space's dtype, rewards float32,
  flags and masks bool;
* ``env_ids`` must be contiguous (the trainer turns them into ``slice(env_ids[0], env_ids[-1] + 1)``
  to address its storage), counts agent steps as ``masks.sum()``, treats ``terminals + truncations``
  as done;
* ``infos`` is a list of dicts (possibly nested) whose leaves are numbers or lists/arrays of numbers,
  which it averages into its logs;
* ``send(actions)`` with int32 actions for Discrete/MultiDiscrete and float32 (clipped to the
  bounds) for Box, one row per agent of the batch.
"""

from __future__ import annotations

import numbers
from collections import defaultdict
from collections.abc import Callable, Iterator

import numpy as np
from gymnasium import spaces


class ContractViolation(AssertionError):
    """The vector env broke the contract PufferLib's trainer relies on."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ContractViolation(message)


def unroll(info: dict, prefix: str = "") -> Iterator[tuple[str, object]]:
    """(key path, leaf) of a nested info dict, keys joined with '/'."""
    for key, value in info.items():
        path = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, dict):
            yield from unroll(value, path)
        else:
            yield path, value


def _is_number(value) -> bool:
    return isinstance(value, (numbers.Number, np.number, np.bool_))


def random_actions(action_space: spaces.Space, rows: int, rng: np.random.Generator) -> np.ndarray:
    """Valid actions for ``rows`` agents in the dtypes pufferl sends."""
    if isinstance(action_space, spaces.Discrete):
        return rng.integers(0, action_space.n, size=rows).astype(np.int32)
    if isinstance(action_space, spaces.MultiDiscrete):
        return rng.integers(0, action_space.nvec, size=(rows, *action_space.nvec.shape)).astype(np.int32)
    low = np.broadcast_to(action_space.low, action_space.shape)
    high = np.broadcast_to(action_space.high, action_space.shape)
    sample = rng.normal(size=(rows, *action_space.shape)).astype(np.float32)
    return np.clip(sample, low, high).astype(np.float32)


def drive_like_pufferl(
    vecenv, steps: int, seed: int = 0, policy: Callable[[np.ndarray, slice], np.ndarray] | None = None
) -> dict:
    """Runs ``steps`` recv/send rounds the way pufferl's rollout does; returns what it collected.

    ``policy(observations, env_slice)`` gives the actions (random valid actions by default).
    Returns ``{"agent_steps", "episodes_done", "stats", "last_obs"}``: agent steps counted from the
    masks, rows that ended an episode, the trainer's stats (key -> list of numbers) and the latest
    observation of every agent (its storage row).
    """
    driver = vecenv.driver_env
    obs_space, atn_space = driver.single_observation_space, driver.single_action_space
    _require(
        obs_space == vecenv.single_observation_space,
        f"driver_env.single_observation_space {obs_space} != vecenv's {vecenv.single_observation_space}",
    )
    _require(
        atn_space == vecenv.single_action_space,
        f"driver_env.single_action_space {atn_space} != vecenv's {vecenv.single_action_space}",
    )
    total_agents, batch = int(vecenv.num_agents), int(vecenv.agents_per_batch)
    _require(
        batch >= 1 and total_agents % batch == 0, f"agents_per_batch={batch} must divide num_agents={total_agents}"
    )
    storage = np.zeros((total_agents, *obs_space.shape), dtype=obs_space.dtype)
    seen = np.zeros(total_agents, dtype=bool)
    stats: dict[str, list] = defaultdict(list)
    rng = np.random.default_rng(seed)
    agent_steps = episodes_done = 0

    vecenv.async_reset(seed)
    for _ in range(steps):
        result = vecenv.recv()
        _require(isinstance(result, tuple) and len(result) == 7, "recv() must return a 7-tuple")
        obs, rewards, terminals, truncations, infos, env_ids, masks = result
        _require(
            obs.shape == (batch, *obs_space.shape) and obs.dtype == obs_space.dtype,
            f"observations {obs.shape} {obs.dtype}, expected {(batch, *obs_space.shape)} {obs_space.dtype}",
        )
        for name, array, dtype in (
            ("rewards", rewards, np.float32),
            ("terminals", terminals, np.bool_),
            ("truncations", truncations, np.bool_),
            ("masks", masks, np.bool_),
        ):
            _require(
                array.shape == (batch,) and array.dtype == dtype,
                f"{name} {array.shape} {array.dtype}, expected ({batch},) {np.dtype(dtype)}",
            )
        env_ids = np.asarray(env_ids)
        _require(
            env_ids.shape == (batch,) and env_ids.dtype.kind in "iu",
            f"env_ids must be {batch} integers, got {env_ids.shape} {env_ids.dtype}",
        )
        start = int(env_ids[0])
        _require(
            np.array_equal(env_ids, np.arange(start, start + batch)) and 0 <= start and start + batch <= total_agents,
            f"env_ids must be contiguous in [0, {total_agents}), got {env_ids[:4]}...{env_ids[-2:]}",
        )
        env_slice = slice(start, start + batch)
        storage[env_slice] = obs
        seen[env_slice] = True
        agent_steps += int(masks.sum())
        episodes_done += int((terminals + truncations).sum())
        _require(isinstance(infos, list), f"infos must be a list of dicts, got {type(infos).__name__}")
        for info in infos:
            _require(isinstance(info, dict), f"infos must hold dicts, got {type(info).__name__}")
            for key, value in unroll(info):
                if isinstance(value, np.ndarray):
                    value = value.tolist()
                if isinstance(value, (list, tuple)):
                    _require(all(_is_number(v) for v in value), f"info {key!r} holds non-numbers: {value!r}")
                    stats[key].extend(value)
                else:
                    _require(_is_number(value), f"info {key!r} is {type(value).__name__}, not a number")
                    stats[key].append(value)
        if policy is None:
            actions = random_actions(atn_space, batch, rng)
        else:
            actions = np.asarray(policy(obs, env_slice))
        vecenv.send(actions)
    _require(
        steps < total_agents // batch or bool(seen.all()),
        f"recv() never returned agents {np.flatnonzero(~seen)[:8].tolist()}",
    )
    return {"agent_steps": agent_steps, "episodes_done": episodes_done, "stats": dict(stats), "last_obs": storage}


__all__ = ["drive_like_pufferl", "ContractViolation", "random_actions", "unroll"]
