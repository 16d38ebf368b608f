"""Multi-base datasets: data files under registered base paths besides the dataset
root.  lancelet writes them as pylance does (checked by writing the same calls with
both and by pylance reading lancelet's datasets) and reads pylance's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import ArgumentError

pytestmark = pytest.mark.local_files("base paths are local directories named in the manifest")

TABLE = pa.table({"id": range(20), "s": [f"v{i}" for i in range(20)]})


def _bases(module: Any, tmp: Path) -> list[Any]:
    return [
        module.DatasetBasePath(str(tmp / "b1"), name="b1"),
        module.DatasetBasePath(str(tmp / "b2"), name="b2", is_dataset_root=True, id=7),
    ]


def _write(module: Any, tmp: Path) -> Any:
    uri = tmp / "primary"
    ds = module.write_dataset(TABLE, uri, initial_bases=_bases(module, tmp),
                              target_bases=["b1", "b2"], max_rows_per_file=6)  # fmt: skip
    ds = module.write_dataset(TABLE, ds, mode="append", target_bases=[str(tmp / "b2")])
    return module.write_dataset(TABLE.slice(0, 5), ds, mode="append")


def _layout(ds: Any) -> tuple[Any, ...]:
    bases = sorted((b.id, b.name, b.path, b.is_dataset_root) for b in ds.base_paths().values())
    files = [d.base_id for f in ds.get_fragments() for d in f.data_files()]
    return bases, files


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([("id", "ascending"), ("s", "ascending")])


def _paths(tmp: Path, ours: bool) -> tuple[Path, Path]:
    where = tmp / ("ours" if ours else "theirs")
    where.mkdir()
    return where, where / "primary"


def test_lancelet_writes_bases_as_pylance_does(tmp_path: Path) -> None:
    mine, mine_uri = _paths(tmp_path, True)
    theirs, theirs_uri = _paths(tmp_path, False)
    _write(ll, mine)
    _write(lance, theirs)
    got, want = lance.dataset(mine_uri), lance.dataset(theirs_uri)
    mine_bases, mine_files = _layout(got)
    their_bases, their_files = _layout(want)
    assert mine_files == their_files == [1, 7, 1, 7, 7, None]
    assert [b[0:2] + b[3:] for b in mine_bases] == [b[0:2] + b[3:] for b in their_bases]
    assert _sorted(got.to_table()).equals(_sorted(want.to_table()))
    # A dataset-root base keeps its files under data/, another one directly.
    assert len(list((mine / "b1").glob("*.lance"))) == 2
    assert len(list((mine / "b2" / "data").glob("*.lance"))) == 3


def test_lancelet_reads_pylance_bases(tmp_path: Path) -> None:
    _write(lance, tmp_path)
    theirs = lance.dataset(tmp_path / "primary")
    ours = ll.dataset(tmp_path / "primary")
    assert _layout(ours) == _layout(theirs)
    assert ours.to_table().equals(theirs.to_table())
    assert ours.to_table(filter="id < 3").num_rows == theirs.to_table(filter="id < 3").num_rows


def test_add_bases_matches_pylance(tmp_path: Path) -> None:
    layouts = []
    for module in (ll, lance):
        where = tmp_path / module.__name__
        where.mkdir()
        ds = _write(module, where)
        extra = module.DatasetBasePath(str(where / "b3"), name="b3")
        assert ds.add_bases([extra], transaction_properties={"who": "me"}) is ds
        ds = module.write_dataset(TABLE, ds, mode="append", target_bases=["b3"])
        layouts.append((_layout(module.dataset(where / "primary")), ds.version))
        # pylance reads the registration lancelet committed, with its properties.
        txn = lance.dataset(where / "primary").read_transaction(4)
        assert txn is not None and txn.transaction_properties == {"who": "me"}
    ours, theirs = layouts
    assert [b[0:2] for b in ours[0][0]] == [b[0:2] for b in theirs[0][0]]
    assert ours[0][1] == theirs[0][1] and ours[1] == theirs[1]
    assert ll.dataset(tmp_path / "lancelet" / "primary").count_rows() == 65


def test_add_bases_refuses_a_name_or_path_taken(tmp_path: Path) -> None:
    ds = _write(ll, tmp_path)
    version = ds.version
    with pytest.raises(ValueError, match="already exists"):
        ds.add_bases([ll.DatasetBasePath(str(tmp_path / "new"), name="b1")])
    with pytest.raises(ValueError, match="already exists"):
        ds.add_bases([ll.DatasetBasePath(str(tmp_path / "b1"), name="other")])
    assert ds.add_bases([]) is ds
    assert ll.dataset(tmp_path / "primary").version == version


def test_refusals_match_pylance(tmp_path: Path) -> None:
    for module in (ll, lance):
        where = tmp_path / module.__name__
        where.mkdir()
        with pytest.raises(Exception, match="not found"):
            module.write_dataset(TABLE, where / "x", initial_bases=_bases(module, where),
                                 target_bases=["b9"])  # fmt: skip
        ds = _write(module, where)
        extra = [module.DatasetBasePath(str(where / "b3"), name="b3")]
        with pytest.raises(Exception, match="Cannot register new bases in Append mode"):
            module.write_dataset(TABLE, ds, mode="append", initial_bases=extra)
    with pytest.raises(ArgumentError, match="Cannot register new bases in Overwrite mode"):
        ll.write_dataset(TABLE, tmp_path / "lancelet" / "primary", mode="overwrite",
                         initial_bases=[ll.DatasetBasePath(str(tmp_path / "b4"))])  # fmt: skip


def test_overwrite_keeps_the_bases(tmp_path: Path) -> None:
    _write(ll, tmp_path)
    ds = ll.write_dataset(TABLE, tmp_path / "primary", mode="overwrite")
    theirs = lance.dataset(tmp_path / "primary")
    assert sorted(theirs.base_paths()) == [1, 7]
    assert _layout(theirs)[1] == [None]
    ds = ll.write_dataset(TABLE, ds, mode="overwrite", target_bases=["b2"])
    assert _layout(lance.dataset(tmp_path / "primary"))[1] == [7]
    assert lance.dataset(tmp_path / "primary").to_table().equals(ds.to_table())


def test_fragment_json_carries_base_ids(tmp_path: Path) -> None:
    _write(lance, tmp_path)
    theirs = lance.dataset(tmp_path / "primary").get_fragments()
    ours = ll.dataset(tmp_path / "primary").get_fragments()
    for mine, their in zip(ours, theirs, strict=True):
        want = [f["base_id"] for f in their.metadata.to_json()["files"]]
        assert [f["base_id"] for f in mine.metadata.to_json()["files"]] == want
        again = ll.FragmentMetadata.from_json(their.metadata.to_json())
        assert [f["base_id"] for f in again.to_json()["files"]] == want
