"""Strict parsers for the scalar values a contract is written in.

Each parser takes what YAML produced and returns an exact, typed value, or raises ValueError
with a message that says what was expected. The pydantic types in `schema.py` wrap them.

- durations: Go-like `1h30m`, `3m`, `45s`, `500ms`, plus `d` for days; units in descending
  order, each at most once, whole numbers only; a bare number is refused (which unit?).
- quantities: Kubernetes quantity strings (`80Gi`, `96`, `500m`) as exact integers.
- percentages: `20%` (or a whole number 0..100).
- parameter counts: `70B`, `7.5B`, `350M`, `1.2T`; a bare number is refused (which unit?).
- sharing: `exclusive`, `mig:<profile>` (e.g. `mig:1g.10gb`), `timeslice:<replicas>`.
- cron: five fields, numbers, `*`, ranges, lists and steps (no names, no `L`/`W`/`#`);
  day of week 0-6, the range of the API server's parser (robfig/cron v3 has no 7).
- time zones: IANA names (`Asia/Shanghai`), as a CronJob's `timeZone` takes them.
- instants: timezone-aware datetimes; a bare date means 00:00 UTC of that day.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from fractions import Fraction
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gpupact.kube.fields import MAX_DURATION_MS, MAX_DURATION_TEXT
from gpupact.kube.quantity import QuantityError, parse_quantity

# --- durations ----------------------------------------------------------------------------

_DURATION_RE = re.compile(
    r"^(?:(?P<d>\d+)d)?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m(?!s))?(?:(?P<s>\d+)s)?(?:(?P<ms>\d+)ms)?$"
)
_DURATION_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1))


def parse_duration(value: Any) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if not isinstance(value, str):
        raise ValueError(
            f"expected a duration string with a unit such as '3m', '90s' or '1h30m', "
            f"got {_describe(value)}"
        )
    text = value.strip()
    if text == "0":
        return timedelta(0)
    m = _DURATION_RE.match(text)
    if not text or not m:
        raise ValueError(
            f"invalid duration {value!r}: use whole numbers with units d, h, m, s, ms in "
            f"that order, e.g. '3m', '90s', '1h30m'"
        )
    millis = sum(int(m.group(unit) or 0) * scale for unit, scale in _DURATION_UNITS)
    if millis > MAX_DURATION_MS:
        raise ValueError(
            f"duration {value!r} is longer than a Kubernetes duration can be "
            f"({MAX_DURATION_TEXT}, about 292 years)"
        )
    return timedelta(milliseconds=millis)


def format_duration(value: timedelta) -> str:
    """The shortest string `parse_duration` reads back to the same value."""
    millis = (value.days * 86_400 + value.seconds) * 1000 + value.microseconds // 1000
    if millis == 0:
        return "0s"
    out = ""
    for unit, scale in _DURATION_UNITS:
        count, millis = divmod(millis, scale)
        if count:
            out += f"{count}{unit}"
    return out


# --- quantities ---------------------------------------------------------------------------


def _quantity_text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"expected a quantity such as '80Gi' or '96', got {_describe(value)}")
    return value if isinstance(value, str) else repr(value)


def parse_quantity_text(value: Any) -> str:
    """A valid, non-negative quantity, kept as the text the user wrote."""
    text = _quantity_text(value)
    try:
        q = parse_quantity(text)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None
    if q.amount < 0:
        raise ValueError(f"quantity must not be negative, got {text!r}")
    return text.strip()


def parse_bytes(value: Any) -> int:
    """A memory size in bytes (rounded up, as Quantity.Value() does)."""
    text = parse_quantity_text(value)
    return _int64(parse_quantity(text).value, text)


def parse_millicpu(value: Any) -> int:
    """A CPU amount in millicores (rounded up, as Quantity.MilliValue() does)."""
    text = parse_quantity_text(value)
    return _int64(parse_quantity(text).milli_value, text)


def _int64(amount: int, text: str) -> int:
    """Kubernetes holds amounts in base units as int64; a larger one is refused here, where
    the contract can say where it is, not later when the quantity is written out."""
    if amount > 2**63 - 1:
        raise ValueError(f"quantity {text!r} is too large: more than 2^63-1 base units")
    return amount


def format_millicpu(millis: int) -> str:
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


# --- percentages and counts ---------------------------------------------------------------

_PERCENT_RE = re.compile(r"^(\d{1,3})%$")


def parse_percent(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and (m := _PERCENT_RE.match(value.strip())):
        number = int(m.group(1))
    else:
        raise ValueError(f"expected a percentage such as '20%', got {_describe(value)}")
    if not 0 <= number <= 100:
        raise ValueError(f"percentage must be between 0% and 100%, got {number}%")
    return number


_PARAMS_RE = re.compile(r"^(\d+)(?:\.(\d+))?([KMBT])$")
_PARAMS_SCALE = {"K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


def parse_params(value: Any) -> int:
    """A parameter count: `70B` is 70 x 10^9. A bare number is refused, as a duration is:
    `params: 70` almost always means 70B, and read as 70 it would pass every memory check."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(
            f"a parameter count needs a unit (K, M, B or T): write '{value}B' for {value} "
            f"billion, got the bare number {value}"
        )
    m = _PARAMS_RE.match(value.strip()) if isinstance(value, str) else None
    if not m:
        raise ValueError(
            f"expected a parameter count such as '70B', '7.5B' or '350M', got {_describe(value)}"
        )
    whole, frac, unit = m.groups()
    count = (Fraction(int(whole)) + (Fraction(int(frac), 10 ** len(frac)) if frac else 0)) * (
        _PARAMS_SCALE[unit]
    )
    if count.denominator != 1 or count <= 0:
        raise ValueError(f"parameter count must be a positive whole number, got {value!r}")
    return int(count)


def format_params(count: int) -> str:
    """The text `parse_params` reads back to `count`: the largest unit that divides it, else
    thousands with decimals (`1234` -> `1.234K`)."""
    for unit, scale in sorted(_PARAMS_SCALE.items(), key=lambda item: -item[1]):
        if count % scale == 0:
            return f"{count // scale}{unit}"
    whole, rest = divmod(count, 1000)
    return f"{whole}.{rest:03d}".rstrip("0") + "K"


# --- GPU sharing --------------------------------------------------------------------------

_MIG_PROFILE_RE = re.compile(r"^([1-7])g\.(\d+)gb(\+me)?$")
_GIB = 2**30


@dataclass(frozen=True, slots=True)
class Sharing:
    """How one physical GPU is offered to pods (Table 43-4)."""

    mode: str  # "exclusive" | "mig" | "timeslice"
    profile: str | None = None  # MIG profile, e.g. "1g.10gb"
    replicas: int = 1  # time-slice replicas per GPU

    @property
    def shared(self) -> bool:
        return self.mode != "exclusive"

    def devices_per_gpu(self, gpu_memory: int) -> int:
        """Schedulable devices one physical GPU of `gpu_memory` bytes becomes: time-slice
        replicas, or MIG instances of the profile. MIG GPUs (A100, H100, H200, H20, B200) have
        7 compute and 8 memory slices, so `<n>g.<m>gb` fits 7 // n times by compute and
        8 // (its memory slices) times by memory, a slice being 1/8 of the GPU's memory (1g.10gb
        on 80 GB: 7; 1g.20gb: 4; 1g.10gb on 40 GB: 4). A media-extension profile (`+me`) takes
        the GPU's only media engines: one per GPU."""
        if self.mode != "mig":
            return self.replicas
        m = _MIG_PROFILE_RE.match(self.profile)  # type: ignore[arg-type]
        compute, memory, media = int(m.group(1)), int(m.group(2)), m.group(3)  # type: ignore[union-attr]
        if media:
            return 1
        slice_gb = Fraction(gpu_memory, _GIB * 8) if gpu_memory else Fraction(memory)
        slices = max(1, round(memory / slice_gb))
        return max(0, min(7 // compute, 8 // slices))

    def device_memory(self, gpu_memory: int) -> int:
        """Memory one pod sees on one device: the MIG slice (its `<n>gb`, read as GiB), or
        the whole GPU (time-slicing shares memory without partitioning it)."""
        if self.mode == "mig":
            return int(_MIG_PROFILE_RE.match(self.profile).group(2)) * _GIB  # type: ignore[union-attr]
        return gpu_memory

    @property
    def resource_name(self) -> str:
        """The extended resource pods request (device plugin "mixed" MIG strategy). The plugin
        names a media-extension profile `1g.5gb+me` as `mig-1g.5gb.me` (a resource name has no
        '+'; NVIDIA/k8s-device-plugin internal/rm/rm.go)."""
        if self.mode == "mig":
            return "nvidia.com/mig-" + self.profile.replace("+", ".")  # type: ignore[union-attr]
        return "nvidia.com/gpu"

    def __str__(self) -> str:
        if self.mode == "mig":
            return f"mig:{self.profile}"
        if self.mode == "timeslice":
            return f"timeslice:{self.replicas}"
        return "exclusive"


# the most time-slicing replicas of one GPU the twin models (cluster/devices.py
# MAX_GPU_REPLICAS, which a test holds equal): a pool of more would plan 1/k of an engine's
# memory (a vLLM gpu_memory_utilization of 0.9/k) and fail in the twin instead of here
MAX_TIMESLICE_REPLICAS = 1024


def parse_sharing(value: Any) -> Sharing:
    if isinstance(value, Sharing):
        return value
    hint = "expected 'exclusive', 'mig:<profile>' (e.g. 'mig:1g.10gb') or 'timeslice:<replicas>'"
    if not isinstance(value, str):
        raise ValueError(f"{hint}, got {_describe(value)}")
    mode, _, arg = value.strip().partition(":")
    if mode == "exclusive" and not arg:
        return Sharing("exclusive")
    if mode == "mig":
        if not _MIG_PROFILE_RE.match(arg):
            raise ValueError(f"invalid MIG profile {arg!r}: expected '<n>g.<m>gb', e.g. '1g.10gb'")
        return Sharing("mig", profile=arg)
    if mode == "timeslice":
        if not arg:
            raise ValueError("timeslice needs a replica count, e.g. 'timeslice:4'")
        if not arg.isdigit() or (len(arg.lstrip("0")) <= 4 and int(arg) < 2):
            raise ValueError(f"time-slice replicas must be a whole number >= 2, got {arg!r}")
        if len(arg.lstrip("0")) > 4 or int(arg) > MAX_TIMESLICE_REPLICAS:
            # plan divides the engine's memory by it and the twin sizes device arrays with it
            shown = arg if len(arg) <= 12 else f"{arg[:8]}... ({len(arg):,} digits)"
            raise ValueError(
                f"time-slice replicas must be at most {MAX_TIMESLICE_REPLICAS} a GPU, got {shown}"
            )
        return Sharing("timeslice", replicas=int(arg))
    raise ValueError(f"{hint}, got {value!r}")


# --- cron ---------------------------------------------------------------------------------

_CRON_ITEM_RE = re.compile(r"^(\*|(\d+)(?:-(\d+))?)(?:/(\d+))?$")
_CRON_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 6),  # robfig/cron v3 (the CronJob validator's parser): Sunday is 0 only
)


def parse_cron(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a cron schedule such as '0 8 * * 1-5', got {_describe(value)}")
    fields = value.split()
    if len(fields) != 5:
        raise ValueError(
            f"cron schedule needs 5 fields (minute hour day-of-month month day-of-week), "
            f"got {len(fields)} in {value!r}"
        )
    for text, (name, low, high) in zip(fields, _CRON_FIELDS, strict=True):
        for item in text.split(","):
            m = _CRON_ITEM_RE.match(item)
            if not m:
                raise ValueError(f"invalid cron {name} {text!r} in {value!r}")
            first, last, step = m.group(2), m.group(3), m.group(4)
            numbers = [int(n) for n in (first, last) if n is not None]
            if any(not low <= n <= high for n in numbers) or (last and int(last) < int(first)):
                hint = " (Sunday is 0)" if name == "day of week" and 7 in numbers else ""
                raise ValueError(
                    f"cron {name} {text!r} out of range {low}-{high}{hint} in {value!r}"
                )
            if step is not None and int(step) == 0:
                raise ValueError(f"cron step must be positive in {value!r}")
    return " ".join(fields)


# --- time zones --------------------------------------------------------------------------

# apis/batch/validation validTimeZoneCharacters: each '/'-separated part 1-14 characters, not
# starting with '-' (tz's own file-name rule); '.' is left out here as the zone names have none.
_ZONE_PART_RE = re.compile(r"^[A-Za-z0-9_+\-]{1,14}$")
# The host's own zone under another name: the controller's differs, as for "Local".
_HOST_ZONES = ("local", "localtime")


def parse_time_zone(value: Any) -> str:
    """An IANA time zone name the CronJob validator accepts: Go's time.LoadLocation finds it,
    and it is neither "" nor "Local" in any case (apis/batch/validation refuses the
    controller's local zone, which differs per cluster)."""
    if not isinstance(value, str):
        raise ValueError(
            f"expected an IANA time zone such as 'Asia/Shanghai', got {_describe(value)}"
        )
    if value.lower() in _HOST_ZONES:
        raise ValueError(
            f"{value!r} is each machine's own zone (the controller's differs): name an IANA "
            "zone such as 'Asia/Shanghai'"
        )
    parts = value.split("/")
    if not value or not all(
        _ZONE_PART_RE.match(part) and not part.startswith("-") for part in parts
    ):
        raise ValueError(f"expected an IANA time zone such as 'Asia/Shanghai', got {value!r}")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder such as 'America'
        raise ValueError(
            f"unknown time zone {value!r} (an IANA name such as 'Asia/Shanghai')"
        ) from None
    return value


# --- instants -----------------------------------------------------------------------------


def parse_instant(value: Any) -> datetime:
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(
                f"expected an ISO 8601 timestamp such as '2025-11-12T00:00:00Z', got {value!r}"
            ) from None
        if len(value.strip()) == 10:  # a bare date
            return moment.replace(tzinfo=UTC)
    else:
        raise ValueError(f"expected an ISO 8601 timestamp, got {_describe(value)}")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"timestamp {moment.isoformat()} has no timezone: add one, e.g. 'Z'")
    return moment


def _describe(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)
