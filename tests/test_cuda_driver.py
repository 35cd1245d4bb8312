"""shoal._native.CudaCopier over the CUDA driver's API, on any machine: a stand-in libcuda.so.1
(fake_cuda_driver.c, host memory for device memory, queued work run when an event is asked; tests/fake_cuda.py)
is found by name in a fresh process in the driver's place, and checks that every call comes with the device's
context current and leaves nothing behind. tests/test_handoff.py loads the same stand-in by path."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fake_cuda

HERE = Path(__file__).resolve().parent

CHECKS = textwrap.dedent(
    """
    import gc, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])  # the tests' folder
    import fake_cuda
    from shoal import _native

    fake = fake_cuda.stand_in(fake_cuda.on_library_path())
    state = fake.state

    try:
        _native.CudaCopier(3)
    except RuntimeError as error:
        assert str(error) == "cuDeviceGet failed: CUDA error 101 (invalid device ordinal)", error
    else:
        raise AssertionError("device 3 of a one-device driver was taken")
    assert state()["retained"] == 0

    copier = _native.CudaCopier(0)
    address = lambda a: a.__array_interface__["data"][0]
    column, stage = np.arange(6, dtype=np.float32), np.zeros(6, np.float32)
    device = np.zeros(6, np.float32)  # device memory is host memory here
    plan = _native.UploadPlan([(address(stage), address(column), 24)], [(address(device), address(stage), 24)])
    copied = copier.new_event()
    copier.upload(plan, 0x5000)
    copied.record(0x5000)
    assert fake.pending() == 2 and not device.any()  # queued: the copy, then the record
    assert not copied.query() and fake.pending() == 1  # a query runs one item: the copy
    np.testing.assert_array_equal(device, column)
    assert copied.query() and fake.pending() == 0
    copied.record(0x5000)
    copied.synchronize()
    assert copied.query()
    host = np.zeros(6, np.float32)
    copier.device_to_host(address(host), address(device), 24, 0x6000)
    fake.launch(lambda: host.__setitem__(0, 7))  # a kernel: it runs after the copy
    assert not host.any() and fake.pending() == 2
    copier.synchronize_device()
    np.testing.assert_array_equal(host, [7, *column[1:]])
    assert fake.pending() == 0
    assert state() == {"pushed": 0, "events": 1, "retained": 1, "copies": 2, "stream": 0x6000}, state()

    import test_handoff  # the hand-off's rollout over this driver
    from shoal.envs import CartPole
    from shoal.vector import make
    options = {"num_envs": 16, "batch_size": 8, "max_num_threads": 2}
    with make(CartPole, backend="Multithreading", seed=11, **options) as plain:
        actions = test_handoff.actions_for(plain, 30)
        expected = test_handoff.rollout(plain, actions)
    for device_actions in (True, False):
        vecenv = make(CartPole, backend="Multithreading", seed=11, **options)
        got = test_handoff.simulated_rollout(vecenv, actions, device_actions, "loaded-driver")
        test_handoff.assert_same_batches(got, expected, "Multithreading-pipelined")
    assert state()["copies"] > 2 + 2 * 30 * 3 and state()["stream"] == 0x5000, state()

    del copied, copier
    gc.collect()
    assert state()["pushed"] == 0 and state()["events"] == 0 and state()["retained"] == 0, state()
    print("checked")
    """
)


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory) -> Path:
    if fake_cuda.unavailable():
        pytest.skip(fake_cuda.unavailable())
    return fake_cuda.build(tmp_path_factory.mktemp("fake_cuda")).parent


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stand-in is a Linux shared library")
def test_copier_over_a_stand_in_driver_copies_and_leaves_nothing_behind(fake_driver, time_limit):
    pytest.importorskip("torch", reason="the hand-off's rollout needs torch: pip install -e '.[full]'")
    time_limit(120)
    env = {**os.environ, "LD_LIBRARY_PATH": str(fake_driver)}
    out = subprocess.run(
        [sys.executable, "-c", CHECKS, str(HERE)], env=env, capture_output=True, text=True, timeout=110
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("checked"), out.stdout + out.stderr
