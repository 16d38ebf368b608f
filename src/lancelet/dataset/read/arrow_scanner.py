"""Datasets, fragments and scanners as pyarrow's: the bases pylance's classes have.

pylance's ``LanceDataset``, ``LanceFragment`` and ``LanceScanner`` subclass
``pyarrow.dataset.Dataset``, ``Fragment`` and ``Scanner``, so code written for Arrow
datasets takes them: ``isinstance`` checks, duckdb's replacement scans (which call
``schema``, ``scanner(columns=..., filter=<Expression>)`` and ``to_reader()``),
polars' ``scan_pyarrow_dataset`` (``schema`` and ``to_batches(columns=..., filter=...,
batch_size=...)``).

The pyarrow bases are Cython classes whose C++ object is never set here (pylance
leaves it unset too): every base method that would reach it is overridden, by a
lancelet implementation or by a refusal, so none can crash the interpreter.  Their
Cython pickling cannot see a Python subclass's state, so these classes pickle their
``__dict__``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NoReturn, cast

import pyarrow as pa
import pyarrow.dataset as pa_ds

from lancelet.dataset.read import pandas_export
from lancelet.errors import UnsupportedFunctionError


def restore(cls: type[Any], state: dict[str, Any]) -> Any:
    """An object of ``cls`` holding ``state`` (what ``PicklesItsDict`` pickles)."""
    obj = cast(Any, cls).__new__(cls)
    obj.__dict__.update(state)
    return obj


def refuse(method: str, why: str) -> NoReturn:
    raise UnsupportedFunctionError(f"{method} (pyarrow's) is not supported by lancelet: {why}")


class PicklesItsDict:
    """Pickling and copying by the instance's ``__dict__`` (the Cython base's own
    ``__reduce__`` refuses a subclass)."""

    def __reduce__(self) -> tuple[Any, tuple[type[Any], dict[str, Any]]]:
        return restore, (type(self), self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __copy__(self) -> Any:
        return restore(type(self), dict(self.__dict__))


class ArrowScanner(PicklesItsDict, pa_ds.Scanner):  # type: ignore[misc]
    """``LanceScanner``'s pyarrow base, and the pyarrow methods overridden on it; the
    subclass supplies the reads."""

    @property
    def projected_schema(self) -> pa.Schema:
        raise NotImplementedError

    def to_table(self) -> pa.Table:
        raise NotImplementedError

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    @staticmethod
    def from_dataset(*args: Any, **kwargs: Any) -> NoReturn:
        refuse("LanceScanner.from_dataset", "use LanceDataset.scanner()")

    @staticmethod
    def from_fragment(*args: Any, **kwargs: Any) -> NoReturn:
        refuse("LanceScanner.from_fragment", "use LanceFragment.scanner()")

    @staticmethod
    def from_batches(*args: Any, **kwargs: Any) -> NoReturn:
        refuse("LanceScanner.from_batches", "use pyarrow.dataset.Scanner.from_batches")

    def take(self, indices: Any) -> NoReturn:
        refuse("LanceScanner.take", "use LanceDataset.take()")

    def head(self, num_rows: int) -> pa.Table:
        """The first ``num_rows`` rows of the scan."""
        return self.to_table()[:num_rows]

    def scan_batches(self) -> list[pa.RecordBatch]:
        """The scan's batches (pylance returns them as a list, without fragments)."""
        return list(self.to_batches())

    def to_pandas(self, *, blob_mode: str = pandas_export.LAZY, **kwargs: Any) -> Any:
        """The scan as a pandas DataFrame; see ``LanceDataset.to_pandas``."""
        return pandas_export.to_pandas(self, blob_mode, kwargs)
