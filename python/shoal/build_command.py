"""Compatibility alias of shoal.tools.build_command (moved into tools/ with the rest of the `shoal` command)."""

import sys

from .tools import build_command as _module

sys.modules[__name__] = _module
