"""Multithreading: native envs stepped by shoal's C++ worker pool inside the caller's process."""

from __future__ import annotations

import threading

import numpy as np

from .. import _native
from ..call_order import CLOSED, IN_CALL, READY_TO_RECV, READY_TO_SEND, used_concurrently
from ..errors import APIUsageError
from ..native import check_schedule, check_threads, native_env_class
from ..seeding import check_seed
from ..validation import is_integer
from .base import VecEnv
from .interrupts import guarded


def default_num_threads(num_envs: int, pipelined: bool = False) -> int:
    """Physical cores, capped by the number of envs; one fewer when pipelined, leaving the
    caller's core to the policy that runs while the driver steps."""
    cores = _native.physical_cores() - (1 if pipelined else 0)
    return max(1, min(cores, num_envs))


class Multithreading(VecEnv):
    """All envs in one native vector; ``max_num_threads`` threads (the caller included) step them.

    ``max_num_threads``: 0 or 1 = the caller steps every env itself (no pool threads); N > 1 = the
    caller plus N - 1 persistent pool threads. Default: physical cores, capped by num_envs.
    ``schedule``: "static" contiguous slices (default) or "dynamic" chunks for envs of uneven cost.

    ``batch_size`` < num_envs pipelines: the envs form num_envs / batch_size buffers; ``send``
    hands the buffer just received to a native driver thread and returns at once (the GIL is free
    while it steps, so the caller's policy runs meanwhile); ``recv`` returns the next buffer in
    round-robin order, waiting only for that one. Per-env trajectories equal Serial's. In this mode
    the driver thread takes the caller's place in the pool: max_num_threads counts it.

    Ctrl-C during a long step (or recv) stops it at an env boundary within about 0.1 s, plus the
    step of any env that is running then (an env's own step cannot be interrupted); the vector then
    refuses use until reset(). close() from another thread stops a step in flight the same way.
    """

    def __init__(
        self,
        env_creators,
        env_args,
        env_kwargs,
        num_envs: int,
        seed: int = 0,
        max_num_threads: int | None = None,
        schedule: str = "static",
        pin_threads: bool = False,
        batch_size: int | None = None,
        box_actions: str = "pass",
    ):
        self._set_box_actions(box_actions)
        env_type = native_env_class(env_creators, env_args, env_kwargs, "Multithreading")
        if batch_size is None or batch_size == "auto":
            batch_size = num_envs
        if not is_integer(batch_size) or not 1 <= batch_size <= num_envs or num_envs % batch_size:
            raise APIUsageError(
                f"batch_size ({batch_size!r}) must divide num_envs ({num_envs}): the envs form "
                "num_envs / batch_size equal buffers"
            )
        if max_num_threads is None or max_num_threads == "auto":
            max_num_threads = default_num_threads(num_envs, pipelined=batch_size < num_envs)
        max_num_threads = check_threads(max_num_threads)
        schedule = check_schedule(schedule)
        self.seed = check_seed(seed)
        self.num_buffers = num_envs // int(batch_size)
        self.batch_size = int(batch_size)
        self.env = env_type(
            num_envs=num_envs,
            seed=self.seed,
            num_threads=max_num_threads,
            schedule=schedule,
            pin_threads=pin_threads,
            env_params=list(env_kwargs),
            num_buffers=self.num_buffers,
        )
        if self.box_actions != "pass":
            self.env.set_box_actions(self.box_actions)
        self.driver_env = self.env
        self.num_envs = num_envs
        self.num_agents = self.env.num_agents
        self.agents_per_batch = self.num_agents // self.num_buffers
        self.single_observation_space = self.env.single_observation_space
        self.single_action_space = self.env.single_action_space
        self.emulated = None
        self._schedule = schedule
        self.agent_ids = np.arange(self.num_agents)
        self.buf = self.env.buf
        # Views of each buffer's rows, made once: recv() returns them without copying.
        rows = self.agents_per_batch
        self._batches = [
            (self.buf.rows(k * rows, (k + 1) * rows), self.agent_ids[k * rows : (k + 1) * rows])
            for k in range(self.num_buffers)
        ]
        first = self._batches[0][0]  # the rows recv() returns first (all of them when synchronous)
        self.observations, self.final_observations = first.observations, first.final_observations
        self._next = 0
        # The synchronous hot path's bound method and views, looked up once.
        self._step_infos = self.env.step_infos
        b = self.buf
        self._outputs = (b.observations, b.rewards, b.terminals, b.truncations, self.agent_ids, b.masks)
        # Held by the one call under way (taken without waiting: a second thread's call is refused).
        # close() from another thread stops that call (abandon), then waits for it, and the
        # waiting thread reports the close. A close() from a signal handler run by the thread that
        # holds it (the native call runs handlers while it polls for Ctrl-C) is finished once the
        # call has returned: a reentrant lock, so that this thread can tell.
        self._in_use = threading.RLock()
        self._close_after_call = False
        self._init_api()

    @property
    def local_envs(self) -> list:
        return [self.env]

    @property
    def max_num_threads(self) -> int:
        return self.env.num_threads

    @max_num_threads.setter
    def max_num_threads(self, num_threads: int) -> None:
        """Changes the thread count of the live vector (between steps)."""
        self.env.set_num_threads(num_threads)

    @property
    def schedule(self) -> str:
        return self._schedule

    @schedule.setter
    def schedule(self, schedule: str) -> None:
        """Changes how the live vector shares envs out to its threads (between steps)."""
        self.env.set_schedule(schedule)
        self._schedule = schedule

    # An exception that leaves send/recv half done (Ctrl-C stops the native step at an env boundary)
    # makes the vector refuse use until reset(): see backends/interrupts.py.

    # One thread at a time: a call takes `_in_use` without waiting (a second thread's call is an
    # APIUsageError, never a second step of the same batch) and holds the call order at IN_CALL
    # while it steps or waits, so that a recv() from another thread cannot read rows being written.

    @guarded
    def async_reset(self, seed: int | None = None) -> None:
        seed = self.seed if seed is None else check_seed(seed)
        order = self._order
        if not self._in_use.acquire(False):
            raise self._used_concurrently("async_reset")
        try:
            order.reset()  # raises the precise error for the current state
        except BaseException:
            self._in_use.release()
            raise
        try:
            order.state = IN_CALL
            _, self.infos = self.env.reset(seed)
            self._next = 0
        finally:
            self._leave(READY_TO_RECV)
            self._in_use.release()

    @guarded
    def send(self, actions) -> None:
        # The synchronous path is the hot one: the call order's state is read and written here
        # rather than through its methods (a Python call each, ~0.2 us of a 1.5 us batch step).
        order = self._order
        if not self._in_use.acquire(False):  # not `with`: this is the hot path
            raise self._used_concurrently("send")
        if order.state != READY_TO_SEND:
            self._in_use.release()
            order.send()  # raises the precise error for the current state
        try:
            order.state = IN_CALL
            if self.num_buffers == 1:
                self.infos = self._step_infos(actions)  # checks the actions before any env runs
            else:
                self.env.submit(self._next, actions)
                self._next = (self._next + 1) % self.num_buffers
        except BaseException as exc:
            self._leave(READY_TO_SEND)  # refused actions leave the vector as it was
            self._in_use.release()
            self._after_failed_call("send", exc)
            raise
        self._in_use.release()
        if order.state == CLOSED:
            self._closed_while("send")
        order.state = READY_TO_RECV  # CallOrder.sent()

    @guarded
    def recv(self):
        order = self._order
        if order.state != READY_TO_RECV:
            order.recv()  # raises the precise error for the current state (IN_CALL included)
        if self.num_buffers == 1:
            order.state = READY_TO_SEND  # what CallOrder.recv() moves to
            observations, rewards, terminals, truncations, agent_ids, masks = self._outputs
            return observations, rewards, terminals, truncations, self.infos, agent_ids, masks
        if not self._in_use.acquire(False):
            raise self._used_concurrently("recv")
        if order.state != READY_TO_RECV:  # another thread's recv came first
            self._in_use.release()
            order.recv()
        k = self._next
        try:
            order.state = IN_CALL
            self.infos = infos = self.env.wait(k)
        except BaseException as exc:
            self._leave(READY_TO_SEND)
            self._in_use.release()
            self._after_failed_call("recv", exc)
            raise
        self._in_use.release()
        if order.closed:
            self._closed_while("recv")
        order.state = READY_TO_SEND
        rows, agent_ids = self._batches[k]
        # The batch's rows, as on every backend: final_observations[terminals | truncations] works here too.
        self.observations, self.final_observations = rows.observations, rows.final_observations
        return (rows.observations, rows.rewards, rows.terminals, rows.truncations, infos, agent_ids, rows.masks)

    def help_step(self) -> bool:
        """Pipelined (batch_size < num_envs): steps chunks of the envs stepping in the background on
        the calling thread for a few microseconds, and returns whether there were any. A caller about to wait idle (for its
        policy's results on a GPU) lends its core this way; the results are the same either way."""
        if self.num_buffers == 1 or not self._in_use.acquire(False):
            return False
        try:
            return self.env.help_step()
        finally:
            self._in_use.release()

    def step_while_waiting(self, ready) -> bool:
        """Steps chunks of the envs stepping in the background on the calling thread until ``ready()``
        is true or no chunk is left; returns ``ready()``'s last answer. For a caller about to wait for
        something else (its policy's results from an accelerator): its core steps envs meanwhile,
        then it waits its own way for what is left. Results are the same either way."""
        while not ready():
            if not self.help_step():
                return False
        return True

    def _leave(self, state: int) -> None:
        """Ends IN_CALL with ``state``, unless the vector was closed (or marked for reset) meanwhile."""
        if self._order.state == IN_CALL:
            self._order.state = state

    def _used_concurrently(self, call: str) -> APIUsageError:
        if self._order.closed:
            return APIUsageError(f"Multithreading: {call}() on a closed vector env")
        return used_concurrently("Multithreading", call)

    def pool_stats(self) -> dict:
        return self.env.pool_stats()

    def _after_failed_call(self, call: str, exc: BaseException) -> None:
        """A native step or wait raised: if the vector was closed meanwhile (which stops the step
        with an APIUsageError), say so; a close deferred from a signal handler is finished."""
        if isinstance(exc, APIUsageError) and self._order.closed:
            self._closed_while(call)
        self._finish_deferred_close()

    def _closed_while(self, call: str) -> None:
        self._finish_deferred_close()
        raise APIUsageError(
            f"Multithreading: the vector env was closed (by another thread) while {call}() waited; "
            "the step in flight is discarded"
        )

    def _finish_deferred_close(self) -> None:
        if self._close_after_call:
            self._close_after_call = False
            self.env.close()

    def _close(self) -> None:
        self.env.abandon()  # a step or wait under way stops at the next env boundary
        if self._in_use._is_owned():  # a signal handler run by this thread inside its own step or wait
            self._close_after_call = True
            return
        with self._in_use:  # the call under way in another thread returns
            self.env.close()
