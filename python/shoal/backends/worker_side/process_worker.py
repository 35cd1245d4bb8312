"""The worker side of the Multiprocessing backend: the layout of the shared block and the process
that serves commands over it (the hand-off protocol is described in backends/multiprocessing.py)."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import time
from dataclasses import dataclass

import numpy as np

from ...buffers import Buffers
from ..wire.blocks import block_buffers
from ..wire.info_tables import pack
from ..wire.messages import Failure
from .runner import EnvShape, python_slice

# state[w]: written BUSY by the caller when it dispatches, IDLE, INFOS or MESSAGE by the worker when done.
IDLE, BUSY, INFOS, MESSAGE = 0, 1, 2, 3
# command[w]: written by the caller before it posts command_sems[w].
STEP, RESET, CLOSE = 1, 2, 3

# Per-worker shared bytes for pickled infos (packed by info_tables); larger infos go through the worker's pipe.
MAILBOX_BYTES = 16384

# A worker that just finished keeps polling for its next command this long before it sleeps: long
# enough to cover the caller's turnaround between recv() and send(), short enough that idle workers
# cost nothing measurable.
WORKER_SPIN_S = 0.0005
# Sleeping worker: how often it checks that the caller is alive (orphans exit within this).
PARENT_CHECK_S = 1.0

sched_yield = getattr(os, "sched_yield", None) or (lambda: time.sleep(0))


@dataclass
class SharedBlock:
    """Views of the shared block: the buffers of every row plus the per-worker control arrays."""

    buf: Buffers
    state: np.ndarray  # uint8[num_workers]
    command: np.ndarray  # uint8[num_workers]
    seeds: np.ndarray  # uint64[num_workers], the seed of each worker's next reset
    mail_sizes: np.ndarray  # int64[num_workers], bytes in each worker's mailbox
    mailboxes: np.ndarray  # uint8[num_workers, MAILBOX_BYTES], pickled infos
    done_counts: np.ndarray  # uint64[num_workers], commands each worker process has completed


def carve(memory, shape: EnvShape, rows: int, num_workers: int) -> tuple[SharedBlock, int]:
    buf, carver = block_buffers(memory, shape.observation_space, shape.action_space, rows)
    shared = SharedBlock(
        buf,
        carver((num_workers,), np.uint8),
        carver((num_workers,), np.uint8),
        carver((num_workers,), np.uint64),
        carver((num_workers,), np.int64),
        carver((num_workers, MAILBOX_BYTES), np.uint8),
        carver((num_workers,), np.uint64),
    )
    return shared, carver.nbytes


def shared_views(mapping, shape: EnvShape, rows: int, num_workers: int) -> SharedBlock:
    """Every buffer of the vector over ``mapping`` (a wire.shared_mapping.SharedMapping)."""
    return carve(np.frombuffer(mapping.buffer, dtype=np.uint8), shape, rows, num_workers)[0]


@dataclass
class WorkerSpec:
    """Everything a worker needs besides the shared objects (picklable with the standard pickle)."""

    index: int
    rows_per_worker: int
    num_agents: int  # rows of the whole vector
    num_workers: int
    shape: EnvShape
    emulate: bool  # the creators return Gymnasium/PettingZoo envs, not PufferEnvs
    parent_pid: int
    worker_spin_s: float


def worker_main(spec: WorkerSpec, raw, payload, conn, command_sem, done_sem) -> None:
    """Entry point of a worker process: build the slice, then serve commands until CLOSE."""
    # Ctrl-C reaches the whole process group; the caller decides what happens to workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    w = spec.index
    start_ppid = os.getppid()
    try:
        envs = pickle.loads(payload) if isinstance(payload, bytes) else payload
        shared = shared_views(raw, spec.shape, spec.num_agents, spec.num_workers)
        first_row = w * spec.rows_per_worker
        runner = python_slice(
            envs, shared.buf.rows(first_row, first_row + spec.rows_per_worker), spec.emulate, spec.shape
        )
    except BaseException as exc:
        conn.send(("error", Failure.of(exc)))
        return
    conn.send(("ready", runner.internal_envs))

    state, command, seeds, done_counts = shared.state, shared.command, shared.seeds, shared.done_counts
    mailbox, mail_sizes = shared.mailboxes[w], shared.mail_sizes

    def wait_for_command() -> bool:
        if command_sem.acquire(False):
            return True
        deadline = time.perf_counter() + spec.worker_spin_s
        while time.perf_counter() < deadline:
            sched_yield()
            if command_sem.acquire(False):
                return True
        while not command_sem.acquire(True, PARENT_CHECK_S):
            if os.getppid() != start_ppid or not pid_alive(spec.parent_pid):
                return False  # orphaned: the caller died without closing us
        return True

    count = 0  # commands completed; pipe messages carry it so the caller can tell whose they are
    try:
        while wait_for_command():
            cmd = command[w]
            if cmd == CLOSE:
                break
            count += 1
            infos, failure = runner.serve(int(seeds[w]) if cmd == RESET else None)
            done_counts[w] = count
            if failure is None and not infos:
                state[w] = IDLE
                done_sem.release()
                continue
            if failure is None:
                try:
                    data = pickle.dumps(pack(infos), protocol=pickle.HIGHEST_PROTOCOL)
                except Exception as exc:
                    failure = Failure.of(exc, prefix="could not send infos to the caller: ")
                else:
                    if len(data) <= MAILBOX_BYTES:
                        mailbox[: len(data)] = np.frombuffer(data, dtype=np.uint8)
                        mail_sizes[w] = len(data)
                        state[w] = INFOS
                        done_sem.release()
                        continue
            state[w] = MESSAGE
            done_sem.release()
            try:
                conn.send(("error", count, failure) if failure is not None else ("infos", count, infos))
            except (BrokenPipeError, EOFError, OSError):
                break  # the caller is gone
    finally:
        # Every env is closed even if some fail; the failures go to the caller's close().
        failures = runner.close()
        if failures:
            with contextlib.suppress(BrokenPipeError, EOFError, OSError):  # the caller is gone
                conn.send(("closed", failures))
        conn.close()


def pid_alive(pid: int) -> bool:
    """Whether process pid exists (the worker's check that its caller still runs)."""
    if os.name == "posix":
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    import psutil

    return psutil.pid_exists(pid)
