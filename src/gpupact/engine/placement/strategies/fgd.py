"""FGD: Fragmentation Gradient Descent (Weng et al., USENIX ATC'23).

Place the pod where it increases the cluster's GPU fragmentation the least: a node scores
floor(100 * sigmoid(decrease of the node's fragment, in GPUs)). For a GPU-share pod every
device that can hold it is tried and the node keeps its best device; whole-device pods take
the first idle devices.

The score of a node depends only on the node's state (GPU model, free CPU, multiset of free
device milli) and the request's shape, so it is memoised per (shape, state): the state
index re-reads only the nodes whose columns changed since the previous call, so a decision
over a thousand nodes costs a few numpy calls plus the states no pod of that shape saw yet
(about 0.2 ms on the openb replay).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpupact.engine.placement.strategies.base import (
    NodeView,
    Request,
    share_picked_devices,
)
from gpupact.engine.placement.strategies.fragmentation import (
    TargetWorkload,
    frag_delta_score,
    node_frag,
)

_UNKNOWN = -1


class _Growable:
    """A numpy array indexed by state id that doubles its capacity on demand."""

    def __init__(self, width: int | None, dtype: type, fill: int) -> None:
        self._width = width
        self._fill = fill
        shape = (64,) if width is None else (64, width)
        self.data = np.full(shape, fill, dtype=dtype)

    def reserve(self, n: int) -> None:
        cap = self.data.shape[0]
        if n <= cap:
            return
        while cap < n:
            cap *= 2
        shape = (cap,) if self._width is None else (cap, self._width)
        grown = np.full(shape, self._fill, dtype=self.data.dtype)
        grown[: self.data.shape[0]] = self.data
        self.data = grown


def _rows_differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """bool[N]: rows of two [N, G] arrays that differ. Reading each row's G flags as one
    uint64 avoids a slow small-axis reduction (G = 8 is the common case)."""
    unequal = np.ascontiguousarray(a != b)
    if unequal.shape[1] % 8 == 0 and unequal.shape[1]:
        words = unequal.view(np.uint64)
        return words[:, 0] != 0 if words.shape[1] == 1 else (words != 0).any(axis=1)
    return unequal.any(axis=1)


class NodeStateIndex:
    """Dense ids for node states (GPU model, free CPU, free device milli sorted descending).

    `ids(view)` returns each node's state id; between calls it compares the view with its
    own copy of the columns and re-interns only the rows that changed."""

    def __init__(self, workload: TargetWorkload, slots: int) -> None:
        self.workload = workload
        self.slots = slots
        self._key_to_id: dict[tuple[int, ...], int] = {}
        self._model_ids: dict[str, int] = {}
        self._access_rows: list[np.ndarray] = []
        self.cpu = _Growable(None, np.int64, 0)
        self.dev = _Growable(slots, np.int64, 0)
        self.model = _Growable(None, np.int64, 0)
        self._seen: tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]] | None = None
        self._node_ids = np.zeros(0, dtype=np.int64)
        self._models_seen: tuple[tuple[str, ...], list[int]] | None = None
        self._access_stack: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self._key_to_id)

    def access(self, state_ids: np.ndarray) -> np.ndarray:
        """bool[M, K]: which typical pods may use each state's GPU model."""
        if self._access_stack is None or self._access_stack.shape[0] != len(self._access_rows):
            self._access_stack = np.stack(self._access_rows)
        return self._access_stack[self.model.data[state_ids]]

    def _model_id(self, name: str) -> int:
        found = self._model_ids.get(name)
        if found is None:
            found = self._model_ids[name] = len(self._access_rows)
            names = (name,) if name else ()
            row = self.workload.access(names)[0 if name else -1]
            self._access_rows.append(row)
        return found

    def _model_ids_of(self, gpu_models: tuple[str, ...]) -> list[int]:
        if self._models_seen is None or self._models_seen[0] != gpu_models:
            names = ("", *gpu_models)
            self._models_seen = (gpu_models, [self._model_id(n) for n in names])
        return self._models_seen[1]

    def _intern(self, model_id: int, cpu: int, dev_row: list[int]) -> int:
        dev_sorted = sorted(dev_row, reverse=True)
        key = (model_id, cpu, *dev_sorted)
        found = self._key_to_id.get(key)
        if found is None:
            found = self._key_to_id[key] = len(self._key_to_id)
            for column in (self.cpu, self.dev, self.model):
                column.reserve(found + 1)
            self.cpu.data[found] = cpu
            self.dev.data[found] = dev_sorted
            self.model.data[found] = model_id
        return found

    def ids(self, view: NodeView) -> np.ndarray:
        seen = self._seen
        if seen is None or seen[0].shape != view.cpu_free.shape or seen[3] != view.gpu_models:
            changed = np.arange(view.n_nodes)
            self._node_ids = np.zeros(view.n_nodes, dtype=np.int64)
            self._seen = seen = (
                view.cpu_free.copy(),
                view.dev_free.copy(),
                view.gpu_model.copy(),
                view.gpu_models,
            )
        else:
            changed = np.flatnonzero(
                (view.cpu_free != seen[0])
                | _rows_differ(view.dev_free, seen[1])
                | (view.gpu_model != seen[2])
            )
            seen[0][changed] = view.cpu_free[changed]
            seen[1][changed] = view.dev_free[changed]
            seen[2][changed] = view.gpu_model[changed]
        if changed.shape[0]:
            model_ids = self._model_ids_of(view.gpu_models)  # index: model code + 1
            cpus = view.cpu_free[changed].tolist()
            devs = view.dev_free[changed].tolist()
            codes = view.gpu_model[changed].tolist()
            for n, cpu, dev, code in zip(changed.tolist(), cpus, devs, codes, strict=True):
                self._node_ids[n] = self._intern(model_ids[code + 1], cpu, dev)
        return self._node_ids


class _Memo:
    """What one fragment measure has computed: fragment per state id, and per request shape
    the node score per state id plus, for GPU shares, the device free amounts that win."""

    def __init__(self) -> None:
        self.frag = _Growable(None, np.int64, _UNKNOWN)
        self.scores: dict[tuple[int, int, int], _Growable] = {}
        # bit j set: the state's j-th largest free device reaches the score (shares only)
        self.best_slots: dict[tuple[int, int, int], _Growable] = {}


Measure = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


class FGD:
    """Fragmentation Gradient Descent against a target workload of typical pods."""

    name = "FGD"

    def __init__(self, workload: TargetWorkload) -> None:
        self.workload = workload
        self._index: NodeStateIndex | None = None
        self._memos: dict[str, _Memo] = {}

    def measure(self, cpu_free: np.ndarray, dev_free: np.ndarray, access: np.ndarray) -> np.ndarray:
        """Weighted fragment milli of node states (the quantity FGD descends)."""
        return node_frag(self.workload, cpu_free, dev_free, access)

    def measure_for(self, req: Request) -> tuple[str, Measure]:
        """The fragment measure a request is placed by (subclasses may pick per request)."""
        return "fgd", self.measure

    # -- memo plumbing ---------------------------------------------------------------------

    def _state_ids(self, view: NodeView) -> np.ndarray:
        slots = int(view.dev_free.shape[1])
        if self._index is None or self._index.slots != slots:
            self._index = NodeStateIndex(self.workload, slots)
            self._memos = {}
        return self._index.ids(view)

    def _score_states(
        self, memo: _Memo, measure: Measure, ids: np.ndarray, req: Request
    ) -> np.ndarray:
        """Node scores for distinct state ids (each state feasible for the request); for a
        share, also remembers which device free amounts reach the node's score."""
        index = self._index
        assert index is not None
        memo.frag.reserve(index.size)
        cpu = index.cpu.data[ids]
        dev = index.dev.data[ids]
        access = index.access(ids)
        m, g = dev.shape
        if req.is_share:  # one option per device: the share on device j (rows sorted)
            options = np.repeat(dev[:, None, :], g, axis=1)
            options[:, np.arange(g), np.arange(g)] -= req.gpu_milli
            after_dev, per_state = options.reshape(m * g, g), g
        else:  # rows are sorted descending, so the idle devices come first
            after_dev, per_state = dev.copy(), 1
            after_dev[:, : req.gpu_count] -= req.gpu_milli
        # one measure call for the states' own fragment (when unknown) and every option
        unknown = memo.frag.data[ids] == _UNKNOWN
        rows_cpu = np.concatenate([cpu[unknown], np.repeat(cpu - req.cpu_milli, per_state)])
        rows_dev = np.concatenate([dev[unknown], after_dev])
        rows_access = np.concatenate([access[unknown], np.repeat(access, per_state, axis=0)])
        values = measure(rows_cpu, rows_dev, rows_access)
        known = int(unknown.sum())
        memo.frag.data[ids[unknown]] = values[:known]
        before = memo.frag.data[ids]
        after = values[known:].reshape(m, per_state)
        scores = frag_delta_score(before[:, None] - after, self.workload.total_weight)
        if not req.is_share:
            return scores[:, 0]
        scores[dev < req.gpu_milli] = -1
        best = scores.max(axis=1)
        slots = memo.best_slots.get(_shape_key(req))
        if slots is None:
            slots = memo.best_slots[_shape_key(req)] = _Growable(None, np.int64, 0)
        slots.reserve(index.size)
        bits = np.int64(1) << np.arange(g, dtype=np.int64)
        slots.data[ids] = (scores == best[:, None]).astype(np.int64) @ bits
        return best

    def _memo_for(self, req: Request) -> tuple[_Memo, Measure]:
        name, measure = self.measure_for(req)
        memo = self._memos.get(name)
        if memo is None:
            memo = self._memos[name] = _Memo()
        return memo, measure

    # -- the strategy ------------------------------------------------------------------------

    def score(self, view: NodeView, req: Request, candidates: np.ndarray) -> np.ndarray:
        ids = self._state_ids(view)[candidates]
        memo, measure = self._memo_for(req)
        key = _shape_key(req)
        table = memo.scores.get(key)
        if table is None:
            table = memo.scores[key] = _Growable(None, np.int64, _UNKNOWN)
        assert self._index is not None
        table.reserve(self._index.size)
        scores = table.data[ids]
        missing = scores == _UNKNOWN
        if missing.any():
            todo = np.unique(ids[missing])
            table.data[todo] = self._score_states(memo, measure, todo, req)
            scores = table.data[ids]
        return scores

    def choose_devices(self, view: NodeView, node: int, req: Request) -> tuple[int, ...]:
        return share_picked_devices(
            view, node, req, lambda row, _fits: self._best_share_device(view, node, row, req)
        )

    def _best_share_device(self, view: NodeView, node: int, row: np.ndarray, req: Request) -> int:
        state = int(self._state_ids(view)[node])
        memo, measure = self._memo_for(req)
        slots = memo.best_slots.get(_shape_key(req))
        mask = 0 if slots is None or state >= slots.data.shape[0] else int(slots.data[state])
        if mask == 0:
            self._score_states(memo, measure, np.array([state]), req)
            mask = int(memo.best_slots[_shape_key(req)].data[state])
        assert self._index is not None
        sorted_free = self._index.dev.data[state]
        winners = [int(v) for j, v in enumerate(sorted_free) if mask >> j & 1]
        # equal scores: the lowest device index wins (the artefact keeps the first strictly
        # better device)
        return int(np.flatnonzero(np.isin(row, winners))[0])


def _shape_key(req: Request) -> tuple[int, int, int]:
    return (req.cpu_milli, req.gpu_count, req.gpu_milli)
