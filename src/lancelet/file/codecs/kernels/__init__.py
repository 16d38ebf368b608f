"""Compiled (numba) kernels for the codecs' sequential steps; import only when
:func:`lancelet.file.codecs.jit.enabled` is true."""
