"""Property: any mutation of a valid snapshot either fails to load with a located FieldError /
InputError, or loads and is diagnosed and audited without an exception (bad input is caught at
the edge, where its file and line are known, never later)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpupact.errors import FieldError, InputError
from gpupact.ops import Analysis, audit, diagnose
from gpupact.ops.model import SnapshotBuilder

FIXTURE = Path(__file__).parent / "fixtures" / "gang-half-started"
NOW = 1794312000  # 2026-11-10T12:00:00Z
OBJECTS = [o for f in sorted(FIXTURE.glob("*.json")) for o in json.loads(f.read_text())["items"]]


def _paths(node: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*path, i))
    return out


PATHS = [(i, p) for i, obj in enumerate(OBJECTS) for p in _paths(obj) if len(p) > 1]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=10),
    st.sampled_from(["80Gi", "-1", "1e3", "99999999999h", "Pending", "True", "{}", "[[["]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=5,
)


def _set(obj: Any, path: tuple, value: Any) -> None:
    """Set `path` in `obj`, unless an earlier mutation removed the way there."""
    try:
        for part in path[:-1]:
            obj = obj[part]
        obj[path[-1]] = value
    except (KeyError, IndexError, TypeError):
        pass


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(PATHS), VALUES), min_size=1, max_size=3))
def test_a_mutated_snapshot_fails_at_load_or_not_at_all(mutations: list) -> None:
    objects = copy.deepcopy(OBJECTS)
    for (index, path), value in mutations:
        _set(objects[index], path, value)
    builder = SnapshotBuilder()
    try:
        for obj in objects:
            builder.add(obj)
    except (FieldError, InputError):
        return  # refused where it is read: the loader adds file and line
    snapshot = builder.finish()
    diagnose(Analysis(snapshot, now=NOW))
    audit(Analysis(snapshot, now=NOW))
