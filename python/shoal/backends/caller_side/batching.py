"""Which workers' results form the next batch: the batching modes of PufferLib 3.0's
Multiprocessing, shared by the Multiprocessing and Ray backends."""

from __future__ import annotations


class BatchSelector:
    """Tracks completed workers and picks batches of ``workers_per_batch`` of them.

    Modes: every worker (full sync); ``sync_traj`` (workers in dispatch order); one worker (the
    first completed); ``zero_copy`` (the first aligned block of workers, all completed, so the batch
    is a contiguous slice); otherwise the first completed workers (copied into a batch buffer).
    """

    def __init__(self, num_workers: int, workers_per_batch: int, zero_copy: bool, sync_traj: bool):
        self.num_workers = num_workers
        self.workers_per_batch = workers_per_batch
        self.zero_copy = zero_copy
        self.sync_traj = sync_traj
        self.clear()

    def clear(self) -> None:
        self.ready: list[int] = []  # completed, not returned yet (order of discovery)
        self.is_ready = [False] * self.num_workers
        self.pending: list[int] = []  # dispatched, not returned yet (dispatch order; sync_traj)

    def dispatched(self, w: int) -> None:
        if self.sync_traj:
            self.pending.append(w)

    def completed(self, w: int) -> None:
        self.ready.append(w)
        self.is_ready[w] = True

    @property
    def missing(self) -> int:
        """Completions still needed before a batch can possibly be formed."""
        return max(0, self.workers_per_batch - len(self.ready))

    def select(self) -> list[int] | None:
        """The next batch (worker indices), or None if none is complete yet."""
        wpb, ready = self.workers_per_batch, self.ready
        if len(ready) < wpb:
            return None
        if wpb == self.num_workers:
            batch = list(range(wpb))
        elif self.sync_traj:
            batch = self.pending[:wpb]
            if not all(self.is_ready[w] for w in batch):
                return None
            del self.pending[:wpb]
        elif wpb == 1:
            batch = [ready[0]]
        elif self.zero_copy:
            for w in ready:
                first = w - w % wpb
                if all(self.is_ready[first : first + wpb]):
                    batch = list(range(first, first + wpb))
                    break
            else:
                return None
        else:
            batch = ready[:wpb]
        if wpb == self.num_workers:
            ready.clear()
            self.pending.clear()
        else:
            chosen = set(batch)
            self.ready = [w for w in ready if w not in chosen]
        for w in batch:
            self.is_ready[w] = False
        return batch


def take_infos(worker_infos: list[list], batch: list[int]) -> list:
    """The infos the batch's workers reported since they were last returned, emptying their slots."""
    infos = []
    for w in batch:
        if worker_infos[w]:
            infos.extend(worker_infos[w])
            worker_infos[w] = []
    return infos
