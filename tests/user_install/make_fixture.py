"""Writes ``fixtures/pylance_defaults/``: a dataset pylance writes with its defaults.

Run from the repository root with pylance installed:
``python -m tests.user_install.make_fixture``.  The dataset is checked in so that the
user-install smoke check (which has no pylance) reads real pylance output.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import lance

from tests.user_install.rows import ROWS, rows

FIXTURE = Path(__file__).parent / "fixtures" / "pylance_defaults"


def main() -> None:
    shutil.rmtree(FIXTURE, ignore_errors=True)
    lance.write_dataset(rows(0, ROWS // 2), FIXTURE)
    lance.write_dataset(rows(ROWS // 2, ROWS), FIXTURE, mode="append")
    lance.dataset(FIXTURE).delete("id % 10 = 3")


if __name__ == "__main__":
    main()
