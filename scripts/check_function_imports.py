"""Report every import placed inside a function, except of an optional dependency.

An import inside a function hides a dependency: it is how a cycle between modules
is usually dodged, and it moves an import error from load time to some later call.
The only imports that belong inside a function are those of optional or heavy
third-party packages (an extra of pyproject.toml, or a package only a few code paths
need), so that ``import lancelet`` works, and stays quick, without them.

Usage: ``python scripts/check_function_imports.py [path ...]`` (default: the packages
under src/). Prints ``path:line: import of X inside function f`` per violation and
exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PACKAGES = ("src/lancelet", "src/pyspark_lancelet")

# Top-level packages that may be imported inside a function: the optional extras of
# pyproject.toml (cloud, spark, jieba, namespace), numba, the compression codecs, and the
# third-party packages only some calls need (data frames, images, ML frameworks,
# object-store clients).  The standard library and lancelet itself are never on this
# list: their imports go at the top of the module (a cycle is fixed, not hidden).
OPTIONAL_PACKAGES = frozenset(
    {
        # [cloud]: object stores.
        "obstore",
        # Compiled kernels: imported by lancelet.file.codecs.jit only, at a kernel's
        # first call, so that LANCELET_JIT=0 never loads numba.
        "numba",
        # numba's LLVM binding (the HNSW kernels' vector intrinsic), installed with it.
        "llvmlite",
        # [spark]: the PySpark data source and its JVM bridge.
        "pyspark",
        "py4j",
        # [report]: the charts of `lancelet report`.
        "plotly",
        # [jieba]: pylance's jieba full-text tokenizer.
        "rjieba",
        # [namespace]: pylance's lance.namespace models and clients.
        "lance_namespace",
        "lance_namespace_urllib3_client",
        # Compression codecs, loaded on a file's first compressed buffer.
        "zstandard",
        "lz4",
        # Producers and consumers of data that only some calls need.
        "pandas",
        "polars",
        "PIL",
        "ml_dtypes",
        "torch",
        "tensorflow",
        "fsspec",
        # Progress bars, drawn only on a terminal (or when asked): most processes
        # never draw one.
        "rich",
        # Object-store clients and test servers.
        "boto3",
        "moto",
    }
)


ImportNode = ast.Import | ast.ImportFrom


def imported_packages(node: ImportNode) -> list[str]:
    """The names an import statement brings in, as written (relative ones with dots)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    dots = "." * node.level
    return [f"{dots}{node.module or ''}"]


def is_optional(name: str) -> bool:
    """Whether ``name`` (a dotted module name) belongs to an optional package."""
    if name.startswith("."):
        return False  # relative imports are internal
    return name.split(".", 1)[0] in OPTIONAL_PACKAGES


def function_imports(
    tree: ast.AST, function: str | None = None
) -> Iterator[tuple[ImportNode, str]]:
    """Each import inside a function (methods and nested functions included), with the
    innermost enclosing function's name.  Module level (``if TYPE_CHECKING:`` blocks,
    ``try:`` blocks, class bodies) is not inside a function."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            if function is not None:
                yield child, function
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from function_imports(child, child.name)
        else:
            yield from function_imports(child, function)


def violations(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    for node, function in function_imports(tree):
        for name in imported_packages(node):
            if not is_optional(name):
                yield f"{shown}:{node.lineno}: import of {name} inside function {function}"


def python_files(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.py") if "_proto" not in p.parts)
        elif path.suffix == ".py":
            yield path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.paths or [ROOT / p for p in DEFAULT_PACKAGES if (ROOT / p).exists()]
    found = [line for path in python_files(paths) for line in violations(path)]
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
