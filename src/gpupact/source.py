"""Read JSON or YAML files, keeping enough to point an error at its line.

JSON is parsed with the stdlib (fast for large `kubectl get -o json` snapshots); only when a
field turns out to be invalid is the text composed again with a YAML node tree to find the
line and column of that field. YAML keeps its node tree from the start.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpupact.errors import FieldError, InputError, PathPart

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class Document:
    """One parsed document and a way back from a field path to its position in the file."""

    data: Any
    file: str
    text: str
    index: int = 0  # position among the documents of a multi-document YAML stream
    _root: yaml.Node | None = field(default=None, repr=False)
    _composed: bool = field(default=False, repr=False)

    def locate(self, path: Sequence[PathPart]) -> tuple[int, int] | None:
        """1-based (line, column) of the deepest node on `path` that exists."""
        if not self._composed:
            self._composed = True
            try:
                nodes = list(yaml.compose_all(self.text, Loader=_Loader))
                self._root = nodes[self.index] if self.index < len(nodes) else None
            except yaml.YAMLError:
                self._root = None
        node = self._root
        if node is None:
            return None
        for part in path:
            child = _child(node, part)
            if child is None:
                break
            node = child
        return node.start_mark.line + 1, node.start_mark.column + 1

    def error(self, err: FieldError, prefix: Sequence[PathPart] = ()) -> InputError:
        """Turn a FieldError raised while reading `data` into a located InputError."""
        full = (*prefix, *err.path)
        pos = self.locate(full)
        line, col = pos if pos else (None, None)
        return InputError(err.message, file=self.file, path=full, line=line, column=col)


def _child(node: yaml.Node, part: PathPart) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode) and isinstance(part, str):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == part:
                return value
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
        return node.value[part]
    return None


def read_text(path: str | Path) -> str:
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", file=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", file=str(path)) from None
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), file=str(path)) from None


def parse_documents(text: str, file: str) -> list[Document]:
    """Parse JSON (one value) or YAML (one or more `---` documents); empty documents are dropped."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return [Document(json.loads(text), file, text)]
        except json.JSONDecodeError as exc:
            if file.endswith(".json"):
                raise InputError(
                    f"malformed JSON: {exc.msg}", file=file, line=exc.lineno, column=exc.colno
                ) from None
            # flow-style YAML that is not strict JSON: fall through to the YAML parser
    try:
        datas = list(yaml.load_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise InputError(f"malformed YAML: {problem}", file=file, line=line, column=col) from None
    except yaml.reader.ReaderError as exc:  # a control character (or a NUL: a binary file)
        raise _unacceptable_character(exc, text, file) from None
    except yaml.YAMLError as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
        raise InputError(f"malformed YAML: {first_line}", file=file) from None
    return [Document(d, file, text, index=i) for i, d in enumerate(datas) if d is not None]


def _unacceptable_character(exc: yaml.reader.ReaderError, text: str, file: str) -> InputError:
    """Located at the character's first occurrence: the reader stops at the first one."""
    code = exc.character if isinstance(exc.character, int) else None
    at = text.find(chr(code)) if code is not None else -1
    line = text.count("\n", 0, at) + 1 if at >= 0 else None
    column = at - text.rfind("\n", 0, at) if at >= 0 else None
    what = f"character #x{code:04x}" if code is not None else "character"
    return InputError(
        f"malformed YAML: unacceptable {what} ({exc.reason})", file=file, line=line, column=column
    )


def load_documents(path: str | Path) -> list[Document]:
    return parse_documents(read_text(path), str(path))


def iter_objects(doc: Document) -> Iterator[tuple[tuple[PathPart, ...], dict[str, Any]]]:
    """Kubernetes objects in a document, each with its path: a single object, a `*List` or a
    bare JSON array of objects (the shapes `kubectl get -o json/yaml` prints)."""
    data = doc.data
    if isinstance(data, list):
        items, prefix = data, ()
    elif (
        isinstance(data, dict)
        and isinstance(data.get("items"), list)
        and (str(data.get("kind", "")).endswith("List") or "kind" not in data)
    ):
        items, prefix = data["items"], ("items",)
    elif isinstance(data, dict):
        yield (), data
        return
    else:
        raise doc.error(FieldError((), f"expected a Kubernetes object or List, got {_kind(data)}"))
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise doc.error(FieldError((*prefix, i), f"expected an object, got {_kind(item)}"))
        yield (*prefix, i), item


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
