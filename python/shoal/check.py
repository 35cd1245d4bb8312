"""Compatibility alias of shoal.tools.check (`shoal check`: moved into tools/ with the rest of the command)."""

import sys

from .tools import check as _module

sys.modules[__name__] = _module
