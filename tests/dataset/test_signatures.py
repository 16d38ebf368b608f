"""Signature parity with pylance: every public function and class lancelet exports
under pylance's module and name takes pylance's positional parameters in pylance's
order, every keyword pylance takes, pylance's defaults, and has pylance's methods and
attributes (see ``tests/dataset/signature_parity.py``).

Each deliberate difference is listed below with its reason; any other difference (a
renamed or reordered parameter, a keyword or method pylance gains) fails here."""

from __future__ import annotations

import pytest

from tests.dataset.signature_parity import Difference, differences

# (where, kind, detail) -> why lancelet differs on purpose.
ALLOWED: dict[tuple[str, str, str], str] = {
    # -- constructors of objects the library hands out, never built by users --------------
    # pylance's wrap its native objects; lancelet's take its own internals.
    **{
        ("lance.dataset.LanceScanner.__init__", "keyword", name): "made by scanner()"
        for name in ("scanner", "dataset", "snapshot")
    },
    (
        "lance.dataset.LanceScanner.__init__",
        "positional",
        "['scanner', 'dataset', 'snapshot'] vs ['store', 'manifest']",
    ): "made by scanner()",
    ("lance.dataset.MergeInsertBuilder.__init__", "keyword", "dataset"): "made by merge_insert()",
    ("lance.dataset.MergeInsertBuilder.__init__", "default", "on"): "made by merge_insert()",
    (
        "lance.dataset.MergeInsertBuilder.__init__",
        "positional",
        "['dataset', 'on'] vs ['store', 'schema', 'on', 'run', 'manifest']",
    ): "made by merge_insert()",
    ("lance.dataset.DatasetDelta.__init__", "keyword", "delta"): "made by delta()",
    (
        "lance.dataset.DatasetDelta.__init__",
        "positional",
        "['delta'] vs ['snapshot', 'begin_version', 'end_version']",
    ): "made by delta()",
    ("lance.dataset.Tags.__init__", "keyword", "dataset"): "made by LanceDataset.tags",
    (
        "lance.dataset.Tags.__init__",
        "positional",
        "['dataset'] vs ['store', 'checked_out']",
    ): "made by LanceDataset.tags",
    ("lance.file.ReaderResults.__init__", "keyword", "reader"): "made by LanceFileReader reads",
    (
        "lance.file.ReaderResults.__init__",
        "positional",
        "['reader'] vs ['schema', 'batches', 'table']",
    ): "made by LanceFileReader reads",
    ("lance.fragment.FragmentSession.__init__", "keyword", "session"): "made by open_session()",
    (
        "lance.fragment.FragmentSession.__init__",
        "positional",
        "['session'] vs ['fragment', 'columns', 'with_row_address']",
    ): "made by LanceFragment.open_session()",
    # pylance's private hooks for wrapping an already open native reader or writer.
    ("lance.file.LanceFileReader.__init__", "keyword", "_inner_reader"): "pylance-private",
    ("lance.file.LanceFileWriter.__init__", "keyword", "_inner_writer"): "pylance-private",
    # pylance's full-text query objects carry a handle to their native twin; lancelet
    # runs no full-text search, so its query objects have none.
    **{
        (f"lance.query.{name}", "member", "inner"): "no native query object"
        for name in (
            "BooleanQuery",
            "BoostQuery",
            "CombinedFieldsQuery",
            "FullTextQuery",
            "MatchQuery",
            "MultiMatchQuery",
            "PhraseQuery",
        )
    },
    # -- defaults that name the library -------------------------------------------------
    **{
        (where, "default", name): "lancelet logs as itself (lancelet.log, logger 'lancelet')"
        for where in ("lance.set_logger", "lance.log.set_logger")
        for name in ("file_path", "name")
    },
    # -- equivalent forms ------------------------------------------------------------------
    ("lance.fragment.DataFile.__init__", "default", "column_indices"): (
        "pylance turns its default None into []; lancelet's default is that empty list "
        "(a tuple, as DataFile is hashable), and None is accepted too"
    ),
    ("lance.commit.CommitConflictError.__init__", "default", "retryable"): (
        "None takes the class's verdict: a CommitConflictError built directly is retryable "
        "(pylance's default True), lancelet's own subclasses say whether they are"
    ),
    (
        "lance._arrow.bf16.PandasBFloat16Type.construct_array_type",
        "binding",
        "method vs classmethod",
    ): (
        "pandas' ExtensionDtype API makes it a classmethod; it works on instances as pylance's does"
    ),
    # pylance's sample passes **kwargs on to take(), which takes no other keywords, so
    # any is a TypeError there as here.
    ("lance.dataset.LanceDataset.sample", "varargs", "VAR_KEYWORD"): "take() takes none",
    # pylance's native optimizer reads the keywords it knows and ignores the rest;
    # lancelet names the three it implements and makes any other a TypeError rather
    # than ignore it.
    ("lance.dataset.DatasetOptimizer.optimize_indices", "varargs", "VAR_KEYWORD"): (
        "lancelet names num_indices_to_merge, index_names and retrain"
    ),
}


def test_signatures_match_pylance() -> None:
    found = differences()
    unexpected = [d for d in found if (d.where, d.kind, d.detail) not in ALLOWED]
    assert not unexpected, "signatures differ from pylance's:\n" + "\n".join(
        "  ".join(d) for d in unexpected
    )


@pytest.mark.local_files("the memory run wraps LanceFileReader to reach its store")
def test_allowed_differences_still_exist() -> None:
    # An entry whose difference is gone (fixed, or pylance changed) is removed, so the
    # list stays the true set of deliberate differences.
    found = {(d.where, d.kind, d.detail) for d in differences()}
    stale = sorted(set(ALLOWED) - found)
    assert not stale, f"allowed differences that no longer occur: {stale}"


@pytest.mark.parametrize(
    ("where", "kind"),
    [("lance.dataset", "positional"), ("lance.fragment.FragmentMetadata.__init__", "keyword")],
)
def test_the_probe_sees_differences(where: str, kind: str) -> None:
    # The comparison itself can fail: a function that drops pylance's names is caught.
    import lance

    from tests.dataset.signature_parity import compare_classes, compare_signatures

    def narrow(uri: str, version: int | None = None) -> None: ...

    class Meta:
        def __init__(self, id: int, files: list[object], physical_rows: int) -> None: ...

    got: list[Difference] = (
        compare_signatures(where, lance.dataset, narrow)
        if where == "lance.dataset"
        else compare_classes(where[: -len(".__init__")], lance.fragment.FragmentMetadata, Meta)
    )
    assert any(d.kind == kind for d in got)
