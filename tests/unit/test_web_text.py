"""What the web page shows of a hit as text (pgrecall.api.web_text): no database."""

import datetime

import pytest

from pgrecall.api.web_text import MARK_END, MARK_START, breadcrumb, marked, minute, plain_text


def headline(text: str, *words: str) -> str:
    """`text` with `words` marked as store.headlines marks them."""
    for word in words:
        text = text.replace(word, f"{MARK_START}{word}{MARK_END}")
    return text


def test_marked_escapes_the_text_and_marks_only_what_the_headline_marks():
    text = "<b>E-4711</b> failed; export & retry"
    assert str(marked(headline(text, "E", "-4711", "export"), text)) == (
        "&lt;b&gt;<mark>E-4711</mark>&lt;/b&gt; failed; <mark>export</mark> &amp; retry"
    )
    assert str(marked("<i>x</i>", "<i>x</i>")) == "&lt;i&gt;x&lt;/i&gt;"
    # A headline that changed the text otherwise (a tag dropped) is not trusted: the text, unmarked.
    assert str(marked(f"{MARK_START}oat{MARK_END} milk", "<b>oat</b> milk")) == "&lt;b&gt;oat&lt;/b&gt; milk"


@pytest.mark.parametrize(
    ("markdown", "words"),
    [
        (
            "Deploys go out on **Tuesdays** and `make deploy` runs them.",
            "Deploys go out on Tuesdays and make deploy runs them.",
        ),
        ("See [the runbook](https://example.com/runbook) and ![a chart](c.png).", "See the runbook and a chart."),
        ("# Title\n\n- one\n- *two*\n\n```sh\necho hi\n```", "Title one two echo hi"),
        ("<script>alert(1)</script> stays text", "<script>alert(1)</script> stays text"),
        ("a control \x02 character", "a control character"),
    ],
)
def test_plain_text_is_the_words_markdown_shows(markdown, words):
    assert plain_text(markdown) == words


@pytest.mark.parametrize(
    ("heading", "shown"),
    [
        ("# Setup > ## Linux > ### Debian", "Setup › Linux › Debian"),
        ("Vacuum tuning > human", "Vacuum tuning › human"),
        ("# C# > ## Pattern matching", "C# › Pattern matching"),
        ("", ""),
    ],
)
def test_a_heading_path_is_a_breadcrumb(heading, shown):
    assert breadcrumb(heading) == shown


def test_times_are_shown_to_the_minute_in_local_time_with_the_zone():
    moment = datetime.datetime(2026, 3, 1, 10, 0, 59, 123456, tzinfo=datetime.UTC)
    local = moment.astimezone()
    expected = local.strftime("%Y-%m-%d %H:%M ") + local.tzname()
    assert minute(moment) == expected
    assert minute("2026-03-01T10:00:59.123456+00:00") == expected
    assert minute("2026-03-01T10:00:59Z") == expected
    assert minute("2026-03-01") == "2026-03-01"
    assert minute(None) == minute("") == ""
    assert minute("not a time") == "not a time"
    assert "." not in minute(moment) and ":59" not in minute(moment)


@pytest.mark.parametrize(
    ("heading", "role"),
    [("Vacuum tuning", None), ("Sourdough > attachment starter-log.txt", "attachment starter-log.txt")],
)
def test_an_exchange_shows_no_speaker_of_its_own_since_its_text_names_each(heading, role):
    from pgrecall.api.web import role_of

    assert role_of(heading) == role
