"""`pgrecall eval FILE.json` end to end: a tiny LoCoMo file indexed as claude.ai conversations
through the real pipeline, each question searched within its conversation and across all."""

import psycopg
import pytest
from psycopg import sql

from pgrecall import locomo
from pgrecall.composition.conversation_evaluation import format_table, run_conversation_eval
from pgrecall.settings import load_settings
from tests.support.locomo import write_locomo

DATABASE = "pgrecall_eval_tiny-locomo"


@pytest.fixture
def settings(db_url, tmp_path):
    yield load_settings({"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_DATABASE_URL": db_url})
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DATABASE)))


def test_recalls_within_a_conversation_and_across_all_through_the_real_index(settings, db_url, tmp_path):
    path = write_locomo(tmp_path / "tiny-locomo.json")
    result = run_conversation_eval(settings, path, modes=["keyword", "hybrid"], hnsw_recall=True)
    assert (result["conversations"], result["sessions"], result["turns"], result["questions"]) == (2, 4, 10, 4)
    assert result["evidence"]["split"] == 1 and result["evidence"]["malformed"] == 1
    assert result["indexing"]["indexed"] == 2  # one claude.ai export file per conversation
    # One chunk per exchange: Ada's (and Cleo's) turns open one, after the turn before it;
    # a session that opens with the other speaker opens with an exchange of its own.
    assert result["indexing"]["chunks"] == 6

    # Keyword search finds only what shares words with the question: the answer is known.
    # Q1 (cat 4) finds its turn; Q2 (cat 1) the one of its two turns (and sessions) its words
    # name; Q3 (cat 2) its turn, named by "D:1:1"; Q4 (cat 3) nothing of its own conversation.
    within = result["modes"]["keyword"]["within"]
    expected = {"all": 0.625, "1-4": 0.625, "1": 0.5, "2": 1.0, "3": 0.0, "4": 1.0}
    for group, value in expected.items():
        for name in locomo.metric_names():
            assert within[group][name] == value, (group, name)
    # Across all conversations, Q4's words find conversation A's turn, which holds conversation
    # B's evidence turn word for word: it is A's, so it counts for nothing.
    across = result["modes"]["keyword"]["across"]
    assert {group: across[group]["turn@5"] for group in expected} == expected
    assert across["3"]["budget@25"] == 0.0 and across["3"]["session@25"] == 0.0
    # Q3 (cat 2) across: A's two turns of 60 words of its terms rank first and fill the budget
    # at 5 (115 words); within B, its own turn is the first hit.
    assert across["2"]["turn@5"] == 1.0 and across["2"]["budget@5"] == 0.0 and across["2"]["budget@10"] == 1.0

    for scope in ("within", "across"):
        # The vector arm ranks every chunk: all six (every turn) are hits, within 25 x 23 words.
        hybrid = result["modes"]["hybrid"][scope]["all"]
        assert hybrid["questions"] == 4
        assert hybrid["turn@25"] == hybrid["budget@25"] == hybrid["session@25"] == 1.0
    assert result["ann_recall@10"] == 1.0 and result["vector_search"] == "exact"  # six chunks: the graph finds them
    table = format_table(result)
    assert "within its conversation" in table and "3 open-domain (1)" in table

    with psycopg.connect(db_url) as conn:  # the user's index is untouched
        assert conn.execute("SELECT count(*) FROM pgrecall.documents").fetchone()[0] == 0
    again = run_conversation_eval(settings, path, modes=["keyword"], scopes=["within"])
    assert again["indexing"]["unchanged"] == 2 and again["indexing"]["indexed"] == 0
    timed = {"p50_ms", "p95_ms"}
    assert list(again["modes"]["keyword"]) == ["within"]
    assert {k: v for k, v in again["modes"]["keyword"]["within"].items() if k not in timed} == {
        k: v for k, v in within.items() if k not in timed
    }
