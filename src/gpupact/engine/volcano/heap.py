"""Volcano's `util.PriorityQueue`: Go's container/heap driven by a less function.

The sessions compare queues and jobs by shares that change while items sit in the heap
(a queue's share grows as it is allocated to). Upstream never re-heapifies, so which item
pops next depends on the heap's exact layout; this is Go's sift-up / sift-down, step for
step, so the pop order matches upstream even with stale keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class PriorityQueue(Generic[T]):
    __slots__ = ("items", "less")

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()) -> None:
        self.less = less
        self.items: list[T] = []
        for item in items:
            self.push(item)

    def __len__(self) -> int:
        return len(self.items)

    def empty(self) -> bool:
        return not self.items

    def push(self, item: T) -> None:
        self.items.append(item)
        self._up(len(self.items) - 1)

    def pop(self) -> T:
        items = self.items
        last = len(items) - 1
        items[0], items[last] = items[last], items[0]
        self._down(0, last)
        return items.pop()

    def clone(self) -> PriorityQueue[T]:
        copy: PriorityQueue[T] = PriorityQueue(self.less)
        copy.items = list(self.items)
        return copy

    def _up(self, j: int) -> None:
        items, less = self.items, self.less
        while j > 0:
            i = (j - 1) // 2
            if i == j or not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            j = i

    def _down(self, i0: int, n: int) -> None:
        items, less = self.items, self.less
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n or j1 < 0:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and less(items[j2], items[j1]):
                j = j2
            if not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            i = j
