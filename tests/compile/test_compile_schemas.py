"""Every emitted object validates: core kinds against the Kubernetes OpenAPI schema
(kubernetes-validate, strict), Volcano / Kueue / Karpenter kinds against the upstream CRDs."""

from __future__ import annotations

import copy

import pytest
import yaml
from compile_helpers import (
    AFTER_EXPIRY,
    KUBERNETES_VERSION,
    compile_acme,
    compile_varied,
    crd_dir,
    find,
)

from gpupact.compile import Bundle, NodeClassRef
from gpupact.compile.kueue import KUEUE_API
from gpupact.compile.validate import (
    CORE_GROUPS,
    crd_json_schema,
    group_of,
    list_map_problems,
    load_crds,
    schema_problems,
)

pytest.importorskip("kubernetes_validate")
pytest.importorskip("jsonschema")

LWS_CRD = "leaderworkerset.x-k8s.io_leaderworkersets.yaml"


def bundles() -> dict[str, Bundle]:
    return {
        "acme": compile_acme(),
        "acme-after-expiry": compile_acme(AFTER_EXPIRY),
        "varied": compile_varied(),
        "varied-azure": compile_varied(
            node_class=NodeClassRef("karpenter.azure.com", "AKSNodeClass", "gpu")
        ),
        "acme-kueue-v1beta1": compile_acme(kueue_api="v1beta1"),
        "varied-kueue-v1beta1": compile_varied(kueue_api="v1beta1"),
    }


@pytest.mark.parametrize("name", sorted(bundles()))
def test_every_object_validates(name):
    crds = crd_dir()
    bundle = bundles()[name]
    report = schema_problems([e.obj for e in bundle.objects], crds, KUBERNETES_VERSION)
    assert report.problems == [], "\n".join(report.problems)
    # only LeaderWorkerSets may lack a schema (their CRD is not among the shared ones) ...
    lws = [e.obj for e in bundle.objects if e.obj["kind"] == "LeaderWorkerSet"]
    if not (crds / LWS_CRD).exists():
        assert all(u.startswith("LeaderWorkerSet ") for u in report.unchecked), report.unchecked
        assert len(report.unchecked) == len(lws)
    else:
        assert report.unchecked == []
    # ... and their pod templates are still validated as core PodTemplates
    for obj in lws:
        name_ = obj["metadata"]["name"]
        assert any(
            v.startswith(f"LeaderWorkerSet {obj['metadata']['namespace']}/{name_} spec.")
            for v in report.validated
        )
    assert len(report.validated) >= len(bundle.objects) - len(lws)


def test_every_kind_meets_a_schema():
    """No object is only checked by our own code: each kind reaches a real schema."""
    crds = crd_dir()
    known = load_crds(crds)
    for bundle in bundles().values():
        for e in bundle.objects:
            obj = e.obj
            group, version = group_of(obj), obj["apiVersion"].rsplit("/", 1)[-1]
            if obj["kind"] == "LeaderWorkerSet" or group in CORE_GROUPS:
                continue
            assert (group, obj["kind"], version) in known, f"{obj['apiVersion']} {obj['kind']}"


def test_leaderworkerset_against_its_crd():
    crds = crd_dir()
    if not (crds / LWS_CRD).exists():
        pytest.skip(f"LeaderWorkerSet CRD not found at {crds / LWS_CRD}")
    bundle = compile_acme()
    objs = [e.obj for e in bundle.objects if e.obj["kind"] == "LeaderWorkerSet"]
    report = schema_problems(objs, crds, KUBERNETES_VERSION)
    assert report.problems == [] and report.unchecked == []


def test_kueue_objects_use_the_storage_version_the_crds_serve():
    known = load_crds(crd_dir())
    storage = {(g, k): v for (g, k, v), crd in known.items() if crd.storage}
    for e in compile_acme().objects:
        if group_of(e.obj) == "kueue.x-k8s.io":
            assert e.obj["apiVersion"] == KUEUE_API
            assert f"kueue.x-k8s.io/{storage[('kueue.x-k8s.io', e.obj['kind'])]}" == KUEUE_API


# --- the validator is not vacuous -----------------------------------------------------------


def _broken(kind: str, mutate) -> list[str]:
    bundle = compile_varied() if kind == "PodGroup" else compile_acme()  # ACME's gang is LWS's
    obj = copy.deepcopy(next(e.obj for e in bundle.objects if e.obj["kind"] == kind))
    mutate(obj)
    return schema_problems([obj], crd_dir(), KUBERNETES_VERSION).problems


@pytest.mark.parametrize(
    ("kind", "mutate", "expected"),
    [
        ("ClusterQueue", lambda o: o["spec"].update(bogus=1), "'bogus' was unexpected"),
        (
            "ClusterQueue",
            lambda o: o["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(
                nominalQuota="12 gpus"
            ),
            "does not match",
        ),
        ("PodGroup", lambda o: o["spec"].update(minMember="4"), "is not of type 'integer'"),
        ("PodGroup", lambda o: o["spec"].update(minMember=2**31), "maximum"),
        (
            "NodePool",
            lambda o: o["spec"]["template"]["spec"]["requirements"][0].update(operator="Maybe"),
            "is not one of",
        ),
        ("NodePool", lambda o: o["metadata"].update(namespace="x"), "scope"),
        ("Queue", lambda o: o["metadata"].update(bogus="x"), "'bogus' was unexpected"),
        ("Deployment", lambda o: o["spec"].update(replicas="4"), "is not of type"),
        ("PriorityClass", lambda o: o.update(value="high"), "is not of type"),
    ],
)
def test_schema_problems_are_reported(kind, mutate, expected):
    problems = _broken(kind, mutate)
    assert any(expected in p for p in problems), problems


def test_structural_schema_reading():
    raw = yaml.safe_load(
        """
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            properties:
              count: {type: integer, format: int32}
              size: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
              note: {type: string, nullable: true}
              open: {type: object, x-kubernetes-preserve-unknown-fields: true,
                     properties: {a: {type: string}}}
              tags: {type: array, items: {type: string}, x-kubernetes-list-type: set}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items: {type: object, properties: {name: {type: string}}}
        """
    )
    import jsonschema

    schema = crd_json_schema(raw)
    ok = {
        "apiVersion": "x/v1",
        "kind": "X",
        "metadata": {"name": "a"},
        "spec": {"count": 1, "size": "1Gi", "note": None, "open": {"b": 1}, "tags": ["a"]},
    }
    jsonschema.Draft7Validator(schema).validate(ok)
    bad = copy.deepcopy(ok)
    bad["spec"].update(count=2**31, tags=["a", "a"], extra=1)
    bad["metadata"]["uid"] = "x"
    messages = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(bad)]
    assert any("maximum" in m for m in messages)
    assert any("non-unique" in m for m in messages)
    assert sum("unexpected" in m for m in messages) == 2  # spec.extra, metadata.uid
    dupes = list_map_problems(raw, {"spec": {"ports": [{"name": "a"}, {"name": "a"}]}})
    assert dupes and "duplicate list-map key" in dupes[0]


def test_find_helper_sees_both_job_kinds():
    bundle = compile_acme()
    assert find(bundle, "Job", "lora-finetune", "batch.volcano.sh/v1alpha1")
