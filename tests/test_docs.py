"""The docs cannot rot: every ```python block of docs/ and the README runs (a page's blocks in order,
in one fresh interpreter), and the Sphinx build (warnings, broken internal links included, as
errors) passes when Sphinx is installed (the [docs] extra; .ci/run builds it too)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
NOT_RUN = "# not run"  # first line of a block that shows another library's code or needs a download


def python_blocks(page: Path) -> list[str]:
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(), flags=re.S | re.M)
    return [b for b in blocks if not b.startswith(NOT_RUN)]


def test_pages_have_examples():
    assert sum(len(python_blocks(p)) for p in PAGES) >= 6


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.name)
def test_every_python_example_runs(page, tmp_path):
    script = tmp_path / "example.py"
    script.write_text("\n\n".join(python_blocks(page)))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, f"{page.name}:\n{result.stderr[-3000:]}"


def test_docs_build_with_warnings_as_errors(tmp_path):
    pytest.importorskip("myst_parser", reason="the docs build needs the [docs] extra")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(ROOT / "docs"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    api = (tmp_path / "api.html").read_text()
    for keyword in ("max_num_threads", "num_workers", "batch_size", "schedule", "on_worker_failure"):
        assert keyword in api
