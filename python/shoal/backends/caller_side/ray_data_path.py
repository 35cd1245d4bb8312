"""How a Ray vector's steps reach its actors and their results come back, at as little cost per step
as Ray allows; all of it Ray's own machinery.

Rows. Every row of the vector lives in one anonymous memory file of the caller (wire/shared_rows.py).
An actor that Ray runs on the caller's node maps it and steps its envs straight into the caller's
rows: its actions are already there, so a step carries no data, and its result is only its infos.
An actor elsewhere keeps rows of its own: it gets its actions with the call and returns its rows
whole, which the caller copies once into its buffers. A reset always returns the actor's rows whole
(a replacement's rows are marked on that copy, caller_side/restart.py).

Calls. Every actor's call is in flight at once. In full sync (every actor in every batch) a step goes
through one compiled graph per actor (``ray.dag``, compiled with ``experimental_compile``: the actor
waits on a shared-memory channel instead of taking a task, tens of microseconds instead of a round
trip through Ray's scheduler); one graph per actor, so one actor's failure or replacement leaves the
others' graphs as they are. Where Ray cannot compile a graph, and for the other batching modes (which
take whichever actors are ready first, through ``ray.wait``), steps are plain actor calls. A reset is
always a plain call: it comes after every step's result is read, so it cannot overtake one.

Changes of actors. A graph belongs to one actor handle: a step to a new handle (a replacement) tears
the old graph down and compiles one for the new actor, and asks the new actor whether it maps the
caller's rows. ``actors_changed()`` does the same on demand.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

import numpy as np
from gymnasium import spaces

from ...buffers import Buffers
from ..wire.shared_rows import RowsSpec, shared_rows

logger = logging.getLogger(__name__)

#: seconds an actor has to answer a question of the data path (is it alive, does it map the rows)
PROBE_S = 5.0
#: seconds between two looks at an actor whose graph result is out (liveness checks)
WAIT_SLICE_S = 1.0
#: how a worker's graph is marked after Ray refused to compile one: plain calls from then on
NO_GRAPH = "no graph"


class RayDataPath:
    """The rows, the per-actor graphs and the calls of one Ray vector."""

    def __init__(
        self,
        ray,
        observation_space: spaces.Box,
        action_space: spaces.Space,
        rows: int,
        num_workers: int,
        graphs: bool,
    ):
        self.ray = ray
        from ray.exceptions import GetTimeoutError, RayActorError, RayError

        self._GetTimeoutError, self._RayActorError, self._RayError = GetTimeoutError, RayActorError, RayError
        self._shared = shared_rows(observation_space, action_space, rows, ray.get_runtime_context().get_node_id())
        self.buf = (
            self._shared.buf if self._shared is not None else Buffers.allocate(observation_space, action_space, rows)
        )
        self.use_graphs = graphs and graphs_available()
        self._graphs: list = [None] * num_workers  # a compiled graph, NO_GRAPH, or None (none yet)
        self._handles: list = [None] * num_workers  # the actor each worker's graph and mode belong to
        self._maps_rows = [False] * num_workers

    @property
    def rows_spec(self) -> RowsSpec | None:
        """What each actor is told to find the caller's rows with (None: no shared rows here)."""
        return self._shared.spec if self._shared is not None else None

    def maps_rows(self, w: int) -> bool:
        """Whether worker w's actor steps its envs in the caller's rows (nothing to copy)."""
        return self._maps_rows[w]

    def actors_changed(self, workers=None, wait: bool = True) -> None:
        """Forgets what was known of the actors of ``workers`` (all if None): their graphs are torn
        down, and the next step asks each actor again whether it maps the caller's rows and compiles a
        graph for it. Call it when actors were replaced, or when calls in flight are to be forgotten
        (their steps end before this returns). ``wait=False``: the teardown runs in a thread of its own,
        for actors that are dead or stuck (Ray waits up to its teardown timeout for those)."""
        for w in range(len(self._graphs)) if workers is None else workers:
            self._drop_graph(w, wait)
            self._handles[w] = None

    def prepare(self, handles: list) -> None:
        """Learns which actors map the caller's rows and compiles their graphs now, at construction,
        so the first step does not pay for it (a compile takes a few hundred ms a graph)."""
        for w, handle in enumerate(handles):
            if self._adopt(w, handle) and self.use_graphs:
                self._graph(w, handle)

    def step(self, w: int, handle, actions: np.ndarray):
        """Starts worker w's step (its actions already in ``buf.actions``); returns what ``get`` takes."""
        if self._handles[w] is not handle and not self._adopt(w, handle):
            return handle.step.remote(actions)  # it did not answer: this call reports why
        payload = None if self._maps_rows[w] else actions
        if self.use_graphs:
            graph = self._graph(w, handle)
            if graph is not NO_GRAPH:
                return graph.execute(payload)
        return handle.step.remote(payload)

    def is_graph_ref(self, ref) -> bool:
        return ref is not None and not isinstance(ref, self.ray.ObjectRef)

    def get(self, w: int, ref, timeout: float | None, still_waiting=None):
        """The result of ``ref`` (a plain call's or a graph's), raising as ``ray.get`` does: a
        GetTimeoutError past ``timeout`` (None: as long as the actor lives), a RayActorError if the
        actor died, another RayError if Ray could not deliver the result. While a graph's result is
        out, ``still_waiting()`` is asked every WAIT_SLICE_S: a value other than None is returned
        instead of the result (the caller gave up on the actor: a liveness check failed)."""
        if not self.is_graph_ref(ref):
            return self.ray.get(ref, timeout=timeout)
        from ray.exceptions import RayChannelTimeoutError

        try:
            result, gave_up = wait_graph(ref, timeout, still_waiting, RayChannelTimeoutError)
            if gave_up:
                self._drop_graph(w, wait=False)
            return result
        except RayChannelTimeoutError as exc:
            self._drop_graph(w, wait=False)
            raise self._GetTimeoutError(f"worker {w}'s step took longer than {timeout} s") from exc
        except self._RayActorError:
            self._drop_graph(w, wait=False)
            raise
        except self._RayError as exc:
            # The graph broke: the actor died (Ray tears a graph down when one of its actors does),
            # or could not hand its result over. Asking the actor tells which.
            handle = self._handles[w]
            try:
                self.ray.get(handle.__ray_ready__.remote(), timeout=PROBE_S)
            except self._RayError:
                self._drop_graph(w, wait=False)
                raise  # a RayActorError if it died
            self._drop_graph(w)  # alive: its graph ends before another is compiled for it
            raise self._RayError(f"Ray's compiled graph could not deliver the result: {exc}") from exc

    def describe(self) -> list[str]:
        """Each worker's path, as it stands: graph or calls, the caller's rows or its own."""
        return [
            f"{'graph' if g not in (None, NO_GRAPH) else 'calls'}, {'shared rows' if m else 'rows copied'}"
            for g, m in zip(self._graphs, self._maps_rows)
        ]

    def close(self) -> None:
        """Tears down the graphs left (in the background: their actors are gone or stuck) and closes the
        caller's descriptor of the rows (arrays stay valid)."""
        self.actors_changed(wait=False)
        if self._shared is not None:
            self._shared.close()

    # -- inside ---------------------------------------------------------------------------------------

    def _adopt(self, w: int, handle) -> bool:
        """Takes ``handle`` as worker w's actor; False if it did not say whether it maps the caller's rows."""
        self._drop_graph(w, wait=False)  # the old actor is gone (a replacement)
        try:
            self._maps_rows[w] = bool(self.ray.get(handle.rows_shared.remote(), timeout=PROBE_S))
        except self._RayError:  # dead or not answering: the step's own call fails as it should
            self._maps_rows[w] = False
            return False
        self._handles[w] = handle
        return True

    def _graph(self, w: int, handle):
        if self._graphs[w] is None:
            self._graphs[w] = compile_step(handle)
        return self._graphs[w]

    def _drop_graph(self, w: int, wait: bool = True) -> None:
        graph, self._graphs[w] = self._graphs[w], None
        if graph in (None, NO_GRAPH):
            return
        if wait:
            teardown(graph)
        else:
            threading.Thread(target=teardown, args=(graph,), name="shoal-ray-graph-teardown", daemon=True).start()


def teardown(graph) -> None:
    with contextlib.suppress(Exception):  # an actor that died took its end of the graph with it
        graph.teardown()


def wait_graph(ref, timeout: float | None, still_waiting, timeout_error) -> tuple:
    """(result, False), or (what ``still_waiting()`` said, True): ``ref.get`` in slices of WAIT_SLICE_S, asking ``still_waiting()`` between them (see
    RayDataPath.get). A graph result can be read once only, so the slices wait through the graph's
    own wait (a Ray without it waits in one piece)."""
    until = getattr(getattr(ref, "_dag", None), "_execute_until", None)
    index = getattr(ref, "_execution_index", None)
    if until is None or index is None or still_waiting is None:
        return ref.get(timeout=-1 if timeout is None else timeout), False
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            until(
                index, getattr(ref, "_channel_index", None), WAIT_SLICE_S if left is None else min(WAIT_SLICE_S, left)
            )
            return ref.get(timeout=0), False  # read already: only handed over
        except timeout_error:
            if left is not None and left <= WAIT_SLICE_S:
                raise
        verdict = still_waiting()
        if verdict is not None:
            return verdict, True


def graphs_available() -> bool:
    try:
        from ray.dag import InputNode  # noqa: F401
    except ImportError:
        return False
    return True


def compile_step(handle):
    """A compiled graph that passes its input to ``handle.step`` and returns its result, or NO_GRAPH
    where Ray refuses (an older Ray, an actor it cannot compile for): that worker keeps plain calls."""
    try:
        from ray.dag import InputNode

        with InputNode() as actions:
            node = handle.step.bind(actions)
        return node.experimental_compile()
    except Exception as exc:
        logger.info("backend Ray: no compiled graph (%s: %s); plain actor calls instead", type(exc).__name__, exc)
        return NO_GRAPH
