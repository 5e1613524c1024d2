"""Document loading keeps the way back to a field's line; bad files give one clear error."""

from __future__ import annotations

import pytest

from gpupact.errors import FieldError, InputError
from gpupact.source import iter_objects, load_documents, parse_documents


def test_json_field_is_located_lazily() -> None:
    text = '{\n  "kind": "Pod",\n  "spec": {\n    "priority": "high"\n  }\n}\n'
    (doc,) = parse_documents(text, "pod.json")
    err = doc.error(FieldError(("spec", "priority"), "expected an integer"))
    assert (err.line, err.column) == (4, 17)
    assert str(err) == "pod.json:4:17: spec.priority: expected an integer"


def test_yaml_multi_document_positions_are_per_document() -> None:
    text = "kind: Pod\nmetadata: {name: a}\n---\nkind: Pod\nmetadata:\n  name: b\n"
    docs = parse_documents(text, "pods.yaml")
    assert [d.data["metadata"]["name"] for d in docs] == ["a", "b"]
    assert docs[1].locate(("metadata", "name")) == (6, 9)


def test_list_items_carry_their_path() -> None:
    (doc,) = parse_documents('{"kind": "List", "items": [{"kind": "Node"}, {"kind": "Pod"}]}', "x")
    assert [(path, obj["kind"]) for path, obj in iter_objects(doc)] == [
        (("items", 0), "Node"),
        (("items", 1), "Pod"),
    ]


def test_malformed_json_names_line_and_column() -> None:
    with pytest.raises(InputError) as exc:
        parse_documents('{\n  "kind": "Pod",\n  "spec": {,}\n}', "bad.json")
    assert str(exc.value).startswith("bad.json:3:12: malformed JSON")


def test_malformed_yaml_names_line() -> None:
    with pytest.raises(InputError) as exc:
        parse_documents("kind: Pod\nspec:\n  - a\n  b: c\n", "bad.yaml")
    assert str(exc.value).startswith("bad.yaml:4:")


def test_missing_file(tmp_path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_documents(tmp_path / "nope.yaml")


def test_scalar_document_is_rejected() -> None:
    (doc,) = parse_documents("42\n", "n.yaml")
    with pytest.raises(InputError, match="expected a Kubernetes object or List"):
        list(iter_objects(doc))
