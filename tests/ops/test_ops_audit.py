"""`audit` on the fixtures: every discipline check of 43.2-43.6 fires where it should and
nowhere on the healthy cluster; the shortage plan follows the chapter's order."""

from __future__ import annotations

import json
import shutil

import pytest
from ops_helpers import NOW, NOW_TEXT, acme, analysis, fixture, run

from gpupact.ops import Analysis, AuditOptions, Severity, audit, load_snapshot_dir
from gpupact.ops.audit import CHECKS

# fixture -> the (code, subject) pairs audit must report (it may report more)
EXPECTED = {
    "device-plugin-lost": {
        ("ready-node-without-gpus", "node inf-a100-2"),
        ("node-drift", "pool gpu-inference"),
    },
    "node-drift": {("node-drift", "pool gpu-inference")},
    "gang-half-started": {
        ("stale-half-started-gang", "PodGroup finance/llm-70b-tp4-1"),
        ("stale-half-started-gang", "PodGroup ml-platform/lora-a"),
        ("stale-half-started-gang", "PodGroup ml-platform/lora-c"),
    },
    "quota-exhausted": {("zombie-workload", "Workload finance/job-month-end-close-9eb1c")},
    "mis-preemption": {
        ("offline-in-online-pool", "Job search/embedding-hog"),
        ("online-preempted", "pod customer-service/cs-agent-7d9f8b6c4-04521"),
        ("priority-inversion", "PriorityClass batch-urgent"),
    },
    "governance": {
        ("online-pool-untainted", "pool gpu-inference"),
        ("offline-can-enter-online-pool", "Job search/embedding-rebuild"),
        ("offline-can-enter-online-pool", "Job ml-platform/lora-finetune"),
        ("online-on-time-sliced-gpu", "Deployment customer-service/faq-bot"),
        ("gpu-requests-not-limits", "Job ml-platform/hparam-sweep (template 0)"),
        ("gpu-pod-not-guaranteed", "Deployment customer-service/faq-bot"),
        ("missing-owner-labels", "Job search/embedding-rebuild"),
        ("missing-owner-labels", "Deployment customer-service/faq-bot"),
        ("missing-owner-labels", "ClusterQueue search-gpu"),
        ("missing-owner-labels", "Queue scratch"),
        ("expired-quota-raise", "ClusterQueue finance-gpu"),
    },
}


def codes(name: str, **kw) -> set[tuple[str, str]]:
    return {(f.code, f.subject) for f in audit(analysis(name, **kw)).findings}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_audit_finds(name: str) -> None:
    got = codes(name)
    missing = EXPECTED[name] - got
    assert not missing, f"{name}: missing {missing}; got {got}"


def test_governance_exactly() -> None:
    assert codes("governance") == EXPECTED["governance"]


def test_healthy_cluster_is_clean() -> None:
    for contract in (None, acme()):
        report = audit(analysis("healthy", contract=contract))
        assert report.findings == [], [f.code for f in report.findings]
        assert not report.failing
        assert report.plan["shortage"] is False


def test_every_finding_has_a_fix_and_is_sorted() -> None:
    report = audit(analysis("governance"))
    assert all(f.action for f in report.findings)
    ranks = [f.severity.rank for f in report.findings]
    assert ranks == sorted(ranks)


def test_expired_raise_evidence() -> None:
    (f,) = [f for f in audit(analysis("governance")).findings if f.code == "expired-quota-raise"]
    assert f.severity is Severity.error
    assert f.evidence[0] == (
        "nvidia.com/gpu in flavor gpu-inference: nominalQuota 16, base 12, active raises 0"
    )
    assert "9d12h ago" in f.evidence[1]


def test_raise_not_expired_before_its_time() -> None:
    a = analysis("governance")
    a.now = a.now - 20 * 86_400  # 2026-10-21: the raise is still active
    assert "expired-quota-raise" not in {f.code for f in audit(a).findings}


def test_gang_threshold() -> None:
    a = analysis("gang-half-started")
    late = {f.code for f in audit(a, AuditOptions(gang_threshold=4 * 3600)).findings}
    assert "stale-half-started-gang" not in late


def test_shortage_plan_order() -> None:
    plan = audit(analysis("mis-preemption")).plan
    assert plan["shortage"] is True
    assert [s["order"] for s in plan["steps"]] == [1, 2, 3, 4]
    assert plan["steps"][0]["action"].startswith("protect online")
    assert plan["steps"][1]["action"].startswith("release half-started gangs")
    assert plan["steps"][2]["subjects"] == ["pod search/embedding-hog-8k2lq (priority 200000)"]
    half = audit(analysis("gang-half-started")).plan
    assert half["steps"][1]["subjects"] == [
        "PodGroup finance/llm-70b-tp4-1 (3/4)",
        "PodGroup ml-platform/lora-a (1/2)",
        "PodGroup ml-platform/lora-c (1/2)",
    ]
    assert half["steps"][1]["gpus"] == "19"


def test_checks_listed() -> None:
    assert len(CHECKS) == 11


def test_cli_audit() -> None:
    code, out, _ = run("audit", "--snapshot", str(fixture("healthy")), "--now", NOW_TEXT)
    assert code == 0, out
    assert "0 error(s), 0 warning(s)" in out
    code, out, _ = run(
        "audit", "--snapshot", str(fixture("governance")), "--now", NOW_TEXT, "-o", "json"
    )
    assert code == 1
    data = json.loads(out)
    assert data["summary"]["error"] == 6
    assert {"order", "action", "subjects", "gpus"} <= set(data["shortagePlan"]["steps"][0])


def test_cli_bad_threshold() -> None:
    code, _, err = run("audit", "--snapshot", str(fixture("healthy")), "--gang-threshold", "soon")
    assert code == 2
    assert "--gang-threshold" in err


@pytest.mark.parametrize(
    "annotation",
    [
        "not json",
        '{"raises": []}',
        '[{"raises": 5}]',
        '[{"raises": [{"gpus": "lots", "expires": "2099-01-01T00:00:00Z"}]}]',
        '[{"raises": [{"gpus": null, "expires": "2099-01-01T00:00:00Z"}]}]',
    ],
)
def test_a_hand_edited_raise_annotation_is_a_finding_not_a_crash(tmp_path, annotation) -> None:
    snapshot = tmp_path / "snap"
    shutil.copytree(fixture("governance"), snapshot)
    kueue = json.loads((snapshot / "kueue.json").read_text())
    (queue,) = [
        item
        for item in kueue["items"]
        if "gpupact.io/quota-raises" in item["metadata"].get("annotations", {})
    ]
    queue["metadata"]["annotations"]["gpupact.io/quota-raises"] = annotation
    (snapshot / "kueue.json").write_text(json.dumps(kueue))
    a = Analysis(load_snapshot_dir(snapshot), now=NOW, contract=None)
    codes = {f.code: f for f in audit(a).findings}
    assert "expired-quota-raise" not in codes
    assert (
        codes["unreadable-raise-annotation"].subject == f"ClusterQueue {queue['metadata']['name']}"
    )


def test_mig_profile_nothing_describes_is_a_node_finding() -> None:
    found = [f for f in audit(analysis("mig-nodes")).findings if f.domain.value == "nodes"]
    assert [(f.code, f.subject) for f in found] == [("mig-geometry-unknown", "node mig-odd-0")]
    assert "MIG profile 1g.33gb: geometry unknown" in found[0].evidence[0]


def _edited(tmp_path, edit, name: str = "governance") -> Analysis:
    folder = tmp_path / "snap"
    shutil.copytree(fixture(name), folder)
    data = {f.name: json.loads(f.read_text()) for f in folder.glob("*.json")}
    edit(data)
    for name, obj in data.items():
        (folder / name).write_text(json.dumps(obj))
    return Analysis(load_snapshot_dir(folder), now=NOW)


def _owner_findings(a: Analysis, options: AuditOptions | None = None) -> set[str]:
    return {f.subject for f in audit(a, options).findings if f.code == "missing-owner-labels"}


def test_common_spellings_count_as_owner_labels(tmp_path) -> None:
    def relabel(data):
        for obj in data["controllers.json"]["items"] + data["pods.json"]["items"]:
            if obj["metadata"]["namespace"] == "search":
                obj["metadata"].setdefault("labels", {}).update(
                    {"team": "search-infra", "cost-center": "CC-3100"}
                )

    a = _edited(tmp_path, relabel)
    assert "Job search/embedding-rebuild" not in _owner_findings(a)
    # configured keys replace the accepted spellings
    strict = AuditOptions(owner_keys=("acme.com/owner",), cost_keys=("acme.com/cc",))
    assert "Job search/embedding-rebuild" in _owner_findings(a, strict)


def test_a_labelled_controller_covers_its_pods() -> None:
    # base: the lora-finetune Job carries the labels; no finding on anything labelled
    assert not any("lora-finetune" in s for s in _owner_findings(analysis("governance")))


def test_pods_without_a_controller_in_the_snapshot_are_judged_themselves(tmp_path) -> None:
    def drop_job(data):
        data["controllers.json"]["items"] = [
            o
            for o in data["controllers.json"]["items"]
            if o["metadata"]["name"] != "embedding-rebuild"
        ]

    found = _owner_findings(_edited(tmp_path, drop_job))
    assert "Job search/embedding-rebuild" in found  # its pods lack the labels too


def test_missing_owner_action_is_the_label_command() -> None:
    (f,) = [
        f
        for f in audit(analysis("governance")).findings
        if f.code == "missing-owner-labels" and f.subject == "Job search/embedding-rebuild"
    ]
    assert f.action.startswith(
        "`kubectl -n search label job/embedding-rebuild gpupact.io/owner=<team> "
        "gpupact.io/cost-centre=<cost-centre>`"
    )


@pytest.mark.parametrize(("fail_on", "code"), [("error", 1), ("warning", 1), ("never", 0)])
def test_fail_on(fail_on: str, code: int) -> None:
    args = ["audit", "--snapshot", str(fixture("mig-nodes")), "--now", NOW_TEXT]
    got, out, _ = run(*args, "--fail-on", fail_on)
    # mig-nodes has warnings only: --fail-on error passes
    assert got == (0 if fail_on == "error" else code), out


def test_fail_on_rejects_unknown_severity() -> None:
    got, _, err = run("audit", "--snapshot", str(fixture("healthy")), "--fail-on", "loud")
    assert got == 2 and "--fail-on" in err


def test_cli_owner_label_option() -> None:
    args = ["audit", "--snapshot", str(fixture("healthy")), "--now", NOW_TEXT, "-o", "json"]
    code, out, _ = run(*args, "--owner-label", "acme.com/owner")
    assert code == 1
    subjects = {f["subject"] for f in json.loads(out)["findings"]}
    assert "Deployment customer-service/cs-agent" in subjects


def test_mig_manager_failure_is_a_node_error(tmp_path) -> None:
    def fail(data):
        for node in data["nodes.json"]["items"]:
            if node["metadata"]["name"] == "mig-h20-0":
                node["metadata"]["labels"]["nvidia.com/mig.config.state"] = "failed"

    found = audit(_edited(tmp_path, fail, "mig-nodes")).findings
    (f,) = [f for f in found if f.code == "mig-config-failed"]
    assert f.subject == "node mig-h20-0" and f.severity is Severity.error
    assert "kubectl label node mig-h20-0 nvidia.com/mig.config=all-1g --overwrite" in f.action


def test_mig_slices_the_kubelet_no_longer_advertises(tmp_path) -> None:
    def lose(data):
        for node in data["nodes.json"]["items"]:
            if node["metadata"]["name"] == "mig-h20-0":
                node["status"]["allocatable"]["nvidia.com/mig-1g.12gb"] = "0"

    found = audit(_edited(tmp_path, lose, "mig-nodes")).findings
    (f,) = [f for f in found if f.code == "mig-slices-missing"]
    assert f.subject == "node mig-h20-0"
    assert f.evidence[0] == (
        "nvidia.com/mig-1g.12gb: 7 counted (nvidia.com/mig-1g.12gb.count), 0 allocatable"
    )
    assert f.data == {"missing": {"1g.12gb": 7}}
    assert f.action.startswith("`kubectl cordon mig-h20-0`")


def test_gpu_less_node_names_the_plugin_cause() -> None:
    (f,) = [
        f
        for f in audit(analysis("device-plugin-lost")).findings
        if f.code == "ready-node-without-gpus"
    ]
    assert f.data == {"causes": ["driver-library-mismatch"]}
    assert any("Driver/library version mismatch" in e for e in f.evidence)
    assert "reboot the node" in f.action and "`kubectl cordon inf-a100-2`" in f.action
