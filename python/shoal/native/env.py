"""NativeEnv: native (C) envs of one type in one PufferEnv, over shoal._native.Vector.

This is the only module that touches ``_native.Vector``; every other layer goes through NativeEnv.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import _native
from ..buffers import Buffers, check_estimate, native_vector_estimate, out_of_memory
from ..call_order import IN_CALL, READY_TO_RECV, READY_TO_SEND
from ..errors import APIUsageError
from ..pufferenv import PufferEnv
from ..seeding import check_seed
from ..spaces import ActionChecker
from ..validation import check_bool, check_choice, check_integer
from .spec import action_space, configured, observation_space, resolve_params

SCHEDULES = ("static", "dynamic")
# How long one help_step() steps envs: long beside the cost of a call from Python, short beside a
# policy's latency (a caller whose results arrive meanwhile is late by at most this, plus a chunk).
HELP_BUDGET_NS = 20_000
MAX_THREADS = 1024


def check_threads(num_threads) -> int:
    return check_integer(num_threads, "max_num_threads", 0, MAX_THREADS)


def check_schedule(schedule) -> str:
    return check_choice(schedule, "schedule", SCHEDULES)


def is_native_env(creator) -> bool:
    """True when ``creator`` is a NativeEnv class (a bundled env, or one from load_env)."""
    return isinstance(creator, type) and issubclass(creator, NativeEnv)


def native_env_class(env_creators, env_args, env_kwargs, backend: str) -> type[NativeEnv]:
    """The one NativeEnv class every creator names; its keyword parameters may not size the vector."""
    creator = env_creators[0]
    if not is_native_env(creator):
        raise APIUsageError(
            f"backend {backend} steps native (C) envs such as shoal.envs.CartPole or a class from "
            f"shoal.native.load_env(); {getattr(creator, '__name__', creator)!r} is a Python env creator. "
            "Use backend='Serial' or backend='Multiprocessing' for Python envs."
        )
    if any(c is not creator for c in env_creators):
        raise APIUsageError(f"backend {backend} needs one native env type for every env")
    if any(args for args in env_args):
        raise APIUsageError("native envs take keyword parameters only (env_kwargs); got positional env_args")
    for i, kwargs in enumerate(env_kwargs):
        if "num_envs" in kwargs or "num_threads" in kwargs:
            raise APIUsageError(
                f"env_kwargs[{i}] sets num_envs/num_threads; pass them to make() as num_envs and max_num_threads"
            )
    return creator


class EpisodeLog:
    """Episode stats of envs [begin, end): one aggregated dict about every ``end - begin`` episodes,
    passed through ``report`` (an env's own form of its stats) if given."""

    def __init__(self, vec: _native.Vector, begin: int, end: int, report=None):
        self._vec = vec
        self.begin, self.end = begin, end
        self._report = report
        self.episodes = 0

    def add(self, ended: int) -> list[dict]:
        """Counts ``ended`` more episodes; returns the aggregate once enough have ended, else []."""
        self.episodes += ended
        if self.episodes < self.end - self.begin:
            return []
        self.episodes = 0
        return [self.report(self.collect())]

    def collect(self) -> dict:
        """The envs' episode stats summed since the last collection (and cleared), in the raw form."""
        return self._vec.collect_log(self.begin, self.end)

    def report(self, log: dict) -> dict:
        """``log`` in the env's own form of its stats."""
        return self._report(log) if self._report else log

    def clear(self) -> None:
        self.episodes = 0
        self.collect()


class NativeEnv(PufferEnv):
    """``num_envs`` native envs of one type in one object, stepped by ``num_threads`` threads.

    Subclasses set the class attribute ``spec`` (a shoal._native.EnvSpec). Keyword parameters are
    the env's own (see ``describe()``) plus ``max_episode_steps``; ``env_params`` gives one dict of
    parameters per env instead.

    ``num_buffers`` > 1 splits the envs into that many equal buffers stepped by a native driver
    thread: ``submit(k, actions)`` queues buffer ``k`` and returns at once, ``wait(k)`` collects it.
    """

    spec = None

    def _bound_params(self, per_env: list[dict]) -> list[dict]:
        """Each env's parameters as the spec reads them, from the ones given (a checked list of dicts, one
        per env): subclasses map their own keywords here (defaults, renamed or expanded values)."""
        return per_env

    def __init__(
        self,
        num_envs: int = 1,
        buf: Buffers | None = None,
        seed: int = 0,
        num_threads: int = 0,
        schedule: str = "static",
        pin_threads: bool = False,
        env_params: list[dict] | None = None,
        num_buffers: int = 1,
        **params,
    ):
        info = self.describe()
        num_envs = check_integer(num_envs, "num_envs", 1)
        if env_params is not None:
            if params:
                raise APIUsageError("pass parameters either as keywords or as env_params, not both")
            if (
                not isinstance(env_params, list)
                or len(env_params) != num_envs
                or not all(isinstance(p, dict) for p in env_params)
            ):
                raise APIUsageError(f"env_params must be a list of {num_envs} dicts (one per env)")
        per_env = 8 + 8 * len(info["params"])  # bytes of each env's row of parameters
        check_estimate(native_vector_estimate(info, num_envs, observation_space(info), action_space(info)), num_envs)
        try:
            per_env_params = self._bound_params(env_params if env_params is not None else [params] * num_envs)
            matrix, max_episode_steps, texts = resolve_params(info, per_env_params)
        except MemoryError:
            raise out_of_memory(num_envs * per_env, num_envs, "per-env parameters") from None
        num_threads = check_threads(num_threads)
        schedule = check_schedule(schedule)
        pin_threads = check_bool(pin_threads, "pin_threads")
        num_buffers = check_integer(num_buffers, "num_buffers", 1)
        if num_envs % num_buffers:
            raise APIUsageError(f"num_buffers must divide num_envs ({num_envs}), got {num_buffers}")
        self.num_envs = num_envs
        # The spec of this vector: its layout and shared state may depend on the parameters.
        self.vector_spec, info = configured(self.spec, info, matrix, texts)
        self.single_observation_space = observation_space(info)
        self.single_action_space = action_space(info)
        self.num_agents = info["num_agents"] * self.num_envs
        super().__init__(buf, check_seed(seed))
        self.max_episode_steps = max_episode_steps
        b = self.buf
        self._vec = _native.Vector(
            self.vector_spec,
            self.num_envs,
            matrix,
            max_episode_steps,
            b.observations,
            b.final_observations,
            b.actions,
            b.rewards,
            b.terminals,
            b.truncations,
            b.masks,
            num_threads,
            schedule,
            0,
            bool(pin_threads),
            num_buffers,
        )
        self.num_buffers = self._vec.num_buffers
        envs_per_buffer = self.num_envs // self.num_buffers
        self._logs = [
            EpisodeLog(self._vec, k * envs_per_buffer, (k + 1) * envs_per_buffer, self._report_log)
            for k in range(self.num_buffers)
        ]
        # The hot path's one Python call per step that ended episodes (Multithreading's step_infos).
        self._count_episodes = self._logs[0].add
        self._check_buffer_actions = ActionChecker(self.single_action_space, self.num_agents // self.num_buffers)

    @classmethod
    def describe(cls) -> dict:
        """Spaces, parameters (name, type, default, range, doc), stats and time limit of the env."""
        if cls.spec is None:
            raise APIUsageError(f"{cls.__name__} has no native spec; use shoal.envs or shoal.native.load_env")
        return cls.spec.describe()

    def set_box_actions(self, box_actions: str) -> None:
        super().set_box_actions(box_actions)
        self._check_buffer_actions = ActionChecker(
            self.single_action_space, self.num_agents // self.num_buffers, box_actions
        )
        self._vec.box_actions = box_actions  # the native fast check's part of the rule

    @property
    def num_threads(self) -> int:
        return self._vec.num_threads

    def set_num_threads(self, num_threads: int) -> None:
        self._vec.set_num_threads(check_threads(num_threads))

    def set_schedule(self, schedule: str) -> None:
        self._vec.set_schedule(check_schedule(schedule))

    def pool_stats(self) -> dict:
        """Counters of the worker pool, as the native pool names them."""
        return self._vec.pool_stats()

    def reset(self, seed: int | None = None):
        seed = self.seed if seed is None else check_seed(seed)
        self._vec.reset(seed)
        for log in self._logs:
            log.clear()
        return self.observations, []

    def step(self, actions):
        """Steps every env; ``actions`` are checked (cheaply in native code for int32/float32 arrays)."""
        ended = self._vec.step_actions(actions) if type(actions) is np.ndarray else -1
        if ended < 0:
            ended = self._step_converted(actions)
        infos = self._count_episodes(ended) if ended else []
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def step_infos(self, actions) -> list[dict]:
        """step() that returns only the infos (the outputs are in ``buf``): Multithreading's hot path.
        (Serial calls step() once per env, so neither calls the other: a Python call costs ~0.1 us.)"""
        ended = self._vec.step_actions(actions) if type(actions) is np.ndarray else -1
        if ended < 0:
            ended = self._step_converted(actions)
        return self._count_episodes(ended) if ended else []

    def _stepped(self, actions) -> int:
        """Steps every env (as step() does, without the infos); returns the episodes that ended."""
        ended = self._vec.step_actions(actions) if type(actions) is np.ndarray else -1
        return ended if ended >= 0 else self._step_converted(actions)

    def _step_converted(self, actions) -> int:
        actions = self._check_actions(actions)  # converts other dtypes, or raises
        np.copyto(self.actions, actions, casting="unsafe")
        return self._vec.step()

    # An env class's own form of its episode stats (a dict from collect_log -> the dict infos report); None: as is.
    _report_log = None

    def submit(self, buffer: int, actions) -> None:
        """Queues a step of buffer ``buffer`` (num_buffers > 1) and returns while it runs."""
        if type(actions) is not np.ndarray or self._vec.submit(buffer, actions) < 0:
            # converts other dtypes, byte orders and layouts, clips in clip mode, or raises; the values
            # then stand as checked (per-dimension bounds, or NaN under clip, would fail the native
            # check again and leave the buffer unqueued)
            if self._vec.submit(buffer, self._check_buffer_actions.converted(actions), checked=True) < 0:
                raise AssertionError("converted actions were refused by the native vector")

    def help_step(self) -> bool:
        """Steps chunks of the buffer step in flight (num_buffers > 1) on the calling thread for up to
        HELP_BUDGET_NS; False when none was left. For a caller that would otherwise wait idle, for a
        GPU say."""
        return self._vec.help_step(HELP_BUDGET_NS)

    def wait(self, buffer: int) -> list[dict]:
        """Waits for the step of buffer ``buffer``; returns its infos."""
        return self._logs[buffer].add(self._vec.wait(buffer))

    def send(self, actions) -> None:
        order = self._order
        if order.state != READY_TO_SEND:
            order.send()  # raises the precise error for the current state
        # IN_CALL while the envs step: another thread's send or recv is refused (the native vector
        # also refuses a second thread's step while one runs: the two leave no gap between them).
        order.state = IN_CALL
        try:
            _, _, _, _, self.infos = self.step(actions)
        except BaseException:
            if order.state == IN_CALL:
                order.state = READY_TO_SEND  # refused actions leave the vector as it was
            raise
        order.state = READY_TO_RECV

    def abandon(self) -> None:
        """Stops the step in flight at the next env boundary; callable from any thread. The call
        stepping raises, and the envs refuse steps until reset()."""
        self._vec.abandon()

    def env_memory(self, index: int) -> memoryview:
        """Raw bytes of env ``index``'s struct (for tests and debugging)."""
        return self._vec.env_memory(index)

    def close(self) -> None:
        super().close()
        if not self._vec.closed:
            self._vec.close()


def env_class(spec, class_name: str, doc: str | None = None) -> type[NativeEnv]:
    """A NativeEnv subclass for ``spec``."""
    info = spec.describe()
    return type(class_name, (NativeEnv,), {"spec": spec, "__doc__": doc or info["doc"], "__module__": "shoal.envs"})


def load_env(path: str | Path, name: str, class_name: str | None = None) -> type[NativeEnv]:
    """Loads a third-party native env from a shared library built against shoal/env.h.

    ``name`` is the NAME given to SHOAL_EXPORT_ENV. Returns a class usable as an env creator with
    every backend (e.g. ``make(MyEnv, backend="Multithreading", num_envs=1024)``).
    """
    path = Path(path)
    if not path.is_file():
        raise APIUsageError(f"native env library {path} does not exist")
    try:
        spec = _native.load_spec(str(path.resolve()), name)
    except ValueError as error:
        raise APIUsageError(str(error)) from None
    # The class is pickled by value (cloudpickle) and its spec as (path, name), so spawned worker
    # processes load the same library again.
    return env_class(spec, class_name or name)
