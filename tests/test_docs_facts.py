"""What the docs say about the code, checked against it (fast tier; test_docs.py runs the pages'
examples and builds the site): the seeding description's worked example is what shoal.seeding computes
and what a Gymnasium env is reset with, no page describes another seeding, and the Atari recipe of
command.md runs as written (where ale-py is installed)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
# -- seeding: one description, the code's ---------------------------------------------------------

SEEDING_PAGES = [ROOT / "docs" / "getting-started.md", ROOT / "docs" / "reference" / "config.md"]


def worked_examples(text: str) -> list[tuple[int, int, int]]:
    """(seed, env index, seed the page says env index is reset with), in the page's order: each
    "env I [is reset] with `N`" belongs to the last "`seed = S`" (or "`seed=S`") before it."""
    examples, seed = [], None
    for match in re.finditer(r"`seed ?= ?(\d+)`|env\s+(\d+)\s+(?:is\s+reset\s+)?with\s+`(\d+)`", text):
        if match.group(1) is not None:
            seed = int(match.group(1))
        else:
            assert seed is not None, match.group(0)
            examples.append((seed, int(match.group(2)), int(match.group(3))))
    return examples


@pytest.mark.parametrize("page", SEEDING_PAGES, ids=lambda p: p.name)
def test_the_seeding_worked_example_is_what_shoal_seeding_computes(page):
    from shoal.seeding import env_seed

    examples = worked_examples(page.read_text())
    assert len(examples) >= 2
    for seed, index, value in examples:
        assert env_seed(seed, index) == value, (page.name, seed, index)


def test_gymnasium_envs_are_reset_with_the_seeds_the_docs_give():
    import gymnasium

    import shoal.vector

    class Recorder(gymnasium.Env):
        observation_space = gymnasium.spaces.Box(0.0, 1.0, (1,))
        action_space = gymnasium.spaces.Discrete(2)
        seeds: list = []

        def reset(self, seed=None, options=None):
            Recorder.seeds.append(seed)
            return self.observation_space.low, {}

        def step(self, action):
            return self.observation_space.low, 0.0, False, False, {}

    with shoal.vector.make(Recorder, backend="Serial", num_envs=2) as vecenv:
        vecenv.reset(seed=7)
    documented = dict(((s, i), v) for s, i, v in worked_examples(SEEDING_PAGES[0].read_text()))
    assert Recorder.seeds == [documented[(7, 0)], documented[(7, 1)]]


def test_no_page_says_env_i_draws_from_seed_plus_i():
    from shoal.backends.registry import options_table

    assert "seed + i" not in options_table()  # the generated table of config.md and make()'s docstring
    for page in PAGES:
        text = page.read_text()
        for sentence in re.split(r"(?<=[.;:])\s", text):
            if re.search(r"seed ?\+ ?i\b", sentence):  # only as another library's rule, named with it
                assert "gymnasium" in sentence, (page.name, sentence)


# -- the Atari recipe of command.md -----------------------------------------------------------------


def test_the_atari_recipe_runs(tmp_path):
    pytest.importorskip("ale_py", reason="the Atari recipe needs ale-py (pip install ale-py)")
    pytest.importorskip("cv2", reason="AtariPreprocessing resizes with OpenCV (pip install opencv-python-headless)")
    page = (ROOT / "docs" / "command.md").read_text()
    recipe = page.split("## Recipe: Atari, or any wrapped Gymnasium env")[1]
    module = re.search(r"^```python\n(.*?)^```", recipe, flags=re.S | re.M).group(1)
    ini = re.search(r"^```ini\n(.*?)^```", recipe, flags=re.S | re.M).group(1)
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "envs.py").write_text(module)
    (tmp_path / "config.ini").write_text(ini)
    run = [sys.executable, "-m", "shoal", "run", "--config", str(tmp_path / "config.ini")]
    quick = ["--vec.num_envs", "2", "--vec.num_workers", "2", "--steps", "40", "--seconds", "0", "--run.warmup", "2"]
    result = subprocess.run([*run, *quick], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "backend: Multiprocessing" in result.stdout and re.search(r"^SPS: [\d,]+$", result.stdout, re.M)
    typo = subprocess.run([*run, *quick, "--env.gmae", "x"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert "unknown key [env] gmae; did you mean game?" in typo.stderr
