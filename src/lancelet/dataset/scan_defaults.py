"""``default_scan_options``: scan keywords a dataset applies to every scan of it that
leaves them unset, as given to ``lancelet.dataset(..., default_scan_options=...)``."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from lancelet.errors import ArgumentError


def checked_defaults(
    options: Mapping[str, Any] | None, scanner: Callable[..., Any], call: str
) -> dict[str, Any] | None:
    """The options, each the name of a ``scanner`` keyword (else a ValueError, as in
    pylance); None when there are none."""
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise TypeError(f"{call}: default_scan_options must be a dict, not {options!r}")
    known = set(inspect.signature(scanner).parameters) - {"self"}
    for key in options:
        if key not in known:
            raise ArgumentError(f"{call}: default_scan_options: Unknown option {key!r}")
    return dict(options)


def with_defaults(
    scanner: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    defaults: Mapping[str, Any],
) -> dict[str, Any]:
    """The keyword arguments of a call ``scanner(*args, **kwargs)``, the ``defaults``
    filling those left None."""
    bound = inspect.signature(scanner).bind(None, *args, **kwargs)
    bound.apply_defaults()
    values = dict(bound.arguments)
    del values["self"]
    for key, value in defaults.items():
        if values.get(key) is None:
            values[key] = value
    return values
