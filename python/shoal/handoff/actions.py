"""Action tensors in the form both hand-offs (CPU and CUDA) send to the envs: one rule, so that a tensor
the one path takes the other takes too, converted the same way, and one the one refuses the other
refuses with the same error.

A tensor is made plain (sparse layouts densified, torch's lazy negation and conjugation bits resolved),
floating actions for a Box space travel as float32 (the space's dtype, rounded as numpy rounds), and a
dtype numpy cannot hold (bfloat16, float8, quantized) is refused here, since the vector checks actions
as numpy arrays."""

from __future__ import annotations

import numpy as np

from ..errors import APIUsageError


def plain(torch, actions):
    """``actions`` dense, with no pending negation or conjugation (a copy only where one was needed).
    Each check is one attribute read or call: this runs on every step of a trainer's loop."""
    if actions.layout is not torch.strided:
        actions = actions.to_dense()
    if actions.is_neg():
        actions = actions.resolve_neg()
    if actions.is_conj():
        actions = actions.resolve_conj()
    return actions


class DtypeRule:
    """For a vector's action space: the dtype each tensor dtype travels as, decided once per dtype."""

    def __init__(self, torch, space, dtype: np.dtype):
        self._torch, self._space, self._box = torch, space, dtype == np.float32
        self._decided: dict = {}

    def travel_dtype(self, tensor_dtype):
        """The dtype a tensor of ``tensor_dtype`` is copied as (float32 for a Box space's floating
        actions, else its own), or an APIUsageError where numpy has no dtype to check it as."""
        decided = self._decided.get(tensor_dtype)
        if decided is None:
            decided = self._decided[tensor_dtype] = self._decide(tensor_dtype)
        if isinstance(decided, APIUsageError):
            raise decided
        return decided

    def _decide(self, tensor_dtype):
        torch = self._torch
        if self._box and tensor_dtype.is_floating_point:
            return torch.float32
        try:
            torch.empty(0, dtype=tensor_dtype).numpy()
        except (TypeError, RuntimeError):
            cast = "actions.to(torch.float32)" if self._box else "actions.to(torch.int32)"
            kind = "floats or integers" if self._box else "integers"
            return APIUsageError(
                f"actions for {self._space} must be {kind}, got a tensor of dtype {tensor_dtype}, which numpy "
                f"(and so the envs' action check) cannot hold: cast them with {cast}"
            )
        return tensor_dtype
