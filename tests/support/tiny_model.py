"""A small sentence-transformers model folder built here: a randomly initialised BERT.

No model can be downloaded on this machine, so "any local model" is tested with folders
made like a user's: the bundled model's tokenizer (a real WordPiece vocabulary), a BERT of
`hidden` dimensions with seeded random weights, saved by transformers, and the
sentence-transformers files (modules.json, 1_Pooling/config.json,
config_sentence_transformers.json with prompts) written as sentence-transformers writes them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pgrecall.embedders.embedder_base import bundled_model_path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
E5_PROMPTS = {"query": "query: ", "passage": "passage: "}  # as multilingual-e5's configuration has them


def _write(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")


def build_tiny_model(
    folder: Path,
    *,
    hidden: int = 32,
    pooling: str = "mean",
    prompts: dict[str, str] | None = None,
    include_prompt: bool = True,
    seed: int = 0,
) -> Path:
    """A sentence-transformers folder at `folder` (its name is the model's): BERT, 2 layers."""
    import torch
    from transformers import BertConfig, BertModel

    bundled = bundled_model_path()
    vocabulary = json.loads((bundled / "config.json").read_text())["vocab_size"]
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=vocabulary,
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=512,
    )
    BertModel(config).eval().save_pretrained(folder, safe_serialization=True)
    for name in TOKENIZER_FILES:
        shutil.copy(bundled / name, folder / name)
    _write(
        folder / "modules.json",
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    )
    (folder / "2_Normalize").mkdir(exist_ok=True)
    _write(folder / "sentence_bert_config.json", {"max_seq_length": 128, "do_lower_case": False})
    _write(
        folder / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": hidden,
            "pooling_mode_cls_token": pooling == "cls",
            "pooling_mode_mean_tokens": pooling == "mean",
            "pooling_mode_max_tokens": pooling == "max",
            "pooling_mode_mean_sqrt_len_tokens": False,
            "pooling_mode_weightedmean_tokens": False,
            "pooling_mode_lasttoken": pooling == "lasttoken",
            "include_prompt": include_prompt,
        },
    )
    _write(
        folder / "config_sentence_transformers.json",
        {
            "prompts": prompts if prompts is not None else E5_PROMPTS,
            "default_prompt_name": None,
            "similarity_fn_name": "cosine",
        },
    )
    return folder
