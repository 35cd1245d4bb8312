"""The install lines users read work: shoal is not on a package index, so no page or error message tells
anyone to `pip install "shoal[...]"`; every extra a line installs from the clone (`pip install ".[x]"`)
exists in pyproject.toml; and each page that installs an extra pulling torch says how to get the
CPU-only build (pip's default torch is a multi-GB CUDA one). Scanned: README, CONTRIBUTING, docs/, and the
Python of python/shoal, examples/ and bench/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
SOURCES = [
    *sorted((ROOT / "python" / "shoal").rglob("*.py")),
    *sorted((ROOT / "examples").rglob("*.py")),
    *sorted((ROOT / "bench").rglob("*.py")),
]
FROM_AN_INDEX = re.compile(r"shoal\[[^\]]*\]")
FROM_THE_CLONE = re.compile(r"""pip install (?:-e )?["']?\.\[([\w,-]+)\]""")
PULLS_TORCH = {"adapters", "torch", "rllib", "full"}
CPU_TORCH = "download.pytorch.org/whl/cpu"


def extras() -> set[str]:
    tomllib = pytest.importorskip("tomllib", reason="reads pyproject.toml with tomllib (Python 3.11+)")
    with open(ROOT / "pyproject.toml", "rb") as f:
        return set(tomllib.load(f)["project"]["optional-dependencies"])


def lines_matching(pattern: re.Pattern, files: list[Path]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]


def installed_extras(text: str) -> set[str]:
    return {name for group in FROM_THE_CLONE.findall(text) for name in group.split(",")}


def test_nothing_installs_shoal_from_an_index():
    assert lines_matching(FROM_AN_INDEX, PAGES + SOURCES) == []


def test_every_extra_installed_from_the_clone_exists():
    known = extras()
    named = {path.relative_to(ROOT).as_posix(): installed_extras(path.read_text()) for path in PAGES + SOURCES}
    unknown = {page: sorted(names - known) for page, names in named.items() if names - known}
    assert unknown == {}
    assert set().union(*named.values()) >= {"test", "full", "atari", "mujoco", "ray", "rllib", "torch", "plot"}


def test_pages_installing_torch_say_how_to_get_the_cpu_build():
    missing = [
        path.relative_to(ROOT).as_posix()
        for path in PAGES
        if installed_extras(path.read_text()) & PULLS_TORCH and CPU_TORCH not in path.read_text()
    ]
    assert missing == []


def test_the_patterns_catch_what_they_are_for():
    assert FROM_AN_INDEX.search("pip install 'shoal[ray]'")
    assert not FROM_AN_INDEX.search('pip install ".[ray]"')
    assert installed_extras("""pip install -e ".[test]" && pip install '.[atari,plot]'""") == {"test", "atari", "plot"}
