"""Callbacks told when a write opens and finishes each fragment (pylance's
``lance.progress``), so a distributed writer can record what it has in flight."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Literal

from lancelet import io
from lancelet.table.fragment import Fragment


@dataclass(frozen=True)
class IndexProgress:
    """One event of an index build: a stage starting, advancing or completing."""

    event: Literal["start", "progress", "complete"]
    stage: str
    completed: int | None = None
    total: int | None = None
    unit: str = ""

    @property
    def fraction(self) -> float | None:
        """``completed / total`` (at most 1); None when either is unknown or total is 0."""
        if self.completed is None or not self.total:
            return None
        return min(self.completed / self.total, 1.0)


class FragmentWriteProgress(ABC):
    """Told about each fragment a write produces: :meth:`begin` before its data file is
    written (the row count is not known yet), :meth:`complete` once it is."""

    @abstractmethod
    def begin(self, fragment: Fragment, **kwargs: Any) -> None: ...

    @abstractmethod
    def complete(self, fragment: Fragment, **kwargs: Any) -> None: ...


def check_progress(progress: object) -> None:
    """Refuse, before anything is written, a ``progress`` that cannot be told of
    fragments."""
    if progress is not None and not all(
        callable(getattr(progress, name, None)) for name in ("begin", "complete")
    ):
        raise TypeError(f"progress must be a FragmentWriteProgress, not {progress!r}")


class NoopFragmentWriteProgress(FragmentWriteProgress):
    def begin(self, fragment: Fragment, **kwargs: Any) -> None:
        pass

    def complete(self, fragment: Fragment, **kwargs: Any) -> None:
        pass


class FileSystemFragmentWriteProgress(FragmentWriteProgress):
    """Records each fragment under ``base_uri``: ``fragment_<id>.json`` (its metadata
    when it was opened) and ``fragment_<id>.in_progress`` (its id and ``metadata``),
    removed when the fragment completes. A writer that dies leaves the latter."""

    PROGRESS_EXT: str = ".in_progress"

    def __init__(self, base_uri: Any, metadata: dict[str, str] | None = None) -> None:
        self._base = io.normalize(base_uri).rstrip("/")
        self._metadata = dict(metadata or {})
        # pylance's takes no storage options either: its store comes from the URI.
        self._io = io.FileIO.for_uri(self._base, None)

    def _in_progress_path(self, fragment: Fragment) -> str:
        return io.join(self._base, f"fragment_{fragment.id}{self.PROGRESS_EXT}")

    def _fragment_file(self, fragment: Fragment) -> str:
        return io.join(self._base, f"fragment_{fragment.id}.json")

    def begin(self, fragment: Fragment, **kwargs: Any) -> None:
        state = {"fragment_id": fragment.id, "metadata": self._metadata}
        self._io.put(self._in_progress_path(fragment), json.dumps(state).encode())
        self._io.put(self._fragment_file(fragment), json.dumps(fragment.to_json()).encode())

    def complete(self, fragment: Fragment, **kwargs: Any) -> None:
        self._io.delete(self._in_progress_path(fragment))
