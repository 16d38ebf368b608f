"""Reading 2.1 and 2.2 files."""
