"""The monthly review (43.6): GPU-hours per owner and cost centre, and the chapter's findings,
each with the action it prescribes.

- resources without an owner or cost centre: no further scale-up until someone owns them;
- temporary quota raises past their expiry (or without one): every raise needs an end date;
- evaluation jobs Pending for long: clean up zombie jobs or raise the quota;
- services with low utilisation: elastic replicas or a pre-warm pool instead of fixed ones;
- usage driven by retries (restarts, repeated job attempts): fix the retry logic before
  buying GPUs.

Input is ledger data (intervals, waits, busy GPU-hours from DCGM) for one month window and,
optionally, the contract (its raises and each class's promised queue wait).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gpupact.contract import Contract
from gpupact.ledger import Interval, Usage, Wait, Window, allocated
from gpupact.ops.findings import Domain, Finding, Severity, format_duration, sort_findings


@dataclass(frozen=True)
class ReviewOptions:
    eval_pattern: str = r"eval"  # a job or class whose name matches is an evaluation job
    pending_threshold: float = 3600.0  # seconds; a class's maxQueueWait overrides it
    low_utilisation: float = 0.3  # busy / allocated below this is low
    min_gpu_hours: float = 1.0  # smaller holdings are not worth a finding
    max_restarts: int = 5  # container restarts in a month above which usage is retry-driven
    max_attempts: int = 3  # pods of one job above which usage is retry-driven


@dataclass
class ReviewReport:
    window: Window
    now: float
    by_owner: list[Usage]
    by_tenant_model: list[Usage]
    findings: list[Finding] = field(default_factory=list)
    utilisation_known: bool = False

    @property
    def failing(self) -> bool:
        return any(f.severity is not Severity.info for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "month": self.window.label,
            "now": datetime.fromtimestamp(self.now, UTC).isoformat().replace("+00:00", "Z"),
            "gpuHours": round(sum(u.gpu_hours for u in self.by_owner), 6),
            "byOwner": [u.to_dict() for u in self.by_owner],
            "byTenantModel": [u.to_dict() for u in self.by_tenant_model],
            "utilisationKnown": self.utilisation_known,
            "findings": [f.to_dict() for f in self.findings],
        }


def review(
    intervals: Sequence[Interval],
    waits: Sequence[Wait],
    window: Window,
    now: float,
    *,
    busy: Mapping[tuple[str, str], float] | None = None,
    contract: Contract | None = None,
    options: ReviewOptions | None = None,
) -> ReviewReport:
    opts = options or ReviewOptions()
    report = ReviewReport(
        window,
        now,
        allocated(intervals, window, now, ("owner", "cost_centre"), busy),
        allocated(intervals, window, now, ("tenant", "model"), busy),
        utilisation_known=bool(busy),
    )
    findings = _unowned(intervals, window, now, opts)
    findings += _raises(contract, now)
    findings += _pending_evaluations(waits, contract, opts)
    findings += _low_utilisation(intervals, window, now, busy, opts)
    findings += _retries(intervals, window, now, busy, opts)
    report.findings = sort_findings(findings)
    return report


def _hours(h: float) -> str:
    return f"{h:,.1f} GPU-hours"


def _workload(i: Interval) -> str:
    if i.service:
        return f"service {i.namespace}/{i.service}"
    if i.job:
        return f"job {i.namespace}/{i.job}"
    return f"pod {i.namespace}/{i.pod}"


def _unowned(
    intervals: Sequence[Interval], window: Window, now: float, opts: ReviewOptions
) -> list[Finding]:
    groups: dict[str, list[Interval]] = defaultdict(list)
    for i in intervals:
        if not i.owner or not i.cost_centre:
            groups[_workload(i)].append(i)
    out = []
    for subject, items in sorted(groups.items()):
        hours = sum(i.gpu_hours(window.start, window.end, now) for i in items)
        if hours < opts.min_gpu_hours:
            continue
        lacking = sorted(
            {"owner" for i in items if not i.owner}
            | {"cost centre" for i in items if not i.cost_centre}
        )
        out.append(
            Finding(
                Domain.governance,
                "unowned-gpu-usage",
                Severity.warning,
                subject,
                f"{_hours(hours)} in {window.label} with no {' and no '.join(lacking)}",
                (
                    f"{len(items)} pod run(s), tenant {items[0].tenant or '?'}, "
                    f"pool {items[0].pool or '?'}",
                ),
                "do not scale it further until it maps to an owner and a cost centre: label it "
                "gpupact.io/owner and gpupact.io/cost-centre (or declare it in the contract)",
                {"gpuHours": round(hours, 6), "lacking": lacking},
            )
        )
    return out


def _raises(contract: Contract | None, now: float) -> list[Finding]:
    if contract is None:
        return []
    moment = datetime.fromtimestamp(now, UTC)
    out = []
    for tenant in contract.tenants:
        for index, r in enumerate(tenant.raises):
            subject = f"tenant {tenant.name} raise {index} (pool {r.pool}, +{r.gpus} GPUs)"
            if r.expires is None:
                summary, severity = "temporary raise without an expiry", Severity.warning
                action = "give the raise an `expires` date; a temporary raise must end"
            elif not r.active(moment):
                summary = f"temporary raise expired {r.expires.isoformat()}"
                severity = Severity.warning
                action = (
                    "remove the raise (recompile with `gpupact compile --now` and apply) or "
                    "renew it with a new expiry and a reason"
                )
            else:
                continue
            out.append(
                Finding(
                    Domain.governance,
                    "expired-quota-raise",
                    severity,
                    subject,
                    summary,
                    (f"reason: {r.reason}",),
                    action,
                    {"tenant": tenant.name, "pool": r.pool, "gpus": r.gpus},
                )
            )
    return out


def _thresholds(contract: Contract | None) -> dict[str, float]:
    if contract is None:
        return {}
    return {
        c.name: c.max_queue_wait.total_seconds()
        for c in contract.classes
        if c.max_queue_wait is not None
    }


def _pending_evaluations(
    waits: Sequence[Wait], contract: Contract | None, opts: ReviewOptions
) -> list[Finding]:
    pattern = re.compile(opts.eval_pattern, re.IGNORECASE)
    promised = _thresholds(contract)
    groups: dict[str, list[Wait]] = defaultdict(list)
    for w in waits:
        names = (w.name or "", w.workload_class or "")
        if not any(pattern.search(n) for n in names):
            continue
        limit = promised.get(w.workload_class or "", opts.pending_threshold)
        if w.seconds > limit:
            groups[w.name or w.workload_class or w.key].append(w)
    out = []
    for name, items in sorted(groups.items()):
        longest = max(items, key=lambda w: w.seconds)
        still = sum(1 for w in items if not w.started)
        limit = promised.get(longest.workload_class or "", opts.pending_threshold)
        out.append(
            Finding(
                Domain.quota,
                "long-pending-evaluation",
                Severity.warning,
                f"job {longest.namespace + '/' if longest.namespace else ''}{name}",
                f"evaluation Pending up to {format_duration(longest.seconds)} "
                f"(limit {format_duration(limit)}); {still} still waiting",
                (
                    f"{len(items)} wait(s) over the limit, class {longest.workload_class or '?'}, "
                    f"tenant {longest.tenant or '?'}",
                ),
                "clean up zombie jobs holding the queue's quota or raise the quota "
                "(with an expiry); `gpupact diagnose` shows which quota blocks it",
                {"longestSeconds": longest.seconds, "waits": len(items), "pending": still},
            )
        )
    return out


def _low_utilisation(
    intervals: Sequence[Interval],
    window: Window,
    now: float,
    busy: Mapping[tuple[str, str], float] | None,
    opts: ReviewOptions,
) -> list[Finding]:
    services = [i for i in intervals if i.service]
    if not services:
        return []
    if not busy:
        return [
            Finding(
                Domain.governance,
                "utilisation-unknown",
                Severity.info,
                "ledger",
                "no DCGM utilisation in the ledger: low-utilisation services cannot be found",
                (),
                "ingest DCGM_FI_DEV_GPU_UTIL or DCGM_FI_PROF_GR_ENGINE_ACTIVE from Prometheus "
                "(`gpupact ledger utilisation --prometheus URL`)",
            )
        ]
    out = []
    for row in allocated(services, window, now, ("namespace", "service"), busy):
        ratio = row.utilisation
        if ratio is None or ratio >= opts.low_utilisation or row.gpu_hours < opts.min_gpu_hours:
            continue
        out.append(
            Finding(
                Domain.governance,
                "low-utilisation-service",
                Severity.warning,
                f"service {row.group['namespace']}/{row.group['service']}",
                f"busy {ratio:.0%} of {_hours(row.gpu_hours)} held",
                (
                    f"busy {_hours(row.busy_gpu_hours or 0.0)} (DCGM), "
                    f"below {opts.low_utilisation:.0%}",
                ),
                "make its replicas elastic (lower minReplicas, scale on queue length) or serve "
                "it from a pre-warm pool instead of holding GPUs all month",
                {"utilisation": round(ratio, 4), "gpuHours": round(row.gpu_hours, 6)},
            )
        )
    return out


def _retries(
    intervals: Sequence[Interval],
    window: Window,
    now: float,
    busy: Mapping[tuple[str, str], float] | None,
    opts: ReviewOptions,
) -> list[Finding]:
    groups: dict[str, list[Interval]] = defaultdict(list)
    for i in intervals:
        if i.gpu_hours(window.start, window.end, now) > 0:
            groups[_workload(i)].append(i)
    out = []
    for subject, items in sorted(groups.items()):
        restarts = sum(i.restarts for i in items)
        attempts = len(items) if items[0].job and not items[0].service else 0
        if restarts <= opts.max_restarts and attempts <= opts.max_attempts:
            continue
        hours = sum(i.gpu_hours(window.start, window.end, now) for i in items)
        if hours < opts.min_gpu_hours:
            continue
        known = [busy[(i.namespace, i.pod)] for i in items if busy and (i.namespace, i.pod) in busy]
        evidence = [f"{restarts} container restart(s), {len(items)} pod run(s)"]
        if known:
            evidence.append(f"busy {sum(known) / hours:.0%} of the hours held (DCGM)")
        # for a job, every attempt after the first re-does work: that share is waste
        wasted = 0.0
        if attempts > 1:
            ordered = sorted(items, key=lambda i: i.start)
            wasted = sum(i.gpu_hours(window.start, window.end, now) for i in ordered[:-1])
            evidence.append(f"{_hours(wasted)} in attempts that did not finish the job")
        out.append(
            Finding(
                Domain.governance,
                "retry-driven-usage",
                Severity.warning,
                subject,
                f"{_hours(hours)} held while it kept restarting",
                tuple(evidence),
                "fix the retry logic first (crash loop, failing step, retry without backoff) "
                "before buying GPUs for this load",
                {
                    "restarts": restarts,
                    "attempts": len(items),
                    "gpuHours": round(hours, 6),
                    "retryGpuHours": round(wasted, 6),
                },
            )
        )
    return out
