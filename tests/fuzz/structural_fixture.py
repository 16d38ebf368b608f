"""The checked-in 2.1 / 2.2 fixtures of the structural fuzz campaign, and the values
they hold, computed from row numbers alone.

Each fixture is a pylance 14 dataset folder (``fixtures/structural_v2_1`` and
``..._v2_2``) with one fragment whose data file, ``data/fuzz.lance``, was written by
``lance.file.LanceFileWriter`` in two batches of :data:`PAGE_ROWS` rows with a tiny
page cache, so every column has two pages.  The columns steer pylance into every
layout and compression it writes (what each one becomes in 2.2 is noted beside it;
2.1 differs in places, e.g. the constant column is run-length encoded there):

* mini-block: inline bit packing (``i``; nullable ``n`` with its definition levels
  bit packed out of line in the first page, whose chunk holds over 1024 values), flat
  booleans (``b``), FSST strings (``fs``), variable strings (``st.y``), a page
  dictionary compressed with lz4 (``d``), run-length values (``r``) and definition
  levels (``nr``, nulls in long runs), byte-stream-split floats under zstd (``f``), a
  packed struct (``p``), a nullable fixed-size list (``v``), lists with nulls and
  empties and their repetition index (``l``), a nullable struct (``st``);
* full-zip: binaries with a few values of 256 bytes or more (``big``), lists of them
  (``lb``, a repetition index over rows of many items), nullable vectors forced
  full-zip (``vec``), a variable packed struct (``vp``, 2.2 only: a plain struct in
  2.1);
* constant pages: a constant (``c``), all nulls (``z``), a constant with nulls
  (``cn``, its definition levels stored raw).

pylance trains FSST on a random sample, so a new write differs byte for byte:
``python -m tests.fuzz.structural_fixture`` rewrites the fixtures (pylance needed),
the tests only read them.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa

HERE = Path(__file__).parent / "fixtures"
DATA = "data/fuzz.lance"
PAGE_ROWS = (1100, 200)
ROWS = sum(PAGE_ROWS)
WORDS = ("red", "green", "blue", "cyan", "magenta")

PACKED = {"lance-encoding:packed": "true"}
FULLZIP = {"lance-encoding:structural-encoding": "fullzip"}
SCHEMA = pa.schema(
    [
        pa.field("i", pa.int64()),
        pa.field("n", pa.int32()),
        pa.field("b", pa.bool_()),
        pa.field("fs", pa.string(), metadata={"lance-encoding:compression": "fsst"}),
        pa.field("d", pa.string()),
        pa.field("r", pa.int64(), metadata={"lance-encoding:dict-divisor": "100000"}),
        pa.field("nr", pa.int32()),
        pa.field(
            "f",
            pa.float64(),
            metadata={"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"},
        ),
        pa.field("p", pa.struct([("a", pa.int16()), ("b", pa.uint8())]), metadata=PACKED),
        pa.field("v", pa.list_(pa.int16(), 2)),
        pa.field("l", pa.list_(pa.int16())),
        pa.field("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        pa.field("big", pa.binary()),
        pa.field("lb", pa.list_(pa.binary())),
        pa.field("vec", pa.list_(pa.int8(), 4), metadata=FULLZIP),
        pa.field("vp", pa.struct([("a", pa.int32()), ("s", pa.string())]), metadata=PACKED),
        pa.field("c", pa.int64()),
        pa.field("z", pa.int32()),
        pa.field("cn", pa.int32()),
    ]
)


def _big(i: int) -> bytes | None:
    if i % 5:
        return None
    size = 256 + i % 40 if i % 97 == 0 else i % 11
    return bytes([i % 251]) * size


def _list_of_big(i: int) -> list[bytes] | None:
    if i % 7 == 3:
        return None
    if i % 7 == 5:
        return []
    if i % 7 in (0, 1):
        return [bytes([i % 13]) * (i % 3)]
    items = i % 4 + 1
    return [bytes([j]) * (300 if (i + j) % 211 == 0 else j + 1) for j in range(items)]


def row(i: int) -> dict[str, Any]:
    """Row ``i`` of both fixtures."""
    return {
        "i": i * 3 - 500,
        "n": None if i % 3 == 0 else i * 5,
        "b": None if i % 7 == 2 else i % 2 == 1,
        "fs": f"item-{i % 300}-x",
        "d": WORDS[(i * 3) % 5],
        "r": i // 60,
        "nr": None if (i // 150) % 2 else i,
        "f": i / 4,
        "p": {"a": i - 600, "b": i % 256},
        "v": None if i % 5 == 1 else [i, -i],
        "l": None if i % 4 == 0 else [] if i % 4 == 1 else [i - j for j in range(i % 5)],
        "st": None if i % 3 == 1 else {"x": None if i % 5 == 0 else i, "y": f"y{i}"},
        "big": _big(i),
        "lb": _list_of_big(i),
        "vec": None if i % 6 == 2 else [i % 128, -(i % 100), 7, (i * 3) % 128],
        "vp": None if i % 4 == 3 else {"a": i, "s": "s" * (i % 6)},
        "c": 7,
        "z": None,
        "cn": None if (i // 100) % 2 else 1,
    }


def schema(version: str) -> pa.Schema:
    """2.1 cannot pack a struct with a string field: ``vp`` is a plain struct there."""
    if version != "2.1":
        return SCHEMA
    index = SCHEMA.get_field_index("vp")
    return SCHEMA.set(index, SCHEMA.field(index).remove_metadata())


def table(version: str = "2.2") -> pa.Table:
    return pa.Table.from_pylist([row(i) for i in range(ROWS)], schema=schema(version))


def folder(version: str) -> Path:
    return HERE / f"structural_v{version.replace('.', '_')}"


def _write_file(path: Path, version: str) -> None:
    import lance.file

    whole = table(version)
    with lance.file.LanceFileWriter(
        str(path), whole.schema, version=version, data_cache_bytes=1024
    ) as writer:
        start = 0
        for rows in PAGE_ROWS:
            writer.write_batch(whole.slice(start, rows).combine_chunks())
            start += rows


def _leaf_fields(version: str, scratch: Path) -> tuple[list[int], list[int]]:
    """The field ids and column indices pylance records for a data file of SCHEMA."""
    import lance

    written = lance.write_dataset(
        table(version).slice(0, 10), scratch, data_storage_version=version
    )
    data_file = written.get_fragments()[0].metadata.files[0]
    return list(data_file.fields), list(data_file.column_indices)


def write(version: str) -> Path:
    """Rewrite the fixture of ``version`` (pylance needed)."""
    import lance
    from lance.fragment import DataFile, FragmentMetadata

    root = folder(version)
    shutil.rmtree(root, ignore_errors=True)
    (root / "data").mkdir(parents=True)
    _write_file(root / DATA, version)
    scratch = root.parent / f".scratch-{version}"
    try:
        fields, columns = _leaf_fields(version, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    major, minor = (int(x) for x in version.split("."))
    data_file = DataFile(
        Path(DATA).name,
        fields,
        columns,
        file_major_version=major,
        file_minor_version=minor,
        file_size_bytes=(root / DATA).stat().st_size,
    )
    fragment = FragmentMetadata(0, [data_file], physical_rows=ROWS)
    lance.LanceDataset.commit(
        str(root), lance.LanceOperation.Overwrite(schema(version), [fragment])
    )
    return root


def main() -> None:
    for version in ("2.1", "2.2"):
        print(write(version))


if __name__ == "__main__":
    main()
