"""Gymnasium's MuJoCo tasks (v5) as shoal native envs, on the installed MuJoCo wheel's physics.

    HalfCheetah = shoal.mujoco.env_class("HalfCheetah-v5", ctrl_cost_weight=0.2)
    vecenv = shoal.vector.make(HalfCheetah, backend="Multithreading", num_envs=64)

Each task is a C file (csrc/tasks/<task>.c) following Gymnasium's definitions, compiled at first use
against the ``mujoco`` wheel's headers and ``libmujoco`` (``pip install ".[mujoco]"`` from shoal's source folder) and cached.
See MujocoEnv for keywords, observations, rewards and infos.
"""

from __future__ import annotations

from .build import MujocoMissing
from .env import MujocoEnv, source_class, task_class
from .model_warnings import MujocoWarning
from .tasks import all_tasks


def available() -> list[str]:
    """The Gymnasium ids of the tasks shoal.mujoco provides."""
    return list(all_tasks())


def env_class(task_id: str, **kwargs) -> type[MujocoEnv]:
    """The native env class of Gymnasium task ``task_id`` (e.g. "HalfCheetah-v5"); ``kwargs`` are the
    task's keyword arguments (Gymnasium's names), bound as the class's defaults."""
    tasks = all_tasks()
    if task_id not in tasks:
        from ..errors import APIUsageError

        raise APIUsageError(f"shoal.mujoco has no task {task_id!r}; available: {', '.join(tasks)}")
    return task_class(tasks[task_id], **kwargs)


__all__ = ["MujocoEnv", "MujocoMissing", "MujocoWarning", "available", "env_class", "source_class"]
