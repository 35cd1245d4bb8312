"""The build cache trusts nothing it did not verify, and a build shows progress.

ALE's build runs here on a stand-in sdist (one small C++ file under src/ale), so each check takes a
second, not minutes; the real sdist takes the same code path (tests/test_atari_build_ahead.py)."""

from __future__ import annotations

import concurrent.futures
import hashlib
import io
import os
import re
import signal
import stat
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from shoal.atari import build, sdist
from shoal.native import builds, progress

VERSION = "0.0.1"  # a version no index has: nothing here may reach the network


def _tar_gz(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


GOOD = _tar_gz({f"ale_py-{VERSION}/src/ale/emulator.cpp": "int shoal_test_ale() { return 7; }\n"})
GOOD_SHA = hashlib.sha256(GOOD).hexdigest()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty Atari cache for ale-py VERSION, whose sdist hash is GOOD's; the network refused."""
    root = tmp_path / "atari"
    monkeypatch.setenv("SHOAL_ATARI_BUILD_CACHE", str(root))
    monkeypatch.setenv(sdist.HASH_ENV, GOOD_SHA)
    monkeypatch.setenv(progress.QUIET_ENV, "1")
    monkeypatch.setattr(build, "ale_version", lambda: VERSION)

    def offline(version):
        raise OSError("no network in this test")

    monkeypatch.setattr(sdist, "published", offline)
    return root


def _plant(root: Path, data: bytes) -> Path:
    folder = builds.private_folder(root / "sdist")
    path = folder / sdist.filename(VERSION)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("damage", "data"),
    [("truncated", GOOD[: len(GOOD) // 2]), ("empty", b""), ("HTML", b"<!DOCTYPE html><html>rate limited</html>")],
    ids=["truncated", "empty", "HTML"],
)
def test_a_damaged_cached_sdist_is_removed_with_an_error_naming_it(cache, damage, data):
    path = _plant(cache, data)
    with pytest.raises(build.AtariError, match=f"the cached ale-py sdist {path} is damaged") as raised:
        build.ale_archive()
    assert "removed it" in str(raised.value)
    assert not path.exists(), f"the {damage} sdist stayed in the cache"
    assert not list(cache.glob(".build-*")), "a staging folder was left behind"


def test_an_sdist_that_is_not_the_published_one_is_refused(cache, monkeypatch):
    other = _tar_gz({f"ale_py-{VERSION}/src/ale/emulator.cpp": "int planted() { return 0; }\n"})
    path = _plant(cache, other)
    with pytest.raises(build.AtariError, match=f"{path} is damaged .*ale-py's is {GOOD_SHA}"):
        build.ale_archive()
    assert not path.exists()


def test_a_finished_build_is_used_without_its_sdist(cache):
    sdist_path = _plant(cache, GOOD)
    archive = build.ale_archive()
    assert (archive.parent / "sdist.sha256").read_text().split()[0] == GOOD_SHA
    sdist_path.unlink()  # and the index is unreachable (the fixture)
    assert build.ale_archive() == archive


def test_the_hash_recorded_at_download_keys_the_build_offline(cache, monkeypatch):
    """An unpinned version verified once (its hash recorded) is found again with no hash given."""
    _plant(cache, GOOD)
    archive = build.ale_archive()
    (cache / "sdist" / sdist.filename(VERSION)).unlink()
    monkeypatch.delenv(sdist.HASH_ENV)
    assert build.ale_archive() == archive


def test_the_sdist_is_fetched_as_a_file_without_pip(cache, tmp_path, monkeypatch):
    served = tmp_path / "index" / sdist.filename(VERSION)
    served.parent.mkdir()
    served.write_bytes(GOOD)
    monkeypatch.setattr(sdist, "published", lambda version: (served.as_uri(), GOOD_SHA))
    real_run = subprocess.run

    def no_pip(command, *args, **kwargs):
        assert "pip" not in " ".join(map(str, command)), f"the fetch ran pip: {command}"
        return real_run(command, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", no_pip)
    monkeypatch.delenv(sdist.HASH_ENV)
    monkeypatch.setattr(sdist, "known_sha256", lambda version, folder: None)
    build.ale_archive()
    fetched = cache / "sdist" / sdist.filename(VERSION)
    assert fetched.read_bytes() == GOOD
    assert not list(fetched.parent.glob("*.part")), "a partial download was left behind"


def test_a_download_that_does_not_match_is_not_kept(cache, tmp_path, monkeypatch):
    served = tmp_path / "index" / sdist.filename(VERSION)
    served.parent.mkdir()
    served.write_bytes(b"<html>a captive portal</html>")
    monkeypatch.setattr(sdist, "published", lambda version: (served.as_uri(), GOOD_SHA))
    with pytest.raises(build.AtariError, match="is not ale-py 0.0.1's sdist .*HTML"):
        build.ale_archive()
    assert not list((cache / "sdist").iterdir()), "the bad download was kept"


def test_published_hash_is_read_from_the_simple_api(monkeypatch):
    page = f'<a href="../../files/{sdist.filename(VERSION)}#sha256={GOOD_SHA}">{sdist.filename(VERSION)}</a>'

    class Response(io.BytesIO):
        headers = {"Content-Type": "text/html"}

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setenv("SHOAL_PACKAGE_INDEX", "https://index.example/simple")
    monkeypatch.setattr(sdist.urllib.request, "urlopen", lambda request, timeout: Response(page.encode()))
    url, digest = sdist.published(VERSION)
    assert (url, digest) == (f"https://index.example/files/{sdist.filename(VERSION)}", GOOD_SHA)


def test_the_installed_ale_py_version_is_pinned():
    pytest.importorskip("ale_py")
    assert build.ale_version() in sdist.PINNED_SHA256


def test_cache_folders_are_created_private(tmp_path):
    folder = builds.private_folder(tmp_path / "a" / "b")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
@pytest.mark.parametrize("mode", [0o777, 0o770, 0o757])
def test_a_cache_others_may_write_is_refused(cache, mode):
    cache.mkdir(mode=0o700)
    os.chmod(cache, mode)
    with pytest.raises(build.AtariError, match=f"the build cache {cache} is writable by"):
        build.ale_archive()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_shoals_cache_folder_others_may_write_is_refused_for_the_folders_inside(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(shared))
    with pytest.raises(builds.CacheError, match=f"the build cache {shared} is writable by others"):
        builds.private_folder(shared / "atari")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another user needs root")
def test_a_cache_of_another_user_is_refused(cache):
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    with pytest.raises(build.AtariError, match=f"the build cache {cache} is owned by another user"):
        build.ale_archive()


def test_compile_jobs_follow_the_usable_cpus(cache, monkeypatch):
    import shoal.cpus

    sizes = []
    real = concurrent.futures.ThreadPoolExecutor

    def recording(max_workers=None, **kwargs):
        sizes.append(max_workers)
        return real(max_workers=max_workers, **kwargs)

    monkeypatch.setattr(shoal.cpus, "usable_cpus", lambda *a: 1)
    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", recording)
    _plant(cache, GOOD)
    build.ale_archive()
    assert sizes and set(sizes) == {1}, sizes


KILLED_BUILD = """
import sys, time
from pathlib import Path
from shoal.native import builds
builds.cached_build(Path(sys.argv[1]), "slow", "f" * 64, "lib.so", lambda stage: time.sleep(600), RuntimeError)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_killed_builds_staging_folder_is_removed_by_the_next_use(tmp_path):
    root = tmp_path / "cache"
    quick = builds.cached_build(root, "quick", "e" * 64, "lib.so", _quick_build, RuntimeError)
    child = subprocess.Popen([sys.executable, "-c", KILLED_BUILD, str(root)], env={**os.environ, "SHOAL_QUIET": "1"})
    try:
        deadline = time.monotonic() + 60
        while not list(root.glob(".build-slow-*/.lock")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(root.glob(".build-slow-*")), "the child never started its build"
        assert builds.remove_dead_stages(root) == 0, "the staging folder of a build that runs was removed"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert list(root.glob(".build-slow-*")), "nothing was left to clean: the test proves nothing"
    assert builds.cached_build(root, "quick", "e" * 64, "lib.so", _quick_build, RuntimeError) == quick  # a hit
    assert not list(root.glob(".build-*")), "the killed build's staging folder is still there"
    assert not list(root.glob(".lock-*")), "the killed build's lock file is still there"


SLOW_BUILD = """
import sys, time
from pathlib import Path
from shoal.native import builds

def build(stage):
    print("started", flush=True)
    time.sleep(2)
    (stage / "lib.so").write_bytes(b"from the child")

builds.cached_build(Path(sys.argv[1]), "shared", "a" * 64, "lib.so", build, RuntimeError)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_a_second_process_waits_for_the_first_build_of_a_key(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(progress.QUIET_ENV, raising=False)
    root = tmp_path / "cache"
    with subprocess.Popen(
        [sys.executable, "-c", SLOW_BUILD, str(root)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "SHOAL_QUIET": "1"},
    ) as child:
        assert child.stdout.readline().strip() == "started"

        def second(stage):
            raise AssertionError("built a second time while the first build ran")

        folder = builds.cached_build(root, "shared", "a" * 64, "lib.so", second, RuntimeError, "the shared build")
        assert child.wait(timeout=60) == 0
    assert (folder / "lib.so").read_bytes() == b"from the child"
    assert "waiting for another process's the shared build" in capsys.readouterr().err


def _quick_build(stage: Path, seconds: float = 0.0) -> None:
    time.sleep(seconds)
    (stage / "lib.so").write_bytes(b"library")


def test_a_build_says_what_it_does_and_where_at_once(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(progress.QUIET_ENV, raising=False)
    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.2)
    root = tmp_path / "cache"
    seen_at_start = []

    def slow(stage):
        seen_at_start.append(capsys.readouterr().err)
        progress.current().phase("compiling 3 files", total=3)
        for _ in range(3):
            time.sleep(0.3)
            progress.current().advance()
        _quick_build(stage)

    started = time.monotonic()
    builds.cached_build(root, "demo", "d" * 64, "lib.so", slow, RuntimeError, "building the demo")
    assert time.monotonic() - started < 30
    assert f"shoal: building the demo (once; cached in {root})" in seen_at_start[0]
    later = capsys.readouterr().err
    assert "compiling 3 files 0/3 (0%)" in later
    assert any("compiling 3 files" in line and "/3 (" in line for line in later.splitlines()[1:-1]), later
    assert later.rstrip().splitlines()[-1].startswith("shoal: building the demo: done in ")
    builds.cached_build(root, "demo", "d" * 64, "lib.so", slow, RuntimeError, "building the demo")
    assert capsys.readouterr().err == "", "a cached build printed something"


def test_progress_updates_one_line_on_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(progress, "TTY_INTERVAL", 0.05)
    stream = Terminal()
    with progress.Progress("working", Path("/cache"), stream=stream, silent=False) as report:
        report.phase("step", total=2)
        time.sleep(0.3)
    text = stream.getvalue()
    assert "\r" in text and "\033[K" in text
    assert re.search(r"\nshoal: working: done in \d+ s\n$", text), text


def test_quiet_builds_print_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(progress.QUIET_ENV, "1")
    builds.cached_build(tmp_path / "cache", "demo", "c" * 64, "lib.so", _quick_build, RuntimeError)
    assert capsys.readouterr().err == ""


def test_shoal_build_atari_builds_into_the_cache_and_says_where(monkeypatch, tmp_path, capsys):
    from shoal import cli

    calls = []
    monkeypatch.setenv("SHOAL_ATARI_BUILD_CACHE", str(tmp_path))
    monkeypatch.setattr(build, "env_library", lambda: calls.append(progress.quiet()) or tmp_path / "lib.so")
    monkeypatch.setattr(build, "ale_version", lambda: VERSION)
    assert cli.main(["build", "atari", "-q"]) == 0
    out = capsys.readouterr().out
    assert calls == [True], "shoal build -q did not silence the build"
    assert str(tmp_path) in out
    progress.set_quiet(None)
    assert cli.main(["build", "mujoco", "NoSuchTask-v5"]) == 2
    assert "no task NoSuchTask-v5" in capsys.readouterr().err
