"""``on_worker_failure="restart"``: what a replaced worker's rows and infos say (Multiprocessing, Ray).

A worker that died or missed its deadline is replaced; its envs are rebuilt and reset with
``restart_seed(seed, restarts)`` (shoal.seeding), where ``restarts`` counts that worker's
replacements. In the batch that would have held the lost step, its rows carry the first observation
of the new episode, reward 0, ``terminals`` False and ``truncations`` True (the old episode was cut
short; its last observation died with the worker, so ``final_observations`` are zeros there), and
``infos`` gain one ``{"worker_restart": {...}}`` entry that names the worker, its envs, the restart
count and the reason.
"""

from __future__ import annotations

from ...buffers import Buffers


def mark_restarted(buf: Buffers, rows: slice) -> None:
    """Rows ``rows`` of ``buf`` after the replacement worker reset its envs."""
    buf.rewards[rows] = 0
    buf.terminals[rows] = False
    buf.truncations[rows] = True
    buf.masks[rows] = True
    buf.final_observations[rows] = 0


def restart_info(worker: int, envs: range, restarts: int, reason: str) -> dict:
    """The infos entry that reports one replacement."""
    return {"worker_restart": {"worker": worker, "envs": list(envs), "restarts": restarts, "reason": reason}}
