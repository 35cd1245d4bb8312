"""Compatibility alias of shoal.tools.check (moved into tools/ with the rest of the `shoal` command)."""

import sys

from .tools import check as _module

sys.modules[__name__] = _module
