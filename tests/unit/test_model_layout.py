"""pgrecall.embedders.model_layout reads a sentence-transformers folder's files as sentence-transformers does."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pgrecall.embedders.embedder_base import BUNDLED_NAME, parse_space
from pgrecall.embedders.model_layout import pool, read_layout


def _folder(tmp_path, files: dict[str, object]):
    for name, value in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    return tmp_path


MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
]


def test_a_plain_transformers_folder_is_mean_pooled_without_prompts(tmp_path):
    layout = read_layout(_folder(tmp_path, {"config.json": {"hidden_size": 768}}))
    assert (layout.dimensions, layout.pooling, layout.query_prompt, layout.document_prompt) == (768, ("mean",), "", "")
    assert layout.signature == "" and layout.onnx_refusal() is None


def test_prompts_come_from_the_configuration_and_the_default_stands_in(tmp_path):
    folder = _folder(
        tmp_path,
        {
            "config.json": {"hidden_size": 384},
            "modules.json": MODULES,
            "1_Pooling/config.json": {"word_embedding_dimension": 384, "pooling_mode_cls_token": True},
            "config_sentence_transformers.json": {
                "prompts": {"query": "Represent this sentence for searching relevant passages: ", "classify": "c: "},
                "default_prompt_name": "classify",
            },
        },
    )
    layout = read_layout(folder)
    assert layout.query_prompt == "Represent this sentence for searching relevant passages: "
    assert layout.document_prompt == "c: "  # no document/passage/corpus prompt: the default's
    assert layout.pooling == ("cls",) and layout.signature.startswith("cls,prompts-")


def test_a_document_prompt_is_the_first_of_document_passage_corpus(tmp_path):
    prompts = {"corpus": "c: ", "passage": "passage: ", "query": "query: "}
    folder = _folder(
        tmp_path, {"config.json": {"hidden_size": 8}, "config_sentence_transformers.json": {"prompts": prompts}}
    )
    assert read_layout(folder).document_prompt == "passage: "


def test_a_dense_module_sets_the_width_and_keeps_the_model_from_onnx(tmp_path):
    modules = [*MODULES, {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}]
    folder = _folder(
        tmp_path,
        {
            "config.json": {"hidden_size": 384},
            "modules.json": modules,
            "1_Pooling/config.json": {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True},
            "2_Dense/config.json": {"in_features": 384, "out_features": 256},
        },
    )
    layout = read_layout(folder)
    assert layout.dimensions == 256 and "Dense" in layout.onnx_refusal()


def test_pooling_modes_over_right_padded_tokens():
    hidden = np.array([[[1.0, 0.0], [0.0, 3.0], [9.0, 9.0]]], dtype=np.float32)  # the last token is padding
    mask = np.array([[1, 1, 0]])
    np.testing.assert_allclose(pool(hidden, mask, "mean"), [[1 / np.sqrt(10), 3 / np.sqrt(10)]], rtol=1e-6)
    np.testing.assert_allclose(pool(hidden, mask, "cls"), [[1.0, 0.0]])
    np.testing.assert_allclose(pool(hidden, mask, "max"), [[1 / np.sqrt(10), 3 / np.sqrt(10)]], rtol=1e-6)
    np.testing.assert_allclose(pool(hidden, mask, "lasttoken"), [[0.0, 1.0]])


@pytest.mark.parametrize(
    ("space", "parts"),
    [
        (f"{BUNDLED_NAME}@sha256:53aa51172d14/384/onnx-int8", (BUNDLED_NAME, "53aa51172d14", 384, "onnx-int8", "")),
        (
            "e5@small@sha256:0123456789ab/768/torch/prompts-1a2b3c4d",
            ("e5@small", "0123456789ab", 768, "torch", "prompts-1a2b3c4d"),
        ),
    ],
)
def test_a_space_name_comes_apart_into_what_it_needs(space, parts):
    parsed = parse_space(space)
    assert (parsed.model, parsed.weights, parsed.dimensions, parsed.backend, parsed.layout) == parts
    assert parsed.needs().endswith(f"PGRECALL_EMBED_BACKEND={parts[3]}")
    assert parse_space("another-model") is None
