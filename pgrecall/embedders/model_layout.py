"""How a sentence-transformers model folder turns a text into a vector, read from its own files.

    modules.json                         the modules in order (Transformer, Pooling, Dense, Normalize)
    1_Pooling/config.json                pooling: mean, cls, max or lasttoken; word_embedding_dimension
    config_sentence_transformers.json    "prompts" ({"query": "query: ", "passage": "passage: "}) and
                                         "default_prompt_name"
    config.json                          hidden_size, when the folder has no pooling configuration

The torch backend hands the prompts to sentence-transformers, which applies the rest itself; the
ONNX backends apply the same pooling here (pgrecall.embedders.onnx_embedder). Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np

from pgrecall.errors import ModelUnavailable

# sentence-transformers' names of the prompt a document is embedded with, in the order its
# encode_document tries them.
DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")
QUERY_PROMPT_NAME = "query"
# Pooling modes the ONNX backends compute (sentence-transformers' config keys).
POOLING_MODES = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_lasttoken": "lasttoken",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len",
    "pooling_mode_weightedmean_tokens": "weightedmean",
}
ONNX_POOLING = ("mean", "cls", "max", "lasttoken")
_MODULE = "sentence_transformers.models."


def read_json(path: Path) -> dict | list:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise ModelUnavailable(f"cannot read {path}: {error}") from None


@dataclasses.dataclass(frozen=True)
class ModelLayout:
    """What happens after the transformer, and the prompts: all the torch backend does beyond it."""

    dimensions: int
    pooling: tuple[str, ...]  # modes, concatenated in this order (one, for nearly every model)
    include_prompt: bool  # False: the prompt's tokens are left out of the pooling
    normalize: bool  # a Normalize module ends the pipeline (vectors are unit length either way here)
    query_prompt: str
    document_prompt: str
    other_modules: tuple[str, ...]  # modules after the pooling but Normalize (Dense, ...): torch only

    @property
    def signature(self) -> str:
        """What of the layout changes the vectors, for the space's name: "" for mean pooling without
        prompts (the bundled model, whose space name stays as it always was)."""
        parts = []
        if self.pooling != ("mean",):
            parts.append("+".join(self.pooling))
        if self.query_prompt or self.document_prompt:
            prompts = json.dumps([self.query_prompt, self.document_prompt, self.include_prompt])
            parts.append("prompts-" + hashlib.sha256(prompts.encode()).hexdigest()[:8])
        return ",".join(parts)

    def onnx_refusal(self) -> str | None:
        """Why the ONNX backends cannot compute this model's vectors; None when they can."""
        if len(self.pooling) != 1 or self.pooling[0] not in ONNX_POOLING:
            return f"pooling {'+'.join(self.pooling)} (ONNX computes {', '.join(ONNX_POOLING)})"
        if self.other_modules:
            return f"modules after the pooling ({', '.join(self.other_modules)})"
        return None


def read_layout(model_dir: Path) -> ModelLayout:
    """The layout of a sentence-transformers folder; a plain transformers folder (no modules.json)
    is read as sentence-transformers reads it: mean pooling, no prompts."""
    modules = read_json(model_dir / "modules.json") or []
    types = [str(module.get("type", "")) for module in modules]
    pooling_path = next(
        (model_dir / module.get("path", "") for module in modules if module.get("type") == _MODULE + "Pooling"),
        model_dir / "1_Pooling",
    )
    pooling_config = read_json(pooling_path / "config.json")
    modes = tuple(mode for key, mode in POOLING_MODES.items() if pooling_config.get(key))
    width = pooling_config.get("word_embedding_dimension") or _hidden_size(model_dir)
    dimensions = width * max(len(modes), 1)
    after = [t for t in types[types.index(_MODULE + "Pooling") + 1 :]] if _MODULE + "Pooling" in types else []
    other = tuple(t.removeprefix(_MODULE) for t in after if t != _MODULE + "Normalize")
    dense = [m for m in modules if m.get("type") == _MODULE + "Dense"]
    if dense:  # the last Dense module sets the width
        dimensions = int(
            read_json(model_dir / dense[-1].get("path", "") / "config.json").get("out_features") or dimensions
        )
    settings = read_json(model_dir / "config_sentence_transformers.json")
    prompts = settings.get("prompts") or {}
    if not isinstance(prompts, dict) or not all(isinstance(v, str) for v in prompts.values()):
        raise ModelUnavailable(f"{model_dir / 'config_sentence_transformers.json'}: prompts must map names to strings")
    default = prompts.get(settings.get("default_prompt_name") or "", "")
    document = next((prompts[name] for name in DOCUMENT_PROMPT_NAMES if name in prompts), default)
    return ModelLayout(
        dimensions=int(dimensions),
        pooling=modes or ("mean",),
        include_prompt=bool(pooling_config.get("include_prompt", True)),
        normalize=_MODULE + "Normalize" in types,
        query_prompt=prompts.get(QUERY_PROMPT_NAME, default),
        document_prompt=document,
        other_modules=other,
    )


def _hidden_size(model_dir: Path) -> int:
    config = read_json(model_dir / "config.json")
    for key in ("hidden_size", "d_model", "dim", "n_embd"):
        if isinstance(config.get(key), int):
            return config[key]
    raise ModelUnavailable(f"cannot tell the width of the vectors of {model_dir}: no hidden_size in its config.json")


def pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """sentence-transformers' Pooling of one mode over right-padded token vectors, then unit length."""
    hidden = hidden.astype(np.float32)
    weights = mask[..., None].astype(np.float32)
    if mode == "mean":
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    elif mode == "cls":
        pooled = hidden[:, 0]
    elif mode == "max":
        pooled = np.where(weights > 0, hidden, np.float32(-1e9)).max(axis=1)
    elif mode == "lasttoken":
        last = mask.shape[1] - 1 - np.argmax(mask[:, ::-1] > 0, axis=1)  # the last token the mask keeps
        pooled = hidden[np.arange(len(hidden)), last]
    else:
        raise ModelUnavailable(f"pooling {mode} is not computed by the ONNX backends")
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
