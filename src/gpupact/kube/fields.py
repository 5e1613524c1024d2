"""Typed fields read from decoded JSON/YAML, one reader per Go type.

Every parser in gpupact.kube reads its input through these, so a bad shape is rejected the
same way everywhere: `FieldError(path, "expected <type>, got <what>")`, the path naming the
field. A missing or null field (`None`) is handled by the caller's choice of reader: the Go
zero value (`optional_mapping`, `optional_list`, `string`, `integer`), kept as None where
upstream tells nil from empty (`list_or_none`, `optional_string`, `optional_integer`), or an
error (`mapping`, `required_string`).
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from gpupact.errors import FieldError, PathPart

T = TypeVar("T")

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_INT_BOUNDS = {32: (INT32_MIN, INT32_MAX), 64: (INT64_MIN, INT64_MAX)}
# Go's time.Duration is int64 nanoseconds: 2562047h47m16.854775807s, about 292 years
MAX_DURATION_MS = INT64_MAX // 1_000_000
MAX_DURATION_TEXT = "2562047h47m16s"


def _type_name(obj: object) -> str:
    return type(obj).__name__


# --- objects ---------------------------------------------------------------------------------


def mapping(
    obj: object, path: Sequence[PathPart], *, known: Collection[str] | None = None
) -> Mapping[str, Any]:
    """A JSON object (None is an error). With `known`, any other key is an unknown field (the
    strict decoding upstream applies to selectors)."""
    if type(obj) is not dict and not isinstance(obj, Mapping):  # exact dict: skip the ABC check
        raise FieldError(path, f"expected an object, got {_type_name(obj)}")
    if known is not None:
        for key in obj:
            if key not in known:
                raise FieldError((*path, str(key)), f'unknown field "{key}"')
    return obj


def optional_mapping(obj: object, path: Sequence[PathPart]) -> Mapping[str, Any]:
    """A JSON object; a missing one reads as empty (a nil struct pointer)."""
    if type(obj) is dict:
        return obj
    return {} if obj is None else mapping(obj, path)


def string_map(obj: object, path: Sequence[PathPart]) -> dict[str, str]:
    """A `map[string]string` (labels, annotations, nodeSelector); missing reads as empty."""
    if obj is None:
        return {}
    if type(obj) is dict:
        # fast path: plain str keys and values (decoded JSON) copy as they are; anything else
        # takes the checked loop below, which reports the first bad entry
        for key, value in obj.items():
            if type(key) is not str or type(value) is not str:
                break
        else:
            return dict(obj)
    out: dict[str, str] = {}
    for key, value in optional_mapping(obj, path).items():
        if not isinstance(key, str):
            raise FieldError(path, f"expected string keys, got {_type_name(key)}")
        out[key] = required_string(value, (*path, key))
    return out


# --- lists -----------------------------------------------------------------------------------


def list_or_none(obj: object, path: Sequence[PathPart]) -> Sequence[Any] | None:
    """A JSON array, or None for a missing one (upstream tells a nil slice from an empty one)."""
    if obj is None:
        return None
    if not isinstance(obj, list | tuple):
        raise FieldError(path, f"expected a list, got {_type_name(obj)}")
    return obj


def optional_list(obj: object, path: Sequence[PathPart]) -> Sequence[Any]:
    """A JSON array; a missing one reads as empty."""
    items = list_or_none(obj, path)
    return () if items is None else items


def string_list(obj: object, path: Sequence[PathPart]) -> tuple[str, ...] | None:
    """A `[]string`, None for a missing one; every item must be a string."""
    items = list_or_none(obj, path)
    if items is None:
        return None
    return tuple(required_string(item, (*path, i)) for i, item in enumerate(items))


# --- scalars ---------------------------------------------------------------------------------


def required_string(obj: object, path: Sequence[PathPart]) -> str:
    """A string that must be there (a list item, a map value, or a field read with a default)."""
    if not isinstance(obj, str):
        raise FieldError(path, f"expected a string, got {_type_name(obj)}")
    return obj


def optional_string(obj: object, path: Sequence[PathPart]) -> str | None:
    """A string, or None for a missing one (a `*string`)."""
    return None if obj is None else required_string(obj, path)


def string(obj: object, path: Sequence[PathPart], default: str = "") -> str:
    """A string; a missing one reads as `default` (Go's zero value "" unless upstream defaults)."""
    if type(obj) is str:
        return obj
    return default if obj is None else required_string(obj, path)


def optional_integer(
    obj: object, path: Sequence[PathPart], *, bits: int | None = None
) -> int | None:
    """An integer (never a bool or a float), or None for a missing one; with `bits` (32 or 64)
    it must fit the Go int type of that width."""
    if obj is None:
        return None
    if isinstance(obj, bool) or not isinstance(obj, int):
        raise FieldError(path, f"expected an integer, got {obj!r}")
    if bits is not None:
        low, high = _INT_BOUNDS[bits]
        if not low <= obj <= high:
            shown = str(obj) if obj.bit_length() < 128 else f"an integer of {obj.bit_length()} bits"
            raise FieldError(path, f"must fit in an int{bits}, got {shown}")
    return obj


def integer(
    obj: object, path: Sequence[PathPart], default: int = 0, *, bits: int | None = None
) -> int:
    """An integer as `optional_integer`; a missing one reads as `default`."""
    value = optional_integer(obj, path, bits=bits)
    return default if value is None else value


# --- an object's header ---------------------------------------------------------------------


class ObjectHeader(NamedTuple):
    """The parts every API object shares, read once by `object_header`."""

    body: Mapping[str, Any]
    meta: Mapping[str, Any]
    spec: Mapping[str, Any]
    status: Mapping[str, Any]
    name: str


_METADATA, _SPEC, _STATUS = ("metadata",), ("spec",), ("status",)
_NAME, _GENERATE_NAME = ("metadata", "name"), ("metadata", "generateName")


def object_header(obj: object, kind: str, *, generate_name: bool = False) -> ObjectHeader:
    """The object as a mapping, its `kind` checked (absent or empty is accepted: a file may
    leave it to the reader), `metadata`, `spec` and `status` as mappings (missing: empty) and
    its required `metadata.name`. With `generate_name`, an unnamed object may take
    `metadata.generateName` instead (a Pod created from a template)."""
    body = mapping(obj, ())
    found = body.get("kind")
    if found is not None and found != "" and found != kind:
        raise FieldError(("kind",), f"expected kind {kind}, got {found!r}")
    meta = optional_mapping(body.get("metadata"), _METADATA)
    name = string(meta.get("name"), _NAME)
    if not name and generate_name:
        name = string(meta.get("generateName"), _GENERATE_NAME)
    if not name:
        raise FieldError(_NAME, f"a {kind} needs a name")
    return ObjectHeader(
        body,
        meta,
        optional_mapping(body.get("spec"), _SPEC),
        optional_mapping(body.get("status"), _STATUS),
        name,
    )


# --- memoised parsing --------------------------------------------------------------------------

_MISSING: Any = object()


class ContentMemo(Generic[T]):
    """A pure parse function memoised by the exact content of its positional arguments.

    Replicas of one Deployment carry identical containers, tolerations, affinity and spread
    constraints; each distinct subtree is parsed once and its (immutable) result shared. The
    key is `marshal.dumps(args)`: marshal accepts only exact built-in types (a subclass or any
    other object makes it refuse, and the call parses unmemoised), tags every value with its
    type and keeps dict order, so equal keys mean arguments equal in content, order and type
    (True is not 1, 1.0 is not 1, a tuple is not a list). Equal arguments can still get
    different keys (marshal back-references follow object sharing); that only costs a miss.
    Only successes are stored: a bad input raises on every call, with its own path."""

    __slots__ = ("_items", "limit", "parse")

    def __init__(self, parse: Callable[..., T], limit: int = 4096) -> None:
        self.parse = parse
        self.limit = limit
        self._items: dict[bytes, T] = {}

    def __call__(self, *args: Any) -> T:
        try:
            key = marshal.dumps(args)
        except ValueError:  # not plain decoded data: parse without the memo
            return self.parse(*args)
        value = self._items.get(key, _MISSING)
        if value is _MISSING:
            value = self.parse(*args)
            if len(self._items) >= self.limit:
                self._items.clear()
            self._items[key] = value
        return value

    def clear(self) -> None:
        self._items.clear()
