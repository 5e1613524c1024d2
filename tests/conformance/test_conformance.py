"""Every upstream conformance vector as its own pytest case (id = the vector's id)."""

from __future__ import annotations

import importlib

import pytest

from conformance.vectors import Vector, conformance_dir, load_vectors

VECTORS = load_vectors()


def _runner(vector: Vector):
    try:
        return importlib.import_module(vector.runner_module)
    except ModuleNotFoundError as exc:
        if exc.name and vector.runner_module.startswith(exc.name):
            return None
        raise


@pytest.mark.parametrize("vector", VECTORS or [None], ids=[v.id for v in VECTORS] or ["none"])
def test_vector(vector: Vector | None, record_property) -> None:
    if vector is None:
        pytest.skip(
            f"no conformance vectors: expected *.json in {conformance_dir()} "
            "(set GPUPACT_CONFORMANCE_DIR)"
        )
    record_property("conformance", f"{vector.file}:{vector.category}")
    module = _runner(vector)
    if module is None:
        pytest.skip(f"not modelled yet: {vector.file} category '{vector.category}'")
    module.run(vector.case, vector.meta)
