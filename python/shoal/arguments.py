"""Compatibility alias of shoal.tools.arguments (the `shoal` command's numbers, checked as parsed: moved into tools/ with the rest of the command)."""

import sys

from .tools import arguments as _module

sys.modules[__name__] = _module
