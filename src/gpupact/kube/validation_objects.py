"""What the API server would refuse in a Pod or a Node a user is about to create.

The parsers (`objects.parse_pod`, `parse_node`) check shapes and the rules the scheduler
relies on (taints, tolerations, topology spread, pod affinity); they keep what the scheduler
tolerates, e.g. a node-affinity operator it cannot read only fails to match. These functions
add the rest of create-time validation, on the raw object after it parsed, so a manifest the
API server would reject is refused instead of explained node by node.

Reference: kubernetes v1.35.4 pkg/apis/core/validation/validation.go ("validation.go L<a>-<b>"
below; read in the copy vendored by openshift-kni/scheduler-plugins at e0b47cd), its
pkg/apis/core/helper/helpers.go (resource name classes), apimachinery v0.35.4
api/validation/objectmeta.go (ValidateObjectMeta, ValidateAnnotations: L44-L56) and
plugin/pkg/admission/priority admitPod (spec.priority against its class). Feature gates at
their v1.35 defaults (ContainerRestartRules beta, on). Checked after SetDefaults_Pod, as the
API server does: an omitted restartPolicy, dnsPolicy, imagePullPolicy or
terminationMessagePolicy is defaulted, not missing, and a limit without a request is also the
request.

Not checked: volumes, probes, lifecycle hooks, ports, env, security contexts, overhead (the
RuntimeClass admission sets it) and anything an admission webhook or a LimitRange decides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from gpupact.errors import FieldError, PathPart
from gpupact.kube.quantity import Quantity, QuantityError, format_resource_amount
from gpupact.kube.requests import (
    HUGEPAGES_PREFIX,
    aggregate_containers,
    is_extended_resource_name,
    is_hugepages_resource_name,
    is_native_resource,
    is_supported_pod_level_resource,
    parse_pod_resources,
)
from gpupact.kube.selectors import FIELD_SELECTOR_OPERATORS, IN, NOT_IN
from gpupact.kube.validation import (
    FIELD_VALUE_TOO_LONG,
    FieldIssue,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    duplicate_issue,
    forbidden_issue,
    invalid_issue,
    label_key_errors,
    label_value_errors,
    not_supported_issue,
    required_issue,
)

Path = tuple[PathPart, ...]

# --- enumerations (pkg/apis/core/types.go), in the order upstream lists them ------------------

RESTART_POLICIES = ("Always", "OnFailure", "Never")  # validateRestartPolicy, L4072-L4085
# validateDNSPolicy, L4100-L4111
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")  # ValidatePreemptionPolicy, L4087-L4098
PULL_POLICIES = ("Always", "Never", "IfNotPresent")  # validatePullPolicy, L3612-L3625 (sorted)
# validateContainerCommon, L3876-L3917
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
# a container's own restartPolicy (supportedContainerRestartPolicies L3662, listed sorted;
# validateContainerRestartPolicy L3683-L3723, validateInitContainerRestartPolicy L3317-L3348)
CONTAINER_RESTART_POLICIES = ("Always", "Never", "OnFailure")
_NODE_FIELD_KEYS = ("metadata.name",)  # nodeFieldSelectorValidators

# pkg/apis/scheduling: SystemCriticalPriority = 2 x HighestUserDefinablePriority (1e9); the
# node-critical class is 1000 above it. The admission plugin resolves these names itself.
SYSTEM_PRIORITY_CLASSES = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
TOTAL_ANNOTATION_SIZE = 256 * 1024  # apimachinery TotalAnnotationSizeLimitB
MAX_INT32 = 2**31 - 1

# helpers.go standardContainerResources L166-L170 (plus hugepages-*), standardResources L249-L270
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
        "services.nodeports",
        "services.loadbalancers",
    }
)
# helpers.go integerResources L277-L287: whole units (extended resources too, L290)
_INTEGER_RESOURCES = frozenset(
    {
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
_QOS_RESOURCES = frozenset({"cpu", "memory"})


def _map(obj: Any) -> Mapping[str, Any]:
    return obj if isinstance(obj, Mapping) else {}


def _items(obj: Any) -> list[Any]:
    return obj if isinstance(obj, list) else []


def _text(obj: Any) -> str:
    return obj if isinstance(obj, str) else ""


def _name_issues(path: Path, value: str, errors: list[str]) -> list[FieldIssue]:
    return [invalid_issue(path, value, msg) for msg in errors]


# --- metadata (apimachinery ValidateObjectMeta, ValidateLabels, ValidateAnnotations) ----------


def _mask_trailing_dash(name: str) -> str:
    """NameIsDNSSubdomain(prefix=true): a generateName may end in '-' (a suffix follows)."""
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


def metadata_issues(
    meta: Mapping[str, Any], *, namespaced: bool, check_name: bool = True
) -> list[FieldIssue]:
    """ValidateObjectMeta with NameIsDNSSubdomain (Pods, Nodes), the namespace a DNS label,
    label keys qualified names and values label values, annotation keys qualified names
    (lower-cased) within 256 KiB in all."""
    at: Path = ("metadata",)
    issues: list[FieldIssue] = []
    generate = _text(meta.get("generateName"))
    if generate and check_name:
        errors = dns1123_subdomain_errors(_mask_trailing_dash(generate))
        issues += _name_issues((*at, "generateName"), generate, errors)
    name = _text(meta.get("name"))
    if not name and not generate:
        issues.append(required_issue((*at, "name"), "name or generateName is required"))
    elif name and check_name:
        issues += _name_issues((*at, "name"), name, dns1123_subdomain_errors(name))
    namespace = _text(meta.get("namespace"))
    if namespaced and namespace:
        issues += _name_issues((*at, "namespace"), namespace, dns1123_label_errors(namespace))
    issues += labels_issues(_map(meta.get("labels")), (*at, "labels"))
    annotations = _map(meta.get("annotations"))
    total = 0
    for key, value in annotations.items():
        key_path = (*at, "annotations", key)
        issues += _name_issues(key_path, key, label_key_errors(key.lower()))
        total += len(key.encode()) + len(_text(value).encode())
    if total > TOTAL_ANNOTATION_SIZE:
        detail = f"may not be more than {TOTAL_ANNOTATION_SIZE} bytes"
        issues.append(FieldIssue(FIELD_VALUE_TOO_LONG, (*at, "annotations"), None, detail))
    return issues


def labels_issues(labels: Mapping[str, Any], path: Path) -> list[FieldIssue]:
    """ValidateLabels: every key a qualified name, every value a label value (upstream names
    the map for both; the key is added here so the line can be found)."""
    issues: list[FieldIssue] = []
    for key, value in labels.items():
        issues += _name_issues((*path, key), key, label_key_errors(key))
        text = _text(value)
        issues += _name_issues((*path, key), text, label_value_errors(text))
    return issues


# --- node selectors: ValidateNodeSelectorRequirement L4956-L4985,
#     ValidateNodeFieldSelectorRequirement L4992-L5016, ValidateNodeSelectorTerm L5019-L5031,
#     ValidateNodeSelector L5034-L5047, ValidatePreferredSchedulingTerms L5136-L5149,
#     validateNodeAffinity L5209-L5222 ---------------------------------------------------------


def node_selector_requirement_issues(
    requirement: Mapping[str, Any], path: Path, *, check_values: bool
) -> list[FieldIssue]:
    """In / NotIn need values, Exists / DoesNotExist take none, Gt / Lt exactly one; any other
    operator is "not a valid selector operator"; the key a qualified name and (for required
    terms) every value a label value."""
    issues: list[FieldIssue] = []
    operator = _text(requirement.get("operator"))
    values = [_text(v) for v in _items(requirement.get("values"))]
    if operator in (IN, NOT_IN):
        if not values:
            detail = "must be specified when `operator` is 'In' or 'NotIn'"
            issues.append(required_issue((*path, "values"), detail))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            issues.append(forbidden_issue((*path, "values"), detail))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            detail = "must be specified single value when `operator` is 'Lt' or 'Gt'"
            issues.append(required_issue((*path, "values"), detail))
    else:
        issues.append(invalid_issue((*path, "operator"), operator, "not a valid selector operator"))
    key = _text(requirement.get("key"))
    issues += _name_issues((*path, "key"), key, label_key_errors(key))
    if check_values:
        for i, value in enumerate(values):
            issues += _name_issues((*path, "values", i), value, label_value_errors(value))
    return issues


def node_field_requirement_issues(requirement: Mapping[str, Any], path: Path) -> list[FieldIssue]:
    """matchFields: In / NotIn with exactly one value, only `metadata.name`, whose value is a
    node name (a DNS subdomain)."""
    issues: list[FieldIssue] = []
    operator = _text(requirement.get("operator"))
    values = [_text(v) for v in _items(requirement.get("values"))]
    if operator in FIELD_SELECTOR_OPERATORS:
        if len(values) != 1:
            detail = (
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            )
            issues.append(required_issue((*path, "values"), detail))
    else:
        issues.append(invalid_issue((*path, "operator"), operator, "not a valid selector operator"))
    key = _text(requirement.get("key"))
    if key not in _NODE_FIELD_KEYS:
        issues.append(invalid_issue((*path, "key"), key, "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            issues += _name_issues((*path, "values", i), value, dns1123_subdomain_errors(value))
    return issues


def node_selector_term_issues(
    term: Mapping[str, Any], path: Path, *, check_values: bool
) -> list[FieldIssue]:
    issues: list[FieldIssue] = []
    for j, req in enumerate(_items(term.get("matchExpressions"))):
        at = (*path, "matchExpressions", j)
        issues += node_selector_requirement_issues(_map(req), at, check_values=check_values)
    for j, req in enumerate(_items(term.get("matchFields"))):
        issues += node_field_requirement_issues(_map(req), (*path, "matchFields", j))
    return issues


def node_affinity_issues(affinity: Mapping[str, Any], path: Path) -> list[FieldIssue]:
    """Required: at least one term, each validated with its values; preferred: weight 1-100
    and the preference term (label values not checked: such a term can still score)."""
    issues: list[FieldIssue] = []
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms_path = (*path, "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
        terms = _items(_map(required).get("nodeSelectorTerms"))
        if not terms:
            detail = "must have at least one node selector term"
            issues.append(required_issue(terms_path, detail))
        for i, term in enumerate(terms):
            issues += node_selector_term_issues(_map(term), (*terms_path, i), check_values=True)
    preferred_path = (*path, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, item in enumerate(
        _items(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))
    ):
        body = _map(item)
        weight = body.get("weight", 0)
        if isinstance(weight, int) and not 0 < weight <= 100:
            issues.append(
                invalid_issue((*preferred_path, i, "weight"), weight, "must be in the range 1-100")
            )
        preference = _map(body.get("preference"))
        at = (*preferred_path, i, "preference")
        issues += node_selector_term_issues(preference, at, check_values=False)
    return issues


# --- resources: validateResourceRequirements L7826-L7893, validateResourceName L7419-L7435,
#     validateContainerResourceName L7439-L7452, ValidateResourceQuantityValue L8113-L8122,
#     ValidateNonnegativeQuantity L380-L386, validateResourceQuantityHugePageValue L7955-L7965;
#     helpers.go IsNativeResource L198-L201, IsExtendedResourceName L183-L193,
#     IsOvercommitAllowed L205-L208, IsHugePageResourceValueDivisible L43-L54 --------------


def _is_standard_resource(name: str) -> bool:
    return name in _STANDARD_RESOURCES or name.startswith((HUGEPAGES_PREFIX, "requests.hugepages-"))


def _is_integer_resource(name: str) -> bool:
    return name in _INTEGER_RESOURCES or is_extended_resource_name(name)


def _overcommit_allowed(name: str) -> bool:
    return is_native_resource(name) and not is_hugepages_resource_name(name)


def container_resource_name_issues(name: str, path: Path) -> list[FieldIssue]:
    """A qualified name; unprefixed only for cpu, memory, ephemeral-storage and hugepages-*;
    prefixed outside *kubernetes.io/ only as an extended resource."""
    issues = _name_issues(path, name, label_key_errors(name))
    if not issues and "/" not in name and not _is_standard_resource(name):
        issues = [invalid_issue(path, name, "must be a standard resource type or fully qualified")]
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not is_hugepages_resource_name(name):
            issues.append(invalid_issue(path, name, "must be a standard resource for containers"))
    elif not is_native_resource(name) and not is_extended_resource_name(name):
        issues.append(invalid_issue(path, name, "doesn't follow extended resource name standard"))
    return issues


def _quantity(value: Any) -> Quantity | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return Quantity.parse(value if isinstance(value, str) else str(value))
    except QuantityError:
        return None


def quantity_value_issues(name: str, quantity: Quantity, path: Path) -> list[FieldIssue]:
    """ValidateResourceQuantityValue: not negative; whole units for integer resources (the
    object counts and every extended resource, e.g. nvidia.com/gpu)."""
    issues: list[FieldIssue] = []
    if quantity.sign < 0:
        issues.append(invalid_issue(path, str(quantity), "must be greater than or equal to 0"))
    if _is_integer_resource(name) and quantity.milli_value % 1000:
        issues.append(invalid_issue(path, str(quantity), "must be an integer"))
    return issues


def _hugepage_issue(name: str, quantity: Quantity, path: Path) -> FieldIssue | None:
    """IsHugePageResourceValueDivisible: a positive whole page size dividing the amount."""
    size = _quantity(name.removeprefix(HUGEPAGES_PREFIX))
    if (
        size is not None
        and size.sign > 0
        and size.milli_value % 1000 == 0
        and quantity.value % size.value == 0
    ):
        return None
    return invalid_issue(
        path, str(quantity), f"{quantity} is not positive integer multiple of {name}"
    )


def resource_requirements_issues(
    resources: Mapping[str, Any],
    path: Path,
    *,
    name_issues: Callable[[str, Path], list[FieldIssue]] = container_resource_name_issues,
) -> list[FieldIssue]:
    """A container's limits and requests, SetDefaults_Pod applied (a limit without a request
    is also the request)."""
    limits = {k: _quantity(v) for k, v in _map(resources.get("limits")).items()}
    requests = {k: _quantity(v) for k, v in _map(resources.get("requests")).items()}
    requests.update({k: q for k, q in limits.items() if k not in requests})
    return requirements_issues(limits, requests, path, name_issues)


def requirements_issues(
    limits: Mapping[str, Quantity | None],
    requests: Mapping[str, Quantity | None],
    path: Path,
    name_issues: Callable[[str, Path], list[FieldIssue]],
) -> list[FieldIssue]:
    """Names and amounts of limits and requests; a request at most its limit, and equal to it
    for a resource that cannot be overcommitted (extended resources, hugepages), whose limit
    is then required; hugepages only beside cpu or memory."""
    issues: list[FieldIssue] = []
    limits_path, requests_path = (*path, "limits"), (*path, "requests")
    qos_named = hugepages = False
    for name, quantity in limits.items():
        at = (*limits_path, name)
        issues += name_issues(name, at)
        if quantity is None:
            continue
        issues += quantity_value_issues(name, quantity, at)
        if is_hugepages_resource_name(name):
            hugepages = True
            issue = _hugepage_issue(name, quantity, at)
            if issue is not None:
                issues.append(issue)
        qos_named = qos_named or name in _QOS_RESOURCES
    for name, quantity in requests.items():
        at = (*requests_path, name)
        issues += name_issues(name, at)
        if quantity is None:
            continue
        issues += quantity_value_issues(name, quantity, at)
        limit = limits.get(name)
        if name in limits and limit is not None:
            if quantity.compare(limit) != 0 and not _overcommit_allowed(name):
                detail = f"must be equal to {name} limit of {limit}"
                issues.append(invalid_issue(requests_path, str(quantity), detail))
            elif quantity.compare(limit) > 0:
                detail = f"must be less than or equal to {name} limit of {limit}"
                issues.append(invalid_issue(requests_path, str(quantity), detail))
        elif name not in limits and not _overcommit_allowed(name):
            detail = "Limit must be set for non overcommitable resources"
            issues.append(required_issue(limits_path, detail))
        if is_hugepages_resource_name(name):
            hugepages = True
            issue = _hugepage_issue(name, quantity, at)
            if issue is not None:
                issues.append(issue)
        qos_named = qos_named or name in _QOS_RESOURCES
    if hugepages and not qos_named:
        issues.append(forbidden_issue(path, "HugePages require cpu or memory"))
    return issues


# --- pod-level resources (PodLevelResources, beta and on since v1.34): validatePodResources
#     L4736-L4760 and validatePodResourceConsistency L4765-L4840, validatePodResourceName
#     L7457-L7468; component-helpers resource.supportedPodLevelResources (cpu, memory,
#     hugepages-*) -----------------------------------------------------------------------------

POD_LEVEL_RESOURCES_SHOWN = ("cpu", "hugepages-", "memory")  # sets.List(SupportedPodLevel...)


def pod_resource_name_issues(name: str, path: Path) -> list[FieldIssue]:
    issues = _name_issues(path, name, label_key_errors(name))
    if issues:
        return issues
    if "/" not in name and not _is_standard_resource(name):
        return [invalid_issue(path, name, "must be a standard resource type or fully qualified")]
    if not is_supported_pod_level_resource(name):
        return [not_supported_issue(path, name, POD_LEVEL_RESOURCES_SHOWN)]
    return []


def _shown(name: str, amount: int) -> Quantity:
    return Quantity.parse(format_resource_amount(name, amount))


def pod_resources_issues(spec: Mapping[str, Any]) -> list[FieldIssue]:
    """spec.resources after defaulting (a missing pod-level request takes the containers'
    aggregate or the pod-level limit; hugepage limits the containers'), then: not on a
    Windows pod, no claims, names cpu / memory / hugepages-*, the requirements rules, pod
    requests at least the containers' aggregate, hugepage limits at least theirs, and no
    container limit above the pod's (reported at the container's limit, where the file has
    it; upstream names `spec.resources.containers[i][name].limits`)."""
    raw = spec.get("resources")
    if raw is None:
        return []
    at: Path = ("spec", "resources")
    if _map(spec.get("os")).get("name") == "windows":
        return [forbidden_issue(at, "may not be set for a windows pod")]
    body = _map(raw)
    issues: list[FieldIssue] = []
    if body.get("claims") is not None:
        detail = "claims may not be set for Resources at pod-level"
        issues.append(forbidden_issue((*at, "claims"), detail))
    try:
        parsed = parse_pod_resources(spec)
    except FieldError:
        return issues  # the parser reports it
    limits = {k: _quantity(v) for k, v in _map(body.get("limits")).items()}
    explicit = {k: _quantity(v) for k, v in _map(body.get("requests")).items()}
    container_limits = aggregate_containers(
        parsed.containers, parsed.init_containers, lambda c: c.limits
    )
    for name, amount in container_limits.items():  # defaultHugePagePodLimits
        if is_hugepages_resource_name(name) and name not in explicit and name not in limits:
            limits[name] = _shown(name, amount)
    requests = dict(explicit)
    for name, amount in (parsed.pod_level_requests or {}).items():
        requests.setdefault(name, _shown(name, amount))
    issues += requirements_issues(limits, requests, at, pod_resource_name_issues)
    container_requests = aggregate_containers(
        parsed.containers, parsed.init_containers, lambda c: c.requests
    )
    for name, amount in container_requests.items():
        pod_request, total = requests.get(name), _shown(name, amount)
        if pod_request is not None and total.compare(pod_request) > 0:
            detail = f"must be greater than or equal to aggregate container requests of {total}"
            issues.append(invalid_issue((*at, "requests", name), str(pod_request), detail))
    for name, amount in container_limits.items():
        pod_limit, total = limits.get(name), _shown(name, amount)
        hugepage = is_hugepages_resource_name(name)
        if hugepage and pod_limit is not None and total.compare(pod_limit) > 0:
            detail = f"must be greater than or equal to aggregate container limits of {total}"
            issues.append(invalid_issue((*at, "limits", name), str(pod_limit), detail))
    for i, container in enumerate(_items(spec.get("containers"))):
        own = _map(_map(_map(container).get("resources")).get("limits"))
        for name, value in own.items():
            limit, pod_limit = _quantity(value), limits.get(name)
            if limit is not None and pod_limit is not None and limit.compare(pod_limit) > 0:
                where = ("spec", "containers", i, "resources", "limits", name)
                detail = f"must be less than or equal to pod limits of {pod_limit}"
                issues.append(invalid_issue(where, str(limit), detail))
    return issues


# --- containers: validateContainers L4025-L4070, validateInitContainers L3810-L3872,
#     validateContainerCommon L3876-L3917 --------------------------------------------------


PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")  # supportedPortProtocols, as sets.List sorts it
PORT_RANGE = "must be between 1 and 65535, inclusive"  # IsValidPortNum


def _port(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def ports_issues(
    ports: list[Any], path: Path, host_ports: set[str], host_network: bool
) -> list[FieldIssue]:
    """validateContainerPorts, AccumulateUniqueHostPorts (a hostPort once per protocol and
    hostIP among the containers) and validateHostNetwork; the protocol defaults to TCP and,
    with hostNetwork, hostPort to containerPort before validation (SetDefaults_ContainerPort,
    SetDefaults_PodSpec). The NodePorts filter reads these ports: a pod the API server refuses
    must not be placed."""
    issues: list[FieldIssue] = []
    for i, item in enumerate(ports):
        port, at = _map(item), (*path, i)
        number, host = _port(port.get("containerPort")), _port(port.get("hostPort")) or 0
        if not number:
            issues.append(required_issue((*at, "containerPort")))
        elif not 1 <= number <= 65535:
            issues.append(invalid_issue((*at, "containerPort"), number, PORT_RANGE))
        if host_network and not host:
            host = number or 0
        if host and not 1 <= host <= 65535:
            issues.append(invalid_issue((*at, "hostPort"), host, PORT_RANGE))
        protocol = port.get("protocol") or "TCP"
        if protocol not in PORT_PROTOCOLS:
            issues.append(not_supported_issue((*at, "protocol"), protocol, PORT_PROTOCOLS))
        if host:
            key = f"{protocol}/{_text(port.get('hostIP'))}/{host}"
            if key in host_ports:
                issues.append(duplicate_issue((*at, "hostPort"), key))
            host_ports.add(key)
        if host_network and number and host != number:
            detail = "must match `containerPort` when `hostNetwork` is true"
            issues.append(invalid_issue((*at, "hostPort"), host, detail))
    return issues


def _containers_issues(
    containers: list[Any], path: Path, seen: set[str], host_network: bool = False
) -> list[FieldIssue]:
    issues: list[FieldIssue] = []
    host_ports: set[str] = set()
    for i, item in enumerate(containers):
        body = _map(item)
        at = (*path, i)
        name = _text(body.get("name"))
        if not name:
            issues.append(required_issue((*at, "name")))
        else:
            issues += _name_issues((*at, "name"), name, dns1123_label_errors(name))
        if name in seen:
            issues.append(duplicate_issue((*at, "name"), name))
        seen.add(name)
        if not _text(body.get("image")):
            issues.append(required_issue((*at, "image")))
        for key, choices in (
            ("imagePullPolicy", PULL_POLICIES),
            ("terminationMessagePolicy", TERMINATION_MESSAGE_POLICIES),
        ):
            value = body.get(key)
            if value is not None and value not in choices:
                issues.append(not_supported_issue((*at, key), value, choices))
        restart = body.get("restartPolicy")
        if restart is not None and restart not in CONTAINER_RESTART_POLICIES:
            issues.append(
                not_supported_issue((*at, "restartPolicy"), restart, CONTAINER_RESTART_POLICIES)
            )
        resources = _map(body.get("resources"))
        issues += resource_requirements_issues(resources, (*at, "resources"))
        ports = _items(body.get("ports"))
        issues += ports_issues(ports, (*at, "ports"), host_ports, host_network)
    return issues


# --- the pod spec (ValidatePodSpec L4625-L4734; validateSchedulingGates L4142-L4154) and the
#     Priority admission plugin -------------------------------------------------------------


def _enum_issue(spec: Mapping[str, Any], key: str, choices: Sequence[str]) -> Iterator[FieldIssue]:
    value = spec.get(key)
    if value is not None and value not in choices:
        yield not_supported_issue(("spec", key), value, choices)


def pod_spec_issues(spec: Mapping[str, Any]) -> list[FieldIssue]:
    at: Path = ("spec",)
    issues: list[FieldIssue] = []
    containers = _items(spec.get("containers"))
    seen: set[str] = set()
    if not containers:
        issues.append(required_issue((*at, "containers")))
    host_network = spec.get("hostNetwork") is True
    issues += _containers_issues(containers, (*at, "containers"), seen, host_network)
    init = _items(spec.get("initContainers"))
    issues += _containers_issues(init, (*at, "initContainers"), seen, host_network)
    issues += pod_resources_issues(spec)
    issues += _enum_issue(spec, "restartPolicy", RESTART_POLICIES)
    issues += _enum_issue(spec, "dnsPolicy", DNS_POLICIES)
    issues += _enum_issue(spec, "preemptionPolicy", PREEMPTION_POLICIES)
    issues += labels_issues(_map(spec.get("nodeSelector")), (*at, "nodeSelector"))
    node_affinity = _map(spec.get("affinity")).get("nodeAffinity")
    if node_affinity is not None:
        issues += node_affinity_issues(_map(node_affinity), (*at, "affinity", "nodeAffinity"))
    for key, check in (
        ("serviceAccountName", dns1123_subdomain_errors),
        ("nodeName", dns1123_subdomain_errors),
        ("hostname", dns1123_label_errors),
        ("subdomain", dns1123_label_errors),
        ("priorityClassName", dns1123_subdomain_errors),
    ):
        value = _text(spec.get(key))
        if value:
            issues += _name_issues((*at, key), value, check(value))
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= MAX_INT32:
        detail = f"must be between 1 and {MAX_INT32}, inclusive"
        issues.append(invalid_issue((*at, "activeDeadlineSeconds"), deadline, detail))
    gates: set[str] = set()
    for i, gate in enumerate(_items(spec.get("schedulingGates"))):
        name = _text(_map(gate).get("name"))
        issues += _name_issues((*at, "schedulingGates", i), name, label_key_errors(name))
        if name in gates:
            issues.append(duplicate_issue((*at, "schedulingGates", i), name))
        gates.add(name)
    return issues


def priority_issues(spec: Mapping[str, Any]) -> list[FieldIssue]:
    """The Priority admission plugin (admitPod): a spec.priority that differs from the value
    it resolves from priorityClassName is forbidden. Only the system classes resolve without
    the cluster's PriorityClass objects, so only those are checked."""
    priority = spec.get("priority")
    expected = SYSTEM_PRIORITY_CLASSES.get(_text(spec.get("priorityClassName")))
    if not isinstance(priority, int) or expected is None or priority == expected:
        return []
    detail = (
        f"the integer value of priority ({priority}) must not be provided in pod spec; priority "
        f"admission controller computed {expected} from the given PriorityClass name"
    )
    return [forbidden_issue(("spec", "priority"), detail)]


def pod_issues(obj: Mapping[str, Any]) -> list[FieldIssue]:
    """Every create-time refusal of a Pod, in upstream's order (metadata, then spec)."""
    spec = _map(obj.get("spec"))
    return [
        *metadata_issues(_map(obj.get("metadata")), namespaced=True),
        *pod_spec_issues(spec),
        *priority_issues(spec),
    ]


def node_issues(obj: Mapping[str, Any]) -> list[FieldIssue]:
    """ValidateNode (L7178-L7216): metadata, and capacity / allocatable amounts
    (ValidateNodeResources L7219-L7234).
    The name is not re-checked: a snapshot's Node names come from the API server, and here a
    name only labels a row (shown escaped, never sent anywhere)."""
    issues = metadata_issues(_map(obj.get("metadata")), namespaced=False, check_name=False)
    status = _map(obj.get("status"))
    for key in ("capacity", "allocatable"):
        for name, value in _map(status.get(key)).items():
            quantity = _quantity(value)
            if quantity is not None:
                issues += quantity_value_issues(name, quantity, ("status", key, name))
    return issues


def check_pod(obj: Mapping[str, Any]) -> None:
    """Raise the first refusal (FieldError at its field, the upstream message)."""
    _raise_first(pod_issues(obj))


def check_node(obj: Mapping[str, Any]) -> None:
    _raise_first(node_issues(obj))


def _raise_first(issues: list[FieldIssue]) -> None:
    if issues:
        raise FieldError(issues[0].path, issues[0].body)
