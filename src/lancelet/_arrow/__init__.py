"""The classes behind :mod:`lancelet.arrow`."""
