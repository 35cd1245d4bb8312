"""The `shoal` command and what only it uses: config.ini, `run`, `bench`, `autotune`, `check` and
`build`, their timing, their numbers' checks and the peers bench measures. The library (make() and
what it steps) imports nothing from here; shoal.config, shoal.cli and the other old paths are aliases
of these modules."""
