"""Names pylance's native module ``lance.lance`` gives: ``manifest_needs_migration`` and
``Compaction`` (plans, tasks and results as pylance shows them)."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import lance
import lance.lance
import pyarrow as pa

import lancelet as ll
import lancelet.lance


def test_new_dataset_needs_no_migration(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(pa.table({"x": [1, 2, 3]}), uri)
    ll.dataset(uri).delete("x = 2")
    assert not lancelet.lance.manifest_needs_migration(ll.dataset(uri))
    assert not lance.lance.manifest_needs_migration(lance.dataset(uri))


def test_compaction_plan_and_result_as_pylance(tmp_path: Path) -> None:
    shapes = []
    for lib, native in ((ll, lancelet.lance), (lance, lance.lance)):
        uri = str(tmp_path / lib.__name__)
        ds = lib.write_dataset(pa.table({"a": range(800)}), uri, max_rows_per_file=200)
        plan = native.Compaction.plan(ds, options={"target_rows_per_fragment": 400})
        task = plan.tasks[0]
        result = pickle.loads(pickle.dumps(task.execute(ds)))
        assert isinstance(task.fragments, list) and isinstance(result.new_fragments, list)
        assert task.fragments == [f.metadata for f in ds.get_fragments()[:2]]
        pattern = r"RewriteResult\(read_version=1, new_fragments=\[.+\], old_fragments=\[.+\]\)"
        assert re.match(pattern, repr(result))
        metrics = native.Compaction.commit(ds, [result])
        shapes.append((repr(plan), metrics.fragments_removed, metrics.fragments_added))
    assert shapes[0] == shapes[1]
