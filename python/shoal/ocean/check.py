"""Compatibility alias of shoal.tools.check (`shoal check`: it checks any native env, not only Ocean's)."""

import sys

from ..tools import check as _module

sys.modules[__name__] = _module
