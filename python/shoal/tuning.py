"""Compatibility alias of shoal.tools.tuning (moved into tools/ with the rest of the `shoal` command)."""

import sys

from .tools import tuning as _module

sys.modules[__name__] = _module
