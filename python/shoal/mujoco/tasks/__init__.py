"""One module per task, each defining ``TASK`` (a shoal.mujoco.task.Task); found by listing this package."""

from __future__ import annotations

import importlib
import pkgutil

from ..task import Task


def all_tasks() -> dict[str, Task]:
    """Every task of this package by Gymnasium id, in file-name order."""
    tasks = {}
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        task = importlib.import_module(f"{__name__}.{module}").TASK
        tasks[task.id] = task
    return tasks
