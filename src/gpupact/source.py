"""Read JSON or YAML files, keeping enough to point an error at its line.

JSON is parsed with the stdlib (fast for large `kubectl get -o json` snapshots); only when a
field turns out to be invalid is the text composed again with a YAML node tree to find the
line and column of that field.

Hostile input is bounded before anything walks it: a file (or `-`, standard input) is read up
to MAX_INPUT_BYTES and stops at the first NUL (`/dev/zero`); YAML is checked event by event
for nesting depth (libyaml's composer recurses in C and crashes the process past ~50,000
levels) and for alias expansion (a "billion laughs" file is small, but every walk of its data
visits each copy); JSON nested past Python's recursion limit is reported, not raised.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import re
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpupact.errors import FieldError, InputError, PathPart

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

STDIN = "-"
STDIN_NAME = "<stdin>"
MAX_INPUT_BYTES = 1 << 30  # 1 GiB: several times the JSON of a 100,000-pod cluster
MAX_DEPTH = 500  # Kubernetes objects nest ~15 levels, CRD schemas ~60
MAX_ALIAS_VALUES = 100_000  # values aliases may add beyond those written out
_CHUNK = 1 << 20


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


def display_name(path: str | Path) -> str:
    """How a file is named in errors: `-` is standard input."""
    return STDIN_NAME if str(path) == STDIN else str(path)


def read_text(path: str | Path) -> str:
    """The file (or standard input for `-`) as UTF-8 text, read in bounded chunks."""
    name = display_name(path)
    try:
        if str(path) == STDIN:
            return _read_bounded(sys.stdin.buffer, name)
        # O_NONBLOCK: opening a FIFO would otherwise wait for a writer before fstat could refuse it
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as stream:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError
            if not stat.S_ISREG(info.st_mode):
                raise InputError(
                    f"not a regular file ({_file_type(info.st_mode)}); give a file, or - for "
                    "standard input",
                    file=name,
                )
            if info.st_size > MAX_INPUT_BYTES:
                raise _too_large(name)
            return _read_bounded(stream, name)
    except FileNotFoundError:
        raise InputError("no such file", file=name) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", file=name) from None
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), file=name) from None


def _file_type(mode: int) -> str:
    for test, what in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return what
    return "not a file"


def _read_bounded(stream: Any, name: str) -> str:
    """Decode as it reads, so binary data (`/dev/urandom`) or a NUL (`/dev/zero`) stops the
    read at the first chunk instead of after the size limit."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    parts: list[str] = []
    size = 0
    while chunk := stream.read(_CHUNK):
        size += len(chunk)
        if size > MAX_INPUT_BYTES:
            raise _too_large(name)
        try:
            part = decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            raise _not_utf8(exc, parts, name) from None
        nul = part.find("\0")
        if nul >= 0:
            line, column = _position(parts, part[:nul])
            raise InputError(
                "a NUL character: binary data, not YAML or JSON text",
                file=name,
                line=line,
                column=column,
            )
        parts.append(part)
    try:
        parts.append(decoder.decode(b"", final=True))
    except UnicodeDecodeError as exc:
        raise _not_utf8(exc, parts, name) from None
    return "".join(parts)


def _position(parts: list[str], tail: str) -> tuple[int, int]:
    """1-based (line, column) just after `parts` followed by `tail`."""
    lines = sum(p.count("\n") for p in parts) + tail.count("\n")
    if "\n" in tail:
        return lines + 1, len(tail) - tail.rfind("\n")
    column = len(tail) + 1
    for p in reversed(parts):  # the line began in an earlier chunk
        if "\n" in p:
            column += len(p) - p.rfind("\n") - 1
            break
        column += len(p)
    return lines + 1, column


def _not_utf8(exc: UnicodeDecodeError, parts: list[str], name: str) -> InputError:
    """Located at the first byte that is not UTF-8 (what precedes it decoded fine)."""
    before = exc.object[: exc.start].decode("utf-8", "replace")
    line, column = _position(parts, before)
    return InputError(
        f"not UTF-8 text ({exc.reason}): binary data?", file=name, line=line, column=column
    )


def _too_large(name: str) -> InputError:
    return InputError(f"larger than {MAX_INPUT_BYTES >> 20} MiB; refusing to read it", file=name)


class _NumberOutOfRange(ValueError):
    """A number literal Python cannot hold: an integer past its int-str conversion limit, or
    a float past the float range (read as inf, it would pass `>= 0` checks)."""

    def __init__(self, literal: str, message: str) -> None:
        super().__init__(message)
        self.literal, self.message = literal, message


def _too_many_digits(literal: str) -> _NumberOutOfRange:
    digits = sum(c.isdigit() for c in literal)
    return _NumberOutOfRange(
        literal,
        f"a number of {digits:,} digits: more than the {sys.get_int_max_str_digits():,} "
        "digits an integer may have here",
    )


def _finite_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise _NumberOutOfRange(literal, f"number {_abridged(literal)} is beyond the float range")
    return value


def _no_constant(literal: str) -> float:
    raise _NumberOutOfRange(literal, f"{literal} is not a JSON number")


def _abridged(literal: str) -> str:
    return literal if len(literal) <= 40 else f"{literal[:20]}...{literal[-10:]}"


def _at_literal(exc: _NumberOutOfRange, text: str, file: str) -> InputError:
    at = text.find(exc.literal)
    line = text.count("\n", 0, at) + 1 if at >= 0 else None
    column = at - text.rfind("\n", 0, at) if at >= 0 else None
    return _with_path(InputError(exc.message, file=file, line=line, column=column), text)


def _with_path(error: InputError, text: str) -> InputError:
    """`error` with the field path of the node that starts at its line and column (found on
    the error path only: composing the whole file again is slow for a large snapshot)."""
    try:
        roots = [root for root in yaml.compose_all(text, Loader=_Loader) if root is not None]
    except yaml.YAMLError:
        return error
    stack: list[tuple[yaml.Node, tuple[PathPart, ...]]] = [(root, ()) for root in roots]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        start = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.ScalarNode) and start == (error.line, error.column):
            error.path = path
            return error
        if isinstance(node, yaml.MappingNode):
            stack.extend(
                (value, (*path, key.value if isinstance(key, yaml.ScalarNode) else str(key)))
                for key, value in node.value
            )
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in enumerate(node.value))
    return error


_LONG_INT = re.compile(r"[-+]?\d{%d,}")


def _json_loads(text: str, file: str) -> Any:
    try:
        return json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)
    except _NumberOutOfRange as exc:
        raise _at_literal(exc, text, file) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # the int-str conversion limit (a 5,000-digit integer)
        long = re.compile(_LONG_INT.pattern % (sys.get_int_max_str_digits() + 1)).search(text)
        if long is None:
            raise InputError(f"malformed JSON: {exc}", file=file) from None
        raise _at_literal(_too_many_digits(long.group()), text, file) from None


def parse_documents(text: str, file: str) -> list[Document]:
    """Parse JSON (one value) or YAML (one or more `---` documents); empty documents are dropped.
    A leading byte-order mark is skipped, as kubectl and the YAML spec do."""
    text = text.removeprefix("\ufeff")
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return [Document(_json_loads(text, file), file, text)]
        except RecursionError:
            line, column = _too_deep_at(text)
            raise InputError(
                f"nested more than {MAX_DEPTH} levels deep", file=file, line=line, column=column
            ) from None
        except json.JSONDecodeError as exc:
            if file.endswith(".json"):
                raise InputError(
                    f"malformed JSON: {exc.msg}", file=file, line=exc.lineno, column=exc.colno
                ) from None
            # flow-style YAML that is not strict JSON: fall through to the YAML parser
    try:
        _check_yaml_shape(text, file)
        datas = list(yaml.load_all(text, Loader=_Loader))
    except RecursionError:
        raise InputError("nested too deeply to read", file=file) from None
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


_JSON_STRUCTURE = re.compile(r'[\[\]{}"\\]')


def _too_deep_at(text: str) -> tuple[int | None, int | None]:
    """Where JSON nesting first passes MAX_DEPTH (strings skipped); only run on the error
    path, after the decoder gave up."""
    depth, in_string, skip = 0, False, -1
    for match in _JSON_STRUCTURE.finditer(text):
        char, at = match.group(), match.start()
        if at == skip:  # the character after a backslash in a string
            continue
        if char == "\\":
            skip = at + 1 if in_string else skip
        elif char == '"':
            in_string = not in_string
        elif in_string:
            continue
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
        else:
            depth -= 1
    return None, None


def _check_yaml_shape(text: str, file: str) -> None:
    """Depth and alias expansion from the event stream (flat, no recursion), before any tree
    is built. `expanded` counts values as a walk of the loaded data would meet them: an alias
    adds its anchor's whole subtree again."""
    sizes: dict[str, int] = {}  # anchor -> values in its expanded subtree
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, `expanded` when it started)
    written = expanded = 0
    number_error: InputError | None = None  # raised once depth and aliases are known safe
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            written += 1
            expanded += 1
            open_nodes.append((event.anchor, expanded))
            if len(open_nodes) > MAX_DEPTH:
                raise _at(event, f"nested more than {MAX_DEPTH} levels deep", file)
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, started = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = expanded - started + 1
        elif isinstance(event, yaml.ScalarEvent):
            number_error = number_error or _check_number(event, file)
            written += 1
            expanded += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, _ in open_nodes):
                raise _at(event, "an alias inside the value it names (a cycle)", file)
            expanded += sizes.get(event.anchor, 1)
            if expanded - written > MAX_ALIAS_VALUES:
                raise _at(
                    event,
                    f"aliases expand to more than {MAX_ALIAS_VALUES:,} extra values "
                    f"(an alias bomb?); write the values out instead",
                    file,
                )
    if number_error is not None:
        raise _with_path(number_error, text)


_INT_TAG, _FLOAT_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
# YAML 1.1 decimal integers and floats as PyYAML's resolver reads them (underscores allowed)
_YAML_INT = re.compile(r"[-+]?(?:0|[1-9][0-9_]*)")
_YAML_FLOAT = re.compile(r"[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+][0-9]+)?")


def _check_number(event: yaml.ScalarEvent, file: str) -> InputError | None:
    """A plain scalar the loader would turn into an integer it cannot convert (a ValueError
    deep in the constructor) or a float past the float range (inf, silently)."""
    value = event.value
    if not (event.implicit[0] or event.tag in (_INT_TAG, _FLOAT_TAG)):
        return None  # quoted: a string
    if len(value) > sys.get_int_max_str_digits() and _YAML_INT.fullmatch(value):
        return _at(event, _too_many_digits(value).message, file)
    # a float overflows only with an exponent or past 308 digits: most scalars skip the regex
    if (len(value) > 308 or "e" in value or "E" in value) and _YAML_FLOAT.fullmatch(value):
        try:
            _finite_float(value.replace("_", ""))
        except _NumberOutOfRange as exc:
            return _at(event, exc.message, file)
        except ValueError:
            return None
    return None


def _at(event: yaml.Event, message: str, file: str) -> InputError:
    mark = event.start_mark
    return InputError(message, file=file, line=mark.line + 1, column=mark.column + 1)


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


def first_duplicate_key(doc: Document) -> InputError | None:
    """The first mapping key written twice in `doc` (YAML keeps the last silently: a second
    token entry would replace the first without a word)."""
    doc.locate(())  # composes the node tree once
    stack: list[tuple[yaml.Node, tuple[PathPart, ...]]] = [(doc._root, ())] if doc._root else []
    seen_nodes: set[int] = set()
    found: list[InputError] = []
    while stack:
        node, path = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[str] = set()
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else str(key)
                if name in keys:
                    mark = key.start_mark
                    found.append(
                        InputError(
                            "duplicate key: a second value would silently replace the first",
                            file=doc.file,
                            path=(*path, name),
                            line=mark.line + 1,
                            column=mark.column + 1,
                        )
                    )
                keys.add(name)
                stack.append((value, (*path, name)))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in enumerate(node.value))
    return min(found, key=lambda e: (e.line or 0, e.column or 0)) if found else None


def load_documents(path: str | Path) -> list[Document]:
    return parse_documents(read_text(path), display_name(path))


def iter_objects(doc: Document) -> Iterator[tuple[tuple[PathPart, ...], dict[str, Any]]]:
    """Kubernetes objects in a document, each with its path: a single object, a `*List` or a
    bare JSON array of objects (the shapes `kubectl get -o json/yaml` prints). Items of a typed
    list (`PodList`, as client-go and the API server write it) may leave off their kind and
    apiVersion: they are the list's."""
    data = doc.data
    item_kind, item_api = None, None
    if isinstance(data, list):
        items, prefix = data, ()
    elif isinstance(data, dict) and "items" in data and _is_list(data.get("kind")):
        items, prefix = data["items"], ("items",)
        if items is None:  # Go's nil slice: an empty list
            items = []
        if not isinstance(items, list):
            raise doc.error(FieldError(prefix, f"expected a list of objects, got {_kind(items)}"))
        kind = data.get("kind")
        if isinstance(kind, str) and len(kind) > len("List"):
            item_kind, item_api = kind.removesuffix("List"), data.get("apiVersion")
    elif isinstance(data, dict):
        yield (), data
        return
    else:
        raise doc.error(FieldError((), f"expected a Kubernetes object or List, got {_kind(data)}"))
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise doc.error(FieldError((*prefix, i), f"expected an object, got {_kind(item)}"))
        if item_kind is not None and "kind" not in item:
            item["kind"] = item_kind
            if item_api is not None:
                item.setdefault("apiVersion", item_api)
        yield (*prefix, i), item


def _is_list(kind: Any) -> bool:
    return kind is None or (isinstance(kind, str) and kind.endswith("List"))


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
