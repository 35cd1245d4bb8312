"""Vectorization backends. Each registers itself with shoal.vector.register_backend."""
