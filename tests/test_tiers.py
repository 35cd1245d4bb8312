"""The test tiers hold: conftest's TIERS table is live and complete, the markers say how to select
them, plain `pytest` collects exactly the fast tier, and no fast test builds, starts a cluster or trains."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

from conftest import RAY_FILES, TIER_NAMES, TIERS, tier_of, xdist_group_of

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
# Work that belongs in the integration tier, as it reads in a test, its decorators or its fixtures.
HEAVY = re.compile(
    r"cmake|ctest|sanitiz|stubtest|stubgen|auditwheel|sphinx|ray\.init|backend=\"Ray\"|\.learn\(|import torchrl",
    re.IGNORECASE,
)
# Compiling an Ocean or MuJoCo env: allowed in the fast tier only where an entry says why.
COMPILES = re.compile(r"\benv_class\(")


def collect(*args: str) -> dict[str, set[str]]:
    """Node id -> marker names of the tests `pytest --collect-only ARGS` selects."""
    probe = (
        "import pytest, sys\n"
        "class Probe:\n"
        "    def pytest_collection_finish(self, session):\n"
        "        for item in session.items:\n"
        "            print('TIER', item.nodeid, *sorted(m.name for m in item.iter_markers()), sep='\\t')\n"
        "sys.exit(pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', *sys.argv[1:]], plugins=[Probe()]))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    tests = {}
    for line in result.stdout.splitlines():
        if line.startswith("TIER\t"):
            nodeid, *markers = line.split("\t")[1:]
            tests[nodeid] = set(markers)
    assert tests, result.stdout[-3000:]
    return tests


@cache
def every_test() -> dict[str, set[str]]:
    return collect("-m", "")


def test_markers_are_registered_and_say_how_to_select_them():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    texts = dict(marker.split(":", 1) for marker in options["markers"])
    for name in ("integration", "slow"):
        assert f"-m {name}" in texts[name], texts[name]
    addopts = options["addopts"]
    assert addopts[addopts.index("-m") + 1] == "not integration and not slow"
    assert "SHOAL_RUN_SLOW" not in (TESTS / "conftest.py").read_text()  # no hidden gate on top of -m


def test_every_entry_has_a_tier_and_a_reason_and_decides_some_test():
    deciding = set()
    for nodeid in every_test():
        test = nodeid.removeprefix("tests/").split("[", 1)[0]
        first = next((n for n, (pattern, _, _) in enumerate(TIERS) if fnmatchcase(test, pattern)), None)
        deciding.add(first)
    for n, (pattern, tier, reason) in enumerate(TIERS):
        assert tier in TIER_NAMES and reason.strip(), pattern
        # A file or a test function, never a parameter id: renaming an id must not move a test's tier.
        assert "[" not in pattern, f"the entry {pattern!r} matches parameter ids"
        # The entry is the first match of at least one test: not stale, not shadowed by an earlier one.
        assert n in deciding, f"no test is decided by the entry {pattern!r}"


def test_plain_pytest_collects_the_fast_tier_and_the_other_tiers_the_rest():
    everything = every_test()
    for nodeid, markers in everything.items():
        by_table = tier_of(nodeid.removeprefix("tests/"))[0] == "integration"
        # The table decides whole tests; a parametrized test may mark some of its cases itself.
        assert by_table <= ("integration" in markers), nodeid
        assert "integration" not in markers or by_table or "[" in nodeid, nodeid
    fast = {nodeid for nodeid, markers in everything.items() if not markers & {"integration", "slow"}}
    assert set(collect()) == fast
    rest = set(everything) - fast  # CI's later runs, `-m "integration and not slow"` and `-m slow`
    assert {"test_native_builds.py", "test_packaging.py", "test_ray.py", "test_examples.py"} <= {
        nodeid.split("::")[0].removeprefix("tests/") for nodeid in rest
    }


def test_no_fast_test_builds_starts_a_cluster_or_trains():
    heavy, compiling = [], []
    for nodeid, markers in every_test().items():
        if markers & {"integration", "slow"}:
            continue
        source = source_of(nodeid)
        if HEAVY.search(source) or "[Ray" in nodeid:
            heavy.append(nodeid)
        if COMPILES.search(source) and tier_of(nodeid.removeprefix("tests/"))[1] == "matches no entry":
            compiling.append(nodeid)
    assert not heavy, f"fast tests doing integration work (add an entry to TIERS in conftest.py): {heavy}"
    assert not compiling, f"fast tests compiling envs without an entry saying why: {compiling}"


def test_every_file_that_starts_ray_shares_one_xdist_group():
    """Two Ray instances at once on two xdist workers would contend for the machine's CPUs and its
    Ray session folder: every file that may start one is in the "ray" group, each other file its own."""
    starting = {
        path.name
        for path in TESTS.glob("test_*.py")
        if path.name != "test_tiers.py" and re.search(r"ray\.init|\"Ray\"", path.read_text())
    }
    assert starting and starting <= set(RAY_FILES), starting - set(RAY_FILES)
    assert {xdist_group_of(f"{name}::test_x") for name in RAY_FILES} == {"ray"}
    assert xdist_group_of("test_native.py::test_x[cartpole]") == "test_native.py"
    assert xdist_group_of("test_ocean.py::test_y") != xdist_group_of("test_native.py::test_y")


# Samples the check must see (here, not in a decorator, which the check reads as the test's own source).
SAMPLES = [
    ('subprocess.run(["cmake", "--build", build])', True),
    ('make(Env, backend="Ray", num_envs=2)', True),
    ("model.learn(total_timesteps=64)", True),
    ('make(Env, backend="Serial", num_envs=2)', False),
]


@pytest.mark.parametrize("source, heavy", SAMPLES, ids=["build", "cluster", "training", "serial"])
def test_the_check_sees_integration_work(source, heavy):
    assert bool(HEAVY.search(source)) == heavy


def source_of(nodeid: str) -> str:
    """A test's function with its decorators, and the module's fixtures it names (one level)."""
    path, name = nodeid.split("::")[0], nodeid.split("::")[-1].split("[")[0]
    text = (ROOT / path).read_text()
    functions = {
        node.name: node
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }

    def segment(function: ast.AST) -> str:
        parts = [ast.get_source_segment(text, d) or "" for d in function.decorator_list]
        return "\n".join([*parts, ast.get_source_segment(text, function) or ""])

    function = functions[name]
    fixtures = [functions[a.arg] for a in function.args.args if a.arg in functions]
    return "\n".join(segment(f) for f in [function, *fixtures])


def test_xdist_groups_added_by_a_collection_hook_keep_their_tests_on_one_worker(tmp_path):
    """CI's integration tier relies on conftest.py's xdist groups (each file's module fixtures built
    once, the Ray files never side by side). pytest 9.2 with pytest-xdist 3.8 drops them silently
    (pytest-xdist#1386): the tests then spread over the workers and every worker builds each fixture."""
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_collection_modifyitems(config, items):\n"
        "    for item in items:\n"
        "        item.add_marker(pytest.mark.xdist_group('one'))\n"
    )
    (tmp_path / "test_grouped.py").write_text("".join(f"def test_{i}():\n    pass\n\n\n" for i in range(6)))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-v"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"},
    )
    passed = [line for line in result.stdout.splitlines() if " PASSED " in line]
    assert len(passed) == 6, result.stdout + result.stderr
    assert all(line.rstrip().endswith("@one") for line in passed), "\n".join(passed)
    assert len({line.split("]", 1)[0] for line in passed}) == 1, "\n".join(passed)
