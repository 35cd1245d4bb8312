"""TorchVector: any shoal vector, with batches handed to a trainer as torch tensors on its device.

On a CUDA device each batch of the host buffers (page-locked: see pinned.py) is copied asynchronously
on the trainer's current stream, as ``tensor.to(device, non_blocking=True)`` would be: recv() returns
without waiting for the copy, the policy's kernels run after it, and the copy runs after the work the
trainer queued before (which may still read the previous batch of those tensors). A trainer that wants
the copies on a stream of its choosing calls recv() under ``torch.cuda.stream(...)``. Actions come back
the other way into a page-locked host array; while that copy waits for the policy, send() steps envs of
the buffer in flight on the caller's thread (a pipelined Multithreading vector), so the caller's core
works for the envs instead of spinning; then it sends the actions on. Events tell the host when the
copies are done, before the envs write the host buffers again. Nothing is allocated per step: each
batch view of the host buffers gets its device tensors once, at first sight.

The copies and events go through the CUDA driver (shoal._native.CudaCopier, _DriverCopies): a batch's
copies are one native call where torch would take three dispatches, on the thread that also drives the
policy. Where the driver cannot be loaded (ROCm's torch, say), or with ``SHOAL_CUDA_COPIES=torch``, the
same protocol runs on torch's copy_() and events (_CudaCopies).

On the CPU the tensors are the host buffers themselves (``torch.from_numpy``), without a copy.

The values are the numpy path's, bit for bit: only the memory differs.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from .. import _native
from ..backends.base import VecEnv
from ..errors import APIUsageError
from ..optional import optional_module
from ..spaces import action_dtype, action_shape
from .actions import DtypeRule, plain
from .pinned import PinnedRegistry

_VIEWS_KEPT = 64  # host batch views remembered by identity (backends reuse a few per vector)

# The vector API attributes a TorchVector passes through unchanged.
_FORWARDED = (
    "single_observation_space",
    "single_action_space",
    "observation_space",
    "action_space",
    "num_envs",
    "num_agents",
    "agents_per_batch",
    "driver_env",
    "emulated",
)


def require_torch():
    """The torch module, or an APIUsageError naming the extra that installs it."""
    torch = optional_module("torch")
    if torch is None:
        raise APIUsageError(
            "device=... hands batches over as torch tensors and needs PyTorch: pip install torch (any build for "
            "your accelerator; on a machine without a GPU the CPU build: pip install torch --index-url "
            "https://download.pytorch.org/whl/cpu)"
        )
    return torch


class _Batch:
    """The tensors of one batch view of a vector's buffers (observations, rewards, terminals,
    truncations, agent ids, masks): zero-copy host tensors and, for a GPU, their device tensors.

    On a GPU the per-row columns (rewards, terminals, truncations, masks: 7 bytes a row) travel in one
    copy: gathered on the host into one page-locked staging array, split on the device by views."""

    def __init__(self, torch, arrays: tuple, copies=None, constant_ids: bool = False):
        self.arrays = arrays  # kept: the identity check in recv() relies on these staying alive
        self.hosts = tuple(torch.from_numpy(a) for a in arrays)
        if copies is None:
            return
        observations, rewards, terminals, truncations, agent_ids, masks = arrays
        copies.pin(observations)
        copies.pin(agent_ids)
        rows = len(rewards)
        self.device_observations = copies.empty_on_device(self.hosts[0].shape, self.hosts[0].dtype)
        self.device_agent_ids = copies.empty_on_device(self.hosts[4].shape, self.hosts[4].dtype)
        self.stage = copies.empty_pinned((7 * rows,), torch.uint8)
        stage = self.stage.numpy()
        self.stage_columns = (
            (stage[: 4 * rows].view(np.float32), rewards),
            (stage[4 * rows : 5 * rows].view(np.bool_), terminals),
            (stage[5 * rows : 6 * rows].view(np.bool_), truncations),
            (stage[6 * rows :].view(np.bool_), masks),
        )
        self.device_stage = copies.empty_on_device((7 * rows,), torch.uint8)
        self.upload_plan = None  # the driver's copies of this batch, made at its first upload (_DriverCopies)
        self.constant_ids = constant_ids  # then they travel once, at the batch's first upload
        self.ids_on_device = False
        d = self.device_stage
        self.device_tensors = (
            self.device_observations,
            d[: 4 * rows].view(torch.float32),
            d[4 * rows : 5 * rows].view(torch.bool),
            d[5 * rows : 6 * rows].view(torch.bool),
            self.device_agent_ids,
            d[6 * rows :].view(torch.bool),
        )

    def holds(self, rewards, terminals, truncations, agent_ids, masks) -> bool:
        """True when a batch with these observations has these other arrays too (backends reuse views)."""
        a = self.arrays
        return a[1] is rewards and a[2] is terminals and a[3] is truncations and a[4] is agent_ids and a[5] is masks

    def gather(self) -> None:
        """The per-row columns into the staging array (before its copy to the device)."""
        for staged, column in self.stage_columns:
            np.copyto(staged, column)


class TorchVector:
    """``vecenv`` (any shoal vector) whose batches arrive as torch tensors on ``device``.

    ``recv()`` returns (observations, rewards, terminals, truncations, infos, agent_ids, masks) with
    every array a tensor on ``device`` (infos stay a list of dicts); ``send(actions)`` takes a tensor
    on any device (or a numpy array): int32/int64 for Discrete and MultiDiscrete spaces, float for Box
    (bfloat16 and float16 too: sent as float32), of shape (agents_per_batch, *action shape); sparse
    tensors and lazily negated or conjugated views are made plain first (handoff/actions.py). ``reset``/``step`` are the synchronous pair, as on
    every vector. ``final_observations`` is the last batch's, on ``device``: copied when read, into a
    tensor kept for that batch (like the batch's own, overwritten by the next read of that batch).

    The call order, the errors and the closing are the wrapped vector's: a TorchVector adds no state
    of its own beyond its device memory. Use the same pipelining options as for numpy (for example
    ``num_envs=2 * N, batch_size=N`` with Multithreading: the envs of one batch step while the policy
    runs on the other, and the policy still sees N rows per call).
    """

    def __init__(self, vecenv, device):
        torch = require_torch()
        self._torch = torch
        self._tensor = torch.Tensor
        try:
            self.device = torch.device(device)
        except (RuntimeError, TypeError) as error:
            raise APIUsageError(f"device={device!r} is not a torch device: {error}") from None
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise APIUsageError(f"device={device!r}: torch {torch.__version__} sees no CUDA device")
            if self.device.index is None:
                self.device = torch.device("cuda", torch.cuda.current_device())
            # A pipelined vector takes the caller's help while it waits for the GPU.
            self._copies = cuda_copies(torch, self.device, getattr(vecenv, "step_while_waiting", None))
        elif self.device.type == "cpu":
            self._copies = None
        else:
            raise APIUsageError(f"device={device!r}: shoal hands batches to 'cpu' or 'cuda' devices")
        self.vecenv = vecenv
        for name in _FORWARDED:
            setattr(self, name, getattr(vecenv, name))
        space = vecenv.single_action_space
        self._action_shape = (vecenv.agents_per_batch, *action_shape(space))
        self._action_dtypes = DtypeRule(torch, space, action_dtype(space))
        self._batches: dict[int, _Batch] = {}  # id(host observations) -> the batch's tensors
        self._constant_ids = bool(getattr(vecenv, "constant_agent_ids", False))
        self._received = False  # final_observations exist once a batch has arrived

    # -- the vector API ------------------------------------------------------------------------------

    def async_reset(self, seed: int | None = None) -> None:
        self._settle()
        self.vecenv.async_reset(seed)

    # recv and send sit on the trainer's critical path (between the policy's calls): each costs a few
    # attribute reads and no torch call beyond the one that reads the actions.

    def recv(self):
        observations, rewards, terminals, truncations, infos, agent_ids, masks = self.vecenv.recv()
        self._received = True
        batch = self._batches.get(id(observations))
        if batch is None or not batch.holds(rewards, terminals, truncations, agent_ids, masks):
            batch = self._new_batch((observations, rewards, terminals, truncations, agent_ids, masks))
        t = batch.hosts if self._copies is None else self._copies.to_device(batch)
        return t[0], t[1], t[2], t[3], infos, t[4], t[5]

    def send(self, actions) -> None:
        if self._copies is None and type(actions) is self._tensor:
            try:  # a plain CPU tensor outside autograd, of the dtype it travels as: a view of its memory
                if self._action_dtypes.travel_dtype(actions.dtype) is not actions.dtype:
                    raise TypeError("converted as on CUDA")
                actions = actions.numpy()
            except (RuntimeError, TypeError):  # else (grad, another device, float64, sparse, ...) converted
                actions = self._host_actions(actions)
            self.vecenv.send(actions)  # the wrapped vector checks it as it checks numpy actions
            return
        host_actions = self._host_actions(actions)
        self._settle()
        self.vecenv.send(host_actions)

    def _settle(self) -> None:
        """Before the envs write their buffers again: the copies out of them are done (at once when
        the actions came from the device, which orders them after those copies)."""
        if self._copies is not None:
            self._copies.settle()

    # The synchronous pair over the asynchronous API, as on every vector.
    reset = VecEnv.reset
    step = VecEnv.step

    @property
    def final_observations(self):
        """The observations that ended each row's episode in the last batch (valid where it ended):
        read when asked for (the wrapped vector's attribute names the last batch's rows), not on
        every recv()."""
        host = getattr(self.vecenv, "final_observations", None) if self._received else None
        if host is None:
            raise APIUsageError("final_observations: no batch received yet")
        if self._copies is None:
            return self._torch.from_numpy(np.ascontiguousarray(host))
        return self._copies.final_to_device(host)

    @property
    def closed(self) -> bool:
        return self.vecenv.closed

    def close(self) -> None:
        """Finishes the copies in flight, unlocks the host pages, then closes the vector."""
        try:
            if self._copies is not None:
                self._copies.release()
        finally:
            self.vecenv.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __getattr__(self, name: str):
        # Backend extras (pool_stats, max_num_threads, ...) are the wrapped vector's.
        if name == "vecenv":
            raise AttributeError(name)
        return getattr(self.vecenv, name)

    # -- the hand-off ----------------------------------------------------------------------------

    def _new_batch(self, arrays: tuple):
        """The tensors of a batch of host arrays, made once per batch view the backend hands out."""
        if len(self._batches) >= _VIEWS_KEPT:
            self._batches.clear()
        batch = _Batch(self._torch, arrays, self._copies, self._constant_ids)
        self._batches[id(arrays[0])] = batch
        return batch

    def _host_actions(self, actions):
        torch = self._torch
        if not isinstance(actions, torch.Tensor):
            return actions  # numpy (or a list): the wrapped vector checks and converts it
        if tuple(actions.shape) != self._action_shape:
            raise APIUsageError(
                f"actions of shape {tuple(actions.shape)}; this vector takes {self._action_shape} "
                f"(agents_per_batch={self.agents_per_batch} rows of {self.single_action_space})"
            )
        actions = plain(torch, actions)
        target = self._action_dtypes.travel_dtype(actions.dtype)
        copies = self._copies
        if copies is not None and copies.on_device(actions):
            return copies.to_host(actions, target)
        if actions.device.type == "cpu":
            return actions.detach().to(target).numpy()
        raise APIUsageError(f"actions on {actions.device}; this vector hands batches to {self.device}")


class _CudaCopies:
    """The CUDA side: page-locked hosts, asynchronous copies on the trainer's current stream, and the
    events the host waits on before it reuses a host buffer.

    Why not a stream of shoal's own: its copies into a batch's device tensors would have to wait for
    the trainer's queued work anyway (it may still read them), and the trainer waits for the actions
    every step, so a second stream overlaps nothing. It would cost the caller's thread two
    cross-stream event waits and a stream switch per call: about 26 torch calls a step on the critical
    path where these take about 10 (and the GPU a cross-stream dependency each way).

    Its device primitives (new_event ... download) are torch's; _DriverCopies replaces the copies and
    events by the CUDA driver's, and the tests by a simulated device's."""

    def __init__(self, torch, device, step_while_waiting=None):
        self._torch = torch
        self.device = device
        self.step_while_waiting = step_while_waiting  # the vector's, where it steps in the background
        self._copied = self.new_event()  # the last batch's copies to the device
        self._final_copied = self.new_event()  # the last copy of final observations read
        self._final_pending = False  # final observations copied since the host buffers were last settled
        self._actions_copied = self.new_event()  # the last actions' copy to the host
        self._pinned = PinnedRegistry(self.cudart(), self.idle)
        self._actions = {}  # (dtype, shape) -> (device staging tensor, page-locked host tensor, its numpy view)
        self._finals = {}  # (address, shape, dtype) of a host buffer -> (its device tensor, its host tensor)

    # -- the device primitives (one place, so that a test can run this protocol on a simulated stream) --

    def new_event(self):
        with self._torch.cuda.device(self.device):
            return self._torch.cuda.Event()

    def cudart(self):
        return self._torch.cuda.cudart()

    def empty_on_device(self, shape, dtype):
        return self._torch.empty(shape, dtype=dtype, device=self.device)

    def empty_pinned(self, shape, dtype):
        return self._torch.empty(shape, dtype=dtype, pin_memory=True)

    def on_device(self, tensor) -> bool:
        return tensor.device == self.device

    @staticmethod
    def copy_async(destination, source) -> None:
        """Queued on the current stream of the CUDA tensor's device; the host goes on at once."""
        destination.copy_(source, non_blocking=True)

    def record(self, event) -> None:
        """``event`` marks the work queued so far on the trainer's current stream."""
        event.record(self._torch.cuda.current_stream(self.device))

    def idle(self) -> None:
        """Until no work of the device (copies from the host pages included) is left."""
        self._torch.cuda.synchronize(self.device)

    def copy_once(self, host):
        """A fresh device copy of ``host`` (a tensor of pageable memory: synchronous for the host)."""
        return host.to(self.device)

    def upload(self, batch) -> None:
        """Queues a batch's copies to its device tensors (its small columns gathered first)."""
        batch.gather()
        hosts = batch.hosts
        copy = self.copy_async
        copy(batch.device_observations, hosts[0])
        copy(batch.device_stage, batch.stage)
        if not batch.ids_on_device:
            copy(batch.device_agent_ids, hosts[4])
            batch.ids_on_device = batch.constant_ids

    def upload_one(self, device_tensor, host_tensor) -> None:
        self.copy_async(device_tensor, host_tensor)

    def download(self, host_tensor, device_tensor) -> None:
        """Queues the copy of a contiguous device tensor into a page-locked host tensor of its size."""
        self.copy_async(host_tensor, device_tensor)

    # -- the protocol -----------------------------------------------------------------------------

    def pin(self, array: np.ndarray) -> None:
        self._pinned.pin(array)

    def to_device(self, batch) -> tuple:
        self.upload(batch)
        self.record(self._copied)
        return batch.device_tensors

    def to_host(self, actions, target) -> np.ndarray:
        """``actions`` (on the device, plain: see actions.py) in a page-locked host array of torch dtype
        ``target``, once the copy is done; a conversion to ``target`` (a Box space's float32) runs on the
        device, as numpy rounds. Other dtypes travel as they are, so the vector checks their values
        exactly as it checks numpy's."""
        key = (target, tuple(actions.shape))
        staging = self._actions.get(key)
        if staging is None:
            device_actions = self.empty_on_device(actions.shape, target)
            host_actions = self.empty_pinned(actions.shape, target)
            staging = self._actions[key] = (device_actions, host_actions, host_actions.numpy())
        device_actions, host_actions, host_array = staging
        if actions.requires_grad:
            actions = actions.detach()
        if actions.dtype != target or not actions.is_contiguous():
            self.copy_async(device_actions, actions)  # on the device, after the policy
            actions = device_actions
        self.download(host_actions, actions)
        self.record(self._actions_copied)
        # While the GPU finishes the policy, this thread steps envs of the other buffer rather than
        # wait idle. Once none are left to step, no env wants its core and it waits on the event.
        if self.step_while_waiting is not None:
            self.step_while_waiting(self._actions_copied.query)
        self._actions_copied.synchronize()
        return host_array

    def final_to_device(self, host: np.ndarray):
        """The final observations of the last batch (``host``, a buffer of the vector), copied as the
        batch is: asynchronously, into a device tensor kept for that buffer (overwritten by its next read)."""
        key = (address(host), host.shape, host.dtype.str)
        entry = self._finals.get(key)
        if entry is None:
            if not host.flags.c_contiguous or len(self._finals) >= _VIEWS_KEPT:
                # not a buffer of the vector's own (or one too many): a one-off copy
                return self.copy_once(self._torch.from_numpy(np.ascontiguousarray(host)))
            self.pin(host)
            source = self._torch.from_numpy(host)  # keeps the buffer, so no other takes its address
            entry = self._finals[key] = (self.empty_on_device(source.shape, source.dtype), source)
        device_tensor, source = entry
        self.upload_one(device_tensor, source)
        self.record(self._final_copied)
        self._final_pending = True
        return device_tensor

    def settle(self) -> None:
        """The copies out of the host buffers are done (at once after actions copied on the same stream)."""
        self._copied.synchronize()
        if self._final_pending:
            self._final_copied.synchronize()
            self._final_pending = False

    def release(self) -> None:
        self.idle()
        self._pinned.release()


class _DriverCopies(_CudaCopies):
    """The same protocol with the copies and events through the CUDA driver (shoal._native.CudaCopier)
    instead of torch: a batch's gather and three copies are one native call, an event's record, query
    or wait another. On the thread that drives the policy every torch call costs a dispatch (10-20 µs on
    a GPU server's CPU); recv() and send() make none of their own here beyond reading the actions'
    attributes. Tensors are still allocated by torch (its caching allocator and pinned memory)."""

    def __init__(self, torch, device, step_while_waiting, copier):
        self._copier = copier
        raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what torch.compile's code calls
        index = device.index
        if raw_stream is None:
            self.stream = lambda: torch.cuda.current_stream(index).cuda_stream
        else:
            self.stream = lambda: raw_stream(index)
        super().__init__(torch, device, step_while_waiting)

    def new_event(self):
        return self._copier.new_event()

    def record(self, event) -> None:
        event.record(self.stream())

    def idle(self) -> None:
        self._copier.synchronize_device()

    def upload(self, batch) -> None:
        plan = batch.upload_plan
        if plan is None:
            plan = batch.upload_plan = self._upload_plan(batch)
        if plan is False:  # a batch of strided host arrays: torch copies those (on the same stream)
            super().upload(batch)
            return
        self._copier.upload(plan, self.stream())
        if batch.constant_ids and not batch.ids_on_device:
            self.upload_one(batch.device_agent_ids, batch.hosts[4])
            batch.ids_on_device = True

    def _upload_plan(self, batch):
        """The native plan of a batch's upload, or False where its host arrays are not contiguous."""
        observations, _, _, _, agent_ids, _ = batch.arrays
        staged = batch.stage_columns
        if not (observations.flags.c_contiguous and agent_ids.flags.c_contiguous) or not all(
            column.flags.c_contiguous and column.dtype == stage.dtype for stage, column in staged
        ):
            return False
        gathers = [(address(stage), address(column), stage.nbytes) for stage, column in staged]
        uploads = [
            (batch.device_observations.data_ptr(), address(observations), observations.nbytes),
            (batch.device_stage.data_ptr(), batch.stage.data_ptr(), batch.stage.numel()),
        ]
        if not batch.constant_ids:
            uploads.append((batch.device_agent_ids.data_ptr(), address(agent_ids), agent_ids.nbytes))
        return _native.UploadPlan(gathers, uploads)

    def upload_one(self, device_tensor, host_tensor) -> None:
        self._copier.host_to_device(device_tensor.data_ptr(), host_tensor.data_ptr(), host_tensor.nbytes, self.stream())

    def download(self, host_tensor, device_tensor) -> None:
        self._copier.device_to_host(
            host_tensor.data_ptr(), device_tensor.data_ptr(), device_tensor.nbytes, self.stream()
        )


def address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


COPIES_VARIABLE = "SHOAL_CUDA_COPIES"  # "driver" (default) or "torch": who queues the hand-off's copies


def cuda_copies(torch, device, step_while_waiting=None) -> _CudaCopies:
    """The CUDA side of a TorchVector: through the CUDA driver where it loads (NVIDIA's CUDA), through
    torch otherwise (ROCm's HIP, or ``SHOAL_CUDA_COPIES=torch``: the same protocol, more torch calls)."""
    choice = os.environ.get(COPIES_VARIABLE, "driver")
    if choice not in ("driver", "torch"):
        raise APIUsageError(f"{COPIES_VARIABLE}={choice!r}: it takes 'driver' (the default) or 'torch'")
    if choice == "driver" and getattr(torch.version, "hip", None) is None:
        try:
            copier = _native.CudaCopier(device.index)
        except RuntimeError as error:
            warnings.warn(
                f"shoal: the CUDA driver could not be used ({error}); the hand-off's copies go through torch",
                RuntimeWarning,
                stacklevel=3,
            )
        else:
            return _DriverCopies(torch, device, step_while_waiting, copier)
    return _CudaCopies(torch, device, step_while_waiting)
