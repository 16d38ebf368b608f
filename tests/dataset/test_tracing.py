"""``lancelet.tracing`` against pylance's ``lance.tracing``: the same events, with the
same fields in the same order, for the same operations; Chrome trace files; and the
``LANCE_LOG`` lines made of the same events.

Each run is a new process (a callback can be set once per process), given only the
environment the test names."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# The events pylance reports that lancelet does not: its query engine's (plan runs,
# index loads).
_NOT_REPORTED = {"lance::execution", "lance::io_events"}

_CAPTURE = """
import json, sys, time
import {lib} as lance
import pyarrow as pa
from {lib}.tracing import capture_trace_events

events = []
capture_trace_events(events.append)
uri = sys.argv[1]
steps = {steps}
failed = []
for name, code in steps:
    try:
        exec(code)
    except Exception as exc:
        failed.append(name)
time.sleep(0.5)
print(json.dumps([failed, [[e.target, e.args] for e in events]]))
"""

_STEPS = [
    ("create", "ds = lance.write_dataset(pa.table({'x': range(10)}), uri, max_rows_per_file=4)"),
    ("append", "ds = lance.write_dataset(pa.table({'x': range(3)}), uri, mode='append')"),
    ("create again", "lance.write_dataset(pa.table({'x': [1]}), uri, mode='create')"),
    ("open", "ds = lance.dataset(uri)"),
    ("open version", "ds = lance.dataset(uri, version=1)"),
    ("tag", "lance.dataset(uri).tags.create('t', 1)"),
    ("open tag", "ds = lance.dataset(uri, version='t')"),
    ("checkout", "ds = lance.dataset(uri).checkout_version(1)"),
    ("open missing", "lance.dataset(uri + '-missing')"),
    ("delete", "ds = lance.dataset(uri); ds.delete('x < 2')"),
    ("update", "ds.update({'x': 'x + 100'}, where='x > 8')"),
    ("add columns", "ds.add_columns({'y': 'x * 2'})"),
    ("drop columns", "ds.drop_columns(['y'])"),
    ("overwrite", "ds = lance.write_dataset(pa.table({'x': range(5)}), uri, mode='overwrite')"),
    ("fragment", "frag = lance.LanceFragment.create(uri, pa.table({'x': [7]}))"),
    (
        "commit",
        "lance.LanceDataset.commit(uri, lance.LanceOperation.Append([frag]), read_version=4)",
    ),
    ("restore", "lance.dataset(uri, version=1).restore()"),
    ("cleanup", "lance.dataset(uri).cleanup_old_versions()"),
]


def _capture(
    lib: str, uri: str, steps: list[tuple[str, str]] = _STEPS
) -> tuple[list[str], list[Any]]:
    """The steps that raised, and the events, of running ``steps`` in a new process."""
    script = _CAPTURE.format(lib=lib, steps=repr(steps))
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", script, uri], env=env, capture_output=True, text=True, check=True
    )
    failed, events = json.loads(done.stdout.strip().splitlines()[-1])
    return failed, events


def _comparable(events: list[Any], uri: str) -> list[Any]:
    """The events as both libraries must report them: new files' random names, and the
    order of the args (pylance's is arbitrary), left out."""
    out = []
    for target, args in events:
        if target in _NOT_REPORTED:
            continue
        args = dict(args)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", args.pop("timestamp"))
        args.pop("client_version")
        if args.get("type") in ("data", "deletion"):
            args["path"] = re.sub(r"[0-9a-f-]+\.(lance|arrow|bin)$", "<new>", args["path"])
        out.append((target, sorted(args.items())))
    return out


@pytest.mark.local_files("each process opens the dataset by its path")
def test_the_same_events_as_pylance(tmp_path: Path) -> None:
    ours_failed, ours = _capture("lancelet", str(tmp_path / "ours"))
    theirs_failed, theirs = _capture("lance", str(tmp_path / "theirs"))
    assert ours_failed == theirs_failed == ["create again", "open missing", "commit"]
    expected = json.loads(json.dumps(_comparable(theirs, str(tmp_path / "theirs"))))
    expected = [_with_uri(e, str(tmp_path / "theirs"), str(tmp_path / "ours")) for e in expected]
    got = json.loads(json.dumps(_comparable(ours, str(tmp_path / "ours"))))
    assert got == expected


def _with_uri(event: Any, theirs: str, ours: str) -> Any:
    target, args = event
    fixed = []
    for name, value in args:
        value = value.replace(theirs, ours)
        value = value.replace(theirs.lstrip("/"), ours.lstrip("/"))
        fixed.append([name, value])
    return [target, fixed]


def test_every_event_has_a_time_and_the_version(tmp_path: Path) -> None:
    steps = [("create", "lance.write_dataset(pa.table({'x': range(100)}), 'memory://test')")]
    _, events = _capture("lancelet", "unused", steps)
    assert [e[0] for e in events] == [
        "lance::dataset_events",
        "lance::dataset_events",
        "lance::file_audit",
        "lance::dataset_events",
        "lance::file_audit",
        "lance::dataset_events",
    ]
    import lancelet

    assert all(e[1]["client_version"] == lancelet.__version__ for e in events)


def _run(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-c", code], env={**base, **env}, cwd=cwd, capture_output=True, text=True
    )


_WRITE = "lance.write_dataset(pa.table({'x': range(10)}), 'memory://x')"


@pytest.mark.local_files("the trace file is written by another process")
def test_chrome_traces_are_json_arrays_of_the_events(tmp_path: Path) -> None:
    for lib in ("lance", "lancelet"):
        work = tmp_path / lib
        work.mkdir()
        code = (
            f"import {lib} as lance, pyarrow as pa\n"
            f"from {lib}.tracing import trace_to_chrome\n"
            f"trace_to_chrome()\n{_WRITE}\n"
        )
        assert _run(code, {}, work).returncode == 0
        (name,) = os.listdir(work)
        assert re.fullmatch(r"trace-\d{16}\.json", name)
        trace = json.loads((work / name).read_text())
        instants = [e for e in trace if e["ph"] == "i"]
        assert [e["cat"] for e in instants] == [
            "lance::dataset_events",
            "lance::dataset_events",
            "lance::file_audit",
            "lance::dataset_events",
            "lance::file_audit",
            "lance::dataset_events",
        ], lib
        assert instants[0]["args"] == {
            "event": '"loading"',
            "uri": '"memory://x"',
            "target_ref": "None",
            "status": '"error"',
        }, lib
        named = _run(code.replace("trace_to_chrome()", "trace_to_chrome(file='t.json')"), {}, work)
        assert named.returncode == 0 and json.loads((work / "t.json").read_text()), lib


def test_a_second_callback_is_refused() -> None:
    code = (
        "from lancelet.tracing import capture_trace_events\n"
        "capture_trace_events(print)\n"
        "try:\n    capture_trace_events(print)\n"
        "except RuntimeError as e:\n    print('refused', e)\n"
    )
    done = _run(code, {}, Path.cwd())
    assert "refused" in done.stdout and "Callback already set" in done.stdout


def test_callbacks_run_on_their_own_thread() -> None:
    code = (
        "import threading, time, lancelet as lance, pyarrow as pa\n"
        "from lancelet.tracing import capture_trace_events\n"
        "seen = []\n"
        "capture_trace_events(lambda e: seen.append(threading.current_thread()))\n"
        f"{_WRITE}\n"
        "time.sleep(0.3)\n"
        "print(len(seen), all(t is not threading.main_thread() for t in seen))\n"
    )
    assert _run(code, {}, Path.cwd()).stdout.split() == ["6", "True"]


def test_log_lines_are_pylances() -> None:
    """With LANCE_LOG, the events' lines are pylance's, but for times and file names."""
    lines = {}
    for lib in ("lance", "lancelet"):
        code = f"import {lib} as lance, pyarrow as pa\n{_WRITE}\n"
        err = _run(code, {"LANCE_LOG": "info"}, Path.cwd()).stderr.splitlines()
        events = [re.sub(r"^\[[^ ]+ ", "[", line) for line in err if "lance::events" in line]
        lines[lib] = [re.sub(r'path="[0-9a-f]+\.lance"', 'path="<new>"', e) for e in events]
    assert lines["lancelet"] == lines["lance"]
