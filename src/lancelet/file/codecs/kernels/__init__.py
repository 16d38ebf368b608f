"""Compiled (numba) kernels for the codecs' sequential steps; call them only when
:func:`lancelet.file.codecs.jit.enabled` is true (numba is imported, and a kernel
compiled, at its first call: see :func:`lancelet.file.codecs.jit.kernel`)."""
