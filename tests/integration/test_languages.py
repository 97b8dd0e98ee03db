"""Notes in several languages (issue 21): each document's postings in its own language, queries
analysed in every indexed language, statistics exact per language through edits, removals and moves."""

from __future__ import annotations

import asyncio

import psycopg

from pgrecall.api.read_queries import ReadSession
from pgrecall.languages import CONFIGURATIONS, SIMPLE
from pgrecall.worker import statistics, store
from tests.support.statistics import ROOT, assert_statistics_consistent, connect, rows, write

GERMAN = {
    "de/zaehler.md": "# Zählerstand\n\nDen Zählerstand lesen wir jeden Monat ab und tragen ihn in die Tabelle ein. "
    "Die Ablesungen der Stromzähler werden im Keller gemacht.",
    "de/fehler.md": "# Fehler\n\nDer Export bricht mit dem Fehlercode E-4711 ab, wenn die Datenbankverbindung "
    "abreißt. Die Variable retry_count muss erhöht werden.",
    "de/garten.md": "# Garten\n\nDie Tomaten reifen im Sommer schneller, wenn die Beete in der Sonne liegen.",
}
ENGLISH = {
    "en/meter.md": "# Meter\n\nWe read the electricity meters every month in the basement and write the readings down.",
    "en/export.md": "# Export\n\nThe export job fails with error code E-4711 when the database connection drops.",
}


def keyword(url: str, query: str, languages=None) -> list[str]:
    """Paths of the keyword arm's hits, best first."""
    with psycopg.connect(url) as conn:
        session = ReadSession(conn, None, 40)
        hits = session.keyword_arm(query, limit=20, depth=100, languages=languages)
        ids = [hit.chunk_id for hit in hits]
        paths = dict(
            conn.execute(
                "SELECT c.id, d.path FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id"
                " WHERE c.id = ANY(%s)",
                (ids,),
            ).fetchall()
        )
    return [paths[i] for i in ids]


def build(url: str, notes: dict[str, str]) -> None:
    async def run():
        conn = await connect(url)
        try:
            for path, text in notes.items():
                await write(conn, path, text)
        finally:
            await conn.close()

    asyncio.run(run())


def test_every_language_has_a_snowball_configuration(db_url):
    names = {name for (name,) in rows(db_url, "SELECT cfgname::text FROM pg_ts_config")}
    assert set(CONFIGURATIONS.values()) | {SIMPLE} <= names


def test_documents_are_stored_with_their_language_and_postings_analysed_in_it(db_url):
    build(db_url, {**GERMAN, **ENGLISH})
    languages = dict(rows(db_url, "SELECT path, language FROM pgrecall.documents ORDER BY path"))
    assert languages == {**dict.fromkeys(GERMAN, "german"), **dict.fromkeys(ENGLISH, "english")}
    # German Snowball: "Ablesungen" -> "ables", "Zählerstand" -> "zahlerstand", "die"/"der" dropped.
    german_terms = {t for (t,) in rows(db_url, "SELECT term FROM pgrecall.postings WHERE language = 'german'")}
    assert {"ables", "zahlerstand", "tomat", "stromzahl"} <= german_terms
    assert not {"die", "der", "und", "wir"} & german_terms
    assert_statistics_consistent(db_url)


def test_a_german_word_is_found_in_another_inflection(db_url):
    build(db_url, {**GERMAN, **ENGLISH})
    # "Ablesung" (singular) finds "Ablesungen"; "Tomate" finds "Tomaten"; "Zählerstands" finds "Zählerstand".
    assert keyword(db_url, "Ablesung")[:1] == ["de/zaehler.md"]
    assert keyword(db_url, "Tomate reift")[:1] == ["de/garten.md"]
    assert keyword(db_url, "des Zählerstands")[:1] == ["de/zaehler.md"]
    # Analysed as English only, the inflection misses (what every query was before languages).
    assert keyword(db_url, "Tomate", languages=["english"]) == []


def test_identifiers_in_german_notes_behave_as_in_english_ones(db_url):
    twin = {
        "de/zwilling.md": "# Zwilling\n\nDer Import bricht mit dem Fehlercode E-4712 ab, wenn der Speicher voll ist."
    }
    build(db_url, {**GERMAN, **ENGLISH, **twin})
    assert rows(db_url, "SELECT language FROM pgrecall.documents WHERE path = 'de/zwilling.md'") == [("german",)]
    # The whole identifier is a lexeme in every language: its notes rank above the near-twin's.
    assert set(keyword(db_url, "E-4711")[:2]) == {"de/fehler.md", "en/export.md"}
    assert keyword(db_url, "E-4712")[0] == "de/zwilling.md"
    assert keyword(db_url, "retry_count")[:1] == ["de/fehler.md"]


def test_a_mixed_index_answers_each_language_from_its_documents(db_url):
    build(db_url, {**GERMAN, **ENGLISH})
    assert keyword(db_url, "Stromzähler im Keller ablesen")[0] == "de/zaehler.md"
    assert keyword(db_url, "reading the meters in the basement")[0] == "en/meter.md"
    # Per-language statistics: two English documents, three German ones.
    counts = rows(
        db_url,
        "SELECT language, sum(document_count)::int FROM (SELECT language, document_count FROM pgrecall.corpus_stats"
        " UNION ALL SELECT language, document_count FROM pgrecall.corpus_stat_deltas) t"
        " GROUP BY language HAVING sum(document_count) > 0 ORDER BY language",
    )
    assert counts == [("english", 2), ("german", 3)]


def test_front_matter_names_the_language(db_url):
    build(db_url, {"x.md": "---\nlang: de\n---\n# Notes\n\nThe meters are read every month in the basement."})
    assert rows(db_url, "SELECT language FROM pgrecall.documents WHERE path = 'x.md'") == [("german",)]
    assert rows(db_url, "SELECT DISTINCT language FROM pgrecall.postings") == [("german",)]


def test_statistics_stay_exact_per_language_through_edits_removals_and_moves(db_url, monkeypatch):
    monkeypatch.setattr(statistics, "FOLD_EVERY", 2)  # folds between the steps too
    monkeypatch.setattr(statistics, "_unfolded", 0)
    build(db_url, {**GERMAN, **ENGLISH})

    async def steps():
        conn = await connect(db_url)
        try:
            # An English note rewritten in German: its statistics move from one language to the other.
            await write(conn, "en/meter.md", GERMAN["de/zaehler.md"] + " Ein neuer Satz.")
            assert_statistics_consistent(db_url)
            # The same text, English forced: every row rewritten in English (no row kept in German).
            await write(conn, "en/meter.md", GERMAN["de/zaehler.md"] + " Ein neuer Satz.", language="english")
            assert rows(
                db_url,
                "SELECT DISTINCT c.language FROM pgrecall.chunks c JOIN pgrecall.documents d ON d.id = c.document_id"
                " WHERE d.path = 'en/meter.md'",
            ) == [("english",)]
            assert_statistics_consistent(db_url)
            await store.rename(conn, root=ROOT, source="de/garten.md", destination="de/beet.md")
            assert_statistics_consistent(db_url)
            await store.remove(conn, root=ROOT, path="de", exact=False)
            assert_statistics_consistent(db_url)
            await store.remove(conn, root=ROOT, path="en/meter.md", exact=True)
        finally:
            await conn.close()

    asyncio.run(steps())
    assert_statistics_consistent(db_url)
    assert rows(db_url, "SELECT path, language FROM pgrecall.documents") == [("en/export.md", "english")]
    assert rows(db_url, "SELECT count(*) FROM pgrecall.term_stats WHERE language = 'german'") == [(0,)]
    assert keyword(db_url, "Zählerstand") == []


def test_the_detector_read_from_its_uncompressed_copy_classifies_as_py3langid_does(tmp_path, monkeypatch):
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    from pgrecall import language_detection as language

    monkeypatch.setenv("PGRECALL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PGRECALL_MODEL_CACHE", raising=False)
    language._loaded_identifier.cache_clear()
    try:
        ours = language._identifier(("en", "de"))
        (copy,) = (tmp_path / "home" / "models").glob("py3langid-*.npz")  # the copy, made at first use
        assert copy.stat().st_mode & 0o777 == 0o644  # readable by every user sharing the cache
        reference = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        reference.set_languages(["en", "de"])
        texts = ["Der Zählerstand wurde gestern abgelesen.", "The replica lags behind the primary.", "Datenbank", "ok"]
        for text in texts:
            assert ours.classify(text) == reference.classify(text), text
    finally:
        language._loaded_identifier.cache_clear()
