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

The copies and events go through the CUDA driver (shoal._native.CudaCopier, driver_copies.py): a batch's
copies are one native call where torch would take three dispatches, on the thread that also drives the
policy. Where the driver cannot be loaded (ROCm's torch, say), or with ``SHOAL_CUDA_COPIES=torch``, the
same protocol runs on torch's copy_() and events (torch_copies.py). A batch's tensors: batch_tensors.py.

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
from .batch_tensors import _VIEWS_KEPT, _Batch
from .driver_copies import _DriverCopies
from .torch_copies import _CudaCopies

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
