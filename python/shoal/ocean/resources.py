"""The data files an Ocean env opens (``fopen("resources/moba/game_map.npy")``), found in its tree.

PufferLib runs from its repository root, where ``resources/`` is the package's
``pufferlib/resources`` folder, so an env opens its files by paths relative to that. shoal opens
them relative to the env's tree whatever the current directory: the build defines
SHOAL_OCEAN_RESOURCE_ROOT (the tree's ``pufferlib`` folder) and the adapter's fopen looks there
first (csrc/include/shoal_ocean_files.h). The files an env's sources name as plain literals, outside
raylib's loaders (textures, shaders, models: rendering only), must be there before anything is
built: a missing one is an OceanError naming the env and the file. For the pinned sdist, the env's
resource folders are extracted from the archive on first use.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import source
from .errors import OceanError

# A "resources/..." literal, unless it is the argument of a raylib loader (Load*) or a format string.
_LITERAL = re.compile(r'(Load\w*\s*\(\s*|TextFormat\s*\(\s*)?"(resources/[^"%]+)"')


def required_files(folder: Path) -> list[str]:
    """The resource paths the env's C sources open as literals, outside rendering."""
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in (".c", ".h"):
            for loader, name in _LITERAL.findall(path.read_text(errors="replace")):
                if not loader and name not in found:
                    found.append(name)
    return found


def _extract_from_sdist(root: Path, folders: set[str]) -> None:
    """Extracts pufferlib/resources/<folder>/ of the sdist into root/resources/<folder> (atomically)."""
    prefix = f"pufferlib-{source.SDIST_VERSION}/pufferlib/resources/"
    source.extract_sdist(
        lambda name: any(name.startswith(f"{prefix}{folder}/") for folder in folders),
        {f"{prefix}{folder}": root / "resources" / folder for folder in folders},
        root,
    )


def resource_root(name: str, ocean: Path, folder: Path) -> Path | None:
    """The folder the env's resource paths are relative to (its tree's ``pufferlib``), with every
    file its sources open there; None if it opens none."""
    required = required_files(folder)
    if not required:
        return None
    root = ocean.parent
    missing = [f for f in required if not (root / f).is_file()]
    if missing and ocean == source.sdist_ocean_dir():
        _extract_from_sdist(root, {Path(f).parts[1] for f in missing})
        missing = [f for f in required if not (root / f).is_file()]
    if missing:
        raise OceanError(
            f"Ocean env {name!r} ({folder}) opens {', '.join(missing)}, which "
            f"{'is' if len(missing) == 1 else 'are'} not in {root / 'resources'}"
        )
    return root
