"""The error of shoal.ocean: bad input (env name, source tree, Python class, compiler failure)."""

from ..errors import APIUsageError


class OceanError(APIUsageError):
    """An Ocean env cannot be found, read or built; the message names the file and what to do."""
