"""Compatibility alias of shoal.tools.quiet (moved into tools/ with the rest of the `shoal` command)."""

import sys

from .tools import quiet as _module

sys.modules[__name__] = _module
