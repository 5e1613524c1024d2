"""`diagnose` on one fixture per failure mode of Tables 43-5 / 43-6: the runbook stops at the
domain that explains each pending subject, with the evidence and action of the table."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml
from ops_helpers import NOW, NOW_TEXT, acme, analysis, fixture, run

from gpupact.ops import Analysis, Domain, Severity, diagnose, load_snapshot_dir
from gpupact.ops.diagnose import STEPS, pending_cases
from gpupact.ops.model import observed_at

# fixture -> {subject: (domain, code)}
EXPECTED = {
    "healthy": {},
    "device-plugin-lost": {
        "pod customer-service/cs-agent-7d9f8b6c4-2b104": ("nodes", "device-plugin-lost"),
    },
    "affinity-unsatisfiable": {
        "pod customer-service/cs-agent-canary-6f7c9d8b5-x2k4p": (
            "placement",
            "unsatisfiable-constraints",
        ),
        "pod search/embedding-adhoc-q7w2z": ("placement", "unsatisfiable-constraints"),
    },
    "fragmentation": {"pod finance/llm-34b-tp4-0": ("placement", "gpu-fragmentation")},
    "gang-min-member": {"podgroup finance/llm-70b-tp4-1": ("gang", "gang-min-member-unreachable")},
    "gang-half-started": {
        "podgroup finance/llm-70b-tp4-1": ("gang", "gang-half-started"),
        "podgroup ml-platform/lora-a": ("gang", "gang-half-started"),
        "podgroup ml-platform/lora-b": ("gang", "gpus-held-by-partial-gangs"),
        "podgroup ml-platform/lora-c": ("gang", "gang-half-started"),
    },
    "quota-exhausted": {
        "workload finance/job-risk-eval-5d92c": ("quota", "quota-exhausted"),
        "workload search/job-eval-small-87030": ("quota", "strict-fifo-blocked"),
        "workload search/job-reindex-full-a2b39": ("quota", "quota-exhausted"),
    },
    "autoscaler-cold-start": {
        "pod customer-service/cs-agent-7d9f8b6c4-79227": ("autoscaler", "scale-up-in-progress"),
    },
    "pool-at-max": {"pod customer-service/cs-agent-7d9f8b6c4-68547": ("autoscaler", "pool-at-max")},
    "gpu-oom": {"pod customer-service/cs-agent-7d9f8b6c4-3c498": ("memory", "gpu-oom")},
    "mis-preemption": {
        "pod customer-service/cs-agent-7d9f8b6c4-cd334": ("capacity", "insufficient-capacity"),
    },
    "node-drift": {},
    "governance": {},
    "gang-waiting": {"podgroup ml-platform/lora-b": ("gang", "gang-waiting-capacity")},
    "init-oom": {"pod customer-service/cs-rerank-5f6d7c8b9-m4n8q": ("memory", "oom-killed")},
    "mig-nodes": {"pod search/embed-mig-wide": ("placement", "unsatisfiable-constraints")},
}


def findings_of(name: str, **kw) -> dict[str, tuple[str, str]]:
    report = diagnose(analysis(name, **kw))
    return {
        d.subject: (d.finding.domain.value, d.finding.code)
        for d in report.diagnoses
        if d.finding is not None
    }


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_fixture_stops_at_its_domain(name: str) -> None:
    got = findings_of(name)
    assert got == EXPECTED[name], f"{name}: got {got}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_contract_does_not_change_the_domain(name: str) -> None:
    assert findings_of(name, contract=acme()) == EXPECTED[name]


def test_steps_are_in_runbook_order() -> None:
    domains = [s.__name__.removeprefix("check_") for s in STEPS]
    assert domains == ["nodes", "placement", "gang", "quota", "autoscaler", "memory"]
    assert [d.step for d in Domain][:6] == [1, 2, 3, 4, 5, 6]


def test_walk_records_the_steps_it_passed() -> None:
    report = diagnose(analysis("autoscaler-cold-start"))
    (d,) = report.diagnoses
    assert [s.domain.value for s in d.checked] == ["nodes", "placement", "gang", "quota"]
    assert d.checked[1].note == "constraints satisfiable on 3 node(s), none has room now"


def test_device_plugin_lost_evidence() -> None:
    (d,) = diagnose(analysis("device-plugin-lost")).diagnoses
    f = d.finding
    assert f.severity is Severity.error
    assert any("inf-a100-2" in e and "0 of 8" in e for e in f.evidence)
    assert any("CrashLoopBackOff" in e for e in f.evidence)
    # the plugin's termination message names the cause, and the fix follows it
    assert any("Driver/library version mismatch" in e for e in f.evidence)
    assert f.data == {
        "nodes": ["inf-a100-2"],
        "missingGpus": 8,
        "causes": ["driver-library-mismatch"],
    }
    assert "`kubectl cordon inf-a100-2`" in f.action
    assert "reboot the node" in f.action
    assert "`kubectl -n kube-system delete pod nvidia-device-plugin-daemonset-" in f.action
    assert "`kubectl uncordon inf-a100-2`" in f.action


def test_device_plugin_driver_not_loaded_needs_another_fix(tmp_path: Path) -> None:
    folder = tmp_path / "snap"
    shutil.copytree(fixture("device-plugin-lost"), folder)
    pods = json.loads((folder / "pods.json").read_text())
    for pod in pods["items"]:
        for cs in pod["status"].get("containerStatuses", []):
            term = cs.get("lastState", {}).get("terminated")
            if term and "NVML" in term.get("message", ""):
                term["message"] = (
                    "I1110 11:54:01 main.go:317] Retrieving plugins.\n"
                    "E1110 11:54:01 factory.go:87] Incompatible strategy detected auto\n"
                    "failed to initialize NVML: could not load NVML library: libnvidia-ml.so.1: "
                    "cannot open shared object file: No such file or directory"
                )
    (folder / "pods.json").write_text(json.dumps(pods))
    (d,) = diagnose(Analysis(load_snapshot_dir(folder), now=NOW)).diagnoses
    assert d.finding.data["causes"] == ["driver-not-loaded"]
    assert "install or load the driver" in d.finding.action
    assert "reboot" not in d.finding.action
    assert any("libnvidia-ml.so.1: cannot open" in e for e in d.finding.evidence)


def test_affinity_names_the_typo_and_the_taint() -> None:
    report = diagnose(analysis("affinity-unsatisfiable"))
    by = {d.name: d.finding for d in report.diagnoses}
    typo = by["cs-agent-canary-6f7c9d8b5-x2k4p"]
    assert typo.data["plugin"] == "NodeAffinity"
    assert any(
        "gpu.model=a100-80gb: no node has it (values of gpu.model: a100-80g" in e
        for e in typo.evidence
    )
    stray = by["embedding-adhoc-q7w2z"]
    assert stray.data["plugin"] == "TaintToleration"
    assert any("workload=online-infer:NoSchedule" in e for e in stray.evidence)
    # the engine's own FitError line, in kube-scheduler's format
    assert stray.evidence[0].startswith("kube-scheduler: 0/8 nodes are available: ")


def test_fragmentation_names_the_pool_and_each_nodes_free_gpus() -> None:
    (d,) = diagnose(analysis("fragmentation")).diagnoses
    f = d.finding
    assert f.data == {
        "freeGpus": "6",
        "largestBlock": "2",
        "needed": "4",
        "pools": ["gpu-inference"],
        "freePerNode": {"inf-a100-0": "2", "inf-a100-1": "2", "inf-a100-2": "2"},
    }
    assert "in pool gpu-inference" in f.summary
    assert (
        "pool gpu-inference: 6 GPU(s) free on 3 eligible node(s); free/GPUs per node: "
        "inf-a100-0 2/8, inf-a100-1 2/8, inf-a100-2 2/8" in f.evidence
    )
    assert any(
        e.startswith("the partly free nodes are held by Deployment customer-service/cs-agent")
        for e in f.evidence
    )
    assert "`kubectl cordon inf-a100-0`" in f.action


def _with_pod_spec(tmp_path: Path, name: str, edit) -> Analysis:
    folder = tmp_path / "snap"
    shutil.copytree(fixture("affinity-unsatisfiable"), folder)
    pods = json.loads((folder / "pods.json").read_text())
    edit(next(p for p in pods["items"] if p["metadata"]["name"] == name)["spec"])
    (folder / "pods.json").write_text(json.dumps(pods))
    return Analysis(load_snapshot_dir(folder), now=NOW)


def _term(*expressions: tuple[str, str, list[str]]) -> dict:
    return {
        "matchExpressions": [
            {"key": k, "operator": op, "values": values} for k, op, values in expressions
        ]
    }


def test_required_affinity_terms_no_node_satisfies_together(tmp_path: Path) -> None:
    def edit(spec: dict) -> None:
        spec["nodeSelector"] = {}
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        _term(
                            ("nodepool", "In", ["gpu-inference"]), ("gpu.model", "In", ["h100-80g"])
                        ),
                        _term(("gpu.model", "In", ["a100-80gb", "a100-40g"])),
                    ]
                }
            }
        }

    a = _with_pod_spec(tmp_path, "cs-agent-canary-6f7c9d8b5-x2k4p", edit)
    by = {d.name: d.finding for d in diagnose(a).diagnoses}
    f = by["cs-agent-canary-6f7c9d8b5-x2k4p"]
    assert f.data["plugin"] == "NodeAffinity"
    assert (
        "required node affinity term 1: gpu.model in (h100-80g) (2 node(s)) and nodepool in "
        "(gpu-inference) (3 node(s)) match no node together" in f.evidence
    )
    assert (
        "required node affinity term 2: gpu.model in (a100-40g,a100-80gb) matches no node "
        "(values of gpu.model: a100-80g, h100-80g, l40s)" in f.evidence
    )
    assert "`kubectl -n customer-service edit deployment/cs-agent`" in f.action


def test_node_selector_pairs_no_node_has_together(tmp_path: Path) -> None:
    def edit(spec: dict) -> None:
        spec["nodeSelector"] = {"nodepool": "gpu-inference", "gpu.model": "h100-80g"}

    a = _with_pod_spec(tmp_path, "cs-agent-canary-6f7c9d8b5-x2k4p", edit)
    by = {d.name: d.finding for d in diagnose(a).diagnoses}
    assert (
        "nodeSelector gpu.model=h100-80g (2 node(s)), nodepool=gpu-inference (3 node(s)): no node "
        "has them all together" in by["cs-agent-canary-6f7c9d8b5-x2k4p"].evidence
    )


def test_taint_action_carries_the_toleration_with_its_value() -> None:
    by = {d.name: d.finding for d in diagnose(analysis("affinity-unsatisfiable")).diagnoses}
    f = by["embedding-adhoc-q7w2z"]
    assert f.data["taints"] == ["workload=online-infer:NoSchedule"]
    assert (
        '{"key":"workload","operator":"Equal","value":"online-infer","effect":"NoSchedule"}'
        in f.action
    )
    assert "Job search/embedding-adhoc" in f.action and "re-create it" in f.action


def test_gang_half_started_holds_gpus() -> None:
    report = diagnose(analysis("gang-half-started"))
    by = {d.name: d for d in report.diagnoses}
    assert by["llm-70b-tp4-1"].finding.data["heldGpus"] == 3
    assert by["lora-b"].finding.data["gangs"] == ["ml-platform/lora-a", "ml-platform/lora-c"]
    assert by["lora-b"].finding.data["heldGpus"] == 16
    assert by["lora-b"].members == ("ml-platform/lora-b-worker-0", "ml-platform/lora-b-worker-1")


def test_whatif_leaves_the_state_as_it_was() -> None:
    a = analysis("gang-half-started")
    before = (a.state.requested.copy(), a.state.dev_used_milli.copy(), a.state.num_pods)
    diagnose(a)
    assert (a.state.requested == before[0]).all()
    assert (a.state.dev_used_milli == before[1]).all()
    assert a.state.num_pods == before[2]


def test_quota_evidence_usage_nominal_and_zombie() -> None:
    report = diagnose(analysis("quota-exhausted"))
    by = {d.name: d.finding for d in report.diagnoses}
    risk = by["job-risk-eval-5d92c"]
    assert (
        "nvidia.com/gpu in flavor gpu-inference: needs 4; used 12 of nominal 12; available 0"
        in (risk.evidence)
    )
    assert any(e.startswith("zombie? Workload finance/job-month-end-close") for e in risk.evidence)
    assert risk.data["short"] == [
        {"flavor": "gpu-inference", "resource": "nvidia.com/gpu", "amount": 4}
    ]
    blocked = by["job-eval-small-87030"]
    assert blocked.data["blockedBy"] == "search/job-reindex-full-a2b39"
    head = by["job-reindex-full-a2b39"]
    assert head.severity is Severity.error  # more than the cohort can ever lend
    assert any("cohort can lend 16 more" in e for e in head.evidence)


def test_cold_start_eta_and_promise() -> None:
    (d,) = diagnose(analysis("autoscaler-cold-start", contract=acme())).diagnoses
    f = d.finding
    assert f.data["remainingSeconds"] == 630  # 13m30s cold start, launched 3 minutes ago
    assert f.severity is Severity.warning  # online-infer promises 30s
    assert any("exceeds the class's maxQueueWait 30s" in e for e in f.evidence)
    (plain,) = diagnose(analysis("autoscaler-cold-start")).diagnoses
    assert plain.finding.severity is Severity.info


def test_gpu_oom_with_contract_profile() -> None:
    (d,) = diagnose(analysis("gpu-oom", contract=acme())).diagnoses
    f = d.finding
    assert d.status == "Running (CrashLoopBackOff)"
    assert any("CUDA OOM" in e for e in f.evidence)
    assert any(e.startswith("sibling ") and "OOMKilled" in e for e in f.evidence)
    assert any("at contextLength 32768" in e for e in f.evidence)
    assert "cap the context length (at most" in f.action


def test_only_pending_subjects_are_listed() -> None:
    cases = pending_cases(analysis("quota-exhausted"))
    assert all(c.kind == "Workload" for c in cases)
    assert pending_cases(analysis("healthy")) == []


def test_namespace_filter() -> None:
    report = diagnose(analysis("quota-exhausted"), namespace="finance")
    assert [d.name for d in report.diagnoses] == ["job-risk-eval-5d92c"]


# --- named targets ------------------------------------------------------------------------------


def test_target_pod_in_a_gang_walks_the_gang_step() -> None:
    report = diagnose(analysis("gang-half-started"), "finance/llm-70b-tp4-1-3")
    (d,) = report.diagnoses
    assert d.kind == "Pod"
    assert d.finding.code == "gang-half-started"


def test_target_forms() -> None:
    a = analysis("quota-exhausted")
    (d,) = diagnose(a, "workload/finance/job-risk-eval-5d92c").diagnoses
    assert d.finding.code == "quota-exhausted"
    g = analysis("gang-min-member")
    (d,) = diagnose(g, "podgroup/finance/llm-70b-tp4-1").diagnoses
    assert d.finding.code == "gang-min-member-unreachable"
    assert "`kubectl -n finance edit leaderworkerset/llm-70b-tp4`" in d.finding.action


def test_a_running_pod_says_so() -> None:
    (d,) = diagnose(analysis("healthy"), "customer-service/cs-agent-7d9f8b6c4-d854d").diagnoses
    assert d.finding is None
    assert d.status == "Running"
    assert d.checked[0].note == "not Pending: Running"


# --- the command --------------------------------------------------------------------------------


def test_cli_exit_codes() -> None:
    code, out, _ = run("diagnose", "-A", "--snapshot", str(fixture("healthy")), "--now", NOW_TEXT)
    assert code == 0, out
    assert out.startswith("nothing pending (8 nodes")
    code, out, _ = run(
        "diagnose", "-A", "--snapshot", str(fixture("fragmentation")), "--now", NOW_TEXT
    )
    assert code == 1
    assert "gpu-fragmentation" in out and "action:" in out
    code, out, _ = run(
        "diagnose",
        "customer-service/cs-agent-7d9f8b6c4-d854d",
        "--snapshot",
        str(fixture("healthy")),
        "--now",
        NOW_TEXT,
    )
    assert code == 0
    assert "not Pending: Running" in out


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_cli_machine_output(fmt: str) -> None:
    code, out, _ = run(
        "diagnose",
        "-A",
        "--snapshot",
        str(fixture("gang-half-started")),
        "--now",
        NOW_TEXT,
        "-o",
        fmt,
    )
    assert code == 1
    data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    assert data["summary"] == {"subjects": 4, "byDomain": {"gang": 4}}
    first = data["diagnoses"][0]
    assert first["finding"]["step"] == 3
    assert first["finding"]["severity"] == "error"
    assert first["checked"][0] == {
        "step": 1,
        "domain": "nodes",
        "outcome": "ok",
        "note": "no NotReady or GPU-less node where the pod could go",
    }


def test_cli_contract_file() -> None:
    code, out, _ = run(
        "diagnose",
        "-A",
        "--snapshot",
        str(fixture("gpu-oom")),
        "--now",
        NOW_TEXT,
        "--contract",
        str(fixture("../../../examples/acme/contract.yaml")),
    )
    assert code == 1
    assert "full-length request(s) fit at once" in out


def test_not_ready_node_where_the_pod_belongs(tmp_path: Path) -> None:
    folder = tmp_path / "snap"
    shutil.copytree(fixture("device-plugin-lost"), folder)
    nodes = json.loads((folder / "nodes.json").read_text())
    sick = next(n for n in nodes["items"] if n["metadata"]["name"] == "inf-a100-2")
    sick["status"]["allocatable"]["nvidia.com/gpu"] = "8"
    ready = next(c for c in sick["status"]["conditions"] if c["type"] == "Ready")
    ready.update(status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting")
    sick["spec"]["taints"].append({"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"})
    (folder / "nodes.json").write_text(json.dumps(nodes))
    (d,) = diagnose(Analysis(load_snapshot_dir(folder), now=NOW)).diagnoses
    assert d.finding.code == "nodes-not-ready"
    assert any(
        "NotReady (NodeStatusUnknown: Kubelet stopped posting" in e for e in d.finding.evidence
    )
    assert "`kubectl describe node inf-a100-2`" in d.finding.action


def test_cluster_autoscaler_triggered_scale_up(tmp_path: Path) -> None:
    folder = tmp_path / "snap"
    shutil.copytree(fixture("autoscaler-cold-start"), folder)
    karpenter = json.loads((folder / "karpenter.json").read_text())
    karpenter["items"] = [o for o in karpenter["items"] if o["kind"] != "NodeClaim"]
    (folder / "karpenter.json").write_text(json.dumps(karpenter))
    events = json.loads((folder / "events.json").read_text())
    for event in events["items"]:
        if event["reason"] == "Nominated":
            event.update(
                reason="TriggeredScaleUp",
                message="pod triggered scale-up: [{gpu-inference 3->4 (max: 6)}]",
                source={"component": "cluster-autoscaler"},
            )
    (folder / "events.json").write_text(json.dumps(events))
    (d,) = diagnose(Analysis(load_snapshot_dir(folder), now=NOW)).diagnoses
    f = d.finding
    assert f.code == "scale-up-in-progress"
    assert any(e.startswith("cluster-autoscaler: TriggeredScaleUp") for e in f.evidence)
    assert f.data["remainingSeconds"] == 630


# --- containers that start and die ----------------------------------------------------------


def test_init_container_oom_is_host_memory_not_image_pull() -> None:
    (d,) = diagnose(analysis("init-oom")).diagnoses
    f = d.finding
    assert d.status == "Pending (bound to inf-a100-1, Init:CrashLoopBackOff)"
    assert f.data == {"ooms": 1, "kind": "host", "container": "model-fetch", "init": True}
    assert any(
        "init container model-fetch: OOMKilled (host memory, limit 4GiB)" in e and "restarts 6" in e
        for e in f.evidence
    )
    assert "image" not in f.action
    # the owning Deployment, found through the ReplicaSet's pod-template-hash, and the command
    assert (
        "`kubectl -n customer-service set resources deployment/cs-rerank -c model-fetch "
        "--limits=memory=6Gi`" in f.action
    )


def test_gpu_oom_and_host_oom_are_told_apart() -> None:
    a = analysis("gpu-oom")
    (gpu,) = diagnose(a).diagnoses
    assert gpu.finding.code == "gpu-oom" and gpu.finding.data["kind"] == "gpu"
    assert any("CUDA OOM (GPU memory)" in e for e in gpu.finding.evidence)
    # the sibling was OOMKilled by the kernel: host memory, another fix
    sibling = next(
        p
        for p in a.snapshot.pods
        if p.key != gpu.subject.split(" ")[1]
        and p.name.startswith("cs-agent")
        and "OOMKilled" in str(p.raw["status"])
    )
    (host,) = diagnose(a, sibling.key).diagnoses
    assert host.finding.code == "oom-killed"
    assert "set resources deployment/cs-agent -c server --limits=memory=96Gi" in host.finding.action


def test_init_container_crash_without_oom(tmp_path: Path) -> None:
    folder = tmp_path / "snap"
    shutil.copytree(fixture("init-oom"), folder)
    pods = json.loads((folder / "pods.json").read_text())
    rerank = next(p for p in pods["items"] if p["metadata"]["name"].startswith("cs-rerank"))
    term = rerank["status"]["initContainerStatuses"][0]["lastState"]["terminated"]
    term.update(exitCode=1, reason="Error", message="fetch: 403 Forbidden: s3://models/bge")
    (folder / "pods.json").write_text(json.dumps(pods))
    (d,) = diagnose(Analysis(load_snapshot_dir(folder), now=NOW)).diagnoses
    assert d.finding.code == "init-container-failing"
    assert "403 Forbidden" in " ".join(d.finding.evidence)
    assert "kubectl -n customer-service logs cs-rerank-5f6d7c8b9-m4n8q -c model-fetch" in (
        d.finding.action
    )


# --- MIG beyond the built-in tables -----------------------------------------------------------


def test_mig_nodes_never_fail_the_whole_run() -> None:
    for command in ("diagnose", "audit"):
        args = [command, "--snapshot", str(fixture("mig-nodes")), "--now", NOW_TEXT]
        code, out, err = run(*([*args, "-A"] if command == "diagnose" else args))
        assert code == 1, (out, err)
    (d,) = diagnose(analysis("mig-nodes")).diagnoses
    text = " ".join(d.finding.evidence)
    assert "nvidia.com/mig-2g.24gb: 1 requested; the 3 node(s) it may use have at most 0" in text
    assert "nvidia.com/mig-1g.12gb (up to 7)" in text and "nvidia.com/mig-1g.5gb (up to 7)" in text
    a = analysis("mig-nodes")
    layouts = {n: a.state.gpu_specs[a.state.node_index[n]].mig_layout for n in ("mig-h20-0",)}
    assert layouts["mig-h20-0"] == ((("1g.12gb", 7),),)


def test_gang_that_blocks_gets_evidence_not_ok() -> None:
    (d,) = diagnose(analysis("gang-waiting")).diagnoses
    assert all(step.domain.value != "gang" for step in d.checked)  # never "gang: ok"
    f = d.finding
    assert f.data["neededGpus"] == "16" and f.data["freeGpus"] == "0"
    assert f.data["pools"] == ["gpu-train"]
    assert (
        "needs 2 more member(s) at once x 8 GPU(s) = 16 GPU(s); free now on the 2 node(s) they "
        "may use: 0 GPU(s), room for 0 member(s) by node" in f.evidence
    )
    assert (
        "pool gpu-train: 0 GPU(s) free on 2 eligible node(s); free/GPUs per node: "
        "train-h100-0 0/8, train-h100-1 0/8" in f.evidence
    )
    assert "held by Job ml-platform/lora-finetune: 16 GPU(s) in 2 pod(s)" in f.evidence


def test_pods_of_one_owner_with_one_cause_are_one_subject(tmp_path: Path) -> None:
    folder = tmp_path / "snap"
    shutil.copytree(fixture("fragmentation"), folder)
    pods = json.loads((folder / "pods.json").read_text())
    pending = next(p for p in pods["items"] if p["metadata"]["name"] == "llm-34b-tp4-0")
    for i in (1, 2):
        twin = copy.deepcopy(pending)
        twin["metadata"]["name"] = f"llm-34b-tp4-{i}"
        twin["metadata"]["uid"] = twin["metadata"]["uid"][:-1] + str(i)
        pods["items"].append(twin)
    (folder / "pods.json").write_text(json.dumps(pods))
    (d,) = diagnose(Analysis(load_snapshot_dir(folder), now=NOW)).diagnoses
    assert d.subject == "statefulset finance/llm-34b"
    assert (d.kind, d.namespace, d.name) == ("StatefulSet", "finance", "llm-34b")
    assert len(d.members) == 3 and d.finding.code == "gpu-fragmentation"
    assert d.finding.evidence[0] == (
        "3 pod(s) of StatefulSet finance/llm-34b stopped by this: llm-34b-tp4-0, "
        "llm-34b-tp4-1, llm-34b-tp4-2"
    )
    assert d.to_dict()["members"] == list(d.members)


def test_ages_are_relative_to_the_snapshot_unless_now_is_given() -> None:
    snap = load_snapshot_dir(fixture("pool-at-max"))
    assert observed_at(snap) == NOW - 30  # the freshest node heartbeat, 30 s before NOW
    code, out, _ = run("diagnose", "-A", "--snapshot", str(fixture("pool-at-max")), "-o", "json")
    assert code == 1
    data = json.loads(out)
    assert data["now"] == NOW - 30
    assert data["diagnoses"][0]["pendingSeconds"] == 25 * 60 - 30
    _, out, _ = run(
        "diagnose",
        "-A",
        "--snapshot",
        str(fixture("pool-at-max")),
        "-o",
        "json",
        "--now",
        "2026-11-10T13:00:00Z",
    )
    assert json.loads(out)["diagnoses"][0]["pendingSeconds"] == 85 * 60


def test_actions_name_the_objects_to_change() -> None:
    by = {d.name: d.finding for d in diagnose(analysis("quota-exhausted")).diagnoses}
    fifo = by["job-eval-small-87030"]
    assert "`kubectl patch clusterqueue search-gpu --type=merge -p " in fifo.action
    assert '"queueingStrategy":"BestEffortFIFO"' in fifo.action
    risk = by["job-risk-eval-5d92c"]
    assert "`kubectl edit clusterqueue finance-gpu`" in risk.action
    assert "`kubectl -n finance delete job month-end-close`" in risk.action
    (at_max,) = diagnose(analysis("pool-at-max")).diagnoses
    assert "the node group's max size in the cluster-autoscaler" in at_max.finding.action
    half = {d.name: d.finding for d in diagnose(analysis("gang-half-started")).diagnoses}
    assert (
        "`kubectl -n finance delete pod llm-70b-tp4-1-0 llm-70b-tp4-1-1 llm-70b-tp4-1-2`"
        in half["llm-70b-tp4-1"].action
    )
    assert "LeaderWorkerSet finance/llm-70b-tp4" in half["llm-70b-tp4-1"].action


def test_more_memory_than_any_node_has_is_unsatisfiable(tmp_path: Path) -> None:
    def edit(spec: dict) -> None:
        spec["nodeSelector"] = {"nodepool": "gpu-inference"}
        for key in ("requests", "limits"):
            spec["containers"][0]["resources"][key]["memory"] = "2Ti"

    a = _with_pod_spec(tmp_path, "cs-agent-canary-6f7c9d8b5-x2k4p", edit)
    by = {d.name: d.finding for d in diagnose(a).diagnoses}
    f = by["cs-agent-canary-6f7c9d8b5-x2k4p"]
    assert f.code == "unsatisfiable-constraints" and f.data["plugin"] == "NodeResourcesFit"
    assert (
        "memory: 2Ti requested; the 3 node(s) it may use have at most 1045001408Ki allocatable"
        in f.evidence
    )
