"""ale-py's source distribution: fetched from the package index as one file, used only once verified.

The file is downloaded directly (the index's simple API names its URL and SHA-256; nothing is
installed, no build backend runs) and checked against a SHA-256 that shoal trusts: the one pinned
below for the ale-py versions shoal knows, else $SHOAL_ALE_SDIST_SHA256, else the index's published
one (over HTTPS). A verified hash is recorded beside the file, so the ALE build keyed by it stays
usable offline, without the file. A cached file that does not match is removed, with an error that
names it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from ..native import progress

# sha256 of ale_py-<version>.tar.gz as PyPI publishes it.
PINNED_SHA256 = {
    "0.10.1": "3971a8552d2f982f569c87152479901574a9fe86410e5d1a26276e7ffccb59e1",
    "0.11.1": "ef2f6032b6b8ec2de65a9824d575c814043ff1e7a56458a15440640b284a23cc",
    "0.11.2": "cc6fed9d994d796d76b0d042fbe0a7101834faa55b5e70b1e1f14367ed9e2a8a",
    "0.12.0": "6030416b6a049d399bf95420ad2fdbf0ea8f83051b502774d27b477a06000dbc",
    "0.12.1": "c503d574c5983e1063b451201ccb779d935919c0f6bf116fb0f4f8aa4c86d249",
}
DEFAULT_INDEX = "https://pypi.org/simple"
HASH_ENV = "SHOAL_ALE_SDIST_SHA256"
TIMEOUT = 60
CHUNK = 1 << 20
DEAD_PART_SECONDS = 600
SHA256 = re.compile(r"^[0-9a-f]{64}$")


def filename(version: str) -> str:
    return f"ale_py-{version}.tar.gz"


def index_url() -> str:
    """The package index asked: $SHOAL_PACKAGE_INDEX, else $PIP_INDEX_URL, else PyPI."""
    return os.environ.get("SHOAL_PACKAGE_INDEX") or os.environ.get("PIP_INDEX_URL") or DEFAULT_INDEX


def known_sha256(version: str, folder: Path) -> str | None:
    """The SHA-256 the sdist of ``version`` must have, without asking the network: pinned, given in
    $SHOAL_ALE_SDIST_SHA256, or recorded when a download was verified."""
    if version in PINNED_SHA256:
        return PINNED_SHA256[version]
    given = os.environ.get(HASH_ENV, "").strip().lower()
    if given:
        if not SHA256.match(given):
            raise ValueError(f"${HASH_ENV} must be 64 hex digits, got {given!r}")
        return given
    with contextlib.suppress(OSError):
        recorded = _record(folder, version).read_text().strip()
        if SHA256.match(recorded):
            return recorded
    return None


def published(version: str) -> tuple[str, str]:
    """(URL, SHA-256) of ale-py ``version``'s sdist as the index publishes them (PEP 691 JSON, or the
    PEP 503 page's #sha256= fragments)."""
    page = index_url().rstrip("/") + "/ale-py/"
    request = urllib.request.Request(
        page, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1", "User-Agent": "shoal"}
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        kind = response.headers.get("Content-Type", "")
        body = response.read().decode("utf-8", "replace")
    name = filename(version)
    if "json" in kind:
        for entry in json.loads(body).get("files", []):
            digest = entry.get("hashes", {}).get("sha256", "")
            if entry.get("filename") == name and digest:
                return urllib.parse.urljoin(page, entry["url"]), digest.lower()
    else:
        for href in re.findall(r'href="([^"]+)"', body):
            url, _, fragment = href.partition("#")
            if url.rsplit("/", 1)[-1] == name and fragment.startswith("sha256="):
                return urllib.parse.urljoin(page, url), fragment[len("sha256=") :].lower()
    raise LookupError(f"{page} lists no {name} with a sha256")


def damage(path: Path, expected: str) -> str | None:
    """None if ``path`` has SHA-256 ``expected``, else what it looks like instead."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as file:
            head = file.read(512)
            digest = hashlib.sha256(head)
            for chunk in iter(lambda: file.read(CHUNK), b""):
                digest.update(chunk)
    except OSError as error:
        return f"unreadable: {error.strerror or error}"
    if digest.hexdigest() == expected:
        return None
    if size == 0:
        looks = "empty"
    elif head.lstrip()[:1] == b"<":
        looks = "an HTML or XML page, not an archive"
    elif head[:2] != b"\x1f\x8b":
        looks = "not a gzip archive"
    else:
        looks = f"a gzip archive of {size:,} bytes, truncated or another file"
    return f"{looks}; its sha256 is {digest.hexdigest()}, ale-py's is {expected}"


def verified(version: str, folder: Path, expected: str, error: type[Exception]) -> Path | None:
    """The cached sdist of ``version`` if it has the expected hash; None if there is none. A damaged
    one is removed, and ``error`` names it."""
    path = folder / filename(version)
    if not path.exists():
        return None
    problem = damage(path, expected)
    if problem is None:
        _record(folder, version).write_text(expected + "\n")
        return path
    with contextlib.suppress(OSError):
        path.unlink()
    raise error(
        f"the cached ale-py sdist {path} is damaged ({problem}); removed it. The next use fetches it again "
        f"from {index_url()} (or put a good copy of {filename(version)} there)"
    )


def fetch(version: str, folder: Path, expected: str | None, error: type[Exception]) -> Path:
    """Downloads ale-py ``version``'s sdist into ``folder`` (0700, the build cache's) and verifies it
    (against ``expected``, else the index's published hash) before it takes its name there."""
    name = filename(version)
    try:
        url, digest = published(version)
    except (OSError, LookupError, ValueError) as failure:
        raise error(
            f"shoal.atari builds ALE from ale-py {version}'s source distribution and could not find it on "
            f"{index_url()} ({failure}). With no access to the package index, put {name} into {folder}"
            + ("" if expected else f" and its sha256 into ${HASH_ENV}")
        ) from None
    expected = expected or digest
    final = folder / name
    _remove_dead_parts(folder, name)
    descriptor, part = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
    try:
        with os.fdopen(descriptor, "wb") as file:
            _download(url, file)
        problem = damage(Path(part), expected)
        if problem is not None:
            raise error(f"the download of {url} is not ale-py {version}'s sdist ({problem}); removed it")
        os.replace(part, final)
    except (OSError, urllib.error.URLError) as failure:
        raise error(f"downloading {url} into {folder} failed: {failure}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(part)
    _record(folder, version).write_text(expected + "\n")
    return final


def _download(url: str, file) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": "shoal"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        total = int(response.headers.get("Content-Length") or 0) or None
        report = progress.current()
        report.phase(f"downloading {url}", total=total, unit="B")
        for chunk in iter(lambda: response.read(CHUNK), b""):
            file.write(chunk)
            report.advance(len(chunk))


def _remove_dead_parts(folder: Path, name: str) -> None:
    """Partial downloads of a process that was killed (older than any download takes)."""
    for part in folder.glob(f".{name}.*.part"):
        with contextlib.suppress(OSError):
            if time.time() - part.stat().st_mtime > DEAD_PART_SECONDS:
                part.unlink()


def _record(folder: Path, version: str) -> Path:
    return folder / (filename(version) + ".sha256")
