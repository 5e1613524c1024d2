"""Read Nodes and Pods from `kubectl get -o json|yaml` files into typed objects.

Any invalid field becomes an InputError naming the file, the line and the field path; a file
is read whole before anything is returned, so a bad file never yields a partial cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gpupact.errors import FieldError, InputError
from gpupact.kube.objects import Node, Pod, parse_node, parse_pod
from gpupact.source import iter_objects, load_documents

SUPPORTED_KINDS = ("Node", "Pod")


@dataclass
class Objects:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    ignored: dict[str, int] = field(default_factory=dict)  # kind -> count of other kinds


def load_objects(
    paths: Iterable[str | Path], *, only: tuple[str, ...] = SUPPORTED_KINDS
) -> Objects:
    out = Objects()
    for path in paths:
        for doc in load_documents(path):
            for where, obj in iter_objects(doc):
                kind = obj.get("kind")
                if kind is None:
                    raise doc.error(FieldError(("kind",), "missing kind"), where)
                try:
                    if kind == "Node" and "Node" in only:
                        out.nodes.append(parse_node(obj))
                    elif kind == "Pod" and "Pod" in only:
                        out.pods.append(parse_pod(obj))
                    else:
                        out.ignored[str(kind)] = out.ignored.get(str(kind), 0) + 1
                except FieldError as err:
                    raise doc.error(err, where) from None
    _check_unique(out)
    return out


def _check_unique(objs: Objects) -> None:
    seen: set[str] = set()
    for node in objs.nodes:
        if node.name in seen:
            raise InputError(f"node {node.name!r} appears twice")
        seen.add(node.name)
    keys: set[str] = set()
    for pod in objs.pods:
        if pod.key in keys:
            raise InputError(f"pod {pod.key!r} appears twice")
        keys.add(pod.key)
