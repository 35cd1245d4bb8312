"""Compatibility alias of shoal.tools.arguments (moved into tools/ with the rest of the `shoal` command)."""

import sys

from .tools import arguments as _module

sys.modules[__name__] = _module
