"""Request-token profiles from the gateway, summarised as the percentiles capacity planning
takes (`gpupact plan --input-p50 ... --input-p95 ...`, a contract service's `tokens`).

A profile holds histograms of prompt and output tokens: buckets `{le, count}` (requests with
at most `le` tokens and more than the previous bound). Profiles of one model are added bucket
by bucket; a percentile is the bound of the bucket where the cumulative count reaches it —
an upper estimate, the safe side for sizing KV cache and TTFT.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

QUANTILES = {"p50": 0.50, "p95": 0.95, "p99": 0.99}


def merge(histograms: Iterable[Sequence[Mapping[str, Any]]]) -> list[tuple[int, int]]:
    counts: dict[int, int] = defaultdict(int)
    for buckets in histograms:
        for b in buckets:
            counts[int(b["le"])] += int(b["count"])
    return sorted(counts.items())


def percentiles(buckets: Sequence[tuple[int, int]]) -> dict[str, int] | None:
    """p50/p95/p99 in tokens (None for an empty histogram)."""
    total = sum(n for _, n in buckets)
    if total <= 0:
        return None
    out = {}
    for name, q in QUANTILES.items():
        running = 0
        for le, n in buckets:
            running += n
            if running >= q * total:
                out[name] = le
                break
    return out


def summarise(profiles: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One summary per model: requests counted, input and output percentiles, and the
    `gpupact plan` flags they give."""
    by_model: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for p in profiles:
        by_model[p["model"]].append(p)
    out = []
    for model, items in sorted(by_model.items()):
        inputs = merge(p.get("inputTokens") or [] for p in items)
        outputs = merge(p.get("outputTokens") or [] for p in items)
        pin, pout = percentiles(inputs), percentiles(outputs)
        flags = []
        for prefix, values in (("input", pin), ("output", pout)):
            if values:
                flags += [f"--{prefix}-p50 {values['p50']}", f"--{prefix}-p95 {values['p95']}"]
        out.append(
            {
                "model": model,
                "profiles": len(items),
                "requests": sum(n for _, n in inputs),
                "inputTokens": pin,
                "outputTokens": pout,
                "planFlags": " ".join(flags),
            }
        )
    return out
