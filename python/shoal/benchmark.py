"""Compatibility alias of shoal.tools.benchmark (moved into tools/ with the rest of the `shoal` command)."""

import sys

from .tools import benchmark as _module

sys.modules[__name__] = _module
