"""Run pylance's own Python tests, from a fetched ``lancedb/lance`` snapshot, against
pylance or against lancelet standing in for it (``import lance`` gives lancelet), and
compare which tests pass.  The upstream tests are exported to a temporary directory
for each run and never copied into this repository.

    python scripts/pylance_suite.py run --lib lance --tag ref test_scalar_index.py
    python scripts/pylance_suite.py run --lib lancelet --tag ours test_scalar_index.py -k fts
    python scripts/pylance_suite.py compare ref ours

Results go to ``--out`` (default ``/tmp/pylance-suite``) as JUnit XML per tag.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

SNAPSHOT = Path("/work/.mirror/lancedb+lance/repo")
TESTS = "python/python/tests"

# Loaded into pytest with -p: every ``lance`` / ``lance.x`` import resolves to the
# matching lancelet module.
SHIM = """
import importlib, importlib.abc, importlib.util, sys, types

import lancelet


class _Lance(types.ModuleType):
    # lancelet under the name lance; a submodule import (lance.dataset) must not
    # replace the function of the same name (lance.dataset()), as it does not in pylance.
    def __getattr__(self, name):
        return getattr(lancelet, name)

    def __setattr__(self, name, value):
        current = getattr(lancelet, name, None)
        kept = (types.ModuleType, type(None))
        if isinstance(value, types.ModuleType) and not isinstance(current, kept):
            return
        super().__setattr__(name, value)


class _LanceletAsLance(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.startswith("lance."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("lancelet" + spec.name[len("lance"):])

    def exec_module(self, module):
        pass


shim = _Lance("lance")
shim.__path__ = []
sys.modules["lance"] = shim
sys.meta_path.insert(0, _LanceletAsLance())
"""


def export_tests(snapshot: Path, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(snapshot), "archive", "HEAD", TESTS], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / TESTS


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tests = export_tests(Path(args.snapshot), Path(tmp))
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        command += ["--junitxml", str(out / f"{args.tag}.xml"), "-o", "junit_family=xunit1"]
        if args.lib == "lancelet":
            (Path(tmp) / "lancelet_as_lance.py").write_text(SHIM)
            command += ["-p", "lancelet_as_lance"]
        if args.k:
            command += ["-k", args.k]
        command += [str(tests / name) for name in args.files]
        env_path = f"{tmp}:{Path(__file__).resolve().parents[1] / 'src'}"
        result = subprocess.run(command, cwd=tmp, env={**_env(), "PYTHONPATH": env_path})
        return result.returncode


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def outcomes(path: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        found[name] = next((k for k in ("failure", "error", "skipped") if k in kinds), "passed")
    return found


def compare(args: argparse.Namespace) -> int:
    out = Path(args.out)
    reference, ours = outcomes(out / f"{args.reference}.xml"), outcomes(out / f"{args.ours}.xml")
    passing = {name for name, outcome in reference.items() if outcome == "passed"}
    also = {name for name in passing if ours.get(name) == "passed"}
    for name in sorted(passing - also):
        print(f"{ours.get(name, 'missing'):8} {name}")
    share = len(also) / len(passing) if passing else 1.0
    print(f"{len(also)} of {len(passing)} tests pylance passes pass on lancelet ({share:.1%})")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="/tmp/pylance-suite")
    commands = parser.add_subparsers(dest="command", required=True)
    runner = commands.add_parser("run")
    runner.add_argument("--lib", choices=["lance", "lancelet"], required=True)
    runner.add_argument("--tag", required=True)
    runner.add_argument("--snapshot", default=str(SNAPSHOT))
    runner.add_argument("-k", default=None)
    runner.add_argument("files", nargs="+")
    comparer = commands.add_parser("compare")
    comparer.add_argument("reference")
    comparer.add_argument("ours")
    args = parser.parse_args()
    return run(args) if args.command == "run" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
