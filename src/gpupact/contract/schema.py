"""The compute contract as typed, frozen pydantic models.

YAML keys are camelCase (`gpusPerPod`, `costCenter`); Python attributes are snake_case. Unknown
keys are errors. Each model checks only itself; references between sections (a service's
class, a quota's pool) are checked and resolved by `links.py`, after which the optional
fields it documents as "resolved" are never None. A compiler walks `Contract.pools`,
`.classes`, `.tenants`, `.services` and `.jobs` in file order.

Capacity units: a pool's "devices" are what pods request (`nvidia.com/gpu`, or one MIG
instance): physical GPUs x `Pool.devices_per_gpu`. Quotas and `gpusPerPod` count devices.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    Strict,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from gpupact.contract.units import (
    Sharing,
    format_duration,
    format_millicpu,
    format_params,
    parse_bytes,
    parse_cron,
    parse_duration,
    parse_instant,
    parse_millicpu,
    parse_params,
    parse_percent,
    parse_quantity_text,
    parse_sharing,
    parse_time_zone,
)

API_VERSION = "gpupact.io/v1alpha1"
KIND = "Contract"

# --- field types --------------------------------------------------------------------------

_DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_1035_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def _dns_label(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 63 or not _DNS_LABEL_RE.match(value):
        raise ValueError(
            f"must be a DNS-1123 label (lowercase letters, digits and '-', at most 63 "
            f"characters, starting and ending with a letter or digit), got {value!r}"
        )
    return value


def _dns_1035_label(value: Any) -> str:
    """A Kubernetes Service name (and so a DNS host name) must start with a letter."""
    _dns_label(value)
    if not _DNS_1035_RE.match(value):
        raise ValueError(
            f"must be a DNS-1035 label (it names a Kubernetes Service): start with a lowercase "
            f"letter, then lowercase letters, digits and '-', got {value!r}"
        )
    return value


def _label_value(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE_RE.match(value):
        raise ValueError(
            f"must be a Kubernetes label value (letters, digits, '-', '_', '.', at most 63 "
            f"characters), got {value!r}"
        )
    return value


Name = Annotated[str, BeforeValidator(_dns_label)]
ServiceName = Annotated[str, BeforeValidator(_dns_1035_label)]
LabelValue = Annotated[str, BeforeValidator(_label_value)]
Text = Annotated[str, Strict(), Field(min_length=1)]
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def _fits(high: int, what: str) -> Any:
    def check(value: int) -> int:
        if value > high:
            raise ValueError(f"must be at most {high} ({what}), got {value}")
        return value

    return AfterValidator(check)


# Every count compile writes lands in a Kubernetes field of a fixed width: replicas,
# parallelism, minMember and the like are int32; quotas are quantities (int64 base units).
_INT32 = _fits(INT32_MAX, "Kubernetes stores it as an int32")
_INT64 = _fits(INT64_MAX, "a Kubernetes quantity holds an int64")
Count = Annotated[int, Strict(), Field(ge=0), _INT64]
Positive = Annotated[int, Strict(), Field(ge=1), _INT64]
Count32 = Annotated[int, Strict(), Field(ge=0), _INT32]
Positive32 = Annotated[int, Strict(), Field(ge=1), _INT32]
Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]
Instant = Annotated[datetime, BeforeValidator(parse_instant)]
Bytes = Annotated[int, BeforeValidator(parse_bytes)]
MilliCPU = Annotated[
    int,
    BeforeValidator(parse_millicpu),
    PlainSerializer(format_millicpu, return_type=str, when_used="json"),
]
QuantityText = Annotated[str, BeforeValidator(parse_quantity_text)]
Percent = Annotated[int, BeforeValidator(parse_percent)]
Params = Annotated[
    int,
    BeforeValidator(parse_params),
    PlainSerializer(format_params, return_type=str, when_used="json"),
]
Cron = Annotated[str, BeforeValidator(parse_cron)]
TimeZone = Annotated[str, BeforeValidator(parse_time_zone)]
SharingMode = Annotated[
    Sharing, BeforeValidator(parse_sharing), PlainSerializer(str, return_type=str)
]


class Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        serialize_by_alias=True,
    )


class LatencyTier(StrEnum):
    """Table 43-1's latency column: ms-s, minutes-hours, hours-days."""

    seconds = "seconds"
    minutes = "minutes"
    hours = "hours"


class Quantization(StrEnum):
    """A weights (or KV cache) format. `int4` is the AWQ/GPTQ layout (4-bit weights in groups of
    128 input channels, an fp16 scale and a 4-bit zero per group), `int8` the w8a8 one (8-bit
    weights, a scale per output channel), `nf4` bitsandbytes 4-bit NormalFloat (blocks of 64
    with double-quantised absmax), `fp8` FP8 with one scale per tensor, `fp8-channel` one per
    output channel, `fp8-block` one per 128x128 block (DeepSeek-V3, Qwen3 FP8). The names
    users know these by (awq, gptq, w8a8, bnb-4bit, ...) are accepted as aliases."""

    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    fp8_channel = "fp8-channel"
    fp8_block = "fp8-block"
    int8 = "int8"
    int4 = "int4"
    nf4 = "nf4"

    @classmethod
    def _missing_(cls, value: object) -> Quantization | None:
        if isinstance(value, str):
            key = value.strip().lower().replace("_", "-")
            alias = _QUANTIZATION_ALIASES.get(key, key)
            for member in cls:
                if member.value == alias:
                    return member
        return None

    @property
    def bits(self) -> int:
        """Bits of one weight, scales and zeros aside."""
        return {"fp32": 32, "bf16": 16, "fp16": 16, "int4": 4, "nf4": 4}.get(self.value, 8)

    def weight_bytes(self, params: int) -> int:
        """Bytes of `params` weights in this format (no scales, KV cache or activations)."""
        return params * self.bits // 8


_QUANTIZATION_ALIASES = {
    "awq": "int4",
    "gptq": "int4",
    "w4a16": "int4",
    "gptq-int4": "int4",
    "w8a8": "int8",
    "w8a8-int8": "int8",
    "bnb-4bit": "nf4",
    "bitsandbytes": "nf4",
    "bnb": "nf4",
    "fp8-tensor": "fp8",
    "fp8-per-tensor": "fp8",
    "fp8-per-channel": "fp8-channel",
    "fp8-dynamic": "fp8-channel",
    "fp8-e4m3": "fp8",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32",
}


class BusinessPriority(StrEnum):
    critical = "critical"
    high = "high"
    medium = "medium"
    low = "low"


class GangScope(StrEnum):
    """What must start together. `replica`: the pods of one replica (tensorParallel /
    gpusPerPod of them; one PodGroup per replica). `service`: every pod of the minimum
    replica count. `none`: pods start one by one."""

    none = "none"
    replica = "replica"
    service = "service"


# --- metadata -----------------------------------------------------------------------------


class Metadata(Model):
    name: Name
    description: str | None = None
    # the platform team: owner and cost centre of the objects no tenant owns (pools' queues
    # and flavors, PriorityClasses, NodePools), so that every compiled object carries both
    owner: Text | None = None
    cost_center: Text | None = None


# --- pools --------------------------------------------------------------------------------

_MODEL_MEMORY_RE = re.compile(r"-(\d+)g$")


class GpuSpec(Model):
    """The GPU of every node in a pool (labels `gpu.model`, `gpu.topology`)."""

    model: LabelValue  # e.g. a100-80g, h100-80g
    product: LabelValue | None = None  # the real nvidia.com/gpu.product, if known
    memory: Bytes | None = None  # per GPU; defaults from a `-<N>g` model suffix (N GiB)
    per_node: Positive32 = 8
    topology: LabelValue | None = None  # e.g. nvlink-8, pcie

    @model_validator(mode="after")
    def _memory_from_model(self) -> GpuSpec:
        if self.memory is None:
            m = _MODEL_MEMORY_RE.search(self.model)
            if not m:
                raise ValueError(
                    f"gpu.memory is required when gpu.model ({self.model!r}) does not end in "
                    f"'-<N>g', e.g. memory: 48Gi"
                )
            object.__setattr__(self, "memory", int(m.group(1)) * 2**30)
        return self

    @property
    def nvlink_domain(self) -> int:
        """GPUs joined by NVLink: `nvlink-<n>` gives n, plain `nvlink` the whole node, else 0."""
        topo = self.topology or ""
        if topo == "nvlink":
            return self.per_node
        if topo.startswith("nvlink-") and topo[7:].isdigit():
            return int(topo[7:])
        return 0


# Larger than any Kubernetes cluster runs today (GKE's limit is 65,000 nodes); keeps every
# quota and NodePool limit the compiler derives inside int64 quantities.
MAX_NODES_PER_POOL = 100_000


class NodeRange(Model):
    min: Count = 0
    max: Annotated[int, Strict(), Field(ge=0, le=MAX_NODES_PER_POOL)]

    @field_validator("max")
    @classmethod
    def _max_not_below_min(cls, value: int, info: ValidationInfo) -> int:
        low = info.data.get("min")
        if low is not None and value < low:
            raise ValueError(f"max ({value}) must not be below min ({low})")
        return value


class NodeShape(Model):
    cpu: MilliCPU | None = None
    memory: Bytes | None = None


class ModelCache(StrEnum):
    """Where a replica reads its weights from. `none`: fetched on every start (modelLoad);
    `node`: a hostPath cache on the node (compiled as the `model-cache` volume), so a node
    that loaded the model before starts a replica in `cachedModelLoad`."""

    none = "none"
    node = "node"


class ColdStart(Model):
    """Phases between "scale up" and "serving" (43.4): each a duration, 0 when unknown."""

    provision: Duration = timedelta(0)
    driver: Duration = timedelta(0)
    device_plugin: Duration = timedelta(0)
    image_pull: Duration = timedelta(0)
    model_load: Duration = timedelta(0)
    model_cache: ModelCache = ModelCache.none
    cached_model_load: Duration | None = None  # model load from the node's cache

    @model_validator(mode="after")
    def _cache(self) -> ColdStart:
        if self.model_cache is ModelCache.node and self.cached_model_load is None:
            raise ValueError(
                "modelCache: node needs cachedModelLoad (the load time from the node's disk)"
            )
        if self.cached_model_load is not None:
            if self.model_cache is not ModelCache.node:
                raise ValueError("cachedModelLoad is read only with modelCache: node")
            if self.cached_model_load > self.model_load:
                raise ValueError("cachedModelLoad must not exceed modelLoad")
        return self

    @property
    def total(self) -> timedelta:
        return self.provision + self.driver + self.device_plugin + self.image_pull + self.model_load


def _longer_than_zero(value: timedelta) -> timedelta:
    if value <= timedelta(0):
        raise ValueError("must be longer than 0s: no request is served in no time")
    return value


SloDuration = Annotated[Duration, AfterValidator(_longer_than_zero)]


class Window(Model):
    """A time window: fixed (`start` + `end`) or recurring (`schedule` cron + `duration`)."""

    start: Instant | None = None
    end: Instant | None = None
    schedule: Cron | None = None
    duration: Duration | None = None

    @model_validator(mode="after")
    def _one_form(self) -> Window:
        fixed = self.start is not None or self.end is not None
        recurring = self.schedule is not None or self.duration is not None
        if fixed == recurring:
            raise ValueError("give either start and end, or schedule and duration")
        if fixed and (self.start is None or self.end is None):
            raise ValueError("a fixed window needs both start and end")
        if recurring and (self.schedule is None or self.duration is None):
            raise ValueError("a recurring window needs both schedule and duration")
        if fixed and self.end <= self.start:  # type: ignore[operator]
            raise ValueError("end must be after start")
        # compiled as a Job's activeDeadlineSeconds, whole seconds: 0 would end it at once
        length = self.duration if recurring else self.end - self.start  # type: ignore[operator]
        if length < timedelta(seconds=1):  # type: ignore[operator]
            raise ValueError("a window lasts at least 1s")
        return self


class PreWarm(Window):
    """Keep at least `minNodes` nodes up during the window (peaks are pre-warmed, 43.4)."""

    name: Name | None = None
    min_nodes: Positive


class Pool(Model):
    name: Name
    gpu: GpuSpec
    nodes: NodeRange
    sharing: SharingMode = Sharing("exclusive")
    # Classes admitted. The first names the taint `workload=<class>:NoSchedule` (a node has
    # one taint per key and effect); every listed class tolerates it.
    classes: list[Name] = Field(default_factory=list)
    cold_start: ColdStart = ColdStart()
    pre_warm: list[PreWarm] = Field(default_factory=list)
    zones: list[LabelValue] = Field(default_factory=list)
    node: NodeShape | None = None

    @model_validator(mode="after")
    def _totals_fit_int64(self) -> Pool:
        # the compiler writes nodes x per-node amounts as Kubernetes quantities (int64)
        spare = self.nodes.max - self.nodes.min
        for field, per_node in (
            ("node.cpu", self.node.cpu if self.node else None),
            ("node.memory", self.node.memory if self.node else None),
        ):
            if per_node is not None and spare * per_node > INT64_MAX:
                raise ValueError(
                    f"nodes.max - nodes.min ({spare}) x {field} is beyond what a Kubernetes "
                    "quantity can hold (2^63-1): lower nodes.max or the node size"
                )
        return self

    @property
    def devices_per_gpu(self) -> int:
        """Devices (MIG instances, time-slice replicas, or 1) one of the pool's GPUs offers."""
        return self.sharing.devices_per_gpu(self.gpu.memory or 0)

    @property
    def devices_per_node(self) -> int:
        return self.gpu.per_node * self.devices_per_gpu

    @property
    def max_devices(self) -> int:
        return self.nodes.max * self.devices_per_node

    @property
    def device_memory(self) -> int:
        return self.sharing.device_memory(self.gpu.memory or 0)

    @property
    def taint(self) -> tuple[str, str, str] | None:
        """(key, value, effect) of the pool's workload taint."""
        return ("workload", self.classes[0], "NoSchedule") if self.classes else None

    def node_labels(self) -> dict[str, str]:
        """Table 43-2's labels for the pool's nodes."""
        labels = {"nodepool": self.name, "gpu.model": self.gpu.model}
        if self.gpu.topology:
            labels["gpu.topology"] = self.gpu.topology
        if self.classes:
            labels["workload"] = self.classes[0]
        if self.gpu.product:
            labels["nvidia.com/gpu.product"] = self.gpu.product
        return labels


# --- classes ------------------------------------------------------------------------------

# Table 43-1, so that `- name: batch` is a complete class. Priorities are PriorityClass
# values; queue waits are starting points for the promise, to be tuned per platform.
KNOWN_CLASSES: dict[str, dict[str, Any]] = {
    "online-infer": {
        "latency": "seconds",
        "priority": 100000,
        "preemptible": False,
        "gang": False,
        "headroom": "20%",
        "maxQueueWait": "30s",
    },
    "burst": {
        "latency": "seconds",
        "priority": 90000,
        "preemptible": False,
        "gang": False,
        "headroom": "20%",
        "maxQueueWait": "5m",
    },
    "fine-tune": {
        "latency": "hours",
        "priority": 10000,
        "preemptible": True,
        "gang": True,
        "maxQueueWait": "4h",
    },
    "batch": {
        "latency": "minutes",
        "priority": 1000,
        "preemptible": True,
        "gang": False,
        "maxQueueWait": "8h",
    },
}


class QueueWaitUntil(StrEnum):
    bound = "bound"
    ready = "ready"


class WorkloadClass(Model):
    name: Name
    description: str | None = None
    latency: LatencyTier
    priority: Annotated[int, Strict(), Field(ge=-(2**31), le=10**9)]
    preemptible: bool = False
    gang: bool = False
    # Pools this class may use, in order of preference. Resolved: defaults to every pool
    # whose `classes` admit it, in file order.
    pools: list[Name] = Field(default_factory=list)
    headroom: Percent | None = None  # resolved: 20% for online classes, else 0%
    max_queue_wait: Duration | None = None  # the promise: GPUs within this long
    # what maxQueueWait is measured to: `bound` (time to GPU: the pod is bound to a node) or
    # `ready` (time to serving: bound, image pulled, model loaded, Ready)
    max_queue_wait_until: QueueWaitUntil = QueueWaitUntil.bound

    @model_validator(mode="before")
    @classmethod
    def _known_defaults(cls, data: Any) -> Any:
        name = data.get("name") if isinstance(data, dict) else None
        if isinstance(name, str) and name in KNOWN_CLASSES:
            return {**KNOWN_CLASSES[data["name"]], **data}
        return data

    @model_validator(mode="after")
    def _default_headroom(self) -> WorkloadClass:
        if self.headroom is None:
            object.__setattr__(self, "headroom", 20 if self.online else 0)
        return self

    @property
    def online(self) -> bool:
        """Latency-sensitive and protected: the traffic the chapter says to guard first."""
        return self.latency is LatencyTier.seconds and not self.preemptible


# --- tenants ------------------------------------------------------------------------------


class Quota(Model):
    """Kueue-style quota of one tenant on one pool, in devices."""

    pool: Name
    gpus: Count  # nominalQuota
    borrowing_limit: Count | None = None
    lending_limit: Count | None = None

    @field_validator("lending_limit")
    @classmethod
    def _lend_within_nominal(cls, value: int | None, info: ValidationInfo) -> int | None:
        gpus = info.data.get("gpus")
        if value is not None and gpus is not None and value > gpus:
            raise ValueError(f"lendingLimit ({value}) must not exceed gpus ({gpus})")
        return value


class Raise(Model):
    """A temporary quota raise; `expires` is required by rule, not by schema, so that a
    missing one is reported with a fix instead of stopping the check."""

    pool: Name
    gpus: Positive
    reason: Text
    expires: Instant | None = None

    def active(self, now: datetime) -> bool:
        return self.expires is None or self.expires > now


class Tenant(Model):
    name: Name
    owner: Text | None = None
    cost_center: Text | None = None
    cohort: Name | None = None
    quotas: list[Quota] = Field(default_factory=list)
    raises: list[Raise] = Field(default_factory=list)

    @model_validator(mode="after")
    def _pool_totals_fit_int64(self) -> Tenant:
        # compile writes quota + every raise on a pool as one nominalQuota (an int64)
        for pool in {q.pool for q in self.quotas} | {r.pool for r in self.raises}:
            quota = self.quota(pool)
            total = (quota.gpus if quota else 0) + sum(
                r.gpus for r in self.raises if r.pool == pool
            )
            if total > INT64_MAX:
                raise ValueError(
                    f"quota and raises on pool {pool} add up to {total}, beyond what a "
                    f"Kubernetes quantity can hold (2^63-1)"
                )
        return self

    def quota(self, pool: str) -> Quota | None:
        return next((q for q in self.quotas if q.pool == pool), None)


# --- services and jobs --------------------------------------------------------------------


class Architecture(Model):
    """A model's shape where the planner's catalogue does not know it (or to correct it): the
    fields of its Hugging Face config.json, named as `gpupact plan`'s flags are. Given for a
    catalogue model, each field replaces the catalogue's; for another model, layers, hidden,
    heads and vocab are needed (KV heads default to the heads: multi-head attention)."""

    layers: Positive32 | None = None  # num_hidden_layers
    hidden: Positive32 | None = None  # hidden_size
    heads: Positive32 | None = None  # num_attention_heads
    kv_heads: Positive32 | None = None  # num_key_value_heads
    head_dim: Positive32 | None = None  # head_dim (default hidden / heads)
    intermediate: Positive32 | None = None  # intermediate_size
    vocab: Positive32 | None = None  # vocab_size
    experts: Count32 | None = None  # routed experts per MoE layer
    experts_per_token: Count32 | None = None  # num_experts_per_tok
    moe_intermediate: Count32 | None = None  # moe_intermediate_size
    shared_experts: Count32 | None = None  # n_shared_experts
    dense_layers: Count32 | None = None  # first_k_dense_replace
    q_lora_rank: Count32 | None = None  # MLA
    kv_lora_rank: Count32 | None = None  # MLA: the cached latent's width
    qk_rope_head_dim: Count32 | None = None  # MLA

    @model_validator(mode="after")
    def _consistent(self) -> Architecture:
        if self.heads and self.kv_heads and self.heads % self.kv_heads:
            raise ValueError(
                f"heads ({self.heads}) must be a multiple of kvHeads ({self.kv_heads})"
            )
        if (self.experts_per_token or 0) > (self.experts or 0) and self.experts is not None:
            raise ValueError(
                f"expertsPerToken ({self.experts_per_token}) exceeds experts ({self.experts})"
            )
        return self

    def given(self) -> dict[str, int]:
        """The fields set, by their Python names (the planner's architecture fields)."""
        return {k: v for k, v in self.model_dump(by_alias=False).items() if v is not None}


class ModelSpec(Model):
    name: Text
    params: Params
    quantization: Quantization = Quantization.fp16
    architecture: Architecture | None = None

    @property
    def weight_bytes(self) -> int:
        """Weights only: params x bits / 8 (no KV cache, activations or runtime overhead)."""
        return self.quantization.weight_bytes(self.params)


class Percentiles(Model):
    p50: Positive
    p95: Positive | None = None
    p99: Positive | None = None

    @model_validator(mode="after")
    def _ordered(self) -> Percentiles:
        values = [v for v in (self.p50, self.p95, self.p99) if v is not None]
        if values != sorted(values):
            raise ValueError("percentiles must not decrease (p50 <= p95 <= p99)")
        return self


class TokenProfile(Model):
    input: Percentiles | None = None
    output: Percentiles | None = None


class Replicas(Model):
    min: Count32 = 1
    max: Count32 | None = None  # resolved: defaults to min

    @field_validator("max")
    @classmethod
    def _max_not_below_min(cls, value: int | None, info: ValidationInfo) -> int | None:
        low = info.data.get("min")
        if value is not None and low is not None and value < low:
            raise ValueError(f"max ({value}) must not be below min ({low})")
        return value

    @model_validator(mode="after")
    def _default_max(self) -> Replicas:
        if self.max is None:
            object.__setattr__(self, "max", self.min)
        return self

    @property
    def upper(self) -> int:
        return self.min if self.max is None else self.max


class GpuRequirement(Model):
    model: LabelValue | None = None  # required gpu.model; picks the pool when several fit
    nvlink: bool = False  # the replica's GPUs must share one NVLink domain


class LoadTest(Model):
    """Evidence that sharing does not break the SLO (43.1): a report reference."""

    report: Text
    date: Instant | None = None
    sharing: SharingMode | None = None  # what was tested; must match the pool when given


class Resources(Model):
    """Explicit per-pod requests/limits, passed to the pod spec as written."""

    requests: dict[str, QuantityText] = Field(default_factory=dict)
    limits: dict[str, QuantityText] = Field(default_factory=dict)

    def gpu_amount(self) -> tuple[str, str] | None:
        """(resource, quantity) of the GPU resource declared, limits first."""
        for table in (self.limits, self.requests):
            for key, value in table.items():
                if is_gpu_resource(key):
                    return key, value
        return None


def is_gpu_resource(name: str) -> bool:
    return name == "nvidia.com/gpu" or name.startswith("nvidia.com/mig-")


class Service(Model):
    """A long-running model service: the onboarding declaration of 43.1 plus its model."""

    name: ServiceName
    workload_class: Name = Field(alias="class")
    tenant: Name | None = None
    owner: Text | None = None  # resolved: the tenant's, else (no tenant) the contract's
    cost_center: Text | None = None  # resolved: likewise
    pool: Name | None = None  # resolved: first of the class's pools matching `gpu`
    gpu: GpuRequirement = GpuRequirement()
    model: ModelSpec | None = None
    concurrency: Positive | None = None
    ttft_slo: SloDuration | None = None  # time-to-first-token objective (P99)
    context_length: Positive | None = None
    tokens: TokenProfile | None = None
    run_window: Window | None = None  # None: always on
    replicas: Replicas = Replicas()
    tensor_parallel: Positive32 = 1
    gpus_per_pod: Positive32 | None = None  # resolved: from resources, else 1
    gang: GangScope | None = None  # resolved: `replica` if the class is gang, else `none`
    preemptible: bool | None = None  # resolved: the class's
    cold_start: Duration | None = None
    priority: BusinessPriority | None = None
    headroom: Percent | None = None  # overrides the class's
    expires: Instant | None = None
    load_test: LoadTest | None = None
    resources: Resources | None = None

    @property
    def pods_per_replica(self) -> int:
        return self.tensor_parallel // (self.gpus_per_pod or 1)

    @property
    def min_member(self) -> int | None:
        """Pods that must start together (a PodGroup's minMember), None without a gang."""
        if self.gang is GangScope.replica:
            return self.pods_per_replica
        if self.gang is GangScope.service:
            return max(self.replicas.min, 1) * self.pods_per_replica
        return None


class Job(Model):
    """A batch, evaluation or fine-tuning submission, admitted through the tenant's queue."""

    name: Name
    tenant: Name
    workload_class: Name = Field(alias="class")
    pool: Name | None = None  # resolved: the class's first pool
    queue: Name | None = None  # resolved: `<tenant>-<class>`
    owner: Text | None = None  # resolved: falls back to the tenant's
    cost_center: Text | None = None  # resolved: falls back to the tenant's
    pods: Positive32 = 1
    gpus_per_pod: Positive32 | None = None  # resolved: from resources, else 1
    min_member: Positive32 | None = None  # resolved: `pods` for a gang class, else 1
    duration: Duration | None = None  # estimated run time
    schedule: Cron | None = None
    resources: Resources | None = None

    @field_validator("min_member")
    @classmethod
    def _within_pods(cls, value: int | None, info: ValidationInfo) -> int | None:
        pods = info.data.get("pods")
        if value is not None and pods is not None and value > pods:
            raise ValueError(f"minMember ({value}) must not exceed pods ({pods})")
        return value

    @property
    def gpus(self) -> int:
        return self.pods * (self.gpus_per_pod or 1)


# --- the contract -------------------------------------------------------------------------


class Contract(Model):
    api_version: Literal["gpupact.io/v1alpha1"]
    kind: Literal["Contract"]
    metadata: Metadata
    # The wall clock of every schedule in the contract (jobs' cron, recurring windows):
    # compiled into each CronJob's `timeZone`, and the twin fires them in it.
    time_zone: TimeZone = "Etc/UTC"
    pools: list[Pool] = Field(default_factory=list)
    classes: list[WorkloadClass] = Field(default_factory=list)
    tenants: list[Tenant] = Field(default_factory=list)
    services: list[Service] = Field(default_factory=list)
    jobs: list[Job] = Field(default_factory=list)

    def pool(self, name: str) -> Pool:
        return _named(self.pools, name, "pool")

    def workload_class(self, name: str) -> WorkloadClass:
        return _named(self.classes, name, "class")

    def tenant(self, name: str) -> Tenant:
        return _named(self.tenants, name, "tenant")


def _named(items: list[Any], name: str, what: str) -> Any:
    for item in items:
        if item.name == name:
            return item
    raise KeyError(f"no {what} named {name!r}")


def all_field_names() -> frozenset[str]:
    """Every YAML key the schema knows, for "did you mean" hints."""
    names: set[str] = set()
    todo: list[type[Model]] = [Model]
    while todo:
        model = todo.pop()
        todo.extend(model.__subclasses__())
        names.update(info.alias or name for name, info in model.model_fields.items())
    return frozenset(names)
