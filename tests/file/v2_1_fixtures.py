"""The small 2.1 / 2.2 files under ``fixtures/v2_1`` and ``fixtures/v2_2``, written by
pylance 14, and the values they hold computed from row numbers alone.

``python -m tests.file.v2_1_fixtures`` rewrites them (pylance needed); the tests only
read them, so the reader stays covered whatever pylance does later.  The data avoids
long runs, so no page needs the run-length codec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

ROWS = 200
HERE = Path(__file__).parent / "fixtures"
WORDS = ("red", "green", "blue")

SCHEMA = pa.schema(
    [
        ("i", pa.int64()),
        ("n", pa.int32()),
        ("f", pa.float64()),
        ("b", pa.bool_()),
        ("s", pa.string()),
        ("d", pa.string()),
        ("l", pa.list_(pa.int16())),
        ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        ("c", pa.int64()),
        ("z", pa.int32()),
        ("v", pa.list_(pa.float32(), 2)),
    ]
)


def row(i: int) -> dict[str, Any]:
    """Row ``i`` of every fixture file."""
    return {
        "i": i * 7 - 1000,
        "n": None if i % 3 == 0 else i,
        "f": i / 4,
        "b": None if i % 3 == 2 else i % 2 == 1,
        "s": f"v{i}-{'x' * (i % 5)}",
        "d": WORDS[(i * 7) % 3],
        "l": None if i % 3 == 0 else [] if i % 3 == 1 else [i - j for j in range(i % 4 + 1)],
        "st": None if i % 3 == 1 else {"x": None if i % 3 == 2 and i % 2 else i, "y": f"y{i}"},
        "c": 42,
        "z": None,
        "v": None if i % 3 == 2 else [float(i), -float(i)],
    }


def table() -> pa.Table:
    return pa.Table.from_pylist([row(i) for i in range(ROWS)], schema=SCHEMA)


def path(version: str) -> Path:
    return HERE / f"v{version.replace('.', '_')}" / "mixed.lance"


def main() -> None:
    import lance.file

    for version in ("2.1", "2.2"):
        target = path(version)
        target.parent.mkdir(parents=True, exist_ok=True)
        with lance.file.LanceFileWriter(str(target), SCHEMA, version=version) as writer:
            writer.write_batch(table())


if __name__ == "__main__":
    main()
