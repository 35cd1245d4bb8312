"""MuJoCo's load-time warnings (a deprecated MJCF attribute, ...) as Python warnings, once per model and message.

The task libraries keep what MuJoCo says while loading a model (instead of MuJoCo printing it and writing
MUJOCO_LOG.TXT into the working directory); this hands it to Python's ``warnings`` machinery, where
filters decide (``ignore::shoal.mujoco.MujocoWarning``, or ``error`` to make it fail).
"""

from __future__ import annotations

import ctypes
import warnings
from pathlib import Path

WARNING_CAPACITY = 1024  # SHOAL_MJ_WARNING_CAPACITY of shoal_mujoco.h


class MujocoWarning(UserWarning):
    """A warning MuJoCo gave while loading a task's model (e.g. a deprecated MJCF attribute)."""


_reported: set[tuple[str, str]] = set()


def report_load_warnings(library: Path, xml_file: str, stacklevel: int = 3) -> None:
    """Warns (MujocoWarning) what MuJoCo said about the models ``library`` loaded on this thread since the
    last call, each message once per ``xml_file`` in this process."""
    buffer = ctypes.create_string_buffer(WARNING_CAPACITY)
    ctypes.CDLL(str(library)).shoal_mj_take_load_warnings(buffer, ctypes.c_int32(WARNING_CAPACITY))
    for message in buffer.value.decode(errors="replace").splitlines():
        if message and (xml_file, message) not in _reported:
            _reported.add((xml_file, message))
            warnings.warn(f"MuJoCo, loading {xml_file}: {message}", MujocoWarning, stacklevel=stacklevel + 1)
