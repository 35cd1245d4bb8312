"""mujoco:<EnvId>: Gymnasium's MuJoCo tasks as native envs (this family's entry in shoal.families)."""

from __future__ import annotations

from . import available
from . import env_class as task_class

#: keywords whose values are paths to resolve against the config's folder: a MuJoCo xml_file without a
#: leading "." is one of Gymnasium's assets
PATH_KEYS = {"xml_file": lambda text: text.startswith(".")}


def names(options: dict | None = None) -> list[str]:
    return available()


def env_class(name: str, options: dict | None = None, **kwargs):
    return task_class(name, **kwargs)


def parameters(name: str, options: dict | None = None) -> list[str]:
    """The task's parameters (without the [env] values bound yet) and max_episode_steps."""
    return [p["name"] for p in task_class(name).describe()["params"]] + ["max_episode_steps"]


def summary() -> str:
    return f"MuJoCo tasks ([env] name = mujoco:<id>; needs pip install '.[mujoco]'): {', '.join(available())}"
