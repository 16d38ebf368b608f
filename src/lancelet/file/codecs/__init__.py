"""Protobuf-free numpy codecs that every file version's encodings share:
bit packing, FSST, and general-purpose buffer compression."""
