"""Contract protection rules: limits a contract puts on top of kube-scheduler's victim choice.

Upstream DefaultPreemption lets any pod evict any lower-priority pod (and offers a hook,
`IsEligiblePod`, for narrowing that). A contract narrows it with data, not code: a list of
`ProtectionRule`s inside a `Protection`. With no rules (the default) preemption is exactly
upstream's.

Pods are classified by a label (`workload` by default: `online-infer`, `fine-tune`, `batch`,
`burst`) and nodes by their pool label (`nodepool` by default: `gpu-inference`, `gpu-train`,
...). A pod or node without the label has class / pool "" — no rule names "" (values must be
non-empty), so rules never match it.

Rules (field names as written in a contract):

`never-preempts` {preemptorClass, pool?}
    A pod of `preemptorClass` never evicts a pod running on a node of `pool` (of any pool when
    `pool` is left out). Example: batch never preempts in gpu-inference.
`never-victim` {victimClass, preemptibleBy?}
    A pod of `victimClass` is evicted only by a pod whose class is listed in `preemptibleBy`
    (default: `victimClass` itself). Example: online-infer pods are never victims of lower
    classes. A preemptor without a class is not listed, so it cannot evict a protected pod
    either, whatever its priority (system pods included: protect deliberately).
`gang` {}
    Pods of one PodGroup are evicted as a unit. A group is named by the first of `gangKeys`
    (labels, then annotations; default `scheduling.k8s.io/group-name`, `volcano.sh/podgroup`)
    a pod carries, within its namespace; the key that named it does not matter. A group is a
    victim only if every running member may be evicted (lower priority than the preemptor, no
    rule blocking it on its own node); then the whole group is removed together, reprieved
    together, and every member — on whatever node — is a victim that counts in the node
    choice (highest priority, priority sum, victim count, start time, budget violations).

Invalid rules raise FieldError with the path of the offending field, relative to the rule
(`parse_protection` prefixes `rules[i]`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpupact.errors import FieldError, PathPart
from gpupact.kube.objects import Node, Pod
from gpupact.kube.selectors import label_key_errors, label_value_errors

NEVER_PREEMPTS = "never-preempts"
NEVER_VICTIM = "never-victim"
GANG = "gang"
RULE_KINDS = (GANG, NEVER_PREEMPTS, NEVER_VICTIM)

DEFAULT_CLASS_LABEL = "workload"
DEFAULT_POOL_LABEL = "nodepool"
DEFAULT_GANG_KEYS = ("scheduling.k8s.io/group-name", "volcano.sh/podgroup")

# which rule fields each kind uses (contract spelling)
_FIELDS_OF_KIND: Mapping[str, frozenset[str]] = {
    NEVER_PREEMPTS: frozenset({"preemptorClass", "pool"}),
    NEVER_VICTIM: frozenset({"victimClass", "preemptibleBy"}),
    GANG: frozenset(),
}
_REQUIRED_OF_KIND: Mapping[str, str] = {
    NEVER_PREEMPTS: "preemptorClass",
    NEVER_VICTIM: "victimClass",
}
_RULE_KEYS = ("kind", "preemptorClass", "pool", "victimClass", "preemptibleBy")
_PROTECTION_KEYS = ("classLabel", "poolLabel", "gangKeys", "rules")

GangKey = tuple[str, str]  # (namespace, group name)


def _check_value(value: Any, path: tuple[PathPart, ...]) -> None:
    if not isinstance(value, str):
        raise FieldError(path, f"expected a string, got {type(value).__name__}")
    errors = label_value_errors(value)
    if errors:
        raise FieldError(path, f"invalid label value {value!r}: {'; '.join(errors)}")


def _check_key(value: Any, path: tuple[PathPart, ...]) -> None:
    if not isinstance(value, str):
        raise FieldError(path, f"expected a string, got {type(value).__name__}")
    errors = label_key_errors(value)
    if errors:
        raise FieldError(path, f"invalid label key {value!r}: {'; '.join(errors)}")


@dataclass(frozen=True, slots=True)
class ProtectionRule:
    """One rule; see the module doc for each `kind`. Fields a kind does not use stay empty."""

    kind: str
    preemptor_class: str = ""
    pool: str = ""
    victim_class: str = ""
    preemptible_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in RULE_KINDS:
            supported = ", ".join(f'"{k}"' for k in RULE_KINDS)
            raise FieldError(
                ("kind",), f'unsupported value "{self.kind}": supported values: {supported}'
            )
        if not isinstance(self.preemptible_by, tuple):
            if isinstance(self.preemptible_by, str) or not isinstance(
                self.preemptible_by, Sequence
            ):
                raise FieldError(("preemptibleBy",), "expected a list of classes")
            object.__setattr__(self, "preemptible_by", tuple(self.preemptible_by))
        used = _FIELDS_OF_KIND[self.kind]
        for name, value in self._fields():
            if value and name not in used:
                raise FieldError((name,), f"not used by a {self.kind} rule")
        required = _REQUIRED_OF_KIND.get(self.kind)
        if required is not None and not dict(self._fields())[required]:
            raise FieldError((required,), f"required by a {self.kind} rule")
        for name, value in self._fields():
            if name == "preemptibleBy":
                for i, item in enumerate(value):
                    _check_value(item, (name, i))
                    if not item:
                        raise FieldError((name, i), "a class name cannot be empty")
            elif value:
                _check_value(value, (name,))

    def _fields(self) -> tuple[tuple[str, Any], ...]:
        return (
            ("preemptorClass", self.preemptor_class),
            ("pool", self.pool),
            ("victimClass", self.victim_class),
            ("preemptibleBy", self.preemptible_by),
        )

    @property
    def allowed_preemptor_classes(self) -> frozenset[str]:
        """never-victim: the classes that may still evict a protected pod."""
        return frozenset(self.preemptible_by or (self.victim_class,))

    def describe(self) -> str:
        if self.kind == NEVER_PREEMPTS:
            where = f" in pool {self.pool}" if self.pool else ""
            return f"{self.preemptor_class} never preempts{where}"
        if self.kind == NEVER_VICTIM:
            allowed = ", ".join(sorted(self.allowed_preemptor_classes))
            return f"{self.victim_class} is preempted only by {allowed}"
        return "gangs are preempted as whole units"


@dataclass(frozen=True)
class Protection:
    """The rules and the labels they read. `Protection()` changes nothing."""

    rules: tuple[ProtectionRule, ...] = ()
    class_label: str = DEFAULT_CLASS_LABEL
    pool_label: str = DEFAULT_POOL_LABEL
    gang_keys: tuple[str, ...] = DEFAULT_GANG_KEYS
    # precomputed: the rules that can block a single victim, and whether gangs are units
    _victim_rules: tuple[ProtectionRule, ...] = field(init=False, repr=False, compare=False)
    _gang_units: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("rules", "gang_keys"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Sequence):
                raise FieldError((_camel(name),), "expected a list")
            object.__setattr__(self, name, tuple(value))
        for i, rule in enumerate(self.rules):
            if not isinstance(rule, ProtectionRule):
                raise FieldError(("rules", i), f"expected a ProtectionRule, got {rule!r}")
        _check_key(self.class_label, ("classLabel",))
        _check_key(self.pool_label, ("poolLabel",))
        for i, key in enumerate(self.gang_keys):
            _check_key(key, ("gangKeys", i))
        gang_units = any(rule.kind == GANG for rule in self.rules)
        if gang_units and not self.gang_keys:
            raise FieldError(("gangKeys",), "a gang rule needs at least one key")
        victim_rules = tuple(rule for rule in self.rules if rule.kind != GANG)
        object.__setattr__(self, "_victim_rules", victim_rules)
        object.__setattr__(self, "_gang_units", gang_units)

    @property
    def gang_units(self) -> bool:
        return self._gang_units

    def class_of(self, pod: Pod) -> str:
        return pod.labels.get(self.class_label, "")

    def pool_of(self, node: Node | None) -> str:
        return "" if node is None else node.labels.get(self.pool_label, "")

    def gang_of(self, pod: Pod) -> GangKey | None:
        """The pod's PodGroup (namespace, name), or None when it has none (or gangs are not
        units under these rules)."""
        if not self._gang_units:
            return None
        for key in self.gang_keys:
            name = pod.labels.get(key) or pod.annotations.get(key)
            if name:
                return (pod.namespace, name)
        return None

    def blocking_rule(
        self, node: Node | None, victim: Pod, preemptor: Pod
    ) -> ProtectionRule | None:
        """The first rule forbidding `preemptor` to evict `victim` (running on `node`)."""
        if not self._victim_rules:
            return None
        preemptor_class = self.class_of(preemptor)
        for rule in self._victim_rules:
            if rule.kind == NEVER_PREEMPTS:
                if preemptor_class == rule.preemptor_class and (
                    not rule.pool or self.pool_of(node) == rule.pool
                ):
                    return rule
            elif (
                self.class_of(victim) == rule.victim_class
                and preemptor_class not in rule.allowed_preemptor_classes
            ):
                return rule
        return None

    def allows(self, node: Node | None, victim: Pod, preemptor: Pod) -> bool:
        """IsEligiblePod: may `preemptor` evict `victim` (priority aside)?"""
        return self.blocking_rule(node, victim, preemptor) is None


NO_PROTECTION = Protection()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _mapping(obj: Any, path: tuple[PathPart, ...], allowed: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(obj, Mapping):
        raise FieldError(path, f"expected an object, got {type(obj).__name__}")
    for key in obj:
        if key not in allowed:
            raise FieldError((*path, str(key)), f"unknown field (allowed: {', '.join(allowed)})")
    return obj


def _string(obj: Any, path: tuple[PathPart, ...]) -> str:
    if obj is None:
        return ""
    if not isinstance(obj, str):
        raise FieldError(path, f"expected a string, got {type(obj).__name__}")
    return obj


def _strings(obj: Any, path: tuple[PathPart, ...]) -> tuple[str, ...]:
    if obj is None:
        return ()
    if not isinstance(obj, list):
        raise FieldError(path, f"expected a list, got {type(obj).__name__}")
    return tuple(_string(item, (*path, i)) for i, item in enumerate(obj))


def parse_protection_rule(obj: Any, path: Sequence[PathPart] = ()) -> ProtectionRule:
    """One rule from its contract form: {kind, preemptorClass?, pool?, victimClass?,
    preemptibleBy?}."""
    path = tuple(path)
    body = _mapping(obj, path, _RULE_KEYS)
    if "kind" not in body:
        raise FieldError((*path, "kind"), "required")
    fields = {
        "kind": _string(body.get("kind"), (*path, "kind")),
        "preemptor_class": _string(body.get("preemptorClass"), (*path, "preemptorClass")),
        "pool": _string(body.get("pool"), (*path, "pool")),
        "victim_class": _string(body.get("victimClass"), (*path, "victimClass")),
        "preemptible_by": _strings(body.get("preemptibleBy"), (*path, "preemptibleBy")),
    }
    try:
        return ProtectionRule(**fields)
    except FieldError as exc:  # the rule reports paths relative to itself
        raise exc.prefixed(path) from None


def parse_protection(obj: Any, path: Sequence[PathPart] = ()) -> Protection:
    """Protection from its contract form: {classLabel?, poolLabel?, gangKeys?, rules?}.
    None means no protection."""
    path = tuple(path)
    if obj is None:
        return NO_PROTECTION
    body = _mapping(obj, path, _PROTECTION_KEYS)
    raw_rules = body.get("rules")
    if raw_rules is not None and not isinstance(raw_rules, list):
        raise FieldError((*path, "rules"), f"expected a list, got {type(raw_rules).__name__}")
    rules = tuple(
        parse_protection_rule(item, (*path, "rules", i)) for i, item in enumerate(raw_rules or ())
    )
    gang_keys = (
        DEFAULT_GANG_KEYS
        if body.get("gangKeys") is None
        else _strings(body["gangKeys"], (*path, "gangKeys"))
    )
    class_label = _string(body.get("classLabel"), (*path, "classLabel")) or DEFAULT_CLASS_LABEL
    pool_label = _string(body.get("poolLabel"), (*path, "poolLabel")) or DEFAULT_POOL_LABEL
    try:
        return Protection(rules, class_label, pool_label, gang_keys)
    except FieldError as exc:  # Protection reports paths relative to itself
        raise exc.prefixed(path) from None
