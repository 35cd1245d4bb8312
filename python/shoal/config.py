"""Compatibility alias of shoal.tools.config (config.ini: its reading, the env it names and the vector it makes: moved into tools/ with the rest of the command)."""

import sys

from .tools import config as _module

sys.modules[__name__] = _module
