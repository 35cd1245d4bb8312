"""A ``gymnasium.vector.VectorEnv`` view of any synchronous shoal vector env.

``GymnasiumVectorEnv(vecenv)`` presents every row of ``vecenv`` (one per agent slot, so
``num_envs == vecenv.agents_per_batch``) as one sub-environment of a Gymnasium vector env:

* spaces: ``single_observation_space`` is the env's own space (the structured space of an emulated
  Dict/Tuple/Discrete env, restored with ``shoal.emulation.nativize``), ``single_action_space`` the
  vector's; ``observation_space``/``action_space`` are built by ``gymnasium.vector.utils.batch_space``.
* ``metadata["autoreset_mode"]`` and the attribute ``autoreset_mode`` hold the
  ``gymnasium.vector.AutoresetMode`` in force (Gymnasium's wrappers read the first, TorchRL the second).
* copies at the boundary (``copy=True``, the default): every returned array is new, so the trainer
  may keep or mutate it; with ``copy=False`` the arrays are the vector's buffers (SAME_STEP) or the
  view's own (NEXT_STEP), overwritten by the next step.

Autoreset modes
    ``"same_step"`` (shoal's own behaviour, the default): an episode that ends is reset inside the
    step; the returned observation starts the next episode and ``infos`` carries ``final_obs`` (an
    object array holding the last observation of each row that ended, ``None`` elsewhere) and
    ``final_info``, with the masks ``_final_obs``/``_final_info`` -- the layout of Gymnasium's
    ``SyncVectorEnv`` in SAME_STEP mode. Use this mode with TorchRL and with Gymnasium's wrappers.

    ``"next_step"``: the step in which a row's episode ends returns that episode's last observation
    with its reward and flags; the row's next step returns reward 0 and terminated/truncated False.
    shoal steps every row together, so that step cannot leave the env untouched the way Gymnasium's
    NEXT_STEP does: the env has already been reset and is stepped once more with the action given
    (the action NEXT_STEP trainers ignore), and the observation returned is the one after that step.
    The consequences: the new episode starts one env step after reset, that hidden step's reward
    and flags are dropped (if it ended an episode, the returned observation starts yet another),
    and the env's time limit counts it. Up to and including the first episode end of every row the
    arrays are identical to Gymnasium's NEXT_STEP ``SyncVectorEnv``; prefer ``"same_step"``.

Infos
    A dict of arrays with ``_key`` masks, as Gymnasium's vector envs return. shoal's own infos
    (episode stats: one dict per finished episode for Python envs, an aggregate now and then for
    native envs) do not say which row they came from; they are kept, as shoal returns them, in
    ``view.shoal_infos``. Per-row episode statistics come from Gymnasium's
    ``gymnasium.wrappers.vector.RecordEpisodeStatistics``, which works over this view in both modes.

Seeding
    ``reset(seed=s)`` resets the vector with shoal's seed ``s``: row ``i``'s env gets
    ``shoal.seeding.env_seed(s, env of row i)``, for every backend (see :func:`derived_seeds`).
    ``reset(seed=None)`` uses the seed the vector was made with on the first reset; later seedless
    resets draw a fresh shoal seed from a generator seeded by the previous one, so they start new
    episodes (as Gymnasium's do) and stay reproducible. A list of seeds is accepted only
    when it is exactly ``derived_seeds(s)`` for some ``s`` (or all ``None``): shoal seeds envs from one
    integer, never one by one. ``options`` are not supported (shoal resets every row at once).

Bundled native envs are registered for ``gymnasium.make_vec`` when this module is imported:
``shoal/CartPole-v1``, ``shoal/Squared-v0`` and ``shoal/Deep-v0`` return a view over a
``Multithreading`` vector (``gymnasium.make_vec("shoal/CartPole-v1", num_envs=8,
vectorization_mode="vector_entry_point", seed=0, max_num_threads=2)``; other keywords are the env's
parameters).
"""

from __future__ import annotations

import functools
import numbers
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..errors import APIUsageError
from ..seeding import GOLDEN_GAMMA, MASK64, check_seed
from ._common import Observations, ResetSeeds, check_vecenv, row_seeds

_MODES = {"same_step": AutoresetMode.SAME_STEP, "next_step": AutoresetMode.NEXT_STEP}


def _autoreset_mode(mode) -> AutoresetMode:
    if isinstance(mode, AutoresetMode):
        if mode in _MODES.values():
            return mode
    elif isinstance(mode, str) and mode.lower() in _MODES:
        return _MODES[mode.lower()]
    raise APIUsageError(
        f"autoreset_mode must be one of {sorted(_MODES)} (or the AutoresetMode members "
        f"SAME_STEP/NEXT_STEP), got {mode!r}"
    )


def _unmix64(z: int) -> int:
    """Inverse of shoal.seeding.mix64."""
    z = z ^ (z >> 31) ^ (z >> 62)
    z = (z * pow(0x94D049BB133111EB, -1, 1 << 64)) & MASK64
    z = z ^ (z >> 27) ^ (z >> 54)
    z = (z * pow(0xBF58476D1CE4E5B9, -1, 1 << 64)) & MASK64
    return z ^ (z >> 30) ^ (z >> 60)


class GymnasiumVectorEnv(VectorEnv):
    """A Gymnasium ``VectorEnv`` over a synchronous shoal vector env (see the module doc)."""

    def __init__(self, vecenv, autoreset_mode="same_step", copy: bool = True):
        check_vecenv(vecenv, "GymnasiumVectorEnv")
        self.autoreset_mode = _autoreset_mode(autoreset_mode)
        self.metadata = {"autoreset_mode": self.autoreset_mode, "render_modes": []}
        self.copy = bool(copy)
        self.num_envs = int(vecenv.num_agents)
        self._observations = Observations(vecenv, copy=self.copy)
        self._seed_source = ResetSeeds(vecenv)
        self.single_observation_space = self._observations.space
        self.single_action_space = vecenv.single_action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        #: shoal's infos (a list of dicts) of the last reset or step
        self.shoal_infos: list = []
        # NEXT_STEP: rows whose episode ended on the previous step
        self._pending = np.zeros(self.num_envs, dtype=bool)
        self._rewards = np.zeros(self.num_envs, dtype=np.float32)
        self._terminations = np.zeros(self.num_envs, dtype=bool)
        self._truncations = np.zeros(self.num_envs, dtype=bool)
        # Last: the view closes the vector from here on. Gymnasium < 1.3 closes a VectorEnv from __del__,
        # also one whose __init__ raised, and a vector this refused stays the caller's.
        self.vecenv = vecenv

    def derived_seeds(self, seed: int) -> list[int]:
        """The seed each row's env gets from ``reset(seed=seed)`` (``env_seed(seed, env index)``)."""
        return row_seeds(self.vecenv, seed)

    def _vector_seed(self, seed) -> int | None:
        if seed is None or isinstance(seed, numbers.Integral):
            return None if seed is None else check_seed(seed)
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise APIUsageError(f"a list of seeds must have num_envs={self.num_envs} entries, got {len(seeds)}")
        if all(s is None for s in seeds):
            return None
        if all(isinstance(s, numbers.Integral) and 0 <= s <= MASK64 for s in seeds):
            base = (_unmix64(int(seeds[0])) - GOLDEN_GAMMA) & MASK64
            if [int(s) for s in seeds] == self.derived_seeds(base):
                return base
        raise APIUsageError(
            "shoal seeds every env from one integer (env i gets shoal.seeding.env_seed(seed, i)); "
            "pass reset(seed=int) instead of a list, or exactly view.derived_seeds(seed)"
        )

    def reset(self, *, seed: int | list | None = None, options: dict[str, Any] | None = None):
        """Resets every row; returns (observations, {})."""
        if options:
            raise APIUsageError(
                f"GymnasiumVectorEnv.reset takes no options (shoal resets every row at once), got {sorted(options)}"
            )
        vector_seed = self._seed_source.next(self._vector_seed(seed))
        if vector_seed is not None:
            super().reset(seed=vector_seed)  # seeds self.np_random like other vector envs
        observations, self.shoal_infos = self.vecenv.reset(vector_seed)
        self._pending[:] = False
        return self._observations.batch(observations), {}

    def step(self, actions):
        """Steps every row; returns (observations, rewards, terminations, truncations, infos)."""
        observations, rewards, terminals, truncations, self.shoal_infos = self.vecenv.step(np.asarray(actions))
        if self.autoreset_mode is AutoresetMode.SAME_STEP:
            return self._same_step(observations, rewards, terminals, truncations)
        return self._next_step(observations, rewards, terminals, truncations)

    def _same_step(self, observations, rewards, terminals, truncations):
        infos: dict[str, Any] = {}
        done = terminals | truncations
        if done.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            finals = self.vecenv.final_observations
            for row in np.flatnonzero(done):
                final_obs[row] = self._observations.row(finals, row)
            infos = {"final_obs": final_obs, "_final_obs": done.copy(), "final_info": {}, "_final_info": done.copy()}
        if self.copy:
            rewards, terminals, truncations = rewards.copy(), terminals.copy(), truncations.copy()
        return self._observations.batch(observations), rewards, terminals, truncations, infos

    def _next_step(self, observations, rewards, terminals, truncations):
        pending = self._pending
        ended = (terminals | truncations) & ~pending
        if ended.any():
            observations = observations.copy()
            observations[ended] = self.vecenv.final_observations[ended]
        out_rewards = self._rewards if not self.copy else np.empty_like(self._rewards)
        out_terminals = self._terminations if not self.copy else np.empty_like(self._terminations)
        out_truncations = self._truncations if not self.copy else np.empty_like(self._truncations)
        np.copyto(out_rewards, rewards)
        np.copyto(out_terminals, terminals)
        np.copyto(out_truncations, truncations)
        out_rewards[pending] = 0.0
        out_terminals[pending] = False
        out_truncations[pending] = False
        self._pending = ended
        return self._observations.batch(observations), out_rewards, out_terminals, out_truncations, {}

    def close_extras(self, **kwargs) -> None:
        if hasattr(self, "vecenv"):
            self.vecenv.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        name = self.spec.id if self.spec is not None else type(self.vecenv).__name__
        return f"GymnasiumVectorEnv({name}, num_envs={self.num_envs}, {self.autoreset_mode.value})"


def make_vector(
    env,
    num_envs: int = 1,
    seed: int = 0,
    backend: str = "Multithreading",
    autoreset_mode="same_step",
    copy: bool = True,
    max_num_threads: int | None = None,
    render_mode: str | None = None,
    box_actions: str = "pass",
    **env_kwargs,
) -> GymnasiumVectorEnv:
    """A view over ``shoal.vector.make(env, backend=backend, num_envs=num_envs, seed=seed, ...)``.

    ``env`` is a bundled env name (``"cartpole"``) or a native env class; ``env_kwargs`` are its
    parameters. The ``gymnasium.make_vec`` entry point of the registered ``shoal/...`` ids.
    ``box_actions``: Box actions outside the bounds go to the env as given ("pass", as Gymnasium's
    own vectors pass them), are clipped ("clip") or refused ("strict").
    """
    from .. import vector
    from ..envs import BUNDLED

    if render_mode is not None:
        raise APIUsageError(f"shoal's native envs do not render; got render_mode={render_mode!r}")
    if isinstance(env, str):
        if env not in BUNDLED:
            raise APIUsageError(f"unknown bundled env {env!r}; valid: {sorted(BUNDLED)}")
        env = BUNDLED[env]
    options = {"box_actions": box_actions}
    if max_num_threads is not None:
        options["max_num_threads"] = max_num_threads
    vecenv = vector.make(env, env_kwargs=env_kwargs, backend=backend, num_envs=num_envs, seed=seed, **options)
    try:
        return GymnasiumVectorEnv(vecenv, autoreset_mode=autoreset_mode, copy=copy)
    except BaseException:
        vecenv.close()
        raise


#: gymnasium ids registered by register_envs(), with the bundled env each one runs
REGISTERED = {"shoal/CartPole-v1": "cartpole", "shoal/Squared-v0": "squared", "shoal/Deep-v0": "deep"}


def make_mujoco_vector(task_id: str, *args, **kwargs) -> GymnasiumVectorEnv:
    """make_vector of shoal.mujoco's task ``task_id`` (compiled at first use)."""
    from ..mujoco import env_class

    return make_vector(env_class(task_id), *args, **kwargs)


def register_envs() -> None:
    """Registers the bundled single-agent native envs, and shoal.mujoco's tasks as ``shoal/<Gymnasium id>``,
    with ``gymnasium.make_vec`` (idempotent)."""
    from ..mujoco import available

    for env_id, name in REGISTERED.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, vector_entry_point=functools.partial(make_vector, name))
    for task_id in available():
        if f"shoal/{task_id}" not in gymnasium.registry:
            gymnasium.register(id=f"shoal/{task_id}", vector_entry_point=functools.partial(make_mujoco_vector, task_id))


register_envs()

__all__ = ["GymnasiumVectorEnv", "make_vector", "register_envs", "REGISTERED"]
