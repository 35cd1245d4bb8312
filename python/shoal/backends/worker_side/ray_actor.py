"""The actor side of the Ray backend: one actor hosts a slice of envs over one byte block of their rows,
returned to the caller whole after each step or reset; or, on the caller's node, over the caller's own
rows (wire/shared_rows.py), where a step returns only its infos."""

from __future__ import annotations

import contextlib
import os
import pickle
import socket
import sys

import numpy as np

from ..wire.blocks import block_buffers, block_size
from ..wire.messages import Failure
from ..wire.shared_rows import RowsSpec, attach
from ..wire.step_rows import StepRows
from .runner import EnvShape, native_slice, python_slice

ROW_FIELDS = ("observations", "final_observations", "rewards", "terminals", "truncations", "masks")


class EnvHost:
    """Body of one Ray actor: a slice of envs over one byte block of their rows.

    Methods never raise for env failures: they return ``(block, infos, failure)`` with a
    :class:`Failure` naming the env, so the caller can report it.
    """

    def __init__(
        self,
        payload: bytes,
        caller_path: list[str],
        native: bool,
        num_threads: int,
        shape: EnvShape,
        emulate: bool,
        rows: int,
        rows_spec: RowsSpec | None = None,
        first_row: int = 0,
    ):
        self.runner = None
        self.shared = False  # steps in the caller's rows (wire/shared_rows.py), not in self.block
        self.failure: Failure | None = None
        # Creators defined in the caller's own modules (scripts, tests) are pickled by reference:
        # make the caller's import path visible before unpickling them. On other machines those
        # modules must be installed (or shipped with Ray's runtime_env).
        sys.path.extend(p for p in caller_path if p not in sys.path)
        numpy_only_channels()
        try:
            envs = pickle.loads(payload)
            self.block = np.zeros(max(block_size(shape.observation_space, shape.action_space, rows), 1), dtype=np.uint8)
            self.own = self.buf = block_buffers(self.block, shape.observation_space, shape.action_space, rows)[0]
            self.buf.masks[:] = True
            caller_rows = attach(rows_spec, _node_id(), shape.observation_space, shape.action_space, first_row, rows)
            if caller_rows is not None:
                self.buf, self.shared = caller_rows, True
            if native:
                # One native vector for the whole slice: its pool threads step it inside this actor.
                self.runner = native_slice(envs, self.buf, num_threads)
            else:
                self.runner = python_slice(envs, self.buf, emulate, shape)
        except Exception as exc:
            self.failure = Failure.of(exc)

    def ready(self) -> tuple:
        """(pid, host name, internal env count, construction failure or None, Ray node id)."""
        import ray  # in the actor, where Ray is running

        count = self.runner.internal_envs if self.runner is not None else 0
        return os.getpid(), socket.gethostname(), count, self.failure, ray.get_runtime_context().get_node_id()

    def ping(self) -> bool:
        """The caller's liveness check, answered on the actor's "health" thread while a step runs."""
        return True

    def rows_shared(self) -> bool:
        """Whether this actor steps its envs in the caller's rows (then a step returns no rows)."""
        return self.shared

    def reset(self, seed: int) -> tuple:
        """Resets the slice; returns its rows whole (a copy of them where they are the caller's)."""
        infos, failure = self.runner.serve(seed)
        if self.shared and failure is None:
            for name in ROW_FIELDS:
                np.copyto(getattr(self.own, name), getattr(self.buf, name))
        return (None if failure is not None else self.block), infos, failure

    def step(self, actions: np.ndarray | None) -> tuple:
        """Steps the slice with ``actions`` (None: they are in the caller's rows already); returns
        its outputs (wire/step_rows.py), or None where its rows are the caller's."""
        if actions is not None:
            np.copyto(self.buf.actions, actions, casting="unsafe")
        infos, failure = self.runner.serve(None)
        return (None if failure is not None or self.shared else StepRows.of(self.buf)), infos, failure

    def close(self) -> list[str]:
        """Closes every env, even if some fail; returns the failures (the actor is killed next)."""
        runner, self.runner = self.runner, None
        return runner.close() if runner is not None else []


def numpy_only_channels() -> None:
    """Ray's compiled-graph channels ask whether torch is there by importing it, in the actor, at the
    first step (seconds, and hundreds of MB, per actor); this actor hands them numpy arrays and plain
    Python objects, which they carry without torch, so it tells them there is none."""
    with contextlib.suppress(Exception):  # a Ray without compiled graphs, or with other internals
        from ray.experimental.channel.common import ChannelContext

        ChannelContext.get_current()._torch_available = False


def _node_id() -> str:
    import ray  # in the actor, where Ray is running

    return ray.get_runtime_context().get_node_id()


_actor_classes: dict = {}
HEALTH_GROUP = "health"


def actor_class(ray):
    """EnvHost as a Ray actor class (made once per process)."""
    if "host" not in _actor_classes:
        # A second concurrency group, one thread: ping() answers while the default group's one
        # thread steps the envs (calls of the default group still run one at a time, in order).
        _actor_classes["host"] = ray.remote(concurrency_groups={HEALTH_GROUP: 1})(EnvHost)
    return _actor_classes["host"]
