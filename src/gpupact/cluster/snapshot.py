"""Read Nodes and Pods from `kubectl get -o json|yaml` files into typed objects.

Any invalid field becomes an InputError naming the file, the line and the field path; a file
is read whole before anything is returned, so a bad file never yields a partial cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpupact.cluster.devices import node_gpu_spec
from gpupact.cluster.state import pod_usage
from gpupact.errors import FieldError, InputError
from gpupact.kube.objects import Node, Pod, api_group, parse_node, parse_pod
from gpupact.kube.scheduling_objects import SchedulingObjects
from gpupact.source import iter_objects, load_documents

SUPPORTED_KINDS = ("Node", "Pod")


@dataclass
class Objects:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    ignored: dict[str, int] = field(default_factory=dict)  # kind -> count of other kinds
    # Services, controllers, PVCs and PVs the scheduler's default plugins read (with Nodes)
    scheduling: SchedulingObjects = field(default_factory=SchedulingObjects)


def read_node(obj: dict[str, Any]) -> Node:
    """parse_node, with the GPU labels and annotations checked too (FieldError), so a bad
    one is reported where it is read rather than when the node is first placed on."""
    node = parse_node(obj)
    node_gpu_spec(node)
    return node


def read_pod(obj: dict[str, Any]) -> Pod:
    """parse_pod, with the GPU annotations (gpu-milli, models, topology) checked too."""
    pod = parse_pod(obj)
    pod_usage(pod)
    return pod


def load_objects(
    paths: Iterable[str | Path],
    *,
    only: tuple[str, ...] = SUPPORTED_KINDS,
    check: Callable[[str, dict[str, Any]], None] | None = None,
) -> Objects:
    """`check(kind, obj)` runs on each Node and Pod read (a FieldError is located like a
    parse error)."""
    out = Objects()
    for path in paths:
        for doc in load_documents(path):
            for where, obj in iter_objects(doc):
                kind = obj.get("kind")
                if kind is None:
                    raise doc.error(FieldError(("kind",), "missing kind"), where)
                core = api_group(obj) == ""
                try:
                    if kind == "Node" and core and "Node" in only:
                        out.nodes.append(read_node(obj))
                        if check is not None:
                            check(kind, obj)
                    elif kind == "Pod" and core and "Pod" in only:
                        out.pods.append(read_pod(obj))
                        if check is not None:
                            check(kind, obj)
                    elif "Node" in only and out.scheduling.add(obj):
                        pass
                    else:
                        label = str(kind) if core else f"{kind} ({obj.get('apiVersion')})"
                        out.ignored[label] = out.ignored.get(label, 0) + 1
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
