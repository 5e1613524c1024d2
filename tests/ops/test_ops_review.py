"""The monthly review: usage per owner and cost centre, and each finding with its action."""

from __future__ import annotations

from pathlib import Path

from gpupact.contract import load_contract, parse_contract
from gpupact.ledger import Interval, Wait, month_window
from gpupact.ops.findings import Severity
from gpupact.ops.review import ReviewOptions, review

ACME = Path(__file__).resolve().parents[2] / "examples" / "acme" / "contract.yaml"
NOV = month_window("2026-11")
H = 3600.0
END = NOV.end


def run(name: str, gpus: float, hours: float, **kw) -> Interval:
    kw.setdefault("owner", "ops@acme.example")
    kw.setdefault("cost_centre", "CC-1")
    ns = kw.pop("namespace", "search")
    return Interval(
        f"k:{name}", "kubernetes", name, ns, gpus, NOV.start, NOV.start + hours * H, **kw
    )


def codes(report) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(f.subject)
    return out


def test_usage_per_owner_and_cost_centre() -> None:
    items = [
        run("a", 2, 10, owner="x", cost_centre="CC-1"),
        run("b", 1, 10, owner="x", cost_centre="CC-1"),
        run("c", 4, 10, owner="y", cost_centre="CC-2"),
    ]
    report = review(items, [], NOV, END)
    assert [(u.group["owner"], u.group["cost_centre"], u.gpu_hours) for u in report.by_owner] == [
        ("y", "CC-2", 40.0),
        ("x", "CC-1", 30.0),
    ]
    assert report.to_dict()["gpuHours"] == 70.0


def test_unowned_usage_is_flagged_with_no_scale_up_action() -> None:
    items = [run("orphan-0", 1, 30, owner=None, service="demo"), run("ok", 1, 30, service="chat")]
    report = review(items, [], NOV, END)
    (finding,) = [f for f in report.findings if f.code == "unowned-gpu-usage"]
    assert finding.subject == "service search/demo" and "30.0 GPU-hours" in finding.summary
    assert "do not scale it further" in finding.action and finding.data["lacking"] == ["owner"]
    assert report.failing


def test_expired_and_undated_raises_from_the_contract() -> None:
    contract = load_contract(ACME).contract
    before = review([], [], NOV, END, contract=contract)
    assert "expired-quota-raise" not in codes(before)  # expires 2026-12-31
    after = review([], [], month_window("2027-01"), month_window("2027-01").end, contract=contract)
    (finding,) = [f for f in after.findings if f.code == "expired-quota-raise"]
    assert "expired 2026-12-31" in finding.summary and "remove the raise" in finding.action
    text = ACME.read_text().replace(", expires: 2026-12-31T00:00:00Z", "")
    undated = parse_contract(text, str(ACME)).contract
    (finding,) = [f for f in review([], [], NOV, END, contract=undated).findings]
    assert finding.summary == "temporary raise without an expiry"


def test_long_pending_evaluation_jobs_use_the_class_promise() -> None:
    waits = [
        Wait("w1", "slurm", "batch", 7 * H, True, "eval-mmlu", "hpc1", "eval"),
        Wait("w2", "kubernetes", "batch", 9 * H, False, "eval-gsm8k", "research"),
        Wait("w3", "kubernetes", "batch", 20 * H, False, "pretrain", "research"),  # not eval
        Wait("w4", "kubernetes", "batch", 0.5 * H, False, "eval-quick", "research"),
    ]
    report = review([], waits, NOV, END)
    assert codes(report)["long-pending-evaluation"] == [
        "job hpc1/eval-mmlu",
        "job research/eval-gsm8k",
    ]
    contract = load_contract(ACME).contract  # batch promises 8h
    promised = review([], waits, NOV, END, contract=contract)
    (finding,) = [f for f in promised.findings if f.code == "long-pending-evaluation"]
    assert finding.subject == "job research/eval-gsm8k" and "limit 8h" in finding.summary
    assert "clean up zombie jobs" in finding.action and finding.data["pending"] == 1


def test_low_utilisation_services_from_dcgm_hours() -> None:
    items = [run("chat-0", 2, 100, service="chat"), run("rag-0", 2, 100, service="rag")]
    busy = {("search", "chat-0"): 20.0, ("search", "rag-0"): 150.0}
    report = review(items, [], NOV, END, busy=busy)
    (finding,) = [f for f in report.findings if f.code == "low-utilisation-service"]
    assert finding.subject == "service search/chat" and "busy 10%" in finding.summary
    assert "elastic" in finding.action and "pre-warm pool" in finding.action
    unknown = review(items, [], NOV, END)
    assert codes(unknown)["utilisation-unknown"] == ["ledger"]
    assert not unknown.failing  # info only


def test_retry_driven_usage_counts_restarts_and_job_attempts() -> None:
    items = [
        run("crashy-0", 1, 50, service="crashy", restarts=40),
        run("steady-0", 1, 50, service="steady", restarts=1),
        *[run(f"etl-{i}", 2, 5, job="etl", namespace="data") for i in range(5)],
    ]
    report = review(items, [], NOV, END, options=ReviewOptions(max_restarts=5, max_attempts=3))
    findings = {f.subject: f for f in report.findings if f.code == "retry-driven-usage"}
    assert sorted(findings) == ["job data/etl", "service search/crashy"]
    assert findings["job data/etl"].data["retryGpuHours"] == 40.0  # 4 of 5 attempts x 10
    assert "fix the retry logic" in findings["service search/crashy"].action
    assert all(f.severity is Severity.warning for f in findings.values())
