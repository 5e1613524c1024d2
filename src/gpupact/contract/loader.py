"""Load a contract file: YAML/JSON -> schema validation -> cross-field links.

Every problem is reported as `file:line:column: field.path: message`, all of them at once,
through `ContractInvalid` (an InputError, so the CLI exits 2 without a traceback).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from gpupact.contract.links import link
from gpupact.contract.schema import API_VERSION, KIND, Contract, all_field_names
from gpupact.errors import FieldError, InputError, PathPart
from gpupact.source import Document, display_name, parse_documents, read_text

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
M = TypeVar("M", bound=BaseModel)


class ContractInvalid(InputError):
    """Several located errors; `str()` gives one line per error."""

    def __init__(self, errors: Sequence[InputError]) -> None:
        first = errors[0]
        super().__init__(
            first.message, file=first.file, path=first.path, line=first.line, column=first.column
        )
        self.errors = list(errors)

    def __str__(self) -> str:
        return "\n".join(InputError.__str__(e) for e in self.errors)


@dataclass(frozen=True)
class LoadedContract:
    contract: Contract
    document: Document

    @property
    def file(self) -> str:
        return self.document.file

    def locate(self, path: Sequence[PathPart]) -> tuple[int, int] | None:
        return self.document.locate(path)


def load_contract(path: str | Path) -> LoadedContract:
    return parse_contract(read_text(path), display_name(path))


def parse_contract(text: str, file: str) -> LoadedContract:
    doc = single_document(text, file, KIND, API_VERSION)
    contract = validate_model(Contract, doc)
    linked, errors = link(contract)
    _fail_on(doc, errors)
    return LoadedContract(linked, doc)


def single_document(text: str, file: str, kind: str, api_version: str = API_VERSION) -> Document:
    """The one YAML/JSON document of a gpupact file of `kind`: a mapping with the expected
    apiVersion and kind and no duplicate keys."""
    documents = parse_documents(text, file)
    if not documents:
        raise InputError(f"empty file, expected a gpupact {kind}", file=file)
    if len(documents) > 1:
        raise InputError(
            f"expected one {kind}, found {len(documents)} documents",
            file=file,
            line=_document_line(text, 1),
        )
    doc = documents[0]
    if not isinstance(doc.data, dict):
        raise doc.error(FieldError((), "expected a mapping with apiVersion, kind and metadata"))
    _check_kind(doc, kind, api_version)
    duplicates = _duplicate_keys(text, file)
    if duplicates:
        raise ContractInvalid(duplicates)
    return doc


def validate_model(model: type[M], doc: Document) -> M:
    """`doc.data` as a pydantic model of this package's schema style; every schema error
    located (file:line:column and field path), all at once, as ContractInvalid."""
    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        errors = []
        for e in exc.errors():
            error = doc.error(FieldError(_path(e["loc"]), _message(e)))
            if e["type"] == "extra_forbidden":  # point at the unknown key, not its value
                error.line, error.column = _key_position(doc.text, error.path) or (
                    error.line,
                    error.column,
                )
            errors.append(error)
        raise ContractInvalid(sorted(errors, key=_position)) from None


def _check_kind(doc: Document, kind: str, api_version: str) -> None:
    for key, expected in (("apiVersion", api_version), ("kind", kind)):
        got = doc.data.get(key)
        if got != expected:
            what = "missing" if got is None else f"is {got!r}"
            raise doc.error(
                FieldError(
                    (key,), f"not a gpupact {kind.lower()}: {key} {what}, expected {expected!r}"
                )
            )


def _fail_on(doc: Document, errors: Sequence[FieldError]) -> None:
    if not errors:
        return
    raise ContractInvalid(sorted((doc.error(e) for e in errors), key=_position))


def _position(error: InputError) -> tuple[int, int]:
    return error.line or 0, error.column or 0


def _key_position(text: str, path: Sequence[PathPart]) -> tuple[int, int] | None:
    """(line, column) of the last key on `path` itself (Document.locate gives its value)."""
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return None
    for depth, part in enumerate(path):
        if isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if part < len(node.value) else None
        elif isinstance(node, yaml.MappingNode):
            pair = next((kv for kv in node.value if kv[0].value == part), None)
            if pair is None:
                return None
            if depth == len(path) - 1:
                return pair[0].start_mark.line + 1, pair[0].start_mark.column + 1
            node = pair[1]
        else:
            return None
    return None


def _path(loc: tuple[Any, ...]) -> tuple[PathPart, ...]:
    return tuple(part for part in loc if isinstance(part, str | int))


_KNOWN_FIELDS = sorted(all_field_names())


def _message(error: Any) -> str:
    kind, loc, got = error["type"], error["loc"], error.get("input")
    if kind == "extra_forbidden":
        key = str(loc[-1])
        camel = to_camel(key)
        close = (
            [camel]
            if camel in _KNOWN_FIELDS
            else difflib.get_close_matches(key, _KNOWN_FIELDS, n=1, cutoff=0.75)
        )
        return "unknown field" + (f" (did you mean {close[0]!r}?)" if close else "")
    if kind == "missing":
        return "required field missing"
    if kind in ("value_error", "assertion_error") and "error" in error.get("ctx", {}):
        return str(error["ctx"]["error"])
    message = error["msg"].replace("Input should be", "must be", 1)
    if kind in ("enum", "literal_error"):
        return f"{message}, got {got!r}"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"{message}, got {_describe(got)}"
    return message


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    return repr(value)


def _duplicate_keys(text: str, file: str) -> list[InputError]:
    """YAML loaders keep the last of two equal keys silently; a contract must not. A node an
    alias repeats is checked once, where it is written."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return []
    errors: list[InputError] = []
    stack: list[tuple[yaml.Node, tuple[PathPart, ...]]] = [(root, ())] if root else []
    visited: set[int] = set()
    while stack:
        node, path = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else None
                if name is None:
                    continue
                if name in seen:
                    mark = key.start_mark
                    errors.append(
                        InputError(
                            "duplicate key: a second value would silently replace the first",
                            file=file,
                            path=(*path, name),
                            line=mark.line + 1,
                            column=mark.column + 1,
                        )
                    )
                seen.add(name)
                stack.append((value, (*path, name)))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in enumerate(node.value))
    errors.sort(key=_position)
    return errors


def _document_line(text: str, index: int) -> int | None:
    try:
        nodes = [n for n in yaml.compose_all(text, Loader=_Loader) if n is not None]
    except yaml.YAMLError:
        return None
    return nodes[index].start_mark.line + 1 if index < len(nodes) else None
