"""Label selectors, node selectors and node affinity (upstream Kubernetes semantics).

Mirrors, in plain Python:
- apimachinery `labels.Requirement` / `labels.Selector` (matching, validation, `String()`),
- apimachinery `metav1.LabelSelectorAsSelector` (nil selector -> Nothing, empty -> Everything),
- component-helpers `nodeaffinity` (NodeSelector, LazyErrorNodeSelector, PreferredSchedulingTerms,
  RequiredNodeAffinity) and `corev1.MatchNodeSelectorTerms`.

Everything is parsed once into frozen dataclasses with precomputed value sets and Gt/Lt bounds,
so matching is a few dict lookups. Node selector terms keep their parse errors *lazily* the way
upstream does: an erroring term never matches, the other terms still can, and the error list
(`FieldIssue`s, rendered exactly like apimachinery `field.Error`) is available for callers that
must reject the object (`strict=True` or `.validate()`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from gpupact.errors import FieldError, PathPart
from gpupact.kube.fields import (
    INT64_MAX,
    INT64_MIN,
    integer,
    list_or_none,
    mapping,
    optional_list,
    string,
    string_list,
    string_map,
)
from gpupact.kube.validation import (
    FIELD_VALUE_INVALID,
    FIELD_VALUE_NOT_SUPPORTED,
    FieldIssue,
    Subscript,
    invalid_issue,
    label_key_errors,
    label_value_errors,
    not_supported_issue,
    upstream_field_path,
)

# ----------------------------------------------------------------------------------------------
# Selector errors (the field.Error type and the name rules live in gpupact.kube.validation)
# ----------------------------------------------------------------------------------------------


class SelectorError(FieldError):
    """Invalid selector: a FieldError (path of the first issue) carrying every upstream issue."""

    def __init__(self, issues: Sequence[FieldIssue]) -> None:
        if not issues:
            raise ValueError("SelectorError needs at least one issue")
        self.issues: tuple[FieldIssue, ...] = tuple(issues)
        first = self.issues[0]
        more = f" (and {len(self.issues) - 1} more)" if len(self.issues) > 1 else ""
        super().__init__(first.path, first.body + more)

    def prefixed(self, prefix: Sequence[PathPart]) -> SelectorError:
        return SelectorError([issue.prefixed(prefix) for issue in self.issues])

    def __str__(self) -> str:
        return "; ".join(str(issue) for issue in self.issues)


# ----------------------------------------------------------------------------------------------
# Integer bounds of Gt / Lt requirements
# ----------------------------------------------------------------------------------------------

_INT64_RE = re.compile(r"[+-]?[0-9]+")


@lru_cache(maxsize=8192)
def parse_int64(text: str) -> int | None:
    """Go `strconv.ParseInt(text, 10, 64)`: optional sign, ASCII digits, int64 range; else None."""
    if not _INT64_RE.fullmatch(text):
        return None
    number = int(text)
    return number if INT64_MIN <= number <= INT64_MAX else None


# ----------------------------------------------------------------------------------------------
# Requirements and selectors (apimachinery labels)
# ----------------------------------------------------------------------------------------------

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"
EQUALS = "Equals"  # matchLabels / pod.spec.nodeSelector entries (selection.Equals)

NODE_SELECTOR_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)
LABEL_SELECTOR_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)
FIELD_SELECTOR_OPERATORS = (IN, NOT_IN)
NODE_NAME_FIELD = "metadata.name"

_SELECTION_SPELLING = {IN: " in ", NOT_IN: " notin ", GT: ">", LT: "<", EQUALS: "="}


# matching dispatches on a small integer computed once per requirement
_MATCH_CODE = {IN: 1, EQUALS: 1, NOT_IN: 2, EXISTS: 3, DOES_NOT_EXIST: 4, GT: 5, LT: 6}


@dataclass(frozen=True, slots=True)
class Requirement:
    """One label requirement (labels.Requirement). Matching never raises: a requirement whose
    values cannot be used (e.g. a non-integer Gt bound) simply does not match, as upstream."""

    key: str
    operator: str
    values: tuple[str, ...] = ()
    _code: int = field(init=False, repr=False, compare=False)
    _value_set: frozenset[str] = field(init=False, repr=False, compare=False)
    _bound: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_code", _MATCH_CODE.get(self.operator, 0))
        object.__setattr__(self, "_value_set", frozenset(self.values))
        bound = parse_int64(self.values[0]) if len(self.values) == 1 else None
        object.__setattr__(self, "_bound", bound)

    def matches(self, labels: Mapping[str, str]) -> bool:
        code = self._code
        if code == 1:
            value = labels.get(self.key)
            return value is not None and value in self._value_set
        if code == 2:
            value = labels.get(self.key)
            return value is None or value not in self._value_set
        if code == 3:
            return self.key in labels
        if code == 4:
            return self.key not in labels
        if code >= 5:
            value = labels.get(self.key)
            if value is None or self._bound is None:
                return False
            number = parse_int64(value)
            if number is None:
                return False
            return number > self._bound if code == 5 else number < self._bound
        return False  # unknown operator

    def __str__(self) -> str:
        """labels.Requirement.String(): `k in (a,b)`, `!k`, `k>3`, `k=v` (values sorted)."""
        op = self.operator
        if op == EXISTS:
            return self.key
        if op == DOES_NOT_EXIST:
            return "!" + self.key
        values = ",".join(sorted(self.values)) if len(self.values) > 1 else "".join(self.values)
        if op in (IN, NOT_IN):
            values = f"({values})"
        return f"{self.key}{_SELECTION_SPELLING.get(op, op)}{values}"


NodeSelectorRequirement = Requirement
LabelSelectorRequirement = Requirement


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled labels.Selector: requirements ANDed; `nothing` is labels.Nothing()."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        # plain loops on the hot path: cheaper than all()/any() over a generator
        for requirement in self.requirements:  # noqa: SIM110
            if not requirement.matches(labels):
                return False
        return True

    @property
    def empty(self) -> bool:
        """True for labels.Everything() (no restriction)."""
        return not self.nothing and not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


def _sorted_by_key(requirements: Iterable[Requirement]) -> tuple[Requirement, ...]:
    # selector.Add sorts by key; a stable sort keeps equal keys in declaration order
    return tuple(sorted(requirements, key=lambda r: r.key))


def requirement_issues(
    key: str, operator: str, values: Sequence[str] | None, path: Sequence[PathPart]
) -> list[FieldIssue]:
    """Validation of labels.NewRequirement for an operator already mapped from the API name:
    the key, then the operator's value-count rule, then every value as a label value."""
    path = tuple(path)
    issues: list[FieldIssue] = []
    key_errors = label_key_errors(key)
    if key_errors:
        issues.append(invalid_issue((*path, "key"), key, "; ".join(key_errors)))
    vals: Sequence[str] = values or ()
    at = (*path, "values")
    shown = tuple(values) if values is not None else None  # Go renders a nil slice as null
    count_detail = ""
    if operator in (IN, NOT_IN) and not vals:
        count_detail = "for 'in', 'notin' operators, values set can't be empty"
    elif operator == EQUALS and len(vals) != 1:
        count_detail = "exact-match compatibility requires one single value"
    elif operator in (EXISTS, DOES_NOT_EXIST) and vals:
        count_detail = "values set must be empty for exists and does not exist"
    elif operator in (GT, LT) and len(vals) != 1:
        count_detail = "for 'Gt', 'Lt' operators, exactly one value is required"
    if count_detail:
        issues.append(invalid_issue(at, shown, count_detail))
    if operator in (GT, LT):
        for i, value in enumerate(vals):
            if parse_int64(value) is None:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                issues.append(invalid_issue((*at, i), value, detail))
    for i, value in enumerate(vals):
        value_errors = label_value_errors(value)
        if value_errors:
            issues.append(invalid_issue((*at, i, Subscript(key)), value, "; ".join(value_errors)))
    return issues


# ----------------------------------------------------------------------------------------------
# Reading API objects (strict shape; Go zero values for missing scalars)
# ----------------------------------------------------------------------------------------------


_REQUIREMENT_FIELDS = frozenset({"key", "operator", "values"})


def _read_requirement(obj: object, path: tuple[PathPart, ...]) -> tuple[str, str, tuple | None]:
    m = mapping(obj, path, known=_REQUIREMENT_FIELDS)
    key = string(m.get("key"), (*path, "key"))
    operator = string(m.get("operator"), (*path, "operator"))
    values = string_list(m.get("values"), (*path, "values"))
    return key, operator, values


# ----------------------------------------------------------------------------------------------
# metav1.LabelSelector
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """metav1.LabelSelector, compiled. An empty selector matches everything; a missing (None)
    selector matches nothing — use `label_selector_matches` where None is possible."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()
    selector: Selector = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        requirements = [Requirement(k, EQUALS, (v,)) for k, v in self.match_labels]
        requirements.extend(self.match_expressions)
        object.__setattr__(self, "selector", Selector(_sorted_by_key(requirements)))

    def matches(self, labels: Mapping[str, str]) -> bool:
        return self.selector.matches(labels)

    def __str__(self) -> str:
        return str(self.selector)


def label_selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """LabelSelectorAsSelector(sel).Matches(labels): a nil selector selects nothing."""
    return selector is not None and selector.selector.matches(labels)


_LABEL_SELECTOR_FIELDS = frozenset({"matchLabels", "matchExpressions"})


def parse_label_selector(
    obj: Mapping[str, Any] | None, path: Sequence[PathPart] = ()
) -> LabelSelector | None:
    """Parse a metav1.LabelSelector; raise SelectorError with every upstream validation issue.

    Upstream LabelSelectorAsSelector stops at the first bad requirement (in random map order);
    here all issues are reported, matchLabels in key order, then matchExpressions."""
    if obj is None:
        return None
    path = tuple(path)
    m = mapping(obj, path, known=_LABEL_SELECTOR_FIELDS)
    labels = string_map(m.get("matchLabels"), (*path, "matchLabels"))
    exprs_path = (*path, "matchExpressions")
    exprs = optional_list(m.get("matchExpressions"), exprs_path)
    issues: list[FieldIssue] = []
    for key in sorted(labels):
        entry_path = (*path, "matchLabels", Subscript(key))
        for issue in requirement_issues(key, EQUALS, (labels[key],), ()):
            # NewRequirement reports `key` / `values[0][k]`; one entry path covers both here
            issues.append(FieldIssue(issue.type, entry_path, issue.bad_value, issue.detail))
    requirements: list[Requirement] = []
    for i, expr in enumerate(exprs):
        p = (*exprs_path, i)
        key, operator, values = _read_requirement(expr, p)
        if operator not in LABEL_SELECTOR_OPERATORS:
            issues.append(
                FieldIssue(
                    FIELD_VALUE_NOT_SUPPORTED,
                    (*p, "operator"),
                    operator,
                    f"{json.dumps(operator)} is not a valid label selector operator",
                )
            )
            continue
        issues.extend(requirement_issues(key, operator, values, p))
        requirements.append(Requirement(key, operator, values or ()))
    if issues:
        raise SelectorError(issues)
    return LabelSelector(tuple(sorted(labels.items())), tuple(requirements))


# ----------------------------------------------------------------------------------------------
# v1.NodeSelector (component-helpers nodeaffinity)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """A matchFields entry: a field selector term `key==value` (In) or `key!=value` (NotIn)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, node_name: str) -> bool:
        # the only node field upstream exposes is metadata.name; any other key reads as ""
        if len(self.values) != 1:
            return False
        actual = node_name if self.key == NODE_NAME_FIELD else ""
        if self.operator == IN:
            return actual == self.values[0]
        if self.operator == NOT_IN:
            return actual != self.values[0]
        return False


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements ANDed. An empty term, or one with parse issues, never matches."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[FieldRequirement, ...] = ()
    issues: tuple[FieldIssue, ...] = ()
    _never: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        empty = not self.match_expressions and not self.match_fields
        object.__setattr__(self, "_never", empty or bool(self.issues))

    @property
    def empty(self) -> bool:
        return not self.match_expressions and not self.match_fields

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        if self._never:
            return False
        for requirement in self.match_expressions:
            if not requirement.matches(labels):
                return False
        # upstream skips field requirements for a node without a name (empty field set)
        if node_name:
            for requirement in self.match_fields:
                if not requirement.matches(node_name):
                    return False
        return True


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """v1.NodeSelector: terms ORed. Like upstream's LazyErrorNodeSelector, a term with parse
    issues never matches while the other terms still can; `issues` lists them all."""

    terms: tuple[NodeSelectorTerm, ...] = ()

    @property
    def issues(self) -> tuple[FieldIssue, ...]:
        """What upstream NewNodeSelector returns as errors (flattened, in term order)."""
        return tuple(issue for term in self.terms for issue in term.issues)

    def validate(self) -> None:
        """Raise SelectorError if NewNodeSelector would fail."""
        issues = self.issues
        if issues:
            raise SelectorError(issues)

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        for term in self.terms:  # noqa: SIM110 (hot path: a plain loop is cheaper than any())
            if term.matches(node_name, labels):
                return True
        return False


def node_selector_errors(selector: NodeSelector | None) -> tuple[FieldIssue, ...]:
    return selector.issues if selector is not None else ()


def _term_from_requirements(
    expressions: Sequence[object] | None,
    fields: Sequence[object] | None,
    path: tuple[PathPart, ...],
) -> NodeSelectorTerm:
    issues: list[FieldIssue] = []
    label_reqs: list[Requirement] = []
    for i, expr in enumerate(expressions or ()):
        p = (*path, "matchExpressions", i)
        key, operator, values = _read_requirement(expr, p)
        if operator not in NODE_SELECTOR_OPERATORS:
            issues.append(not_supported_issue((*p, "operator"), operator, NODE_SELECTOR_OPERATORS))
            label_reqs.append(Requirement(key, operator, values or ()))
            continue
        issues.extend(requirement_issues(key, operator, values, p))
        label_reqs.append(Requirement(key, operator, values or ()))
    field_reqs: list[FieldRequirement] = []
    for i, expr in enumerate(fields or ()):
        p = (*path, "matchFields", i)
        key, operator, values = _read_requirement(expr, p)
        vals = values or ()
        if operator in FIELD_SELECTOR_OPERATORS:
            if len(vals) != 1:
                issues.append(invalid_issue((*p, "values"), values, "must have one element"))
        else:
            issues.append(not_supported_issue((*p, "operator"), operator, FIELD_SELECTOR_OPERATORS))
        field_reqs.append(FieldRequirement(key, operator, vals))
    return NodeSelectorTerm(_sorted_by_key(label_reqs), tuple(field_reqs), tuple(issues))


_TERM_FIELDS = frozenset({"matchExpressions", "matchFields"})


def parse_node_selector_term(obj: object, path: Sequence[PathPart] = ()) -> NodeSelectorTerm:
    """One v1.NodeSelectorTerm; semantic problems are kept in `.issues` (upstream field paths)."""
    path = tuple(path)
    m = mapping(obj, path, known=_TERM_FIELDS)
    expressions = list_or_none(m.get("matchExpressions"), (*path, "matchExpressions"))
    fields = list_or_none(m.get("matchFields"), (*path, "matchFields"))
    return _term_from_requirements(expressions, fields, path)


_NODE_SELECTOR_FIELDS = frozenset({"nodeSelectorTerms"})


def parse_node_selector(
    obj: Mapping[str, Any] | None, path: Sequence[PathPart] = (), *, strict: bool = False
) -> NodeSelector | None:
    """Parse a v1.NodeSelector. Shape errors raise FieldError; upstream parse errors are kept per
    term (LazyErrorNodeSelector) unless `strict`, which raises them like NewNodeSelector."""
    if obj is None:
        return None
    path = tuple(path)
    m = mapping(obj, path, known=_NODE_SELECTOR_FIELDS)
    terms_path = (*path, "nodeSelectorTerms")
    raw_terms = optional_list(m.get("nodeSelectorTerms"), terms_path)
    selector = NodeSelector(
        tuple(parse_node_selector_term(t, (*terms_path, i)) for i, t in enumerate(raw_terms))
    )
    if strict:
        selector.validate()
    return selector


def node_selector_requirements_as_selector(
    expressions: Sequence[object] | None, path: Sequence[PathPart] = ()
) -> Selector:
    """nodeSelectorRequirementsAsSelector: none -> Nothing; else the compiled selector, or
    SelectorError with every issue (paths `<path>[i].key` etc.)."""
    if not expressions:
        return NOTHING
    path = tuple(path)
    items = optional_list(expressions, path)
    # reuse the term parser, then strip the `matchExpressions` element it adds to paths
    term = _term_from_requirements(items, None, ())
    if term.issues:
        raise SelectorError(
            [FieldIssue(i.type, (*path, *i.path[1:]), i.bad_value, i.detail) for i in term.issues]
        )
    return Selector(term.match_expressions)


def match_node_selector_terms(
    selector: NodeSelector | None, node_name: str | None, node_labels: Mapping[str, str] | None
) -> bool:
    """corev1.MatchNodeSelectorTerms: a nil node (node_name None) or nil selector never matches."""
    if node_name is None or selector is None:
        return False
    return selector.matches(node_name, node_labels or {})


# ----------------------------------------------------------------------------------------------
# v1.NodeAffinity, required (nodeSelector AND affinity) and preferred (weights)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int
    preference: NodeSelectorTerm


_PREFERRED_TERM_FIELDS = frozenset({"weight", "preference"})


def parse_preferred_scheduling_terms(
    obj: Sequence[object] | None, path: Sequence[PathPart] = ()
) -> tuple[PreferredSchedulingTerm, ...]:
    """[]v1.PreferredSchedulingTerm. Issue paths follow upstream NewPreferredSchedulingTerms:
    `<path>[i].matchFields[0].values` (the term index, then the preference's fields)."""
    path = tuple(path)
    out = []
    for i, raw in enumerate(optional_list(obj, path)):
        p = (*path, i)
        m = mapping(raw, p, known=_PREFERRED_TERM_FIELDS)
        weight = integer(m.get("weight"), (*p, "weight"), bits=32)
        pref = m.get("preference")
        pref_path = (*p, "preference")
        pm = mapping(pref if pref is not None else {}, pref_path, known=_TERM_FIELDS)
        expressions = list_or_none(pm.get("matchExpressions"), (*pref_path, "matchExpressions"))
        fields = list_or_none(pm.get("matchFields"), (*pref_path, "matchFields"))
        out.append(PreferredSchedulingTerm(weight, _term_from_requirements(expressions, fields, p)))
    return tuple(out)


def preferred_terms_issues(terms: Iterable[PreferredSchedulingTerm]) -> tuple[FieldIssue, ...]:
    """What NewPreferredSchedulingTerms returns as errors: weight-0 terms are never parsed."""
    return tuple(issue for t in terms if t.weight != 0 for issue in t.preference.issues)


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    """pod.spec.affinity.nodeAffinity."""

    required: NodeSelector | None = None
    preferred: tuple[PreferredSchedulingTerm, ...] = ()
    _scoring: tuple[tuple[int, NodeSelectorTerm], ...] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        scoring = tuple(
            (t.weight, t.preference)
            for t in self.preferred
            if t.weight != 0 and not t.preference.empty and not t.preference.issues
        )
        object.__setattr__(self, "_scoring", scoring)

    @property
    def preferred_issues(self) -> tuple[FieldIssue, ...]:
        """Upstream NewPreferredSchedulingTerms errors (the scheduler's PreScore then fails)."""
        return preferred_terms_issues(self.preferred)

    @property
    def issues(self) -> tuple[FieldIssue, ...]:
        return node_selector_errors(self.required) + self.preferred_issues

    def validate(self) -> None:
        issues = self.issues
        if issues:
            raise SelectorError(issues)

    def preferred_score(self, node_name: str, labels: Mapping[str, str]) -> int:
        score = 0
        for weight, term in self._scoring:
            if term.matches(node_name, labels):
                score += weight
        return score


_REQUIRED_KEY = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED_KEY = "preferredDuringSchedulingIgnoredDuringExecution"
_NODE_AFFINITY_FIELDS = frozenset({_REQUIRED_KEY, _PREFERRED_KEY})


def parse_node_affinity(
    obj: Mapping[str, Any] | None, path: Sequence[PathPart] = (), *, strict: bool = False
) -> NodeAffinity | None:
    """Parse pod.spec.affinity.nodeAffinity. Upstream parse errors are kept lazily (see
    NodeSelector) unless `strict`, which raises SelectorError with all of them."""
    if obj is None:
        return None
    path = tuple(path)
    m = mapping(obj, path, known=_NODE_AFFINITY_FIELDS)
    required = parse_node_selector(m.get(_REQUIRED_KEY), (*path, _REQUIRED_KEY))
    preferred = parse_preferred_scheduling_terms(m.get(_PREFERRED_KEY), (*path, _PREFERRED_KEY))
    affinity = NodeAffinity(required, preferred)
    if strict:
        affinity.validate()
    return affinity


@dataclass(frozen=True, slots=True, init=False)
class RequiredNodeAffinity:
    """GetRequiredNodeAffinity(pod): pod.spec.nodeSelector (exact label matches) AND the required
    node affinity terms. Parse errors in affinity terms make those terms never match."""

    node_selector: tuple[tuple[str, str], ...]
    required: NodeSelector | None

    def __init__(
        self,
        node_selector: Mapping[str, str] | None = None,
        affinity: NodeAffinity | None = None,
    ) -> None:
        object.__setattr__(self, "node_selector", tuple(sorted((node_selector or {}).items())))
        object.__setattr__(self, "required", affinity.required if affinity is not None else None)

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        for key, value in self.node_selector:
            if labels.get(key) != value:
                return False
        if self.required is not None:
            return self.required.matches(node_name, labels)
        return True


def preferred_node_affinity_score(
    affinity: NodeAffinity | None, node_name: str, node_labels: Mapping[str, str]
) -> int:
    """PreferredSchedulingTerms.Score: the sum of the weights of matching preferred terms
    (weight-0, empty and erroring terms never count; check `affinity.preferred_issues`)."""
    if affinity is None:
        return 0
    return affinity.preferred_score(node_name, node_labels)


__all__ = [
    "DOES_NOT_EXIST",
    "EQUALS",
    "EVERYTHING",
    "EXISTS",
    "FIELD_VALUE_INVALID",
    "FIELD_VALUE_NOT_SUPPORTED",
    "GT",
    "IN",
    "LT",
    "NOTHING",
    "NOT_IN",
    "FieldIssue",
    "FieldRequirement",
    "LabelSelector",
    "LabelSelectorRequirement",
    "NodeAffinity",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "PreferredSchedulingTerm",
    "RequiredNodeAffinity",
    "Requirement",
    "Selector",
    "SelectorError",
    "Subscript",
    "label_key_errors",
    "label_selector_matches",
    "label_value_errors",
    "match_node_selector_terms",
    "node_selector_errors",
    "node_selector_requirements_as_selector",
    "parse_int64",
    "parse_label_selector",
    "parse_node_affinity",
    "parse_node_selector",
    "parse_node_selector_term",
    "parse_preferred_scheduling_terms",
    "preferred_node_affinity_score",
    "preferred_terms_issues",
    "upstream_field_path",
]


# ----------------------------------------------------------------------------------------------
# The selector string of `kubectl get -l` (labels.Parse)
# ----------------------------------------------------------------------------------------------

_SELECTOR_TOKEN = re.compile(r"\s*(!=|==|=|!|,|\(|\)|<|>|[^\s!=,()<>]+)")
# the string operators, mapped to the requirement operators that match the same labels
_STRING_OPERATORS = {"=": EQUALS, "==": EQUALS, "!=": NOT_IN, "in": IN, "notin": NOT_IN}


def parse_selector(text: str) -> Selector:
    """`app=web,tier!=cache,env in (prod,staging),!legacy,gpu,rank>3` as labels.Parse reads it;
    ValueError naming the first problem. Requirements are ANDed."""
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _SELECTOR_TOKEN.match(text, pos)
        if m is None:  # pragma: no cover - every character is some token
            raise ValueError(f"unexpected {text[pos:]!r}")
        tokens.append(m.group(1))
        pos = m.end()
    requirements: list[Requirement] = []
    i = 0

    def take() -> str | None:
        nonlocal i
        token = tokens[i] if i < len(tokens) else None
        i += 1
        return token

    def peek() -> str | None:
        return tokens[i] if i < len(tokens) else None

    while i < len(tokens):
        negated = peek() == "!"
        if negated:
            take()
        key = take()
        if key is None or key in "!=,()<>" or key in ("==", "!="):
            raise ValueError(f"expected a label key, found {key or 'the end'!r}")
        if negated or peek() in (None, ","):
            operator, values = (DOES_NOT_EXIST if negated else EXISTS), ()
        else:
            spelled = take() or ""
            if spelled in ("<", ">"):
                operator, values = (GT if spelled == ">" else LT), (take() or "",)
            elif spelled in ("in", "notin"):
                if take() != "(":
                    raise ValueError(f"expected '(' after {spelled!r} for key {key!r}")
                values = _selector_values(take, peek)
                operator = _STRING_OPERATORS[spelled]
            elif spelled in _STRING_OPERATORS:
                value = "" if peek() in (None, ",") else take() or ""
                if value in "!=,()<>" and value:
                    raise ValueError(f"expected a value after {key}{spelled}, found {value!r}")
                operator, values = _STRING_OPERATORS[spelled], (value,)
            else:
                raise ValueError(f"expected an operator after {key!r}, found {spelled!r}")
        issues = requirement_issues(key, operator, values, ())
        if issues:
            raise ValueError(f"{key}: {issues[0].detail}")
        requirements.append(Requirement(key, operator, values))
        following = take()
        if following not in (None, ","):
            raise ValueError(f"expected ',' between requirements, found {following!r}")
    return Selector(_sorted_by_key(requirements))


def _selector_values(take: Any, peek: Any) -> tuple[str, ...]:
    values: list[str] = []
    while True:
        token = take()
        if token == ")":
            return tuple(values)
        if token is None or token in "!=,()<>":
            raise ValueError(f"expected a value or ')', found {token or 'the end'!r}")
        values.append(token)
        if peek() == ",":
            take()
