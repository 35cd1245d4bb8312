"""What a Ray actor that keeps rows of its own returns after a step: the outputs of its rows, and final
observations only for the rows whose episode ended (they are valid only there), so a step moves its
observations once instead of twice. A reset returns the whole block (wire/blocks.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...buffers import Buffers


@dataclass
class StepRows:
    observations: np.ndarray
    rewards: np.ndarray
    terminals: np.ndarray
    truncations: np.ndarray
    masks: np.ndarray
    ended: np.ndarray  # indices of the rows whose episode ended this step
    final_observations: np.ndarray  # theirs, in that order

    @classmethod
    def of(cls, buf: Buffers) -> StepRows:
        ended = np.flatnonzero(buf.terminals | buf.truncations)
        return cls(
            buf.observations,
            buf.rewards,
            buf.terminals,
            buf.truncations,
            buf.masks,
            ended,
            buf.final_observations[ended],
        )

    def copy_into(self, dst: Buffers, rows: slice) -> None:
        """Writes these rows into ``rows`` of ``dst``; final observations only where an episode ended."""
        for name in ("observations", "rewards", "terminals", "truncations", "masks"):
            np.copyto(getattr(dst, name)[rows], getattr(self, name))
        if len(self.ended):
            dst.final_observations[rows][self.ended] = self.final_observations
