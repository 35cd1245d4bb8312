"""_DriverCopies: the CUDA hand-off's copies and events through the CUDA driver (shoal._native.CudaCopier)."""

from __future__ import annotations

from .. import _native
from .torch_copies import _CudaCopies, address


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
