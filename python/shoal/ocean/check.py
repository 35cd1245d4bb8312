"""Compatibility alias of shoal.check (`shoal check`: it checks any native env, not only Ocean's)."""

import sys

from .. import check as _module

sys.modules[__name__] = _module
