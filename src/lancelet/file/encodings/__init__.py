"""Page encodings, one package per file format version."""
