"""_CudaCopies: a TorchVector's CUDA hand-off on torch's copies and events (page-locked hosts, async copies)."""

from __future__ import annotations

import numpy as np

from .batch_tensors import _VIEWS_KEPT
from .pinned import PinnedRegistry


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


def address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]
