"""The caller side that Multiprocessing and Ray share: envs split over workers, batches of workers.

Each worker runs a SliceRunner over ``envs_per_worker`` envs. The subclass starts the workers, moves
actions and results, and says when a worker completes; this base holds the layout, the spaces read
off a driver env, the batch views (zero-copy blocks, or a batch buffer that results are copied into),
the reset of every worker, the rule that an env failure leaves the vector needing a reset, and what
a dead or late worker costs: the vector (a WorkerError) or a replacement (``on_worker_failure``).
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

from ...buffers import Buffers
from ...errors import APIUsageError, EnvError, WorkerError
from ...interrupts import guarded, interrupted_reason
from ...seeding import check_seed, first_env_indices, offset_seed, restart_seed
from ...validation import check_bool
from ..base import VecEnv, agent_id_range
from ..worker_side.runner import EnvShape, probe_driver
from ..worker_side.slices import EnvSlice
from .batching import BatchSelector, take_infos
from .deadlines import Deadlines, Watch, check_on_worker_failure, check_timeout
from .env_split import WORKER_OPTIONS, worker_layout
from .faults import LIVENESS_CHECK_S, MISSED_DEADLINE
from .ownership import Owner
from .restart import (
    RESTART_OPTIONS,
    RestartBudget,
    check_max_restarts,
    check_restart_window,
    mark_restarted,
    restart_info,
)


class WorkerBackend(VecEnv):
    """Base of the backends whose envs live in ``num_workers`` workers (processes or actors)."""

    def _configure_workers(self, num_envs: int, seed: int, options: dict, limit_to_cores: bool = True) -> None:
        """Checks the worker options (WORKER_OPTIONS, defaults for those not given) and sets the layout;
        keeps the restart budget's options (RESTART_OPTIONS) for _configure_failures."""
        restart = {name: options.pop(name, default) for name, default in RESTART_OPTIONS.items()}
        self._max_restarts = check_max_restarts(restart["max_restarts"])
        self._restart_window = check_restart_window(restart["restart_window"])
        unknown = sorted(set(options) - set(WORKER_OPTIONS))
        if unknown:
            raise APIUsageError(f"invalid argument(s) {unknown} for backend {type(self).__name__}")
        options = {**WORKER_OPTIONS, **options}
        num_workers, batch_size = options["num_workers"], options["batch_size"]
        zero_copy, sync_traj, overwork = options["zero_copy"], options["sync_traj"], options["overwork"]
        self.seed = check_seed(seed)
        zero_copy = check_bool(zero_copy, "zero_copy")
        self.sync_traj = check_bool(sync_traj, "sync_traj")
        self.overwork = check_bool(overwork, "overwork")
        layout = self._layout = worker_layout(
            num_envs, num_workers, batch_size, zero_copy, self.overwork, limit_to_cores=limit_to_cores
        )
        self.num_envs = num_envs
        self.num_workers, self.batch_size, self.zero_copy = layout.num_workers, layout.batch_size, layout.zero_copy
        self.envs_per_worker, self.workers_per_batch = layout.envs_per_worker, layout.workers_per_batch

    def _configure_failures(self, timeout, on_worker_failure) -> None:
        """Checks ``timeout`` and ``on_worker_failure`` and sets the state they need."""
        self.timeout = check_timeout(timeout)
        self.on_worker_failure = check_on_worker_failure(on_worker_failure)
        self._deadlines = Deadlines(self.num_workers, self.timeout)
        self._watch = Watch(LIVENESS_CHECK_S)  # looks at workers the caller is not waiting for
        self._owner = Owner(type(self).__name__)  # the process whose workers these are
        self._restarts = [0] * self.num_workers  # replacements of each worker so far
        self._restart_budget = RestartBudget(self.num_workers, self._max_restarts, self._restart_window)
        self._reset_seed = self.seed  # seed of the last reset (restart seeds derive from it)
        self._needs_resync = False  # an interrupted call left workers in an unknown state
        self._failed = False  # a worker failure closed the vector (not close())

    def _interrupted(self, call: str, exc: BaseException) -> None:
        """An unplanned exception left ``call`` half done: refuse use until reset(), which resyncs."""
        if not self._order.closed:
            self._needs_resync = True
            self._order.needs_reset(interrupted_reason(call, exc))

    def _probe_driver(self, creator, args, kwargs) -> None:
        """Builds the driver env, which stays in this process and tells spaces and agents per env."""
        self.driver_env, self._emulate = probe_driver(creator, args, kwargs)
        driver = self.driver_env
        self._env_shape = EnvShape.of(driver)
        self.single_observation_space = driver.single_observation_space
        self.single_action_space = driver.single_action_space
        self.emulated = driver.emulated
        self.agents_per_env = driver.num_agents
        self.rows_per_worker = driver.num_agents * self.envs_per_worker
        self.num_agents = self.rows_per_worker * self.num_workers
        self.agents_per_batch = self.rows_per_worker * self.workers_per_batch

    def _env_slices(self, env_creators, env_args, env_kwargs) -> list[EnvSlice]:
        return [
            EnvSlice.of(env_creators, env_args, env_kwargs, self._layout.env_slice(w)) for w in range(self.num_workers)
        ]

    def _set_internal_envs(self, counts: list[int]) -> None:
        """Records how many envs each worker holds (a PufferEnv may hold several): worker w resets
        its slice with offset_seed(seed, first env of w), so every env draws its Serial stream."""
        self._first_envs = first_env_indices(counts)

    def _init_batches(self) -> None:
        """Batch views over ``self.buf`` (every worker's rows), then the API; after the workers start."""
        rows, wpb, buf = self.rows_per_worker, self.workers_per_batch, self.buf
        self._worker_rows = [slice(w * rows, (w + 1) * rows) for w in range(self.num_workers)]
        # Batches of any ready workers that are not an aligned block are copied into a batch buffer.
        self._copy_mode = (not self.zero_copy) and 1 < wpb < self.num_workers
        self.constant_agent_ids = not self._copy_mode  # a copied batch's ids are its workers' of the moment
        if self._copy_mode:
            self._batch_buf = Buffers.allocate(
                self.single_observation_space, self.single_action_space, self.agents_per_batch
            )
            self._batch_ids = np.empty(self.agents_per_batch, dtype=np.int64)
            self._worker_ids = [agent_id_range(r.start, r.stop) for r in self._worker_rows]
        else:
            # One tuple of views per block of workers_per_batch consecutive workers.
            self._views = []
            for b in range(self.num_workers // wpb):
                r = slice(b * self.agents_per_batch, (b + 1) * self.agents_per_batch)
                self._views.append(
                    (
                        buf.observations[r],
                        buf.rewards[r],
                        buf.terminals[r],
                        buf.truncations[r],
                        agent_id_range(r.start, r.stop),
                        buf.masks[r],
                        buf.final_observations[r],
                        buf.actions[r],
                    )
                )
        self._busy: list[int] = []  # dispatched, not completed (dispatch order)
        self._batches = BatchSelector(self.num_workers, wpb, self.zero_copy, self.sync_traj)
        self._worker_infos: list[list] = [[] for _ in range(self.num_workers)]
        self._batch: list[int] = []
        self.observations = buf.observations
        self.final_observations = buf.final_observations
        self._init_api()

    def _env_range(self, w: int) -> str:
        return self._layout.env_range(w)

    # -- the API -----------------------------------------------------------------------------------

    @guarded
    def async_reset(self, seed: int | None = None) -> None:
        self._owner.check()
        seed = self.seed if seed is None else check_seed(seed)
        self._order.reset()
        self._reset_seed = seed
        with self._failures_need_reset():
            if self._needs_resync:
                self._resync()  # after an interrupted call: every worker back to a known state
            else:
                self._drain()  # steps still in flight finish first: results dropped, failures raised
        self._batches.clear()
        self._worker_infos = [[] for _ in range(self.num_workers)]
        for w in range(self.num_workers):
            self._dispatch_reset(w, offset_seed(seed, self._first_envs[w]))

    @guarded
    def send(self, actions) -> None:
        self._owner.check()
        actions = self._check_actions(actions)
        self._order.send()
        self._send_batch(actions)

    def _take_batch(self) -> tuple[list[int], list]:
        """recv's prologue: the next batch of workers and its infos."""
        self._owner.check()
        self._order.recv()
        try:
            with self._failures_need_reset():
                batch = self._next_batch()
        except Exception:
            if self._closed_by_another_thread():
                raise self._closed_while_waiting() from None
            raise
        if self._closed_by_another_thread():
            raise self._closed_while_waiting()
        self._batch = batch
        self.infos = infos = take_infos(self._worker_infos, batch)
        return batch, infos

    @contextlib.contextmanager
    def _failures_need_reset(self):
        """An env error leaves the vector needing a reset; a dead worker has closed it. Every other
        worker in flight is drained first, and its failures are told with this one: none of them is
        left for the reset to raise a call late."""
        try:
            yield
        except WorkerError:
            raise
        except EnvError as error:
            self._order.failed()
            others = self._drain_failures()
            if others:
                first, *others = sorted([error, *others], key=by_env_index)
                raise with_other_failures(first, others) from first.__cause__
            raise

    def _drain_failures(self) -> list[EnvError]:
        """Waits until no worker is in flight, dropping results; the env failures met on the way."""
        failures = []
        while True:
            try:
                self._drain()
                return failures
            except WorkerError:
                raise
            except EnvError as failure:
                failures.append(failure)

    def _batch_result(self, infos: list):
        """The 7-tuple of recv for a batch already in the batch buffer (copy mode)."""
        dst = self._batch_buf
        self.observations, self.final_observations = dst.observations, dst.final_observations
        return dst.observations, dst.rewards, dst.terminals, dst.truncations, infos, self._batch_ids, dst.masks

    def _block_result(self, block: int, infos: list):
        """The 7-tuple of recv for the aligned block of workers ``block`` (zero copy)."""
        obs, rewards, terminals, truncations, ids, masks, final, _ = self._views[block]
        self.observations, self.final_observations = obs, final
        return obs, rewards, terminals, truncations, infos, ids, masks

    def _dispatched(self, w: int) -> None:
        self._busy.append(w)
        self._batches.dispatched(w)

    # -- worker failures ---------------------------------------------------------------------------

    def _worker_failed(self, w: int, reason: str, detail: str = "") -> list | None:
        """Worker w died or is late (``reason``). on_worker_failure="raise": a WorkerError, the vector
        closed. "restart": a new worker on the same rows resets its envs from the restart seed; returns
        the infos of its rows for the batch that would have held the lost step (restart.py), or None
        where the replacement failed too and a nested call dealt with it."""
        if self._order.closed:
            raise self._closed_while_waiting()  # close() from another thread is reaping the workers
        origin = self._origin(w)
        if self.on_worker_failure == "raise":
            self._kill_on_close([w])
            late = reason.startswith(MISSED_DEADLINE)
            self._fail(
                lambda: WorkerError(
                    f"{origin} {self._deadlines.reason(w) if late else reason}; it held envs "
                    f"{self._env_range(w)}. The vector env is closed.{detail}"
                )
            )
        reason = f"{origin} {reason}"
        backoff = self._restart_budget.charge(w)
        if backoff is None:
            self._kill_on_close([w])
            self._fail(
                WorkerError(
                    f"{reason}; it held envs {self._env_range(w)} ({self._env_name()}). It was not replaced: "
                    f"it was replaced {self._restart_budget.spent(w)} times already, the most "
                    f"{self._restart_budget.describe()} allows. The vector env is closed.{detail}"
                )
            )
        time.sleep(backoff)
        self._replace_or_fail(w)
        self._restarts[w] += 1
        seed = offset_seed(restart_seed(self._reset_seed, self._restarts[w]), self._first_envs[w])
        self._deadlines.dispatched(w)
        reset = self._reset_replacement(w, seed, reason)
        if reset is None:
            return None
        infos, buffers, rows = reset
        mark_restarted(buffers, rows)
        envs = range(*self._layout.env_slice(w).indices(self.num_envs))
        return [*infos, restart_info(w, envs, self._restarts[w], reason)]

    def _env_name(self) -> str:
        """The env as a restart's WorkerError names it: a Gymnasium id, else its class."""
        env = getattr(self.driver_env, "env", self.driver_env)
        spec = getattr(env, "spec", None)
        name = getattr(spec, "id", None)
        return name if isinstance(name, str) else type(getattr(env, "unwrapped", env)).__name__

    def _replace_or_fail(self, w: int) -> None:
        """Replaces worker w; a replacement that cannot start or build its envs closes the vector."""
        try:
            self._replace(w)
        except EnvError as exc:  # WorkerError included
            self._fail(WorkerError(f"worker {w} could not be restarted: {exc}"))

    def _ready_count(self, w: int, origin: str, count: int, failure) -> int:
        """A worker's ready report (both backends' handshake): its internal env count, or the
        creation error of the env that failed to build."""
        if failure is not None:
            raise failure.creation_error(w, self._env_range(w), origin)
        return count

    # -- what a worker backend provides ------------------------------------------------------------

    def _origin(self, w: int) -> str:
        """Worker w as errors name it (which worker, which process, which host)."""
        raise NotImplementedError

    def _replace(self, w: int) -> None:
        """Kills worker w (if alive) and starts a new one on the same rows, waiting until it has built
        its envs (the handshake of a first start); an EnvError (WorkerError) if it cannot."""
        raise NotImplementedError

    def _reset_replacement(self, w: int, seed: int, reason: str) -> tuple[list, Buffers, slice] | None:
        """Resets the replacement of worker w with ``seed``: its infos and where its rows are, or None
        where it failed too and a nested _worker_failed dealt with it. ``reason`` says why it replaced one."""
        raise NotImplementedError

    def _send_batch(self, actions) -> None:
        """Writes the checked ``actions`` into the rows of the workers of the last batch and starts their step."""
        raise NotImplementedError

    def _dispatch_reset(self, w: int, seed: int) -> None:
        """Starts worker w's reset of its slice with ``seed``."""
        raise NotImplementedError

    def _drain(self) -> None:
        """Waits until no worker is in flight; results are dropped, an env failure raises EnvError."""
        raise NotImplementedError

    def _resync(self) -> None:
        """After an interrupted call: drops whatever is in flight, whatever state it was left in."""
        raise NotImplementedError

    def _next_batch(self) -> list[int]:
        raise NotImplementedError

    def _fail(self, error):
        """Closes the vector, then raises ``error`` (a WorkerError, or a function that makes one once
        the vector is closed, so that its elapsed times include the close). The step in flight is lost
        with the vector, so workers still in it are killed rather than awaited."""
        self._failed = True
        self._kill_on_close(self._busy)
        self.close()
        raise error if isinstance(error, BaseException) else error()

    def _kill_on_close(self, workers) -> None:
        """The coming close() kills ``workers`` at once instead of asking them to close their envs."""
        raise NotImplementedError

    def _closed_by_another_thread(self) -> bool:
        return self._order.closed and not self._failed

    def _closed_while_waiting(self) -> APIUsageError:
        """What a thread waiting in recv() gets when another thread closes the vector (close() wins)."""
        return APIUsageError(
            f"{type(self).__name__}: the vector env was closed (by another thread) while recv() "
            "waited; the step in flight is discarded"
        )


def by_env_index(error: EnvError) -> tuple[bool, int]:
    """Sort key: failures of one call in env order (as Serial meets them), those of no single env last."""
    env_index = getattr(error, "env_index", None)
    return (env_index is None, env_index or 0)


def with_other_failures(error: EnvError, others: list[EnvError]) -> EnvError:
    """``error``, followed by the first line of each other failure of the same call."""
    lines = "\n  ".join(str(other).split("\n", 1)[0] for other in others)
    return EnvError(f"{error}\n\n{len(others)} more env failure(s) in the same call:\n  {lines}")
