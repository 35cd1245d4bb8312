"""shoal: fast, deterministic vectorization of reinforcement-learning environments."""

from pathlib import Path

from . import _native
from .errors import APIUsageError, EnvError, WorkerError
from .pufferenv import PufferEnv

__version__ = _native.__version__


# Files installed by CMake (headers, CMake package, config.ini) sit beside the compiled module,
# also in editable installs where the Python sources stay in the repository.
DATA_DIR = Path(_native.__file__).parent


def get_include() -> str:
    """Directory holding shoal/env.h, for compiling your own native envs."""
    return str(DATA_DIR / "include")


def get_cmake_dir() -> str:
    """Directory holding shoalConfig.cmake (pass as -Dshoal_DIR=...)."""
    return str(DATA_DIR / "cmake")


__all__ = ["APIUsageError", "EnvError", "WorkerError", "PufferEnv", "get_include", "get_cmake_dir", "__version__"]
