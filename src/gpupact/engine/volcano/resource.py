"""Volcano's `api.Resource`: cpu, memory and named scalars, with its comparison rules.

Units follow upstream: cpu in millicores, memory in bytes, `pods` as a count, every other
scalar (nvidia.com/gpu, ephemeral-storage, hugepages-*) in milli-units. Amounts are exact:
integers, or Fractions where the proportion plugin divides the cluster by queue weights
(upstream uses float64 there). Upstream compares with a tolerance of 0.1 (`minResource`);
the same tolerance is applied to the exact values, which only matters for fractional shares.

A cpu or memory dimension is always present (zero when unset); a scalar may be absent, and
several comparisons treat an absent scalar as zero or as infinity (`ZERO` / `INFINITY`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from fractions import Fraction

from gpupact.kube.requests import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, is_scalar_resource_name

Amount = int | Fraction

ZERO = "Zero"  # an absent scalar dimension counts as 0
INFINITY = "Infinity"  # an absent scalar dimension counts as unbounded

MIN_RESOURCE = Fraction(1, 10)  # upstream minResource: amounts below it are "zero"
# upstream uses math.MaxFloat64 for "no limit" on cpu / memory; any amount far beyond a real
# cluster behaves the same in every comparison and sum here
UNBOUNDED = 1 << 96


def _le(left: Amount, right: Amount) -> bool:
    return left < right or abs(left - right) < MIN_RESOURCE


class Resource:
    """Mutable, like upstream: `add` / `sub` change the receiver and return it."""

    __slots__ = ("cpu", "max_task_num", "memory", "scalars")

    def __init__(
        self,
        cpu: Amount = 0,
        memory: Amount = 0,
        scalars: Mapping[str, Amount] | None = None,
        max_task_num: int = 0,
    ) -> None:
        self.cpu: Amount = cpu
        self.memory: Amount = memory
        self.scalars: dict[str, Amount] | None = dict(scalars) if scalars is not None else None
        self.max_task_num = max_task_num

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_amounts(cls, amounts: Mapping[str, int]) -> Resource:
        """`api.NewResource` from a ResourceList already in scheduler units (cpu milli,
        memory bytes, others base units): pods stay a count, other scalars become milli."""
        res = cls()
        for name, amount in amounts.items():
            if name == CPU:
                res.cpu += amount
            elif name == MEMORY:
                res.memory += amount
            elif name == PODS:
                res.max_task_num += amount
                res.add_scalar(PODS, amount)
            elif name == EPHEMERAL_STORAGE:
                res.add_scalar(name, amount * 1000)
            elif name.startswith("count/"):
                continue
            elif is_scalar_resource_name(name):
                res.add_scalar(name, amount * 1000)
        return res

    @classmethod
    def unbounded(cls, scalar_names: Iterator[str] | tuple[str, ...] = ()) -> Resource:
        return cls(UNBOUNDED, UNBOUNDED, {n: UNBOUNDED for n in scalar_names} or None)

    def clone(self) -> Resource:
        return Resource(self.cpu, self.memory, self.scalars, self.max_task_num)

    def __repr__(self) -> str:
        parts = [f"cpu {self.cpu}", f"memory {self.memory}"]
        parts += [f"{k} {v}" for k, v in sorted((self.scalars or {}).items())]
        return f"<{', '.join(parts)}>"

    def __eq__(self, other: object) -> bool:
        """reflect.DeepEqual (nil and empty scalar maps differ; the pod count is compared)."""
        if not isinstance(other, Resource):
            return NotImplemented
        mine = (self.cpu, self.memory, self.scalars, self.max_task_num)
        return mine == (other.cpu, other.memory, other.scalars, other.max_task_num)

    __hash__ = None  # type: ignore[assignment]

    # -- access ---------------------------------------------------------------------------------

    def get(self, name: str) -> Amount:
        if name == CPU:
            return self.cpu
        if name == MEMORY:
            return self.memory
        return (self.scalars or {}).get(name, 0)

    def add_scalar(self, name: str, amount: Amount) -> None:
        if self.scalars is None:
            self.scalars = {}
        self.scalars[name] = self.scalars.get(name, 0) + amount

    def set_scalar(self, name: str, amount: Amount) -> None:
        if self.scalars is None:
            self.scalars = {}
        self.scalars[name] = amount

    def resource_names(self) -> list[str]:
        """Dimensions with at least `MIN_RESOURCE` (pods included)."""
        names = []
        if self.cpu >= MIN_RESOURCE:
            names.append(CPU)
        if self.memory >= MIN_RESOURCE:
            names.append(MEMORY)
        names += [n for n, v in sorted((self.scalars or {}).items()) if v >= MIN_RESOURCE]
        return names

    def is_empty(self) -> bool:
        """Every dimension below `MIN_RESOURCE`; the pods count is ignored."""
        if self.cpu >= MIN_RESOURCE or self.memory >= MIN_RESOURCE:
            return False
        return all(v < MIN_RESOURCE for n, v in (self.scalars or {}).items() if n != PODS)

    # -- arithmetic -------------------------------------------------------------------------------

    def add(self, other: Resource) -> Resource:
        self.cpu += other.cpu
        self.memory += other.memory
        for name, amount in (other.scalars or {}).items():
            self.add_scalar(name, amount)
        return self

    def sub(self, other: Resource) -> Resource:
        """Upstream `sub`: scalars only where the receiver has a scalar map at all."""
        self.cpu -= other.cpu
        self.memory -= other.memory
        if self.scalars is not None:
            for name, amount in (other.scalars or {}).items():
                self.scalars[name] = self.scalars.get(name, 0) - amount
        return self

    def multi(self, ratio: Fraction) -> Resource:
        self.cpu *= ratio
        self.memory *= ratio
        if self.scalars is not None:
            self.scalars = {n: v * ratio for n, v in self.scalars.items()}
        return self

    def min_dimension(self, other: Resource, default: str) -> Resource:
        """Upstream `MinDimensionResource`: each dimension capped by `other`'s; a scalar
        `other` lacks becomes 0 (ZERO) or stays (INFINITY)."""
        self.cpu = min(self.cpu, other.cpu)
        self.memory = min(self.memory, other.memory)
        if self.scalars is None:
            return self
        if other.scalars is None:
            if default == ZERO:
                self.scalars = {n: 0 for n in self.scalars}
            return self
        for name, amount in list(self.scalars.items()):
            if name in other.scalars:
                self.scalars[name] = min(amount, other.scalars[name])
            elif default == ZERO:
                self.scalars[name] = 0
        return self

    def diff(self, other: Resource) -> tuple[Resource, Resource]:
        """Upstream `Diff(rr, Zero)`: (how much self exceeds other, how much it falls short)."""
        increased, decreased = Resource(scalars={}), Resource(scalars={})
        if self.cpu > other.cpu:
            increased.cpu = self.cpu - other.cpu
        else:
            decreased.cpu = other.cpu - self.cpu
        if self.memory > other.memory:
            increased.memory = self.memory - other.memory
        else:
            decreased.memory = other.memory - self.memory
        names = set(self.scalars or ()) | set(other.scalars or ())
        for name in sorted(names):
            left, right = self.get(name), other.get(name)
            if left > right:
                increased.set_scalar(name, left - right)
            else:
                decreased.set_scalar(name, right - left)
        return increased, decreased

    # -- comparisons ----------------------------------------------------------------------------

    def less_equal(self, other: Resource, default: str = ZERO) -> bool:
        """Every dimension of self <= other's (within tolerance)."""
        return not self.exceeding(other, default)

    def exceeding(self, other: Resource, default: str = ZERO) -> list[str]:
        """`LessEqualWithResourcesName`: the dimensions where self > other."""
        names = []
        if not _le(self.cpu, other.cpu):
            names.append(CPU)
        if not _le(self.memory, other.memory):
            names.append(MEMORY)
        for name, amount in (self.scalars or {}).items():
            if other.scalars is None or name not in other.scalars:
                if default == INFINITY:
                    continue
                right: Amount = 0
            else:
                right = other.scalars[name]
            if not _le(amount, right):
                names.append(name)
        return names

    def less_equal_with_dimension(self, other: Resource, req: Resource | None) -> bool:
        """`LessEqualWithDimensionAndResourcesName`: only the dimensions `req` asks for
        (greater than 0) are compared, exactly (no tolerance)."""
        if req is None:
            return self.less_equal(other, ZERO)
        if req.cpu > 0 and self.cpu > other.cpu:
            return False
        if req.memory > 0 and self.memory > other.memory:
            return False
        if self.scalars is None:
            return True
        for name, amount in (req.scalars or {}).items():
            if name == PODS:
                continue
            if amount > 0 and self.get(name) > other.get(name):
                return False
        return True

    def less_equal_partly_with_dimension(self, other: Resource, req: Resource | None) -> bool:
        """Some requested dimension of self is <= other's (within tolerance)."""
        if req is None:
            return False
        if req.cpu > 0 and _le(self.cpu, other.cpu):
            return True
        if req.memory > 0 and _le(self.memory, other.memory):
            return True
        for name, amount in (req.scalars or {}).items():
            if name == PODS:
                continue
            if amount > 0 and _le(self.get(name), other.get(name)):
                return True
        return False

    def less_equal_partly_with_dimension_zero_filtered(
        self, other: Resource, req: Resource | None
    ) -> bool:
        """As above, ignoring dimensions that are zero on both sides."""
        if req is None:
            return False
        filtered = Resource(scalars={})
        if req.cpu > 0 and not (self.cpu < MIN_RESOURCE and other.cpu < MIN_RESOURCE):
            filtered.cpu = req.cpu
        if req.memory > 0 and not (self.memory < MIN_RESOURCE and other.memory < MIN_RESOURCE):
            filtered.memory = req.memory
        for name, amount in (req.scalars or {}).items():
            left, right = self.get(name), other.get(name)
            if amount > 0 and not (left < MIN_RESOURCE and right < MIN_RESOURCE):
                filtered.set_scalar(name, amount)
        return self.less_equal_partly_with_dimension(other, filtered)

    def greater_partly_with_dimension(self, other: Resource | None, req: Resource | None) -> bool:
        if req is None:
            return False
        other = other or Resource()
        if req.cpu > 0 and self.cpu > other.cpu:
            return True
        if req.memory > 0 and self.memory > other.memory:
            return True
        for name, amount in (req.scalars or {}).items():
            if name == PODS:
                continue
            if amount > 0 and self.get(name) > other.get(name):
                return True
        return False

    def greater_partly_with_relevant_dimensions(
        self, other: Resource | None, req: Resource | None
    ) -> bool:
        """Self exceeds other on a requested dimension that `other` actually has (cpu or
        memory of at least `MIN_RESOURCE`, or a scalar present in its map)."""
        if req is None:
            return False
        other = other or Resource()
        filtered = Resource(scalars={})
        if req.cpu > 0 and not other.cpu < MIN_RESOURCE:
            filtered.cpu = req.cpu
        if req.memory > 0 and not other.memory < MIN_RESOURCE:
            filtered.memory = req.memory
        for name, amount in (req.scalars or {}).items():
            if amount > 0 and other.scalars is not None and name in other.scalars:
                filtered.set_scalar(name, amount)
        return self.greater_partly_with_dimension(other, filtered)


def exceeded_part(left: Resource | None, right: Resource | None) -> Resource:
    """What `left` has beyond `right`, per dimension (never negative)."""
    if right is None:
        return left.clone() if left is not None else Resource()
    if left is None:
        return Resource()
    return left.diff(right)[0]


def max_of(left: Resource, right: Resource) -> Resource:
    """`helpers.Max`: per-dimension maximum; negative scalars are dropped."""
    res = Resource(max(left.cpu, right.cpu), max(left.memory, right.memory))
    if left.scalars is None and right.scalars is None:
        return res
    res.scalars = {}
    for name, amount in (left.scalars or {}).items():
        if amount >= 0:
            res.scalars[name] = amount
    for name, amount in (right.scalars or {}).items():
        if amount >= 0:
            res.scalars[name] = max(amount, res.scalars.get(name, 0))
    return res


def share(allocated: Amount, deserved: Amount) -> Fraction:
    """`helpers.Share`: allocated / deserved; 1 when something is used of nothing."""
    if deserved == 0:
        return Fraction(0) if allocated == 0 else Fraction(1)
    return Fraction(allocated) / Fraction(deserved)


def intersection(left: Resource, right: Resource, *, ignore_pods: bool = False) -> list[str]:
    """Dimensions present (>= MIN_RESOURCE) in both; optionally without the pods count."""
    names = set(right.resource_names())
    return [n for n in left.resource_names() if n in names and not (ignore_pods and n == PODS)]
