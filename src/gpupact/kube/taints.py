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
from gpupact.kube.fields import (
    INT64_MAX,
    INT64_MIN,
    mapping,
    optional_integer,
    optional_list,
    string,
)
from gpupact.kube.status import MAX_NODE_SCORE, SUCCESS, Code, Status
from gpupact.kube.validation import (
    check_label_key,
    check_label_value,
    check_supported,
    required_issue,
)

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
# Canonical decimal form (apimachinery content.IsDecimalInteger): "0", or an optional '-' and
# a non-zero ASCII digit followed by ASCII digits. No '+', no leading zeros, no "-0", no spaces.
_CANONICAL_INT = re.compile(r"0|-?[1-9][0-9]*")
_MAX_INT64_TEXT = len(str(INT64_MIN))  # longer strings cannot be int64; also bounds int()


def parse_canonical_int64(text: str) -> int | None:
    """The integer a taint/toleration value denotes for Lt/Gt, or None if it is not an int64 in
    canonical decimal form (then upstream logs a parse error and the toleration does not match)."""
    if len(text) > _MAX_INT64_TEXT or not _CANONICAL_INT.fullmatch(text):
        return None
    number = int(text)
    return number if INT64_MIN <= number <= INT64_MAX else None


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
    body = mapping(obj, path)
    key = string(body.get("key"), (*path, "key"))
    value = string(body.get("value"), (*path, "value"))
    effect = string(body.get("effect"), (*path, "effect"))
    if validate:
        if not key:
            raise required_issue((*path, "key")).as_error()
        check_label_key(key, (*path, "key"))
        check_label_value(value, (*path, "value"))
        if not effect:
            raise required_issue((*path, "effect")).as_error()
        check_supported(effect, TAINT_EFFECTS, (*path, "effect"))
    return Taint(key, value, effect)


def parse_taints(obj: Any, path: Sequence[PathPart] = (), *, validate: bool = True) -> list[Taint]:
    """`node.spec.taints` (None means no taints). Validation also rejects two taints with the
    same key and effect, as the API server does."""
    items = optional_list(obj, path)
    taints = [parse_taint(item, (*path, i), validate=validate) for i, item in enumerate(items)]
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
    body = mapping(obj, path)
    key = string(body.get("key"), (*path, "key"))
    operator = string(body.get("operator"), (*path, "operator"))
    value = string(body.get("value"), (*path, "value"))
    effect = string(body.get("effect"), (*path, "effect"))
    seconds = optional_integer(body.get("tolerationSeconds"), (*path, "tolerationSeconds"), bits=64)
    toleration = Toleration(key, operator, value, effect, seconds)
    if validate:
        _validate_toleration(toleration, path)
    return toleration


def parse_tolerations(
    obj: Any, path: Sequence[PathPart] = (), *, validate: bool = True
) -> list[Toleration]:
    """`pod.spec.tolerations` (None means none)."""
    items = optional_list(obj, path)
    return [parse_toleration(item, (*path, i), validate=validate) for i, item in enumerate(items)]


def _validate_toleration(t: Toleration, path: Sequence[PathPart]) -> None:
    if t.key:
        check_label_key(t.key, (*path, "key"))
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
        check_label_value(t.value, (*path, "value"))
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
        check_supported(t.operator, TOLERATION_OPERATORS, (*path, "operator"))
    if t.effect:
        check_supported(t.effect, TAINT_EFFECTS, (*path, "effect"))
