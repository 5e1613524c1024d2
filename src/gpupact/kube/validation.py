"""API-server validation: field errors and name rules (upstream apimachinery semantics).

- `FieldIssue` is apimachinery `field.Error` (type, field path, bad value, detail) and renders
  its body exactly as `ErrorBody()` does; parsers raise it as a FieldError (`as_error`) or
  collect several (selectors).
- Qualified names / label keys and label values follow apimachinery `IsQualifiedName` and
  `IsLabelValue`, with their detail strings byte for byte (conformance vectors compare them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from gpupact.errors import FieldError, PathPart

# --- field.Error -----------------------------------------------------------------------------

# field.ErrorType strings of k8s.io/apimachinery/pkg/util/validation/field
FIELD_VALUE_INVALID = "FieldValueInvalid"
FIELD_VALUE_NOT_SUPPORTED = "FieldValueNotSupported"
FIELD_VALUE_REQUIRED = "FieldValueRequired"
FIELD_VALUE_DUPLICATE = "FieldValueDuplicate"
FIELD_VALUE_FORBIDDEN = "FieldValueForbidden"
FIELD_VALUE_TOO_LONG = "FieldValueTooLong"

_TYPE_WORDS = {
    FIELD_VALUE_INVALID: "Invalid value",
    FIELD_VALUE_NOT_SUPPORTED: "Unsupported value",
    FIELD_VALUE_REQUIRED: "Required value",
    FIELD_VALUE_DUPLICATE: "Duplicate value",
    FIELD_VALUE_FORBIDDEN: "Forbidden",
    FIELD_VALUE_TOO_LONG: "Too long",
}
# ErrorBody leaves the bad value out for these types
_VALUELESS_TYPES = frozenset({FIELD_VALUE_REQUIRED, FIELD_VALUE_FORBIDDEN, FIELD_VALUE_TOO_LONG})


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
    # field.Error renders strings with %q and everything else as JSON; a value JSON cannot
    # hold (only reachable from Python callers) is shown by its repr instead of failing
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)


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
        text = _TYPE_WORDS.get(self.type, self.type)
        if self.type not in _VALUELESS_TYPES:
            text = f"{text}: {_go_value(self.bad_value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def prefixed(self, prefix: Sequence[PathPart]) -> FieldIssue:
        return FieldIssue(self.type, (*prefix, *self.path), self.bad_value, self.detail)

    def as_error(self) -> FieldError:
        """The issue as the FieldError a parser raises (message = the upstream body)."""
        return FieldError(self.path, self.body)

    def __str__(self) -> str:
        return f"{self.field}: {self.body}" if self.path else self.body


def invalid_issue(path: Sequence[PathPart], value: object, detail: str) -> FieldIssue:
    return FieldIssue(FIELD_VALUE_INVALID, tuple(path), value, detail)


def required_issue(path: Sequence[PathPart], detail: str = "") -> FieldIssue:
    return FieldIssue(FIELD_VALUE_REQUIRED, tuple(path), None, detail)


def duplicate_issue(path: Sequence[PathPart], value: object) -> FieldIssue:
    return FieldIssue(FIELD_VALUE_DUPLICATE, tuple(path), value, "")


def forbidden_issue(path: Sequence[PathPart], detail: str) -> FieldIssue:
    return FieldIssue(FIELD_VALUE_FORBIDDEN, tuple(path), None, detail)


def supported_values(choices: Iterable[str]) -> str:
    """field.NotSupported's detail: `supported values: "a", "b"` (in the order given)."""
    return "supported values: " + ", ".join(_go_value(choice) for choice in choices)


def not_supported_issue(
    path: Sequence[PathPart], value: object, choices: Iterable[str]
) -> FieldIssue:
    return FieldIssue(FIELD_VALUE_NOT_SUPPORTED, tuple(path), value, supported_values(choices))


def check_supported(value: object, choices: Sequence[str], path: Sequence[PathPart]) -> None:
    """Raise field.NotSupported unless `value` is one of `choices`."""
    if value not in choices:
        raise not_supported_issue(path, value, choices).as_error()


# --- label keys (qualified names) and label values (apimachinery api/validate/content) -------

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
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)
# Go's RE2 `$` means end of text; Python's fullmatch is the equivalent (no trailing-newline slack)
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)

_NAME_MAX_BYTES = 63
_PREFIX_MAX_BYTES = 253


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
    if type(key) is str:
        return list(_label_key_errors_cached(key))
    return _label_key_errors(key)


def label_value_errors(value: str) -> list[str]:
    """Messages for an invalid label value (upstream IsLabelValue); [] if valid."""
    if type(value) is str:
        return list(_label_value_errors_cached(value))
    return _label_value_errors(value)


# The same keys and values are checked again and again (every pod's labels, tolerations and
# selectors): each distinct string is checked once. Callers get a fresh list.
@lru_cache(maxsize=16384)
def _label_key_errors_cached(key: str) -> tuple[str, ...]:
    return tuple(_label_key_errors(key))


@lru_cache(maxsize=16384)
def _label_value_errors_cached(value: str) -> tuple[str, ...]:
    return tuple(_label_value_errors(value))


def _label_key_errors(key: str) -> list[str]:
    parts = key.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if _byte_len(prefix) > _PREFIX_MAX_BYTES:
                errs.append("prefix part " + _max_len_error(_PREFIX_MAX_BYTES))
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
    elif _byte_len(name) > _NAME_MAX_BYTES:
        errs.append("name part " + _max_len_error(_NAME_MAX_BYTES))
    if not _LABEL_KEY_RE.fullmatch(name):
        errs.append(
            "name part "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def _label_value_errors(value: str) -> list[str]:
    errs: list[str] = []
    if _byte_len(value) > _NAME_MAX_BYTES:
        errs.append(_max_len_error(_NAME_MAX_BYTES))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errs


def is_qualified_name(value: str) -> bool:
    """apimachinery IsQualifiedName: `[prefix/]name`, prefix a DNS-1123 subdomain (<= 253
    bytes), name <= 63 bytes of alphanumerics, '-', '_', '.' (alphanumeric at the ends)."""
    if type(value) is str:
        return not _label_key_errors_cached(value)
    return not _label_key_errors(value)


def check_label_key(key: str, path: Sequence[PathPart]) -> None:
    """ValidateLabelName: raise field.Invalid (every reason, joined) unless a qualified name."""
    errors = _label_key_errors_cached(key) if type(key) is str else _label_key_errors(key)
    if errors:
        raise invalid_issue(path, key, "; ".join(errors)).as_error()


def check_label_value(value: str, path: Sequence[PathPart]) -> None:
    """Raise field.Invalid (every reason, joined) unless a valid label value."""
    errors = _label_value_errors_cached(value) if type(value) is str else _label_value_errors(value)
    if errors:
        raise invalid_issue(path, value, "; ".join(errors)).as_error()


# --- DNS names (apimachinery api/validate/content IsDNS1123Label / IsDNS1123Subdomain; used by
#     ValidateDNS1123Label, kubernetes v1.35.4 pkg/apis/core/validation/validation.go L158-L164) --

_LABEL_MAX_BYTES = 63
_SUBDOMAIN_MAX_BYTES = 253


def dns1123_label_errors(value: str) -> list[str]:
    """IsDNS1123Label: at most 63 bytes of [a-z0-9-], alphanumeric at both ends; a valid
    subdomain that is not a label is told it has dots."""
    errs: list[str] = []
    if _byte_len(value) > _LABEL_MAX_BYTES:
        errs.append(_max_len_error(_LABEL_MAX_BYTES))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """IsDNS1123Subdomain: at most 253 bytes of dot-separated DNS labels."""
    errs: list[str] = []
    if _byte_len(value) > _SUBDOMAIN_MAX_BYTES:
        errs.append(_max_len_error(_SUBDOMAIN_MAX_BYTES))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs
