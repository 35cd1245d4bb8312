import faulthandler
import signal
from fnmatch import fnmatchcase

import pytest

# The test tiers (CONTRIBUTING.md): `pytest` runs the fast tier, everything not marked `integration`
# or `slow` (pyproject.toml's addopts deselects those two); `pytest -m integration` runs the heavy
# tests below, `pytest -m slow` the soak tests, `pytest -m ""` every test.
#
# Each entry: a node-id pattern (fnmatch, relative to tests/), the tier, and why. The first entry that
# matches a test decides; "fast" entries are the exceptions that keep a few cheap tests of a heavy
# file in the fast tier. A test that matches nothing is fast. tests/test_tiers.py checks that every
# entry still matches a test and that the fast tier needs no build, cluster or training.
TIERS = [
    (
        "test_native_builds.py::*",
        "integration",
        "builds the C++ tests with CMake three times (plain, ASan+UBSan, TSan)",
    ),
    ("test_sdk_template.py::*", "integration", "builds examples/custom_env with CMake against the installed shoal"),
    ("test_packaging.py::*", "integration", "runs pybind11-stubgen and mypy.stubtest, builds and repairs a wheel"),
    ("test_platform_layer.py::test_other_waiting_layers_compile_here*", "integration", "compiles each waiting layer"),
    ("test_docs.py::*", "integration", "runs every docs example in a fresh interpreter and builds the Sphinx site"),
    ("test_examples.py::*", "integration", "trains the SB3 and TorchRL examples end to end"),
    ("test_adapters.py::test_sb3_ppo_learns*", "integration", "trains SB3's PPO"),
    ("test_cli.py::test_autotune_write*", "integration", "runs autotune's timed trials end to end"),
    ("test_autotune.py::test_autotune_on_the_default_config*", "integration", "runs autotune for its 30 s budget"),
    ("test_cli.py::test_bench_writes*", "integration", "runs timed benchmarks and draws the plot"),
    ("test_adapters.py::test_torchrl*rollout*", "integration", "imports TorchRL and runs its rollout"),
    ("test_worker_lifecycle.py::test_ctrl_c_anywhere_in_make*", "integration", "a child process per interrupt point"),
    ("test_ray.py::*", "integration", "starts Ray clusters"),
    ("test_rllib.py::*", "integration", "trains RLlib's PPO on a Ray instance of its own"),
    ("test_ray_cluster.py::*", "integration", "starts a simulated 3-node Ray cluster and breaks its nodes"),
    ("test_ray_datapath.py::*", "integration", "starts a simulated 2-node Ray cluster"),
    (
        "test_option_checks.py::test_ray_*",
        "integration",
        "imports Ray's backend (Ray itself must not start: a start fails it)",
    ),
    ("test_tiers.py::*", "integration", "collects the whole suite in fresh interpreters and reads every test's source"),
    # Ocean: a few tests on one or two envs (the bundled test tree's tiny ones, cartpole, squared)
    # stay fast; every other Ocean test, new files included, compiles Ocean envs.
    ("test_ocean.py::test_acceptance_set_is_covered", "fast", "reads a table, compiles nothing"),
    ("test_ocean.py::test_unknown_env_lists_the_available_ones", "fast", "fails before compiling"),
    ("test_ocean.py::test_missing_files_are_named", "fast", "fails before compiling"),
    ("test_ocean.py::test_ocean_errors_are_api_usage_errors", "fast", "compiles nothing"),
    ("test_ocean*", "integration", "compiles Ocean envs from the PufferLib sdist"),
    ("test_toolchain_cross.py::*", "integration", "cross-compiles with MinGW and steps the DLL under Wine"),
    ("test_cuda_driver.py::*", "fast", "compiles one small C file, the stand-in CUDA driver (well under 1 s)"),
    ("test_many_libraries.py::*", "fast", "compiles one tiny test-tree env and the SDK example (about 1 s)"),
    ("test_mujoco_errors.py::*", "fast", "errors raised before or while loading one small model"),
    ("test_mujoco*", "integration", "compiles MuJoCo tasks and sweeps them against Gymnasium's"),
    ("test_atari*", "integration", "builds ALE from ale-py's sdist, steps every ROM, compares games with Gymnasium's"),
]
TIER_NAMES = ("fast", "integration")


def tier_of(nodeid: str) -> tuple[str, str]:
    """The (tier, reason) of a test, by its file and function (its node id relative to tests/, the
    parameters left out). A parametrized test whose cases differ marks the heavy ones itself, beside
    the parameters (``pytest.param(..., marks=pytest.mark.integration)``), so no tier hangs on an id."""
    test = nodeid.split("[", 1)[0]
    for pattern, tier, reason in TIERS:
        if fnmatchcase(test, pattern):
            return tier, reason
    return "fast", "matches no entry"


# Under pytest-xdist with `--dist loadgroup` (CI's integration tier), the tests of one group run on one
# worker, one after another: each file is its own group, so its module fixtures (CMake builds, clusters)
# are made once; the files that start Ray instances share one group, so no two instances run at once.
RAY_FILES = (
    "test_ray.py",
    "test_ray_cluster.py",
    "test_ray_datapath.py",
    "test_worker_fault_modes.py",
    "test_mujoco_actions.py",
    "test_rllib.py",
    "test_option_checks.py",
)


def xdist_group_of(nodeid: str) -> str:
    """The pytest-xdist group of a test, by its node id relative to tests/."""
    file = nodeid.split("::", 1)[0]
    return "ray" if file in RAY_FILES else file


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    """Marks each test the table puts in the integration tier (before -m selects), and its xdist group
    where pytest-xdist is installed (the marker is its own)."""
    grouped = config.pluginmanager.hasplugin("xdist")
    for item in items:
        nodeid = item.nodeid.removeprefix("tests/")
        tier, _ = tier_of(nodeid)
        if tier == "integration":
            item.add_marker(pytest.mark.integration)
        if grouped:
            item.add_marker(pytest.mark.xdist_group(xdist_group_of(nodeid)))


@pytest.fixture
def time_limit():
    """Fails the test (instead of hanging CI) if it runs longer than the given seconds."""

    def arm(seconds: int):
        if not hasattr(signal, "SIGALRM"):  # Windows: no alarm; a hang ends the run, with tracebacks
            faulthandler.dump_traceback_later(seconds, exit=True)
            return

        def expire(signum, frame):
            raise TimeoutError(f"test exceeded its {seconds} s time limit")

        signal.signal(signal.SIGALRM, expire)
        signal.alarm(seconds)

    yield arm
    if hasattr(signal, "SIGALRM"):
        signal.alarm(0)
    else:
        faulthandler.cancel_dump_traceback_later()
