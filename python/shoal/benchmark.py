"""Compatibility alias of shoal.tools.benchmark (the timing and machine-load helpers of `shoal bench`, `shoal run` and `shoal autotune`: moved into tools/ with the rest of the command)."""

import sys

from .tools import benchmark as _module

sys.modules[__name__] = _module
