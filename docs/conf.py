"""Sphinx configuration of shoal's docs (MyST Markdown pages, autodoc API reference)."""

project = "shoal"
author = "shoal contributors"
copyright = "shoal contributors, MIT License"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
autosummary_generate = True
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the signatures say it; the docstrings say what the values mean
html_theme = "furo"
html_title = "shoal"
