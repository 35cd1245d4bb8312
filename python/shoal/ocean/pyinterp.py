"""A small interpreter over the syntax tree of a Python class's ``__init__`` (never importing it).

Constants, arithmetic, ``if``/``for``, ``self.x = ...``, ``gymnasium.spaces`` constructors and a few
builtins and numpy names evaluate; the call to ``binding.vec_init`` or ``binding.env_init`` is
recorded (``binding_call``). Whatever it cannot evaluate becomes an ``_Unknown`` that is an error only
where a result depends on it. shoal.ocean.pyclass runs an Ocean class's ``__init__`` with it.
"""

from __future__ import annotations

import ast
import builtins
import math
from pathlib import Path

import numpy as np
from gymnasium import spaces

BINDING_CALLS = ("vec_init", "env_init")
SHARED_CALL = "shared"  # the binding's my_shared (MY_SHARED)

_NUMPY_NAMES = {
    "float32",
    "float64",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "bool_",
    "inf",
    "pi",
    "e",
    "ceil",
    "floor",
    "sqrt",
    "prod",
    "sum",
    "array",
    "log2",
    "int_",
    "float16",
}
_BUILTINS = {
    "int",
    "float",
    "bool",
    "min",
    "max",
    "sum",
    "len",
    "abs",
    "round",
    "range",
    "zip",
    "list",
    "tuple",
    "enumerate",
    "str",
    "dict",
    "sorted",
    "reversed",
    "any",
    "all",
    "isinstance",
}
_SPACES = {"Box": spaces.Box, "Discrete": spaces.Discrete, "MultiDiscrete": spaces.MultiDiscrete}


class _Unsupported(Exception):
    def __init__(self, node: ast.AST, why: str):
        super().__init__(why)
        self.line = getattr(node, "lineno", 0)
        self.why = why


class _Unknown:
    """A value the interpreter could not compute; using it is an error naming where it came from."""

    def __init__(self, error: _Unsupported):
        self.error = error


class _Namespace:
    def __init__(self, name: str, members: dict):
        self.name, self.members = name, members


class _Stop(Exception):
    pass


class _Module:
    pass


def _numpy_namespace():
    return _Namespace("numpy", {name: getattr(np, name) for name in _NUMPY_NAMES if hasattr(np, name)})


def _spaces_namespace():
    return _Namespace("spaces", dict(_SPACES))


def _gym_namespace():
    return _Namespace("gymnasium", {"spaces": _spaces_namespace()})


class _Interpreter:
    def __init__(self, path: Path):
        self.path = path
        self.globals: dict = {}
        self.binding_call: dict | None = None

    # ---- imports and module scope -------------------------------------------------------------
    def run_module(self, tree: ast.Module) -> None:
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.globals[(alias.asname or alias.name).split(".")[0]] = self._module(alias.name)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    self.globals[alias.asname or alias.name] = self._from_import(node.module or "", alias.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                self.exec_block([node], self.globals, None)

    def _module(self, name: str):
        root = name.split(".")[0]
        if root == "numpy":
            return _numpy_namespace()
        if root in ("gymnasium", "gym"):
            return _gym_namespace()
        if root == "pufferlib":
            return _Namespace("pufferlib", {"spaces": _spaces_namespace()})
        if root == "math":
            return _Namespace("math", {n: getattr(math, n) for n in ("ceil", "floor", "sqrt", "inf", "pi", "log2")})
        return _Unknown(_Unsupported(ast.Module(), f"module {name} is not read by shoal"))

    def _from_import(self, module: str, name: str):
        if name == "binding":
            return _Namespace("binding", {})
        if name == "spaces" and module.split(".")[0] in ("gymnasium", "gym", "pufferlib"):
            return _spaces_namespace()
        if module.endswith("spaces") and name in _SPACES:
            return _SPACES[name]
        return _Unknown(_Unsupported(ast.Module(), f"{module}.{name} is not read by shoal"))

    # ---- statements ------------------------------------------------------------------------------
    def exec_block(self, body: list, scope: dict, self_attrs: dict | None) -> None:
        for node in body:
            self.exec_statement(node, scope, self_attrs)

    def exec_statement(self, node: ast.stmt, scope: dict, self_attrs: dict | None) -> None:
        if isinstance(node, ast.Assign):
            value = self.eval_lazy(node.value, scope, self_attrs)
            for target in node.targets:
                self.assign(target, value, scope, self_attrs)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.assign(node.target, self.eval_lazy(node.value, scope, self_attrs), scope, self_attrs)
        elif isinstance(node, ast.AugAssign):
            binary = ast.BinOp(left=_load(node.target), op=node.op, right=node.value)
            ast.copy_location(binary, node)
            self.assign(node.target, self.eval_lazy(binary, scope, self_attrs), scope, self_attrs)
        elif isinstance(node, ast.If):
            test = self.eval(node.test, scope, self_attrs)
            self.exec_block(node.body if test else node.orelse, scope, self_attrs)
        elif isinstance(node, ast.For):
            for item in self.eval(node.iter, scope, self_attrs):
                self.assign(node.target, item, scope, self_attrs)
                self.exec_block(node.body, scope, self_attrs)
        elif isinstance(node, ast.Expr):
            self.eval_lazy(node.value, scope, self_attrs)  # records a binding call made for its effect
        elif isinstance(node, ast.Raise):
            message = ""
            if isinstance(node.exc, ast.Call) and node.exc.args:
                value = self.eval_lazy(node.exc.args[0], scope, self_attrs)
                message = value if isinstance(value, str) else ""
            raise _Refused(node.lineno, message or ast.unparse(node.exc or node))
        elif isinstance(node, ast.Return):
            raise _Stop()
        elif isinstance(node, (ast.Pass, ast.Assert, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)):
            pass
        elif isinstance(node, ast.Try):
            self.exec_block(node.body, scope, self_attrs)
        # Anything else (while, with, nested defs) cannot produce what shoal reads from the class.

    def assign(self, target: ast.expr, value, scope: dict, self_attrs: dict | None) -> None:
        if isinstance(target, ast.Name):
            scope[target.id] = value
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and self_attrs is not None
        ):
            self_attrs[target.attr] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, _Unknown):
                items = [value] * len(target.elts)
            else:
                items = list(value)
            for element, item in zip(target.elts, items, strict=True):
                self.assign(element, item, scope, self_attrs)
        # Subscript targets (list items) change nothing shoal reads.

    # ---- expressions ---------------------------------------------------------------------------
    def eval_lazy(self, node: ast.expr, scope: dict, self_attrs: dict | None):
        try:
            return self.eval(node, scope, self_attrs)
        except _Unsupported as error:
            unknown = _Unknown(error)
        except (TypeError, ValueError, ArithmeticError, IndexError, KeyError, AttributeError) as error:
            unknown = _Unknown(_Unsupported(node, f"{type(error).__name__}: {error}"))
        # A binding call nested in what failed (`c_envs.append(binding.env_init(...))`) still counts.
        for inner in ast.walk(node):
            if (
                self.binding_call is None
                and inner is not node
                and isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Attribute)
                and inner.func.attr in BINDING_CALLS
            ):
                self.eval_lazy(inner, scope, self_attrs)
        return unknown

    def eval(self, node: ast.expr, scope: dict, self_attrs: dict | None):
        value = self._eval(node, scope, self_attrs)
        if isinstance(value, _Unknown):
            raise value.error
        return value

    def _eval(self, node, scope, self_attrs):
        ev = lambda n: self.eval(n, scope, self_attrs)  # noqa: E731
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in scope:
                return scope[node.id]
            if node.id in self.globals:
                return self.globals[node.id]
            if node.id in _BUILTINS:
                return getattr(builtins, node.id)
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            raise _Unsupported(node, f"name {node.id!r} is not defined where shoal reads it")
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self" and self_attrs is not None:
                if node.attr in self_attrs:
                    return self_attrs[node.attr]
                raise _Unsupported(node, f"self.{node.attr} is read before it is set")
            base = ev(node.value)
            if isinstance(base, _Namespace):
                if node.attr in base.members:
                    return base.members[node.attr]
                if base.name == "binding":
                    return _BindingFunction(node.attr)
                raise _Unsupported(node, f"{base.name}.{node.attr} is not read by shoal")
            if isinstance(base, spaces.Space) and node.attr in ("shape", "n", "nvec", "dtype", "low", "high"):
                return getattr(base, node.attr)
            raise _Unsupported(node, f"attribute {node.attr!r} of {type(base).__name__} is not read by shoal")
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](ev(node.operand))
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                result = True
                for value in node.values:
                    result = ev(value)
                    if not result:
                        return result
                return result
            result = False
            for value in node.values:
                result = ev(value)
                if result:
                    return result
            return result
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = ev(right_node)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return ev(node.body) if ev(node.test) else ev(node.orelse)
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [ev(e) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Dict):
            return {ev(k): ev(v) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.Subscript):
            container = ev(node.value)
            if isinstance(node.slice, ast.Slice):
                parts = [
                    ev(p) if p is not None else None for p in (node.slice.lower, node.slice.upper, node.slice.step)
                ]
                return container[slice(*parts)]
            return container[ev(node.slice)]
        if (
            isinstance(node, (ast.ListComp, ast.GeneratorExp))
            and len(node.generators) == 1
            and not node.generators[0].ifs
        ):
            generator = node.generators[0]
            items = []
            for item in ev(generator.iter):
                inner = dict(scope)
                self.assign(generator.target, item, inner, self_attrs)
                items.append(self.eval(node.elt, inner, self_attrs))
            return items
        if isinstance(node, ast.JoinedStr):
            return "".join(str(ev(v.value)) if isinstance(v, ast.FormattedValue) else str(v.value) for v in node.values)
        if isinstance(node, ast.Call):
            function = ev(node.func)
            args = []
            for a in node.args:
                if isinstance(a, ast.Starred):
                    if isinstance(function, _BindingFunction):
                        continue
                    args.extend(ev(a.value))
                else:
                    args.append(None if isinstance(function, _BindingFunction) else ev(a))
            kwargs = {}
            for k in node.keywords:
                if k.arg is None:
                    kwargs.update(ev(k.value))
                elif isinstance(function, _BindingFunction):  # an unreadable keyword fails only if used
                    kwargs[k.arg] = self.eval_lazy(k.value, scope, self_attrs)
                else:
                    kwargs[k.arg] = ev(k.value)
            if isinstance(function, _BindingFunction):
                if function.name in BINDING_CALLS and self.binding_call is None:
                    self.binding_call = {"function": function.name, "kwargs": kwargs, "line": node.lineno}
                if function.name == SHARED_CALL:
                    return SharedState(kwargs, node.lineno)
                return None
            if function in _ALLOWED_CALLS or function in _SPACES.values():
                return function(*args, **kwargs)
            raise _Unsupported(node, f"call of {ast.unparse(node.func)} is not read by shoal")
        raise _Unsupported(node, f"{type(node).__name__} expressions are not read by shoal")


class _Refused(Exception):
    """The class raised (its own check refused the keyword arguments)."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line, self.message = line, message


class SharedState:
    """What ``binding.shared(**kwargs)`` returns (MY_SHARED): the state every env of a vector reads,
    built by the binding's my_shared from these keywords."""

    def __init__(self, kwargs: dict, line: int):
        self.kwargs = kwargs
        self.line = line


class _BindingFunction:
    def __init__(self, name: str):
        self.name = name


def _load(target: ast.expr) -> ast.expr:
    copy = ast.parse(ast.unparse(target), mode="eval").body
    return ast.copy_location(copy, target)


_ALLOWED_CALLS = {getattr(builtins, n) for n in _BUILTINS} | {
    np.ceil,
    np.floor,
    np.sqrt,
    np.prod,
    np.sum,
    np.array,
    np.log2,
    math.ceil,
    math.floor,
    math.sqrt,
    math.log2,
    np.float32,
    np.float64,
    np.int32,
    np.int64,
    np.uint8,
    np.int8,
}

import operator as _op  # noqa: E402

_BINARY = {
    ast.Add: _op.add,
    ast.Sub: _op.sub,
    ast.Mult: _op.mul,
    ast.Div: _op.truediv,
    ast.FloorDiv: _op.floordiv,
    ast.Mod: _op.mod,
    ast.Pow: _op.pow,
    ast.LShift: _op.lshift,
    ast.RShift: _op.rshift,
    ast.BitOr: _op.or_,
    ast.BitAnd: _op.and_,
    ast.BitXor: _op.xor,
}
_UNARY = {ast.USub: _op.neg, ast.UAdd: _op.pos, ast.Not: _op.not_, ast.Invert: _op.invert}
_COMPARE = {
    ast.Eq: _op.eq,
    ast.NotEq: _op.ne,
    ast.Lt: _op.lt,
    ast.LtE: _op.le,
    ast.Gt: _op.gt,
    ast.GtE: _op.ge,
    ast.Is: _op.is_,
    ast.IsNot: _op.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
