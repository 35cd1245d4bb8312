"""_Batch: the torch tensors of one batch view of a vector's buffers, on the host and on the device."""

from __future__ import annotations

import numpy as np

_VIEWS_KEPT = 64  # host batch views remembered by identity (backends reuse a few per vector)


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
