"""PufferLib Ocean envs on shoal."""
