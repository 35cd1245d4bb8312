"""Compatibility alias of shoal.tools.peers (the other libraries `shoal bench` measures beside shoal: moved into tools/ with the rest of the command)."""

import sys

from .tools import peers as _module

sys.modules[__name__] = _module
