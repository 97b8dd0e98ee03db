"""The keyword arm reads its postings alone (0014) and ranks exactly as the queries before it.

The arm reads each term's postings in SQL and scores them in pgrecall.api.keyword (issue 24);
the references below scored them in SQL, and are run as they were, with the same parameters.

The reference is the keyword arm as it was before 0014 (kept below, verbatim but for the
document length's step of 0022): it looked each posting's chunk and document up in their tables. Over a real corpus (SciFact abstracts written
through the real write path) both must give the same (chunk, score) lists, with and without
filters, on an index migrated from 0013 and on one written since.

A second reference is the keyword arm of 0024 (languages), verbatim, before the idf and average
lengths were computed once per term rather than once per posting (issue 24): over an index of
English and German documents both must give the same lists, for every query language, with
filters, repeated terms and identifiers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import numpy as np
import psycopg
import pytest

from pgrecall.api import read_queries as read_store
from pgrecall.embedders.embedding import DIMENSIONS
from pgrecall.postgres import database
from pgrecall.postgres.migrator import bundled_migrations, migrate
from pgrecall.worker import statistics, store
from pgrecall.worker.adapters import markdown
from pgrecall.worker.chunk import chunk_sections
from tests.support.statistics import rows

SCIFACT = Path("/work/shared/data/scifact")
GERMANQUAD = Path("/work/shared/data/germanquad")
DOCUMENTS = 300
QUERIES = 50
ROOT = "/keyword-arm-test"
FILTERS = [None, {"path_prefix": "b/"}, {"path_prefix": "a/", "kind": "markdown"}]

# The keyword arm before 0014, verbatim but for the document length's step (0022).
OLD_KEYWORD_ARM = """
WITH totals AS (
    SELECT sum(chunk_count)::bigint AS chunk_count, sum(term_total)::bigint AS term_total,
           sum(document_count)::bigint AS document_count
    FROM (
        SELECT chunk_count, term_total, document_count FROM pgrecall.corpus_stats
        UNION ALL
        SELECT chunk_count, term_total, document_count FROM pgrecall.corpus_stat_deltas
    ) t
),
stats AS (
    SELECT chunk_count::float8 AS chunks,
           greatest(term_total::float8 / nullif(chunk_count, 0), 1) AS chunk_length,
           document_count::float8 AS documents,
           greatest(term_total::float8 / nullif(document_count, 0), 1) AS document_length
    FROM totals
),
query_terms AS (
    SELECT q.term, ts.df, ts.document_df
    FROM (
        SELECT DISTINCT term
        FROM unnest(tsvector_to_array(
                 to_tsvector(%(config)s::regconfig, %(query)s) || array_to_tsvector(%(identifiers)s::text[])
             )) AS u(term)
    ) q
    CROSS JOIN LATERAL (
        SELECT sum(df)::integer AS df, sum(document_df)::integer AS document_df
        FROM (
            SELECT df, document_df FROM pgrecall.term_stats WHERE term = q.term
            UNION ALL
            SELECT df, document_df FROM pgrecall.term_stat_deltas WHERE term = q.term
        ) d
    ) ts
    WHERE ts.df > 0
),
matches AS (
    SELECT q.term, q.df, q.document_df, m.chunk_id, m.tf, c.document_id, c.term_count
    FROM query_terms q
    CROSS JOIN LATERAL (
        SELECT p.chunk_id, p.tf
        FROM pgrecall.postings p
        {filter_joins}
        WHERE p.term = q.term AND {document_filter}
        ORDER BY p.impact DESC
        LIMIT %(depth)s
    ) m
    JOIN pgrecall.chunks c ON c.id = m.chunk_id
),
chunk_scores AS (
    SELECT m.chunk_id, m.document_id,
           sum(ln(1 + (s.chunks - m.df + 0.5) / (m.df + 0.5))
               * m.tf * (%(k1)s + 1)
               / (m.tf + %(k1)s * (1 - %(b)s + %(b)s * m.term_count / s.chunk_length))) AS score
    FROM matches m CROSS JOIN stats s
    GROUP BY m.chunk_id, m.document_id
),
document_terms AS (
    SELECT document_id, term, max(document_df) AS document_df, sum(tf) AS tf
    FROM matches
    GROUP BY document_id, term
),
document_scores AS (
    SELECT t.document_id,
           sum(ln(1 + (s.documents - t.document_df + 0.5) / (t.document_df + 0.5))
               * t.tf * (%(k1)s + 1)
               / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * pgrecall.document_length_step(d.term_count)
                                           / s.document_length))) AS score
    FROM document_terms t
    JOIN pgrecall.documents d ON d.id = t.document_id
    CROSS JOIN stats s
    GROUP BY t.document_id
),
best_chunks AS (
    SELECT DISTINCT ON (document_id) document_id, chunk_id
    FROM chunk_scores
    ORDER BY document_id, score DESC, chunk_id
)
SELECT b.chunk_id, ds.score
FROM best_chunks b
JOIN document_scores ds ON ds.document_id = b.document_id
ORDER BY ds.score DESC, b.chunk_id
LIMIT %(limit)s
"""

# The keyword arm of 0024, verbatim: statistics joined and each idf computed on every posting.
PER_POSTING_KEYWORD_ARM = """
WITH totals AS (
    SELECT language, sum(chunk_count)::bigint AS chunk_count, sum(term_total)::bigint AS term_total,
           sum(document_count)::bigint AS document_count
    FROM (
        SELECT language, chunk_count, term_total, document_count FROM pgrecall.corpus_stats
        UNION ALL
        SELECT language, chunk_count, term_total, document_count FROM pgrecall.corpus_stat_deltas
    ) t
    GROUP BY language
),
stats AS (
    SELECT language,
           chunk_count::float8 AS chunks,
           greatest(term_total::float8 / nullif(chunk_count, 0), 1) AS chunk_length,
           document_count::float8 AS documents,
           greatest(term_total::float8 / nullif(document_count, 0), 1) AS document_length
    FROM totals
    WHERE chunk_count > 0 AND (%(languages)s::text[] IS NULL OR language = ANY(%(languages)s::text[]))
),
query_terms AS (
    SELECT s.language, q.term, ts.df, ts.document_df
    FROM stats s
    CROSS JOIN LATERAL (
        SELECT DISTINCT term
        FROM unnest(tsvector_to_array(
                 to_tsvector(s.language::regconfig, %(query)s) || array_to_tsvector(%(identifiers)s::text[])
             )) AS u(term)
    ) q
    CROSS JOIN LATERAL (
        SELECT sum(df)::integer AS df, sum(document_df)::integer AS document_df
        FROM (
            SELECT df, document_df FROM pgrecall.term_stats WHERE language = s.language AND term = q.term
            UNION ALL
            SELECT df, document_df FROM pgrecall.term_stat_deltas WHERE language = s.language AND term = q.term
        ) d
    ) ts
    WHERE ts.df > 0
),
matches AS (
    SELECT q.language, q.term, q.df, q.document_df, m.chunk_id, m.tf, m.document_id, m.chunk_length,
           m.document_length
    FROM query_terms q
    CROSS JOIN LATERAL (
        SELECT p.chunk_id, p.tf, p.document_id, p.chunk_length, p.document_length
        FROM pgrecall.postings p
        {filter_joins}
        WHERE p.language = q.language AND p.term = q.term AND {document_filter}
        ORDER BY p.impact DESC, p.chunk_id
        LIMIT %(depth)s
    ) m
),
chunk_scores AS (
    SELECT m.chunk_id, m.document_id,
           sum(ln(1 + (s.chunks - m.df + 0.5) / (m.df + 0.5))
               * m.tf * (%(k1)s + 1)
               / (m.tf + %(k1)s * (1 - %(b)s + %(b)s * m.chunk_length / s.chunk_length))) AS score
    FROM matches m JOIN stats s ON s.language = m.language
    GROUP BY m.chunk_id, m.document_id
),
document_terms AS (
    -- document_length is the same on all of a document's postings; a document has one language.
    SELECT document_id, language, term, max(document_df) AS document_df, sum(tf) AS tf,
           max(document_length) AS document_length
    FROM matches
    GROUP BY document_id, language, term
),
document_scores AS (
    SELECT t.document_id,
           sum(ln(1 + (s.documents - t.document_df + 0.5) / (t.document_df + 0.5))
               * t.tf * (%(k1)s + 1)
               / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * t.document_length / s.document_length))) AS score
    FROM document_terms t
    JOIN stats s ON s.language = t.language
    GROUP BY t.document_id
),
best_chunks AS (
    SELECT DISTINCT ON (document_id) document_id, chunk_id
    FROM chunk_scores
    ORDER BY document_id, score DESC, chunk_id
)
SELECT b.chunk_id, ds.score
FROM best_chunks b
JOIN document_scores ds ON ds.document_id = b.document_id
ORDER BY ds.score DESC, b.chunk_id
LIMIT %(limit)s
"""

# How the write path wrote postings before 0014 (no document or lengths), verbatim.
OLD_INSERT_POSTINGS = """
INSERT INTO pgrecall.postings (term, chunk_id, tf, impact)
SELECT l.lexeme, c.id, l.tf,
       l.tf * (%(k1)s + 1) / (l.tf + %(k1)s * (1 - %(b)s + %(b)s * c.term_count / a.average_length))
FROM pgrecall.chunks c
CROSS JOIN LATERAL (
    SELECT lexeme, coalesce(array_length(positions, 1), 1) AS tf FROM unnest(c.fts)
) l
CROSS JOIN (
    SELECT coalesce(sum(term_total)::bigint::float8 / nullif(sum(chunk_count)::bigint, 0),
                    %(default_average_length)s) AS average_length
    FROM (
        SELECT chunk_count, term_total FROM pgrecall.corpus_stats
        UNION ALL
        SELECT chunk_count, term_total FROM pgrecall.corpus_stat_deltas
    ) t
) a
WHERE c.document_id = %(document_id)s
"""

# 0022's function, as the migration creates it.
_0022 = next(m for m in bundled_migrations() if m.name.startswith("0022")).sql
LENGTH_STEP_FUNCTION = _0022[_0022.index("CREATE FUNCTION") : _0022.index("$$;") + 3]

# Each posting's carried values against the rows they come from: no row may differ.
STALE_POSTINGS = """
SELECT count(*) FROM pgrecall.postings p
JOIN pgrecall.chunks c ON c.id = p.chunk_id
JOIN pgrecall.documents d ON d.id = c.document_id
WHERE (p.document_id, p.chunk_length, p.document_length)
      IS DISTINCT FROM (c.document_id, c.term_count, pgrecall.document_length_step(d.term_count))
"""


@pytest.fixture(scope="module")
def scifact():
    """(abstracts, test queries) of SciFact; the test needs the real corpus."""
    if not (SCIFACT / "corpus.jsonl").exists():
        pytest.skip(f"SciFact is not at {SCIFACT}")
    with (SCIFACT / "corpus.jsonl").open() as corpus:
        abstracts = [json.loads(line) for _, line in zip(range(DOCUMENTS), corpus, strict=False)]
    tested = {line.split("\t")[0] for line in (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()[1:]}
    lines = (SCIFACT / "queries.jsonl").read_text().splitlines()
    queries = [q["text"] for line in lines if (q := json.loads(line))["_id"] in tested]
    return abstracts, queries[:QUERIES]


def _note(path: str, text: str):
    document = markdown.parse(path, text, hashlib.sha256(text.encode()).hexdigest())
    # Small chunks: most abstracts become several, so a document's best chunk is a real choice.
    chunks = chunk_sections(document.sections, lambda texts: [len(t.split()) for t in texts], max_tokens=60)
    rng = np.random.default_rng(len(text))
    vectors = rng.standard_normal((len(chunks), DIMENSIONS)).astype(np.float32)
    return document, chunks, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _markdown(abstract: dict, shortened: bool = False) -> str:
    text = abstract["text"][: len(abstract["text"]) // 3] if shortened else abstract["text"]
    return f"# {abstract['title']}\n\n{text}\n"


def _no_rows_kept(old, rows, space_id) -> dict:
    return {}


async def _write(url: str, notes: dict[str, str]) -> None:
    conn = await psycopg.AsyncConnection.connect(url)
    await database.configure_connection_async(conn)
    async with conn:
        for path, text in notes.items():
            document, chunks, vectors = _note(path, text)
            await store.write_document(
                conn,
                root=ROOT,
                document=document,
                chunks=chunks,
                vectors=vectors,
                info=None,
                chunking="test",
                embedding_space="keyword-arm-test",
                language="english",  # as every index before 0024 was analysed
            )
        await store.remove(conn, root=ROOT, path="a/removed")


def _corpus(abstracts: list[dict]) -> dict[str, str]:
    """Half the abstracts under a/, half under b/; a few under a/removed/ (removed after writing)."""
    notes = {f"{'ab'[i % 2]}/{a['_id']}.md": _markdown(a) for i, a in enumerate(abstracts)}
    notes.update({f"a/removed/{a['_id']}.md": _markdown(a) for a in abstracts[:5]})
    return notes


def _rewrites(abstracts: list[dict]) -> dict[str, str]:
    """Some documents written again shorter (their length changes), one emptied (no chunks)."""
    notes = {f"{'ab'[i % 2]}/{a['_id']}.md": _markdown(a, shortened=True) for i, a in enumerate(abstracts[:40])}
    notes[f"b/{abstracts[1]['_id']}.md"] = "# Empty\n"
    return notes


def _rankings(url: str, queries: list[str], sql: str | None, languages=(None,)) -> dict:
    """(filter, query) -> the keyword arm's (chunk id, score) list; through the old query where `sql`.
    With `languages`, (filter, languages, query) for each."""
    results = {}
    if sql is not None:
        sql = sql.replace("%(config)s", "'english'")  # the one configuration of then (0024 passes none)
        references = {filtered: read_store._expand(sql, filtered, "p.chunk_id") for filtered in (False, True)}
    with psycopg.connect(url) as conn:
        for filters in FILTERS:
            for query in queries:
                for told in languages:
                    with conn.transaction():
                        session = read_store.ReadSession(conn, filters, ef_search=40, vectors=False)
                        if sql is None:
                            hits = session.keyword_arm(query, limit=100, depth=1000, languages=told)
                        else:  # the same parameters, scored by the reference in SQL
                            params = session.keyword_params(query, limit=100, depth=1000, languages=told)
                            hits = [tuple(row) for row in conn.execute(references[bool(filters)], params)]
                        if languages == (None,):
                            key = (json.dumps(filters), query)
                        else:
                            key = (json.dumps(filters), None if told is None else tuple(told), query)
                        results[key] = hits
    return results


def _assert_same(expected: dict, actual: dict) -> None:
    """The same chunks in the same order with the same scores (within 1e-9). Only chunks of
    near-equal scores may trade places (and places at the cut): a float sum's last bit depends on
    the order its terms are added in, which neither query fixes (two copies of one abstract)."""
    assert expected.keys() == actual.keys()
    assert sum(len(hits) for hits in expected.values()) > 1000  # the comparison compares something
    for key, hits in expected.items():
        got = actual[key]
        assert len(got) == len(hits), key
        old, new = dict(hits), dict(got)
        for chunk in old.keys() | new.keys():
            if chunk in old and chunk in new:
                assert new[chunk] == pytest.approx(old[chunk], rel=0, abs=1e-9), (key, chunk)
            else:
                assert old.get(chunk, new.get(chunk)) == pytest.approx(hits[-1][1], rel=0, abs=1e-9), (key, chunk)
        for (old_chunk, old_score), (new_chunk, new_score) in zip(hits, got, strict=True):
            assert new_chunk == old_chunk or new_score == pytest.approx(old_score, rel=0, abs=1e-9), (key, hits, got)


@pytest.mark.slow
def test_keyword_ranking_is_unchanged_by_postings_that_carry_lengths(empty_db_url, scifact, monkeypatch):
    abstracts, queries = scifact
    before = [m for m in bundled_migrations() if m.name < "0014"]
    with database.connect(empty_db_url) as conn:
        migrate(conn, migrations=before)
        # Today's write path also writes the columns of 0016, 0020, 0021 and 0022 and calls 0022's
        # function: the old schema has them while it is written.
        conn.execute("ALTER TABLE pgrecall.documents ADD COLUMN redactions jsonb NOT NULL DEFAULT '{}'")
        conn.execute("ALTER TABLE pgrecall.documents ADD COLUMN project text, ADD COLUMN occurred_at timestamptz")
        conn.execute("ALTER TABLE pgrecall.chunks ADD COLUMN section_key text, ADD COLUMN fresh_from integer")
        conn.execute("ALTER TABLE pgrecall.roots ADD COLUMN project text")
        conn.execute("ALTER TABLE pgrecall.chunks ADD COLUMN write_key text")
        conn.execute(LENGTH_STEP_FUNCTION)
        # ... and of 0024 (languages), all english as the old schema's statistics are.
        conn.execute("ALTER TABLE pgrecall.documents ADD COLUMN language text")
        for table in ("chunks", "postings", "term_stat_deltas", "corpus_stat_deltas"):
            conn.execute(f"ALTER TABLE pgrecall.{table} ADD COLUMN language text NOT NULL DEFAULT 'english'")
        # and 0023's space of each chunk, which it asks pgrecall.embedding_space_id for (a stand-in
        # here: 0023 fills the column from the documents' spaces).
        conn.execute("ALTER TABLE pgrecall.chunks ADD COLUMN embedding_space_id integer")
        conn.execute(
            "CREATE FUNCTION pgrecall.embedding_space_id(text, integer) RETURNS integer"
            " LANGUAGE sql AS 'SELECT NULL::integer'"
        )
    # An index written before 0014, by the write path of then.
    with monkeypatch.context() as patch:
        patch.setitem(store.Q, "insert_postings", OLD_INSERT_POSTINGS)
        patch.setattr(statistics, "FOLD_EVERY", 10**9)  # the old schema's term_stats have no language to fold by
        patch.setattr(store, "_unchanged_rows", _no_rows_kept)  # it rewrote every row of an edit
        asyncio.run(_write(empty_db_url, _corpus(abstracts)))
        asyncio.run(_write(empty_db_url, _rewrites(abstracts)))
    reference = _rankings(empty_db_url, queries, OLD_KEYWORD_ARM)

    with database.connect(empty_db_url) as conn:
        # 0016, 0020, 0021, 0022, 0023 and 0024 add them for real.
        conn.execute(
            "ALTER TABLE pgrecall.documents DROP COLUMN redactions, DROP COLUMN project, DROP COLUMN occurred_at"
        )
        conn.execute("ALTER TABLE pgrecall.chunks DROP COLUMN section_key, DROP COLUMN fresh_from")
        conn.execute("ALTER TABLE pgrecall.roots DROP COLUMN project")
        conn.execute("ALTER TABLE pgrecall.chunks DROP COLUMN write_key")
        conn.execute("DROP FUNCTION pgrecall.document_length_step")
        conn.execute("ALTER TABLE pgrecall.documents DROP COLUMN language")
        for table in ("chunks", "postings", "term_stat_deltas", "corpus_stat_deltas"):
            conn.execute(f"ALTER TABLE pgrecall.{table} DROP COLUMN language")
        conn.execute("ALTER TABLE pgrecall.chunks DROP COLUMN embedding_space_id")
        conn.execute("DROP FUNCTION pgrecall.embedding_space_id(text, integer)")
        through_0014 = [m for m in bundled_migrations() if m.name < "0015"]
        assert migrate(conn, migrations=through_0014) == ["0014_postings_carry_lengths.sql"]
        migrate(conn)  # the later ones: 0024 keys postings and statistics by language, all english here
    assert rows(empty_db_url, STALE_POSTINGS) == [(0,)]
    _assert_same(reference, _rankings(empty_db_url, queries, None))

    # Written since 0014 by today's write path: documents rewritten longer again, new ones.
    asyncio.run(_write(empty_db_url, _corpus(abstracts[:60])))
    asyncio.run(_write(empty_db_url, {f"c/{a['_id']}.md": _markdown(a) for a in abstracts[:30]}))
    assert rows(empty_db_url, STALE_POSTINGS) == [(0,)]
    assert rows(empty_db_url, "SELECT count(*) FROM pgrecall.postings WHERE document_id IS NULL") == [(0,)]
    _assert_same(
        _rankings(empty_db_url, queries, OLD_KEYWORD_ARM),
        _rankings(empty_db_url, queries, None),
    )


@pytest.fixture(scope="module")
def germanquad():
    """(passages, questions) of GermanQuAD."""
    if not (GERMANQUAD / "corpus.jsonl").exists():
        pytest.skip(f"GermanQuAD is not at {GERMANQUAD}")
    with (GERMANQUAD / "corpus.jsonl").open() as corpus:
        passages = [json.loads(line) for _, line in zip(range(DOCUMENTS // 2), corpus, strict=False)]
    with (GERMANQUAD / "queries.jsonl").open() as lines:
        questions = [json.loads(line)["text"] for _, line in zip(range(QUERIES // 2), lines, strict=False)]
    return passages, questions


async def _write_languages(url: str, notes: dict[str, tuple[str, str]]) -> None:
    conn = await psycopg.AsyncConnection.connect(url)
    await database.configure_connection_async(conn)
    async with conn:
        for path, (text, language) in notes.items():
            document, chunks, vectors = _note(path, text)
            await store.write_document(
                conn,
                root=ROOT,
                document=document,
                chunks=chunks,
                vectors=vectors,
                info=None,
                chunking="test",
                embedding_space="keyword-arm-test",
                language=language,
            )


@pytest.mark.slow
def test_keyword_ranking_in_several_languages_is_that_of_the_per_posting_query(db_url, scifact, germanquad):
    abstracts, english = scifact
    passages, german = germanquad
    notes = {f"{'ab'[i % 2]}/{a['_id']}.md": (_markdown(a), "english") for i, a in enumerate(abstracts[:150])}
    notes.update(
        {
            f"{'ab'[i % 2]}/de-{p['_id']}.md": (f"# {p['text'].splitlines()[0]}\n\n{p['text']}\n", "german")
            for i, p in enumerate(passages)
        }
    )
    # Some English notes analysed without stemming: a third configuration with statistics of its own.
    notes.update({f"b/simple-{a['_id']}.md": (_markdown(a), "simple") for a in abstracts[150:180]})
    asyncio.run(_write_languages(db_url, notes))
    asyncio.run(_write_languages(db_url, {k: v for k, v in list(notes.items())[:20]}))  # rewritten: deltas
    queries = [
        *english[:15],
        *german[:15],
        "cancer cancer cancer cells",  # a repeated term counts once
        "Goethe Goethe Schiller Weimar",
        "protein expression protein binding in mice",
        "E-4711 retry_count",  # identifiers, which no note holds
        "Die Geschichte der Stadt und der Universität",  # stop words, in German
    ]
    told = (None, ["english"], ["german"], ["german", "english", "simple"], ["french"])
    reference = _rankings(db_url, queries, PER_POSTING_KEYWORD_ARM, languages=told)
    rewritten = _rankings(db_url, queries, None, languages=told)
    _assert_same(reference, rewritten)
    # Each configuration's statistics take part: the languages told change what is found and how.
    for query in (english[0], german[0]):
        found = {languages: reference["null", languages, query] for languages in (None, ("english",), ("german",))}
        assert found[None] and found[("english",)] != found[("german",)], query
    assert reference["null", ("french",), english[0]] == []  # a language the index holds no document of


def test_a_terms_postings_come_from_the_index_alone(db_url):
    """Without a filter the keyword arm reads neither chunks nor documents: each term's
    list is an index-only scan of postings_term_impact (0014)."""
    with psycopg.connect(db_url) as conn:
        conn.execute("SET enable_seqscan = off")  # a tiny table: make the planner show its index path
        params = {
            **read_store._filter_values(None),
            "query": "replication lag",
            "identifiers": [],
            "languages": None,
            "k1": 0.9,
            "b": 0.4,
            "depth": 1000,
            "limit": 10,
        }
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + read_store.Q[("keyword_postings", False)], params).fetchone()[0]
    text = json.dumps(plan)
    assert '"Index Only Scan"' in text and '"postings_term_impact"' in text
    assert '"pgrecall.chunks"' not in text and '"chunks"' not in text
    assert '"documents"' not in text
