"""Errors that reach the user: one line naming the file, the field path and the line."""

from __future__ import annotations

from collections.abc import Sequence

PathPart = str | int


def format_path(path: Sequence[PathPart]) -> str:
    """Render a field path the way kubectl and the API server do: `spec.containers[0].name`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


class FieldError(ValueError):
    """Invalid value at a field path inside one document; the loader adds file and line."""

    def __init__(self, path: Sequence[PathPart], message: str) -> None:
        super().__init__(message)
        self.path: tuple[PathPart, ...] = tuple(path)
        self.message = message

    def prefixed(self, prefix: Sequence[PathPart]) -> FieldError:
        return FieldError((*prefix, *self.path), self.message)

    def __str__(self) -> str:
        where = format_path(self.path)
        return f"{where}: {self.message}" if where else self.message


class InputError(Exception):
    """Bad user input: the CLI prints `str(err)` as one line and exits with code 2."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        path: Sequence[PathPart] = (),
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.path = tuple(path)
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = self.file or ""
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        field = format_path(self.path)
        parts = [p for p in (where, field) if p]
        return ": ".join([*parts, self.message])
