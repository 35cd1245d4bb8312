"""Native (C) envs in Python: NativeEnv over the native core, and loading third-party envs."""

from .env import (
    SCHEDULES,
    EpisodeLog,
    NativeEnv,
    check_schedule,
    check_threads,
    env_class,
    is_native_env,
    load_env,
    native_env_class,
)

__all__ = [
    "SCHEDULES",
    "EpisodeLog",
    "NativeEnv",
    "check_schedule",
    "check_threads",
    "env_class",
    "is_native_env",
    "load_env",
    "native_env_class",
]
