"""A service's model the catalogue does not know: `model.architecture` describes it; without
it `check` reports `unknown-model` at the field and plan refuses it (no silent guess)."""

from __future__ import annotations

import json

import pytest
import yaml
from contract_helpers import BASE, NOW, edit, load
from typer.testing import CliRunner

import gpupact.cli.check  # noqa: F401  (registers the command)
from gpupact.cli.main import app
from gpupact.contract import ContractInvalid
from gpupact.errors import InputError
from gpupact.plan.from_contract import model_problem, service_model
from gpupact.plan.models import resolve_model

GIB = 2**30
IN_HOUSE = {"name": "acme-chat-13b", "params": "13B", "quantization": "bf16"}
LLAMA2_13B_SHAPE = {"layers": 40, "hidden": 5120, "heads": 40, "vocab": 32000}


def _service(model):
    return load(edit(BASE, [("services.0.model", model)])).contract.services[0]


def _check(tmp_path, model) -> dict:
    path = tmp_path / "contract.yaml"
    path.write_text(yaml.safe_dump(edit(BASE, [("services.0.model", model)]), sort_keys=False))
    result = CliRunner().invoke(app, ["check", str(path), "--now", NOW.isoformat(), "-o", "json"])
    return json.loads(result.stdout)


def test_an_unknown_model_is_a_check_error_at_its_name(tmp_path):
    report = _check(tmp_path, IN_HOUSE)
    (hit,) = [f for f in report["findings"] if f["rule"] == "unknown-model"]
    assert hit["severity"] == "error"
    assert hit["path"] == "services[0].model.name"
    assert "acme-chat-13b" in hit["message"] and "model.architecture" in hit["message"]


def test_a_close_name_is_suggested():
    problem = model_problem(_service({"name": "llama-3.1-8c", "params": "8B"}))
    assert problem is not None
    assert "closest: llama-3.1-8b" in problem[1]


def test_plan_refuses_what_check_reports():
    with pytest.raises(InputError, match=r"service svc: model.name: unknown model"):
        service_model(_service(IN_HOUSE), 80 * GIB, 1)


def test_an_architecture_makes_the_model_plannable(tmp_path):
    model = {**IN_HOUSE, "architecture": {**LLAMA2_13B_SHAPE, "intermediate": 13824}}
    assert not [f for f in _check(tmp_path, model)["findings"] if f["rule"] == "unknown-model"]
    arch, weights, _notes = service_model(_service(model), 80 * GIB, 1)
    # the same shape as the catalogue's Llama-2-13B: multi-head attention (kv heads = heads)
    known = resolve_model("llama-2-13b").arch
    assert (arch.layers, arch.hidden, arch.heads, arch.kv_heads) == (40, 5120, 40, 40)
    assert (arch.kv_heads, arch.head_dim) == (known.kv_heads, known.head_dim)
    assert weights.value == "bf16"


def test_a_partial_architecture_names_what_is_missing(tmp_path):
    model = {**IN_HOUSE, "architecture": {"layers": 40, "hidden": 5120}}
    (hit,) = [f for f in _check(tmp_path, model)["findings"] if f["rule"] == "unknown-model"]
    assert hit["path"] == "services[0].model.architecture"
    assert "heads, vocab" in hit["message"]


def test_an_architecture_overrides_a_catalogue_entry():
    model = {"name": "llama-3.1-8b", "params": "8B", "architecture": {"kvHeads": 32}}
    arch, _weights, _notes = service_model(_service(model), 80 * GIB, 1)
    assert arch.kv_heads == 32 and arch.layers == resolve_model("llama-3.1-8b").arch.layers


@pytest.mark.parametrize(
    ("architecture", "message"),
    [
        ({"heads": 40, "kvHeads": 6}, "multiple of kvHeads"),
        ({"experts": 8, "expertsPerToken": 9}, "exceeds experts"),
        ({"layers": 0}, "greater than or equal to 1"),
        ({"layers": "forty"}, "integer"),
        ({"kv_heads": 8}, "unknown field"),
    ],
)
def test_bad_architectures_are_located(architecture, message):
    with pytest.raises(ContractInvalid) as info:
        load(edit(BASE, [("services.0.model", {**IN_HOUSE, "architecture": architecture})]))
    (error,) = info.value.errors
    assert error.path[:4] == ("services", 0, "model", "architecture")
    assert error.line is not None
    assert message in error.message
