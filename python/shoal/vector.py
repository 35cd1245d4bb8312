"""shoal.vector: make(), PufferLib 3.0's entry point to every backend."""

from __future__ import annotations

import inspect

from .backends.caller_side.env_split import worker_layout
from .backends.options import check_common, check_rule, check_values
from .backends.registry import (
    backend_names,
    backend_options,
    options_doc,
    register_backend,
    resolve_backend,
)
from .buffers import PYTHON_ENV_BYTES, check_estimate, native_vector_estimate, out_of_memory
from .errors import APIUsageError
from .native import is_native_env
from .native.spec import action_space, observation_space
from .pufferenv import PufferEnv
from .validation import is_integer


def __getattr__(name: str):
    # shoal.vector.Serial, shoal.vector.Multiprocessing ... without importing every backend up front.
    if name in backend_names():
        return resolve_backend(name)
    raise AttributeError(f"module 'shoal.vector' has no attribute {name!r}")


def _per_env_list(value, num_envs: int, name: str, kind: tuple, kind_name: str) -> list:
    """Per-env values: a list of num_envs entries, or one shared value (an empty args tuple / a dict)."""
    if isinstance(value, list) and len(value) == num_envs and all(isinstance(v, kind) for v in value):
        return value
    if name == "env_kwargs" and isinstance(value, dict):
        return [value] * num_envs
    if name == "env_args" and value == ():
        return [()] * num_envs
    raise APIUsageError(
        f"with a list of env creators, {name} must be a list of {num_envs} {kind_name} (one per env), got {value!r}"
    )


def _per_env_arguments(env_creator_or_creators, env_args, env_kwargs, num_envs: int):
    """(creators, args, kwargs), each a list with one entry per env."""
    env_args = () if env_args is None else env_args
    env_kwargs = {} if env_kwargs is None else env_kwargs
    if isinstance(env_creator_or_creators, (list, tuple)):
        # A list of creators comes with per-env lists of args and kwargs (or shared ones).
        env_creators = list(env_creator_or_creators)
        if len(env_creators) != num_envs:
            raise APIUsageError(
                f"got {len(env_creators)} env creators for num_envs={num_envs}; pass one creator or exactly one per env"
            )
        env_args = _per_env_list(env_args, num_envs, "env_args", (list, tuple), "lists or tuples")
        env_kwargs = _per_env_list(env_kwargs, num_envs, "env_kwargs", (dict,), "dicts")
        for i, creator in enumerate(env_creators):
            if not callable(creator):
                raise APIUsageError(f"env creator {i} is not callable: {creator!r}")
        return env_creators, [tuple(args) for args in env_args], env_kwargs
    if not callable(env_creator_or_creators):
        raise APIUsageError(f"env creator 0 is not callable: {env_creator_or_creators!r}")
    if not isinstance(env_args, (list, tuple)):
        raise APIUsageError(f"env_args must be a list or tuple of arguments, got {env_args!r}")
    if not isinstance(env_kwargs, dict):
        raise APIUsageError(f"env_kwargs must be a dict, got {env_kwargs!r}")
    what = "per-env lists of creators, args and kwargs"  # counted by check_memory
    try:
        return [env_creator_or_creators] * num_envs, [tuple(env_args)] * num_envs, [env_kwargs] * num_envs
    except MemoryError:
        raise out_of_memory(3 * 8 * num_envs, num_envs, what) from None


def check_memory(creator, env_kwargs, backend_cls, num_envs: int) -> None:
    """Refuses (VectorTooLarge, with the estimate) a vector that cannot fit in the available memory,
    before anything is allocated: the per-env lists, and for a native env class everything its
    native vector holds (under PufferEnv the one object holds env_kwargs' num_envs envs). Python envs
    built on this machine (``python_envs_here``) count at least PYTHON_ENV_BYTES each; their backend
    counts its buffers once the driver env has told the spaces."""
    parts = [("per-env lists of creators, args and kwargs", 3 * 8 * num_envs)]
    envs = num_envs
    if getattr(backend_cls, "python_envs_here", False) and not is_native_env(creator):
        parts.append((f"{num_envs:,} env objects (at least)", num_envs * PYTHON_ENV_BYTES))
    if is_native_env(creator) and (env_kwargs is None or isinstance(env_kwargs, dict)):
        if backend_cls is PufferEnv:
            envs = (env_kwargs or {}).get("num_envs", 1)
        if is_integer(envs) and envs >= 1:
            info = creator.describe()
            joint_rows = () if backend_cls is PufferEnv else (envs * int(info["num_agents"]),)
            parts += native_vector_estimate(info, envs, observation_space(info), action_space(info), joint_rows)
        else:
            envs = num_envs  # the env refuses it itself
    check_estimate(parts, envs)


def check_arguments(creator, args: tuple, kwargs: dict) -> None:
    """APIUsageError if ``creator`` cannot take ``args`` and ``kwargs`` (unknown or missing parameters)."""
    try:
        signature = inspect.signature(creator)
    except (TypeError, ValueError):
        return  # builtins and extension types may not tell; calling them will
    try:
        signature.bind(*args, **kwargs)
    except TypeError as error:
        name = getattr(creator, "__name__", repr(creator))
        raise APIUsageError(
            f"env creator {name}{signature} cannot take env_args={list(args)} and env_kwargs={kwargs}: {error}"
        ) from None


def _make_pufferenv(creator, args: tuple, kwargs: dict, num_envs: int, seed: int, box_actions=None) -> PufferEnv:
    # The backend's constructor is this function: the option table's rule for it (num_envs is 1).
    check_rule(PufferEnv, num_envs, {} if box_actions is None else {"box_actions": box_actions})
    check_arguments(creator, args, kwargs)
    env = creator(*args, **kwargs)
    if not isinstance(env, PufferEnv):
        raise APIUsageError(
            f"backend PufferEnv needs a creator that returns a shoal PufferEnv, got "
            f"{type(env).__name__}; wrap Gymnasium/PettingZoo envs with backend Serial "
            "or Multiprocessing"
        )
    env.seed = seed
    if box_actions is not None and box_actions != env.box_actions:
        env.set_box_actions(box_actions)
    return env


def make(env_creator_or_creators, env_args=None, env_kwargs=None, backend=PufferEnv, num_envs=1, seed=0, **kwargs):
    """Builds a vectorized env (PufferLib 3.0 semantics).

    ``backend`` is a class or a name: "PufferEnv" (default; one env object holding many agents,
    num_envs must be 1), "Serial", "Multiprocessing", "Multithreading", "Ray".
    ``env_creator_or_creators`` is one callable or a list of num_envs callables; ``env_args`` /
    ``env_kwargs`` are shared by all envs or lists with one entry per env. ``num_envs`` (>= 1) envs
    are made; env i's first reset is seeded with ``shoal.seeding.env_seed(seed, i)``.

    ``device`` (``"cuda"``, ``"cuda:1"``, ``"cpu"`` or a ``torch.device``) returns a
    :class:`shoal.handoff.TorchVector` around the vector: batches arrive as torch tensors on that
    device and actions are taken as tensors (the numpy API is unchanged without it; needs torch).

    Every other keyword is an option of the chosen backend (the same names as config.ini's [vec]
    keys); a keyword the backend does not take, or a bad value, is an APIUsageError before anything
    is built. The options, from the option table (shoal/backends/options.py):

    """
    device = kwargs.pop("device", None)
    if device is not None:
        from .handoff import require_torch

        require_torch()  # before anything is built
    backend_cls = resolve_backend(backend)
    # The option table's checks of the values (backends/options.py), before the memory estimate; the
    # backend's constructor applies the whole table (its rules across options too).
    num_envs, seed = check_common(num_envs, seed)
    valid = backend_options(backend_cls)
    unknown = sorted(set(kwargs) - set(valid))
    if unknown:
        raise APIUsageError(
            f"invalid argument(s) {unknown} for backend {backend_cls.__name__}; "
            f"valid: {sorted(valid) or 'none beyond num_envs and seed'}"
        )
    check_values(backend_cls, kwargs)
    check_memory(env_creator_or_creators, env_kwargs, backend_cls, num_envs)
    env_creators, env_args, env_kwargs = _per_env_arguments(env_creator_or_creators, env_args, env_kwargs, num_envs)
    if backend_cls is PufferEnv:
        vecenv = _make_pufferenv(env_creators[0], env_args[0], env_kwargs[0], num_envs, seed, **kwargs)
    else:
        vecenv = backend_cls(env_creators, env_args, env_kwargs, num_envs, seed=seed, **kwargs)
    return vecenv if device is None else _on_device(vecenv, device)


def _on_device(vecenv, device):
    """``vecenv`` handing its batches to ``device`` (closed again if the device is refused)."""
    from .handoff import TorchVector

    try:
        return TorchVector(vecenv, device)
    except BaseException:
        vecenv.close()
        raise


make.__doc__ = make.__doc__.rstrip() + "\n\n" + options_doc() + "\n"

# The registry's functions and worker_layout are re-exported: shoal.vector is where users find them.
__all__ = [
    "make",
    "register_backend",
    "resolve_backend",
    "backend_names",
    "worker_layout",
    "PufferEnv",
    "APIUsageError",
]
