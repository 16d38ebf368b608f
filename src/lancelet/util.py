"""pylance's ``lance.util`` helpers that tests import; vector search is outside
lancelet's scope, so the vector index check only refuses."""

from __future__ import annotations

from typing import Any

from lancelet.errors import UnsupportedFunctionError


def validate_vector_index(
    dataset: Any,
    column: str,
    refine_factor: int = 5,
    sample_size: int | None = None,
    pass_threshold: float = 1.0,
) -> None:
    """pylance checks a vector index's recall with nearest-neighbour queries; lancelet
    has no vector search, so this refuses."""
    raise UnsupportedFunctionError(
        f"validate_vector_index({column!r}): lancelet has no vector indices or vector "
        "search (nearest-neighbour queries are outside its scope)"
    )
