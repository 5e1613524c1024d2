"""GPU-hours as a FOCUS-style cost and usage CSV (FinOps Open Cost and Usage Specification 1.0).

One row per usage interval, clipped to the billing period: the charge period is the part of
the interval inside it. ConsumedQuantity/PricingQuantity are GPU-hours (`PricingUnit` and
`ConsumedUnit` "GPU-Hours"); BilledCost = GPU-hours x the GPU model's price (0 when none is
given). Columns FOCUS does not define carry the `x_` prefix the spec reserves for them.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import IO

from gpupact.ledger.hours import Window
from gpupact.ledger.records import Interval

UNIT = "GPU-Hours"
FOCUS_COLUMNS = (
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "ConsumedQuantity",
    "ConsumedUnit",
    "EffectiveCost",
    "ListCost",
    "ListUnitPrice",
    "PricingCategory",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "InvoiceIssuerName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "ServiceName",
    "SubAccountId",
    "SubAccountName",
    "Tags",
)
OWN_COLUMNS = (
    "x_Tenant",
    "x_Owner",
    "x_CostCentre",
    "x_Pool",
    "x_GpuModel",
    "x_Gpus",
    "x_WorkloadClass",
    "x_Model",
    "x_Job",
    "x_Namespace",
    "x_Source",
    "x_Restarts",
)
COLUMNS = FOCUS_COLUMNS + OWN_COLUMNS


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_focus(
    out: IO[str],
    items: Iterable[Interval],
    window: Window,
    now: float,
    *,
    prices: Mapping[str, float] | None = None,
    currency: str = "USD",
    provider: str = "gpupact",
) -> int:
    """Write the CSV (header and one row per interval with GPU-hours in the window); rows
    written."""
    prices = prices or {}
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    rows = 0
    for i in items:
        hours = i.gpu_hours(window.start, window.end, now)
        if hours <= 0:
            continue
        start = max(i.start, window.start)
        end = min(i.end if i.end is not None else now, window.end)
        price = prices.get(i.gpu_model or "", prices.get("*", 0.0))
        cost = round(hours * price, 6)
        tags = {
            k: v
            for k, v in (
                ("owner", i.owner),
                ("cost-centre", i.cost_centre),
                ("tenant", i.tenant),
                ("class", i.workload_class),
            )
            if v
        }
        what = i.service or i.job or i.pod
        writer.writerow(
            (
                cost,
                i.cost_centre or "",
                i.cost_centre or "",
                currency,
                _iso(window.end),
                _iso(window.start),
                "Usage",
                "",
                f"{i.gpus:g} x {i.gpu_model or 'GPU'} for {what}",
                "Usage-Based",
                _iso(end),
                _iso(start),
                round(hours, 6),
                UNIT,
                cost,
                cost,
                price,
                "Standard",
                round(hours, 6),
                UNIT,
                provider,
                provider,
                provider,
                i.key,
                f"{i.namespace}/{i.pod}",
                "Kubernetes Pod" if i.source != "slurm" else "Slurm Job",
                "AI and Machine Learning",
                f"GPU {i.pool or 'pool'}",
                i.tenant or "",
                i.tenant or "",
                json.dumps(tags, sort_keys=True),
                i.tenant or "",
                i.owner or "",
                i.cost_centre or "",
                i.pool or "",
                i.gpu_model or "",
                i.gpus,
                i.workload_class or "",
                i.model or "",
                i.job or "",
                i.namespace,
                i.source,
                i.restarts,
            )
        )
        rows += 1
    return rows
