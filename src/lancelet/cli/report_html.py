"""The page of ``lancelet report``: the gathered facts (:mod:`.report_data`) as one
self-contained HTML file of plotly charts, readable offline.

plotly is the ``report`` extra, so it is imported only when a page is drawn.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import click

from lancelet.cli.report_data import (
    DELETED_SHARE_THRESHOLD,
    ReportFacts,
    operation_counts,
)

# The id of the page's embedded JSON copy of the facts (for scripts and tests).
DATA_ELEMENT_ID = "lancelet-report-data"

_LIVE, _DELETED, _BYTES = "#4c78a8", "#e45756", "#72b7b2"
_INDEXED, _UNINDEXED = "#54a24b", "#f58518"


def plotly_modules() -> tuple[Any, Any]:
    """``plotly.graph_objects`` and ``plotly.subplots``, or a refusal naming the
    extra to install."""
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError as error:
        raise click.ClickException(
            "lancelet report needs plotly: pip install 'lancelet[report]'"
        ) from error
    return go, make_subplots


@dataclass(frozen=True)
class Chart:
    """One chart of the page: its element id, heading, a sentence on how to read
    it, and its figure."""

    id: str
    title: str
    caption: str
    figure: Any


def charts(facts: ReportFacts) -> list[Chart]:
    """The page's charts, in order; index coverage only when there are indices."""
    go, make_subplots = plotly_modules()
    drawn = [
        _fragment_sizes(facts, go, make_subplots),
        _deleted_rows(facts, go),
        _timeline(facts, go, make_subplots),
    ]
    if facts.indices:
        drawn.append(_index_coverage(facts, go, make_subplots))
    return drawn


def _fragment_ids(facts: ReportFacts) -> list[str]:
    # As categories: ids have gaps after compactions and deletions.
    return [str(f.id) for f in facts.fragments]


def _fragment_sizes(facts: ReportFacts, go: Any, make_subplots: Callable[..., Any]) -> Chart:
    figure = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        subplot_titles=("Live rows", "Bytes of data files"),
        vertical_spacing=0.12,
    )
    ids = _fragment_ids(facts)
    figure.add_trace(
        go.Bar(x=ids, y=[f.live_rows for f in facts.fragments], name="rows", marker_color=_LIVE),
        row=1,
        col=1,
    )
    figure.add_trace(
        go.Bar(x=ids, y=[f.bytes for f in facts.fragments], name="bytes", marker_color=_BYTES),
        row=2,
        col=1,
    )
    figure.update_xaxes(type="category", title_text="fragment id", row=2, col=1)
    figure.update_xaxes(type="category", row=1, col=1)
    _style(figure, height=560)
    caption = (
        f"Many bars far below the target of {facts.target_rows:,} rows per fragment "
        "mean many small files: compaction merges them."
    )
    return Chart("fragment-sizes", "Fragment sizes", caption, figure)


def _deleted_rows(facts: ReportFacts, go: Any) -> Chart:
    heavy = [f.deleted_share > DELETED_SHARE_THRESHOLD for f in facts.fragments]
    figure = go.Figure(
        go.Bar(
            x=_fragment_ids(facts),
            y=[f.deleted_rows for f in facts.fragments],
            name="deleted rows",
            marker_color=[_DELETED if h else _LIVE for h in heavy],
            customdata=[[round(100 * f.deleted_share, 1)] for f in facts.fragments],
            hovertemplate="fragment %{x}: %{y} deleted rows (%{customdata[0]}%)<extra></extra>",
        )
    )
    figure.update_xaxes(type="category", title_text="fragment id")
    figure.update_yaxes(title_text="deleted rows")
    _style(figure, height=380)
    caption = (
        f"Red: more than {DELETED_SHARE_THRESHOLD:.0%} of the fragment's rows deleted; "
        "compaction rewrites such fragments without them."
    )
    return Chart("deleted-rows", "Deleted rows per fragment", caption, figure)


def _timeline(facts: ReportFacts, go: Any, make_subplots: Callable[..., Any]) -> Chart:
    figure = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        subplot_titles=("Versions by operation", "Fragments"),
        vertical_spacing=0.12,
    )
    for kind in sorted(operation_counts(facts)):
        chosen = [v for v in facts.versions if (v.operation or "unknown") == kind]
        figure.add_trace(
            go.Scatter(
                x=[v.timestamp for v in chosen],
                y=[v.version for v in chosen],
                mode="markers",
                name=kind,
                marker={"size": 9},
                hovertemplate="version %{y}<br>%{x}<extra>" + html.escape(kind) + "</extra>",
            ),
            row=1,
            col=1,
        )
    figure.add_trace(
        go.Scatter(
            x=[v.timestamp for v in facts.versions],
            y=[v.fragments for v in facts.versions],
            mode="lines+markers",
            name="fragments",
            line={"shape": "hv", "color": _LIVE},
        ),
        row=2,
        col=1,
    )
    figure.update_yaxes(title_text="version", row=1, col=1)
    figure.update_yaxes(title_text="fragments", row=2, col=1)
    _style(figure, height=560)
    caption = (
        "Each version on disk, coloured by the operation that made it; a growing count "
        "of fragments after many small appends is the sign to compact."
    )
    return Chart("version-timeline", "Version timeline", caption, figure)


def _index_coverage(facts: ReportFacts, go: Any, make_subplots: Callable[..., Any]) -> Chart:
    figure = make_subplots(rows=1, cols=2, subplot_titles=("Rows", "Fragments"))
    names = [i.name for i in facts.indices]
    bars = (
        ("indexed", _INDEXED, [i.indexed_rows for i in facts.indices], 1),
        ("not indexed", _UNINDEXED, [i.unindexed_rows for i in facts.indices], 1),
        ("indexed", _INDEXED, [i.indexed_fragments for i in facts.indices], 2),
        ("not indexed", _UNINDEXED, [i.unindexed_fragments for i in facts.indices], 2),
    )
    for label, colour, values, col in bars:
        figure.add_trace(
            go.Bar(
                y=names,
                x=values,
                orientation="h",
                name=label,
                marker_color=colour,
                legendgroup=label,
                showlegend=col == 1,
            ),
            row=1,
            col=col,
        )
    figure.update_layout(barmode="stack")
    _style(figure, height=max(260, 120 + 50 * len(names)))
    caption = "Orange: rows and fragments an index does not cover; optimize_indices adds them."
    return Chart("index-coverage", "Index coverage", caption, figure)


def _style(figure: Any, height: int) -> None:
    figure.update_layout(
        template="plotly_white",
        height=height,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        legend={"orientation": "h", "y": -0.15},
    )


def render(facts: ReportFacts) -> str:
    """The whole page: summary, charts (plotly's script inlined once, with the first
    chart) and the facts as embedded JSON."""
    drawn = charts(facts)
    sections = [_chart_section(chart, include_script=n == 0) for n, chart in enumerate(drawn)]
    if not facts.indices:
        sections.append("<section><h2>Index coverage</h2><p>No indices.</p></section>")
    title = f"lancelet report: {facts.uri}"
    return _PAGE.format(
        title=html.escape(title),
        heading=html.escape(title),
        subtitle=html.escape(_subtitle(facts)),
        summary=_summary(facts),
        charts="\n".join(sections),
        data_id=DATA_ELEMENT_ID,
        data=_embedded_json(facts.as_json()),
    )


def _subtitle(facts: ReportFacts) -> str:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    latest = "" if facts.version == facts.latest_version else f" (latest: {facts.latest_version})"
    return f"Version {facts.version}{latest}, made {now}"


def _chart_section(chart: Chart, include_script: bool) -> str:
    body = chart.figure.to_html(
        full_html=False,
        include_plotlyjs=include_script,
        div_id=chart.id,
        config={"displaylogo": False, "responsive": True},
    )
    return (
        f'<section class="chart"><h2>{html.escape(chart.title)}</h2>'
        f"<p>{html.escape(chart.caption)}</p>{body}</section>"
    )


def _summary(facts: ReportFacts) -> str:
    known = [f.bytes for f in facts.fragments if f.bytes is not None]
    total_bytes = f"{sum(known):,}" if len(known) == len(facts.fragments) else "unknown"
    counts = operation_counts(facts)
    figures = [
        ("Rows", f"{facts.rows:,}"),
        ("Fragments", f"{len(facts.fragments):,}"),
        ("Deleted rows", f"{sum(f.deleted_rows for f in facts.fragments):,}"),
        ("Bytes of data files", total_bytes),
        ("Versions on disk", f"{len(facts.versions):,}"),
        ("Operations", ", ".join(f"{k}: {n}" for k, n in sorted(counts.items())) or "none"),
        ("Indices", ", ".join(i.name for i in facts.indices) or "none"),
    ]
    if facts.transactions_skipped:
        figures.append(("Versions not read", f"{facts.transactions_skipped:,} (the oldest)"))
    rows = "".join(
        f'<tr><th>{html.escape(k)}</th><td data-key="{html.escape(k)}">{html.escape(v)}</td></tr>'
        for k, v in figures
    )
    advice = "".join(f"<li>{html.escape(line)}</li>" for line in facts.advice)
    return f'<ul class="advice">{advice}</ul><table class="facts">{rows}</table>'


def _embedded_json(value: Any) -> str:
    # "</" would end the script element early.
    return json.dumps(value, default=str).replace("</", "<\\/")


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem;
       padding: 0 1rem; color: #222; }}
h1 {{ font-size: 1.5rem; word-break: break-all; }}
.subtitle {{ color: #666; }}
.advice li {{ margin: 0.3rem 0; }}
table.facts {{ border-collapse: collapse; margin-top: 1rem; }}
table.facts th {{ text-align: left; padding: 0.2rem 1.5rem 0.2rem 0; font-weight: 600; }}
section.chart {{ margin-top: 2.5rem; }}
</style>
</head>
<body>
<h1>{heading}</h1>
<p class="subtitle">{subtitle}</p>
<section id="summary">
<h2>Summary</h2>
{summary}
</section>
{charts}
<script type="application/json" id="{data_id}">{data}</script>
</body>
</html>
"""
