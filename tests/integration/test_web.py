"""The web page on a real index, over plain HTTP (no browser): pages, escaping, CSP, Host and Origin checks."""

import re

import pytest
from fastapi.testclient import TestClient

from pgrecall.api.http import create_app
from pgrecall.api.web_text import minute
from pgrecall.cli.server_commands import status_reader
from pgrecall.memory.notes import Memory, relative_path, render
from pgrecall.postgres import database, queries
from pgrecall.postgres.locks import WATCH_LOCK_PREFIX
from pgrecall.settings import load_settings
from tests.notes import ERROR_CODE_NOTES, write_notes

HTML = {"accept": "text/html,application/xhtml+xml"}
HOSTILE = (
    "# Hostile <script>alert('title')</script>\n\n"
    "<script>document.title = 'owned'</script>\n\n"
    "[click me](javascript:alert(1)) and <img src=x onerror=alert(2)>\n\n" + "zebrafish " * 800 + "\n"
)


def memory(memory_id: str, title: str, text: str, tags: tuple[str, ...], project: str | None, day: str) -> Memory:
    created = f"{day}T10:00:00Z"
    return Memory(
        memory_id,
        relative_path(memory_id, created, title, text),
        title,
        text,
        tags,
        "cli",
        {"project": project} if project else {},
        created,
        created,
    )


@pytest.fixture
def memory_folder(tmp_path):
    folder = tmp_path / "memories"
    for item in (
        memory("a1b2c3d4e5f6", "Deploy day", "Deploys go out on Tuesdays.", ("ops",), "apollo", "2026-03-01"),
        memory("0123456789ab", "Coffee", "The team prefers <b>oat</b> milk.", ("team", "ops"), None, "2026-04-01"),
    ):
        path = folder / item.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(item), encoding="utf-8")
    return folder


@pytest.fixture
def notes(tmp_path, index):
    notes = write_notes(
        tmp_path / "notes",
        {**ERROR_CODE_NOTES, "hostile.md": HOSTILE, "latin1.txt": b"caf\xe9 cr\xe8me"},
    )
    index(notes)
    return notes


@pytest.fixture
def client(notes, searcher, memory_folder, db_url, tmp_path):
    settings = load_settings({"PGRECALL_HOME": str(tmp_path / "home"), "PGRECALL_DATABASE_URL": db_url})
    app = create_app(searcher, memory_folder=memory_folder, status=status_reader(settings, searcher, read_only=False))
    return TestClient(app, base_url="http://127.0.0.1:8765")


def test_a_search_is_a_server_rendered_page_with_the_terms_marked_and_why(client):
    response = client.get("/", params={"q": "E-4711"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    hits = re.findall(r'<a class="hit-link" href="([^"]+)">', response.text)
    assert hits and "/documents/" in hits[0]
    first = response.text.split('<li class="hit">')[1]
    assert "incidents/e4711.md" in first and "<mark>E-4711</mark>" in first
    assert "matched by keyword #1" in first and "vector #" in first
    partial = client.get("/", params={"q": "tomatoes", "mode": "keyword"}, headers={"hx-request": "true"})
    assert "<html" not in partial.text and "notes/garden.md" in partial.text.split('<li class="hit">')[1]


def test_filters_and_a_refused_value_are_shown_on_the_page(client):
    filtered = client.get("/", params={"q": "export", "root": "nothing-by-this-name"})
    assert filtered.status_code == 200 and "Nothing found" in filtered.text
    refused = client.get("/", params={"q": "export", "mode": "fastest"})
    assert refused.status_code == 422 and "unknown mode" in refused.text


def test_the_document_view_renders_markdown_and_marks_the_hit_chunk(client):
    page = client.get("/", params={"q": "E-4711"})
    link = re.search(r'<a class="hit-link" href="([^"]+)">', page.text).group(1).replace("&amp;", "&")
    document = client.get(link, headers=HTML)
    assert document.status_code == 200
    assert "<h1>Incident report</h1>" in document.text or "Incident report" in document.text
    marked = re.findall(r'<section id="p-[0-9a-f]+" class="chunk hit-chunk', document.text)
    assert len(marked) == 1
    document_id = int(link.split("/documents/")[1].split("?")[0])
    as_json = client.get(f"/documents/{document_id}")  # not a browser: the JSON route, as before
    assert as_json.json()["path"] == "incidents/e4711.md"


def test_a_hostile_note_renders_inert(client):
    page = client.get("/", params={"q": "zebrafish", "mode": "keyword"})
    assert "<script>alert" not in page.text and "&lt;script&gt;" in page.text
    link = re.search(r'<a class="hit-link" href="([^"]+)">', page.text).group(1).replace("&amp;", "&")
    document = client.get(link, headers=HTML).text
    body = document.split("<main>", 1)[1]
    assert "<script" not in body and "&lt;script&gt;document.title" in body
    assert 'href="javascript' not in body and "<img" not in body


def test_the_host_allow_list_and_cross_site_writes(client):
    assert client.get("/", headers={"host": "evil.example"}).status_code == 421
    assert client.get("/", headers={"host": "localhost:8765"}).status_code == 200
    foreign = {"origin": "http://evil.example"}
    refused = client.post("/search", json={"query": "E-4711"}, headers=foreign)
    assert refused.status_code == 403 and "another site" in refused.json()["error"]
    refused = client.post("/memories", json={"text": "planted"}, headers={"sec-fetch-site": "cross-site"})
    assert refused.status_code == 403
    same = client.post("/search", json={"query": "E-4711", "k": 1}, headers={"origin": "http://127.0.0.1:8765"})
    assert same.status_code == 200 and same.json()["hits"][0]["path"] == "incidents/e4711.md"


def test_the_status_page_shows_roots_and_a_failure_with_its_stage_and_reason(client, notes, db_url):
    unfollowed = client.get("/status").text.split('<table class="roots">')[1].split("</table>")[0]
    assert str(notes) in unfollowed and "not followed" in unfollowed and " of " not in unfollowed
    follow(db_url, notes)
    page = client.get("/status")
    assert page.status_code == 200
    roots = page.text.split('<table class="roots">')[1].split("</table>")[0]
    assert str(notes) in roots and "5 of 6" in roots  # the latin-1 file is not indexed
    failures = page.text.split('<table class="failures">')[1].split("</table>")[0]
    assert "latin1.txt" in failures and "<td>parse</td>" in failures and "UTF-8" in failures
    assert 'hx-trigger="every 5s"' in page.text
    facts = page.text.split('<table class="facts">')[1].split("</table>")[0]
    last_indexed = re.search(r"<th>last indexed</th><td>(.*?)</td>", facts).group(1)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d \S+", last_indexed), last_indexed  # no seconds, the zone shown


def follow(db_url, folder) -> None:
    """The folder as a root serve follows, as serve registers it."""
    with database.connect(db_url) as conn:
        conn.execute("INSERT INTO pgrecall.roots (name, path) VALUES ('notes', %s)", (str(folder),))
        conn.commit()


def test_the_status_page_says_a_root_is_watched_only_while_a_watcher_holds_it(client, notes, db_url):
    service = queries.load("service.sql")
    follow(db_url, notes)

    def watch_cell() -> str:
        roots = client.get("/status").text.split('<table class="roots">')[1]
        return roots.split('<td class="watch">')[1].split("</td>")[0]

    assert watch_cell() == "not watched"
    with database.connect(db_url, autocommit=True) as watcher:  # what worker/watch_lease.py does
        watcher.execute(service["set_watch_mode"], {"mode": "events", "path": str(notes)})
        watcher.execute(service["hold_watch_lock"], {"prefix": WATCH_LOCK_PREFIX, "path": str(notes)})
        assert watch_cell() == "events"
        watcher.execute(service["release_watch_locks"])
        assert watch_cell().startswith("not watched since ")


def test_memories_are_listed_newest_first_with_counts_and_shown_escaped(client):
    page = client.get("/memories", headers=HTML)
    assert page.status_code == 200
    assert page.text.index("Coffee") < page.text.index("Deploy day")
    assert "#ops (2)" in page.text and "project apollo (1)" in page.text
    only = client.get("/memories", params={"project": "apollo"}, headers=HTML).text
    assert "Deploy day" in only and "Coffee" not in only.split("<ol")[1]
    one = client.get("/memories/0123456789ab", headers=HTML).text
    assert "&lt;b&gt;oat&lt;/b&gt;" in one and "<b>oat</b>" not in one
    created = minute("2026-04-01T10:00:00Z")  # this machine's time zone, to the minute
    assert f"created <time>{created}</time>" in one
    assert client.get("/memories").json()["memories"][0]["id"] == "0123456789ab"  # the JSON, as before


def test_a_token_server_asks_for_the_token_and_keeps_it_in_a_strict_cookie(searcher, notes):
    client = TestClient(create_app(searcher, token="s3cret", listen_host="0.0.0.0"), base_url="http://box.lan:8765")
    first = client.get("/status", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"].startswith("/login")
    wrong = client.post("/login", data={"token": "guess", "next": "/status"}, follow_redirects=False)
    assert wrong.status_code == 401
    right = client.post("/login", data={"token": "s3cret", "next": "/status"}, follow_redirects=False)
    cookie = right.headers["set-cookie"].lower()
    assert right.status_code == 303 and "httponly" in cookie and "samesite=strict" in cookie
    assert client.get("/", params={"q": "E-4711"}).status_code == 200
    assert client.post("/search", json={"query": "E-4711"}).status_code == 401  # the JSON API takes only the bearer


GARDEN = (
    "# Garden\n\n## Harvest\n\n"
    "We gather them on **Tuesdays** when the tomatoes ripen on the south bed; the [runbook](https://example.com/x) "
    "and `harvest.sh` say how to store them for the winter.\n"
)


def test_a_hit_shows_whole_words_marked_plain_text_a_breadcrumb_and_a_minute(index, searcher, tmp_path):
    """Issue 38: "the" was marked inside "gather" and "them", stop words everywhere, the snippet
    showed `**Tuesdays**` and backticks, the heading `# Garden > ## Harvest`, times microseconds."""
    index(write_notes(tmp_path / "garden", {"garden.md": GARDEN}))
    client = TestClient(create_app(searcher), base_url="http://127.0.0.1:8765")
    page = client.get("/", params={"q": "the tomato", "mode": "keyword"}, headers=HTML)
    hit = page.text.split('<li class="hit">')[1].split("</li>")[0]
    snippet = re.search(r'<p class="snippet">(.*?)</p>', hit, re.DOTALL).group(1)
    assert re.findall(r"<mark>(.*?)</mark>", snippet) == ["tomatoes"]  # a stem of the query's word, whole
    assert "We gather them on Tuesdays when the tomatoes" in snippet.replace("<mark>", "").replace("</mark>", "")
    assert "**" not in snippet and "`" not in snippet and "](" not in snippet
    assert '<div class="heading">Garden › Harvest</div>' in hit and "# Garden" not in hit
    (shown,) = re.findall(r"<time>(.*?)</time>", hit)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d \S+", shown), shown
    as_json = client.post("/search", json={"query": "the tomato", "k": 1, "mode": "keyword"}).json()["hits"][0]
    assert "**Tuesdays**" in as_json["snippet"]  # the JSON API's snippet is the passage as written
    document = client.get(re.search(r'href="(/documents/[^"]+)"', hit).group(1).replace("&amp;", "&"), headers=HTML)
    assert '<div class="chunk-heading">Garden › Harvest</div>' in document.text
