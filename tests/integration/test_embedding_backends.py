"""The ONNX backends (fp32, dynamic int8) against the torch one, on the real model and real text."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pgrecall.embedders.embedding import BACKENDS, Embedder, bundled_model_path, embedder_for, new_embedder
from pgrecall.embedders.onnx_embedder import OnnxEmbedder, OnnxInt8Embedder
from pgrecall.embedders.onnx_model import FILES
from pgrecall.embedders.torch_embedder import TorchEmbedder
from pgrecall.errors import ModelUnavailable
from pgrecall.settings import load_settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "notes"

SCIENTIFIC = [
    "ALDH1 is a marker of normal and malignant human mammary stem cells.",
    "Vitamin D supplementation does not reduce the risk of fractures in community-dwelling older adults.",
    "Microglia are the resident macrophages of the central nervous system and respond to injury within minutes.",
    "The risk of cardiovascular events was lower in the intensive blood-pressure group than in the standard group, "
    "although serious adverse events such as hypotension and acute kidney injury were more frequent.",
    "Tumour necrosis factor alpha mediates insulin resistance in adipose tissue of obese mice.",
]
# Over 256 word pieces: the model sees the first 256 only, and every backend must cut it the same way.
LONG = " ".join(
    f"In cohort {i}, treatment with low-dose aspirin reduced the incidence of colorectal adenoma by {i % 7} percent."
    for i in range(40)
)
QUERY = "does aspirin lower the risk of colon polyps"


def _note_paragraphs() -> list[str]:
    paragraphs = []
    for path in sorted(EXAMPLES.glob("*.md")):
        paragraphs += [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if len(p.split()) >= 4]
    return paragraphs[:20]


TEXTS = [*_note_paragraphs(), *SCIENTIFIC, LONG]


def _embedder(backend: str, home: Path) -> Embedder:
    return new_embedder(backend=backend, home=home)


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """One export (about 5 s, plus 7 s for int8 on 2 busy cores) shared by the module."""
    home = tmp_path_factory.mktemp("onnx-home")
    _embedder("onnx-int8", home).load()
    return home


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    return new_embedder(backend="torch")


@pytest.fixture(scope="module")
def reference(torch_embedder) -> np.ndarray:
    return torch_embedder.embed_batch(TEXTS)


def test_the_texts_exercise_truncation(embedder):
    assert embedder.count_tokens([LONG])[0] > embedder.max_tokens == 256
    assert len(TEXTS) > 15


@pytest.mark.parametrize(("backend", "floor"), [("onnx", 0.999), ("onnx-int8", 0.98)])
def test_onnx_vectors_match_torch_per_text(home, reference, backend, floor):
    vectors = _embedder(backend, home).embed_batch(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == reference.shape
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.min() >= floor, [
        (round(float(c), 4), t[:40]) for c, t in zip(cosines, TEXTS, strict=True) if c < floor
    ]


@pytest.fixture(scope="module")
def alone(home) -> dict[str, np.ndarray]:
    """Each text embedded on its own (one text per call), per backend."""
    return {
        backend: np.vstack([_embedder(backend, home).embed_batch([text]) for text in TEXTS]) for backend in BACKENDS
    }


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("batch_size", [3, 64])
def test_a_texts_vector_is_the_one_it_gets_alone_in_any_batch(home, alone, backend, batch_size):
    """A text's vector must not depend on the texts embedded beside it (issue 24): the same chunk
    indexed twice, or a query (embedded alone) against documents embedded in batches, must agree.
    The batches mix a 256-piece text with one-line ones, in three orders, so each text meets
    other neighbours and other padding."""
    embedder = new_embedder(backend=backend, home=home, batch_size=batch_size)
    rng = np.random.default_rng(24)
    for order in (np.arange(len(TEXTS)), np.arange(len(TEXTS))[::-1], rng.permutation(len(TEXTS))):
        together = embedder.embed_batch([TEXTS[index] for index in order])
        difference = np.abs(together - alone[backend][order]).max()
        assert difference <= 1e-5, (backend, batch_size, float(difference))


def test_the_batch_check_catches_batch_wide_int8_scales(home, alone):
    """The same int8 file run the way it was before (batch_size texts per pass, one activation
    scale over all of them) fails the check above: it is sensitive to what it guards against."""

    class BatchWideInt8(OnnxInt8Embedder):
        texts_per_run = None
        parallel_runs = 1

    embedder = BatchWideInt8(batch_size=64, home=home)
    difference = np.abs(embedder.embed_batch(TEXTS) - alone["onnx-int8"]).max()
    assert difference > 1e-3


def test_int8_ranks_like_torch(home, torch_embedder):
    documents = SCIENTIFIC + [LONG]
    int8 = _embedder("onnx-int8", home)
    for query in (QUERY, "stem cells in breast tissue", "kidney injury from lowering blood pressure"):
        torch_scores = torch_embedder.embed_batch(documents) @ torch_embedder.embed_batch([query])[0]
        int8_scores = int8.embed_batch(documents) @ int8.embed_batch([query])[0]
        assert int(np.argmax(int8_scores)) == int(np.argmax(torch_scores))


def test_space_names_model_weights_dimensions_and_backend(home):
    spaces = {backend: _embedder(backend, home).space for backend in ("torch", "onnx", "onnx-int8")}
    assert len(set(spaces.values())) == 3
    assert spaces["onnx-int8"].startswith("all-MiniLM-L6-v2@sha256:")
    assert spaces["onnx-int8"].endswith("/384/onnx-int8")
    assert _embedder("onnx-int8", home).space == spaces["onnx-int8"]  # stable across instances
    # the weights' checksum is remembered, so a later process does not hash 90 MB again
    assert (home / "models" / "checksums.json").exists()


@pytest.mark.parametrize(
    ("backend", "cls"), [("torch", TorchEmbedder), ("onnx", OnnxEmbedder), ("onnx-int8", OnnxInt8Embedder)]
)
def test_each_backend_is_one_class_of_the_interface_with_the_space_label_of_before(backend, cls):
    embedder = new_embedder(backend=backend)
    assert type(embedder) is cls and isinstance(embedder, Embedder) and embedder.backend == backend
    assert embedder.dimensions == 384 and embedder.batch_size == load_settings({}).embed_batch_size
    # The label as it was built before the backends became classes: the stored documents carry it,
    # and another label would send every existing index to be embedded again.
    weights = hashlib.sha256((bundled_model_path() / "model.safetensors").read_bytes()).hexdigest()
    assert embedder.space == f"all-MiniLM-L6-v2@sha256:{weights[:12]}/384/{backend}"
    assert embedder.max_tokens == 256
    assert embedder.count_tokens(["pgrecall embeds", ""]) == [7, 0]
    assert embedder.word_pieces("pgrecall") == ["pg", "##re", "##cal", "##l"]
    assert embedder.embed_batch([]).shape == (0, 384)


def test_every_backend_name_has_its_class():
    assert {new_embedder("/nowhere", backend=backend).backend for backend in BACKENDS} == set(BACKENDS)
    with pytest.raises(ModelUnavailable, match=r"^unknown embedding backend 'cuda'; use torch, onnx, onnx-int8$"):
        new_embedder(backend="cuda")


def test_embedder_for_keeps_one_instance_per_model_batch_size_and_backend(tmp_path):
    settings = load_settings({"PGRECALL_HOME": str(tmp_path / "a")})
    shared = embedder_for(settings)
    assert shared.backend == "onnx-int8"  # the default
    assert embedder_for(load_settings({"PGRECALL_HOME": str(tmp_path / "b")})) is shared  # the home is not a key
    torch = embedder_for(dataclasses.replace(settings, embed_backend="torch"))
    assert torch.backend == "torch" and torch is embedder_for(load_settings({"PGRECALL_EMBED_BACKEND": "torch"}))
    smaller = embedder_for(dataclasses.replace(settings, embed_batch_size=8))
    assert smaller.batch_size == 8 and smaller is not shared
    assert new_embedder() is not new_embedder()  # the explicit constructor shares nothing


def _run(code: str, home: Path) -> subprocess.Popen:
    env = {**os.environ, "PGRECALL_HOME": str(home), "PGRECALL_MODEL_CACHE": ""}
    env.pop("PGRECALL_EMBED_BACKEND", None)
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_onnx_backend_does_not_import_torch(home):
    code = (
        "import sys; from pgrecall.embedders.embedding import new_embedder; e = new_embedder(backend='onnx-int8'); "
        "e.embed_batch(['x']); print(e.space); "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'imported torch'"
    )
    process = _run(code, home)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err.decode()
    assert out.decode().strip().endswith("/384/onnx-int8")


EMBED_AND_SAVE = (
    "import sys, numpy; from pgrecall.embedders.embedding import new_embedder; "
    "numpy.save(sys.argv[1], new_embedder(backend='onnx-int8').embed_batch({texts!r}))"
)


@pytest.mark.slow
def test_concurrent_first_use_builds_once_and_agrees(tmp_path):
    home = tmp_path / "fresh"
    code = EMBED_AND_SAVE.format(texts=SCIENTIFIC)
    processes = []
    for n in range(3):
        env = {**os.environ, "PGRECALL_HOME": str(home), "PGRECALL_MODEL_CACHE": ""}
        processes.append(
            subprocess.Popen(
                [sys.executable, "-c", code, str(tmp_path / f"v{n}.npy")],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
    for process in processes:
        _, err = process.communicate(timeout=240)
        assert process.returncode == 0, err.decode()
    vectors = [np.load(tmp_path / f"v{n}.npy") for n in range(3)]
    for other in vectors[1:]:
        np.testing.assert_array_equal(vectors[0], other)
    folder = next((home / "models").glob("all-MiniLM-L6-v2-*"))
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".onnx") == ["model-int8.onnx", "model.onnx"]
    assert not list(folder.glob(".*.tmp"))  # no half-written file left behind


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_damaged_cache_file_is_rebuilt(tmp_path, home, damage):
    import shutil

    copy = tmp_path / "home"
    shutil.copytree(home / "models", copy / "models")
    path = next((copy / "models").glob("all-MiniLM-L6-v2-*")) / FILES["onnx-int8"]
    size = path.stat().st_size
    if damage == "truncated":  # a copy cut short: its size betrays it
        with open(path, "r+b") as stream:
            stream.truncate(size // 2)
    else:  # same size, unreadable: onnxruntime refuses it
        path.write_bytes(b"\0" * size)
    vectors = _embedder("onnx-int8", copy).embed_batch(SCIENTIFIC)
    expected = _embedder("onnx-int8", home).embed_batch(SCIENTIFIC)
    np.testing.assert_array_equal(vectors, expected)
    assert path.stat().st_size == size


class _SessionsOpened:
    """Which files onnxruntime sessions are opened on (observed, not replaced: the real class runs)."""

    def __init__(self, monkeypatch):
        import onnxruntime

        self.paths: list[Path] = []
        real = onnxruntime.InferenceSession
        opened = self.paths

        class Recording(real):
            def __init__(self, path, *args, **kwargs):
                opened.append(Path(path))
                super().__init__(path, *args, **kwargs)

        monkeypatch.setattr(onnxruntime, "InferenceSession", Recording)


def _home_without_optimized_graphs(tmp_path: Path, home: Path) -> Path:
    import shutil

    copy = tmp_path / "home"
    shutil.copytree(home / "models", copy / "models")
    for folder in (copy / "models").glob("*/optimized"):
        shutil.rmtree(folder)
    return copy


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_the_optimized_graph_is_kept_and_the_next_session_starts_from_it_with_equal_vectors(
    tmp_path, home, monkeypatch, backend
):
    copy = _home_without_optimized_graphs(tmp_path, home)
    first = _embedder(backend, copy).embed_batch(SCIENTIFIC)
    (kept,) = (copy / "models").glob(f"*/optimized/{Path(FILES[backend]).stem}.*.onnx")
    assert kept.stat().st_mode & 0o777 == 0o644  # readable by a service of another user sharing the cache
    sessions = _SessionsOpened(monkeypatch)
    again = _embedder(backend, copy).embed_batch(SCIENTIFIC)
    assert sessions.paths == [kept]  # one session, on the kept graph: no optimizing pass again
    np.testing.assert_array_equal(again, first)


def test_a_damaged_optimized_graph_is_set_aside_and_written_again(tmp_path, home, monkeypatch):
    copy = _home_without_optimized_graphs(tmp_path, home)
    expected = _embedder("onnx-int8", copy).embed_batch(SCIENTIFIC)
    (kept,) = (copy / "models").glob("*/optimized/*.onnx")
    size = kept.stat().st_size
    kept.write_bytes(b"\0" * size)
    np.testing.assert_array_equal(_embedder("onnx-int8", copy).embed_batch(SCIENTIFIC), expected)
    sessions = _SessionsOpened(monkeypatch)
    np.testing.assert_array_equal(_embedder("onnx-int8", copy).embed_batch(SCIENTIFIC), expected)
    assert sessions.paths == [kept]  # rewritten whole, and used again


def test_a_cache_where_the_optimized_graph_cannot_be_written_still_embeds(tmp_path, home):
    copy = _home_without_optimized_graphs(tmp_path, home)
    for folder in (copy / "models").glob("all-MiniLM-L6-v2-*"):
        (folder / "optimized").write_text("a file where the folder would go")
    vectors = _embedder("onnx-int8", copy).embed_batch(SCIENTIFIC)
    np.testing.assert_array_equal(vectors, _embedder("onnx-int8", home).embed_batch(SCIENTIFIC))
