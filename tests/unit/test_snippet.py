"""make_snippet and the kind filter: pure parts of the search side, no database."""

import pytest

from pgrecall import kinds
from pgrecall.api.searcher import make_snippet, validate_filters
from pgrecall.errors import InvalidInput

WIDTH = 240


def _long(words: int = 200) -> str:
    return " ".join(f"word{i}" for i in range(words))


def test_a_short_text_is_returned_whole_with_its_whitespace_collapsed():
    assert make_snippet("  First line\n\n\tsecond   line  ", "anything") == "First line second line"
    exact = "x" * WIDTH
    assert make_snippet(exact, "x") == exact  # exactly the width: no ellipsis


def test_a_long_text_without_a_query_word_starts_at_the_beginning_and_ends_at_a_word():
    text = _long()
    snippet = make_snippet(text, "absent")
    assert snippet.startswith("word0 ") and snippet.endswith("…")
    body = snippet.removesuffix("…")
    assert len(body) <= WIDTH
    assert text.startswith(body + " ")  # whole words only: the next character of the text is a space


def test_a_query_word_far_into_the_text_is_in_the_snippet_cut_at_word_boundaries():
    text = _long()
    snippet = make_snippet(text, "what about word150?")
    assert snippet.startswith("…") and snippet.endswith("…")
    body = snippet.removeprefix("…").removesuffix("…")
    assert "word150" in body.split()
    assert f" {body} " in f" {text} "  # begins and ends with whole words
    assert len(body) <= WIDTH
    # The word sits near the start of the window, with some context before it.
    assert 0 < body.index("word150") <= WIDTH // 4 + len("word150")  # moved back to where a word starts


def test_the_match_ignores_case_and_words_of_two_letters_or_fewer():
    text = _long() + " Postgres"
    assert "Postgres" in make_snippet(text, "POSTGRES")
    assert make_snippet(text, "of a to").startswith("word0 ")  # too short to look for


def test_the_earliest_query_word_in_the_text_places_the_window():
    text = _long()
    snippet = make_snippet(text, "word180 word120")
    assert "word120" in snippet and "word180" not in snippet


def test_a_query_word_at_the_very_end_is_kept_and_no_ellipsis_follows_the_end():
    text = "w " * 300 + "target"
    snippet = make_snippet(text, "target")
    assert snippet.endswith("target")
    assert snippet.startswith("…")
    text = _long(100)
    assert make_snippet(text, "word95").endswith("word99")


def test_a_word_longer_than_the_width_is_cut_to_the_width():
    snippet = make_snippet("y" * 10_000, "z")
    assert snippet == "y" * WIDTH + "…"


@pytest.mark.parametrize("kind", kinds.SEARCHABLE)
def test_a_kind_filter_takes_the_kinds_that_have_chunks(kind):
    assert validate_filters({"kind": kind}) == {"kind": kind}


@pytest.mark.parametrize("kind", [kinds.CLAUDE_EXPORT, kinds.UNSUPPORTED, "Markdown", "md", "'; DROP TABLE x; --"])
def test_a_kind_filter_names_no_other_kind(kind):
    with pytest.raises(InvalidInput, match=f"^unknown kind .*; use one of {', '.join(kinds.SEARCHABLE)}$"):
        validate_filters({"kind": kind})
