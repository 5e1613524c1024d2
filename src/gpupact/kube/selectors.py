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

# ----------------------------------------------------------------------------------------------
# Field issues: the upstream `field.Error` (type, field path, bad value, detail)
# ----------------------------------------------------------------------------------------------

FIELD_VALUE_INVALID = "FieldValueInvalid"
FIELD_VALUE_NOT_SUPPORTED = "FieldValueNotSupported"

_TYPE_WORDS = {FIELD_VALUE_INVALID: "Invalid value", FIELD_VALUE_NOT_SUPPORTED: "Unsupported value"}


class Subscript(str):
    """A map-key path element: rendered `[key]` upstream (field.Path.Key), not `.key`."""

    __slots__ = ()


def upstream_field_path(path: Sequence[PathPart]) -> str:
    """Render a path like apimachinery `field.Path.String()`: names dotted, indices/keys `[x]`."""
    out = ""
    for part in path:
        if isinstance(part, int | Subscript):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


def _go_value(value: object) -> str:
    # field.Error renders strings with %q and everything else as JSON
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class FieldIssue:
    """One upstream validation error (apimachinery `field.Error`)."""

    type: str
    path: tuple[PathPart, ...]
    bad_value: object
    detail: str

    @property
    def field(self) -> str:
        return upstream_field_path(self.path)

    @property
    def body(self) -> str:
        """`field.Error.ErrorBody()`: `Invalid value: "x": detail`."""
        word = _TYPE_WORDS.get(self.type, self.type)
        text = f"{word}: {_go_value(self.bad_value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def prefixed(self, prefix: Sequence[PathPart]) -> FieldIssue:
        return FieldIssue(self.type, (*prefix, *self.path), self.bad_value, self.detail)

    def __str__(self) -> str:
        return f"{self.field}: {self.body}" if self.path else self.body


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
# Label keys and values (apimachinery api/validate/content)
# ----------------------------------------------------------------------------------------------

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_FMT = f"({_LABEL_KEY_FMT})?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)
# Go's RE2 `$` means end of text; Python's fullmatch is the equivalent (no trailing-newline slack)
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_INT64_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = "".join(f"{' or ' if i else ''}'{ex}', " for i, ex in enumerate(examples))
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} bytes"


def _byte_len(text: str) -> int:
    # Go's len() counts UTF-8 bytes
    return len(text.encode("utf-8", "surrogatepass"))


def label_key_errors(key: str) -> list[str]:
    """Messages for an invalid label key (upstream IsLabelKey / IsQualifiedName); [] if valid."""
    parts = key.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if _byte_len(prefix) > 253:
                errs.append("prefix part " + _max_len_error(253))
            if not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
                errs.append(
                    "prefix part "
                    + _regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com")
                )
    else:
        return [
            "a valid label key "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > 63:
        errs.append("name part " + _max_len_error(63))
    if not _LABEL_KEY_RE.fullmatch(name):
        errs.append(
            "name part "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """Messages for an invalid label value (upstream IsLabelValue); [] if valid."""
    errs: list[str] = []
    if _byte_len(value) > 63:
        errs.append(_max_len_error(63))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errs


@lru_cache(maxsize=8192)
def parse_int64(text: str) -> int | None:
    """Go `strconv.ParseInt(text, 10, 64)`: optional sign, ASCII digits, int64 range; else None."""
    if not _INT64_RE.fullmatch(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


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


def _invalid(path: tuple[PathPart, ...], value: object, detail: str) -> FieldIssue:
    return FieldIssue(FIELD_VALUE_INVALID, path, value, detail)


def requirement_issues(
    key: str, operator: str, values: Sequence[str] | None, path: Sequence[PathPart]
) -> list[FieldIssue]:
    """Validation of labels.NewRequirement for an operator already mapped from the API name:
    the key, then the operator's value-count rule, then every value as a label value."""
    path = tuple(path)
    issues: list[FieldIssue] = []
    key_errors = label_key_errors(key)
    if key_errors:
        issues.append(_invalid((*path, "key"), key, "; ".join(key_errors)))
    vals: Sequence[str] = values or ()
    at = (*path, "values")
    shown = tuple(values) if values is not None else None  # Go renders a nil slice as null
    if operator in (IN, NOT_IN) and not vals:
        issues.append(_invalid(at, shown, "for 'in', 'notin' operators, values set can't be empty"))
    elif operator == EQUALS and len(vals) != 1:
        issues.append(_invalid(at, shown, "exact-match compatibility requires one single value"))
    elif operator in (EXISTS, DOES_NOT_EXIST) and vals:
        issues.append(_invalid(at, shown, "values set must be empty for exists and does not exist"))
    elif operator in (GT, LT):
        if len(vals) != 1:
            issues.append(
                _invalid(at, shown, "for 'Gt', 'Lt' operators, exactly one value is required")
            )
        for i, value in enumerate(vals):
            if parse_int64(value) is None:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                issues.append(_invalid((*at, i), value, detail))
    for i, value in enumerate(vals):
        value_errors = label_value_errors(value)
        if value_errors:
            issues.append(_invalid((*at, i, Subscript(key)), value, "; ".join(value_errors)))
    return issues


# ----------------------------------------------------------------------------------------------
# Reading API objects (strict shape; Go zero values for missing scalars)
# ----------------------------------------------------------------------------------------------


def _mapping(obj: object, path: tuple[PathPart, ...], allowed: Iterable[str]) -> Mapping[str, Any]:
    if not isinstance(obj, Mapping):
        raise FieldError(path, f"must be an object, got {type(obj).__name__}")
    allowed = set(allowed)
    for key in obj:
        if key not in allowed:
            raise FieldError((*path, str(key)), f'unknown field "{key}"')
    return obj


def _list(obj: object, path: tuple[PathPart, ...]) -> tuple[Any, ...] | None:
    """None for a missing/null list (Go nil slice), else the items."""
    if obj is None:
        return None
    if not isinstance(obj, list | tuple):
        raise FieldError(path, f"must be a list, got {type(obj).__name__}")
    return tuple(obj)


def _string(obj: object, path: tuple[PathPart, ...]) -> str:
    if obj is None:
        return ""
    if not isinstance(obj, str):
        raise FieldError(path, f"must be a string, got {type(obj).__name__}")
    return obj


def _strings(obj: object, path: tuple[PathPart, ...]) -> tuple[str, ...] | None:
    items = _list(obj, path)
    if items is None:
        return None
    return tuple(_string_item(v, (*path, i)) for i, v in enumerate(items))


def _string_item(obj: object, path: tuple[PathPart, ...]) -> str:
    if not isinstance(obj, str):
        raise FieldError(path, f"must be a string, got {type(obj).__name__}")
    return obj


def _string_map(obj: object, path: tuple[PathPart, ...]) -> dict[str, str]:
    if obj is None:
        return {}
    if not isinstance(obj, Mapping):
        raise FieldError(path, f"must be a map of strings, got {type(obj).__name__}")
    out: dict[str, str] = {}
    for key, value in obj.items():
        if not isinstance(key, str):
            raise FieldError(path, f"keys must be strings, got {type(key).__name__}")
        out[key] = _string_item(value, (*path, key))
    return out


_REQUIREMENT_FIELDS = ("key", "operator", "values")


def _read_requirement(obj: object, path: tuple[PathPart, ...]) -> tuple[str, str, tuple | None]:
    m = _mapping(obj, path, _REQUIREMENT_FIELDS)
    key = _string(m.get("key"), (*path, "key"))
    operator = _string(m.get("operator"), (*path, "operator"))
    values = _strings(m.get("values"), (*path, "values"))
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


def parse_label_selector(
    obj: Mapping[str, Any] | None, path: Sequence[PathPart] = ()
) -> LabelSelector | None:
    """Parse a metav1.LabelSelector; raise SelectorError with every upstream validation issue.

    Upstream LabelSelectorAsSelector stops at the first bad requirement (in random map order);
    here all issues are reported, matchLabels in key order, then matchExpressions."""
    if obj is None:
        return None
    path = tuple(path)
    m = _mapping(obj, path, ("matchLabels", "matchExpressions"))
    labels = _string_map(m.get("matchLabels"), (*path, "matchLabels"))
    exprs_path = (*path, "matchExpressions")
    exprs = _list(m.get("matchExpressions"), exprs_path) or ()
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
            issues.append(
                FieldIssue(
                    FIELD_VALUE_NOT_SUPPORTED,
                    (*p, "operator"),
                    operator,
                    "supported values: " + ", ".join(f'"{o}"' for o in NODE_SELECTOR_OPERATORS),
                )
            )
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
                issues.append(
                    FieldIssue(FIELD_VALUE_INVALID, (*p, "values"), values, "must have one element")
                )
        else:
            issues.append(
                FieldIssue(
                    FIELD_VALUE_NOT_SUPPORTED,
                    (*p, "operator"),
                    operator,
                    "supported values: " + ", ".join(f'"{o}"' for o in FIELD_SELECTOR_OPERATORS),
                )
            )
        field_reqs.append(FieldRequirement(key, operator, vals))
    return NodeSelectorTerm(_sorted_by_key(label_reqs), tuple(field_reqs), tuple(issues))


_TERM_FIELDS = ("matchExpressions", "matchFields")


def parse_node_selector_term(obj: object, path: Sequence[PathPart] = ()) -> NodeSelectorTerm:
    """One v1.NodeSelectorTerm; semantic problems are kept in `.issues` (upstream field paths)."""
    path = tuple(path)
    m = _mapping(obj, path, _TERM_FIELDS)
    expressions = _list(m.get("matchExpressions"), (*path, "matchExpressions"))
    fields = _list(m.get("matchFields"), (*path, "matchFields"))
    return _term_from_requirements(expressions, fields, path)


def parse_node_selector(
    obj: Mapping[str, Any] | None, path: Sequence[PathPart] = (), *, strict: bool = False
) -> NodeSelector | None:
    """Parse a v1.NodeSelector. Shape errors raise FieldError; upstream parse errors are kept per
    term (LazyErrorNodeSelector) unless `strict`, which raises them like NewNodeSelector."""
    if obj is None:
        return None
    path = tuple(path)
    m = _mapping(obj, path, ("nodeSelectorTerms",))
    terms_path = (*path, "nodeSelectorTerms")
    raw_terms = _list(m.get("nodeSelectorTerms"), terms_path) or ()
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
    items = _list(expressions, path) or ()
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


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _weight(obj: object, path: tuple[PathPart, ...]) -> int:
    if obj is None:
        return 0
    if isinstance(obj, bool) or not isinstance(obj, int):
        raise FieldError(path, f"must be an integer, got {type(obj).__name__}")
    if not _INT32_MIN <= obj <= _INT32_MAX:
        raise FieldError(path, f"must fit in int32, got {obj}")
    return obj


def parse_preferred_scheduling_terms(
    obj: Sequence[object] | None, path: Sequence[PathPart] = ()
) -> tuple[PreferredSchedulingTerm, ...]:
    """[]v1.PreferredSchedulingTerm. Issue paths follow upstream NewPreferredSchedulingTerms:
    `<path>[i].matchFields[0].values` (the term index, then the preference's fields)."""
    path = tuple(path)
    out = []
    for i, raw in enumerate(_list(obj, path) or ()):
        p = (*path, i)
        m = _mapping(raw, p, ("weight", "preference"))
        weight = _weight(m.get("weight"), (*p, "weight"))
        pref = m.get("preference")
        pref_path = (*p, "preference")
        pm = _mapping(pref if pref is not None else {}, pref_path, _TERM_FIELDS)
        expressions = _list(pm.get("matchExpressions"), (*pref_path, "matchExpressions"))
        fields = _list(pm.get("matchFields"), (*pref_path, "matchFields"))
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


def parse_node_affinity(
    obj: Mapping[str, Any] | None, path: Sequence[PathPart] = (), *, strict: bool = False
) -> NodeAffinity | None:
    """Parse pod.spec.affinity.nodeAffinity. Upstream parse errors are kept lazily (see
    NodeSelector) unless `strict`, which raises SelectorError with all of them."""
    if obj is None:
        return None
    path = tuple(path)
    m = _mapping(obj, path, (_REQUIRED_KEY, _PREFERRED_KEY))
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
