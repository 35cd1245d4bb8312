"""Where a Ray actor's replacement goes: away from the nodes that failed.

A node where an actor died or went silent is kept out of replacements for ``QUARANTINE_S`` (Ray may
list a killed or frozen node as alive for tens of seconds, and would schedule onto it). A
replacement goes to an alive node outside that list with the CPUs it needs free, the least-failed
first, then the one with most free CPUs; an attempt that fails there marks that node too, and the
next attempt, after a back-off, goes elsewhere. The attempts end with a WorkerError that names the
nodes and their failures.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict

from .ray_placement import Node, node_table

QUARANTINE_S = 60.0
ATTEMPTS = 3  # replacement attempts per failure, each on another node
BACKOFF_S = (0.5, 1.0, 2.0)  # the wait before the second, third ... attempt
RELEASE_WAIT_S = 10.0  # how long a replacement waits for Ray to free a dead actor's CPUs before no room is an error


class NodeHistory:
    """When actors failed on each node (monotonic times)."""

    def __init__(self, quarantine_s: float = QUARANTINE_S):
        self.quarantine_s = quarantine_s
        self.failures: dict[str, list[float]] = defaultdict(list)

    def failed(self, node_id: str | None) -> None:
        if node_id:
            self.failures[node_id].append(time.monotonic())

    def recent(self, node_id: str) -> bool:
        times = self.failures.get(node_id, ())
        return bool(times) and time.monotonic() - times[-1] < self.quarantine_s

    def count(self, node_id: str) -> int:
        return len(self.failures.get(node_id, ()))

    def describe(self) -> str:
        return ", ".join(f"{node[:12]}: {len(times)}" for node, times in self.failures.items()) or "none"


def replacement_node(nodes: list[Node], history: NodeHistory, cpus: float, answers=None) -> Node | None:
    """The alive node a replacement needing ``cpus`` should go to, or None if none has room. A node
    that failed recently is taken only when no other has room and it answers a probe (``answers(node_id)``):
    an actor whose process died on a healthy node (a crashing env, a single-node cluster) is replaced
    there, one on a killed or frozen node is not."""
    roomy = sorted(
        (n for n in nodes if n.free_cpus + 1e-9 >= cpus), key=lambda n: (history.count(n.node_id), -n.free_cpus)
    )
    healthy = [n for n in roomy if not history.recent(n.node_id)]
    if healthy:
        return healthy[0]
    if answers is not None:
        return next((n for n in roomy if answers(n.node_id)), None)
    return None


PROBE_S = 5.0  # how long a recently failed node has to run a no-op task before it is passed over


def _alive() -> bool:
    return True


_probes: dict = {}


def node_answers(ray, node_id: str, timeout: float = PROBE_S) -> bool:
    """Whether the node runs a no-op task within ``timeout`` (a killed raylet or a frozen node does not)."""
    from .ray_placement import node_strategy

    if "probe" not in _probes:
        _probes["probe"] = ray.remote(num_cpus=0, max_retries=0)(_alive)
    ref = _probes["probe"].options(scheduling_strategy=node_strategy(node_id)).remote()
    try:
        return bool(ray.get(ref, timeout=timeout))
    except Exception:  # any failure to answer is a no
        with contextlib.suppress(Exception):
            ray.cancel(ref, force=True)
        return False


def no_room(w: int, cpus: float, nodes: list[Node], history: NodeHistory) -> str:
    return (
        f"no healthy node has {cpus:g} free CPU(s) for worker {w}'s replacement (nodes where an actor "
        f"failed in the last {history.quarantine_s:g} s are avoided unless they answer a probe; failures per "
        f"node: {history.describe()}):\n"
        f"{node_table(nodes)}"
    )


# A call in flight this long gets a liveness check; an actor that does not answer one within
# HEARTBEAT_LIMIT_S is lost (a frozen node answers nothing; Ray itself notices it only after ~60 s).
HEARTBEAT_AFTER_S = 1.0
HEARTBEAT_LIMIT_S = 5.0


class Heartbeat:
    """Liveness checks of actors whose call has been in flight a while (``ping`` on the actor's own
    health thread, so a long step still answers)."""

    def __init__(self, ray, limit_s: float = HEARTBEAT_LIMIT_S):
        from ray.exceptions import RayError

        self.ray, self._RayError = ray, RayError
        self.limit_s = limit_s
        self.pings: dict[int, tuple[object, float]] = {}  # worker -> (its pending ping, when sent)
        self.last_reason = ""

    def silent(self, busy, started: list[float], ping) -> int | None:
        """The first worker of ``busy`` whose ping went unanswered for ``limit_s``; pings those in
        flight for HEARTBEAT_AFTER_S that have none pending (``ping(w)`` sends one)."""
        now = time.monotonic()
        for w in list(self.pings):
            if w not in busy:
                del self.pings[w]
        for w in busy:
            if w in self.pings:
                ref, sent = self.pings[w]
                if self.ray.wait([ref], timeout=0)[0]:
                    del self.pings[w]  # answered: the next one after another period
                    try:
                        self.ray.get(ref, timeout=0)
                    except self._RayError as exc:  # dead or unreachable: Ray may say so before the step's call does
                        self.last_reason = f"failed a liveness check: {type(exc).__name__}: {str(exc).splitlines()[0]}"
                        return w
                elif now - sent >= self.limit_s:
                    del self.pings[w]
                    self.last_reason = f"did not answer a liveness check within {self.limit_s:g} s (its node may be frozen or unreachable)"
                    return w
            elif now - started[w] >= HEARTBEAT_AFTER_S:
                self.pings[w] = (ping(w), now)
        return None

    def reason(self) -> str:
        """Why the worker ``silent`` returned last is lost."""
        return self.last_reason
