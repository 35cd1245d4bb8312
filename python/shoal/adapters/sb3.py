"""A stable-baselines3 ``VecEnv`` over any synchronous shoal vector env.

``SB3VecEnv(vecenv)`` shows each row of ``vecenv`` (one per agent slot) as one SB3 env:

* spaces are single-env spaces (the original structured space for emulated Dict/Tuple envs);
* ``reset()`` returns the observations only; ``seed(s)`` sets the shoal seed used by the next
  ``reset()`` and returns the seed of each row's env (``shoal.seeding.env_seed(s, env)``). Without
  it, the first ``reset()`` uses the seed the vector was made with and later ones a fresh seed
  drawn from a generator seeded by the previous one (new episodes, reproducible);
* ``step_wait()`` returns ``(obs, rewards, dones, infos)`` with ``dones = terminals | truncations``
  and, for every row that is done, ``infos[i]["terminal_observation"]`` (the episode's last
  observation, from shoal's ``final_observations``), ``infos[i]["TimeLimit.truncated"]``
  (``truncated and not terminated``, as SB3's own vec envs set it) and ``infos[i]["episode"] =
  {"r", "l", "t"}`` (return, length, seconds since the adapter was made) -- what SB3's ``Monitor``/
  ``VecMonitor`` would add, so SB3's logger shows ``ep_rew_mean`` without another wrapper (wrapping in
  ``VecMonitor`` still works and recomputes the same numbers);
* every returned array is a fresh copy: SB3 keeps ``_last_obs`` across a step and its buffers
  must never see shoal's buffers change;
* ``get_attr``/``set_attr``/``env_method``/``env_is_wrapped`` reach the object holding each row's
  env: each gymnasium env under Serial, the one native env object under Multithreading/PufferEnv
  (one call per distinct object, its result given to each of its rows). Under Multiprocessing the
  envs live in worker processes: ``get_attr`` reads the local driver env, the others raise.

shoal's own infos (per-episode or aggregated stats, not tied to a row) are kept in ``shoal_infos``.
Multi-agent vectors work row by row; rows whose ``masks`` are False are padding SB3 still acts on.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from ..errors import APIUsageError
from ..seeding import check_seed
from ._common import Observations, ResetSeeds, RowEnvs, check_vecenv, row_seeds


class SB3VecEnv(VecEnv):
    """stable-baselines3 VecEnv over a synchronous shoal vector env (see the module doc)."""

    def __init__(self, vecenv):
        check_vecenv(vecenv, "SB3VecEnv")
        self.vecenv = vecenv
        self._observations = Observations(vecenv, copy=True)
        self._rows = RowEnvs(vecenv)
        self._seed: int | None = None
        self._seed_source = ResetSeeds(vecenv)
        self._actions: np.ndarray | None = None
        self.shoal_infos: list = []
        num_rows = int(vecenv.num_agents)
        self._episode_returns = np.zeros(num_rows, dtype=np.float64)
        self._episode_lengths = np.zeros(num_rows, dtype=np.int64)
        self._t_start = time.time()
        super().__init__(num_rows, self._observations.space, vecenv.single_action_space)

    # -- stepping ---------------------------------------------------------------------------------

    def reset(self):
        observations, self.shoal_infos = self.vecenv.reset(self._seed_source.next(self._seed))
        self._seed = None
        self._reset_seeds()
        self._reset_options()
        self._episode_returns[:] = 0.0
        self._episode_lengths[:] = 0
        return self._observations.batch(observations)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self):
        if self._actions is None:
            raise APIUsageError("SB3VecEnv.step_wait() called without step_async(actions)")
        actions, self._actions = self._actions, None
        observations, rewards, terminals, truncations, self.shoal_infos = self.vecenv.step(actions)
        dones = terminals | truncations
        rewards = rewards.copy()
        self._episode_returns += rewards
        self._episode_lengths += 1
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            finals = self.vecenv.final_observations
            elapsed = round(time.time() - self._t_start, 6)
            for row in np.flatnonzero(dones):
                infos[row] = {
                    "terminal_observation": self._observations.row(finals, row),
                    "TimeLimit.truncated": bool(truncations[row] and not terminals[row]),
                    "episode": {
                        "r": float(self._episode_returns[row]),
                        "l": int(self._episode_lengths[row]),
                        "t": elapsed,
                    },
                }
            self._episode_returns[dones] = 0.0
            self._episode_lengths[dones] = 0
        return self._observations.batch(observations), rewards, dones.copy(), infos

    def seed(self, seed: int | None = None) -> list[int | None]:
        """Sets the shoal seed of the next reset(); returns the seed of each row's env."""
        if seed is None:
            seed = int(np.random.randint(0, np.iinfo(np.uint32).max, dtype=np.uint32))
        self._seed = check_seed(seed)
        return list(row_seeds(self.vecenv, self._seed))

    def set_options(self, options=None) -> None:
        if options:
            raise APIUsageError("SB3VecEnv: shoal envs take no reset options")

    def close(self) -> None:
        self.vecenv.close()

    # -- env access -------------------------------------------------------------------------------

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        values = []
        for obj in self._rows.of_rows(indices):
            if attr_name == "render_mode" and not hasattr(obj, attr_name):
                values.append(None)  # shoal's native envs do not render
            else:
                values.append(getattr(obj, attr_name))
        return values

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        self._rows.check_local(f"set {attr_name!r}")
        for _, obj in self._rows.distinct(indices):
            setattr(obj, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        self._rows.check_local(f"call {method_name!r}")
        results: dict[int, Any] = {}
        for rows, obj in self._rows.distinct(indices):
            result = getattr(obj, method_name)(*method_args, **method_kwargs)
            results.update({row: result for row in rows})
        return [results[row] for row in self._rows.indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        from stable_baselines3.common.env_util import is_wrapped

        return [self._rows.local and _wrapped(obj, wrapper_class, is_wrapped) for obj in self._rows.of_rows(indices)]

    def __repr__(self) -> str:
        return f"SB3VecEnv({type(self.vecenv).__name__}, num_envs={self.num_envs})"


def _wrapped(obj, wrapper_class, is_wrapped) -> bool:
    import gymnasium

    return isinstance(obj, gymnasium.Env) and is_wrapped(obj, wrapper_class)


__all__ = ["SB3VecEnv"]
