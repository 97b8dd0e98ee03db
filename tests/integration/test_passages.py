"""Hits people and assistants can use (issue 39): neighbouring chunks of one document joined into
one passage, and hits no arm vouches for hidden, on a real index with the real model, through
the engine, the HTTP API and the page (the CLI and MCP: tests/system/test_passages_cli.py)."""

import re

import pytest
from fastapi.testclient import TestClient

from pgrecall.api.http import create_app
from pgrecall.cli.hook_commands import Recall, prompt_request
from tests.notes import write_notes

# A note long enough for many chunks (128 word pieces each), every paragraph about vacuum.
VACUUM_PARAGRAPHS = [
    f"Paragraph {n}: autovacuum on table t{n} needs a lower scale factor, since dead tuples pile up "
    f"between vacuum runs and the planner's statistics for t{n} go stale; we watched bloat grow "
    f"on t{n} for days before the vacuum cost limit was raised and the freeze age lowered."
    for n in range(1, 13)
]
DATABASE_NOTES = {
    "vacuum.md": "# Vacuum notes\n\n" + "\n\n".join(VACUUM_PARAGRAPHS),
    "replica.md": "# Replicas\n\nThe streaming replica lagged behind the primary during vacuum of big tables.",
    "indexes.md": "# Indexes\n\nA partial index on open orders halved the planner's cost; vacuum keeps it lean.",
    "wal.md": "# WAL\n\nWrite-ahead log archiving to object storage, and vacuum's effect on WAL volume.",
    "pooling.md": "# Pooling\n\nPgBouncer in transaction mode in front of PostgreSQL; vacuum runs on a direct login.",
    "backup.md": "# Backups\n\npg_basebackup nightly, restored monthly to check; vacuum full never during one.",
    "locks.md": "# Locks\n\nA long transaction blocked vacuum and held back the xmin horizon.",
}
# `simple` (too few letters to tell a language): every word is a keyword term, stop words too.
SIMPLE_NOTES = {"codes/stop.txt": "the 4711 the 8812", "codes/zebra.txt": "zebra 4711 9"}


@pytest.fixture
def databases(index, tmp_path):
    index(write_notes(tmp_path / "notes", {**DATABASE_NOTES, **SIMPLE_NOTES}))


def _consecutive_vacuum_chunks(hits) -> list[int]:
    return [hit.chunk_id for hit in hits if hit.path == "vacuum.md"]


def test_consecutive_chunks_of_a_note_are_one_passage_in_order_and_k_places_stay_filled(databases, searcher):
    query = "autovacuum scale factor dead tuples bloat freeze age"
    apart = searcher.search(query, k=6, merge=False, floor=False)
    vacuum_apart = _consecutive_vacuum_chunks(apart)
    assert len(vacuum_apart) >= 3  # without merging, the note fills several of the places

    hits = searcher.search(query, k=6, merge=True, floor=False)
    assert len(hits) == 6  # refilled from further candidates
    vacuum = [hit for hit in hits if hit.path == "vacuum.md"]
    document = searcher.get_document(vacuum[0].document_id)
    ordinal_of = {chunk["chunk_id"]: chunk["ordinal"] for chunk in document.chunks}
    for hit in vacuum:  # passages of one note are never neighbours: they would be one
        ordinals = [ordinal_of[chunk_id] for chunk_id in hit.chunk_ids]
        assert ordinals == sorted(ordinals) and hit.chunk_id in hit.chunk_ids
    joined = max(vacuum, key=lambda hit: len(hit.chunk_ids))
    assert len(joined.chunk_ids) >= 3
    assert set(vacuum_apart) <= {chunk_id for hit in vacuum for chunk_id in hit.chunk_ids}
    assert len(vacuum) < len(vacuum_apart)
    # The passage's text: its chunks in document order, each paragraph once.
    numbers = [int(n) for n in re.findall(r"Paragraph (\d+):", joined.text)]
    assert numbers == sorted(set(numbers)) and len(numbers) >= 3
    assert numbers == list(range(numbers[0], numbers[-1] + 1))
    assert joined.to_json()["chunk_ids"] == list(joined.chunk_ids)
    assert joined.similarity == max(h.similarity for h in apart if h.chunk_id in joined.chunk_ids)


def test_a_vector_only_hit_unrelated_to_the_query_is_hidden_unless_all_are_asked_for(databases, searcher):
    everything = searcher.search("garlic", k=5, floor=False)
    assert everything and all(hit.ranks["keyword"] is None for hit in everything)
    assert all(hit.similarity < searcher.settings.hook_min_score for hit in everything)
    assert searcher.search("garlic", k=5, floor=True) == []
    # A vector hit at least as close as the hooks ask is shown, without a keyword match.
    close = searcher.search("reclaiming space from dead rows in postgres tables", k=5, floor=True)
    assert close and all(hit.similarity >= searcher.settings.hook_min_score or hit.ranks["keyword"] for hit in close)


def test_a_keyword_hit_on_stop_words_only_is_hidden_and_one_on_a_word_is_not(databases, searcher):
    shown_all = searcher.search("the zebra", k=10, mode="keyword", floor=False)
    assert {"codes/stop.txt", "codes/zebra.txt"} <= {hit.path for hit in shown_all}
    shown = [hit.path for hit in searcher.search("the zebra", k=10, mode="keyword", floor=True)]
    assert "codes/zebra.txt" in shown and "codes/stop.txt" not in shown
    hybrid_all = {hit.path: hit for hit in searcher.search("the zebra", k=10, floor=False)}
    assert hybrid_all["codes/stop.txt"].similarity < searcher.settings.hook_min_score
    assert "codes/stop.txt" not in [hit.path for hit in searcher.search("the zebra", k=10, floor=True)]


def test_the_engines_own_search_keeps_every_chunk_in_its_place(databases, searcher):
    """Searcher.search (the eval's) neither joins nor hides: its rankings, and so its figures, stay."""
    query = "autovacuum scale factor dead tuples bloat freeze age"
    default = searcher.search(query, k=8)
    assert [h.chunk_id for h in default] == [h.chunk_id for h in searcher.search(query, k=8, merge=False, floor=False)]
    assert all(h.chunk_ids == (h.chunk_id,) for h in default)
    assert searcher.search("garlic", k=3)


def test_the_prompt_hooks_search_gets_no_floored_passage(databases, searcher):
    recall = Recall(searcher)
    assert recall.passages("garlic and onions for the soup tonight") == []
    assert prompt_request("garlic").floor and prompt_request("garlic").merge


def test_http_takes_merge_and_floor(databases, searcher):
    client = TestClient(create_app(searcher))
    hidden = client.post("/search", json={"query": "garlic", "k": 5})
    assert hidden.status_code == 200 and hidden.json()["hits"] == []
    shown = client.post("/search", json={"query": "garlic", "k": 5, "floor": False}).json()["hits"]
    assert len(shown) == 5 and all(hit["chunk_id"] in hit["chunk_ids"] for hit in shown)
    assert client.get("/search", params={"q": "garlic", "k": 5}).json()["hits"] == []
    assert len(client.get("/search", params={"q": "garlic", "k": 5, "floor": "false"}).json()["hits"]) == 5

    query = {"query": "autovacuum scale factor dead tuples bloat freeze age", "k": 6, "floor": False}
    joined = client.post("/search", json=query).json()["hits"]
    apart = client.post("/search", json={**query, "merge": False}).json()["hits"]
    assert max(len(hit["chunk_ids"]) for hit in joined) >= 3
    assert all(len(hit["chunk_ids"]) == 1 for hit in apart)
    assert client.post("/search", json={"query": "x", "floor": "maybe"}).status_code == 422


def test_the_page_hides_floored_hits_unless_all_is_ticked_and_shows_similarity(databases, searcher, tmp_path):
    client = TestClient(create_app(searcher), base_url="http://127.0.0.1:8765")
    assert "Nothing found" in client.get("/", params={"q": "garlic"}).text
    page = client.get("/", params={"q": "garlic", "all": "1"}).text
    assert page.count('<li class="hit">') >= 5 and 'name="all" value="1" checked' in page
    first = page.split('<li class="hit">')[1]
    assert "similarity 0." in first and "score" not in first

    joined = client.get("/", params={"q": "autovacuum scale factor dead tuples bloat freeze age", "all": "1"}).text
    assert "passages joined" in joined
    link = re.search(r'<a class="hit-link" href="([^"]+)">', joined).group(1).replace("&amp;", "&")
    document = client.get(link, headers={"accept": "text/html"}).text
    assert len(re.findall(r'class="chunk hit-chunk', document)) == 1  # the passage's best chunk


def test_two_exchanges_of_a_conversation_found_together_are_one_passage_the_message_between_once(index, searcher):
    """The README's conversations: a claude.ai export, its exchanges each after the message before."""
    from pathlib import Path

    index(Path(__file__).resolve().parents[2] / "examples" / "conversations")
    hits = searcher.search("sourdough in the fridge", k=3, merge=True, floor=True)
    passage = hits[0]
    assert passage.path.endswith("#5d2a9c3e-sourdough") and len(passage.chunk_ids) == 2
    assert passage.text.startswith("[2 April 2026] User: My sourdough starter smells of nail polish.")
    assert passage.text.count("Feed it twice a day") == 1  # the first exchange's answer, the second's context
    assert passage.text.endswith("take it out the evening before you bake.")
    apart = searcher.search("sourdough in the fridge", k=3, merge=False, floor=True)
    assert sum("Feed it twice a day" in hit.text for hit in apart) == 2
    bike = searcher.search("how often should I replace the bike chain", k=3)[0]
    assert "How often should I replace it?" in bike.text and "Every 3,000 to 5,000 km" in bike.text
    assert bike.text.startswith("[14 March 2026] Claude:")
