"""Lance file formats 2.1 and 2.2: structural page layouts (mini-block, full-zip,
constant, blob) with repetition and definition levels, and compressive encodings."""
