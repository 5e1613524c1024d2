"""Document loading keeps the way back to a field's line; bad files give one clear error."""

from __future__ import annotations

import io
import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpupact.source as source
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


# --- hostile input is bounded; list shapes as client-go writes them ----------------------------


def test_items_of_a_typed_list_take_its_kind_and_api_version() -> None:
    text = '{"kind": "PodList", "apiVersion": "v1", "items": [{"metadata": {"name": "a"}}]}'
    ((path, obj),) = list(iter_objects(parse_documents(text, "pods.json")[0]))
    assert path == ("items", 0)
    assert (obj["kind"], obj["apiVersion"]) == ("Pod", "v1")


def test_an_item_keeps_its_own_kind() -> None:
    text = '{"kind": "PodList", "apiVersion": "v1", "items": [{"kind": "Node"}]}'
    ((_, obj),) = list(iter_objects(parse_documents(text, "x.json")[0]))
    assert obj["kind"] == "Node"


@pytest.mark.parametrize("items", ['{"a": 1}', '"abc"', "3"])
def test_items_that_are_not_a_list_are_an_error(items: str) -> None:
    (doc,) = parse_documents('{\n"kind": "NodeList",\n"items": ' + items + "}", "n.json")
    with pytest.raises(InputError, match=r"n\.json:3:\d+: items: expected a list of objects"):
        list(iter_objects(doc))


def test_null_items_is_an_empty_list() -> None:
    (doc,) = parse_documents('{"kind": "PodList", "items": null}', "p.json")
    assert list(iter_objects(doc)) == []


def test_dash_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"kind: Pod\nx: [\n")))
    with pytest.raises(InputError) as exc:
        load_documents("-")
    assert str(exc.value).startswith("<stdin>:")


def test_reading_stops_at_the_size_limit(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "MAX_INPUT_BYTES", 1000)
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * 2000)
    with pytest.raises(InputError, match="larger than"):
        load_documents(big)
    # standard input has no size to check first: it is cut off while read
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"b: " + b"y" * 5000)))
    with pytest.raises(InputError, match="larger than"):
        load_documents("-")
    fifo = tmp_path / "stream"
    os.mkfifo(fifo)  # refused, not waited on: a FIFO with no writer would block the open
    with pytest.raises(InputError, match="not a regular file"):
        load_documents(fifo)


def test_a_nul_is_located() -> None:
    with pytest.raises(InputError, match=r"z\.yaml:2:4: a NUL character"):
        source._read_bounded(io.BytesIO(b"a: 1\nb: \x00"), "z.yaml")


def test_anchors_used_as_intended_still_load() -> None:
    text = "base: &b {gpu: 1, cpu: 2}\nx: *b\ny: *b\nz: [*b, *b]\n"
    (doc,) = parse_documents(text, "ok.yaml")
    assert doc.data["z"][1] == {"gpu": 1, "cpu": 2}


def test_alias_expansion_is_counted_through_nested_anchors() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 6)]
    with pytest.raises(InputError, match=r"bomb\.yaml:5:\d+: aliases expand to more than"):
        parse_documents("\n".join(lines), "bomb.yaml")


def test_depth_is_bounded_before_parsing() -> None:
    deep = "k: " + "[" * (source.MAX_DEPTH + 1) + "]" * (source.MAX_DEPTH + 1)
    with pytest.raises(InputError, match="nested more than"):
        parse_documents(deep, "d.yaml")
    fine = "k: " + "[" * 50 + "]" * 50
    assert parse_documents(fine, "d.yaml")


def test_deep_json_is_located_where_it_passes_the_limit() -> None:
    depth = source.MAX_DEPTH
    text = '{"s": "\\\\\\"[[[",\n "k": ' + "[" * 3000 + "]" * 3000 + "}"
    with pytest.raises(InputError) as exc:
        parse_documents(text, "deep.json")
    # the brackets inside the string do not count; the object itself is level 1
    assert str(exc.value) == f"deep.json:2:{7 + depth - 1}: nested more than {depth} levels deep"


def test_binary_data_is_located_at_the_first_bad_byte() -> None:
    with pytest.raises(InputError, match=r"b\.yaml:2:4: not UTF-8 text"):
        source._read_bounded(io.BytesIO(b"a: 1\nb: \xff\xfe\n"), "b.yaml")


# --- any text: a document or one InputError, nothing else ------------------------------------

_YAMLISH = st.text(
    alphabet=st.sampled_from([*"{}[],:&*!-|>'\"#%@`?\\ \n\tabkx01.~", "\x00", "\x1b", "é"]),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(_YAMLISH, st.text(max_size=200)))
def test_any_text_reads_or_is_one_input_error(text: str) -> None:
    try:
        docs = parse_documents(text, "fuzz.yaml")
        for doc in docs:
            list(iter_objects(doc))
    except InputError as err:
        assert str(err).startswith("fuzz.yaml")
