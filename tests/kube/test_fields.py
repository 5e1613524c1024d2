"""Unit tests for gpupact.kube.fields (typed readers shared by every kube parser)."""

from __future__ import annotations

import pytest

from gpupact.errors import FieldError
from gpupact.kube.fields import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    integer,
    list_or_none,
    mapping,
    optional_integer,
    optional_list,
    optional_mapping,
    optional_string,
    required_string,
    string,
    string_list,
    string_map,
)

P = ("spec", "x")


def test_mapping_requires_an_object() -> None:
    assert mapping({"a": 1}, P) == {"a": 1}
    for bad in (None, [], "s", 1):
        with pytest.raises(FieldError) as err:
            mapping(bad, P)
        assert err.value.path == P
        assert err.value.message == f"expected an object, got {type(bad).__name__}"


def test_mapping_known_fields() -> None:
    assert mapping({"a": 1}, P, known=frozenset({"a", "b"})) == {"a": 1}
    with pytest.raises(FieldError) as err:
        mapping({"a": 1, "c": 2}, P, known=frozenset({"a"}))
    assert err.value.path == (*P, "c")
    assert err.value.message == 'unknown field "c"'


def test_optional_mapping_reads_none_as_empty() -> None:
    assert optional_mapping(None, P) == {}
    with pytest.raises(FieldError):
        optional_mapping([], P)


def test_string_map() -> None:
    assert string_map(None, P) == {}
    assert string_map({"a": "b"}, P) == {"a": "b"}
    with pytest.raises(FieldError) as err:
        string_map({"a": 1}, P)
    assert err.value.path == (*P, "a")
    with pytest.raises(FieldError) as err:
        string_map({1: "a"}, P)
    assert err.value.path == P
    with pytest.raises(FieldError) as err:
        string_map(["a"], P)
    assert err.value.path == P


def test_lists_tell_nil_from_empty() -> None:
    assert list_or_none(None, P) is None
    assert list_or_none([], P) == []
    assert optional_list(None, P) == ()
    assert optional_list([1], P) == [1]
    for bad in ("ab", {"a": 1}, 3):
        with pytest.raises(FieldError) as err:
            optional_list(bad, P)
        assert err.value.path == P
        assert err.value.message.startswith("expected a list")


def test_string_list() -> None:
    assert string_list(None, P) is None
    assert string_list(["a", "b"], P) == ("a", "b")
    with pytest.raises(FieldError) as err:
        string_list(["a", None], P)
    assert err.value.path == (*P, 1)


def test_strings_and_their_missing_values() -> None:
    assert string(None, P) == ""
    assert string(None, P, "dflt") == "dflt"
    assert string("", P, "dflt") == ""
    assert optional_string(None, P) is None
    assert optional_string("a", P) == "a"
    with pytest.raises(FieldError) as err:
        required_string(None, P)
    assert err.value.message == "expected a string, got NoneType"
    for reader in (string, optional_string, required_string):
        with pytest.raises(FieldError) as err:
            reader(3, P)
        assert err.value.path == P


def test_integers() -> None:
    assert integer(None, P) == 0
    assert integer(None, P, 7) == 7
    assert optional_integer(None, P) is None
    assert optional_integer(-5, P) == -5
    for bad in (True, 1.0, "1", [1]):
        with pytest.raises(FieldError) as err:
            integer(bad, P)
        assert err.value.message == f"expected an integer, got {bad!r}"


@pytest.mark.parametrize(
    ("bits", "low", "high"), [(32, INT32_MIN, INT32_MAX), (64, INT64_MIN, INT64_MAX)]
)
def test_integer_widths(bits: int, low: int, high: int) -> None:
    assert integer(low, P, bits=bits) == low
    assert integer(high, P, bits=bits) == high
    for bad in (low - 1, high + 1):
        with pytest.raises(FieldError) as err:
            integer(bad, P, bits=bits)
        assert err.value.message == f"must fit in an int{bits}, got {bad}"
    assert integer(high + 1, P) == high + 1  # no width: any integer
