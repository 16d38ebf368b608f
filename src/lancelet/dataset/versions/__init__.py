"""Versions and commits: loading a version, the commit every job makes (with the
cleanup the config asks for), tags, cleanup of old versions, ``asof``, the change
feed, pylance's ``Transaction`` and ``LanceOperation`` objects, and base paths."""
