"""Taints and tolerations, and the kube-scheduler TaintToleration plugin.

Semantics follow upstream Kubernetes:
- matching: k8s.io/api core/v1 (Toleration.ToleratesTaint, Taint.MatchTaint, Taint.ToString),
  including the numeric Lt/Gt operators of KEP-5471 (feature gate
  TaintTolerationComparisonOperators);
- list helpers: k8s.io/component-helpers scheduling/corev1 (TolerationsTolerateTaint,
  FindMatchingUntoleratedTaint);
- plugin: kube-scheduler tainttoleration (Filter over NoSchedule/NoExecute taints; Score counts
  untolerated PreferNoSchedule taints, normalised reversed to 0..100);
- validation: the API server's rules for node taints and pod tolerations.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpupact.errors import FieldError, PathPart
from gpupact.kube.status import SUCCESS, Code, Status

# --- constants ---------------------------------------------------------------------------------

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
TAINT_EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)

OP_EQUAL = "Equal"
OP_EXISTS = "Exists"
OP_LT = "Lt"
OP_GT = "Gt"
TOLERATION_OPERATORS = (OP_EXISTS, OP_EQUAL, OP_LT, OP_GT)  # "" also accepted: means Equal

PLUGIN_NAME = "TaintToleration"
REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
MAX_NODE_SCORE = 100

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
# Canonical decimal form (apimachinery content.IsDecimalInteger): "0", or an optional '-' and
# a non-zero ASCII digit followed by ASCII digits. No '+', no leading zeros, no "-0", no spaces.
_CANONICAL_INT = re.compile(r"0|-?[1-9][0-9]*")
_MAX_INT64_TEXT = len(str(_INT64_MIN))  # longer strings cannot be int64; also bounds int()

_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_MAX = 63
_PREFIX_MAX = 253


def parse_canonical_int64(text: str) -> int | None:
    """The integer a taint/toleration value denotes for Lt/Gt, or None if it is not an int64 in
    canonical decimal form (then upstream logs a parse error and the toleration does not match)."""
    if len(text) > _MAX_INT64_TEXT or not _CANONICAL_INT.fullmatch(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


# --- objects -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = ""
    # value as a canonical int64 (for Lt/Gt tolerations), parsed once here, not per match
    numeric_value: int | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "numeric_value", parse_canonical_int64(self.value))

    def __str__(self) -> str:
        # upstream Taint.ToString: "key=value:effect", "key=value:", "key:effect" or "key"
        if not self.effect:
            return f"{self.key}={self.value}:" if self.value else self.key
        if not self.value:
            return f"{self.key}:{self.effect}"
        return f"{self.key}={self.value}:{self.effect}"

    def matches(self, other: Taint) -> bool:
        """Taint.MatchTaint: a node holds at most one taint per (key, effect)."""
        return self.key == other.key and self.effect == other.effect


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None
    numeric_value: int | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.operator in (OP_LT, OP_GT):
            object.__setattr__(self, "numeric_value", parse_canonical_int64(self.value))


# --- matching ----------------------------------------------------------------------------------


def compare_numeric_values(toleration_value: str, taint_value: str, operator: str) -> bool:
    """Lt: taint < toleration; Gt: taint > toleration. False if either value is not a canonical
    int64 or the operator is not Lt/Gt."""
    return _compare(
        parse_canonical_int64(toleration_value), parse_canonical_int64(taint_value), operator
    )


def _compare(toleration_number: int | None, taint_number: int | None, operator: str) -> bool:
    if toleration_number is None or taint_number is None:
        return False
    if operator == OP_LT:
        return taint_number < toleration_number
    if operator == OP_GT:
        return taint_number > toleration_number
    return False


def tolerates(
    toleration: Toleration, taint: Taint, *, enable_comparison_operators: bool = True
) -> bool:
    """Toleration.ToleratesTaint. Empty effect matches every effect; empty key matches every key
    (validation only admits that with Exists); "" means Equal; unknown operators never match;
    Lt/Gt match only with the feature enabled."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator
    if operator == OP_EQUAL or not operator:
        return toleration.value == taint.value
    if operator == OP_EXISTS:
        return True
    if operator in (OP_LT, OP_GT):
        if not enable_comparison_operators:
            return False
        return _compare(toleration.numeric_value, taint.numeric_value, operator)
    return False


def tolerations_tolerate_taint(
    tolerations: Iterable[Toleration], taint: Taint, *, enable_comparison_operators: bool = True
) -> bool:
    """TolerationsTolerateTaint: some toleration tolerates the taint."""
    for toleration in tolerations:  # a plain loop: this is the scheduler's hot path
        if tolerates(toleration, taint, enable_comparison_operators=enable_comparison_operators):
            return True
    return False


def find_untolerated_taint(
    taints: Iterable[Taint],
    tolerations: Sequence[Toleration],
    include: Callable[[Taint], bool] | None = None,
    *,
    enable_comparison_operators: bool = True,
) -> Taint | None:
    """FindMatchingUntoleratedTaint: the first taint (in node order) passing `include` (None:
    every taint) that no toleration tolerates, or None if all are tolerated."""
    for taint in taints:
        if include is not None and not include(taint):
            continue
        if not tolerations_tolerate_taint(
            tolerations, taint, enable_comparison_operators=enable_comparison_operators
        ):
            return taint
    return None


def do_not_schedule_taint(taint: Taint) -> bool:
    """helper.DoNotScheduleTaintsFilterFunc: the taints the Filter enforces."""
    return taint.effect == NO_SCHEDULE or taint.effect == NO_EXECUTE


# --- TaintToleration plugin --------------------------------------------------------------------

_UNTOLERATED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_UNTOLERATED,), PLUGIN_NAME)


def taint_toleration_filter(
    node_taints: Iterable[Taint],
    pod_tolerations: Sequence[Toleration],
    *,
    enable_comparison_operators: bool = True,
) -> Status:
    """TaintToleration.Filter. Unresolvable: evicting pods (preemption) cannot remove a taint."""
    untolerated = find_untolerated_taint(
        node_taints,
        pod_tolerations,
        do_not_schedule_taint,
        enable_comparison_operators=enable_comparison_operators,
    )
    return SUCCESS if untolerated is None else _UNTOLERATED


def prefer_no_schedule_tolerations(tolerations: Iterable[Toleration]) -> tuple[Toleration, ...]:
    """PreScore: only tolerations that can match a PreferNoSchedule taint (empty effect matches
    every effect)."""
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


def count_intolerable_prefer_no_schedule(
    taints: Iterable[Taint] | None,
    tolerations: Sequence[Toleration],
    *,
    enable_comparison_operators: bool = True,
) -> int:
    """Score (raw): the number of PreferNoSchedule taints no toleration tolerates."""
    return sum(
        1
        for taint in taints or ()
        if taint.effect == PREFER_NO_SCHEDULE
        and not tolerations_tolerate_taint(
            tolerations, taint, enable_comparison_operators=enable_comparison_operators
        )
    )


def taint_toleration_scores(
    nodes: Sequence[tuple[str, Sequence[Taint] | None]],
    pod_tolerations: Iterable[Toleration],
    *,
    enable_comparison_operators: bool = True,
) -> dict[str, int]:
    """PreScore + Score + NormalizeScore: node name -> 0..100, fewer untolerated
    PreferNoSchedule taints scoring higher."""
    tolerations = prefer_no_schedule_tolerations(pod_tolerations)
    raw = {
        name: count_intolerable_prefer_no_schedule(
            taints, tolerations, enable_comparison_operators=enable_comparison_operators
        )
        for name, taints in nodes
    }
    return _normalize_reversed(raw, MAX_NODE_SCORE)


def _normalize_reversed(raw: Mapping[str, int], max_priority: int) -> dict[str, int]:
    """helper.DefaultNormalizeScore(max_priority, reverse=true) on non-negative raw scores,
    with int64 truncating division (operands are non-negative, so floor == truncation)."""
    highest = max(raw.values(), default=0)
    if highest == 0:
        return dict.fromkeys(raw, max_priority)
    return {name: max_priority - max_priority * score // highest for name, score in raw.items()}


# --- parsing and validation --------------------------------------------------------------------


def parse_taint(obj: Any, path: Sequence[PathPart] = (), *, validate: bool = True) -> Taint:
    """A node taint from its JSON form (`{"key", "value", "effect", "timeAdded"}`).

    With `validate` (the default) the API server's node-taint rules apply: key required and a
    qualified name, value a label value, effect required and one of NoSchedule,
    PreferNoSchedule, NoExecute. `validate=False` checks only the field types (like a Go struct
    literal in an upstream test; matching then follows upstream for odd values)."""
    body = _mapping(obj, path)
    key = _string(body, "key", path)
    value = _string(body, "value", path)
    effect = _string(body, "effect", path)
    if validate:
        if not key:
            raise FieldError((*path, "key"), "Required value")
        _check_qualified_name(key, (*path, "key"))
        _check_label_value(value, (*path, "value"))
        if not effect:
            raise FieldError((*path, "effect"), "Required value")
        _check_effect(effect, (*path, "effect"))
    return Taint(key, value, effect)


def parse_taints(obj: Any, path: Sequence[PathPart] = (), *, validate: bool = True) -> list[Taint]:
    """`node.spec.taints` (None means no taints). Validation also rejects two taints with the
    same key and effect, as the API server does."""
    if obj is None:
        return []
    if not isinstance(obj, list):
        raise FieldError(path, f"must be a list of taints, got {type(obj).__name__}")
    taints = [parse_taint(item, (*path, i), validate=validate) for i, item in enumerate(obj)]
    if validate:
        seen: set[tuple[str, str]] = set()
        for i, taint in enumerate(taints):
            if (taint.key, taint.effect) in seen:
                raise FieldError((*path, i), "taints must be unique by key and effect pair")
            seen.add((taint.key, taint.effect))
    return taints


def parse_toleration(
    obj: Any, path: Sequence[PathPart] = (), *, validate: bool = True
) -> Toleration:
    """A pod toleration from its JSON form (`{"key", "operator", "value", "effect",
    "tolerationSeconds"}`).

    With `validate` (the default) the API server's rules apply: key (if set) a qualified name;
    empty key only with Exists; operator one of Exists, Equal (or ""), Lt, Gt; Exists needs an
    empty value, Equal a label value, Lt/Gt a canonical int64; effect empty or a taint effect;
    tolerationSeconds only with NoExecute. `validate=False` checks only the field types."""
    body = _mapping(obj, path)
    key = _string(body, "key", path)
    operator = _string(body, "operator", path)
    value = _string(body, "value", path)
    effect = _string(body, "effect", path)
    seconds = body.get("tolerationSeconds")
    if seconds is not None and (
        isinstance(seconds, bool)
        or not isinstance(seconds, int)
        or not _INT64_MIN <= seconds <= _INT64_MAX
    ):
        raise FieldError((*path, "tolerationSeconds"), f"must be an int64, got {seconds!r}")
    toleration = Toleration(key, operator, value, effect, seconds)
    if validate:
        _validate_toleration(toleration, path)
    return toleration


def parse_tolerations(
    obj: Any, path: Sequence[PathPart] = (), *, validate: bool = True
) -> list[Toleration]:
    """`pod.spec.tolerations` (None means none)."""
    if obj is None:
        return []
    if not isinstance(obj, list):
        raise FieldError(path, f"must be a list of tolerations, got {type(obj).__name__}")
    return [parse_toleration(item, (*path, i), validate=validate) for i, item in enumerate(obj)]


def _validate_toleration(t: Toleration, path: Sequence[PathPart]) -> None:
    if t.key:
        _check_qualified_name(t.key, (*path, "key"))
    elif t.operator != OP_EXISTS:
        raise FieldError(
            (*path, "operator"),
            "operator must be Exists when `key` is empty, which means "
            '"match all values and all keys"',
        )
    if t.toleration_seconds is not None and t.effect != NO_EXECUTE:
        raise FieldError(
            (*path, "effect"), "effect must be 'NoExecute' when `tolerationSeconds` is set"
        )
    if t.operator in ("", OP_EQUAL):
        _check_label_value(t.value, (*path, "value"))
    elif t.operator == OP_EXISTS:
        if t.value:
            raise FieldError((*path, "operator"), "value must be empty when `operator` is 'Exists'")
    elif t.operator in (OP_LT, OP_GT):
        if t.numeric_value is None:
            raise FieldError(
                (*path, "value"),
                f"value must be an int64 in canonical decimal form when `operator` is "
                f"'{t.operator}' (no sign '+', no leading zeros), got {t.value!r}",
            )
    else:
        raise FieldError(
            (*path, "operator"),
            f"Unsupported value: {t.operator!r}: supported values: "
            + ", ".join(f'"{op}"' for op in TOLERATION_OPERATORS),
        )
    if t.effect:
        _check_effect(t.effect, (*path, "effect"))


def _mapping(obj: Any, path: Sequence[PathPart]) -> Mapping[str, Any]:
    if not isinstance(obj, Mapping):
        raise FieldError(path, f"must be an object, got {type(obj).__name__}")
    return obj


def _string(body: Mapping[str, Any], name: str, path: Sequence[PathPart]) -> str:
    value = body.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise FieldError((*path, name), f"must be a string, got {type(value).__name__}")
    return value


def _check_effect(effect: str, path: tuple[PathPart, ...]) -> None:
    if effect not in TAINT_EFFECTS:
        raise FieldError(
            path,
            f"Unsupported value: {effect!r}: supported values: "
            + ", ".join(f'"{e}"' for e in TAINT_EFFECTS),
        )


def _check_label_value(value: str, path: tuple[PathPart, ...]) -> None:
    if not value:
        return
    if len(value) > _NAME_MAX:
        raise FieldError(path, f"must be no more than {_NAME_MAX} characters: {value!r}")
    if not _NAME_PART.fullmatch(value):
        raise FieldError(
            path,
            f"a valid label value must be empty or consist of alphanumeric characters, '-', '_' "
            f"or '.', and must start and end with an alphanumeric character: {value!r}",
        )


def _check_qualified_name(name: str, path: tuple[PathPart, ...]) -> None:
    parts = name.split("/")
    if len(parts) > 2:
        raise FieldError(path, f"a qualified name has at most one '/': {name!r}")
    short = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            raise FieldError(path, f"prefix part must be non-empty: {name!r}")
        if len(prefix) > _PREFIX_MAX or not _DNS_SUBDOMAIN.fullmatch(prefix):
            raise FieldError(
                path,
                f"prefix part must be a lowercase RFC 1123 subdomain of at most {_PREFIX_MAX} "
                f"characters: {name!r}",
            )
    if not short:
        raise FieldError(path, f"name part must be non-empty: {name!r}")
    if len(short) > _NAME_MAX or not _NAME_PART.fullmatch(short):
        raise FieldError(
            path,
            f"name part must be at most {_NAME_MAX} alphanumeric characters, '-', '_' or '.', "
            f"starting and ending with an alphanumeric character: {name!r}",
        )
