"""Ray's in-flight calls: waiting for the actors' results, liveness and deadline checks, a lost actor's result."""

from __future__ import annotations

import time

from ..errors import EnvError
from .ray_recovery import HEARTBEAT_AFTER_S
from .wire.messages import Failure
from .worker_side.ray_actor import HEALTH_GROUP

# Granularity of the caller's waits on in-flight results (Ray itself reports actor deaths).
WAIT_S = 1.0


class RayResults:
    """Ray's results: busy actors move to ready with their results (a dead or late actor's is its
    replacement's reset, or elastic's stand-in), and their env failures are raised."""

    def _next_batch(self) -> list[int]:
        ray = self._ray
        if any(self._data_path.is_graph_ref(self._refs[w]) for w in self._busy):
            for w in list(self._busy):  # full sync through compiled graphs: each actor's result in turn
                self._complete(w, self._get_one(w))
        if (
            self.workers_per_batch == self.num_workers
            and len(self._busy) == self.num_workers
            and self.timeout is None
            and not any(self._data_path.is_graph_ref(self._refs[w]) for w in self._busy)
        ):
            # Full sync: one ray.get for every actor once all are in (a dead actor's result is its
            # error); calls still out after HEARTBEAT_AFTER_S go through the loop, which checks liveness.
            refs = [self._refs[w] for w in self._busy]
            if len(ray.wait(refs, num_returns=len(refs), timeout=HEARTBEAT_AFTER_S)[0]) == len(refs):
                self._collect(list(self._busy), ray.get)
        while True:
            if self._busy and self._watch.due():
                self._check_in_flight()  # even while the other actors keep answering
            batch = self._batches.select()
            if batch is not None:
                return batch
            if not self._busy:
                raise RuntimeError("Ray: no actor in flight and no batch ready (internal error)")
            if not self._collect_done(self._deadlines.wait_slice(self._busy, WAIT_S)):
                self._fail_late()

    def _check_in_flight(self) -> None:
        """Takes the results that are in (a dead actor's is its error), then fails a late actor."""
        self._collect_done(0)
        self._fail_late()

    def _collect_done(self, timeout: float) -> bool:
        """Collects every finished call, waiting up to ``timeout`` for one if none is; False if none."""
        ray, refs = self._ray, [self._refs[w] for w in self._busy]
        done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        if not done and timeout > 0:
            done, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        if done:
            finished = set(done)
            self._collect([w for w in self._busy if self._refs[w] in finished], ray.get)
        return bool(done)

    def _fail_late(self) -> None:
        """Fails an actor past its deadline, else one that did not answer a liveness check."""
        late = self._deadlines.late(self._busy)
        if late is not None:
            self._complete(late[0], self._late(late[0]))
            return
        busy = self._busy if self._elastic is None else [w for w in self._busy if w not in self._elastic]
        silent = self._heartbeat.silent(busy, self._deadlines.started, self._ping)
        if silent is not None:
            self._complete(silent, self._failed_result(silent, self._heartbeat.reason()))

    def _silent(self, w: int):
        """Actor w's failed result if it did not answer a liveness check, else None (while its graph
        result is out)."""
        if self._heartbeat.silent([w], self._deadlines.started, self._ping) is None:
            return None
        return self._failed_result(w, self._heartbeat.reason())

    def _ping(self, w: int):
        return self._handles[w].ping.options(concurrency_group=HEALTH_GROUP).remote()

    def _collect(self, workers: list[int], get) -> None:
        """Moves finished actors from busy to ready with their results; raises their failures."""
        refs = [self._refs[w] for w in workers]
        try:
            results = get(refs)
        except self._RayError:
            results = None  # find which actor failed, below
        for i, w in enumerate(workers):
            self._complete(w, self._get_one(w) if results is None else results[i])

    def _complete(self, w: int, result: tuple) -> None:
        """Moves actor w from busy to ready with its result ``(block, infos, failure)``; raises its failure."""
        self._busy.remove(w)
        self._refs[w] = None
        block, infos, failure = result
        self._raise_failure(w, failure)
        self._blocks[w] = block
        self._worker_infos[w] = infos
        self._batches.completed(w)

    def _raise_failure(self, w: int, failure: Failure | None) -> None:
        if failure is not None:
            raise failure.step_error(w, self._env_range(w), self._origin(w))

    def _get_one(self, w: int):
        timeout = None
        if self.timeout is not None:
            timeout = max(0.0, self._deadlines.started[w] + self.timeout - time.monotonic())
        try:
            return self._data_path.get(w, self._refs[w], timeout, lambda: self._silent(w))
        except self._GetTimeoutError:
            return self._late(w)
        except self._RayActorError as exc:
            return self._failed_result(w, "died", detail=f"\n{exc}")
        except self._RayError as exc:
            # The actor lives but Ray could not deliver its result (e.g. infos that do not pickle).
            raise EnvError(
                f"worker {w} (envs {self._env_range(w)}): Ray could not return its result: "
                f"{type(exc).__name__}: {exc}\nCall reset() before stepping again."
            ) from exc

    def _drain(self) -> None:
        while self._busy:
            w = self._busy[0]
            failure = self._get_one(w)[2]
            self._busy.remove(w)
            self._refs[w] = None
            self._raise_failure(w, failure)

    def _late(self, w: int) -> tuple:
        return self._failed_result(w, self._deadlines.reason(w))

    def _failed_result(self, w: int, reason: str, detail: str = "") -> tuple:
        """A dead or late actor's result (WorkerBackend._worker_failed): its replacement's reset
        stands in for the lost call's, as ``(block, infos, None)``."""
        infos = self._worker_failed(w, reason, detail)
        if self._elastic is not None:
            return self._lost_block, infos, None
        return self._blocks[w], infos, None

    def _worker_failed(self, w: int, reason: str, detail: str = "") -> list | None:
        if self._elastic is None:
            return super()._worker_failed(w, reason, detail)
        if self._order.closed:
            raise self._closed_while_waiting()
        return self._elastic.lose(w, f"{self._origin(w)} {reason}")
