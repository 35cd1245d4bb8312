"""Typed, versioned packaging: py.typed ships, the compiled module's stub is current and checked."""

import subprocess
import sys
from pathlib import Path

import shoal

ROOT = Path(__file__).resolve().parents[1]


def test_package_is_marked_typed():
    assert (Path(shoal.__file__).parent / "py.typed").is_file()


def test_stub_matches_the_compiled_module():
    result = subprocess.run([sys.executable, "-m", "mypy.stubtest", "shoal._native", "--allowlist",
                             str(ROOT / "tests" / "stubtest_allowlist.txt")], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_stub_is_regenerated_from_the_bindings(tmp_path):
    # pybind11-stubgen output for the built module must equal the committed stub: regenerate it
    # with `pybind11-stubgen shoal._native -o python` after changing cpp/src/bindings.cpp.
    subprocess.run([sys.executable, "-m", "pybind11_stubgen", "shoal._native", "-o", str(tmp_path)],
                   check=True, capture_output=True, timeout=300)
    fresh = (tmp_path / "shoal" / "_native.pyi").read_text()
    committed = (ROOT / "python" / "shoal" / "_native.pyi").read_text()
    assert fresh == committed
