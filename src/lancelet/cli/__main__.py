"""``python -m lancelet.cli``, the same as the ``lancelet`` command."""

from lancelet.cli.main import main

main()
