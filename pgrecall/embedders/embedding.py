"""The embedding model: one interface, one class per backend, one instance per process for each setting.

Shared by the worker (documents) and the search side (queries), so that both
see the same weights, tokenizer and normalisation. Three backends compute the
same function: "torch" (sentence-transformers, pgrecall.embedders.torch_embedder), "onnx"
(onnxruntime, fp32) and "onnx-int8" (onnxruntime, dynamically quantized weights;
both in pgrecall.embedders.onnx_embedder). The ONNX ones never import torch once their
files are built (see pgrecall.embedders.onnx_model).

Callers get one with `embedder_for(settings)`; `new_embedder(...)` builds a private
one from explicit arguments (another backend or model cache, in tests and benchmarks).
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from pgrecall.embedders.embedder_base import (
    BACKENDS,
    BUNDLED_NAME,
    DIMENSIONS,
    Embedder,
    LocalEmbedder,
    bundled_model_path,
    resolve_backend,
)
from pgrecall.embedders.onnx_embedder import OnnxEmbedder, OnnxInt8Embedder
from pgrecall.embedders.torch_embedder import TorchEmbedder
from pgrecall.settings import Settings, default

__all__ = ["BACKENDS", "BUNDLED_NAME", "DIMENSIONS", "Embedder", "bundled_model_path", "embedder_for", "new_embedder"]


# The one map from a backend's name to its class.
BACKEND_CLASSES: dict[str, type[LocalEmbedder]] = {
    cls.backend: cls for cls in (TorchEmbedder, OnnxEmbedder, OnnxInt8Embedder)
}


def new_embedder(
    model_path: str | Path | None = None,
    batch_size: int = default("embed_batch_size"),
    backend: str | None = None,
    home: str | Path | None = None,
) -> Embedder:
    """A new embedder of its own (nothing loaded yet): model_path None is the bundled model, backend None
    is PGRECALL_EMBED_BACKEND, home None keeps ONNX files in PGRECALL_MODEL_CACHE else PGRECALL_HOME/models."""
    return BACKEND_CLASSES[resolve_backend(backend)](model_path, batch_size, home)


@functools.cache
def _shared_embedder(model_path: str | None, batch_size: int, backend: str) -> Embedder:
    return new_embedder(model_path, batch_size, backend)


_SHARED_LOCK = threading.Lock()  # functools.cache alone may build one twice when two threads ask at once


def embedder_for(settings: Settings) -> Embedder:
    """The process's one embedder for (settings.model, settings.embed_batch_size, settings.embed_backend):
    the worker's and the search side's, so the model loads once per process."""
    with _SHARED_LOCK:
        return _shared_embedder(settings.model, settings.embed_batch_size, resolve_backend(settings.embed_backend))
