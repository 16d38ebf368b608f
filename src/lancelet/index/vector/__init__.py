"""Vector search: distance kernels (pure numpy); vector indices are not read yet."""
