"""Unit tests for gpupact.kube.validation (field.Error rendering and API-server name rules)."""

from __future__ import annotations

import pytest

from gpupact.errors import FieldError
from gpupact.kube.validation import (
    FIELD_VALUE_INVALID,
    FieldIssue,
    Subscript,
    check_label_key,
    check_label_value,
    check_supported,
    duplicate_issue,
    invalid_issue,
    is_qualified_name,
    label_key_errors,
    label_value_errors,
    not_supported_issue,
    required_issue,
    supported_values,
    upstream_field_path,
)


def test_field_path_renders_keys_in_brackets() -> None:
    assert upstream_field_path(("spec", "values", 0, Subscript("a.b/c"))) == "spec.values[0][a.b/c]"
    assert upstream_field_path(()) == ""


def test_error_bodies_match_apimachinery() -> None:
    assert invalid_issue(("a",), "x", "bad").body == 'Invalid value: "x": bad'
    assert invalid_issue(("a",), 0, "must be greater than zero").body == (
        "Invalid value: 0: must be greater than zero"
    )
    assert invalid_issue(("a",), ("x", "y"), "d").body == 'Invalid value: ["x","y"]: d'
    assert invalid_issue(("a",), None, "d").body == "Invalid value: null: d"
    assert required_issue(("a",)).body == "Required value"
    assert required_issue(("a",), "can not be empty").body == "Required value: can not be empty"
    assert duplicate_issue(("a",), "{k, e}").body == 'Duplicate value: "{k, e}"'
    assert not_supported_issue(("op",), "Near", ("In", "NotIn")).body == (
        'Unsupported value: "Near": supported values: "In", "NotIn"'
    )
    issue = FieldIssue(FIELD_VALUE_INVALID, ("spec", 1), "x", "")
    assert str(issue) == 'spec[1]: Invalid value: "x"'
    assert issue.prefixed(("root",)).path == ("root", "spec", 1)


def test_unserialisable_value_falls_back_to_repr() -> None:
    assert invalid_issue((), {1, 2}, "d").body == 'Invalid value: "{1, 2}": d'


def test_as_error_is_a_field_error_with_the_body() -> None:
    err = invalid_issue(("k",), "v", "d").as_error()
    assert isinstance(err, FieldError)
    assert err.path == ("k",)
    assert err.message == 'Invalid value: "v": d'


def test_supported_values_keeps_order() -> None:
    assert supported_values(("b", "a")) == 'supported values: "b", "a"'


def test_check_supported() -> None:
    check_supported("a", ("a", "b"), ("f",))
    with pytest.raises(FieldError) as err:
        check_supported("c", ("a", "b"), ("f",))
    assert err.value.path == ("f",)
    assert err.value.message == 'Unsupported value: "c": supported values: "a", "b"'


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("a", True),
        ("example.com/MyName", True),
        ("my.name_x-1", True),
        ("x" * 63, True),
        ("p" * 253 + "/x", True),
        ("p" * 254 + "/x", False),
        ("x" * 64, False),
        ("", False),
        ("/a", False),
        ("a/", False),
        ("a/b/c", False),
        ("Example.com/a", False),
        ("-a", False),
        ("a b", False),
        ("é", False),
        ("a\n", False),
    ],
)
def test_qualified_names(name: str, valid: bool) -> None:
    assert is_qualified_name(name) is valid
    assert (label_key_errors(name) == []) is valid


def test_label_key_detail_strings_are_upstream() -> None:
    assert label_key_errors("/a") == ["prefix part must be non-empty"]
    assert label_key_errors("x" * 64) == ["name part must be no more than 63 bytes"]
    (detail,) = label_key_errors("a/b/c")
    assert detail.startswith("a valid label key must consist of alphanumeric characters")
    assert detail.endswith(
        "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    )


def test_label_values() -> None:
    assert label_value_errors("") == []
    assert label_value_errors("v-1.x_y") == []
    assert label_value_errors("v" * 64) == ["must be no more than 63 bytes"]
    assert label_value_errors(" v")[0].startswith("a valid label must be an empty string")


def test_checks_raise_invalid_with_every_reason() -> None:
    check_label_key("example.com/k", ("key",))
    check_label_value("", ("value",))
    with pytest.raises(FieldError) as err:
        check_label_key("example.com/", ("key",))
    assert err.value.path == ("key",)
    assert err.value.message.startswith(
        'Invalid value: "example.com/": name part must be non-empty; '
    )
    with pytest.raises(FieldError) as err:
        check_label_value("-" * 64, ("value",))
    assert err.value.message.startswith('Invalid value: "' + "-" * 64 + '": must be no more than')
