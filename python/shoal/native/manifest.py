"""A build's manifest: what a cache entry's library must be before anything loads it.

Loading a damaged shared library is not an error but a crash: ``dlopen`` maps the file and a
truncated one ends the process with SIGBUS as soon as a page past its end is touched. So a
build writes, last and into its staging folder, a manifest holding the library's size and
SHA-256; an entry is loaded only if its library still matches. Truncation, a zero-length file
or garbage of the same size (a disk that filled up, a copy cut short, a stray write) all fail
the check, and the caller rebuilds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

MANIFEST = "manifest.json"
DISCARD_PREFIX = ".build-damaged-"  # starts as a staging folder does: clean_builds removes leftovers


def file_sha256(path: Path) -> str:
    """The hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write(library: Path) -> None:
    """Records ``library``'s size and hash beside it (call after the compiler wrote it)."""
    record = {"library": library.name, "size": library.stat().st_size, "sha256": file_sha256(library)}
    (library.parent / MANIFEST).write_text(json.dumps(record))


def damage(library: Path) -> str | None:
    """None if ``library`` matches its folder's manifest, else what is wrong with it."""
    try:
        record = json.loads((library.parent / MANIFEST).read_text())
        expected_size, expected_hash = int(record["size"]), str(record["sha256"])
    except FileNotFoundError:
        return "it has no manifest (an interrupted or older build)"
    except (OSError, ValueError, KeyError, TypeError):
        return "its manifest is unreadable"
    try:
        size = library.stat().st_size
        if size != expected_size:
            return f"{library.name} has {size:,} bytes, its manifest says {expected_size:,}"
        if file_sha256(library) != expected_hash:
            return f"{library.name} does not match its manifest's SHA-256"
    except OSError as error:
        return f"{library.name} cannot be read: {error.strerror or error}"
    return None


def discard(entry: Path) -> None:
    """Removes a damaged cache entry. It is renamed aside first, so that no other process finds it
    half removed; a process that already loaded it keeps its mapping."""
    with contextlib.suppress(OSError):
        aside = Path(tempfile.mkdtemp(dir=entry.parent, prefix=DISCARD_PREFIX))
        try:
            os.replace(entry, aside / entry.name)
        finally:
            shutil.rmtree(aside, ignore_errors=True)
