"""The torch hand-off (make(..., device=...)): the numpy path's values as tensors, nothing allocated per
step, the wrapped vector's errors and closing. CUDA cases run where a GPU is present (skipped otherwise)."""

from __future__ import annotations

import functools
import gc
import re
import sys
import tracemalloc
import warnings
from collections import deque

import numpy as np
import pytest

from shoal.envs import CartPole
from shoal.errors import APIUsageError
from shoal.vector import make

import fake_cuda
from envs_for_tests import make_box_env, make_dict_env, make_raise_on_step

torch = pytest.importorskip("torch", reason="the hand-off needs torch: pip install -e '.[full]'")

DEVICES = [
    "cpu",
    pytest.param(
        "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
    ),
]

# (backend, creator, make() options): every backend, Multithreading synchronous and pipelined.
BACKENDS = {
    "Serial": ("Serial", make_box_env, {"num_envs": 4}),
    "Multiprocessing": ("Multiprocessing", make_box_env, {"num_envs": 4, "num_workers": 2}),
    "Multiprocessing-batches": (
        "Multiprocessing",
        make_box_env,
        {"num_envs": 4, "num_workers": 2, "batch_size": 2, "zero_copy": True},
    ),
    "Multithreading": ("Multithreading", CartPole, {"num_envs": 16, "max_num_threads": 2}),
    "Multithreading-pipelined": ("Multithreading", CartPole, {"num_envs": 16, "batch_size": 8, "max_num_threads": 2}),
    "PufferEnv": ("PufferEnv", CartPole, {"env_kwargs": {"num_envs": 16}}),
}


def actions_for(vecenv, steps: int, seed: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    space = vecenv.single_action_space
    n = vecenv.agents_per_batch
    if hasattr(space, "n"):
        return [rng.integers(0, space.n, n).astype(np.int32) for _ in range(steps)]
    return [rng.uniform(space.low, space.high, (n, *space.shape)).astype(np.float32) for _ in range(steps)]


def rollout(vecenv, actions: list, as_tensor=None) -> list[tuple]:
    """reset, then recv/send over ``actions``: every batch's arrays (and final observations) as numpy."""

    def host(x):
        return x.cpu().numpy().copy() if hasattr(x, "cpu") else np.array(x)

    vecenv.async_reset(5)
    batches = []
    for a in actions:
        obs, rew, term, trunc, _, ids, masks = vecenv.recv()
        final = host(vecenv.final_observations)
        batches.append((host(obs), host(rew), host(term), host(trunc), host(ids), host(masks), final))
        vecenv.send(as_tensor(a) if as_tensor else a)
    return batches


def assert_same_batches(got: list[tuple], expected: list[tuple], case: str) -> None:
    """Every array of every batch (rollout()'s tuples) equal in dtype, shape and value."""
    assert len(got) == len(expected)
    for step, (g, e) in enumerate(zip(got, expected)):
        for name, gv, ev in zip(("obs", "rew", "term", "trunc", "ids", "masks", "final"), g, e):
            assert gv.dtype == ev.dtype and gv.shape == ev.shape, (step, name)
            np.testing.assert_array_equal(gv, ev, err_msg=f"{case} step {step}: {name}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", sorted(BACKENDS))
def test_tensors_hold_the_numpy_path_values(case, device, time_limit):
    time_limit(120)
    backend, creator, options = BACKENDS[case]
    with make(creator, backend=backend, seed=11, **options) as plain:
        actions = actions_for(plain, 40)
        expected = rollout(plain, actions)
    with make(creator, backend=backend, seed=11, device=device, **options) as handed:
        got = rollout(handed, actions, as_tensor=lambda a: torch.from_numpy(a).to(device))
        first_obs = handed.recv()[0]
    assert first_obs.device.type == device
    assert_same_batches(got, expected, case)


@pytest.mark.parametrize("device", DEVICES)
def test_synchronous_pair_returns_tensors_on_the_device(device):
    with make(CartPole, backend="Multithreading", num_envs=8, seed=0, device=device) as vecenv:
        obs, infos = vecenv.reset()
        assert isinstance(obs, torch.Tensor) and obs.device.type == device and obs.shape == (8, 4)
        obs, rew, term, trunc, infos = vecenv.step(torch.zeros(8, dtype=torch.int64, device=device))
        assert rew.dtype == torch.float32 and term.dtype == torch.bool and trunc.dtype == torch.bool
        assert isinstance(infos, list)
        assert vecenv.num_envs == 8 and vecenv.agents_per_batch == 8  # the vector API's attributes
        assert vecenv.max_num_threads >= 1  # a backend's own attributes pass through


@pytest.mark.parametrize("device", [*DEVICES, "simulated-driver"])
def test_no_allocation_per_step(device):
    # "simulated-driver": the CUDA protocol through shoal's native copier, over the stand-in driver
    simulated = device == "simulated-driver"
    with make(
        CartPole, backend="Multithreading", num_envs=64, batch_size=32, seed=0, device="cpu" if simulated else device
    ) as vecenv:
        actions = [torch.randint(0, 2, (32,), device="cpu" if simulated else device) for _ in range(2)]
        if simulated:
            vecenv._copies = copies = simulated_copies("driver", vecenv.step_while_waiting)[0]
            actions = [copies.empty_on_device(a.shape, a.dtype).copy_(a) for a in actions]
        vecenv.async_reset()

        def loop(steps):
            for i in range(steps):
                vecenv.recv()
                # read every step, as a trainer bootstrapping truncated episodes does
                assert vecenv.final_observations.shape == (32, 4)
                vecenv.send(actions[i % 2])

        loop(50)  # every host view and its device tensors made
        gc.collect()
        device_bytes = torch.cuda.memory_allocated() if device == "cuda" else 0
        tracemalloc.start()
        # Traced from here, CPython's free lists (up to 2000 tuples of each size, reused rather than
        # freed) fill once; then a loop allocates nothing that stays.
        loop(3000)
        before = tracemalloc.take_snapshot()
        loop(2000)
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        grown = sum(stat.size_diff for stat in after.compare_to(before, "filename") if stat.size_diff > 0)
        # A per-step allocation that stays (a cache, a list) grows by 2000 x its size; nothing may stay.
        assert grown < 16_000, [str(s) for s in after.compare_to(before, "lineno")[:5]]
        if device == "cuda":
            assert torch.cuda.memory_allocated() == device_bytes


@pytest.mark.parametrize("device", DEVICES)
def test_env_errors_and_reset_behave_as_on_the_numpy_path(device, time_limit):
    time_limit(120)

    def outcomes(handed) -> list[str]:
        """What each call of a fixed sequence did: returned, or raised (type and first line)."""
        seen = []
        with make(make_raise_on_step, backend="Multiprocessing", num_envs=2, num_workers=2, seed=0, device=handed) as v:
            a = np.zeros(2, np.int32)
            calls = [v.reset] + [lambda: v.step(torch.from_numpy(a).to(device) if handed else a)] * 6
            calls += [lambda: v.send(a), v.reset, v.reset, lambda: v.step(a)]
            for call in calls:
                try:
                    call()
                    seen.append("ok")
                except Exception as error:
                    # Which env's failure arrives first is the workers' timing, on either path.
                    first_line = re.sub(r"env \d+ \(worker \d+\)", "env E (worker W)", str(error).splitlines()[0])
                    seen.append(f"{type(error).__name__}: {first_line}")
        return seen

    plain, handed = outcomes(None), outcomes(device)
    assert any("EnvError" in o for o in plain)  # the sequence does meet the env's failure
    assert handed == plain


@pytest.mark.parametrize("device", DEVICES)
def test_a_dead_worker_is_reported_as_on_the_numpy_path(device, time_limit):
    import os
    import signal

    time_limit(120)

    def outcome(handed) -> str:
        with make(make_box_env, backend="Multiprocessing", num_envs=2, num_workers=2, seed=0, device=handed) as v:
            v.reset()
            a = np.zeros(2, np.int32)
            os.kill(v.worker_pids[0], signal.SIGKILL)
            try:
                for _ in range(3):
                    v.step(torch.from_numpy(a).to(handed) if handed else a)
            except Exception as error:
                return type(error).__name__
            return "no error"

    assert outcome(None) == outcome(device) == "WorkerError"


@pytest.mark.parametrize("device", DEVICES)
def test_interrupt_mid_step_then_refusal_until_reset(device, monkeypatch):
    calls = {"n": 0}
    with make(CartPole, backend="Multithreading", num_envs=8, seed=0, device=device) as vecenv:
        vecenv.reset()
        inner_send = vecenv.vecenv.send

        def interrupted_send(actions):
            calls["n"] += 1
            raise KeyboardInterrupt

        monkeypatch.setattr(vecenv.vecenv, "send", interrupted_send)
        with pytest.raises(KeyboardInterrupt):
            vecenv.step(torch.zeros(8, dtype=torch.int32, device=device))
        monkeypatch.setattr(vecenv.vecenv, "send", inner_send)
        obs, _ = vecenv.reset()  # the vector is usable again after reset, as on the numpy path
        assert obs.shape == (8, 4) and calls["n"] == 1


@pytest.mark.parametrize("device", DEVICES)
def test_closing_mid_flight_closes_the_vector(device):
    vecenv = make(CartPole, backend="Multithreading", num_envs=64, batch_size=32, seed=0, device=device)
    vecenv.async_reset()
    vecenv.recv()
    vecenv.send(torch.zeros(32, dtype=torch.int32, device=device))  # a buffer steps in the background
    vecenv.close()
    assert vecenv.closed and vecenv.vecenv.closed
    with pytest.raises(APIUsageError, match="closed"):
        vecenv.recv()
    vecenv.close()  # idempotent


@pytest.mark.parametrize("device", DEVICES)
def test_actions_of_the_wrong_shape_are_refused_with_the_shapes(device):
    with make(CartPole, backend="Multithreading", num_envs=8, seed=0, device=device) as vecenv:
        vecenv.reset()
        with pytest.raises(APIUsageError, match=r"shape \(8, 1\).*\(8,\)"):
            vecenv.step(torch.zeros((8, 1), dtype=torch.int32, device=device))
        obs, *_ = vecenv.step(torch.zeros(8, dtype=torch.int32, device=device))  # nothing was sent: the vector goes on
        assert obs.shape == (8, 4)


@pytest.mark.parametrize("device", DEVICES)
def test_out_of_range_tensor_actions_get_the_numpy_error(device):
    with make(CartPole, backend="Multithreading", num_envs=4, seed=0, device=device) as vecenv:
        vecenv.reset()
        with pytest.raises(APIUsageError, match="out"):
            vecenv.step(torch.tensor([0, 1, 2**33, 0], dtype=torch.int64, device=device))


@pytest.mark.parametrize("device", ["tpu", "cuda:banana", 3.5])
def test_a_device_torch_cannot_use_is_refused_and_nothing_leaks(device):
    import psutil

    before = psutil.Process().num_threads()
    with pytest.raises(APIUsageError, match="device"):
        make(CartPole, backend="Multithreading", num_envs=8, max_num_threads=2, device=device)
    gc.collect()
    assert psutil.Process().num_threads() <= before


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error of a machine without CUDA")
def test_cuda_without_a_gpu_is_refused():
    with pytest.raises(APIUsageError, match="no CUDA device"):
        make(CartPole, backend="Serial", num_envs=2, device="cuda")


def test_without_torch_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails as if not installed
    with pytest.raises(APIUsageError, match=r"pip install torch .*download.pytorch.org/whl/cpu"):
        make(CartPole, backend="Multithreading", num_envs=4, device="cpu")


@pytest.mark.parametrize("engine", ["driver", "torch"])
@pytest.mark.parametrize(
    "backend, options, constant",
    [
        ("Multithreading", {"num_envs": 16, "batch_size": 8, "max_num_threads": 2}, True),
        (
            "Multiprocessing",
            {"num_envs": 6, "num_workers": 3, "batch_size": 4, "zero_copy": False, "overwork": True},
            False,
        ),
    ],
    ids=["fixed-ids", "ids-of-the-moment"],
)
def test_agent_ids_on_the_device_are_those_of_each_batch(backend, options, constant, engine, time_limit):
    # Constant ids travel once per batch; a backend whose batches gather whichever workers are ready
    # hands out other ids in one array, and each batch's must reach the device.
    time_limit(60)
    from shoal.handoff import TorchVector

    vecenv = make(make_box_env if backend == "Multiprocessing" else CartPole, backend=backend, seed=3, **options)
    assert vecenv.constant_agent_ids is constant
    host_ids, device_ids = [], []
    recv = vecenv.recv

    def recv_keeping_the_ids():
        batch = recv()
        host_ids.append(batch[5].copy())
        return batch

    vecenv.recv = recv_keeping_the_ids
    handed = TorchVector(vecenv, "cpu")
    copies, launch, _ = simulated_copies(engine, None)
    handed._copies = copies
    actions = np.zeros(vecenv.action_space.shape, vecenv.action_space.dtype)
    handed.async_reset(3)
    for _ in range(30):
        ids = handed.recv()[5]
        launch(lambda t=ids: device_ids.append(t.numpy().copy()))  # a kernel reading the ids
        handed.send(actions)
    handed.close()
    assert len(device_ids) == len(host_ids) == 30
    for step, (got, expected) in enumerate(zip(device_ids, host_ids)):
        np.testing.assert_array_equal(got, expected, err_msg=f"step {step}")
    if not constant:
        assert len({tuple(ids) for ids in host_ids}) > 1  # the batches did gather other workers


def test_strided_host_arrays_are_copied_by_torch_beside_the_driver():
    from shoal.handoff.torch_vector import _Batch

    copies = simulated_copies("driver", None)[0]
    rows = 6
    observations = np.arange(rows * 8, dtype=np.float32).reshape(rows, 8)[:, ::2]  # every other column
    columns = (np.linspace(0, 1, rows, dtype=np.float32), *(np.arange(rows) % k == 0 for k in (2, 3, 4)))
    rewards, terminals, truncations, masks = columns
    arrays = (observations, rewards, terminals, truncations, np.arange(rows, dtype=np.int64), masks)
    batch = _Batch(torch, arrays, copies)
    copies.upload(batch)
    assert batch.upload_plan is False  # the driver copies contiguous memory only
    got = [t.numpy() for t in batch.device_tensors]
    for tensor, array in zip(got, arrays):
        np.testing.assert_array_equal(tensor, array)


def test_the_copies_variable_takes_driver_or_torch(monkeypatch):
    from shoal.handoff.torch_vector import cuda_copies

    monkeypatch.setenv("SHOAL_CUDA_COPIES", "fast")
    with pytest.raises(APIUsageError, match="SHOAL_CUDA_COPIES='fast': it takes 'driver' .* or 'torch'"):
        cuda_copies(torch, torch.device("cuda", 0))


def test_without_the_cuda_driver_the_copies_go_through_torch(monkeypatch):
    import shoal.handoff.torch_vector as torch_vector

    def no_driver(device, driver=""):
        raise RuntimeError("libcuda.so.1: cannot open shared object file")

    made = []
    monkeypatch.delenv("SHOAL_CUDA_COPIES", raising=False)
    monkeypatch.setattr(torch_vector._native, "CudaCopier", no_driver)
    monkeypatch.setattr(torch_vector, "_CudaCopies", lambda *args: made.append(args) or "torch's copies")
    with pytest.warns(
        RuntimeWarning, match=r"CUDA driver could not be used \(libcuda.so.1: cannot open.*through torch"
    ):
        assert torch_vector.cuda_copies(torch, torch.device("cuda", 0)) == "torch's copies"
    assert made == [(torch, torch.device("cuda", 0), None)]


class FakeCudart:
    """cudaHostRegister/Unregister's bookkeeping, as CUDA refuses overlapping registrations."""

    def __init__(self):
        self.registered: dict[int, int] = {}
        self.idle_calls = 0

    def cudaHostRegister(self, ptr, size, flags):
        if any(p < ptr + size and ptr < p + s for p, s in self.registered.items()):
            return 712
        self.registered[ptr] = size
        return 0

    def cudaHostUnregister(self, ptr):
        del self.registered[ptr]
        return 0


def test_views_of_one_allocation_share_one_registration():
    from shoal.handoff.pinned import PAGE, PinnedRegistry

    cudart = FakeCudart()
    registry = PinnedRegistry(cudart, lambda: setattr(cudart, "idle_calls", cudart.idle_calls + 1))
    block = np.zeros(10 * PAGE + 100, np.uint8)
    halves = block[: len(block) // 2], block[len(block) // 2 :]  # two batches whose boundary splits a page
    for half in halves:
        registry.pin(half)
    # One registration covers every page of the allocation, so a copy of either half lies inside it.
    assert len(cudart.registered) == 1
    (ptr, size), start = next(iter(cudart.registered.items())), block.ctypes.data
    assert ptr <= start and start + block.nbytes <= ptr + size
    small = [np.zeros(8, np.float32) for _ in range(50)]  # small arrays of one heap page or a few
    for array in small:
        registry.pin(array)
    for array in (*small, *halves):
        a = array.ctypes.data
        assert any(p <= a and a + array.nbytes <= p + s for p, s in cudart.registered.items())
    spans = sorted(cudart.registered.items())
    assert all(p1 + s1 <= p2 for (p1, s1), (p2, _) in zip(spans, spans[1:]))  # disjoint, as CUDA needs
    registry.release()
    assert cudart.registered == {}


# -- the CUDA protocol on a simulated stream (every machine) ----------------------------------------
# A GPU runs queued work later, in order. Here the queue runs only when the host waits on an event (one
# item per query, all up to the event on synchronize), and the trainer's kernels are queued the same
# way. Were the envs to write a host buffer before the copies out of it ran, or the actions to go to
# the envs before their copy ran, the kernels would see other values than the numpy path's. The native
# copier's device is the stand-in CUDA driver (tests/fake_cuda.py), the one model of a device; torch's
# primitives (the fallback's) are simulated below over the same rules.


class SimulatedStream:
    def __init__(self):
        self.queue = deque()

    def launch(self, work) -> None:
        self.queue.append(work)

    def run_one(self) -> bool:
        if not self.queue:
            return False
        self.queue.popleft()()
        return True

    def run_all(self) -> None:
        while self.run_one():
            pass


class SimulatedEvent:
    def __init__(self, stream):
        self.stream = stream
        self.unreached = 0

    def record(self) -> None:
        self.unreached += 1
        self.stream.launch(self._reached)

    def _reached(self) -> None:
        self.unreached -= 1

    def query(self) -> bool:
        self.stream.run_one()
        return self.unreached == 0

    def synchronize(self) -> None:
        while self.unreached:
            assert self.stream.run_one(), "an event recorded on no stream's queue"


class StreamAwareCudart(FakeCudart):
    """Refuses to unlock pages while copies are queued (CUDA's DMA would read freed memory)."""

    def __init__(self, queued):
        super().__init__()
        self.queued = queued

    def cudaHostUnregister(self, ptr):
        assert not self.queued(), "host pages unlocked with copies in flight"
        return super().cudaHostUnregister(ptr)


def on_the_host(copies_class, queued):
    """``copies_class`` (a CUDA protocol of the hand-off) with the memory torch allocates on the CPU."""

    class OnTheHost(copies_class):
        def cudart(self):
            self.fake_cudart = StreamAwareCudart(queued)
            return self.fake_cudart

        def empty_on_device(self, shape, dtype):
            tensor = torch.full(shape, 99, dtype=dtype)  # not the values of any batch
            tensor.simulated_device = True
            return tensor

        empty_pinned = empty_on_device

        def on_device(self, tensor) -> bool:
            return getattr(tensor, "simulated_device", False)

        def copy_once(self, host):
            return host.clone()

    return OnTheHost


def simulated_copies(engine: str, step_while_waiting):
    """shoal's CUDA protocol over CPU tensors on a simulated device, and how a test queues a kernel
    there: ``engine`` "torch" (_CudaCopies, its torch primitives simulated in Python), "driver"
    (_DriverCopies over the stand-in CUDA driver, loaded by path) or "loaded-driver" (_DriverCopies over
    the libcuda.so.1 this process finds: tests/test_cuda_driver.py's stand-in, on LD_LIBRARY_PATH)."""
    from shoal import _native
    from shoal.handoff.torch_vector import _CudaCopies, _DriverCopies

    if engine in ("driver", "loaded-driver"):
        if engine == "driver":
            if fake_cuda.unavailable():
                pytest.skip(fake_cuda.unavailable())
            path = fake_cuda.fake_driver_path()
            copier = _native.CudaCopier(0, driver=str(path))
        else:
            path = fake_cuda.on_library_path()
            copier = _native.CudaCopier(0)
        device = fake_cuda.stand_in(path)
        copies = on_the_host(_DriverCopies, device.pending)(torch, torch.device("cpu"), step_while_waiting, copier)
        copies.stream = lambda: 0x5000  # a stream handle the driver passes on
        return copies, device.launch, device.pending
    stream = SimulatedStream()

    class Simulated(on_the_host(_CudaCopies, lambda: stream.queue)):
        def new_event(self):
            return SimulatedEvent(stream)

        @staticmethod
        def copy_async(destination, source) -> None:
            stream.launch(lambda: destination.copy_(source))

        def record(self, event) -> None:
            event.record()

        def idle(self) -> None:
            stream.run_all()

    return Simulated(torch, torch.device("cpu"), step_while_waiting), stream.launch, lambda: len(stream.queue)


def simulated_rollout(vecenv, actions: list, device_actions: bool, engine: str) -> list[tuple]:
    """rollout() through a TorchVector on a simulated device: the trainer's kernel records each batch
    (in stream order, as a policy would read it) and, with ``device_actions``, writes the actions into
    one device tensor that every step reuses."""
    from shoal.handoff import TorchVector

    handed = TorchVector(vecenv, "cpu")
    copies, launch, queued = simulated_copies(engine, getattr(vecenv, "step_while_waiting", None))
    handed._copies = copies
    out = copies.empty_on_device(actions[0].shape, torch.from_numpy(actions[0]).dtype)
    seen = []
    handed.async_reset(5)
    for a in actions:
        obs, rew, term, trunc, _, ids, masks = handed.recv()
        tensors = (obs, rew, term, trunc, ids, masks, handed.final_observations)
        launch(lambda t=tensors: seen.append(tuple(x.numpy().copy() for x in t)))
        if device_actions:
            computed = torch.from_numpy(a)
            launch(lambda c=computed: out.copy_(c))  # the policy's last kernel
            handed.send(out)
        else:
            handed.send(a)
    handed.close()  # with the last batch's copies still queued: closing waits for them before unlocking
    assert copies.fake_cudart.registered == {}  # closing unlocked every page it had locked
    assert not queued()
    return seen


@pytest.mark.parametrize("engine", ["driver", "torch"])
@pytest.mark.parametrize("device_actions", [True, False], ids=["device-actions", "host-actions"])
@pytest.mark.parametrize("case", sorted(BACKENDS))
def test_cuda_protocol_on_a_simulated_stream_keeps_the_numpy_path_values(case, device_actions, engine, time_limit):
    time_limit(120)
    backend, creator, options = BACKENDS[case]
    with make(creator, backend=backend, seed=11, **options) as plain:
        actions = actions_for(plain, 40)
        expected = rollout(plain, actions)
    got = simulated_rollout(make(creator, backend=backend, seed=11, **options), actions, device_actions, engine)
    assert_same_batches(got, expected, case)


# -- action tensors of every dtype and layout: the CPU and CUDA paths take them alike ----------------


def _negative_bit(t):
    """``t``'s values in a view with torch's lazy negation bit set (the imaginary part of a conjugate)."""
    viewed = torch.complex(torch.zeros_like(t), -t).conj().imag
    assert viewed.is_neg()
    return viewed


def _autocast(t):
    """``t`` as torch.autocast("cpu") hands it on: a linear layer's bfloat16 output."""
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = torch.nn.functional.linear(t.float().unsqueeze(-1), torch.ones(1, 1)).squeeze(-1)
    assert out.dtype == torch.bfloat16
    return out


def _csr(t):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch: "Sparse CSR tensor support is in beta state"
        return t.to_sparse_csr()


ACTION_FORMS = {
    "plain": lambda t: t,
    "autocast-bfloat16": _autocast,
    "bfloat16": lambda t: t.to(torch.bfloat16),
    "float16": lambda t: t.to(torch.float16),
    "float64": lambda t: t.to(torch.float64),
    "sparse-coo": lambda t: t.to_sparse(),
    "sparse-csr": lambda t: _csr(t) if t.dim() == 2 else t.to_sparse(),
    "negative-bit": lambda t: _negative_bit(t.float()),
    "conjugate-bit": lambda t: torch.complex(t.float(), t.float()).conj(),
    "requires-grad": lambda t: t.float().requires_grad_() if t.dtype.is_floating_point else t,
}
ACTION_SPACES = {
    "Discrete": (CartPole, "Multithreading", {"num_envs": 8, "max_num_threads": 2}),
    "Box": (functools.partial(make_dict_env, action="box"), "Serial", {"num_envs": 4}),
}


def sent_actions(space: str, form: str, engine: str):
    """The host arrays the wrapped vector received for 3 steps of ``form``'s tensors, through the CPU
    path ("cpu") or the CUDA protocol on a simulated device ("torch", "driver"); or the error raised."""
    from shoal.handoff import TorchVector

    creator, backend, options = ACTION_SPACES[space]
    handed = TorchVector(make(creator, backend=backend, seed=3, **options), "cpu")
    if engine != "cpu":
        handed._copies = simulated_copies(engine, None)[0]
        handed._copies.on_device = lambda tensor: True  # every tensor given is the device's
    received = []
    forward = handed.vecenv.send
    handed.vecenv.send = lambda actions: (received.append(np.array(actions)), forward(actions))
    try:
        handed.reset(0)
        for a in actions_for(handed.vecenv, 3, seed=4):
            handed.step(ACTION_FORMS[form](torch.from_numpy(a)))
    except APIUsageError as error:
        return f"APIUsageError: {error}"
    finally:
        handed.close()
    return received


@pytest.mark.parametrize("form", sorted(ACTION_FORMS))
@pytest.mark.parametrize("space", sorted(ACTION_SPACES))
def test_action_tensors_of_every_dtype_and_layout_are_taken_alike_on_cpu_and_cuda(space, form):
    """What the CPU path sends the envs is what the CUDA protocol sends, for every form of tensor: floating
    actions of a Box space as float32 (bfloat16 included), sparse ones densified, lazily negated or
    conjugated views resolved; a form the envs cannot take is refused by both with the same error."""
    on_cpu = sent_actions(space, form, "cpu")
    for engine in ("torch",) if fake_cuda.unavailable() else ("torch", "driver"):
        on_cuda = sent_actions(space, form, engine)
        if isinstance(on_cpu, str):
            assert on_cuda == on_cpu, engine
        else:
            assert [(a.dtype, a.tolist()) for a in on_cuda] == [(a.dtype, a.tolist()) for a in on_cpu], engine
    floats = form in ("autocast-bfloat16", "bfloat16", "float16", "float64", "negative-bit")
    if space == "Discrete" and (floats or form == "conjugate-bit"):
        assert isinstance(on_cpu, str) and "must be integers" in on_cpu, on_cpu
    elif space == "Box" and form == "conjugate-bit":
        assert isinstance(on_cpu, str) and "must be floats or integers" in on_cpu, on_cpu
    else:
        assert not isinstance(on_cpu, str), on_cpu
        creator, backend, options = ACTION_SPACES[space]
        with make(creator, backend=backend, seed=3, **options) as plain:
            given = [ACTION_FORMS[form](torch.from_numpy(a)) for a in actions_for(plain, 3, seed=4)]
        # the values given, read by torch itself (sparse ones densified), rounded to the space's dtype
        expected = [np.array((g.to_dense() if g.layout != torch.strided else g).tolist()) for g in given]
        assert [as_envs_get(a, space) for a in on_cpu] == [as_envs_get(a, space) for a in expected]
        if space == "Box":  # floats of any width reach the envs' check as float32, rounded once, on both paths
            assert all(a.dtype == np.float32 for a in on_cpu)


def as_envs_get(actions: np.ndarray, space: str) -> list:
    return actions.astype(np.float32 if space == "Box" else np.int32).tolist()
