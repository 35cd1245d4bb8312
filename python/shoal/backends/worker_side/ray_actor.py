"""The actor side of the Ray backend: one actor hosts a slice of envs over one byte block of their rows,
returned to the caller whole after each step or reset."""

from __future__ import annotations

import os
import pickle
import socket
import sys

import numpy as np

from ..wire.blocks import block_buffers, block_size
from ..wire.messages import Failure
from .runner import EnvShape, native_slice, python_slice


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
    ):
        self.runner = None
        self.failure: Failure | None = None
        # Creators defined in the caller's own modules (scripts, tests) are pickled by reference:
        # make the caller's import path visible before unpickling them. On other machines those
        # modules must be installed (or shipped with Ray's runtime_env).
        sys.path.extend(p for p in caller_path if p not in sys.path)
        try:
            envs = pickle.loads(payload)
            self.block = np.zeros(max(block_size(shape.observation_space, shape.action_space, rows), 1), dtype=np.uint8)
            self.buf = block_buffers(self.block, shape.observation_space, shape.action_space, rows)[0]
            self.buf.masks[:] = True
            if native:
                # One native vector for the whole slice: its pool threads step it inside this actor.
                self.runner = native_slice(envs, self.buf, num_threads)
            else:
                self.runner = python_slice(envs, self.buf, emulate, shape)
        except Exception as exc:
            self.failure = Failure.of(exc)

    def ready(self) -> tuple:
        """(pid, host name, internal env count, construction failure or None)."""
        count = self.runner.internal_envs if self.runner is not None else 0
        return os.getpid(), socket.gethostname(), count, self.failure

    def reset(self, seed: int) -> tuple:
        return self._result(*self.runner.serve(seed))

    def step(self, actions: np.ndarray) -> tuple:
        np.copyto(self.buf.actions, actions, casting="unsafe")
        return self._result(*self.runner.serve(None))

    def _result(self, infos: list, failure: Failure | None) -> tuple:
        return (None if failure is not None else self.block), infos, failure

    def close(self) -> list[str]:
        """Closes every env, even if some fail; returns the failures (the actor is killed next)."""
        runner, self.runner = self.runner, None
        return runner.close() if runner is not None else []


_actor_classes: dict = {}


def actor_class(ray):
    """EnvHost as a Ray actor class (made once per process)."""
    if "host" not in _actor_classes:
        _actor_classes["host"] = ray.remote(EnvHost)
    return _actor_classes["host"]
