"""The result classes that a lexical search does not need, one module per workstream.

Import them from :mod:`kbdb.types`, which loads these modules on first use (see there).
"""
