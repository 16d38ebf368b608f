"""Filters of several conjuncts applied stage by stage, and column pages decoded in
pieces: the rows selected are pylance's, on tables large enough to take those paths."""

from __future__ import annotations

import datetime
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lancelet
from lancelet.dataset.read.staged_filter import stages_of
from lancelet.expr.arrow import evaluate
from lancelet.file import LanceFileReader
from tests.storage import list_names

ROWS = 30_000


def _table(rows: int) -> pa.Table:
    rng = np.random.default_rng(7)
    day0 = datetime.date(1995, 1, 1)
    words = np.array(["furious", "the quick", "slyly", "careful the", "x%y", ""])
    modes = np.array(["MAIL", "SHIP", "AIR", "RAIL"])
    nulls = rng.random(rows) < 0.05
    return pa.table(
        {
            "k": pa.array(np.arange(rows, dtype=np.int64)),
            "q": pa.array(rng.integers(0, 50, rows), mask=nulls),
            "d": pa.array(
                [day0 + datetime.timedelta(days=int(i)) for i in rng.integers(0, 900, rows)]
            ),
            "mode": pa.array(modes[rng.integers(0, 4, rows)], mask=rng.random(rows) < 0.03),
            "note": pa.array(
                words[rng.integers(0, 6, rows)].tolist(), mask=rng.random(rows) < 0.03
            ),
            "f": pa.array(rng.normal(size=rows)),
        }
    )


FILTERS = [
    "d >= date '1995-03-01' AND d < date '1996-01-01' AND mode IN ('MAIL', 'SHIP')"
    " AND note LIKE '%the%'",
    "note LIKE '%the%' AND q > 10 AND (mode = 'AIR' OR q IS NULL)",
    "q < 20 AND NOT (mode = 'RAIL') AND note <> ''",
    "(q >= 5 AND f > 0.0) AND d <= date '1995-06-30' AND note IS NOT NULL",
    "mode = 'MAIL' AND q + 1 > 30",  # arithmetic: the whole filter, not staged
    "q > 40 AND mode = 'nothing'",
]


@pytest.fixture(scope="module", params=["plain", "deletions", "index", "fragments"])
def data(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> tuple[Path, pa.Table]:
    """A dataset: as written; with rows deleted (the first stage's read drops them);
    with a scalar index on ``q`` (the index bounds the ranges read); in fragments."""
    uri = tmp_path_factory.mktemp("staged") / "ds"
    table = _table(ROWS)
    rows_per_file = 7_000 if request.param == "fragments" else ROWS
    ds = lancelet.write_dataset(table, uri, max_rows_per_file=rows_per_file)
    if request.param == "deletions":
        ds.delete("k % 7 = 3 OR k < 100")
    if request.param == "index":
        ds.create_scalar_index("q", "BTREE")
    return uri, table


@pytest.mark.parametrize("sql", FILTERS)
def test_a_staged_filter_selects_pylance_rows(data: tuple[Path, pa.Table], sql: str) -> None:
    uri, _ = data
    ours = lancelet.dataset(uri)
    theirs = lance.dataset(str(uri))
    expected = theirs.to_table(filter=sql)
    assert ours.to_table(filter=sql).equals(expected)
    assert ours.count_rows(sql) == theirs.count_rows(sql) == expected.num_rows
    # A projection that leaves out filter columns reads them late.
    assert ours.to_table(columns=["k"], filter=sql).equals(expected.select(["k"]))
    batches = list(ours.to_batches(filter=sql, batch_size=1000))
    assert pa.Table.from_batches(batches, schema=expected.schema).equals(expected)


def test_only_total_conjuncts_are_staged() -> None:
    schema = _table(4).schema
    assert stages_of(FILTERS[0], schema) is not None
    assert stages_of("mode = 'MAIL' AND q + 1 > 30", schema) is None
    assert stages_of("mode = 'MAIL' AND CAST(note AS INT) > 3", schema) is None
    assert stages_of("q > 3", schema) is None  # one conjunct
    assert stages_of("q > 3 OR mode = 'MAIL'", schema) is None
    stages = stages_of("note LIKE '%a%' AND mode = 'MAIL' AND q > 1 AND q < 9", schema)
    assert stages is not None
    # Cheapest first: the integer range (one stage), the string, then the pattern.
    assert [sorted(s.columns) for s in stages] == [["q"], ["mode"], ["note"]]


def test_a_large_page_decodes_in_pieces_as_one(tmp_path: Path) -> None:
    rows = 300_000
    table = _table(rows)
    uri = tmp_path / "big"
    lance.write_dataset(table, uri)
    ours = lancelet.dataset(uri).to_table()
    assert ours.equals(lance.dataset(str(uri)).to_table())
    # Listed through the test storage: under the memory backend the files live there.
    path = uri / "data" / next(n for n in list_names(uri / "data") if n.endswith(".lance"))
    part = LanceFileReader(str(path)).read_range(1000, rows - 2000).to_table()
    assert part.equals(table.slice(1000, rows - 2000))
    # A take of one column is cut into pieces too: in any order, repeats included.
    picked = np.random.default_rng(3).integers(0, rows, 40_000)
    for columns in (["note"], ["k"], ["note", "k"]):
        taken = LanceFileReader(str(path), columns=columns).take_rows(picked).to_table()
        assert taken.equals(table.select(columns).take(pa.array(picked)))


def test_a_selective_filter_yields_whole_batches(tmp_path: Path) -> None:
    """A filter's few rows per range read are gathered: every batch of a fragment but
    its last holds ``batch_size`` rows, as pylance's do, and the rows are pylance's."""
    table = _table(200_000)
    uri = tmp_path / "ds"
    lancelet.write_dataset(table, uri, max_rows_per_file=120_000)
    sql = "q > 45 AND note LIKE '%the%'"
    expected = lance.dataset(str(uri)).to_table(filter=sql)
    for size in (1000, 4096):
        batches = list(lancelet.dataset(uri).to_batches(filter=sql, batch_size=size))
        assert pa.Table.from_batches(batches, schema=expected.schema).equals(expected)
        sizes = [b.num_rows for b in batches]
        short = [i for i, n in enumerate(sizes) if n != size]
        assert len(short) <= 2 and short[-1] == len(sizes) - 1  # each fragment's last


def test_ranges_read_stage_by_stage_or_at_once_join(tmp_path: Path) -> None:
    """A first stage selective in the first range read and not in the next: the range
    read stage by stage and the one read at once (their columns in other orders) are
    gathered into the same batches."""
    rows = 200_000
    table = _table(rows)
    sparse = np.random.default_rng(5).random(rows) < 0.05
    q = np.where((np.arange(rows) >= 70_000) | sparse, 1, 0)
    table = table.set_column(1, "q", pa.array(q))
    uri = tmp_path / "ds"
    lancelet.write_dataset(table, uri)
    for sql in ("q = 1 AND mode LIKE '%A%' AND note <> 'x'", "q = 0 AND note LIKE '%the%'"):
        expected = lance.dataset(str(uri)).to_table(filter=sql)
        for size in (1000, 8192):
            batches = list(lancelet.dataset(uri).to_batches(filter=sql, batch_size=size))
            assert pa.Table.from_batches(batches, schema=expected.schema).equals(expected)
        assert lancelet.dataset(uri).count_rows(sql) == expected.num_rows


@pytest.mark.parametrize("sql", FILTERS[:3])
def test_a_filtered_table_of_a_large_fragment_reads_it_in_parts(tmp_path: Path, sql: str) -> None:
    """``to_table(filter)`` of a fragment over the filtered read's step (a part at a
    time, to bound the filter columns' memory) selects pylance's rows, in order, with
    rows deleted across the parts' edges."""
    table = _table(300_000)
    uri = tmp_path / "ds"
    lance.write_dataset(table, uri)
    lance.dataset(str(uri)).delete("k % 1000 < 3 OR (k > 131000 AND k < 131100)")
    expected = lance.dataset(str(uri)).to_table(filter=sql)
    ours = lancelet.dataset(uri)
    assert ours.to_table(filter=sql).equals(expected)
    assert ours.to_table(columns=["k", "f"], filter=sql).equals(expected.select(["k", "f"]))
    assert ours.count_rows(sql) == expected.num_rows


_CONJUNCTS = st.sampled_from(
    [
        "q > 10",
        "q <= 30",
        "q BETWEEN 5 AND 25",
        "q = 7",
        "q IS NULL",
        "q IN (1, 2, 3, 40)",
        "d >= date '1995-03-01'",
        "d < date '1996-01-01'",
        "mode IN ('MAIL', 'SHIP')",
        "mode = 'AIR'",
        "mode <> 'RAIL'",
        "NOT (mode = 'RAIL')",
        "mode IS NOT NULL",
        "note LIKE 'the%'",
        "note LIKE '%the%'",
        "note IS NULL",
        "(mode = 'AIR' OR q IS NULL)",
        "f > 0.0",
    ]
)


@settings(max_examples=150, deadline=None)
@given(conjuncts=st.lists(_CONJUNCTS, min_size=2, max_size=4, unique=True))
def test_a_stage_passes_the_rows_its_expression_passes(conjuncts: list[str]) -> None:
    """A stage computed by the eager evaluator keeps exactly the rows Arrow's filter of
    its expression keeps (nulls in every column; NULL conditions drop a row)."""
    table = _table(3_000)
    stages = stages_of(" AND ".join(conjuncts), table.schema)
    if stages is None:
        return
    for stage in stages:
        assert stage.keep(table).equals(table.filter(stage.expression))


def test_comparisons_and_lists_are_evaluated_eagerly() -> None:
    """The date range and the IN list of the first filter are computed without Acero;
    the LIKE with a leading wildcard is left to the expression."""
    table = _table(100)
    stages = stages_of(FILTERS[0], table.schema)
    assert stages is not None
    eager = {
        stage.columns: stage.predicate is not None and evaluate(stage.predicate, table) is not None
        for stage in stages
    }
    assert eager == {frozenset({"d"}): True, frozenset({"mode"}): True, frozenset({"note"}): False}
