"""Where Ocean envs come from: a PufferLib source tree, or the pinned pufferlib 3.0.0 sdist.

The sdist is fetched through pip's configured package index (the simple API, PEP 691 JSON or
PEP 503 HTML), checked against its pinned sha256, kept in the user's cache directory and
extracted there once (only ``pufferlib/ocean``). Every write goes to a temporary name first and
is renamed into place, so a failed or interrupted fetch leaves nothing that looks complete.
"""

from __future__ import annotations

import html.parser
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from ..native.builds import cache_dir, family_cache_dir
from ..native.manifest import file_sha256
from .errors import OceanError

SDIST_PROJECT = "pufferlib"
SDIST_VERSION = "3.0.0"
SDIST_FILENAME = f"pufferlib-{SDIST_VERSION}.tar.gz"
SDIST_SHA256 = "7df3a3e3f5f894d78d2a1f5374097890aec01473183e748abefe4f3faa10eaa9"
DEFAULT_INDEX = "https://pypi.org/simple"
_OCEAN_PREFIX = f"pufferlib-{SDIST_VERSION}/pufferlib/ocean/"


def build_cache_dir() -> Path:
    """Where compiled Ocean envs are kept: $SHOAL_OCEAN_BUILD_CACHE, else <cache_dir()>/ocean."""
    return family_cache_dir("ocean")


def index_urls() -> list[str]:
    """pip's configured index, then its extra indexes (environment and config files, as pip reads them)."""
    primary, extras = None, []
    try:
        listing = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        listing = ""
    for line in listing.splitlines():
        key, _, value = line.partition("=")
        value = value.strip().strip("'\"")
        if key.endswith(".index-url"):
            primary = value
        elif key.endswith(".extra-index-url"):
            extras.extend(value.split())
    primary = os.environ.get("PIP_INDEX_URL", primary) or DEFAULT_INDEX
    extras = os.environ.get("PIP_EXTRA_INDEX_URL", " ".join(extras)).split()
    return [primary] + [url for url in extras if url != primary]


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.links.extend(value for name, value in attrs if name == "href" and value)


def _local_page(page: str) -> str | None:
    """A file:// index page: the folder's index.html, else its file names as links (as pip reads it)."""
    folder = Path(urllib.request.url2pathname(urllib.parse.urlsplit(page).path))
    if (folder / "index.html").is_file():
        return (folder / "index.html").read_text(errors="replace")
    if folder.is_dir():
        return "".join(f'<a href="{p.name}">{p.name}</a>' for p in folder.iterdir())
    return None


def _sdist_url(index: str) -> str | None:
    page = index.rstrip("/") + f"/{SDIST_PROJECT}/"
    if page.startswith("file:"):
        body = _local_page(page)
        return _find_link(page, body) if body is not None else None
    request = urllib.request.Request(page, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            body = response.read().decode("utf-8", "replace")
            content_type = response.headers.get("Content-Type", "") if hasattr(response, "headers") else ""
    except (OSError, ValueError):
        return None
    if "json" in content_type:
        for entry in json.loads(body).get("files", []):
            if entry.get("filename") == SDIST_FILENAME:
                return urllib.parse.urljoin(page, entry["url"])
        return None
    return _find_link(page, body)


def _find_link(page: str, body: str) -> str | None:
    parser = _Links()
    parser.feed(body)
    for link in parser.links:
        if urllib.parse.urlsplit(link).path.rsplit("/", 1)[-1] == SDIST_FILENAME:
            return urllib.parse.urljoin(page, link)
    return None


def fetch_sdist() -> Path:
    """The pinned sdist in the cache, downloaded through pip's index if it is not there yet."""
    target = cache_dir() / "downloads" / SDIST_FILENAME
    if target.is_file() and file_sha256(target) == SDIST_SHA256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tried = []
    for index in index_urls():
        url = _sdist_url(index)
        tried.append(index)
        if url is None:
            continue
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".download-")
        try:
            with os.fdopen(handle, "wb") as out, urllib.request.urlopen(url, timeout=300) as response:
                shutil.copyfileobj(response, out, 1 << 20)
            digest = file_sha256(Path(temporary))
            if digest != SDIST_SHA256:
                raise OceanError(
                    f"{SDIST_FILENAME} from {index} has sha256 {digest}, expected {SDIST_SHA256}; refusing to use it"
                )
            os.replace(temporary, target)
            return target
        except OSError as error:
            tried[-1] += f" ({error})"
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    raise OceanError(
        f"cannot fetch {SDIST_FILENAME} through pip's package index (tried {', '.join(tried)}); "
        "pass a PufferLib source tree instead (source=PATH, or ocean_source in config.ini)"
    )


def sdist_ocean_path() -> Path:
    """Where the pinned sdist's ``pufferlib/ocean`` is extracted (whether it is there yet or not)."""
    return cache_dir() / f"pufferlib-{SDIST_VERSION}" / "pufferlib" / "ocean"


def sdist_ocean_dir() -> Path:
    """``pufferlib/ocean`` of the pinned sdist, extracted once into the cache."""
    root = cache_dir() / f"pufferlib-{SDIST_VERSION}"
    ocean = sdist_ocean_path()
    if ocean.is_dir():
        return ocean
    root.parent.mkdir(parents=True, exist_ok=True)
    extract_sdist(lambda name: name.startswith(_OCEAN_PREFIX), {f"pufferlib-{SDIST_VERSION}": root}, root.parent)
    if not ocean.is_dir():
        raise OceanError(f"{root} exists but holds no pufferlib/ocean: remove it to extract the sdist again")
    return ocean


def extract_sdist(wanted, places: dict[str, Path], staging_parent: Path) -> None:
    """Extracts the sdist's members whose names ``wanted`` accepts into a staging folder in
    ``staging_parent``, then renames each extracted folder (``places``: its path in the archive ->
    its target) into place, so that no reader ever sees half of one. A target that is already there
    (another process's extraction won the rename) is kept; a folder the archive lacks is skipped."""
    archive = fetch_sdist()
    staging = Path(tempfile.mkdtemp(dir=staging_parent, prefix=".extract-"))
    try:
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(staging, members=[m for m in tar.getmembers() if wanted(m.name)], filter="data")
        for inside, target in places.items():
            extracted = staging / inside
            if not extracted.is_dir() or target.is_dir():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(extracted, target)
            except OSError:
                if not target.is_dir():
                    raise
    except (OSError, tarfile.TarError) as error:
        raise OceanError(f"cannot extract {archive}: {error}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def ocean_dir(source: str | os.PathLike | None = None) -> Path:
    """The folder holding the Ocean envs: ``source`` (a PufferLib repository root or its
    ``pufferlib/ocean`` folder), or the pinned sdist's when ``source`` is None."""
    if source is None:
        return sdist_ocean_dir()
    path = Path(source).expanduser()
    for candidate in (path / "pufferlib" / "ocean", path):
        if candidate.is_dir() and any(candidate.glob("*/binding.c")):
            return candidate.resolve()
    raise OceanError(
        f"{path} is not a PufferLib source tree: neither it nor {path / 'pufferlib' / 'ocean'} "
        "holds env folders with a binding.c"
    )


def available_envs(ocean: Path) -> list[str]:
    """Env folders of the tree: ``<name>/binding.c``, ``<name>/<name>.h`` and ``<name>/<name>.py``."""
    return sorted(
        d.name
        for d in ocean.iterdir()
        if (d / "binding.c").is_file() and (d / f"{d.name}.h").is_file() and (d / f"{d.name}.py").is_file()
    )


def env_dir(ocean: Path, name: str) -> Path:
    """The folder of env ``name``; an unknown name lists the available ones, a folder without
    its files names the missing file."""
    folder = ocean / name
    if not folder.is_dir():
        raise OceanError(f"no Ocean env {name!r} in {ocean}; available: {', '.join(available_envs(ocean))}")
    for needed in ("binding.c", f"{name}.h", f"{name}.py"):
        if not (folder / needed).is_file():
            raise OceanError(f"Ocean env {name!r} in {folder} is incomplete: {folder / needed} is missing")
    return folder
