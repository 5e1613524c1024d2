"""The public measurements of `points.yaml`, read into typed points; a malformed entry is an
InputError naming the file, line and field path (gpupact.source's located documents)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpupact.errors import FieldError, InputError
from gpupact.source import load_documents

POINTS = Path(__file__).with_name("points.yaml")

# Issue 18's accuracy targets, as the largest |predicted / measured - 1| a category accepts.
TOLERANCE = {
    "weights": 0.10,
    "kv_tokens": 0.15,
    "ttft_c1": 0.30,
    "itl_c1": 0.30,
    "e2e_batch": 0.30,  # one small fixed batch: decode-bound like concurrency 1
    "ttft_saturation": 0.50,
    "itl_saturation": 0.50,
    # many requests in flight below saturation (Poisson arrivals the engine keeps up with):
    # batching, interference and the engine's execution mode, no backlog
    "ttft_load": 0.50,
    "itl_load": 0.50,
    "throughput_saturation": 0.30,  # GPUs bought = load / this: its error is the purchase's
}
UNITS = {
    "weights": "GiB",
    "kv_tokens": "tokens",
    "throughput_saturation": "tokens/s",  # output tokens per second of the replica
} | {c: "ms" for c in TOLERANCE if c not in ("weights", "kv_tokens", "throughput_saturation")}
LATENCY = frozenset(c for c, unit in UNITS.items() if unit == "ms")
STATISTICS = frozenset({"mean", "median", "p99"})
# What an ITL statistic is taken over: each request's mean gap (TPOT, the default), or every
# inter-token gap of every request pooled (`gaps`: vLLM's and SGLang's bench_serving ITL).
OVER = frozenset({"requests", "gaps"})


Lengths = int | tuple[int, int]  # fixed, or (low, high): uniform integers, both included


@dataclass(frozen=True)
class Workload:
    """What the benchmark offered: prompt and completion lengths (fixed, or uniform over a
    range as SGLang's random dataset draws them) and one of a concurrency (closed loop), a
    batch (all at once, one run) or a rate (Poisson arrivals; inf: all at t = 0)."""

    input: Lengths
    output: Lengths
    concurrency: int | None = None
    batch: int | None = None
    rate: float | None = None
    requests: int | None = None  # as the source states; None: not stated
    # the client asks for exactly `output` tokens, ignoring end-of-sequence, and says so
    # (max_new_tokens with ignore_eos: bench_serving's default)
    ignore_eos: bool = False


@dataclass(frozen=True)
class Point:
    id: str
    category: str
    url: str
    where: str
    model: str
    quantization: str
    gpu: str
    tp: int
    engine: str
    engine_version: str | None
    measured: float
    unit: str
    statistic: str | None = None
    over: str = "requests"
    same_architecture_as: str | None = None
    gpu_memory_gib: float | None = None  # as the runtime reported it, when the source says
    kv_cache_dtype: str | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    workload: Workload | None = None
    line: int | None = None
    # why the measurement had part of its prompts cached (a TTFT then bounds a cold prefill
    # from below only: a prediction may be slower, not faster); None: a cold measurement
    prefix_cache: str | None = None

    @property
    def tolerance(self) -> float:
        return TOLERANCE[self.category]

    def within(self, error: float) -> bool:
        """Whether a relative error (predicted / measured - 1) meets the category's tolerance;
        against a prefix-cached TTFT only from below: a cold prefill may take longer."""
        if self.prefix_cache is not None:
            return error >= -self.tolerance
        return abs(error) <= self.tolerance


def _req(entry: dict[str, Any], key: str, kind: type | tuple[type, ...], path: list) -> Any:
    if key not in entry or entry[key] is None:
        raise FieldError([*path, key], "required")
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        raise FieldError([*path, key], f"must be {_kind_name(kind)}, got {value!r}")
    return value


def _opt(entry: dict[str, Any], key: str, kind: type | tuple[type, ...], path: list) -> Any:
    if entry.get(key) is None:
        return None
    return _req(entry, key, kind, path)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {"str": "a string", "int": "an integer", "float": "a number", "dict": "a mapping"}
    return " or ".join(names.get(k.__name__, k.__name__) for k in kinds)


def _positive(value: float, path: list) -> float:
    if not value > 0 or (isinstance(value, float) and math.isnan(value)):
        raise FieldError(path, f"must be > 0, got {value!r}")
    return value


def _workload(entry: dict[str, Any], path: list) -> Workload:
    w = _req(entry, "workload", dict, path)
    p = [*path, "workload"]
    unknown = set(w) - {"input", "output", "concurrency", "batch", "rate", "requests", "ignore_eos"}
    if unknown:
        raise FieldError([*p, sorted(unknown)[0]], "unknown field")
    loads = [k for k in ("concurrency", "batch", "rate") if w.get(k) is not None]
    if len(loads) != 1:
        raise FieldError(p, "needs exactly one of concurrency, batch, rate")
    rate = w.get("rate")
    if rate is not None:
        rate = math.inf if rate == "inf" else _req(w, "rate", (int, float), p)
        _positive(rate, [*p, "rate"])
    ints = {k: _opt(w, k, int, p) for k in ("concurrency", "batch", "requests")}
    for key, value in ints.items():
        if value is not None:
            _positive(value, [*p, key])
    lengths = {key: _lengths(w, key, p) for key in ("input", "output")}
    ignore_eos = w.get("ignore_eos", False)
    if not isinstance(ignore_eos, bool):
        raise FieldError([*p, "ignore_eos"], f"must be true or false, got {ignore_eos!r}")
    return Workload(rate=rate, **lengths, **ints, ignore_eos=ignore_eos)


def _lengths(w: dict[str, Any], key: str, path: list) -> Lengths:
    value = _req(w, key, (int, dict), path)
    if isinstance(value, int):
        return _positive(value, [*path, key])
    span = value.get("uniform")
    where = [*path, key, "uniform"]
    if set(value) != {"uniform"} or not isinstance(span, list) or len(span) != 2:
        raise FieldError(where, "a length is a token count or {uniform: [low, high]}")
    low, high = span
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in span) or not (
        0 < low <= high
    ):
        raise FieldError(where, f"needs 0 < low <= high, got {span!r}")
    return (low, high)


def _prefix_cache(entry: dict[str, Any], category: str, path: list) -> str | None:
    why = _opt(entry, "prefix_cache", str, path)
    if why is not None and not category.startswith("ttft"):
        raise FieldError([*path, "prefix_cache"], "only a TTFT can be prefix-cached")
    return why


def _point(entry: Any, path: list, line: int | None) -> Point:
    if not isinstance(entry, dict):
        raise FieldError(path, "each point must be a mapping")
    category = _req(entry, "category", str, path)
    if category not in TOLERANCE:
        raise FieldError([*path, "category"], f"unknown category {category!r}")
    source = _req(entry, "source", dict, path)
    engine = _req(entry, "engine", dict, path)
    measured = _req(entry, "measured", dict, path)
    mp = [*path, "measured"]
    unit = _req(measured, "unit", str, mp)
    if unit != UNITS[category]:
        raise FieldError([*mp, "unit"], f"{category} is measured in {UNITS[category]}")
    statistic = _opt(measured, "statistic", str, mp)
    if category in LATENCY and statistic not in STATISTICS:
        raise FieldError([*mp, "statistic"], f"must be one of {sorted(STATISTICS)}")
    over = _opt(measured, "over", str, mp) or "requests"
    if over not in OVER or (over == "gaps" and not category.startswith("itl")):
        raise FieldError([*mp, "over"], f"must be one of {sorted(OVER)} (gaps: ITL only)")
    flags = entry.get("flags") or {}
    if not isinstance(flags, dict):
        raise FieldError([*path, "flags"], "must be a mapping")
    return Point(
        id=_req(entry, "id", str, path),
        category=category,
        url=_req(source, "url", str, [*path, "source"]),
        where=_req(source, "where", str, [*path, "source"]),
        model=_req(entry, "model", str, path),
        quantization=_req(entry, "quantization", str, path),
        gpu=_req(entry, "gpu", str, path),
        tp=_positive(_req(entry, "tp", int, path), [*path, "tp"]),
        engine=_req(engine, "name", str, [*path, "engine"]),
        engine_version=_opt(engine, "version", str, [*path, "engine"]),
        measured=_positive(_req(measured, "value", (int, float), mp), [*mp, "value"]),
        unit=unit,
        statistic=statistic,
        over=over,
        same_architecture_as=_opt(entry, "same_architecture_as", str, path),
        gpu_memory_gib=_opt(entry, "gpu_memory_gib", (int, float), path),
        kv_cache_dtype=flags.get("kv_cache_dtype"),
        flags=dict(flags),
        workload=_workload(entry, path) if category in LATENCY else None,
        line=line,
        prefix_cache=_prefix_cache(entry, category, path),
    )


def load_points(path: Path = POINTS) -> list[Point]:
    """Every point of the file, in file order; ids are unique."""
    docs = load_documents(path)
    if len(docs) != 1 or not isinstance(docs[0].data, list):
        raise InputError("must be one YAML list of points", file=str(path))
    doc = docs[0]
    points: list[Point] = []
    seen: set[str] = set()
    for i, entry in enumerate(doc.data):
        try:
            line = (doc.locate([i]) or (None,))[0]
            point = _point(entry, [i], line)
            if point.id in seen:
                raise FieldError([i, "id"], f"duplicate id {point.id!r}")
        except FieldError as err:
            raise doc.error(err) from None
        seen.add(point.id)
        points.append(point)
    return points
