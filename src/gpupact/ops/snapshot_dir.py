"""Read a snapshot directory (`kubectl get ... -A -o json` output) into a ClusterSnapshot.

Files: `*.json`, `*.yaml`, `*.yml` directly in the directory (sorted by name; subdirectories
are not read). Each holds one object, a `List` (kubectl's `-o json` of one or many kinds) or a
bare array. A bad field is an InputError naming the file, its line and the field path; the
directory is read whole before anything is returned.

    kubectl get nodes -o json > snap/nodes.json
    kubectl get pods,events -A -o json > snap/pods.json
    kubectl get podgroups,queues.scheduling.volcano.sh -A -o json > snap/volcano.json
    kubectl get workloads,clusterqueues,localqueues,resourceflavors -A -o json > snap/kueue.json
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpupact.cluster.bulk import bulk_allocation
from gpupact.errors import FieldError, InputError, PathPart
from gpupact.ops.model import ClusterSnapshot, SnapshotBuilder
from gpupact.source import Document, iter_objects, load_documents

SUFFIXES = (".json", ".yaml", ".yml")


def snapshot_files(directory: str | Path) -> list[Path]:
    root = Path(directory)
    if not root.exists():
        raise InputError("no such directory", file=str(directory))
    if not root.is_dir():
        raise InputError("not a directory (give the snapshot folder)", file=str(directory))
    # a FIFO, a device or a dangling link named *.json is read (and refused), not skipped: a
    # snapshot silently without its pods would be a different cluster
    files = sorted(p for p in root.iterdir() if p.suffix.lower() in SUFFIXES and not p.is_dir())
    if not files:
        raise InputError(
            f"no {', '.join(SUFFIXES)} files: expected `kubectl get ... -o json` output",
            file=str(directory),
        )
    return files


def load_snapshot_dir(directory: str | Path) -> ClusterSnapshot:
    snapshot = load_snapshot_files(snapshot_files(directory), source=str(directory))
    if not snapshot.nodes:
        # without Nodes every pending pod would read as "nothing to place on", a silent
        # non-answer; the usual cause is a missing `kubectl get nodes -o json` file
        raise InputError(
            f"no Node objects found in {directory} (add `kubectl get nodes -o json` output)"
        )
    return snapshot


def _located(
    doc: Document, err: FieldError, where: tuple[PathPart, ...], obj: Mapping[str, Any]
) -> InputError:
    located = doc.error(err, where)
    kind = obj.get("kind", "object")
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = meta.get("name")
    if isinstance(name, str) and name and name not in located.message:
        ns = meta.get("namespace")
        label = f"{ns}/{name}" if isinstance(ns, str) and ns else name
        located.message = f"{kind} {label}: {located.message}"
    return located


def load_snapshot_files(paths: Sequence[str | Path], *, source: str = "") -> ClusterSnapshot:
    """Every object of `paths`, in order, into one snapshot."""
    builder = SnapshotBuilder(source=source or ", ".join(map(str, paths)))
    with bulk_allocation():
        for path in paths:
            for doc in load_documents(path):
                for where, obj in iter_objects(doc):
                    try:
                        builder.add(obj)
                    except FieldError as err:
                        raise _located(doc, err, where, obj) from None
    return builder.finish()


__all__ = ["ClusterSnapshot", "load_snapshot_dir", "load_snapshot_files", "snapshot_files"]
