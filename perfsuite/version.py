"""The package version, in a module of its own so every layer can read it without importing
the package facade (which sits above the CLI and the API)."""

__version__ = "0.1.0"
