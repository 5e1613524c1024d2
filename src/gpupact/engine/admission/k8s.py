"""Kueue objects read from Kubernetes JSON (kueue.x-k8s.io/v1beta1 and v1beta2).

Each `parse_*` validates one object and raises FieldError with the field path inside it and a
message naming the object. `load_state` reads a whole set (ResourceFlavors, ClusterQueues,
Cohorts, LocalQueues, WorkloadPriorityClasses, Workloads), checks references across objects,
and only then builds the AdmissionState: on any error nothing is applied.

API defaults are applied as the API server would (queueingStrategy BestEffortFIFO, preemption
policies Never, flavorFungibility MayStopSearch / TryNextFlavor). Times become integer
milliseconds since the epoch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

from gpupact.engine.admission.fair_sharing import FairSharingConfig
from gpupact.engine.admission.model import (
    ANY,
    BEST_EFFORT_FIFO,
    LOWER_OR_NEWER_EQUAL_PRIORITY,
    LOWER_PRIORITY,
    MAY_STOP_SEARCH,
    NEVER,
    PREEMPTION_OVER_BORROWING,
    STRICT_FIFO,
    TRY_NEXT_FLAVOR,
    Admission,
    BorrowWithinCohort,
    ClusterQueue,
    Cohort,
    FlavorFungibility,
    FlavorQuotas,
    LocalQueue,
    PodSet,
    PodSetAdmission,
    PreemptionConfig,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
    WorkloadPriorityClass,
)
from gpupact.engine.admission.state import AdmissionState
from gpupact.engine.preemption.importance import NANOS_PER_SECOND, parse_time_nanos
from gpupact.errors import FieldError, PathPart
from gpupact.kube.fields import (
    integer,
    mapping,
    object_header,
    optional_integer,
    optional_list,
    optional_mapping,
    required_string,
    string,
    string_map,
)
from gpupact.kube.quantity import QuantityError, parse_quantity, resource_amount
from gpupact.kube.requests import parse_pod_resources, pod_requests
from gpupact.kube.selectors import parse_label_selector, parse_node_selector
from gpupact.kube.taints import parse_taints, parse_tolerations

GROUP = "kueue.x-k8s.io"
API_VERSIONS = (f"{GROUP}/v1beta1", f"{GROUP}/v1beta2")

_STRATEGIES = (STRICT_FIFO, BEST_EFFORT_FIFO)
_WITHIN_CQ = (NEVER, LOWER_PRIORITY, LOWER_OR_NEWER_EQUAL_PRIORITY)
_RECLAIM = (NEVER, LOWER_PRIORITY, ANY)
_BORROW_WITHIN = (NEVER, LOWER_PRIORITY)
# v1beta1 spelled "stop at this flavor" per case; both mean MayStopSearch
_FUNGIBILITY = {MAY_STOP_SEARCH: MAY_STOP_SEARCH, TRY_NEXT_FLAVOR: TRY_NEXT_FLAVOR}
_V1BETA1_BORROW = {**_FUNGIBILITY, "Borrow": MAY_STOP_SEARCH}
_V1BETA1_PREEMPT = {**_FUNGIBILITY, "Preempt": MAY_STOP_SEARCH}
_PREFERENCES = ("BorrowingOverPreemption", PREEMPTION_OVER_BORROWING)
_STOP_POLICIES = ("None", "Hold", "HoldAndDrain")

T = TypeVar("T")


# --- small readers ---------------------------------------------------------------------------


def _choice(value: str, allowed: Sequence[str], path: Sequence[PathPart]) -> str:
    if value not in allowed:
        supported = ", ".join(f'"{a}"' for a in allowed)
        raise FieldError(path, f'unsupported value "{value}": supported values: {supported}')
    return value


def _amount(resource: str, obj: object, path: Sequence[PathPart]) -> int:
    if isinstance(obj, bool) or not isinstance(obj, str | int | float):
        raise FieldError(path, f"expected a quantity, got {type(obj).__name__}")
    try:
        value = resource_amount(resource, obj)
    except QuantityError as err:
        raise FieldError(path, str(err)) from None
    if value < 0:
        raise FieldError(path, f"must be greater than or equal to 0, got {obj}")
    return value


def _weight(obj: object, path: Sequence[PathPart]) -> Fraction:
    fair = optional_mapping(obj, path)
    raw = fair.get("weight")
    if raw is None:
        return Fraction(1)
    try:
        weight = parse_quantity(str(raw)).amount
    except QuantityError as err:
        raise FieldError((*path, "weight"), str(err)) from None
    if weight < 0:
        raise FieldError((*path, "weight"), f"must be greater than or equal to 0, got {raw}")
    return weight


def _timestamp(obj: object, path: Sequence[PathPart]) -> int | None:
    """RFC 3339 time -> integer milliseconds since the epoch."""
    text = string(obj, path)
    if not text:
        return None
    return parse_time_nanos(text, tuple(path)) // (NANOS_PER_SECOND // 1000)


def _header(obj: object, kind: str) -> tuple[Mapping[str, Any], str, str]:
    """Check apiVersion and kind; return (body, name, apiVersion)."""
    body = mapping(obj, ())
    version = string(body.get("apiVersion"), ("apiVersion",))
    if version and version not in API_VERSIONS:
        raise FieldError(("apiVersion",), f"unsupported apiVersion {version!r} for {kind}")
    header = object_header(body, kind)
    return body, header.name, version


def _named(kind: str, name: str, parse: Callable[[], T]) -> T:
    """Run a parser, naming the object in any FieldError it raises."""
    try:
        return parse()
    except FieldError as err:
        raise FieldError(err.path, f"{kind} {name!r}: {err.message}") from None


# --- objects ---------------------------------------------------------------------------------


def parse_resource_flavor(obj: object) -> ResourceFlavor:
    body, name, _ = _header(obj, "ResourceFlavor")

    def parse() -> ResourceFlavor:
        spec = optional_mapping(body.get("spec"), ("spec",))
        return ResourceFlavor(
            name,
            string_map(spec.get("nodeLabels"), ("spec", "nodeLabels")),
            tuple(parse_taints(spec.get("nodeTaints"), ("spec", "nodeTaints"))),
            tuple(parse_tolerations(spec.get("tolerations"), ("spec", "tolerations"))),
        )

    return _named("ResourceFlavor", name, parse)


def _resource_groups(obj: object, path: Sequence[PathPart]) -> tuple[ResourceGroup, ...]:
    groups = []
    for i, raw in enumerate(optional_list(obj, path)):
        gpath = (*path, i)
        group = mapping(raw, gpath)
        covered = tuple(
            required_string(r, (*gpath, "coveredResources", j))
            for j, r in enumerate(
                optional_list(group.get("coveredResources"), (*gpath, "coveredResources"))
            )
        )
        flavors = []
        for j, rawf in enumerate(optional_list(group.get("flavors"), (*gpath, "flavors"))):
            fpath = (*gpath, "flavors", j)
            flavor = mapping(rawf, fpath)
            fname = string(flavor.get("name"), (*fpath, "name"))
            if not fname:
                raise FieldError((*fpath, "name"), "a flavor needs a name")
            resources: dict[str, ResourceQuota] = {}
            raw_resources = optional_list(flavor.get("resources"), (*fpath, "resources"))
            for k, rawr in enumerate(raw_resources):
                rpath = (*fpath, "resources", k)
                res = mapping(rawr, rpath)
                rname = string(res.get("name"), (*rpath, "name"))
                if rname not in covered:
                    raise FieldError(
                        (*rpath, "name"), f"resource {rname!r} is not in coveredResources"
                    )
                if rname in resources:
                    raise FieldError((*rpath, "name"), f"duplicate resource {rname!r}")
                nominal = res.get("nominalQuota", 0)
                borrowing = res.get("borrowingLimit")
                lending = res.get("lendingLimit")
                quota = ResourceQuota(
                    _amount(rname, nominal, (*rpath, "nominalQuota")),
                    None
                    if borrowing is None
                    else _amount(rname, borrowing, (*rpath, "borrowingLimit")),
                    None if lending is None else _amount(rname, lending, (*rpath, "lendingLimit")),
                )
                if quota.lending_limit is not None and quota.lending_limit > quota.nominal:
                    raise FieldError(
                        (*rpath, "lendingLimit"), "must be less than or equal to nominalQuota"
                    )
                resources[rname] = quota
            if len(resources) != len(covered):
                raise FieldError(
                    (*fpath, "resources"),
                    "flavors must have the same number of resources as the coveredResources",
                )
            flavors.append(FlavorQuotas(fname, resources))
        groups.append(ResourceGroup(covered, tuple(flavors)))
    seen: dict[str, tuple[PathPart, ...]] = {}
    for i, group in enumerate(groups):
        for j, flavor in enumerate(group.flavors):
            if flavor.name in seen:
                raise FieldError(
                    (*path, i, "flavors", j, "name"), f"duplicate flavor {flavor.name!r}"
                )
            seen[flavor.name] = (*path, i, "flavors", j, "name")
    return tuple(groups)


def _preemption(obj: object, path: Sequence[PathPart]) -> PreemptionConfig:
    body = optional_mapping(obj, path)
    within = _choice(
        string(body.get("withinClusterQueue"), (*path, "withinClusterQueue"), NEVER),
        _WITHIN_CQ,
        (*path, "withinClusterQueue"),
    )
    reclaim = _choice(
        string(body.get("reclaimWithinCohort"), (*path, "reclaimWithinCohort"), NEVER),
        _RECLAIM,
        (*path, "reclaimWithinCohort"),
    )
    bwc = None
    if body.get("borrowWithinCohort") is not None:
        bpath = (*path, "borrowWithinCohort")
        raw = optional_mapping(body["borrowWithinCohort"], bpath)
        policy = _choice(
            string(raw.get("policy"), (*bpath, "policy"), NEVER), _BORROW_WITHIN, (*bpath, "policy")
        )
        threshold = optional_integer(
            raw.get("maxPriorityThreshold"), (*bpath, "maxPriorityThreshold"), bits=32
        )
        bwc = BorrowWithinCohort(policy, threshold)
        if reclaim == NEVER and policy != NEVER:
            raise FieldError(
                bpath, "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"
            )
    return PreemptionConfig(within, reclaim, bwc)


def _fungibility(obj: object, path: Sequence[PathPart], version: str) -> FlavorFungibility:
    body = optional_mapping(obj, path)
    old = version.endswith("v1beta1")
    when_borrow = string(body.get("whenCanBorrow"), (*path, "whenCanBorrow"), MAY_STOP_SEARCH)
    when_preempt = string(body.get("whenCanPreempt"), (*path, "whenCanPreempt"), TRY_NEXT_FLAVOR)
    borrow_values = _V1BETA1_BORROW if old else _FUNGIBILITY
    preempt_values = _V1BETA1_PREEMPT if old else _FUNGIBILITY
    _choice(when_borrow, tuple(borrow_values), (*path, "whenCanBorrow"))
    _choice(when_preempt, tuple(preempt_values), (*path, "whenCanPreempt"))
    preference = body.get("preference")
    if preference is not None:
        _choice(
            required_string(preference, (*path, "preference")), _PREFERENCES, (*path, "preference")
        )
        if not (when_borrow == TRY_NEXT_FLAVOR and when_preempt == TRY_NEXT_FLAVOR):
            raise FieldError(
                (*path, "preference"),
                "preference can only be set when both whenCanBorrow and whenCanPreempt are "
                "TryNextFlavor",
            )
    return FlavorFungibility(borrow_values[when_borrow], preempt_values[when_preempt], preference)


def parse_cluster_queue(obj: object) -> ClusterQueue:
    body, name, version = _header(obj, "ClusterQueue")

    def parse() -> ClusterQueue:
        spec = optional_mapping(body.get("spec"), ("spec",))
        cohort_key = "cohort" if version.endswith("v1beta1") else "cohortName"
        cohort = string(spec.get(cohort_key), ("spec", cohort_key)) or string(
            spec.get("cohortName" if cohort_key == "cohort" else "cohort"), ("spec", cohort_key)
        )
        groups = _resource_groups(spec.get("resourceGroups"), ("spec", "resourceGroups"))
        if not cohort:
            for i, group in enumerate(groups):
                for j, flavor in enumerate(group.flavors):
                    for k, quota in enumerate(flavor.resources.values()):
                        if quota.borrowing_limit is not None:
                            raise FieldError(
                                (
                                    "spec",
                                    "resourceGroups",
                                    i,
                                    "flavors",
                                    j,
                                    "resources",
                                    k,
                                    "borrowingLimit",
                                ),
                                "borrowingLimit must be nil when cohort is empty",
                            )
        strategy = _choice(
            string(spec.get("queueingStrategy"), ("spec", "queueingStrategy"), BEST_EFFORT_FIFO),
            _STRATEGIES,
            ("spec", "queueingStrategy"),
        )
        stop = _choice(
            string(spec.get("stopPolicy"), ("spec", "stopPolicy"), "None"),
            _STOP_POLICIES,
            ("spec", "stopPolicy"),
        )
        return ClusterQueue(
            name=name,
            resource_groups=groups,
            cohort=cohort or None,
            queueing_strategy=strategy,
            preemption=_preemption(spec.get("preemption"), ("spec", "preemption")),
            flavor_fungibility=_fungibility(
                spec.get("flavorFungibility"), ("spec", "flavorFungibility"), version
            ),
            fair_weight=_weight(spec.get("fairSharing"), ("spec", "fairSharing")),
            active=stop == "None",
            # nil selects no namespace, {} every namespace (LabelSelectorAsSelector)
            namespace_selector=parse_label_selector(
                spec.get("namespaceSelector"), ("spec", "namespaceSelector")
            ),
        )

    return _named("ClusterQueue", name, parse)


def parse_cohort(obj: object) -> Cohort:
    body, name, _ = _header(obj, "Cohort")

    def parse() -> Cohort:
        spec = optional_mapping(body.get("spec"), ("spec",))
        parent = string(spec.get("parentName"), ("spec", "parentName")) or string(
            spec.get("parent"), ("spec", "parent")
        )
        if parent == name:
            raise FieldError(("spec", "parentName"), "a cohort cannot be its own parent")
        return Cohort(
            name,
            parent or None,
            _resource_groups(spec.get("resourceGroups"), ("spec", "resourceGroups")),
            _weight(spec.get("fairSharing"), ("spec", "fairSharing")),
        )

    return _named("Cohort", name, parse)


def parse_local_queue(obj: object) -> LocalQueue:
    body, name, _ = _header(obj, "LocalQueue")

    def parse() -> LocalQueue:
        meta = optional_mapping(body.get("metadata"), ("metadata",))
        spec = optional_mapping(body.get("spec"), ("spec",))
        cq = string(spec.get("clusterQueue"), ("spec", "clusterQueue"))
        if not cq:
            raise FieldError(("spec", "clusterQueue"), "a LocalQueue needs a clusterQueue")
        namespace = string(meta.get("namespace"), ("metadata", "namespace"), "default") or "default"
        return LocalQueue(namespace, name, cq)

    return _named("LocalQueue", name, parse)


def parse_workload_priority_class(obj: object) -> WorkloadPriorityClass:
    body, name, _ = _header(obj, "WorkloadPriorityClass")
    return _named(
        "WorkloadPriorityClass",
        name,
        lambda: WorkloadPriorityClass(name, integer(body.get("value"), ("value",), bits=32)),
    )


@dataclass(frozen=True, slots=True)
class ParsedWorkload:
    workload: Workload
    admission: Admission | None  # present when the workload holds quota
    reserved_at: int | None
    active: bool
    finished: bool
    priority_class: str | None  # to resolve when spec.priority is not set


def _pod_set(obj: object, path: Sequence[PathPart]) -> PodSet:
    body = mapping(obj, path)
    name = string(body.get("name"), (*path, "name"), "main") or "main"
    count = integer(body.get("count"), (*path, "count"), 1, bits=32)
    if count < 0:
        raise FieldError((*path, "count"), f"must be greater than or equal to 0, got {count}")
    min_count = optional_integer(body.get("minCount"), (*path, "minCount"), bits=32)
    if min_count is not None and not 0 <= min_count <= count:
        raise FieldError((*path, "minCount"), f"must be between 0 and count ({count})")
    template = optional_mapping(body.get("template"), (*path, "template"))
    spec_path = (*path, "template", "spec")
    spec = optional_mapping(template.get("spec"), spec_path)
    # Kueue sums a PodSet's requests with component-helpers PodRequests and its default
    # options, so pod-level resources (spec.resources, KEP-2837) replace the containers' sum
    requests = pod_requests(parse_pod_resources(spec, spec_path), pod_level_resources=True)
    affinity = optional_mapping(spec.get("affinity"), (*spec_path, "affinity"))
    node_affinity = optional_mapping(
        affinity.get("nodeAffinity"), (*spec_path, "affinity", "nodeAffinity")
    )
    required_key = "requiredDuringSchedulingIgnoredDuringExecution"
    required = parse_node_selector(
        node_affinity.get(required_key), (*spec_path, "affinity", "nodeAffinity", required_key)
    )
    return PodSet(
        name=name,
        count=count,
        requests=requests,
        min_count=min_count,
        node_selector=string_map(spec.get("nodeSelector"), (*spec_path, "nodeSelector")),
        required_affinity=required,
        tolerations=tuple(parse_tolerations(spec.get("tolerations"), (*spec_path, "tolerations"))),
    )


def _admission(obj: object, path: Sequence[PathPart], pod_sets: Sequence[PodSet]) -> Admission:
    body = mapping(obj, path)
    cq = string(body.get("clusterQueue"), (*path, "clusterQueue"))
    if not cq:
        raise FieldError((*path, "clusterQueue"), "an admission needs a clusterQueue")
    counts = {ps.name: ps.count for ps in pod_sets}
    assignments = []
    for i, raw in enumerate(
        optional_list(body.get("podSetAssignments"), (*path, "podSetAssignments"))
    ):
        apath = (*path, "podSetAssignments", i)
        psa = mapping(raw, apath)
        name = string(psa.get("name"), (*apath, "name"), "main") or "main"
        if name not in counts:
            raise FieldError((*apath, "name"), f"no pod set named {name!r}")
        flavors = string_map(psa.get("flavors"), (*apath, "flavors"))
        usage_raw = optional_mapping(psa.get("resourceUsage"), (*apath, "resourceUsage"))
        usage = {r: _amount(r, v, (*apath, "resourceUsage", r)) for r, v in usage_raw.items()}
        count = integer(psa.get("count"), (*apath, "count"), counts[name], bits=32)
        assignments.append(PodSetAdmission(name, flavors, count, usage))
    return Admission(cq, tuple(assignments))


def _condition_true(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for i, raw in enumerate(optional_list(status.get("conditions"), ("status", "conditions"))):
        cond = mapping(raw, ("status", "conditions", i))
        if cond.get("type") == kind and cond.get("status") == "True":
            return cond
    return None


def parse_workload(obj: object) -> ParsedWorkload:
    body, name, version = _header(obj, "Workload")

    def parse() -> ParsedWorkload:
        meta = optional_mapping(body.get("metadata"), ("metadata",))
        spec = optional_mapping(body.get("spec"), ("spec",))
        status = optional_mapping(body.get("status"), ("status",))
        raw_pod_sets = optional_list(spec.get("podSets"), ("spec", "podSets"))
        if not raw_pod_sets:
            raise FieldError(("spec", "podSets"), "a Workload needs at least one pod set")
        pod_sets = tuple(_pod_set(p, ("spec", "podSets", i)) for i, p in enumerate(raw_pod_sets))
        names = [ps.name for ps in pod_sets]
        if len(set(names)) != len(names):
            raise FieldError(("spec", "podSets"), "pod set names must be unique")
        priority = optional_integer(spec.get("priority"), ("spec", "priority"), bits=32)
        if version.endswith("v1beta1"):
            priority_class = string(spec.get("priorityClassName"), ("spec", "priorityClassName"))
        else:
            ref = optional_mapping(spec.get("priorityClassRef"), ("spec", "priorityClassRef"))
            priority_class = string(ref.get("name"), ("spec", "priorityClassRef", "name"))
        workload = Workload(
            name=name,
            pod_sets=pod_sets,
            namespace=string(meta.get("namespace"), ("metadata", "namespace"), "default")
            or "default",
            queue_name=string(spec.get("queueName"), ("spec", "queueName")),
            priority=priority or 0,
            creation_time=_timestamp(
                meta.get("creationTimestamp"), ("metadata", "creationTimestamp")
            )
            or 0,
            uid=string(meta.get("uid"), ("metadata", "uid")),
        )
        reserved = _condition_true(status, "QuotaReserved")
        admission = None
        reserved_at = None
        if reserved is not None and status.get("admission") is not None:
            admission = _admission(status["admission"], ("status", "admission"), pod_sets)
            reserved_at = _timestamp(reserved.get("lastTransitionTime"), ("status", "conditions"))
        active = spec.get("active", True) is not False
        return ParsedWorkload(
            workload,
            admission,
            reserved_at,
            active,
            _condition_true(status, "Finished") is not None,
            priority_class if priority is None and priority_class else None,
        )

    return _named("Workload", name, parse)


# --- a whole snapshot --------------------------------------------------------------------------

_PARSERS: dict[str, Callable[[object], Any]] = {
    "ResourceFlavor": parse_resource_flavor,
    "ClusterQueue": parse_cluster_queue,
    "Cohort": parse_cohort,
    "LocalQueue": parse_local_queue,
    "WorkloadPriorityClass": parse_workload_priority_class,
    "Workload": parse_workload,
}


def _namespace_labels(obj: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    meta = optional_mapping(obj.get("metadata"), ("metadata",))
    name = required_string(meta.get("name"), ("metadata", "name"))
    return name, string_map(meta.get("labels"), ("metadata", "labels"))


def load_state(
    objects: Iterable[Mapping[str, Any]],
    *,
    fair_sharing: FairSharingConfig | None = None,
    now: int = 0,
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
) -> AdmissionState:
    """Build an AdmissionState from Kueue objects (and core v1 Namespaces; other kinds are
    ignored). Cross-object references are checked before anything is built. Admitted
    workloads keep their quota; pending ones are queued; finished or inactive ones are left
    out. `namespaces` (name -> labels) adds to the Namespace objects; with neither, the
    ClusterQueues' namespaceSelectors are not evaluated (the namespaces are unknown)."""
    parsed: dict[str, list[Any]] = {kind: [] for kind in _PARSERS}
    known_namespaces = dict(namespaces) if namespaces is not None else None
    for obj in objects:
        kind = obj.get("kind") if isinstance(obj, Mapping) else None
        if kind == "Namespace" and obj.get("apiVersion") == "v1":
            name, labels = _namespace_labels(obj)
            known_namespaces = {**(known_namespaces or {}), name: labels}
            continue
        parser = _PARSERS.get(kind) if isinstance(kind, str) else None
        if parser is not None:
            parsed[kind].append(parser(obj))
    flavors = {f.name: f for f in parsed["ResourceFlavor"]}
    cqs = {c.name: c for c in parsed["ClusterQueue"]}
    classes = {c.name: c.value for c in parsed["WorkloadPriorityClass"]}
    local_queues = {lq.key: lq for lq in parsed["LocalQueue"]}
    for cq in cqs.values():
        for i, group in enumerate(cq.resource_groups):
            for j, flavor in enumerate(group.flavors):
                if flavor.name not in flavors:
                    raise FieldError(
                        ("spec", "resourceGroups", i, "flavors", j, "name"),
                        f"ClusterQueue {cq.name!r}: ResourceFlavor {flavor.name!r} not found",
                    )
    for cohort in parsed["Cohort"]:
        for i, group in enumerate(cohort.resource_groups):
            for j, flavor in enumerate(group.flavors):
                if flavor.name not in flavors:
                    raise FieldError(
                        ("spec", "resourceGroups", i, "flavors", j, "name"),
                        f"Cohort {cohort.name!r}: ResourceFlavor {flavor.name!r} not found",
                    )
    admitted = []
    pending = []
    for item in parsed["Workload"]:
        workload = item.workload
        if item.finished or not item.active:
            continue
        if item.priority_class is not None:
            if item.priority_class not in classes:
                raise FieldError(
                    ("spec", "priorityClassRef", "name"),
                    f"Workload {workload.key!r}: WorkloadPriorityClass "
                    f"{item.priority_class!r} not found",
                )
            workload = _with_priority(workload, classes[item.priority_class])
        if item.admission is not None:
            if item.admission.cluster_queue not in cqs:
                raise FieldError(
                    ("status", "admission", "clusterQueue"),
                    f"Workload {workload.key!r}: ClusterQueue "
                    f"{item.admission.cluster_queue!r} not found",
                )
            spec = cqs[item.admission.cluster_queue]
            known = {f for g in spec.resource_groups for f in g.flavor_names}
            for i, psa in enumerate(item.admission.pod_sets):
                for resource, flavor in psa.flavors.items():
                    if flavor not in known:
                        raise FieldError(
                            ("status", "admission", "podSetAssignments", i, "flavors", resource),
                            f"Workload {workload.key!r}: flavor {flavor!r} is not in "
                            f"ClusterQueue {spec.name!r}",
                        )
            admitted.append((workload, item.admission, item.reserved_at))
        else:
            if f"{workload.namespace}/{workload.queue_name}" not in local_queues:
                raise FieldError(
                    ("spec", "queueName"),
                    f"Workload {workload.key!r}: LocalQueue {workload.queue_name!r} not found "
                    f"in namespace {workload.namespace!r}",
                )
            pending.append(workload)
    state = AdmissionState(
        resource_flavors=flavors.values(),
        cluster_queues=cqs.values(),
        cohorts=parsed["Cohort"],
        local_queues=local_queues.values(),
        fair_sharing=fair_sharing,
        namespaces=known_namespaces,
    )
    for workload, admission, reserved_at in admitted:
        state.restore_admitted(workload, admission, reserved_at if reserved_at is not None else now)
    for workload in sorted(pending, key=lambda w: (w.creation_time, w.uid, w.key)):
        state.submit(workload)
    return state


def _with_priority(workload: Workload, priority: int) -> Workload:
    return Workload(
        workload.name,
        workload.pod_sets,
        workload.namespace,
        workload.queue_name,
        priority,
        workload.creation_time,
        workload.uid,
    )
