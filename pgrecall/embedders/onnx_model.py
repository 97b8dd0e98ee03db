"""ONNX copies of the embedding model, made on this machine from its own weights.

At first use the model is exported with torch (the only step that imports it) and
quantized to dynamic int8 with onnxruntime; both files are kept under
PGRECALL_HOME/models/<name>-<sha256 prefix of the weights>/, with a manifest. Nothing
converted is ever downloaded. Several processes may arrive at once on a fresh home:
one builds under a file lock, each file is written to a temporary name and renamed,
so nobody loads a half-written file; a damaged file is found and built again.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import time
import warnings
from pathlib import Path

import structlog

from pgrecall.errors import ModelUnavailable

log = structlog.get_logger(__name__)

OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")  # those the model takes, in this order
OUTPUT = "last_hidden_state"
# per_channel=True: per-text cosine to torch min 0.989 / mean 0.994 on SciFact text,
# against 0.917 / 0.948 per tensor; reduce_range=True lowers it (0.70 per tensor,
# 0.989 per channel) for no speed gain on this CPU, so it stays off.
QUANTIZATION = {"weight_type": "QInt8", "per_channel": True, "reduce_range": False}
FILES = {"onnx": "model.onnx", "onnx-int8": "model-int8.onnx"}
# The fp32 file is exported from the model folder; the int8 one is quantized from the fp32 one.
QUANTIZED_FROM = {"onnx-int8": "onnx"}
MANIFEST = "manifest.json"
OPTIMIZED = "optimized"
_CHECKSUMS = "checksums.json"


def weight_files(model_dir: Path) -> list[Path]:
    files = sorted(model_dir.glob("*.safetensors")) or sorted(model_dir.glob("pytorch_model*.bin"))
    if not files:
        raise ModelUnavailable(f"no model weights (*.safetensors, pytorch_model.bin) in {model_dir}")
    return files


def file_sha256(path: Path) -> str:
    """A file's SHA-256, read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _write_json(path: Path, value: dict) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(value, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def weights_sha256(model_dir: Path, cache_root: Path | None) -> str:
    """sha256 over the weight files (one file: that file's own sha256).

    Remembered in cache_root/checksums.json keyed by (path, size, mtime_ns), so a
    cold process does not read 90 MB to name its embedding space."""
    files = weight_files(model_dir)
    stats = {str(file.resolve()): file.stat() for file in files}
    keys = {path: {"size": st.st_size, "mtime_ns": st.st_mtime_ns} for path, st in stats.items()}
    known = _read_json(cache_root / _CHECKSUMS) if cache_root else {}
    sums = {}
    for path, key in keys.items():
        entry = known.get(path)
        if isinstance(entry, dict) and all(entry.get(k) == v for k, v in key.items()) and entry.get("sha256"):
            sums[path] = entry["sha256"]
        else:
            sums[path] = file_sha256(Path(path))
    if cache_root and any(known.get(path, {}).get("sha256") != sums[path] for path in sums):
        from filelock import FileLock  # only where the cache is written

        with contextlib.suppress(OSError):  # a read-only home still works, it just hashes each time
            cache_root.mkdir(parents=True, exist_ok=True)
            with FileLock(cache_root / f"{_CHECKSUMS}.lock"):
                known = _read_json(cache_root / _CHECKSUMS)
                known.update({path: {**keys[path], "sha256": sums[path]} for path in sums})
                _write_json(cache_root / _CHECKSUMS, known)
    if len(sums) == 1:
        return next(iter(sums.values()))
    return hashlib.sha256("".join(sums[p] for p in sorted(sums)).encode()).hexdigest()


class OnnxCache:
    """The exported files of one model (one weights checksum) under cache_root."""

    def __init__(self, model_dir: Path, cache_root: Path, name: str, weights: str):
        self.model_dir = model_dir
        self.weights = weights
        self.folder = cache_root / f"{name}-{weights[:12]}"

    def path(self, backend: str) -> Path:
        return self.folder / FILES[backend]

    def optimized_path(self, backend: str, runtime_version: str) -> Path:
        """Where onnxruntime's optimized graph of the backend's file is kept: named by that file's size
        and modification time (a rebuilt file gets a new one) and by the onnxruntime that made it."""
        source = self.path(backend)
        stat = source.stat()
        return self.folder / OPTIMIZED / f"{source.stem}.{stat.st_size}-{stat.st_mtime_ns}.ort{runtime_version}.onnx"

    def _valid(self, backend: str) -> bool:
        """The file is there, complete (its size as the manifest recorded) and of these weights."""
        manifest = _read_json(self.folder / MANIFEST)
        entry = manifest.get("files", {}).get(FILES[backend])
        try:
            size = self.path(backend).stat().st_size
        except OSError:
            return False
        return manifest.get("weights_sha256") == self.weights and isinstance(entry, dict) and entry.get("size") == size

    def ensure(self, backend: str, rebuild: os.stat_result | None = None) -> Path:
        """The file for backend, built first if missing or damaged. `rebuild`: the stat of a
        file that failed to load; it is rebuilt unless another process already replaced it."""
        path = self.path(backend)
        if rebuild is None and self._valid(backend):
            return path
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ModelUnavailable(f"cannot create the model cache {self.folder}: {error.strerror}") from None
        from filelock import FileLock  # only where a file is built: the import is 30 ms of a start

        with FileLock(self.folder / ".lock"):
            if rebuild is not None:
                with contextlib.suppress(OSError):
                    now = path.stat()
                    if (now.st_ino, now.st_size, now.st_mtime_ns) != (
                        rebuild.st_ino,
                        rebuild.st_size,
                        rebuild.st_mtime_ns,
                    ):
                        rebuild = None  # replaced meanwhile by another process
            if rebuild is None and self._valid(backend):
                return path
            for stale in self.folder.glob(".*.tmp"):  # left by a process that died mid-build
                stale.unlink(missing_ok=True)
            self._build(backend)
        return path

    def _ensure_locked(self, backend: str) -> Path:
        if not self._valid(backend):
            self._build(backend)
        return self.path(backend)

    def _build(self, backend: str) -> None:
        """Build the file for backend, and first its source file if that is missing or damaged; the caller holds the lock."""
        source = QUANTIZED_FROM.get(backend)
        source_path = self._ensure_locked(source) if source else None
        target = self.path(backend)
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        started = time.perf_counter()
        try:
            if source_path is None:
                export(self.model_dir, temporary)
            else:
                quantize(source_path, temporary)
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)
        manifest = _read_json(self.folder / MANIFEST)
        if manifest.get("weights_sha256") != self.weights:
            manifest = {"weights_sha256": self.weights, "source": str(self.model_dir), "files": {}}
        manifest["opset"] = OPSET
        manifest["quantization"] = QUANTIZATION
        manifest.setdefault("files", {})[target.name] = {"size": target.stat().st_size}
        _write_json(self.folder / MANIFEST, manifest)
        log.info(
            "embedding_model_built", backend=backend, path=str(target), seconds=round(time.perf_counter() - started, 1)
        )


def export(model_dir: Path, target: Path) -> None:
    """The transformer (no pooling: pgrecall.embedders.model_layout does that) as ONNX, dynamic batch and
    sequence axes, with the inputs of INPUTS its forward takes (token_type_ids only where the
    architecture has them: BERT and XLM-R do, DistilBERT and MPNet do not)."""
    try:
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as transformers_logging
    except ImportError:
        raise ModelUnavailable("exporting the model to ONNX needs torch and transformers") from None

    transformers_logging.disable_progress_bar()
    # eager attention: the graph onnxruntime's BERT fusions recognise (and int8 runs ~3x faster on it)
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager").eval()
    accepted = inspect.signature(model.forward).parameters
    names = [name for name in INPUTS if name in accepted]
    if names[:2] != ["input_ids", "attention_mask"]:
        raise ModelUnavailable(f"cannot export {model_dir} to ONNX: its model takes no input_ids and attention_mask")

    class LastHiddenState(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, *tensors):
            return self.model(**dict(zip(names, tensors, strict=True))).last_hidden_state

    example = torch.ones((2, 16), dtype=torch.int64)
    examples = tuple(torch.zeros_like(example) if name == "token_type_ids" else example for name in names)
    axes = {name: {0: "batch", 1: "sequence"} for name in (*names, OUTPUT)}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer and deprecation chatter; the result is checked by loading it
        torch.onnx.export(
            LastHiddenState(model),
            examples,
            str(target),
            input_names=names,
            output_names=[OUTPUT],
            dynamic_axes=axes,
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )


def quantize(source: Path, target: Path) -> None:
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    quiet = logging.getLogger()  # quantize_dynamic logs a pre-processing hint on the root logger
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quantize_dynamic(
                str(source),
                str(target),
                weight_type=getattr(QuantType, QUANTIZATION["weight_type"]),
                per_channel=QUANTIZATION["per_channel"],
                reduce_range=QUANTIZATION["reduce_range"],
            )
    finally:
        quiet.setLevel(level)
