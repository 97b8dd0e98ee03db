"""The document page's "Open in editor" (PGRECALL_EDITOR_COMMAND) on a real index: the command it
runs is a Python that records its arguments, so the test sees exactly which file and line it got."""

import json
import shlex
import sys
import time

import pytest
from fastapi.testclient import TestClient

from pgrecall.api.editor import parse_command
from pgrecall.api.http import create_app
from pgrecall.api.web import passage_key
from tests.notes import ERROR_CODE_NOTES, write_notes

HTML = {"accept": "text/html,application/xhtml+xml"}
SITE = "http://127.0.0.1:8765"
FILLER = " ".join(f"word{n}" for n in range(140))
LONG = (
    f"# Field notes\n\n## Monday\n\n{FILLER} alpha.\n\n## Tuesday\n\n{FILLER} beta.\n\n"
    f"## Wednesday\n\nThe zygote divided twice before noon.\n{FILLER} gamma.\n"
)
RECORDER = (
    "import json, os, sys\n"
    "out = sys.argv[1]\n"
    "with open(out, 'a', encoding='utf-8') as f: f.write(json.dumps(sys.argv[2:]) + '\\n')\n"
)


@pytest.fixture
def notes(tmp_path, index):
    notes = write_notes(tmp_path / "my notes", {**ERROR_CODE_NOTES, "journal/field notes.md": LONG})
    index(notes)
    return notes


@pytest.fixture
def calls(tmp_path):
    return tmp_path / "editor calls.jsonl"


@pytest.fixture
def command(calls):
    template = (
        f"{shlex.quote(sys.executable)} -c {shlex.quote(RECORDER)} {shlex.quote(str(calls))} --goto {{path}}:{{line}}"
    )
    return parse_command(template)


def recorded(calls, count: int, within_s: float = 60.0) -> list[list[str]]:
    """The argv lists the command recorded, once there are `count` of them (a deadline, not a sleep)."""
    deadline = time.monotonic() + within_s
    while True:
        lines = calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []
        if len(lines) >= count or time.monotonic() > deadline:
            return [json.loads(line) for line in lines]
        time.sleep(0.02)


def client_for(searcher, base_url: str = SITE, **options) -> TestClient:
    return TestClient(create_app(searcher, **options), base_url=base_url, follow_redirects=False)


def test_the_button_opens_the_documents_own_file_at_the_hit_chunks_line(searcher, notes, command, calls):
    client = client_for(searcher, editor_command=command)
    found = searcher.get_document("journal/field notes.md")
    chunk = next(c["text"] for c in found.chunks if "zygote" in c["text"])
    page = client.get(f"/documents/{found.id}", params={"passage": passage_key(chunk), "q": "zygote"}, headers=HTML)
    assert f'action="/documents/{found.id}/open"' in page.text and "Open in editor" in page.text
    assert "open the file" in page.text  # the file:// link stays beside the button

    opened = client.post(
        f"/documents/{found.id}/open", data={"passage": passage_key(chunk), "q": "zygote"}, headers=HTML
    )
    assert opened.status_code == 303
    assert opened.headers["location"].startswith(f"/documents/{found.id}?") and "opened=1" in opened.headers["location"]
    zygote_line = LONG.splitlines().index("The zygote divided twice before noon.") + 1
    assert recorded(calls, 1) == [["--goto", f"{notes / 'journal' / 'field notes.md'}:{zygote_line}"]]
    assert "Opened in your editor." in client.get(opened.headers["location"], headers=HTML).text

    other = searcher.get_document("incidents/e4711.md")
    assert client.post(f"/documents/{other.id}/open", data={}, headers=HTML).status_code == 303
    assert recorded(calls, 2)[1] == ["--goto", f"{notes / 'incidents' / 'e4711.md'}:1"]  # no passage: line 1


def test_a_path_in_the_request_is_ignored(searcher, notes, command, calls):
    client = client_for(searcher, editor_command=command)
    found = searcher.get_document("notes/garden.md")
    posted = client.post(
        f"/documents/{found.id}/open", data={"path": "/etc/passwd", "passage": "../../etc/shadow"}, headers=HTML
    )
    assert posted.status_code == 303 and "#" not in posted.headers["location"]  # an unknown passage: no anchor
    assert recorded(calls, 1) == [["--goto", f"{notes / 'notes' / 'garden.md'}:1"]]


@pytest.mark.parametrize("foreign", [{"origin": "http://evil.example"}, {"sec-fetch-site": "cross-site"}])
def test_a_cross_site_post_is_refused_and_runs_nothing(searcher, notes, command, calls, foreign):
    client = client_for(searcher, editor_command=command)
    found = searcher.get_document("notes/garden.md")
    refused = client.post(f"/documents/{found.id}/open", data={}, headers={**HTML, **foreign})
    assert refused.status_code == 403 and "another site" in refused.text
    same_site = client.post(f"/documents/{found.id}/open", data={}, headers={**HTML, "origin": SITE})
    assert same_site.status_code == 303
    assert recorded(calls, 1) == [["--goto", f"{notes / 'notes' / 'garden.md'}:1"]]  # only the same site's


def test_read_only_shows_no_button_and_refuses_the_post(searcher, notes, command, calls):
    client = client_for(searcher, editor_command=command, read_only=True)
    found = searcher.get_document("notes/garden.md")
    page = client.get(f"/documents/{found.id}", headers=HTML).text
    assert "Open in editor" not in page and "open the file" in page
    refused = client.post(f"/documents/{found.id}/open", data={}, headers=HTML)
    assert refused.status_code == 403 and "read-only" in refused.text
    assert not calls.exists()


def test_beyond_loopback_a_post_without_the_token_goes_to_the_login(searcher, notes, command, calls):
    client = client_for(
        searcher, editor_command=command, token="s3cret", listen_host="0.0.0.0", base_url="http://box.lan:8765"
    )
    found = searcher.get_document("notes/garden.md")
    refused = client.post(f"/documents/{found.id}/open", data={}, headers=HTML)
    assert refused.status_code == 303 and refused.headers["location"].startswith("/login")
    allowed = client.post(f"/documents/{found.id}/open", data={}, headers={**HTML, "authorization": "Bearer s3cret"})
    assert allowed.status_code == 303 and allowed.headers["location"].startswith(f"/documents/{found.id}?")
    assert recorded(calls, 1) == [["--goto", f"{notes / 'notes' / 'garden.md'}:1"]]  # the token's only


def test_an_unknown_document_is_404_and_without_the_setting_there_is_no_button(searcher, notes, command, calls):
    client = client_for(searcher, editor_command=command)
    missing = client.post("/documents/987654321/open", data={}, headers=HTML)
    assert missing.status_code == 404 and "no document 987654321" in missing.text
    plain = client_for(searcher)
    found = searcher.get_document("notes/garden.md")
    page = plain.get(f"/documents/{found.id}", headers=HTML).text
    assert "Open in editor" not in page and 'href="file://' in page
    assert plain.post(f"/documents/{found.id}/open", data={}, headers=HTML).status_code == 404
    assert not calls.exists()


def test_an_editor_that_cannot_start_is_one_line_on_the_page(searcher, notes, tmp_path):
    client = client_for(searcher, editor_command=parse_command(f"{tmp_path / 'no-such-editor'} {{path}}"))
    found = searcher.get_document("notes/garden.md")
    failed = client.post(f"/documents/{found.id}/open", data={}, headers=HTML)
    assert failed.status_code == 500 and "could not start the editor" in failed.text and "No such file" in failed.text
