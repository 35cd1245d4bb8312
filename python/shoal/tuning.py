"""Compatibility alias of shoal.tools.tuning (`shoal autotune`: moved into tools/ with the rest of the command)."""

import sys

from .tools import tuning as _module

sys.modules[__name__] = _module
