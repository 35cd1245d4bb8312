"""The Ocean envs of the pufferlib 3.0.0 sdist that shoal does not run: listed with their reason by
`shoal ocean list`, refused by env_class with that reason, and each reason checked against the sdist."""

import re
import shutil
import tarfile

import pytest
from test_ocean import ENVS

import shoal.ocean as ocean
from shoal.cli import main
from shoal.ocean import source
from shoal.ocean.errors import OceanError
from shoal.ocean.unavailable import PENDING, UNAVAILABLE, status


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SHOAL_OCEAN_BUILD_CACHE", str(tmp_path_factory.mktemp("unavailable_builds")))
        yield source.ocean_dir()


def test_every_env_of_the_sdist_runs_or_is_listed_with_its_reason(sdist):
    names = set(ocean.available())
    listed = set(UNAVAILABLE) | set(PENDING)
    tested = set(ENVS) | {"moba"}  # moba: tests/test_ocean_shared.py (one stepping thread: it writes its shared state)
    assert not tested & listed
    assert names <= tested | listed, f"neither tested nor listed: {sorted(names - tested - listed)}"
    assert len(names | listed) == 31 and len(UNAVAILABLE) == 4 and not PENDING
    # impulse_wars keeps its env in env.h, not impulse_wars.h: a folder of the sdist all the same.
    assert all((sdist / name / "binding.c").is_file() for name in listed)


@pytest.mark.parametrize("name", sorted({**UNAVAILABLE, **PENDING}))
def test_env_class_refuses_a_listed_env_with_its_reason(sdist, name):
    with pytest.raises(OceanError) as error:
        ocean.env_class(name)
    assert str(error.value) == f"Ocean env {name!r} of pufferlib 3.0.0 does not run on shoal: {status(name)}"


def test_ocean_list_marks_each_env_that_does_not_run(sdist, capsys):
    assert main(["ocean", "list"]) == 0
    lines = {line.split()[0]: line.strip() for line in capsys.readouterr().out.splitlines()[1:]}
    for name, line in lines.items():
        reason = status(name)
        assert line == (f"{name}  ({reason})" if reason else name)
    assert lines["freeway"].startswith("freeway  (unavailable: freeway.h:299")
    assert lines["gpudrive"].startswith("gpudrive  (unavailable: gpudrive reads its maps")
    assert lines["impulse_wars"].startswith("impulse_wars  (unavailable: impulse_wars is built on Box2D v3")
    assert lines["grid"] == "grid"
    assert lines["snake"] == "snake"


def test_a_tree_of_ones_own_is_not_judged_by_the_sdists_list(sdist, tmp_path, monkeypatch):
    """The list speaks of the pinned sdist: a copy of freeway elsewhere is built, and refused by the
    compiler for the read before the pointer is set (never loaded, never a crash)."""
    monkeypatch.setenv("SHOAL_OCEAN_BUILD_CACHE", str(tmp_path / "builds"))
    tree = tmp_path / "tree"
    shutil.copytree(sdist / "freeway", tree / "freeway")
    with pytest.raises(OceanError, match=r"freeway.*reads a variable before it is set \(freeway\.h:299:\d+: .enemy."):
        ocean.env_class("freeway", tree)
    assert [p for p in (tmp_path / "builds").iterdir() if not p.name.startswith(".")] == []


def _function_body(text: str, signature: str) -> str:
    start = text.index(signature)
    depth, i = 0, text.index("{", start)
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i : j + 1]
    raise AssertionError(f"no end of {signature}")


def test_freeways_reason_is_in_its_source(sdist):
    lines = (sdist / "freeway" / "freeway.h").read_text().splitlines()
    assert "enemy->speed_randomization" in lines[298]  # line 299
    body = _function_body("\n".join(lines), "void randomize_enemy_speed(Freeway* env)")
    # `enemy` is a local declared without a value, read before its first assignment.
    assert "FreewayEnemy* enemy;" in body
    assert body.index("if (enemy->speed_randomization)") < body.index("enemy = &env->enemies")


def test_impulse_wars_reason_is_in_the_sdist(sdist):
    """Box2D v3 is included and stepped, no Box2D file is in the sdist, and setup.py downloads the
    fork's latest release (no pinned version) at build time."""
    folder = sdist / "impulse_wars"
    assert '#include "box2d/box2d.h"' in (folder / "types.h").read_text()
    assert "b2World_Step(" in (folder / "env.h").read_text()
    with tarfile.open(source.fetch_sdist(), "r:gz") as tar:
        names = tar.getnames()
        setup = tar.extractfile(f"pufferlib-{source.SDIST_VERSION}/setup.py").read().decode()
    assert not [n for n in names if n.endswith(("box2d.h", "libbox2d.a")) or "/box2d/src/" in n]
    assert "BOX2D_URL = 'https://github.com/capnspacehook/box2d/releases/latest/download/'" in setup
    assert "c_ext.extra_objects.append(f'{BOX2D_NAME}/libbox2d.a')" in setup


def test_tacticals_reason_is_in_its_source(sdist):
    folder = sdist / "tactical"
    header = (folder / "tactical.h").read_text()
    assert not re.search(r"\bc_close\s*\(", header)
    assert "c_close(" in (sdist / "env_binding.h").read_text()  # what PufferLib's binding calls
    binding = (folder / "binding.c").read_text()
    assert re.sub(r"\s+", " ", _function_body(binding, "static int my_init(")) == "{ return 0; }"
    assert re.sub(r"\s+", " ", _function_body(header, "int c_step(Tactical* env)")).startswith("{ if (false) {")
    assert "compute_observations(Tactical* env) {\n\n}" in header
    assert "pufferlib.namespace(" in (folder / "tactical.py").read_text()
