"""MujocoEnv: a Gymnasium MuJoCo task as a shoal native env class (usable with every backend)."""

from __future__ import annotations

import ctypes
import inspect
import numbers
import os
from pathlib import Path

import numpy as np

from .. import _native
from ..errors import APIUsageError
from ..native import NativeEnv
from ..native.spec import configured, resolve_params
from .build import assets_dir, build_source, build_task
from .model_warnings import report_load_warnings
from .task import Task

# Gymnasium's rendering keywords: shoal's native envs do not render.
RENDER_KEYWORDS = (
    "render_mode",
    "width",
    "height",
    "camera_id",
    "camera_name",
    "default_camera_config",
    "visual_options",
    "max_geom",
)


def expand_model_path(xml_file, assets: str | None = None) -> str:
    """Gymnasium's rule (mujoco_env.expand_model_path): a path starting with '.', '/' or '~' is the
    user's, any other name one of Gymnasium's assets (or of ``assets``). Absolute, so that worker
    processes load the same file."""
    text = os.fspath(xml_file)
    if text.startswith(("~",)):
        return str(Path(text).expanduser().resolve())
    if text.startswith((".", "/")):
        return str(Path(text).resolve())
    return str(Path(assets) / text if assets else assets_dir() / text)


class MujocoEnv(NativeEnv):
    """``num_envs`` envs of one Gymnasium MuJoCo task (v5), stepped by shoal's native core.

    Keyword arguments are the task's own, with Gymnasium's names and defaults (``frame_skip``,
    ``forward_reward_weight``, ``ctrl_cost_weight``, ``reset_noise_scale``, ``xml_file``, ...; see
    ``describe()``), given when the class is made (``shoal.mujoco.env_class``) or per vector
    (``env_kwargs``), plus ``max_episode_steps`` (Gymnasium's time limit, 1000, as a truncation).
    ``xml_file`` and the keywords that decide the observation's size are one value per vector.

    One ``mjModel`` is loaded per vector and shared read-only by its envs; each env owns an ``mjData``.
    Observations are float64, rewards float32 (computed in float64 as Gymnasium does, then rounded).
    Reset noise is drawn from each env's own stream. Box actions reach the task as given (outside the
    ctrlrange too: MuJoCo clamps the controls, and the control cost reads the raw action, as in
    Gymnasium). Infos carry the episode return and length, the sum of each reward term over the
    episode (Gymnasium's ``reward_*`` names) and ``instability_resets``, averaged over the episodes
    that ended since the last report. When a simulation becomes unstable (NaN or huge positions,
    velocities or accelerations), MuJoCo resets it and warns; the env runs on, as Gymnasium's does,
    and the reset is counted in ``instability_resets``; ``on_instability="raise"`` makes any MuJoCo
    warning while stepping a shoal.EnvError naming the env instead.
    """

    task: Task | None = None
    bound: dict = {}  # keyword arguments given to env_class
    library: Path | None = None  # the task's compiled library

    def __init__(self, *args, **kwargs):
        self._xml_file = "?"
        super().__init__(*args, **kwargs)
        try:
            report_load_warnings(self.library, self._xml_file)
        except BaseException:  # warnings filtered as errors: the vector is not leaked
            self.close()
            raise

    __init__.__signature__ = inspect.signature(NativeEnv.__init__)  # num_envs, buf, seed, ... as NativeEnv's

    def _bound_params(self, per_env: list[dict]) -> list[dict]:
        """NativeEnv's hook: the class's bound keywords under each env's own, the model path expanded (once
        per distinct dict: num_envs copies of one dict cost one expansion)."""
        expanded: dict[int, dict] = {}
        for given in per_env:
            if id(given) not in expanded:
                expanded[id(given)] = self._native_kwargs(given)
        params = [expanded[id(given)] for given in per_env]
        self._xml_file = params[0]["xml_file"]
        return params

    @classmethod
    def _native_kwargs(cls, kwargs: dict) -> dict:
        """The C parameters of these Gymnasium keywords: the class's bound ones, overridden, with the
        model path expanded."""
        merged = {**cls.bound, **kwargs}
        rendering = sorted(set(merged) & set(RENDER_KEYWORDS))
        if rendering:
            raise APIUsageError(f"{cls.task.id}: shoal's native MuJoCo tasks do not render; got {rendering}")
        if isinstance(merged.get("frame_skip"), (bool, np.bool_)):
            merged["frame_skip"] = int(merged["frame_skip"])  # Gymnasium steps a bool as the int it is
        if "max_episode_steps" in merged and merged["max_episode_steps"] is not None:
            limit = merged["max_episode_steps"]
            if not isinstance(limit, (bool, np.bool_)) and isinstance(limit, numbers.Integral) and limit <= 0:
                raise APIUsageError(
                    f"{cls.task.id}: max_episode_steps must be positive, got {limit} (Gymnasium's TimeLimit "
                    "refuses it: 'Expect the `max_episode_steps` to be positive'); the default is Gymnasium's "
                    f"registered limit, and for episodes without one pass a limit no run reaches, such as {2**31 - 1}"
                )
        if "xml_file" in merged:
            if not isinstance(merged["xml_file"], (str, os.PathLike)):
                raise APIUsageError(f"{cls.task.id}: parameter xml_file must be a path, got {merged['xml_file']!r}")
            merged["xml_file"] = expand_model_path(merged["xml_file"], cls.task.assets)
        else:
            merged["xml_file"] = expand_model_path(_default(cls.spec.describe(), "xml_file"), cls.task.assets)
        return merged

    def physics_state(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Copies of env ``index``'s ``qpos`` and ``qvel`` (Gymnasium's ``set_state`` takes them), read
        between steps."""
        if not 0 <= index < self.num_envs:
            raise APIUsageError(f"env index {index} is outside [0, {self.num_envs})")
        read = ctypes.CDLL(str(self.library)).shoal_mj_physics_state
        read.argtypes = [ctypes.c_void_p, *(ctypes.POINTER(ctypes.c_int32),) * 2, *(ctypes.c_void_p,) * 2]
        address = np.frombuffer(self.env_memory(index), np.uint8).ctypes.data
        nq, nv = ctypes.c_int32(), ctypes.c_int32()
        read(address, ctypes.byref(nq), ctypes.byref(nv), None, None)
        qpos, qvel = np.empty(nq.value), np.empty(nv.value)
        read(address, ctypes.byref(nq), ctypes.byref(nv), qpos.ctypes.data, qvel.ctypes.data)
        return qpos, qvel

    @classmethod
    def describe(cls) -> dict:
        """The task's spaces (for the bound keyword arguments), parameters with Gymnasium's defaults, stats."""
        if cls.spec is None:
            raise APIUsageError(f"{cls.__name__} has no task; use shoal.mujoco.env_class")
        info = cls.spec.describe()
        kwargs = cls._native_kwargs({})
        matrix, _, texts = resolve_params(info, [kwargs])
        spec, layout = configured(cls.spec, info, matrix, texts)
        report_load_warnings(cls.library, kwargs["xml_file"])
        del spec  # the model it loaded is freed: only the layout was wanted
        return layout


def _default(info: dict, name: str):
    return next(p["default"] for p in info["params"] if p["name"] == name)


def task_class(task: Task, library: Path | None = None, **kwargs) -> type[MujocoEnv]:
    """A MujocoEnv class for ``task``, compiled (once, then cached) from its C file; ``kwargs`` are
    the task's keyword arguments, bound as the class's defaults."""
    path = library or build_task(task)
    try:
        spec = _native.load_spec(str(path), task.symbol)
    except APIUsageError as error:
        raise APIUsageError(f"MuJoCo task {task.id} ({path}) cannot be loaded: {error}") from None
    class_name = spec.describe()["class_name"]
    cls = type(
        class_name,
        (MujocoEnv,),
        {
            "spec": spec,
            "task": task,
            "bound": dict(kwargs),
            "library": path,
            "__doc__": f"Gymnasium's {task.id} on shoal's native core.\n\n" + (MujocoEnv.__doc__ or ""),
            "__module__": "shoal.mujoco",
        },
    )
    cls.describe()  # the bound keyword arguments are checked (names, types, the model loads) here
    return cls


def source_class(source: Path, symbol: str, task_id: str | None = None, **kwargs) -> type[MujocoEnv]:
    """A MujocoEnv class for a user's own task file ``source`` (SHOAL_MJ_TASK(symbol, ...) in C), compiled
    (cached) against shoal's headers and the MuJoCo wheel; a bare ``xml_file`` name is looked up beside it."""
    source = Path(source).resolve()
    library = build_source(source, symbol)
    task = Task(id=task_id or symbol, symbol=symbol, gymnasium_module="", assets=str(source.parent))
    return task_class(task, library, **kwargs)
