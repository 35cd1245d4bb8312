"""NativeEnv: native (C) envs of one type in one PufferEnv, over shoal._native.Vector.

This is the only module that touches ``_native.Vector``; every other layer goes through NativeEnv.
"""

from __future__ import annotations

from pathlib import Path

from .. import _native, cpus
from ..buffers import Buffers, check_estimate, native_vector_estimate, out_of_memory
from ..call_order import ANY_OPEN, CLOSED, READY_TO_RECV, READY_TO_SEND
from ..errors import APIUsageError
from ..interrupts import guarded, interrupted_reason, signals_held
from ..pufferenv import PufferEnv
from ..seeding import check_seed
from ..spaces import ActionChecker
from ..validation import SCHEDULES as SCHEDULES  # native/__init__ exports it
from ..validation import check_bool, check_integer, check_num_buffers, check_num_envs, check_schedule
from .spec import action_space, configured, observation_space, resolve_params

# How long one help_step() steps envs: long beside the cost of a call from Python, short beside a
# policy's latency (a caller whose results arrive meanwhile is late by at most this, plus a chunk).
HELP_BUDGET_NS = 20_000
MAX_THREADS = 1024


def check_threads(num_threads) -> int:
    return check_integer(num_threads, "max_num_threads", 0, MAX_THREADS)


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

    def _check_stepping(self, num_threads: int, num_buffers: int) -> None:
        """Subclasses refuse thread or buffer counts their envs cannot be stepped with here."""

    def _episode_log(self, begin: int, end: int):
        """The episode log of envs [begin, end) (a subclass may report on a cadence of its own)."""
        return EpisodeLog(self._vec, begin, end, self._report_log)

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
        num_envs = check_num_envs(num_envs)
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
        num_buffers = check_num_buffers(num_buffers, num_envs)
        self._check_stepping(num_threads, num_buffers)
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
            cpu_limit=cpus.usable_cpus(),  # the pool's spinning threads stay within a cgroup CPU quota
        )
        self.num_buffers = self._vec.num_buffers
        envs_per_buffer = self.num_envs // self.num_buffers
        self._logs = [
            self._episode_log(k * envs_per_buffer, (k + 1) * envs_per_buffer) for k in range(self.num_buffers)
        ]
        # The hot path's one Python call per step that ended episodes.
        self._count_episodes = self._logs[0].add
        self._check_buffer_actions = ActionChecker(self.single_action_space, self.num_agents // self.num_buffers)
        self._init_vector_api()

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

    # The env API (what Serial and a user stepping the object by hand call): reset/step every env.

    def reset(self, seed: int | None = None):
        seed = self.seed if seed is None else check_seed(seed)
        self._vec.reset(seed)
        for log in self._logs:
            log.clear()
        return self.observations, []

    def step(self, actions):
        """Steps every env; ``actions`` are checked by the native vector (int32/int64, float32 for a box,
        in their native form, read in place; any other form converted by the ActionChecker first)."""
        ended = self._vec.step_actions(actions)  # raises the rule's APIUsageError before any env runs
        infos = self._count_episodes(ended) if ended or self._log_hears_every_step else []
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    @property
    def _check_buffer_actions(self) -> ActionChecker:
        """The action rule's Python side for one send's rows (every row when num_buffers is 1): the
        native vector converts actions of another form with it, and words its refusals with it."""
        return self._vec.action_checker

    @_check_buffer_actions.setter
    def _check_buffer_actions(self, checker: ActionChecker) -> None:
        self._vec.action_checker = checker

    # Whether the episode log hears of steps that ended no episode (a log with a cadence of steps).
    _log_hears_every_step = False
    # An env class's own form of its episode stats (a dict from collect_log -> the dict infos report); None: as is.
    _report_log = None

    # The vector API (make(..., backend="PufferEnv") returns this object; Multithreading is a face of
    # it). One thread at a time: a call enters the call order's gate without waiting (a second thread's call
    # is an APIUsageError, never a second step of the same batch) and holds it at IN_CALL while
    # it steps or waits, so that a recv() from another thread cannot read rows being written. An
    # exception that leaves a call half done (Ctrl-C stops the native step at an env boundary) makes
    # the vector refuse use until reset(): see shoal/interrupts.py.

    def _init_vector_api(self) -> None:
        # Views of each buffer's rows, made once: recv() returns them without copying.
        rows = self.num_agents // self.num_buffers
        self._batches = [
            (self.buf.rows(k * rows, (k + 1) * rows), self.agent_ids[k * rows : (k + 1) * rows])
            for k in range(self.num_buffers)
        ]
        # What recv() returns of each buffer, but its infos: (observations, rewards, terminals,
        # truncations, agent ids, masks).
        self._received_arrays = [
            (b.observations, b.rewards, b.terminals, b.truncations, agent_ids, b.masks)
            for b, agent_ids in self._batches
        ]
        b = self.buf
        self._outputs = (b.observations, b.rewards, b.terminals, b.truncations, self.agent_ids, b.masks)
        self._next = 0  # the buffer recv() returns next (round-robin)
        self._received = 0  # the buffer recv() returned last
        # Held by the one call under way (taken without waiting: a second thread's call is refused).
        # close() from another thread stops that call (abandon), then waits for it, and the waiting
        # thread reports the close. A close() from a signal handler run by the thread that holds it
        # (the native call runs handlers while it polls for Ctrl-C) is finished once the call has
        # returned: a reentrant lock, so that this thread can tell.
        self._close_after_call = False

    def serve_as(self, owner: str) -> None:
        """Names the vector in the call order's errors as the object the user made (a backend's name)."""
        self._order.owner = owner

    @property
    def batch_rows(self) -> Buffers:
        """The rows recv() returned last (every row when num_buffers is 1)."""
        return self._batches[self._received][0]

    @guarded
    def async_reset(self, seed: int | None = None) -> None:
        seed = self.seed if seed is None else check_seed(seed)
        order = self._order
        order.enter("reset", ANY_OPEN)
        try:
            _, self.infos = self.reset(seed)
            self._next = 0
        except BaseException as exc:
            order.leave(READY_TO_RECV)
            self._after_failed_call("async_reset", exc)
            raise
        order.leave(READY_TO_RECV)
        if order.closed:
            self._closed_while("async_reset")

    @guarded
    def send(self, actions) -> None:
        order = self._order
        order.enter("send", READY_TO_SEND)  # not `with`: this is the hot path
        try:
            if self.num_buffers == 1:
                ended = self._vec.step_actions(actions)  # checks the actions before any env runs
                self.infos = self._count_episodes(ended) if ended or self._log_hears_every_step else []
            else:  # checks buffer k's actions and queues its step
                k = self._next
                self._vec.submit(k, actions)
                self._next = (k + 1) % self.num_buffers
        except BaseException as exc:
            order.leave(READY_TO_SEND)  # refused actions leave the vector as it was
            self._after_failed_call("send", exc)
            raise
        order.leave(READY_TO_RECV)
        if order.state == CLOSED:
            self._closed_while("send")

    @guarded
    def recv(self):
        order = self._order
        if self.num_buffers == 1:
            order.recv()  # no gate: nothing runs, the rows are read by the caller
            observations, rewards, terminals, truncations, agent_ids, masks = self._outputs
            return observations, rewards, terminals, truncations, self.infos, agent_ids, masks
        order.enter("recv", READY_TO_RECV)
        k = self._next
        try:
            self.infos = infos = self._logs[k].add(self._vec.wait(k))  # buffer k's step, its episodes
        except BaseException as exc:
            order.leave(READY_TO_SEND)
            self._after_failed_call("recv", exc)
            raise
        order.leave(READY_TO_SEND)
        if order.closed:
            self._closed_while("recv")
        self._received = k
        observations, rewards, terminals, truncations, agent_ids, masks = self._received_arrays[k]
        return observations, rewards, terminals, truncations, infos, agent_ids, masks

    def help_step(self) -> bool:
        """Steps chunks of the buffer step in flight (num_buffers > 1) on the calling thread for up to
        HELP_BUDGET_NS; False when none was left (or another thread's call is under way). For a caller
        that would otherwise wait idle, for a GPU say; the results are the same either way."""
        if self.num_buffers == 1 or not self._order.hold():
            return False
        try:
            return self._vec.help_step(HELP_BUDGET_NS)
        finally:
            self._order.release()

    def _interrupted(self, call: str, exc: BaseException) -> None:
        """``call`` was left half done by an unplanned exception (see shoal/interrupts.py)."""
        self._order.needs_reset(interrupted_reason(call, exc))

    def _after_failed_call(self, call: str, exc: BaseException) -> None:
        """A native step or wait raised: if the vector was closed meanwhile (which stops the step
        with an APIUsageError), say so; a close deferred from a signal handler is finished."""
        if isinstance(exc, APIUsageError) and self._order.closed:
            self._closed_while(call)
        self._finish_deferred_close()

    def _closed_while(self, call: str) -> None:
        self._finish_deferred_close()
        cut = "the reset under way is cut short" if "reset" in call else "the step in flight is discarded"
        raise APIUsageError(
            f"{self._order.owner}: the vector env was closed (by another thread) while {call}() waited; {cut}"
        )

    def _finish_deferred_close(self) -> None:
        if self._close_after_call:
            self._close_after_call = False
            self._vec.close()

    def abandon(self) -> None:
        """Stops the step in flight at the next env boundary; callable from any thread. The call
        stepping raises, and the envs refuse steps until reset()."""
        self._vec.abandon()

    def env_memory(self, index: int) -> memoryview:
        """Raw bytes of env ``index``'s struct (for tests and debugging)."""
        return self._vec.env_memory(index)

    def close(self) -> None:
        """Releases the envs and the pool's threads; callable from any thread (a step under way in
        another one stops at the next env boundary and raises). Safe to call more than once.

        Signals are held until it is done (shoal/interrupts.py)."""
        if self._order.closed:
            return
        with signals_held():
            self._order.close()
            self._vec.abandon()  # a step or wait under way stops at the next env boundary
            if self._order.held_here():  # a signal handler run by this thread inside its own step or wait
                self._close_after_call = True
                return
            with self._order.idle():  # the call under way in another thread returns
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
