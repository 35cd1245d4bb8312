"""The one loop that builds, resets and steps a slice of envs: Serial runs it over every env, each
Multiprocessing worker and Ray actor over its own slice, so the three behave the same by construction.

Env code that raises becomes a :class:`SliceFailed` naming the env (its index in make()'s list);
Serial turns it into an EnvError, workers into a :class:`Failure` for the caller.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass

from gymnasium import spaces

from ... import emulation
from ...buffers import Buffers
from ...errors import APIUsageError, EnvError
from ...pufferenv import PufferEnv
from ...seeding import first_env_indices, offset_seed
from ..closing import close_each
from ..wire.messages import RESET_HINT, Failure
from .slices import EnvSlice

# What env code may raise and still be reported as the env's failure (KeyboardInterrupt is the user's).
ENV_FAILURES = (Exception, SystemExit)


class SliceFailed(Exception):
    """Env code of a slice raised ``error``; ``env_index`` names the env (None: not a single env's)."""

    def __init__(self, env_index: int | None, error: BaseException):
        super().__init__(f"env {env_index} raised {type(error).__name__}: {error}")
        self.env_index = env_index
        self.error = error

    def env_error(self) -> EnvError:
        where = f"env {self.env_index}" if self.env_index is not None else "a native env"
        return EnvError(f"{where} raised {type(self.error).__name__}: {self.error}{RESET_HINT}")

    def failure(self) -> Failure:
        return Failure.of(self.error, self.env_index)


@dataclass(frozen=True)
class EnvShape:
    """Spaces and agent count that every env of a vector shares (read off its driver env)."""

    observation_space: spaces.Box
    action_space: spaces.Space
    num_agents: int

    @classmethod
    def of(cls, env: PufferEnv) -> EnvShape:
        return cls(env.single_observation_space, env.single_action_space, env.num_agents)

    def check(self, env: PufferEnv, index: int) -> None:
        for name, expected in (
            ("single_observation_space", self.observation_space),
            ("single_action_space", self.action_space),
            ("num_agents", self.num_agents),
        ):
            if getattr(env, name) != expected:
                raise APIUsageError(
                    f"env {index} has {name}={getattr(env, name)}, but env 0 has "
                    f"{expected}; every env of a vector must match"
                )


def probe_driver(creator, args, kwargs) -> tuple[PufferEnv, bool]:
    """Builds the driver env (with its own small buffers); tells whether creators must be emulated."""
    raw = creator(*args, **kwargs)
    if isinstance(raw, PufferEnv):
        return raw, False
    return emulation.wrap(raw, buf=None), True


class SliceRunner:
    """Envs of one slice, each over its rows of ``buf``: reset with per-env seeds, stepped with the
    actions already in ``buf.actions``."""

    def __init__(self, envs: list[PufferEnv], buf: Buffers, first_env: int, per_env: bool):
        self.envs = envs
        self.buf = buf
        self.first_env = first_env
        self._per_env = per_env  # False: one native object holds the slice and names failing envs itself
        self.internal_envs = sum(env.num_envs for env in envs)
        starts = first_env_indices([env.num_agents for env in envs])
        self._steps = [(env, buf.actions[start : start + env.num_agents]) for env, start in zip(envs, starts)]
        self._resets = list(zip(envs, first_env_indices([env.num_envs for env in envs])))
        self._batched_step = None
        if emulation.batchable(envs):
            self._batched_step = functools.partial(emulation.step_rows, envs, buf.actions, buf)

    def reset(self, seed: int) -> list:
        """Resets every env, env ``i`` with its share of ``seed``; returns their infos."""
        infos: list = []
        for position, (env, first) in enumerate(self._resets):
            try:
                env_infos = env.reset(seed=offset_seed(seed, first))[1]
            except ENV_FAILURES as exc:
                raise SliceFailed(self._env_index(position), exc) from exc
            if env_infos:
                infos.extend(env_infos)
        return infos

    def step(self) -> list:
        """Steps every env with its rows of ``buf.actions``; returns their infos."""
        if self._batched_step is not None:
            try:
                return self._batched_step()
            except emulation.BatchStepError as exc:
                raise SliceFailed(self._env_index(exc.index), exc.__cause__) from exc.__cause__
            except ENV_FAILURES as exc:
                raise SliceFailed(None, exc) from exc
        infos: list = []
        for position, (env, actions) in enumerate(self._steps):
            try:
                env_infos = env.step(actions)[4]
            except ENV_FAILURES as exc:
                raise SliceFailed(self._env_index(position), exc) from exc
            if env_infos:
                infos.extend(env_infos)
        return infos

    def serve(self, reset_seed: int | None) -> tuple[list, Failure | None]:
        """A worker's command: reset with ``reset_seed``, or step when it is None. Returns the infos
        and, instead of raising, the failure to report."""
        try:
            return (self.step() if reset_seed is None else self.reset(reset_seed)), None
        except SliceFailed as failed:
            return [], failed.failure()

    def close(self) -> list[str]:
        """Closes every env, even if some fail; returns the failures ("env i: Error: message")."""
        if self._per_env:
            named = [(f"env {self.first_env + i}", env) for i, env in enumerate(self.envs)]
        else:
            named = [(f"native envs from {self.first_env}", env) for env in self.envs]
        return close_each(named)

    def _env_index(self, position: int) -> int | None:
        return self.first_env + position if self._per_env else None


def takes_buf(creator) -> bool:
    """Whether ``creator`` accepts a ``buf`` keyword (PufferLib hands every creator one).

    A creator that does not, such as ``lambda: GymnasiumPufferEnv(env=gymnasium.make(name))``, is
    called without it and its env moved onto the vector's rows (see :func:`shoal.emulation.onto_rows`).
    """
    try:
        parameters = inspect.signature(creator).parameters.values()
    except (TypeError, ValueError):  # no signature to read: hand it buf, as PufferLib does
        return True
    return any(p.kind is p.VAR_KEYWORD or (p.name == "buf" and p.kind is not p.POSITIONAL_ONLY) for p in parameters)


def python_slice(envs: EnvSlice, buf: Buffers, emulate: bool, shape: EnvShape) -> SliceRunner:
    """One env object per creator, env ``i`` over its ``shape.num_agents`` rows of ``buf``.

    ``emulate``: the creators return Gymnasium/PettingZoo envs (wrapped here), not PufferEnvs.
    Otherwise each env must end up writing into its rows: a creator that takes ``buf`` gets them; an
    emulation wrapper made over buffers of its own is rebuilt over them; any other env is an error.
    """
    rows = shape.num_agents
    built: list[PufferEnv] = []
    try:
        for i, (creator, args, kwargs) in enumerate(zip(envs.creators, envs.args, envs.kwargs)):
            index = envs.first_env + i
            env_rows = buf.rows(i * rows, (i + 1) * rows)
            try:
                if emulate:
                    env = emulation.wrap(creator(*args, **kwargs), buf=env_rows)
                else:
                    made = creator(*args, buf=env_rows, **kwargs) if takes_buf(creator) else creator(*args, **kwargs)
                    env = emulation.onto_rows(made, env_rows)
            except APIUsageError as error:
                raise APIUsageError(
                    f"env {index} does not fit the vector built from env 0 (every env must "
                    f"have the same spaces and agent count): {error}"
                ) from None
            if env is None:
                made.close()
                raise APIUsageError(
                    f"env {index}: the creator returned a {type(made).__name__} that writes into buffers of "
                    "its own, not the rows the vector passed as buf=; hand buf on to PufferEnv.__init__"
                )
            shape.check(env, index)
            built.append(env)
    except BaseException:
        for env in built:
            env.close()
        raise
    return SliceRunner(built, buf, envs.first_env, per_env=True)


def native_slice(envs: EnvSlice, buf: Buffers, num_threads: int) -> SliceRunner:
    """One native vector for the whole slice, stepped by ``num_threads`` pool threads."""
    env = envs.creators[0](num_envs=len(envs), buf=buf, num_threads=num_threads, env_params=list(envs.kwargs))
    return SliceRunner([env], buf, envs.first_env, per_env=False)
