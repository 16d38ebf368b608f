"""``lancelet report``: the page's numbers against pylance's API and the files on
disk, its advice, and the page rendered in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import lance
import lance.debug
import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

import lancelet
from lancelet.cli import report_data
from lancelet.cli.main import cli
from lancelet.cli.report_data import (
    MANY_VERSIONS,
    FragmentFacts,
    ReportFacts,
    VersionFacts,
    advice,
)
from lancelet.cli.report_html import DATA_ELEMENT_ID

CHART_IDS = ["fragment-sizes", "deleted-rows", "version-timeline", "index-coverage"]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _build(writer: ModuleType, uri: Path) -> None:
    """Four fragments, an index over them, a fifth fragment it does not cover, and
    deletions in two fragments (20% of each)."""
    table = pa.table({"id": np.arange(1000), "s": [f"row {i}" for i in range(1000)]})
    writer.write_dataset(table, uri, max_rows_per_file=300)
    writer.dataset(uri).create_scalar_index("id", "BTREE")
    writer.write_dataset(table.slice(0, 50), uri, mode="append")
    writer.dataset(uri).delete("id >= 40 AND id < 100")


@pytest.fixture(params=["lancelet", "pylance"])
def dataset_uri(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    uri = tmp_path / "ds"
    _build(lancelet if request.param == "lancelet" else lance, uri)
    return uri


@pytest.fixture
def pages() -> Iterator[Path]:
    """Where the reports go: outside tmp_path, which the memory-backend run keeps
    free of local files (a report is a local file whatever the dataset's store)."""
    with tempfile.TemporaryDirectory(prefix="lancelet-report-") as directory:
        yield Path(directory)


def _report(uri: Path, out: Path, *extra: str) -> str:
    result = CliRunner().invoke(cli, ["report", str(uri), "-o", str(out), *extra])
    assert result.exit_code == 0, result.output
    assert f"Wrote {out}" in result.output
    return out.read_text(encoding="utf-8")


def _embedded(page: str) -> dict[str, Any]:
    found = re.search(
        rf'<script type="application/json" id="{DATA_ELEMENT_ID}">(.*?)</script>', page, re.S
    )
    assert found is not None
    loaded: dict[str, Any] = json.loads(found.group(1))
    return loaded


def _summary_value(page: str, key: str) -> str:
    found = re.search(rf'<td data-key="{re.escape(key)}">([^<]*)</td>', page)
    assert found is not None, key
    return found.group(1)


def test_fragment_figures_match_pylance(dataset_uri: Path, pages: Path) -> None:
    page = _report(dataset_uri, pages / "report.html")
    facts = _embedded(page)
    reference = lance.dataset(dataset_uri)
    expected = [
        {
            "id": f.fragment_id,
            "physical_rows": f.physical_rows,
            "live_rows": f.count_rows(),
            "deleted_rows": f.physical_rows - f.count_rows(),
        }
        for f in reference.get_fragments()
    ]
    got = [{k: f[k] for k in expected[0]} for f in facts["fragments"]]
    assert got == expected
    assert [f["deleted_rows"] for f in got] == [60, 0, 0, 0, 10]
    assert facts["rows"] == reference.count_rows() == 980
    assert _summary_value(page, "Rows") == "980"
    assert _summary_value(page, "Fragments") == "5"
    assert _summary_value(page, "Deleted rows") == "70"


@pytest.mark.local_files("sizes the data files on disk")
def test_bytes_per_fragment_are_the_data_files_sizes(dataset_uri: Path, pages: Path) -> None:
    facts = _embedded(_report(dataset_uri, pages / "report.html"))
    on_disk = {
        f.fragment_id: sum(os.path.getsize(dataset_uri / "data" / d.path) for d in f.data_files())
        for f in lance.dataset(dataset_uri).get_fragments()
    }
    assert {f["id"]: f["bytes"] for f in facts["fragments"]} == on_disk


def _pylance_operation(uri: Path, version: int) -> str:
    """The operation kind pylance's debug text names for ``version``."""
    (text,) = lance.debug.list_transactions(lance.dataset(uri, version=version), 1)
    found = re.search(r"operation: (\w+)", text)
    assert found is not None
    return found.group(1)


def test_version_timeline_matches_pylance(dataset_uri: Path, pages: Path) -> None:
    facts = _embedded(_report(dataset_uri, pages / "report.html"))
    reference = lance.dataset(dataset_uri)
    versions = [v["version"] for v in reference.versions()]
    operations = [_pylance_operation(dataset_uri, v) for v in versions]
    assert [v["version"] for v in facts["versions"]] == versions
    assert [v["operation"] for v in facts["versions"]] == operations
    assert operations == ["Overwrite", "CreateIndex", "Append", "Delete"]
    fragments_then = [len(lance.dataset(dataset_uri, version=v).get_fragments()) for v in versions]
    assert [v["fragments"] for v in facts["versions"]] == fragments_then


def test_index_coverage_and_advice_match_pylance(dataset_uri: Path, pages: Path) -> None:
    page = _report(dataset_uri, pages / "report.html")
    facts = _embedded(page)
    stats = lance.dataset(dataset_uri).stats.index_stats("id_idx")
    (index,) = facts["indices"]
    assert index["name"] == "id_idx"
    assert index["columns"] == ["id"]
    assert index["indexed_rows"] == stats["num_indexed_rows"] == 940
    assert index["unindexed_rows"] == stats["num_unindexed_rows"] == 40
    assert index["indexed_fragments"] == stats["num_indexed_fragments"] == 4
    assert index["unindexed_fragments"] == stats["num_unindexed_fragments"] == 1
    assert "40 rows in 1 fragment not covered by index id_idx: optimize_indices." in page
    assert "5 fragments under 1,048,576 rows: compaction would help" in page
    assert "2 fragments with over 10% of rows deleted (70 rows in all)" in page


def test_the_page_works_offline_with_plotly_inlined_once(dataset_uri: Path, pages: Path) -> None:
    page = _report(dataset_uri, pages / "report.html")
    assert len(re.findall(r"plotly\.js v\d", page)) == 1
    assert "<script src=" not in page
    assert re.search(r"<(script|link|img)[^>]+(src|href)=", page) is None
    for chart in CHART_IDS:
        assert f'id="{chart}"' in page


def test_an_old_version_and_a_compacted_dataset(tmp_path: Path, pages: Path) -> None:
    uri = tmp_path / "ds"
    _build(lancelet, uri)
    old = _embedded(_report(uri, pages / "v1.html", "--version", "1"))
    assert old["version"] == 1
    assert [f["live_rows"] for f in old["fragments"]] == [300, 300, 300, 100]

    lancelet.dataset(uri).optimize.compact_files()
    lancelet.dataset(uri).optimize.optimize_indices()
    page = _report(uri, pages / "after.html", "--target-rows", "500")
    facts = _embedded(page)
    reference = lance.dataset(uri)
    assert [f["live_rows"] for f in facts["fragments"]] == [
        f.count_rows() for f in reference.get_fragments()
    ]
    operations = [v["operation"] for v in facts["versions"]]
    assert operations[4:] == ["ReserveFragments", "Rewrite", "CreateIndex"]
    assert operations == [_pylance_operation(uri, v["version"]) for v in facts["versions"]]
    assert facts["indices"][0]["unindexed_rows"] == 0
    assert facts["advice"] == ["Nothing to do: no compaction, reindexing or cleanup needed."]


def test_only_the_newest_transactions_are_read(
    tmp_path: Path, pages: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = tmp_path / "ds"
    _build(lancelet, uri)
    monkeypatch.setattr(report_data, "MAX_TRANSACTIONS", 3)
    page = _report(uri, pages / "report.html")
    facts = _embedded(page)
    assert [v["operation"] for v in facts["versions"]] == [None, "CreateIndex", "Append", "Delete"]
    assert facts["transactions_skipped"] == 1
    assert _summary_value(page, "Versions not read") == "1 (the oldest)"


def test_without_indices_there_is_no_coverage_chart(tmp_path: Path, pages: Path) -> None:
    uri = tmp_path / "ds"
    lance.write_dataset(pa.table({"x": [1, 2, 3]}), uri)
    page = _report(uri, pages / "report.html")
    assert 'id="index-coverage"' not in page
    assert "No indices." in page
    assert _embedded(page)["indices"] == []


def test_refuses_without_plotly(
    pages: Path, monkeypatch: pytest.MonkeyPatch, dataset_uri: Path
) -> None:
    # A None entry makes the import fail, as if plotly were not installed.
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    out = pages / "report.html"
    result = CliRunner().invoke(cli, ["report", str(dataset_uri), "-o", str(out)])
    assert result.exit_code == 1
    assert "pip install 'lancelet[report]'" in result.output
    assert not out.exists()


def test_a_missing_dataset_is_one_line_of_error(tmp_path: Path, pages: Path) -> None:
    result = CliRunner().invoke(
        cli, ["report", str(tmp_path / "nothing"), "-o", str(pages / "x.html")]
    )
    assert result.exit_code == 1
    assert "Error:" in result.output


# -- the page in a browser ---------------------------------------------------------------


def _playwright_or_skip() -> Any:
    """playwright's sync API, with Chromium there to drive; without either the test
    is skipped, or fails when ``LANCELET_REQUIRE_BROWSER=1`` (CI) says it must run."""
    missing = None if os.path.exists(CHROMIUM) else f"no {CHROMIUM}"
    try:
        import playwright.sync_api as sync_api
    except ImportError:
        missing = missing or "the playwright package is not installed"
    if missing is None:
        return sync_api
    if os.environ.get("LANCELET_REQUIRE_BROWSER") == "1":
        pytest.fail(f"LANCELET_REQUIRE_BROWSER=1 but {missing}")
    pytest.skip(missing)


def test_the_report_renders_in_chromium(tmp_path: Path, pages: Path) -> None:
    sync_api = _playwright_or_skip()
    uri = tmp_path / "ds"
    _build(lance, uri)
    out = pages / "report.html"
    _report(uri, out)
    problems: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on(
                "console",
                lambda m: problems.append(m.text) if m.type == "error" else None,
            )
            page.on("pageerror", lambda error: problems.append(str(error)))
            page.goto(out.as_uri())
            for chart in CHART_IDS:
                page.wait_for_selector(f"#{chart} .main-svg", timeout=30_000)
                assert page.locator(f"#{chart} .main-svg").count() >= 1
            # The bars drawn are the rows pylance counts per fragment.
            plotted = page.evaluate("document.getElementById('fragment-sizes').data[0].y")
            assert plotted == [f.count_rows() for f in lance.dataset(uri).get_fragments()]
            shot = page.screenshot(full_page=True)
        finally:
            browser.close()
    assert len(shot) > 10_000
    assert shot.startswith(b"\x89PNG")
    assert problems == []


def test_reading_the_versions_shows_a_bar_when_forced(
    tmp_path: Path, pages: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = tmp_path / "ds"
    _build(lancelet, uri)
    monkeypatch.setenv("LANCELET_PROGRESS", "1")
    out = pages / "report.html"
    result = CliRunner().invoke(cli, ["report", str(uri), "-o", str(out)])
    assert result.exit_code == 0, result.output
    versions = len(lance.dataset(uri).versions())
    assert re.search(rf"Reading versions .* {versions}/{versions} versions", result.stderr)


def test_advice_on_many_versions_and_nothing_to_do() -> None:
    fragment = FragmentFacts(0, 100, 0, 100, 1, 1000)
    versions = [VersionFacts(n, "", "Append", 100, 1) for n in range(1, MANY_VERSIONS + 2)]
    facts = ReportFacts("uri", 1, 1, 100, 100, [fragment], versions, [])
    assert advice(facts) == [
        f"{MANY_VERSIONS + 1} versions kept: cleanup_old_versions would remove the files "
        "only old versions need."
    ]
    assert advice(replace(facts, versions=versions[:1])) == [
        "Nothing to do: no compaction, reindexing or cleanup needed."
    ]
