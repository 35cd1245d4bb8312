"""The tests' one model of a CUDA device: tests/fake_cuda_driver.c, a stand-in libcuda.so.1 whose memory is
the host's and whose one queue runs only when the host asks an event. shoal._native.CudaCopier loads it as
it loads the CUDA driver: by path (``CudaCopier(0, driver=fake_driver_path())``, beside any real driver the
process holds), or by name in a process whose LD_LIBRARY_PATH finds it first (tests/test_cuda_driver.py).
Built once per source and compiler into the temporary folder (Linux and macOS)."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "fake_cuda_driver.c"
NAME = "libcuda.so.1"


def unavailable() -> str | None:
    """Why the stand-in cannot be built here, or None."""
    if not sys.platform.startswith(("linux", "darwin")):
        return "the stand-in CUDA driver is a shared library of Linux or macOS"
    if not (os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")):
        return "no C compiler to build the stand-in CUDA driver"
    return None


def build(folder: Path) -> Path:
    """The stand-in compiled into ``folder`` (as libcuda.so.1); returns its path."""
    compiler = shlex.split(os.environ.get("CC") or shutil.which("cc") or "gcc")
    library = folder / NAME
    command = [*compiler, "-std=c11", "-shared", "-fPIC", "-O1", "-pthread"]
    if sys.platform.startswith("linux"):
        command.append(f"-Wl,-soname,{NAME}")  # found by name as the driver is
    subprocess.run([*command, "-o", str(library), str(SOURCE)], check=True, capture_output=True)
    return library


def fake_driver_path() -> Path:
    """The stand-in, built once per source and compiler (a build of another process is taken whole or not
    at all: each builds in a folder of its own and renames it into place)."""
    key = hashlib.sha256(SOURCE.read_bytes() + (os.environ.get("CC") or "").encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"shoal-fake-cuda-{os.getuid()}-{key}"
    if not (folder / NAME).is_file():
        stage = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
        build(stage)
        try:
            os.rename(stage, folder)
        except OSError:  # another process was first
            shutil.rmtree(stage, ignore_errors=True)
    return folder / NAME


def on_library_path() -> Path:
    """The stand-in of a process whose LD_LIBRARY_PATH is its folder (tests/test_cuda_driver.py)."""
    return Path(os.environ["LD_LIBRARY_PATH"].split(os.pathsep)[0]) / NAME


@functools.cache
def stand_in(path: Path | str) -> StandIn:
    """The tests' side of the stand-in at ``path`` (one per process: the library holds one kernel runner)."""
    return StandIn(path)


class StandIn:
    """The tests' side of a loaded stand-in: its state, its queue, and kernels (Python callables) queued
    behind the work queued so far. A kernel that raises is raised again by the next pending()."""

    def __init__(self, path: Path | str) -> None:
        self.library = ctypes.CDLL(str(path))  # the same object as the copier's (one path, one load)
        self.kernels: dict[int, object] = {}
        self.next_kernel = 0
        self.failure: BaseException | None = None
        self._runner = ctypes.CFUNCTYPE(None, ctypes.c_longlong)(self._run)
        self.library.fake_cuda_set_kernel_runner(self._runner)
        self.library.fake_cuda_pending.restype = ctypes.c_longlong
        self.library.fake_cuda_launch.argtypes = [ctypes.c_longlong]

    def _run(self, kernel: int) -> None:
        try:
            self.kernels.pop(kernel)()
        except BaseException as failure:  # a ctypes callback cannot raise into the driver's caller
            self.failure = self.failure or failure

    def launch(self, work) -> None:
        """Queues ``work`` (a kernel) behind the work queued on the device so far."""
        self.next_kernel += 1
        self.kernels[self.next_kernel] = work
        self.library.fake_cuda_launch(self.next_kernel)

    def pending(self) -> int:
        """The items of work queued and not run yet."""
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure
        return int(self.library.fake_cuda_pending())

    def state(self) -> dict:
        out = (ctypes.c_longlong * 5)()
        self.library.fake_cuda_state(out)
        return dict(zip(("pushed", "events", "retained", "copies", "stream"), out))
