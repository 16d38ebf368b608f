"""Rust's ``std::collections::BinaryHeap`` step for step, so that a graph search
keeps and returns equally distant nodes in the order pylance's does.

pylance's HNSW search orders nodes by distance alone; which of two equally distant
nodes a heap keeps, pops or sorts first depends on the exact moves of the standard
library's sift-up, sift-down-to-bottom and heap-sort, reproduced here on a list of
``(key, node)`` pairs compared by key only (a max-heap: the largest key on top).
"""

from __future__ import annotations

import numpy as np


def order_keys(distances: np.ndarray) -> list[int]:
    """Integers ordered as Rust's ``f32::total_cmp`` orders the float32 values."""
    bits = np.ascontiguousarray(distances, dtype=np.float32).view(np.int32).astype(np.int64)
    return (bits ^ ((bits >> 31) & 0x7FFFFFFF)).tolist()  # type: ignore[no-any-return]


class MaxHeap:
    """A max-heap of ``(key, node)`` by key, moved as ``BinaryHeap`` moves it."""

    def __init__(self) -> None:
        self.data: list[tuple[int, int]] = []

    def __len__(self) -> int:
        return len(self.data)

    def peek(self) -> tuple[int, int]:
        return self.data[0]

    def push(self, item: tuple[int, int]) -> None:
        self.data.append(item)
        self._sift_up(0, len(self.data) - 1)

    def pop(self) -> tuple[int, int]:
        item = self.data.pop()
        if self.data:
            item, self.data[0] = self.data[0], item
            self._sift_down_to_bottom(0)
        return item

    def into_sorted(self) -> list[tuple[int, int]]:
        """Ascending by key, as ``into_sorted_vec`` leaves it."""
        data = self.data
        end = len(data)
        while end > 1:
            end -= 1
            data[0], data[end] = data[end], data[0]
            self._sift_down_range(0, end)
        return data

    def _sift_up(self, start: int, position: int) -> int:
        data = self.data
        element = data[position]
        while position > start:
            parent = (position - 1) // 2
            if element[0] <= data[parent][0]:
                break
            data[position] = data[parent]
            position = parent
        data[position] = element
        return position

    def _sift_down_range(self, position: int, end: int) -> None:
        data = self.data
        element = data[position]
        child = 2 * position + 1
        while child <= end - 2:
            child += data[child][0] <= data[child + 1][0]
            if element[0] >= data[child][0]:
                data[position] = element
                return
            data[position] = data[child]
            position = child
            child = 2 * position + 1
        if child == end - 1 and element[0] < data[child][0]:
            data[position] = data[child]
            position = child
        data[position] = element

    def _sift_down_to_bottom(self, position: int) -> None:
        data = self.data
        end = len(data)
        start = position
        element = data[position]
        child = 2 * position + 1
        while child <= end - 2:
            child += data[child][0] <= data[child + 1][0]
            data[position] = data[child]
            position = child
            child = 2 * position + 1
        if child == end - 1:
            data[position] = data[child]
            position = child
        data[position] = element
        self._sift_up(start, position)
