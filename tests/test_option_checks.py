"""Issue 56: options are checked once. Each rule about num_envs, batch_size / num_buffers and schedule
is worded in one place, the option-checking layer, and make() and a backend class built directly
refuse a bad value with the same message (the table applied in the constructor both share)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import shoal
from shoal.backends.multiprocessing import Multiprocessing
from shoal.backends.multithreading import Multithreading
from shoal.backends.serial import Serial
from shoal.envs import CartPole
from shoal.errors import APIUsageError
from shoal.vector import make

PACKAGE_DIR = Path(shoal.__file__).parent

#: where an option's rule may be worded: the core checks native envs share (validation), the option
#: table and the backends' rules (backends/options), the worker layout (make()'s public worker_layout)
OPTION_LAYER = {"validation.py", "backends/options.py", "backends/caller_side/env_split.py"}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _sites(path: Path):
    """(line, kind, text) of each message a module could raise: its strings (an f-string with ``{}`` for
    each placeholder; docstrings left out), each ``check_integer``/``check_choice`` call with a literal
    name (``check_integer:num_envs``), and each tuple of string literals (``tuple:static,dynamic``)."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            yield node.lineno, "string", text
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in ("check_integer", "check_choice") and len(node.args) > 1:
                arg = node.args[1]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    yield node.lineno, "call", f"{name}:{arg.value}"
        elif isinstance(node, ast.Tuple) and node.elts and all(isinstance(e, ast.Constant) for e in node.elts):
            yield node.lineno, "tuple", "tuple:" + ",".join(str(e.value) for e in node.elts)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, "string", node.value


def _modules():
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        text = path.read_text()
        if "sys.modules[__name__] = " in text:
            continue  # an alias kept at an old path
        yield path.relative_to(PACKAGE_DIR).as_posix(), path


@functools.cache
def _all_sites() -> list[tuple[str, int, str, str]]:
    return [(name, *site) for name, path in _modules() for site in _sites(path)]


#: each rule, and how its message is recognized
RULES = {
    "num_envs is an integer >= 1": lambda kind, text: text == "check_integer:num_envs",
    "schedule's values (the check)": lambda kind, text: text == "check_choice:schedule",
    "schedule's values (the list)": lambda kind, text: text == "tuple:static,dynamic",
    "num_buffers divides num_envs": lambda kind, text: "num_buffers must divide num_envs" in text,
    "Multithreading: batch_size divides num_envs": lambda kind, text: ") must divide num_envs (" in text,
    "Serial: batch_size is num_envs": lambda kind, text: "must be num_envs or None" in text,
    "PufferEnv: num_envs is 1": lambda kind, text: "so num_envs must be 1" in text,
    "workers: num_workers divides num_envs": lambda kind, text: "must be divisible by num_workers" in text,
    "workers: batch_size <= num_envs": lambda kind, text: "must be <= num_envs" in text,
    "workers: batch_size is whole workers": lambda kind, text: "must be divisible by num_envs / num_workers" in text,
    "workers: zero_copy batches divide num_envs": lambda kind, text: "divisible by batch_size" in text,
}


@pytest.mark.parametrize("rule", list(RULES))
def test_each_option_rule_is_worded_in_one_place(rule):
    matches = RULES[rule]
    found = [f"{name}:{line}" for name, line, kind, text in _all_sites() if matches(kind, text)]
    assert len(found) == 1, f"{rule}: worded at {found or 'no place'}; it must be worded once"
    assert found[0].split(":")[0] in OPTION_LAYER, f"{rule}: worded at {found[0]}, outside the option layer"


def test_the_backends_leave_option_checks_to_the_table():
    """Below the option layer a backend asserts what the table made sure of; it does not check again."""
    checks = {"check_num_envs", "check_schedule", "check_num_buffers"}
    found = []
    for name, path in _modules():
        if not name.startswith("backends/") or name in OPTION_LAYER or name == "backends/registry.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if called in checks:
                    found.append(f"{name}:{node.lineno} calls {called}")
    assert not found, found


def _refuse_env_building(*args, **kwargs):
    raise AssertionError("an env was built before the options were checked")


def _python_creator(buf=None):
    _refuse_env_building()


def _message(build) -> str:
    with pytest.raises(APIUsageError) as info:
        build()
    return str(info.value)


#: backend -> creator, (bad options, ...) each refused by the option layer
BAD = {
    "Serial": (
        _python_creator,
        [
            {"num_envs": 0},
            {"num_envs": "4"},
            {"num_envs": 4, "batch_size": 2},
            {"num_envs": 4, "batch_size": 0},
        ],
    ),
    "Multiprocessing": (
        _python_creator,
        [
            {"num_envs": 0},
            {"num_envs": True},
            {"num_envs": 4, "num_workers": 2, "batch_size": 3},
            {"num_envs": 4, "num_workers": 2, "batch_size": 0},
            {"num_envs": 4, "num_workers": 2, "batch_size": 8},
            {"num_envs": 4, "num_workers": 3},
        ],
    ),
    "Multithreading": (
        CartPole,
        [
            {"num_envs": 0},
            {"num_envs": 2.0},
            {"num_envs": 4, "batch_size": 3},
            {"num_envs": 4, "batch_size": 0},
            {"num_envs": 4, "batch_size": 8},
            {"num_envs": 4, "schedule": "fast"},
            {"num_envs": 4, "schedule": None},
        ],
    ),
}
CASES = [(backend, options) for backend, (_, bad) in BAD.items() for options in bad]
CLASSES = {"Serial": Serial, "Multiprocessing": Multiprocessing, "Multithreading": Multithreading}


@pytest.mark.parametrize("backend, options", CASES, ids=[f"{b}-{o}" for b, o in CASES])
def test_make_and_the_backend_class_say_the_same(backend, options):
    creator = BAD[backend][0]
    options = dict(options)
    num_envs = options.pop("num_envs")
    via_make = _message(lambda: make(creator, backend=backend, num_envs=num_envs, **options))
    # Direct construction with lists of one env (make() would not get that far with a bad num_envs).
    count = num_envs if isinstance(num_envs, int) and not isinstance(num_envs, bool) and num_envs > 0 else 1
    lists = ([creator] * count, [()] * count, [{}] * count)
    direct = _message(lambda: CLASSES[backend](*lists, num_envs, seed=0, **options))
    assert direct == via_make


@pytest.mark.parametrize("options", [{"num_envs": 0}, {"num_envs": 4, "num_workers": 2, "batch_size": 3}])
def test_ray_refuses_a_bad_option_before_ray_starts(monkeypatch, options):
    import shoal.backends.ray as ray_backend

    monkeypatch.setattr(ray_backend, "import_ray", lambda: pytest.fail("Ray was started for a bad option"))
    options = dict(options)
    num_envs = options.pop("num_envs")
    via_make = _message(lambda: make(_python_creator, backend="Ray", num_envs=num_envs, **options))
    count = max(num_envs, 1)
    lists = ([_python_creator] * count, [()] * count, [{}] * count)
    assert _message(lambda: ray_backend.Ray(*lists, num_envs, seed=0, **options)) == via_make


@pytest.mark.parametrize(
    "env_kwargs",
    [{"num_envs": 0}, {"num_envs": "2"}, {"num_envs": 4, "num_buffers": 3}, {"schedule": "fast"}],
)
def test_make_and_a_native_env_class_say_the_same(env_kwargs):
    """Under the PufferEnv backend the env class is the constructor: make() passes env_kwargs to it."""
    assert _message(lambda: make(CartPole, env_kwargs=env_kwargs)) == _message(lambda: CartPole(**env_kwargs))


def test_num_envs_is_worded_alike_everywhere():
    expected = "num_envs must be an integer >= 1, got 0"
    assert _message(lambda: make(CartPole, num_envs=0)) == expected
    assert _message(lambda: CartPole(num_envs=0)) == expected
    assert _message(lambda: shoal.vector.worker_layout(0)) == expected
    assert _message(lambda: Serial([_python_creator], [()], [{}], 0)) == expected
