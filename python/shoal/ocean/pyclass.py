"""Reads an Ocean env's Python class without importing PufferLib, torch or the class's module.

The class (``pufferlib/ocean/<name>/<name>.py``) is where PufferLib keeps what the C code does not
say: the observation and action spaces, the agents per C env, and the keyword arguments handed to
the binding's ``my_init`` (with their defaults and whatever the class computes from them). This
module runs the class's ``__init__`` through shoal.ocean.pyinterp's small interpreter over its
syntax tree; nothing else from the file runs. The call to ``binding.vec_init`` or
``binding.env_init`` is recorded (its keywords are ``my_init``'s keyword arguments); everything the
interpreter cannot evaluate becomes an error only if one of those results depends on it.
"""

from __future__ import annotations

import ast
import numbers
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from gymnasium import spaces

from .errors import OceanError
from .pyinterp import BINDING_CALLS, SharedState, _Interpreter, _Refused, _Stop, _Unknown, _Unsupported

# Keyword arguments of every Ocean class that shoal supplies itself (not user parameters).
SUPPLIED = ("num_envs", "buf", "seed", "render_mode")
SHARED_PREFIX = "shared:"  # parameters that are binding.shared()'s keywords (shoal_ocean_shared.h)


@dataclass
class ClassModel:
    """What an Ocean env's Python class says about one C env, for given keyword arguments."""

    path: Path
    class_name: str
    agents_per_env: int
    observation_space: spaces.Box
    action_space: spaces.Space
    init_kwargs: dict = field(default_factory=dict)  # my_init's keyword arguments (numbers)
    log_interval: int | None = None  # the class's step reports every that many steps (self.tick % ...)
    shared_key: str | None = None  # the my_init keyword that receives binding.shared()'s state (MY_SHARED)
    shared_kwargs: dict = field(default_factory=dict)  # binding.shared()'s keyword arguments (numbers)

    def param_value(self, name: str):
        """The value of a parameter of param_table: a my_init keyword, or "shared:<keyword>" of shared()."""
        if name.startswith(SHARED_PREFIX):
            return self.shared_kwargs[name[len(SHARED_PREFIX) :]]
        return self.init_kwargs.get(name, 0)


@dataclass
class ClassSignature:
    path: Path
    class_name: str
    defaults: dict  # user-facing keyword arguments and their defaults


# ---- public -----------------------------------------------------------------------------------


def _parse(path: Path) -> tuple[ast.Module, ast.ClassDef, ast.FunctionDef]:
    try:
        source = path.read_text()
        tree = ast.parse(source, filename=str(path))
    except (OSError, UnicodeDecodeError) as error:
        raise OceanError(f"cannot read the env's Python class {path}: {error}") from None
    except SyntaxError as error:
        raise OceanError(
            f"cannot read the env's Python class {path}: syntax error on line {error.lineno}: {error.msg}"
        ) from None
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if (
                isinstance(item, ast.FunctionDef)
                and item.name == "__init__"
                and any(isinstance(n, ast.Attribute) and n.attr in BINDING_CALLS for n in ast.walk(item))
            ):
                return tree, node, item
    raise OceanError(
        f"cannot read the env's Python class {path}: no class whose __init__ calls binding.vec_init or binding.env_init"
    )


def read_signature(path: Path) -> ClassSignature:
    """The class's user-facing keyword arguments and their defaults."""
    tree, cls, init = _parse(path)
    interpreter = _Interpreter(path)
    interpreter.run_module(tree)
    return ClassSignature(path, cls.name, _defaults(interpreter, init, path))


def _defaults(interpreter: _Interpreter, init: ast.FunctionDef, path: Path) -> dict:
    args = init.args
    positional = args.posonlyargs + args.args
    defaults: dict = {}
    padded = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(positional, padded)) + list(zip(args.kwonlyargs, args.kw_defaults))
    for arg, default in pairs:
        if arg.arg == "self":
            continue
        if default is None:
            raise OceanError(f"cannot read the env's Python class {path}: __init__ argument {arg.arg!r} has no default")
        defaults[arg.arg] = interpreter.eval_lazy(default, {}, None)
    return defaults


def _report_interval_name(cls: ast.ClassDef) -> str | None:
    """X of ``self.tick % self.X`` in the class's step (log_interval or report_interval): PufferLib's
    class calls vec_log when that is 0; None if step has no such test."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "step":
            for expr in ast.walk(node):
                if (
                    isinstance(expr, ast.BinOp)
                    and isinstance(expr.op, ast.Mod)
                    and _is_self_attribute(expr.left, "tick")
                    and _is_self_attribute(expr.right)
                ):
                    return expr.right.attr
    return None


def _is_self_attribute(node: ast.expr, name: str | None = None) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and (name is None or node.attr == name)
    )


def read_class(path: Path, overrides: dict | None = None) -> ClassModel:
    """Runs the class's __init__ for one C env (num_envs=1) with ``overrides`` of its keyword
    arguments; returns the spaces, agents per env and my_init's keyword arguments."""
    tree, cls, init = _parse(path)
    interpreter = _Interpreter(path)
    interpreter.run_module(tree)
    defaults = _defaults(interpreter, init, path)
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - (set(defaults) - set(SUPPLIED)))
    if unknown:
        valid = sorted(set(defaults) - set(SUPPLIED))
        raise OceanError(f"{cls.name} ({path}) has no keyword argument(s) {unknown}; valid: {valid}")
    scope = dict(defaults)
    scope.update(overrides)
    scope.update({"num_envs": 1, "buf": None, "seed": 0})
    self_attrs: dict = {}

    def fail(why: str, line: int = 0) -> OceanError:
        where = f"{path}:{line}" if line else str(path)
        return OceanError(f"cannot read the env's Python class {cls.name} ({where}): {why}")

    try:
        interpreter.exec_block(init.body, scope, self_attrs)
    except _Stop:
        pass
    except _Refused as refused:
        raise OceanError(
            f"{cls.name} ({path}:{refused.line}) refuses these keyword arguments: {refused.message}"
        ) from None
    except _Unsupported as error:
        raise fail(error.why, error.line) from None
    except (TypeError, ValueError, ArithmeticError, IndexError, KeyError) as error:
        raise fail(f"{type(error).__name__}: {error}") from None

    def attribute(name: str):
        if name not in self_attrs:
            raise fail(f"__init__ never sets self.{name}")
        value = self_attrs[name]
        if isinstance(value, _Unknown):
            raise fail(f"self.{name}: {value.error.why}", value.error.line)
        return value

    observation_space = attribute("single_observation_space")
    action_space = attribute("single_action_space")
    num_agents = attribute("num_agents")
    if not isinstance(observation_space, spaces.Box):
        raise fail(f"single_observation_space must be a Box, got {observation_space}")
    if not isinstance(action_space, (spaces.Discrete, spaces.MultiDiscrete, spaces.Box)):
        raise fail(f"single_action_space must be Discrete, MultiDiscrete or Box, got {action_space}")
    if isinstance(num_agents, bool) or not isinstance(num_agents, numbers.Integral) or num_agents < 1:
        raise fail(f"self.num_agents must be a positive integer, got {num_agents!r}")
    call = interpreter.binding_call
    if call is None:
        raise fail("__init__ did not reach its binding.vec_init/env_init call with these keyword arguments")
    init_kwargs = {}
    shared: SharedState | None = None
    shared_key = None
    for key, value in call["kwargs"].items():
        if isinstance(value, SharedState):
            if shared is not None:
                raise fail(f"binding.{call['function']} gets binding.shared()'s state twice", call["line"])
            shared, shared_key = value, key
            continue
        init_kwargs[key] = _number(key, value, f"binding.{call['function']}", call["line"], fail)
    shared_kwargs = {}
    if shared is not None:
        shared_kwargs = {
            key: _number(key, value, "binding.shared", shared.line, fail) for key, value in shared.kwargs.items()
        }
    interval_name = _report_interval_name(cls)
    log_interval = None if interval_name is None else attribute(interval_name)
    if log_interval is not None:
        if isinstance(log_interval, bool) or not isinstance(log_interval, numbers.Integral) or log_interval < 1:
            raise fail(f"self.{interval_name} (step's report cadence) must be a positive integer, got {log_interval!r}")
        log_interval = int(log_interval)
    return ClassModel(
        path,
        cls.name,
        int(num_agents),
        observation_space,
        action_space,
        init_kwargs,
        log_interval,
        shared_key,
        shared_kwargs,
    )


def _number(key: str, value, function: str, line: int, fail):
    """A keyword argument the binding unpacks: a number (a numpy scalar as its Python value)."""
    if isinstance(value, _Unknown):
        raise fail(f"keyword {key!r} of {function}: {value.error.why}", line)
    if isinstance(value, np.bool_):
        value = bool(value)
    if not isinstance(value, numbers.Real):
        raise fail(f"keyword {key!r} of {function} is {value!r}; shoal passes numbers only", line)
    return value.item() if isinstance(value, np.generic) else value
