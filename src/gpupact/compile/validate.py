"""Validation of emitted objects, in two layers.

`check_bundle` (stdlib only, run by every compile): what an API server or controller would
refuse or silently mis-handle and no schema sees - names and label syntax, namespaces that
exist, references that resolve (priorityClassName, PodGroup and queue names, LocalQueue ->
ClusterQueue -> ResourceFlavor / Cohort, HPA targets, selectors that select), GPU requests
equal to limits, and the CEL rules of the Karpenter and Kueue CRDs that matter here. A problem
means the contract cannot be compiled as written, so compile reports it as bad input.

`schema_problems` (needs the test extras `kubernetes-validate` and `jsonschema`): core
objects against the Kubernetes OpenAPI schema; Volcano / Kueue / Karpenter objects against
the `openAPIV3Schema` of the CRD version they name, read structurally:
- an object schema with `properties` and without `x-kubernetes-preserve-unknown-fields` gets
  `additionalProperties: false` - the API server would prune an unknown field silently, so for
  us an unknown field is an error;
- `x-kubernetes-int-or-string` allows integer or string; `nullable` adds null;
  `x-kubernetes-embedded-resource` admits apiVersion/kind/metadata;
- `x-kubernetes-list-type: set` means unique items, `map` unique `x-kubernetes-list-map-keys`;
- `format: int32/int64` become numeric bounds;
- `metadata` is checked as ObjectMeta (the CRD says only `type: object`);
- `x-kubernetes-validations` (CEL) are not evaluated; `check_bundle` covers the ones that
  bear on what gpupact emits.
Pod templates inside custom resources (LeaderWorkerSet, Volcano Job) are also validated as
core PodTemplates, so they are checked even when a CRD schema is absent or trimmed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpupact.compile.core import LWS_VOLCANO_QUEUE
from gpupact.compile.gpu_operator import GPU_OPERATOR_NAMESPACE
from gpupact.compile.model import Bundle, Obj
from gpupact.compile.names import (
    KUEUE_PRIORITY_LABEL,
    KUEUE_QUEUE_LABEL,
    VOLCANO_GROUP_ANNOTATION,
    VOLCANO_SCHEDULER,
)
from gpupact.contract.keys import LABEL_COST_CENTRE, LABEL_OWNER
from gpupact.contract.schema import is_gpu_resource

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

CLUSTER_SCOPED = frozenset(
    {
        ("", "Namespace"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("kueue.x-k8s.io", "ResourceFlavor"),
        ("kueue.x-k8s.io", "ClusterQueue"),
        ("kueue.x-k8s.io", "Cohort"),
        ("kueue.x-k8s.io", "WorkloadPriorityClass"),
        ("scheduling.volcano.sh", "Queue"),
        ("karpenter.sh", "NodePool"),
    }
)
# Namespaces installed with a platform component, not by the contract.
PLATFORM_NAMESPACES = frozenset({GPU_OPERATOR_NAMESPACE})
# Kinds whose name is also a DNS label (it becomes a host name or a label value).
_LABEL_NAMED = frozenset({("", "Namespace"), ("", "Service")})
MAX_ANNOTATIONS_BYTES = 256 * 1024


@dataclass(frozen=True)
class Problem:
    subject: str  # `Kind namespace/name`
    message: str

    def __str__(self) -> str:
        return f"{self.subject}: {self.message}"


def group_of(obj: Obj) -> str:
    api = obj.get("apiVersion", "")
    return api.rsplit("/", 1)[0] if "/" in api else ""


def subject(obj: Obj) -> str:
    meta = obj.get("metadata", {})
    ns = meta.get("namespace")
    return f"{obj.get('kind')} {ns + '/' if ns else ''}{meta.get('name')}"


def pod_templates(obj: Obj) -> Iterator[tuple[str, Obj]]:
    """(path, template) of every pod template an object carries."""
    spec = obj.get("spec", {})
    kind, group = obj.get("kind"), group_of(obj)
    if group == "batch.volcano.sh" and kind == "Job":
        for i, task in enumerate(spec.get("tasks", [])):
            yield f"spec.tasks[{i}].template", task["template"]
    elif kind == "LeaderWorkerSet":
        lwt = spec.get("leaderWorkerTemplate", {})
        for key in ("leaderTemplate", "workerTemplate"):
            if key in lwt:
                yield f"spec.leaderWorkerTemplate.{key}", lwt[key]
    elif kind == "CronJob":
        yield "spec.jobTemplate.spec.template", spec["jobTemplate"]["spec"]["template"]
    elif kind in ("Deployment", "StatefulSet", "Job", "ReplicaSet", "DaemonSet"):
        yield "spec.template", spec["template"]


# --- semantic checks ------------------------------------------------------------------------


def check_bundle(bundle: Bundle) -> list[Problem]:
    objects = [e.obj for e in bundle.objects]
    index: dict[tuple[str, str, str | None, str], Obj] = {}
    problems: list[Problem] = []

    def add(obj: Obj, message: str) -> None:
        problems.append(Problem(subject(obj), message))

    for obj in objects:
        key = (
            group_of(obj),
            obj["kind"],
            obj["metadata"].get("namespace"),
            obj["metadata"]["name"],
        )
        if key in index:
            add(obj, "emitted twice (two contract entries compile to the same object name)")
        index[key] = obj

    def exists(group: str, kind: str, name: str | None, namespace: str | None = None) -> bool:
        return (group, kind, namespace, name) in index

    namespaces = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    for obj in objects:
        _check_metadata(obj, namespaces, add)
        for path, template in pod_templates(obj):
            _check_template(obj, path, template, exists, add)
        _check_kind_specific(obj, objects, exists, add)
    return problems


def _check_metadata(obj: Obj, namespaces: set[str], add: Any) -> None:
    meta = obj["metadata"]
    labels = meta.get("labels", {})
    # gpupact audit reads the owner from a label or an annotation, the cost centre from a label
    if not (labels.get(LABEL_OWNER) or meta.get("annotations", {}).get(LABEL_OWNER)):
        add(obj, f"no {LABEL_OWNER} label")
    if not labels.get(LABEL_COST_CENTRE):
        add(obj, f"no {LABEL_COST_CENTRE} label")
    name, namespace = meta.get("name", ""), meta.get("namespace")
    key = (group_of(obj), obj["kind"])
    pattern, limit = (_DNS_LABEL, 63) if key in _LABEL_NAMED else (_DNS_SUBDOMAIN, 253)
    if not name or len(name) > limit or not pattern.match(name):
        add(obj, f"name {name!r} is not a valid {'DNS label' if limit == 63 else 'DNS subdomain'}")
    if key in CLUSTER_SCOPED:
        if namespace is not None:
            add(obj, "cluster-scoped object has a namespace")
    elif namespace is None:
        add(obj, "namespaced object has no namespace")
    elif namespace not in namespaces and namespace not in PLATFORM_NAMESPACES:
        add(obj, f"namespace {namespace} is not emitted")
    for where, labels in _label_maps(obj):
        for problem in label_problems(labels):
            add(obj, f"{where}: {problem}")
    notes = meta.get("annotations", {})
    if sum(len(k) + len(v) for k, v in notes.items()) > MAX_ANNOTATIONS_BYTES:
        add(obj, "annotations exceed 256 KiB")


def _label_maps(obj: Obj) -> Iterator[tuple[str, dict[str, str]]]:
    yield "metadata.labels", obj["metadata"].get("labels", {})
    for path, template in pod_templates(obj):
        yield f"{path}.metadata.labels", template.get("metadata", {}).get("labels", {})
    if obj["kind"] == "NodePool":
        yield "spec.template.metadata.labels", obj["spec"]["template"]["metadata"]["labels"]


def label_problems(labels: dict[str, str]) -> list[str]:
    out = []
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if (
            not name
            or len(name) > 63
            or not _LABEL_NAME.match(name)
            or (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)))
        ):
            out.append(f"label key {key!r} is not a qualified name")
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            out.append(f"label {key} value {value!r} is not a valid label value")
    return out


def _check_template(obj: Obj, path: str, template: Obj, exists: Any, add: Any) -> None:
    namespace = obj["metadata"].get("namespace")
    spec = template.get("spec", {})
    pc = spec.get("priorityClassName")
    if pc and not exists("scheduling.k8s.io", "PriorityClass", pc):
        add(obj, f"{path}: priorityClassName {pc} is not emitted")
    group = template.get("metadata", {}).get("annotations", {}).get(VOLCANO_GROUP_ANNOTATION)
    if group is not None:
        if not exists("scheduling.volcano.sh", "PodGroup", group, namespace):
            add(obj, f"{path}: PodGroup {group} is not emitted")
        if spec.get("schedulerName") != VOLCANO_SCHEDULER:
            add(obj, f"{path}: a PodGroup member must use schedulerName {VOLCANO_SCHEDULER}")
    for i, container in enumerate(spec.get("containers", [])):
        resources = container.get("resources", {})
        requests, limits = resources.get("requests", {}), resources.get("limits", {})
        for name in sorted(set(requests) | set(limits)):
            if is_gpu_resource(name) and requests.get(name) != limits.get(name):
                add(obj, f"{path}.spec.containers[{i}]: {name} requests != limits")
    labels = template.get("metadata", {}).get("labels", {})
    if obj["kind"] in ("Deployment", "StatefulSet"):
        selector = obj["spec"].get("selector", {}).get("matchLabels", {})
        if not _selects(selector, labels):
            add(obj, "spec.selector does not select spec.template's labels")


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _workload_pod_labels(objects: list[Obj], namespace: str | None) -> list[dict[str, str]]:
    out = []
    for obj in objects:
        if obj["metadata"].get("namespace") == namespace:
            for _, template in pod_templates(obj):
                labels = dict(template.get("metadata", {}).get("labels", {}))
                if obj["kind"] == "LeaderWorkerSet":
                    labels["leaderworkerset.sigs.k8s.io/worker-index"] = "0"  # set by LWS
                out.append(labels)
    return out


def _check_kind_specific(obj: Obj, objects: list[Obj], exists: Any, add: Any) -> None:
    kind, group, spec = obj["kind"], group_of(obj), obj.get("spec", {})
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    if kind in ("Service", "PodDisruptionBudget"):
        selector = spec.get("selector", {})
        selector = (
            selector.get("matchLabels", selector) if kind == "PodDisruptionBudget" else selector
        )
        if not any(
            _selects(selector, labels) for labels in _workload_pod_labels(objects, namespace)
        ):
            add(obj, "selector matches no emitted pod template")
    elif kind == "HorizontalPodAutoscaler":
        ref = spec["scaleTargetRef"]
        target_group = ref["apiVersion"].rsplit("/", 1)[0] if "/" in ref["apiVersion"] else ""
        if not exists(target_group, ref["kind"], ref["name"], namespace):
            add(obj, f"scaleTargetRef {ref['kind']} {ref['name']} is not emitted")
        if spec.get("minReplicas", 1) > spec["maxReplicas"]:
            add(obj, "minReplicas exceeds maxReplicas")
    elif kind in ("Job", "CronJob") and group == "batch":
        labels = meta.get("labels", {})
        queue = labels.get(KUEUE_QUEUE_LABEL)
        if queue is not None and not exists("kueue.x-k8s.io", "LocalQueue", queue, namespace):
            add(obj, f"LocalQueue {queue} is not emitted in {namespace}")
        wpc = labels.get(KUEUE_PRIORITY_LABEL)
        if wpc is not None and not exists("kueue.x-k8s.io", "WorkloadPriorityClass", wpc):
            add(obj, f"WorkloadPriorityClass {wpc} is not emitted")
        job = spec if kind == "Job" else spec["jobTemplate"]["spec"]
        if queue is not None and job.get("suspend") is not True:
            add(obj, "a Kueue-managed Job must be created suspended")
    elif group == "batch.volcano.sh" and kind == "Job":
        if not exists("scheduling.volcano.sh", "Queue", spec.get("queue")):
            add(obj, f"Volcano Queue {spec.get('queue')} is not emitted")
        if spec.get("minAvailable", 0) > sum(t["replicas"] for t in spec["tasks"]):
            add(obj, "minAvailable exceeds the job's pods")
    elif kind == "PodGroup":
        if not exists("scheduling.volcano.sh", "Queue", spec.get("queue")):
            add(obj, f"Volcano Queue {spec.get('queue')} is not emitted")
        pc = spec.get("priorityClassName")
        if pc and not exists("scheduling.k8s.io", "PriorityClass", pc):
            add(obj, f"priorityClassName {pc} is not emitted")
    elif kind == "LeaderWorkerSet":
        worker = spec.get("leaderWorkerTemplate", {}).get("workerTemplate", {})
        if worker.get("spec", {}).get("schedulerName") == VOLCANO_SCHEDULER:
            queue = meta.get("annotations", {}).get(LWS_VOLCANO_QUEUE)
            if not exists("scheduling.volcano.sh", "Queue", queue):
                add(obj, f"Volcano Queue {queue} (annotation {LWS_VOLCANO_QUEUE}) is not emitted")
    elif kind == "LocalQueue":
        if not exists("kueue.x-k8s.io", "ClusterQueue", spec["clusterQueue"]):
            add(obj, f"ClusterQueue {spec['clusterQueue']} is not emitted")
    elif kind == "ClusterQueue":
        _check_cluster_queue(obj, exists, add)
    elif kind == "ResourceFlavor":
        for taint in spec.get("nodeTaints", []):
            if taint["effect"] not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                add(obj, f"nodeTaints effect {taint['effect']} is not allowed")
    elif kind == "NodePool":
        _check_node_pool(obj, add)


def _check_cluster_queue(obj: Obj, exists: Any, add: Any) -> None:
    spec = obj["spec"]
    cohort = spec.get("cohortName") or spec.get("cohort")  # v1beta2 / v1beta1
    if cohort and not exists("kueue.x-k8s.io", "Cohort", cohort):
        add(obj, f"Cohort {cohort} is not emitted")
    seen: set[str] = set()
    covered_all: set[str] = set()
    for g, group in enumerate(spec.get("resourceGroups", [])):
        covered = group["coveredResources"]
        if covered_all.intersection(covered):
            add(obj, f"resourceGroups[{g}]: a resource is covered by two groups")
        covered_all.update(covered)
        for flavor in group["flavors"]:
            name = flavor["name"]
            if name in seen:
                add(obj, f"flavor {name} appears twice")
            seen.add(name)
            if not exists("kueue.x-k8s.io", "ResourceFlavor", name):
                add(obj, f"ResourceFlavor {name} is not emitted")
            if [r["name"] for r in flavor["resources"]] != covered:
                add(obj, f"flavor {name} must list coveredResources in order")
            for r in flavor["resources"]:
                if "borrowingLimit" in r and not cohort:
                    add(obj, f"flavor {name}: borrowingLimit without a cohort")
                lend, nominal = r.get("lendingLimit"), r["nominalQuota"]
                if isinstance(lend, int) and isinstance(nominal, int) and lend > nominal:
                    add(obj, f"flavor {name}: lendingLimit exceeds nominalQuota")


def _check_node_pool(obj: Obj, add: Any) -> None:
    template = obj["spec"]["template"]
    for req in template["spec"]["requirements"]:
        key, op, values = req["key"], req["operator"], req.get("values", [])
        domain = key.split("/", 1)[0] if "/" in key else ""
        if key in ("karpenter.sh/nodepool", "kubernetes.io/hostname") or (
            domain.endswith("karpenter.sh") and key != "karpenter.sh/capacity-type"
        ):
            add(obj, f"requirement key {key} is restricted")
        if op in ("In", "NotIn") and not values:
            add(obj, f"requirement {key} {op} needs values")
        if op in ("Gt", "Lt", "Gte", "Lte") and (len(values) != 1 or not values[0].isdigit()):
            add(obj, f"requirement {key} {op} needs one non-negative integer")
    for key in template["metadata"].get("labels", {}):
        domain = key.split("/", 1)[0] if "/" in key else ""
        if domain.endswith("karpenter.sh") or key == "kubernetes.io/hostname":
            add(obj, f"template label {key} is restricted")


# --- schema validation ----------------------------------------------------------------------

_INT_BOUNDS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_OBJECT_META = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
    },
}


@dataclass(frozen=True)
class CrdVersion:
    group: str
    kind: str
    version: str
    namespaced: bool
    schema: dict[str, Any]  # converted to JSON Schema
    raw: dict[str, Any]  # the openAPIV3Schema as shipped
    served: bool
    storage: bool


@dataclass
class SchemaReport:
    problems: list[str] = field(default_factory=list)
    validated: list[str] = field(default_factory=list)  # `Kind name: how`
    unchecked: list[str] = field(default_factory=list)  # no schema found


def load_crds(crd_dir: Path) -> dict[tuple[str, str, str], CrdVersion]:
    """(group, kind, version) -> schema, from every CRD YAML file in `crd_dir` (read once per
    directory and file set: CRD files are large)."""
    files = tuple(sorted(crd_dir.glob("*.yaml")))
    return _load_crds(files, tuple(p.stat().st_mtime_ns for p in files))


@lru_cache(maxsize=8)
def _load_crds(
    files: tuple[Path, ...], stamps: tuple[int, ...]
) -> dict[tuple[str, str, str], CrdVersion]:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out = {}
    for path in files:
        for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for version in spec["versions"]:
                raw = version["schema"]["openAPIV3Schema"]
                key = (spec["group"], spec["names"]["kind"], version["name"])
                out[key] = CrdVersion(
                    group=spec["group"],
                    kind=spec["names"]["kind"],
                    version=version["name"],
                    namespaced=spec["scope"] == "Namespaced",
                    schema=crd_json_schema(raw),
                    raw=raw,
                    served=bool(version.get("served")),
                    storage=bool(version.get("storage")),
                )
    return out


def crd_json_schema(raw: dict[str, Any]) -> dict[str, Any]:
    schema = structural_to_json_schema(raw)
    schema.setdefault("properties", {})["metadata"] = _OBJECT_META
    schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind", "metadata"})
    return schema


def structural_to_json_schema(node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: structural_to_json_schema(s) for name, s in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = structural_to_json_schema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [structural_to_json_schema(s) for s in value]
        elif key.startswith("x-kubernetes-") or key in (
            "description",
            "default",
            "example",
            "nullable",
            "format",
        ):
            continue
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
        out.pop("anyOf", None)
    if node.get("nullable") and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"]
    if node.get("format") in _INT_BOUNDS:
        low, high = _INT_BOUNDS[node["format"]]
        out.setdefault("minimum", low)
        out.setdefault("maximum", high)
    if node.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    closed = "properties" in out and "additionalProperties" not in node
    if closed and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


def list_map_problems(raw: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """Duplicate keys in `x-kubernetes-list-type: map` lists (no JSON Schema keyword says it)."""
    out: list[str] = []
    if isinstance(value, dict):
        props = raw.get("properties", {})
        extra = raw.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key) or (extra if isinstance(extra, dict) else None)
            if sub:
                out += list_map_problems(sub, item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        keys = raw.get("x-kubernetes-list-map-keys")
        if raw.get("x-kubernetes-list-type") == "map" and keys:
            seen = set()
            for i, item in enumerate(value):
                ident = tuple(item.get(k) for k in keys) if isinstance(item, dict) else (item,)
                if ident in seen:
                    out.append(
                        f"{path}[{i}]: duplicate list-map key {dict(zip(keys, ident, strict=True))}"
                    )
                seen.add(ident)
        items = raw.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                out += list_map_problems(items, item, f"{path}[{i}]")
    return out


CORE_GROUPS = frozenset(
    {"", "apps", "batch", "autoscaling", "policy", "scheduling.k8s.io", "networking.k8s.io"}
)


def schema_problems(objects: Iterable[Obj], crd_dir: Path, kubernetes_version: str) -> SchemaReport:
    """Every object against its schema (see the module doc); never raises on a bad object."""
    import jsonschema
    import kubernetes_validate

    crds = load_crds(crd_dir)
    crd_groups = {g for g, _, _ in crds}
    report = SchemaReport()

    def core(obj: Obj, what: str) -> None:
        try:
            kubernetes_validate.validate(obj, kubernetes_version, strict=True)
        except kubernetes_validate.ValidationError as err:
            where = ".".join(str(p) for p in err.absolute_path)
            report.problems.append(f"{what}: {where}: {err.message}")
        except kubernetes_validate.SchemaNotFoundError:
            report.unchecked.append(f"{what}: no Kubernetes {kubernetes_version} schema")
        else:
            report.validated.append(f"{what}: Kubernetes {kubernetes_version} OpenAPI")

    for obj in objects:
        what = subject(obj)
        group = group_of(obj)
        version = obj["apiVersion"].rsplit("/", 1)[-1]
        if group in CORE_GROUPS:
            core(obj, what)
            continue
        crd = crds.get((group, obj["kind"], version))
        if crd is not None:
            _against_crd(obj, what, crd, report, jsonschema)
        elif group in crd_groups:
            report.problems.append(f"{what}: {obj['apiVersion']} {obj['kind']} is not in the CRDs")
        else:
            report.unchecked.append(f"{what}: no CRD for {obj['apiVersion']} in {crd_dir}")
        for path, template in pod_templates(obj):
            wrapped = {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": obj["metadata"]["name"], "namespace": "default"},
                "template": template,
            }
            core(wrapped, f"{what} {path}")
    return report


def _against_crd(
    obj: Obj, what: str, crd: CrdVersion, report: SchemaReport, jsonschema: Any
) -> None:
    if not crd.served:
        report.problems.append(f"{what}: {crd.group}/{crd.version} is not served")
    if ("namespace" in obj["metadata"]) != crd.namespaced:
        report.problems.append(f"{what}: namespace does not match the CRD's scope")
    validator = jsonschema.Draft7Validator(crd.schema)
    for error in sorted(
        validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path]
    ):
        where = ".".join(str(p) for p in error.absolute_path)
        report.problems.append(f"{what}: {where}: {error.message}")
    report.problems.extend(f"{what}: {p}" for p in list_map_problems(crd.raw, obj))
    report.validated.append(f"{what}: CRD {crd.group}/{crd.version}")
