"""The package's structure: no import cycles, dependencies that point down, privates kept private."""

import ast
import re
from pathlib import Path

import shoal

PACKAGE_DIR = Path(shoal.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE_DIR.rglob("*.py")}


def resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of ``from <level dots><target> import ...`` written in ``module``."""
    if level == 0:
        return target or ""
    base = module.split(".")
    base = base[: len(base) - level + 1] if is_package else base[: len(base) - level]
    return ".".join(base + ([target] if target else []))


def imports(module: str, module_level_only: bool, by_name: bool = True) -> set[str]:
    """Modules of the package that ``module`` imports: at import time only, or also inside functions
    and (``by_name``) by name (a string naming a module of the package, as a lazy registry holds it)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if module_level_only and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue  # runs when called, not when the module is imported
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif by_name and not module_level_only and isinstance(child, (ast.Call, ast.Dict)):
                found.update(lazy_imports(child))
            elif isinstance(child, ast.ImportFrom):
                source = resolve(module, is_package, child.level, child.module)
                for alias in child.names:
                    submodule = f"{source}.{alias.name}"
                    found.add(submodule if submodule in MODULES else source)
            visit(child)

    visit(tree)
    return {name for name in found if name in MODULES and name != module}


def lazy_imports(node: ast.Call | ast.Dict) -> set[str]:
    """Modules named by string where a lazy import keeps them: a call's arguments
    (``import_module("shoal.x")``, a registry entry) or a dict's values (a name -> module table)."""
    if isinstance(node, ast.Call):
        values = [*node.args, *(keyword.value for keyword in node.keywords)]
    else:
        values = [
            value
            for key, value in zip(node.keys, node.values)
            if not (isinstance(key, ast.Constant) and key.value == "__module__")
        ]
    return {value.value for value in values if isinstance(value, ast.Constant) and value.value in MODULES}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a list of modules, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_walk_sees_the_package():
    assert {"shoal.vector", "shoal.backends.registry", "shoal.backends.worker_side.runner", "shoal.native.env"} <= set(
        MODULES
    )
    assert "shoal.backends.worker_side.runner" in imports("shoal.backends.serial", module_level_only=True)
    assert "shoal.backends.ray" in imports("shoal.backends.registry", module_level_only=False)
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_at_import_time():
    graph = {module: imports(module, module_level_only=True) for module in MODULES}
    assert find_cycle(graph) is None


def test_no_import_cycle_counting_lazy_imports():
    graph = {module: imports(module, module_level_only=False) for module in MODULES}
    assert find_cycle(graph) is None


def test_no_backend_imports_what_dispatches_to_it():
    for module in MODULES:
        if module.startswith("shoal.backends."):
            reached = imports(module, module_level_only=False)
            assert not reached & {"shoal.vector", "shoal.tools.config", "shoal.tools.cli"}, module


def test_only_the_native_layer_touches_the_native_vector():
    for module, path in MODULES.items():
        if module.startswith("shoal.native"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute):
                assert node.attr != "_vec", f"{module}:{node.lineno} reaches into NativeEnv._vec"
                assert node.attr != "Vector", f"{module}:{node.lineno} uses _native.Vector"


def test_options_are_known_without_importing_the_backend():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from shoal.config import Config\n"
        "vec = Config('-', 'cartpole', vec={'backend': 'Ray', 'num_envs': 4, 'ray_address': 'head:6379',"
        " 'schedule': 'static'}).effective_vec()\n"
        "assert vec == {'backend': 'Ray', 'num_envs': 4, 'ray_address': 'head:6379'}, vec\n"
        "assert 'shoal.backends.ray' not in sys.modules and 'ray' not in sys.modules\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


# CONTRIBUTING.md "Layers", bottom up: a module imports its own floor or a lower one (inside functions
# too); the longest prefix decides a module's floor.
FLOORS = (
    (
        "core",
        (
            "shoal._native",
            "shoal.errors",
            "shoal.validation",
            "shoal.seeding",
            "shoal.spaces",
            "shoal.optional",
            "shoal.cpus",
        ),
    ),
    ("vector pieces", ("shoal.buffers", "shoal.call_order", "shoal.interrupts", "shoal.pufferenv")),
    ("env kinds", ("shoal.native", "shoal.emulation", "shoal.envs", "shoal.step_checks", "shoal.default_wrappers")),
    ("backends", ("shoal.backends",)),
    ("hand-off", ("shoal.handoff",)),
    ("entry points", ("shoal.vector", "shoal.backends.registry", "shoal.families")),
    ("env families", ("shoal.ocean", "shoal.mujoco", "shoal.atari")),
    ("adapters", ("shoal.adapters",)),
    # the `shoal` command and what only it uses; the aliases at its modules' old paths (shoal.config,
    # shoal.cli, ...) are on no floor: they are exempt (is_alias), and a module importing one fails floor()
    ("tools", ("shoal.tools", "shoal.__main__")),
)
FLOOR_NAMES = [name for name, _ in FLOORS]


def floor(module: str) -> int:
    """The rank of ``module``'s floor (the package itself, shoal/__init__.py, is the vector pieces')."""
    if module == "shoal":
        return FLOOR_NAMES.index("vector pieces")
    found = [
        (len(p), FLOOR_NAMES.index(name))
        for name, ps in FLOORS
        for p in ps
        if module == p or module.startswith(p + ".")
    ]
    assert found, f"{module} is on no floor: add it to FLOORS and to CONTRIBUTING.md's layers"
    return max(found)[1]


def is_alias(module: str) -> bool:
    """A module kept at an old path that only makes the new one importable under it."""
    return "sys.modules[__name__] = " in MODULES[module].read_text()


def real_imports(module: str) -> set[str]:
    """What ``module`` imports, inside functions too, but not by name (a registry's strings: the entry
    points list what they dispatch to), nor ``shoal`` itself where ``from . import _native`` reads so."""
    return {t for t in imports(module, module_level_only=False, by_name=False) if t != "shoal" or module == "shoal"}


def test_every_module_is_on_a_floor():
    for module in MODULES:
        if not is_alias(module):
            floor(module)


def test_every_import_points_down():
    up = [
        f"{m} ({FLOOR_NAMES[floor(m)]}) imports {t} ({FLOOR_NAMES[floor(t)]})"
        for m in MODULES
        if not is_alias(m)
        for t in real_imports(m)
        if floor(t) > floor(m)
    ]
    assert not up, "\n".join(up)


def test_no_import_loop_between_sibling_folders():
    folders = {m for m, p in MODULES.items() if p.name == "__init__.py"}
    graph: dict[str, set[str]] = {f: set() for f in folders}
    for m in MODULES:
        if is_alias(m):
            continue
        for t in real_imports(m):
            a, b = m.split("."), t.split(".")
            i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            here, there = ".".join(a[: i + 1]), ".".join(b[: i + 1])
            if here != there and here in folders and there in folders:
                graph[here].add(there)
    assert find_cycle(graph) is None


def test_only_call_order_assigns_a_call_order_state():
    writes = [
        f"{m}:{i}"
        for m, p in MODULES.items()
        if m != "shoal.call_order"
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"\.state\s*=(?!=)", line)
    ]
    assert not writes, writes


def test_contributing_names_every_folder_and_top_level_module():
    """CONTRIBUTING.md's "Source layout" names each folder of the package and each module at its top."""
    text = (PACKAGE_DIR.parents[1] / "CONTRIBUTING.md").read_text()
    layout = text[text.index("## Source layout") : text.index("## Layers")]
    wanted = {f"{p.parent.name}/" for p in PACKAGE_DIR.glob("*/__init__.py")}
    wanted |= {p.name for p in PACKAGE_DIR.glob("*.py")}
    missing = sorted(name for name in wanted if not re.search(rf"(?<![\w.]){re.escape(name)}", layout))
    assert not missing, f"CONTRIBUTING.md's source layout does not name {missing}"


def test_no_library_module_imports_an_alias():
    """An alias keeps an old path importable for users; the package itself imports the module it names."""
    through_alias = [
        f"{m} imports {t}" for m in MODULES if not is_alias(m) for t in real_imports(m) if t in MODULES and is_alias(t)
    ]
    assert not through_alias, through_alias


MAX_MODULE_LINES = 450


def test_no_module_is_over_the_line_limit():
    """A module past MAX_MODULE_LINES holds more than one job: split it by concern (CONTRIBUTING)."""
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, long
