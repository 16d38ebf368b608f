"""Lance file format 2.0 array encodings: one module per encoding.

Each decoder turns the buffers of one page into an Arrow array of the requested
type; :mod:`.dispatch` walks the encoding tree.  Encoders build the same trees.
"""
