"""The dense Qwen3 models in plan's catalogue against their model cards, and the small ones'
tied embedding counted once in the weights."""

from __future__ import annotations

import pytest

from gpupact.contract.schema import Quantization as Q
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.models import resolve_model
from gpupact.plan.weights import gpu_weight_bytes

# Model cards (https://huggingface.co/Qwen/Qwen3-<size>, "Number of Parameters" and
# "Number of Parameters (Non-Embedding)"), in billions
CARDS = {
    "qwen3-0.6b": (0.6, 0.44),
    "qwen3-1.7b": (1.7, 1.4),
    "qwen3-4b": (4.0, 3.6),
    "qwen3-8b": (8.2, 6.95),
    "qwen3-14b": (14.8, 13.2),
    "qwen3-32b": (32.8, 31.2),
}


@pytest.mark.parametrize("name", sorted(CARDS))
def test_qwen3_counts_land_on_the_model_cards(name: str) -> None:
    total, non_embedding = CARDS[name]
    m = MODELS[name]
    # the cards round to one or two digits: 0.596B is "0.6B", 1.72B "1.7B"
    assert m.params / 1e9 == pytest.approx(total, rel=0.02)
    assert (m.params - m.embedding_params) / 1e9 == pytest.approx(non_embedding, rel=0.02)


@pytest.mark.parametrize(
    ("name", "tied"),
    [("qwen3-0.6b", True), ("qwen3-1.7b", True), ("qwen3-4b", True), ("qwen3-8b", False)],
)
def test_small_qwen3_tie_lm_head_to_the_embedding(name: str, tied: bool) -> None:
    m = MODELS[name]
    assert m.tie_embeddings is tied and m.qk_norm and m.max_context == 40960
    one = m.vocab * m.hidden  # 151,936 is a multiple of vLLM's padding of 64
    assert m.embedding_params == (1 if tied else 2) * one
    assert gpu_weight_bytes(m, Q.bf16, 1).embeddings == (1 if tied else 2) * one * 2


def test_qwen3_06b_weights_by_hand() -> None:
    # 28 layers of q (1024 x 2048), k and v (1024 x 1024), o (2048 x 1024), a 3072-wide SwiGLU,
    # q/k norms of 128 and two 1024 norms; one 151,936 x 1024 embedding; the final norm
    layer = 2 * 1024 * 2048 + 2 * 1024 * 1024 + 3 * 1024 * 3072 + 2 * 128 + 2 * 1024
    params = 151_936 * 1024 + 28 * layer + 1024
    assert MODELS["qwen3-0.6b"].params == params == 596_049_920
    assert gpu_weight_bytes(MODELS["qwen3-0.6b"], Q.bf16, 1).total == 2 * params


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Qwen/Qwen3-0.6B", "qwen3-0.6b"),
        ("Qwen/Qwen3-1.7B", "qwen3-1.7b"),
        ("qwen3-4b", "qwen3-4b"),
        ("Qwen/Qwen3-4B-Instruct-2507", "qwen3-4b"),
    ],
)
def test_qwen3_names_resolve(name: str, key: str) -> None:
    assert resolve_model(name).arch.name == key
