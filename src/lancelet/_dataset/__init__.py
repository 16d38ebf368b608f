"""Internal dataset helpers under pylance's names (``lance._dataset``)."""
