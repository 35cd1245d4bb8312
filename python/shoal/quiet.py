"""Compatibility alias of shoal.tools.quiet (third-party warnings kept out of the tools' progress lines: moved into tools/ with the rest of the command)."""

import sys

from .tools import quiet as _module

sys.modules[__name__] = _module
