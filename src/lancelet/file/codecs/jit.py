"""Whether lancelet's compiled kernels run: numba installed (the ``fast`` extra) and
not turned off with ``LANCELET_JIT=0``.

The codecs are whole-array numpy.  A few steps are sequential byte by byte (FSST's
greedy parse and its expansion), where numpy needs one pass per step of the longest
value; with numba those run as compiled loops in :mod:`lancelet.file.codecs.kernels`.
Both paths give identical output, and the tests run both.  Kernels release the GIL,
so columns encoded on several threads run in parallel.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar, cast

__all__ = ["ENV_VAR", "enabled", "kernel", "uncounted_kernel"]

ENV_VAR = "LANCELET_JIT"

F = TypeVar("F", bound=Callable[..., Any])


@cache
def _numba_installed() -> bool:
    return importlib.util.find_spec("numba") is not None


def enabled() -> bool:
    """True when kernels should run (read on every call, so tests can switch it)."""
    # The kernels read bytes as native 64-bit words, which must be little endian.
    little = sys.byteorder == "little"
    return little and os.environ.get(ENV_VAR, "1") != "0" and _numba_installed()


def kernel(fn: F) -> F:
    """``fn`` compiled by numba on its first call, cached on disk, without the GIL.

    numba is imported at that first call, not when the kernel is defined, so the
    modules of kernels import without numba; callers call kernels only when
    :func:`enabled` is true.  Kernels never call one another, so they need not be
    numba's own dispatchers at definition time.

    Numba does not check bounds: every kernel validates the indices it derives from
    file bytes itself, and its caller validates the arrays it passes in.
    """
    return _lazy(fn, counted=True)


def uncounted_kernel(fn: F) -> F:
    """A :func:`kernel` compiled without numba's reference counting: it must make no
    arrays (its caller passes them in; global arrays are constants).

    With counting, numba adds two atomic operations for every array a closure of the
    kernel reads from the scope around it, at every call, which its clean-up pass
    leaves in place inside branchy loops: in the JSON printer they took much of the
    time."""
    return _lazy(fn, counted=False)


def _lazy(fn: F, counted: bool) -> F:
    @cache
    def compiled() -> Callable[..., Any]:
        import numba

        options: dict[str, Any] = {"cache": True, "nogil": True}
        # ``_nrt`` is numba's own switch for reference counting (not in its stubs); a
        # numba without it compiles the kernel counted: slower, as right.
        if not counted and hasattr(_numba_options(), "_nrt"):
            options["_nrt"] = False
        dispatcher: Callable[..., Any] = numba.njit(**options)(fn)
        return dispatcher

    @functools.wraps(fn)
    def run(*args: Any) -> Any:
        return compiled()(*args)

    return cast(F, run)


def _numba_options() -> type:
    from numba.core import options

    defaults: type = options.DefaultOptions
    return defaults
