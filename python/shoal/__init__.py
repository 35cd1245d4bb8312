"""shoal: fast, deterministic vectorization of reinforcement-learning environments."""

from pathlib import Path

from . import _native
from .errors import APIUsageError, EnvError, WorkerError
from .pufferenv import PufferEnv

__version__ = _native.__version__


def get_include() -> str:
    """Directory holding shoal/env.h, for compiling your own native envs."""
    return str(Path(__file__).parent / "include")


def get_cmake_dir() -> str:
    """Directory holding shoalConfig.cmake (pass as -Dshoal_DIR=...)."""
    return str(Path(__file__).parent / "cmake")


__all__ = ["APIUsageError", "EnvError", "WorkerError", "PufferEnv", "get_include", "get_cmake_dir",
           "__version__"]
