"""The package's version: the project's (the root package.json's, checked by tests/test_packaging.py);
pyproject.toml reads it from here."""

__version__ = "0.2.0"
