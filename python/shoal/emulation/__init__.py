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

Already wrapped
    Both wrappers take PufferLib's arguments (``env=``, or ``env_creator=`` with ``env_args`` and
    ``env_kwargs``; then ``buf`` and ``seed``), so a PufferLib-style creator may return one. When it
    takes no ``buf`` (or drops it) the wrapper arrives over buffers of its own; a vector then
    rebuilds it over its rows around the same inner env (:func:`onto_rows`), and it steps exactly
    as the plain env would, on the same batched path. Any other PufferEnv must write into the rows
    it is handed (APIUsageError otherwise).

PettingZoo
    Agent slot ``i`` is ``possible_agents[i]``; all agents must share one observation space and one
    action space. Rows of agents that are absent from the env's returned dicts (dead, or not spawned
    yet) are padding: mask False, zero observation, zero reward, flags False. An agent's terminal or
    truncation flag is True only on the step the env reports it (its final observation is written
    then). When every agent is done (or ``env.agents`` is empty) the env is reset in the same step.
    The episode info adds ``"agent_returns"`` ({agent: return}); ``episode_return`` is their sum.
"""

from __future__ import annotations

from .gymnasium_env import BatchStepError, GymnasiumPufferEnv, batchable, step_rows
from .layout import LEAF_SPACES, Leaf, ObservationLayout, nativize
from .pettingzoo_env import PettingZooPufferEnv
from .wrap import onto_rows, wrap

__all__ = [
    "BatchStepError",
    "GymnasiumPufferEnv",
    "LEAF_SPACES",
    "Leaf",
    "ObservationLayout",
    "PettingZooPufferEnv",
    "batchable",
    "nativize",
    "onto_rows",
    "step_rows",
    "wrap",
]
