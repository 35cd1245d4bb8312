"""Compatibility alias of shoal.tools.cli (moved into tools/ with the rest of the `shoal` command)."""

import sys

from .tools import cli as _module

if __name__ == "__main__":  # python -m shoal.cli, as before the move
    sys.exit(_module.main())
sys.modules[__name__] = _module
