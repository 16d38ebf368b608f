"""The package version, kept apart so every layer can import it without cycles."""

__version__ = "0.1.0"
