"""The web page's pure parts: Markdown with HTML off, Host and Origin checks (marks: test_web_text.py)."""

import hashlib
from pathlib import Path

import pytest
from starlette.datastructures import Headers

from pgrecall.api import web

STATIC = Path(web.__file__).parent / "static"


def test_markdown_renders_structure_and_keeps_html_and_javascript_links_inert():
    html = str(
        web.render_markdown(
            "# Title\n\n- one\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\ncode\n```\n\n"
            '<script>alert(1)</script>\n\n[click](javascript:alert(1)) <img src=x onerror="alert(2)">'
        )
    )
    assert "<h1>Title</h1>" in html and "<li>one</li>" in html and "<table>" in html and "<code>code" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="javascript:' not in html and "<img" not in html


@pytest.mark.parametrize(
    ("headers", "cross"),
    [
        ({"host": "127.0.0.1:8765"}, False),  # curl, the CLI: no Origin
        ({"host": "127.0.0.1:8765", "origin": "http://127.0.0.1:8765"}, False),
        ({"host": "127.0.0.1:8765", "origin": "http://evil.example"}, True),
        ({"host": "127.0.0.1:8765", "origin": "http://127.0.0.1:9999"}, True),
        ({"host": "127.0.0.1:8765", "origin": "null"}, True),
        ({"host": "127.0.0.1:8765", "sec-fetch-site": "cross-site"}, True),
        ({"host": "127.0.0.1:8765", "sec-fetch-site": "same-origin", "origin": "http://127.0.0.1:8765"}, False),
    ],
)
def test_cross_site_requests_are_told_apart(headers, cross):
    assert web.is_cross_site(Headers(headers)) is cross


def test_host_names_and_the_allow_list():
    assert [web.host_name(h) for h in ("127.0.0.1:8765", "[::1]:80", "LOCALHOST", "::1")] == [
        "127.0.0.1",
        "::1",
        "localhost",
        "::1",
    ]
    assert web.allowed_hosts("127.0.0.1", None) == web.LOOPBACK_NAMES
    assert "box.lan" in web.allowed_hosts("box.lan", None)
    assert web.allowed_hosts("0.0.0.0", "secret") is None  # the token guards every page


def test_safe_next_stays_on_this_site():
    assert web._safe_next("/status") == "/status"
    assert [web._safe_next(t) for t in ("//evil.example", "https://evil.example", "/\\evil")] == ["/", "/", "/"]


def test_vendored_htmx_is_the_recorded_file():
    recorded = (STATIC / "VENDORED.md").read_text()
    digest = hashlib.sha256((STATIC / "htmx.min.js").read_bytes()).hexdigest()
    assert "| htmx.min.js | htmx.org (npm, licence 0BSD) | 2.0.11 |" in recorded and digest in recorded
