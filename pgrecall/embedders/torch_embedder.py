"""The torch backend: the model folder run by sentence-transformers, as it was trained (its own
pooling, Dense and Normalize modules; the prompts pgrecall.embedders.model_layout reads from its configuration)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pgrecall.embedders.embedder_base import LocalEmbedder

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer


class TorchEmbedder(LocalEmbedder):
    """sentence-transformers on the CPU: the reference the ONNX backends are measured against."""

    backend = "torch"

    def _load_model(self) -> SentenceTransformer:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # "Loading weights" would clutter every CLI call
        # local_files_only: hub look-ups must never happen (the machine may have
        # no network at all); the model is a local folder.
        model = SentenceTransformer(str(self.model_path), device="cpu", local_files_only=True)
        dimension_of = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self._check_dimensions(dimension_of())
        return model

    def _tokenizer_without_file(self, path: Path) -> Tokenizer:
        from tokenizers import Tokenizer

        # An older model folder: the fast tokenizer transformers builds from its vocabulary files.
        return Tokenizer.from_str(self._loaded_model().tokenizer.backend_tokenizer.to_str())

    def _embed(self, model: SentenceTransformer, texts: list[str], prompt: str) -> np.ndarray:
        # prompt="" (not None) also keeps sentence-transformers from adding a default prompt of
        # its own: pgrecall.embedders.model_layout already chose the prompt from the folder's configuration.
        vectors = model.encode(
            texts,
            prompt=prompt,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors.astype(np.float32, copy=False)
