"""Unit tests for gpupact.kube.validation (field.Error rendering and API-server name rules)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpupact.errors import FieldError
from gpupact.kube.validation import (
    FIELD_VALUE_INVALID,
    FIELD_VALUE_TOO_LONG,
    FieldIssue,
    Subscript,
    check_label_key,
    check_label_value,
    check_supported,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    duplicate_issue,
    forbidden_issue,
    invalid_issue,
    is_qualified_name,
    label_key_errors,
    label_value_errors,
    not_supported_issue,
    required_issue,
    supported_values,
    upstream_field_path,
)
from gpupact.kube.validation_objects import check_node, check_pod, node_issues, pod_issues


def test_field_path_renders_keys_in_brackets() -> None:
    assert upstream_field_path(("spec", "values", 0, Subscript("a.b/c"))) == "spec.values[0][a.b/c]"
    assert upstream_field_path(()) == ""


def test_error_bodies_match_apimachinery() -> None:
    assert invalid_issue(("a",), "x", "bad").body == 'Invalid value: "x": bad'
    assert invalid_issue(("a",), 0, "must be greater than zero").body == (
        "Invalid value: 0: must be greater than zero"
    )
    assert invalid_issue(("a",), ("x", "y"), "d").body == 'Invalid value: ["x","y"]: d'
    assert invalid_issue(("a",), None, "d").body == "Invalid value: null: d"
    assert required_issue(("a",)).body == "Required value"
    assert required_issue(("a",), "can not be empty").body == "Required value: can not be empty"
    assert duplicate_issue(("a",), "{k, e}").body == 'Duplicate value: "{k, e}"'
    assert not_supported_issue(("op",), "Near", ("In", "NotIn")).body == (
        'Unsupported value: "Near": supported values: "In", "NotIn"'
    )
    issue = FieldIssue(FIELD_VALUE_INVALID, ("spec", 1), "x", "")
    assert str(issue) == 'spec[1]: Invalid value: "x"'
    assert issue.prefixed(("root",)).path == ("root", "spec", 1)


def test_unserialisable_value_falls_back_to_repr() -> None:
    assert invalid_issue((), {1, 2}, "d").body == 'Invalid value: "{1, 2}": d'


def test_as_error_is_a_field_error_with_the_body() -> None:
    err = invalid_issue(("k",), "v", "d").as_error()
    assert isinstance(err, FieldError)
    assert err.path == ("k",)
    assert err.message == 'Invalid value: "v": d'


def test_supported_values_keeps_order() -> None:
    assert supported_values(("b", "a")) == 'supported values: "b", "a"'


def test_check_supported() -> None:
    check_supported("a", ("a", "b"), ("f",))
    with pytest.raises(FieldError) as err:
        check_supported("c", ("a", "b"), ("f",))
    assert err.value.path == ("f",)
    assert err.value.message == 'Unsupported value: "c": supported values: "a", "b"'


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("a", True),
        ("example.com/MyName", True),
        ("my.name_x-1", True),
        ("x" * 63, True),
        ("p" * 253 + "/x", True),
        ("p" * 254 + "/x", False),
        ("x" * 64, False),
        ("", False),
        ("/a", False),
        ("a/", False),
        ("a/b/c", False),
        ("Example.com/a", False),
        ("-a", False),
        ("a b", False),
        ("é", False),
        ("a\n", False),
    ],
)
def test_qualified_names(name: str, valid: bool) -> None:
    assert is_qualified_name(name) is valid
    assert (label_key_errors(name) == []) is valid


def test_label_key_detail_strings_are_upstream() -> None:
    assert label_key_errors("/a") == ["prefix part must be non-empty"]
    assert label_key_errors("x" * 64) == ["name part must be no more than 63 bytes"]
    (detail,) = label_key_errors("a/b/c")
    assert detail.startswith("a valid label key must consist of alphanumeric characters")
    assert detail.endswith(
        "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    )


def test_label_values() -> None:
    assert label_value_errors("") == []
    assert label_value_errors("v-1.x_y") == []
    assert label_value_errors("v" * 64) == ["must be no more than 63 bytes"]
    assert label_value_errors(" v")[0].startswith("a valid label must be an empty string")


def test_checks_raise_invalid_with_every_reason() -> None:
    check_label_key("example.com/k", ("key",))
    check_label_value("", ("value",))
    with pytest.raises(FieldError) as err:
        check_label_key("example.com/", ("key",))
    assert err.value.path == ("key",)
    assert err.value.message.startswith(
        'Invalid value: "example.com/": name part must be non-empty; '
    )
    with pytest.raises(FieldError) as err:
        check_label_value("-" * 64, ("value",))
    assert err.value.message.startswith('Invalid value: "' + "-" * 64 + '": must be no more than')


# --- DNS names and the valueless error types -------------------------------------------------


def test_dns_names() -> None:
    assert dns1123_label_errors("my-name") == []
    assert dns1123_label_errors("a.b") == ["must not contain dots"]
    assert dns1123_label_errors("My").pop().startswith("a lowercase RFC 1123 label must")
    assert dns1123_label_errors("a" * 64)[0] == "must be no more than 63 bytes"
    assert dns1123_subdomain_errors("a.b-c") == []
    assert dns1123_subdomain_errors("a_b").pop().startswith("a lowercase RFC 1123 subdomain")
    assert dns1123_subdomain_errors("a" * 254)[0] == "must be no more than 253 bytes"


def test_forbidden_and_too_long_bodies_leave_the_value_out() -> None:
    assert forbidden_issue(("a",), "no").body == "Forbidden: no"
    issue = FieldIssue(FIELD_VALUE_TOO_LONG, ("a",), "x" * 9, "may not be more than 8 bytes")
    assert issue.body == "Too long: may not be more than 8 bytes"


# --- create-time validation of Pods and Nodes (validation_objects) -----------------------------


def _pod(container: dict | None = None, **spec) -> dict:
    body = {"name": "c", "image": "registry.example/x:1", **(container or {})}
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [body], **spec}}


def _first(obj: dict) -> str:
    issues = pod_issues(obj)
    return str(issues[0]) if issues else ""


def _requirement(**req) -> dict:
    term = {"matchExpressions": [{"key": "zone", **req}]}
    required = {"nodeSelectorTerms": [term]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


_EXPR = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
_EXPR += ".nodeSelectorTerms[0].matchExpressions[0]"


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        ({"operator": "In", "values": ["a"]}, ""),
        ({"operator": "Gt", "values": ["3"]}, ""),
        (
            {"operator": "Within", "values": ["a"]},
            f'{_EXPR}.operator: Invalid value: "Within": not a valid selector operator',
        ),
        (
            {"operator": "in", "values": ["a"]},  # operators are case-sensitive
            f'{_EXPR}.operator: Invalid value: "in": not a valid selector operator',
        ),
        (
            {"operator": "NotIn"},
            f"{_EXPR}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            {"operator": "DoesNotExist", "values": ["a"]},
            f"{_EXPR}.values: Forbidden: may not be specified when `operator` is 'Exists' or "
            "'DoesNotExist'",
        ),
        (
            {"operator": "Lt", "values": ["1", "2"]},
            f"{_EXPR}.values: Required value: must be specified single value when `operator` is "
            "'Lt' or 'Gt'",
        ),
        (
            {"operator": "In", "values": ["a b"]},
            f'{_EXPR}.values[0]: Invalid value: "a b": a valid label must be an empty string',
        ),
    ],
)
def test_node_selector_requirements(requirement: dict, expected: str) -> None:
    assert _first(_pod(affinity=_requirement(**requirement))).startswith(expected)
    assert bool(_first(_pod(affinity=_requirement(**requirement)))) == bool(expected)


def test_node_selector_terms_fields_keys_and_preferences() -> None:
    empty = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
    assert _first(_pod(affinity={"nodeAffinity": empty})).endswith(
        "nodeSelectorTerms: Required value: must have at least one node selector term"
    )
    bad_key = _requirement(operator="Exists")
    bad_key["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][
        0
    ]["matchExpressions"][0]["key"] = "-zone"
    assert '.key: Invalid value: "-zone": name part' in _first(_pod(affinity=bad_key))
    fields = {"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["a"]}]}
    required = {"nodeSelectorTerms": [fields]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    assert _first(_pod(affinity=affinity)).endswith(
        'matchFields[0].key: Invalid value: "metadata.uid": not a valid field selector key'
    )
    fields["matchFields"][0].update(key="metadata.name", values=["a", "b"])
    assert "must be only one value when `operator` is 'In' or 'NotIn'" in _first(
        _pod(affinity=affinity)
    )
    # preferred terms: weight 1-100; their values are not label-checked (they only score)
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a b"]}]}
    preferred = {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": term}]
    }
    assert _first(_pod(affinity={"nodeAffinity": preferred})) == ""
    preferred["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] = 101
    assert _first(_pod(affinity={"nodeAffinity": preferred})).endswith(
        "[0].weight: Invalid value: 101: must be in the range 1-100"
    )


_RES = "spec.containers[0].resources"


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2"}}, ""),
        ({"limits": {"nvidia.com/gpu": "2"}}, ""),  # the limit is also the request
        ({"requests": {"nvidia.com/gpu": 2}, "limits": {"nvidia.com/gpu": 2}}, ""),
        (
            {"requests": {"nvidia.com/gpu": "1"}},
            f"{_RES}.limits: Required value: Limit must be set for non overcommitable resources",
        ),
        (
            {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}},
            f'{_RES}.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2',
        ),
        (
            {"requests": {"cpu": "1500m"}, "limits": {"cpu": "1"}},
            f'{_RES}.requests: Invalid value: "1500m": must be less than or equal to cpu limit '
            "of 1",
        ),
        (
            {"limits": {"nvidia.com/gpu": 0.5}},
            f'{_RES}.limits.nvidia.com/gpu: Invalid value: "500m": must be an integer',
        ),
        (
            {"limits": {"gpu": "1"}},
            f'{_RES}.limits.gpu: Invalid value: "gpu": must be a standard resource type or '
            "fully qualified",
        ),
        (
            {"requests": {"pods": "1"}},
            f'{_RES}.requests.pods: Invalid value: "pods": must be a standard resource for '
            "containers",
        ),
        (
            {"limits": {"memory": "1Gi", "hugepages-2Mi": "3Mi"}},
            f'{_RES}.limits.hugepages-2Mi: Invalid value: "3Mi": 3Mi is not positive integer '
            "multiple of hugepages-2Mi",
        ),
        ({"limits": {"memory": "1Gi", "hugepages-2Mi": "4Mi"}}, ""),
        (
            {"limits": {"hugepages-2Mi": "4Mi"}},
            f"{_RES}: Forbidden: HugePages require cpu or memory",
        ),
    ],
)
def test_container_resources(resources: dict, expected: str) -> None:
    got = _first(_pod({"resources": resources}))
    assert got == expected if not expected else got.startswith(expected), got


def test_containers_enums_and_names() -> None:
    assert _first(_pod(restartPolicy="Sometimes")) == (
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
        '"OnFailure", "Never"'
    )
    assert _first(_pod(dnsPolicy="Cluster")).startswith('spec.dnsPolicy: Unsupported value: "Cl')
    assert _first(_pod(preemptionPolicy="Sometimes")).startswith("spec.preemptionPolicy: Unsup")
    assert _first(_pod({"imagePullPolicy": "Maybe"})).startswith(
        'spec.containers[0].imagePullPolicy: Unsupported value: "Maybe"'
    )
    assert _first(_pod({"terminationMessagePolicy": "x"})).startswith(
        "spec.containers[0].terminationMessagePolicy: Unsupported"
    )
    assert _first(_pod({"name": "web.1"})) == (
        'spec.containers[0].name: Invalid value: "web.1": must not contain dots'
    )
    assert _first(_pod({"image": ""})) == "spec.containers[0].image: Required value"
    # ContainerRestartRules (beta, on in v1.35): a container may set its own restart policy
    assert _first(_pod({"restartPolicy": "Never"})) == ""
    assert _first(_pod({"restartPolicy": "Sometimes"})) == (
        'spec.containers[0].restartPolicy: Unsupported value: "Sometimes": supported values: '
        '"Always", "Never", "OnFailure"'
    )
    init = [{"name": "c", "image": "x", "restartPolicy": "Always"}]
    assert _first(_pod(initContainers=init)) == 'spec.initContainers[0].name: Duplicate value: "c"'
    no_containers = {"metadata": {"name": "p"}, "spec": {"containers": []}}
    assert _first(no_containers) == "spec.containers: Required value"


def test_names_labels_gates_and_deadline() -> None:
    assert _first(_pod(priorityClassName="High")).startswith(
        'spec.priorityClassName: Invalid value: "High": a lowercase RFC 1123 subdomain'
    )
    assert _first(_pod(nodeSelector={"zone": "a b"})).startswith(
        'spec.nodeSelector.zone: Invalid value: "a b": a valid label'
    )
    assert _first(_pod(schedulingGates=[{"name": "a"}, {"name": "a"}])) == (
        'spec.schedulingGates[1]: Duplicate value: "a"'
    )
    assert _first(_pod(activeDeadlineSeconds=0)) == (
        "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"
    )
    pod = _pod()
    pod["metadata"] = {"generateName": "web-", "labels": {"app": "x", "-bad": "y"}}
    assert _first(pod).startswith('metadata.labels.-bad: Invalid value: "-bad": name part')
    pod["metadata"] = {"namespace": "ns"}
    assert _first(pod) == "metadata.name: Required value: name or generateName is required"
    pod["metadata"] = {"name": "p", "namespace": "team.a"}
    assert _first(pod) == 'metadata.namespace: Invalid value: "team.a": must not contain dots'
    pod["metadata"] = {"name": "p", "annotations": {"a": "x" * (256 * 1024)}}
    assert _first(pod) == "metadata.annotations: Too long: may not be more than 262144 bytes"


def test_priority_against_a_system_class() -> None:
    critical = {"priorityClassName": "system-cluster-critical"}
    assert _first(_pod(**critical, priority=2_000_000_000)) == ""
    assert _first(_pod(**critical, priority=7)) == (
        "spec.priority: Forbidden: the integer value of priority (7) must not be provided in "
        "pod spec; priority admission controller computed 2000000000 from the given "
        "PriorityClass name"
    )
    # another class resolves from the cluster's PriorityClass objects: not checked here
    assert _first(_pod(priorityClassName="online-high", priority=7)) == ""


def test_the_committed_example_pod_is_valid() -> None:
    import yaml

    example = Path(__file__).resolve().parents[2] / "examples/fit/pod.yaml"
    assert pod_issues(yaml.safe_load(example.read_text())) == []


def test_nodes_integer_resources_and_labels() -> None:
    node = {
        "metadata": {"name": "n1", "labels": {"zone": "a"}},
        "status": {"allocatable": {"cpu": "7500m", "nvidia.com/gpu": "8", "pods": "110"}},
    }
    assert node_issues(node) == []
    node["status"]["capacity"] = {"nvidia.com/gpu": "1500m"}
    assert [str(i) for i in node_issues(node)] == [
        'status.capacity.nvidia.com/gpu: Invalid value: "1500m": must be an integer'
    ]
    node["status"]["capacity"] = {"pods": "0.5"}
    assert str(node_issues(node)[0]).endswith('"500m": must be an integer')
    node["metadata"]["labels"] = {"zone": "a b"}
    assert str(node_issues(node)[0]).startswith('metadata.labels.zone: Invalid value: "a b"')


def test_check_raises_the_first_issue_as_a_field_error() -> None:
    with pytest.raises(FieldError) as err:
        check_pod(_pod(restartPolicy="x"))
    assert err.value.path == ("spec", "restartPolicy")
    assert err.value.message.startswith('Unsupported value: "x"')
    check_node({"metadata": {"name": "n"}})


@pytest.mark.parametrize(
    ("pod_level", "container", "expected"),
    [
        ({"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}}, {}, ""),
        (
            {"requests": {"cpu": "3"}, "limits": {"cpu": "2"}},
            {},
            'spec.resources.requests: Invalid value: "3": must be less than or equal to cpu '
            "limit of 2",
        ),
        (
            # the containers ask 1500m in all: an explicit pod request below that is refused
            {"requests": {"cpu": "1"}},
            {"requests": {"cpu": "1500m"}},
            'spec.resources.requests.cpu: Invalid value: "1": must be greater than or equal to '
            "aggregate container requests of 1500m",
        ),
        (
            # no pod request: it defaults to the containers' 3, over the pod limit of 2
            {"limits": {"cpu": "2"}},
            {"requests": {"cpu": "3"}},
            'spec.resources.requests: Invalid value: "3": must be less than or equal to cpu '
            "limit of 2",
        ),
        (
            {"requests": {"memory": "1Gi"}, "limits": {"memory": "1Gi"}},
            {"requests": {"memory": "512Mi"}, "limits": {"memory": "2Gi"}},
            'spec.containers[0].resources.limits.memory: Invalid value: "2Gi": must be less than '
            "or equal to pod limits of 1Gi",
        ),
        (
            {"limits": {"nvidia.com/gpu": "1"}},
            {},
            'spec.resources.limits.nvidia.com/gpu: Unsupported value: "nvidia.com/gpu": '
            'supported values: "cpu", "hugepages-", "memory"',
        ),
        (
            {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]},
            {},
            "spec.resources.claims: Forbidden: claims may not be set for Resources at pod-level",
        ),
    ],
)
def test_pod_level_resources(pod_level: dict, container: dict, expected: str) -> None:
    pod = _pod({"resources": container}, resources=pod_level)
    assert _first(pod) == expected
    windows = _pod(resources=pod_level, os={"name": "windows"})
    assert _first(windows) == "spec.resources: Forbidden: may not be set for a windows pod"
