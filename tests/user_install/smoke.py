"""What a plain ``pip install lancelet`` can do: every default path, checked.

``make test`` runs this in a fresh virtual environment holding lancelet installed as a
user installs it (``pip install .``, no extras, no pylance, no test tools), so a default
path that needs a package only an extra brings fails here.  Values are checked against
the formulas in ``rows.py`` and pyarrow's own computations, never against lancelet.

Run as a script: ``python tests/user_install/smoke.py`` (the repository's ``src`` is
not on the path, so the installed package is what runs).
"""

from __future__ import annotations

import datetime
import importlib
import importlib.util
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from rows import ROWS, rows  # the script's own folder is on the path

import lancelet

FIXTURE = Path(__file__).parent / "fixtures" / "pylance_defaults"
Check = Callable[[Path], None]
CHECKS: list[tuple[str, Check]] = []


def check(name: str) -> Callable[[Check], Check]:
    """Registers a check, run in a temporary folder of its own."""

    def register(fn: Check) -> Check:
        CHECKS.append((name, fn))
        return fn

    return register


def same(got: pa.Table, want: pa.Table, what: str) -> None:
    got = got.sort_by("id") if "id" in got.column_names else got
    want = want.sort_by("id") if "id" in want.column_names else want
    if not got.equals(want):
        for name in want.column_names:
            if not got.column(name).equals(want.column(name)):
                raise AssertionError(f"{what}: column {name!r} differs")
        raise AssertionError(f"{what}: tables differ ({got.schema} vs {want.schema})")


def where_id(table: pa.Table, keep: Callable[[int], bool]) -> pa.Table:
    return table.filter(pa.array([keep(i) for i in table["id"].to_pylist()]))


@check("read what pylance writes by default")
def read_pylance_fixture(tmp: Path) -> None:
    """Every encoding pylance 14 picks by default (the fixture's pages hold bit packing,
    run-length, constant and all-null pages, lz4 dictionaries, FSST, full-zip and
    fixed-size lists) reads back as the formulas say, and the copy takes commits."""
    uri = tmp / "from_pylance"
    shutil.copytree(FIXTURE, uri)
    ds = lancelet.dataset(str(uri))
    want = where_id(rows(), lambda i: i % 10 != 3)
    same(ds.to_table(), want, "pylance's dataset")
    taken = ds.take([0, 5, 1500])
    same(taken, want.take([0, 5, 1500]), "take from pylance's dataset")
    assert (
        ds.count_rows("word = 'beta' AND small < 50")
        == want.filter((pc.field("word") == "beta") & (pc.field("small") < 50)).num_rows
    )
    ds.delete("id < 100")
    assert (
        lancelet.dataset(str(uri)).count_rows()
        == want.num_rows - want.filter(pc.field("id") < 100).num_rows
    )


def round_trip(tmp: Path, version: str | None) -> None:
    uri = str(tmp / f"written_{version}")
    kwargs = {} if version is None else {"data_storage_version": version}
    table = rows()
    lancelet.write_dataset(table.slice(0, ROWS // 2), uri, **kwargs)
    lancelet.write_dataset(table.slice(ROWS // 2), uri, mode="append")
    ds = lancelet.dataset(uri)
    same(ds.to_table(), table, f"round trip at {version or 'the default version'}")
    same(ds.take([3, ROWS - 1]), table.take([3, ROWS - 1]), f"take at {version}")


@check("write and read at the default version")
def write_default(tmp: Path) -> None:
    round_trip(tmp, None)


@check("write and read at 2.0 and 2.1")
def write_older(tmp: Path) -> None:
    round_trip(tmp, "2.0")
    round_trip(tmp, "2.1")


@check("update, delete, merge_insert and time travel")
def row_changes(tmp: Path) -> None:
    uri = str(tmp / "changes")
    table = rows()
    ds = lancelet.write_dataset(table, uri)
    ds.update({"small": "small + 1000"}, where="id < 10")
    ds.delete("id >= 1990")
    source = pa.concat_tables([table.slice(5, 1), rows(5000, 5001)])
    source = source.set_column(
        source.schema.get_field_index("word"), "word", pa.array(["merged", "new"])
    )
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(source)
    latest = lancelet.dataset(uri)
    got = latest.to_table(columns=["id", "small", "word"])
    small = dict(zip(got["id"].to_pylist(), got["small"].to_pylist(), strict=True))
    word = dict(zip(got["id"].to_pylist(), got["word"].to_pylist(), strict=True))
    assert small[3] == 1003 and small[5] == 5 and small[12] == 12
    assert word[5] == "merged" and word[5000] == "new" and 1995 not in small
    assert got.num_rows == ROWS - 10 + 1
    assert lancelet.dataset(uri, version=1).count_rows() == ROWS
    same(lancelet.dataset(uri, version=1).to_table(), table, "version 1")


@check("scalar indices answer as a scan does")
def indices(tmp: Path) -> None:
    uri = str(tmp / "indexed")
    table = rows()
    ds = lancelet.write_dataset(table, uri)
    ds.create_scalar_index("small", "BTREE")
    ds.create_scalar_index("word", "BITMAP")
    ds = lancelet.dataset(uri)
    assert len(ds.list_indices()) == 2
    predicate = "small BETWEEN 10 AND 12 AND word = 'gamma'"
    want = table.filter(
        (pc.field("small") >= 10) & (pc.field("small") <= 12) & (pc.field("word") == "gamma")
    )
    same(ds.to_table(filter=predicate), want, "indexed filter")
    same(ds.to_table(filter=predicate, use_scalar_index=False), want, "scanned filter")


@check("compaction and cleanup keep every row")
def compaction(tmp: Path) -> None:
    uri = str(tmp / "compacted")
    table = rows()
    for start in range(0, ROWS, 250):
        lancelet.write_dataset(table.slice(start, 250), uri, mode="append")
    ds = lancelet.dataset(uri)
    ds.delete("id % 4 = 0")
    metrics = ds.optimize.compact_files()
    assert metrics.fragments_removed == 8 and metrics.fragments_added == 1
    ds = lancelet.dataset(uri)
    assert len(ds.get_fragments()) == 1
    same(ds.to_table(), where_id(table, lambda i: i % 4 != 0), "compacted")
    ds.cleanup_old_versions(older_than=datetime.timedelta(0))
    same(lancelet.dataset(uri).to_table(), where_id(table, lambda i: i % 4 != 0), "cleaned")


@check("schema evolution")
def schema_evolution(tmp: Path) -> None:
    uri = str(tmp / "evolved")
    table = rows()
    ds = lancelet.write_dataset(table, uri)
    ds.add_columns({"double": "small * 2"})
    ds.drop_columns(["blob"])
    ds.alter_columns({"path": "word", "name": "label"})
    got = lancelet.dataset(uri).to_table(columns=["id", "double", "label"])
    assert got["double"].to_pylist() == [2 * v for v in table["small"].to_pylist()]
    assert got["label"].to_pylist() == table["word"].to_pylist()


@check("optional parts are refused by name")
def optional_parts(tmp: Path) -> None:
    if importlib.util.find_spec("obstore") is None:
        try:
            lancelet.dataset("s3://bucket/table")
        except lancelet.errors.LanceletError as exc:
            assert "lancelet[cloud]" in str(exc), exc
        else:
            raise AssertionError("an s3:// dataset opened without obstore")
    if importlib.util.find_spec("pyspark") is None:
        try:
            importlib.import_module("lancelet.spark")
        except ImportError as exc:
            assert "lancelet[spark]" in str(exc), exc
        else:
            raise AssertionError("lancelet.spark imported without pyspark")


@check("compiled kernels run (numba is a plain dependency)")
def _kernels(tmp: Path) -> None:
    from lancelet.file.codecs import jit

    assert importlib.util.find_spec("numba") is not None, "numba is not installed"
    assert jit.enabled(), "the compiled kernels are off"
    # Long strings go through FSST, whose parse and expansion are kernels.
    texts = [f"row {i} " + "lorem ipsum dolor sit amet " * (i % 7) for i in range(5000)]
    lancelet.write_dataset(pa.table({"t": texts}), tmp / "k.lance")
    assert lancelet.dataset(tmp / "k.lance").to_table()["t"].to_pylist() == texts


@check("the lancelet command is installed and reads a dataset")
def command(tmp: Path) -> None:
    import json
    import subprocess

    lancelet.write_dataset(pa.table({"id": list(range(7))}), tmp / "c.lance")
    # The console script lies next to the interpreter of the environment it came with.
    script = Path(sys.executable).parent / "lancelet"
    done = subprocess.run(
        [str(script), "info", str(tmp / "c.lance"), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["rows"] == 7, info
    report = subprocess.run(
        [str(script), "report", str(tmp / "c.lance"), "-o", str(tmp / "r.html")],
        capture_output=True,
        text=True,
        check=False,
    )
    # plotly is the report extra: without it, a one-line refusal naming the extra.
    if importlib.util.find_spec("plotly") is None:
        assert report.returncode == 1 and "lancelet[report]" in report.stderr, report.stderr


def main() -> int:
    where = Path(lancelet.__file__).resolve()
    print(f"lancelet from {where}")
    extras = [m for m in ("obstore", "pyspark", "lance") if importlib.util.find_spec(m)]
    print(f"optional packages present: {extras or 'none'}")
    failed = 0
    for name, fn in CHECKS:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                fn(Path(tmp))
            except Exception as exc:
                failed += 1
                print(f"FAIL {name}: {type(exc).__name__}: {exc}")
            else:
                print(f"ok   {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
