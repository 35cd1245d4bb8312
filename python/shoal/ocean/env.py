"""Ocean envs as shoal native env classes (usable with every backend)."""

from __future__ import annotations

from pathlib import Path

from .. import _native
from ..native import NativeEnv
from . import pyclass, source, unavailable
from .build import Library, build_library
from .errors import OceanError
from .unavailable import check_available


class OceanEnv(NativeEnv):
    """``num_envs`` C envs of one PufferLib Ocean env, stepped by shoal's native core.

    Keyword arguments are the Ocean class's own (``Snake(num_snakes=..., vision=...)``), given
    when the class is made (``shoal.ocean.env_class``) or per vector (``env_kwargs``). Those that
    change the layout (spaces, agents per env) need a class made for them. ``my_init`` runs at an
    env's first reset, with ``seed`` (for envs that read it) and ``rand()`` drawn from the env's
    own stream (seeded from the vector seed and the env's index), so every backend and thread count
    builds the same envs.

    Episodes: the env resets itself inside ``c_step``, so the final observation of an ended
    episode is what the env shows after that step (usually the next episode's first). There are no
    shoal truncations unless ``max_episode_steps`` is given: then shoal truncates and resets
    (``c_reset``) an env that ran that many steps since its last logged episode end. Infos carry the env's
    ``Log`` as PufferLib's ``vec_log`` reports it: every env's Log summed, each field divided by ``n``
    (agent episodes, for multi-agent envs), under ``my_log``'s keys. Reports come on the class's own
    cadence: every ``log_interval`` steps of the vector since its reset (PufferLib's class:
    ``self.tick % self.log_interval == 0``), a report only if an episode ended since the last; as
    there, a reset leaves the Logs alone (what c_reset writes into them is reported with the rest). A class
    without ``log_interval`` reports about once per ``num_envs`` episodes, as every native env does.
    """

    ocean: dict = {}

    log_interval = None  # the class's report cadence in steps (None: about once per num_envs episodes)

    def _check_stepping(self, num_threads: int, num_buffers: int) -> None:
        unavailable.check_one_thread(self.ocean["name"], num_threads, num_buffers)

    def _bound_params(self, per_env: list[dict]) -> list[dict]:
        resolved = {}
        params = []
        intervals = set()
        for overrides in per_env:
            overrides = dict(overrides)
            limit = overrides.pop("max_episode_steps", None)  # shoal's time limit, not the class's
            key = tuple(sorted(overrides.items(), key=lambda item: item[0]))
            if key not in resolved:
                resolved[key] = self._init_kwargs(overrides)
            init_kwargs, interval = resolved[key]
            intervals.add(interval)
            params.append(dict(init_kwargs) if limit is None else {**init_kwargs, "max_episode_steps": limit})
        if len(intervals) > 1:
            raise OceanError(
                f"{self.ocean['name']}: log_interval is the vector's report cadence, one for every env; "
                f"env_params give {sorted(intervals, key=str)}"
            )
        (self.log_interval,) = intervals
        # log_interval counts steps, not episodes: the log hears of every step
        self._log_hears_every_step = self.log_interval is not None
        return params

    def _episode_log(self, begin: int, end: int):
        log = super()._episode_log(begin, end)
        return log if self.log_interval is None else IntervalLog(log, self.log_interval)

    @classmethod
    def _init_kwargs(cls, overrides: dict) -> tuple[dict, int | None]:
        info = cls.ocean
        merged = dict(info["kwargs"])
        merged.update(overrides)
        model = _read_class(Path(info["class_path"]), merged)
        layout = _layout(model)
        if layout != info["layout"]:
            changed = {k: v for k, v in overrides.items() if info["kwargs"].get(k, info["defaults"].get(k)) != v}
            raise OceanError(
                f"{info['name']}: {changed} change the env's layout (agents per env, spaces): "
                f"{info['layout']} -> {layout}; make a class for them: "
                f"shoal.ocean.env_class({info['name']!r}, **{ {**info['kwargs'], **changed} })"
            )
        return {name: model.param_value(name) for name, _ in info["params"]}, model.log_interval

    def _report_log(self, log: dict) -> dict:
        """PufferLib's vec_log from shoal's episode log: Log fields summed over the ended episodes,
        divided by their count n. (shoal's log averages each stat over its own episodes, the env
        steps that ended some; n is among the stats, so the ratio is PufferLib's mean.) The keys
        are the Log's, as my_log names them, plus n and shoal's episode count."""
        n = log.get("n")
        if not n:
            return log
        report = {key: value / n for key, value in log.items() if key in self.ocean["stats"] and key != "n"}
        report["episodes"] = log["episodes"]  # shoal episodes: steps of an env that ended some
        report["n"] = n * log["episodes"]  # episodes the env logged (agent episodes)
        return report


class IntervalLog:
    """PufferLib's class cadence over an EpisodeLog's envs: every ``interval`` steps since the reset,
    their Logs are collected (vec_log), reported if an episode ended (n > 0)."""

    def __init__(self, log, interval: int):
        self._log = log
        self.interval = interval
        self.tick = 0

    def add(self, ended: int) -> list[dict]:
        self.tick += 1
        if self.tick % self.interval:
            return []
        log = self._log.collect()
        if not log.get("n"):
            return []
        return [self._log.report(log)]

    def clear(self) -> None:
        # A reset restarts the count, not the Logs: PufferLib's vec_reset leaves them as they are, with
        # what c_reset (and my_init) wrote into them (enduro's cars_to_pass), which the next report sums.
        self.tick = 0


_models: dict = {}


def _read_class(path: Path, kwargs: dict) -> pyclass.ClassModel:
    """read_class, remembered per (file version, keyword arguments): a Serial vector makes one
    OceanEnv per env, and each would otherwise read the class again."""
    try:
        key = (str(path), path.stat().st_mtime_ns, tuple(sorted((k, repr(v)) for k, v in kwargs.items())))
    except OSError:
        return pyclass.read_class(path, kwargs)
    if key not in _models:
        _models[key] = pyclass.read_class(path, kwargs)
    return _models[key]


def _layout(model: pyclass.ClassModel) -> tuple:
    obs, action = model.observation_space, model.action_space
    return (model.agents_per_env, str(obs.dtype), tuple(obs.shape), str(action))


def make_class(
    name: str, ocean: Path, library: Library, model: pyclass.ClassModel, kwargs: dict, defaults: dict
) -> type[OceanEnv]:
    try:
        spec = _native.load_spec(str(library.path), name)
    except ValueError as error:
        raise OceanError(
            f"Ocean env {name!r} ({ocean / name / 'binding.c'}) built but cannot be loaded: {error}"
        ) from None
    info = {
        "name": name,
        "ocean_dir": str(ocean),
        "class_path": str(model.path),
        "kwargs": dict(kwargs),
        "defaults": defaults,
        "layout": _layout(model),
        "params": library.params,
        "stats": library.stats,
        "library": library,
    }
    class_name = "Ocean" + "".join(part.capitalize() for part in name.split("_"))
    doc = f"PufferLib Ocean env {name!r} ({model.class_name}), compiled from {ocean / name}.\n\n" + (
        OceanEnv.__doc__ or ""
    )
    return type(class_name, (OceanEnv,), {"spec": spec, "ocean": info, "__doc__": doc, "__module__": "shoal.ocean"})


def env_class(name: str, source_tree=None, **kwargs) -> type[OceanEnv]:
    """A shoal native env class for Ocean env ``name``, built (once, then cached) from
    ``source_tree`` (a PufferLib repository root or its pufferlib/ocean folder), or from the
    pinned pufferlib 3.0.0 sdist when None. ``kwargs`` are the Ocean class's keyword arguments."""
    ocean = source.ocean_dir(source_tree)
    check_available(name, ocean)
    folder = source.env_dir(ocean, name)
    class_path = folder / f"{name}.py"
    defaults = pyclass.read_signature(class_path).defaults
    model = pyclass.read_class(class_path, kwargs)
    library = build_library(name, folder, model)
    return make_class(
        name, ocean, library, model, kwargs, {k: v for k, v in defaults.items() if not isinstance(v, pyclass._Unknown)}
    )
