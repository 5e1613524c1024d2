"""The session's node accounting as columns, so a task is checked against every node at once.

Each `NodeInfo` stays the source of truth (its `Resource` rules decide what "missing" means);
the table copies a node's idle, future idle (idle + releasing - pipelined) and used amounts
into int64 rows whenever the node changes (`NodeInfo.on_change`). Node amounts are integers
(milli-cores, bytes, milli-units), so upstream's 0.1 tolerance in `LessEqual` reduces to `<=`,
and an absent scalar reads as 0 (the `Zero` default the actions compare with).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from gpupact.engine.volcano.model import NodeInfo
from gpupact.engine.volcano.resource import Resource
from gpupact.kube.requests import CPU, MEMORY


class NodeTable:
    __slots__ = ("alloc", "col", "future", "idle", "max_tasks", "names", "task_count", "used")

    def __init__(self, nodes: Sequence[NodeInfo], scalar_names: Iterable[str]) -> None:
        self.names = [CPU, MEMORY, *sorted(set(scalar_names) - {CPU, MEMORY})]
        self.col = {name: i for i, name in enumerate(self.names)}
        n, r = len(nodes), len(self.names)
        self.idle = np.zeros((n, r), dtype=np.int64)
        self.future = np.zeros((n, r), dtype=np.int64)
        self.used = np.zeros((n, r), dtype=np.int64)
        self.alloc = np.array([self._amounts(x.allocatable) for x in nodes], dtype=np.int64)
        self.alloc = self.alloc.reshape(n, r)
        self.max_tasks = np.array([x.allocatable.max_task_num for x in nodes], dtype=np.int64)
        self.task_count = np.zeros(n, dtype=np.int64)
        for row, node in enumerate(nodes):
            node.row = row
            self.refresh(node)
            node.on_change = self.refresh

    def _amounts(self, res: Resource) -> list[int]:
        scalars = res.scalars or {}
        return [int(res.cpu), int(res.memory), *(int(scalars.get(n, 0)) for n in self.names[2:])]

    def refresh(self, node: NodeInfo) -> None:
        row = node.row
        idle = self._amounts(node.idle)
        self.idle[row] = idle
        # future idle = idle + releasing - pipelined, which only tasks make differ
        self.future[row] = self._amounts(node.future_idle()) if node.tasks else idle
        self.used[row] = self._amounts(node.used)
        self.task_count[row] = len(node.tasks)

    def fits(self, request: Resource, future: bool) -> np.ndarray:
        """bool[N]: `request.less_equal(node.future_idle() or node.idle, Zero)` per node."""
        available = self.future if future else self.idle
        cols = [self.col[CPU], self.col[MEMORY]]
        amounts = [int(request.cpu), int(request.memory)]
        for name, amount in (request.scalars or {}).items():
            col = self.col.get(name)
            if col is None:
                if amount > 0:  # no node has it: compared with 0
                    return np.zeros(available.shape[0], dtype=np.bool_)
                continue
            cols.append(col)
            amounts.append(int(amount))
        need = np.array(amounts, dtype=np.int64)
        return np.all(available[:, cols] >= need, axis=1)

    def pods_full(self) -> np.ndarray:
        """bool[N]: the node already holds as many tasks as its pod allocatable."""
        return self.max_tasks <= self.task_count
