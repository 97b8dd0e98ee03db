"""The ONNX backends: the model's transformer run by onnxruntime, pooled and normalised here.

Their files are exported from the model's own weights on first use (pgrecall.embedders.onnx_model);
after that, embedding never imports torch.
"""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import structlog

from pgrecall.embedders.embedder_base import LocalEmbedder
from pgrecall.embedders.model_layout import pool
from pgrecall.errors import ModelUnavailable

log = structlog.get_logger(__name__)


class OnnxEmbedder(LocalEmbedder):
    """onnxruntime on the fp32 export (model.onnx); the model's own pooling (pgrecall.embedders.model_layout),
    then unit length."""

    backend = "onnx"  # also names the file to run: pgrecall.embedders.onnx_model.FILES[backend]

    def _load_model(self):
        """An onnxruntime.InferenceSession on this backend's file, built first if missing or damaged."""
        try:
            import onnxruntime
        except ImportError:
            raise ModelUnavailable(f"the {self.backend} backend needs the onnxruntime package") from None
        from pgrecall.embedders.onnx_model import OnnxCache

        refusal = self.layout.onnx_refusal()
        if refusal:
            raise ModelUnavailable(f"the {self.backend} backend cannot run {self.model_path}: {refusal}; use torch")
        cache = OnnxCache(self.model_path, self.cache_root, self.model_name, self.weights_sha256)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = _cpu_count()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only
        # No busy-waiting between operators: on a few cores the spinning threads take the CPU
        # that the worker's parsing, chunking and PostgreSQL need while the model runs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        path = cache.ensure(self.backend)
        optimized = cache.optimized_path(self.backend, onnxruntime.__version__)
        session = _open_optimized(onnxruntime, optimized, options)
        if session is None:
            try:
                session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            except Exception:  # noqa: BLE001 - onnxruntime raises its own untyped errors for a damaged file
                path = cache.ensure(self.backend, rebuild=path.stat())
                optimized = cache.optimized_path(self.backend, onnxruntime.__version__)
                try:
                    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                except Exception as error:  # noqa: BLE001
                    raise ModelUnavailable(f"cannot load {path}: {error}") from None
            _save_optimized(onnxruntime, path, optimized)
        self._check_dimensions(session.get_outputs()[0].shape[-1])
        return session

    # How many texts one forward pass holds (None: batch_size), and how many passes run at once.
    texts_per_run: int | None = None
    parallel_runs = 1

    def _embed(self, session, texts: list[str], prompt: str) -> np.ndarray:
        # As sentence-transformers: the prompt is prepended to the text, and where the pooling
        # leaves it out (include_prompt false), its tokens but the last special one are masked there.
        encodings = self.tokenizer.encode_batch([prompt + text for text in texts] if prompt else texts)
        layout = self.layout
        prompt_length = len(self.tokenizer.encode(prompt).ids) - 1 if prompt and not layout.include_prompt else 0
        inputs = {node.name for node in session.get_inputs()}  # token_type_ids only for models that take it
        lengths = np.array([len(encoding.ids) for encoding in encodings])
        order = np.argsort(-lengths, kind="stable")  # longest first, as sentence-transformers: little padding
        per_run = self.texts_per_run or self.batch_size
        runs = [order[start : start + per_run] for start in range(0, len(texts), per_run)]
        vectors = np.empty((len(texts), self.dimensions), dtype=np.float32)

        def run(rows: np.ndarray) -> None:
            hidden, mask = _forward(session, [encodings[index] for index in rows], inputs)
            if prompt_length:
                mask[:, :prompt_length] = 0
            vectors[rows] = pool(hidden, mask, layout.pooling[0])

        workers = min(self.parallel_runs, len(runs))
        if workers <= 1:
            for rows in runs:
                run(rows)
        else:  # onnxruntime releases the GIL while it runs: short texts' passes overlap their overheads
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pgrecall-embed") as executor:
                for _ in executor.map(run, runs):
                    pass
        return vectors


class OnnxInt8Embedder(OnnxEmbedder):
    """onnxruntime on the dynamically quantized int8 export (model-int8.onnx): the default, fastest on a CPU.

    Dynamic quantization takes each activation's int8 scale from the whole input of a pass,
    so texts sharing a pass (and its padding) would change each other's vectors (cosine 0.994,
    components off by 0.02). Each text therefore runs alone, unpadded: its vector is the one it
    gets embedded alone, in any batch, at index and at query time. A pass of one text also has no
    padding to compute, which makes it no slower on chunks of about 100 word pieces; the passes of
    short texts, whose fixed cost dominates, overlap on the available cores."""

    backend = "onnx-int8"
    texts_per_run = 1

    @property
    def parallel_runs(self) -> int:
        return _cpu_count()


def _forward(session, encodings: list, inputs: set[str]) -> tuple[np.ndarray, np.ndarray]:
    """One forward pass over encodings (padded to the longest): the hidden states and their mask."""
    width = max(len(encoding.ids) for encoding in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, encoding in enumerate(encodings):
        size = len(encoding.ids)
        ids[row, :size] = encoding.ids
        mask[row, :size] = 1
        types[row, :size] = encoding.type_ids
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    (hidden,) = session.run(["last_hidden_state"], {name: feeds[name] for name in inputs})
    return hidden, mask


def _open_optimized(onnxruntime, path: Path, options):
    """A session on the cached optimized graph, or None where there is none or it does not load
    (then it is removed, to be written again)."""
    if not path.exists():
        return None
    try:
        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # noqa: BLE001 - onnxruntime's own untyped errors: a damaged copy
        log.warning("optimized_model_unusable", path=str(path), error=str(error).splitlines()[0][:200])
        path.unlink(missing_ok=True)
        return None


def _save_optimized(onnxruntime, source: Path, target: Path) -> None:
    """Keep the graph onnxruntime optimizes at every session start (fusing attention, layer norms and
    the int8 matrix products: two thirds of a session's start) so later processes load it done.
    Saved at the extended level, which holds no layout of this CPU's own; sessions still run at
    ORT_ENABLE_ALL, and their vectors are equal to the bit (tests). Best effort: a cache that cannot
    be written costs only the time it would have saved."""
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.log_severity_level = 3
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        options.optimized_model_filepath = str(temporary)
        onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        temporary.chmod(0o644)  # readable by a service of another user sharing the cache, as the model is
        os.replace(temporary, target)
        for stale in target.parent.glob(f"{source.stem}.*.onnx"):
            if stale != target:  # of an earlier build of the file or another onnxruntime
                stale.unlink(missing_ok=True)
    except Exception as error:  # noqa: BLE001 - OSError, or onnxruntime's own errors
        log.info("optimized_model_not_saved", path=str(target), error=str(error).splitlines()[0][:200])
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use (a container's share)
    except AttributeError:
        return os.cpu_count() or 1
