"""The fixtures are what the generator writes, and real Kubernetes objects: every object
validates against the Kubernetes OpenAPI schema or its CRD (Volcano, Kueue, Karpenter)."""

from __future__ import annotations

import copy
import json

import make_fixtures
import pytest
from ops_helpers import FIXTURES, HERE

# set by the API server, absent from manifests: the manifest validator does not expect them
SERVER_FIELDS = ("uid", "creationTimestamp", "resourceVersion", "ownerReferences")


@pytest.mark.parametrize("name", sorted(make_fixtures.SCENARIOS))
def test_fixture_is_generated(name: str) -> None:
    files = make_fixtures.render(name)
    folder = FIXTURES / name
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.json")}
    assert on_disk == files, f"run: python {HERE / 'make_fixtures.py'}"


def test_every_table_row_has_a_fixture() -> None:
    # Table 43-5 (component failures) and 43-6 (failure modes), and a healthy cluster
    wanted = {
        "device-plugin-lost",  # Device Plugin: capacity gone after a driver upgrade
        "fragmentation",  # kube-scheduler: GPU fragmentation
        "affinity-unsatisfiable",  # kube-scheduler: affinity has no solution
        "gang-min-member",  # Volcano: minMember waits forever
        "quota-exhausted",  # Kueue: tenant quota used up / workload pending long
        "autoscaler-cold-start",  # Cluster Autoscaler: slow GPU node cold start
        "pool-at-max",
        "gpu-oom",  # GPU OOM
        "gang-half-started",  # gang permanently pending, half-started gangs
        "mis-preemption",  # online sessions preempted
        "node-drift",  # CUDA / driver drift inside a pool
        "healthy",
    }
    assert wanted <= set(make_fixtures.SCENARIOS)


def _objects() -> list[dict]:
    objs = []
    for file in sorted(FIXTURES.glob("*/*.json")):
        objs.extend(json.loads(file.read_text())["items"])
    return objs


def test_objects_validate_against_schemas() -> None:
    pytest.importorskip("kubernetes_validate")
    from crd_path import crd_dir_or_skip

    from gpupact.compile.validate import schema_problems

    objs = []
    for obj in _objects():
        if obj["kind"] == "NodeClaim":
            continue  # no NodeClaim CRD among the shipped schemas
        obj = copy.deepcopy(obj)
        for key in SERVER_FIELDS:
            obj["metadata"].pop(key, None)
        objs.append(obj)
    report = schema_problems(objs, crd_dir_or_skip(), "1.34.0")
    assert report.problems == []
    assert report.unchecked == []
    assert len(report.validated) >= len(objs)  # pod templates inside objects count too


def test_objects_look_like_kubectl_output() -> None:
    for obj in _objects():
        meta = obj["metadata"]
        assert obj["apiVersion"] and obj["kind"]
        assert meta["uid"] and meta["creationTimestamp"].endswith("Z"), obj["kind"]
