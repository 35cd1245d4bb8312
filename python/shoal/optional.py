"""Optional dependencies: absent is fine, broken is an error."""

from __future__ import annotations

import importlib
from types import ModuleType


def optional_module(name: str) -> ModuleType | None:
    """The module ``name``, or None when it (or its top-level package) is not installed.

    Any other import failure, such as a broken install or an error inside the module, propagates.
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            return None
        raise
