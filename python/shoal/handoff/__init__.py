"""Handing batches to a trainer's device: ``shoal.vector.make(..., device="cuda")`` or ``TorchVector``.

torch is an optional extra (``pip install torch``, the CPU build from ``--index-url https://download.pytorch.org/whl/cpu``); nothing here is imported by the core.
"""

from .torch_vector import TorchVector, require_torch

__all__ = ["TorchVector", "require_torch"]
