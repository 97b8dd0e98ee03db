"""The web page in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright.

`pgrecall ui --no-browser` serves an index of the example notes, a hostile note and a file that
cannot be indexed. Skipped, with the reason, where Playwright or the chromium binary is missing
(`make test` installs both: its `browser` step); Playwright never downloads a browser here (`executable_path`).
"""

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.notes import write_notes
from tests.service import wait_for
from tests.support.cli import run_cli, start_cli

pytestmark = pytest.mark.slow
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed (.[browser])")
WAIT_MS = 60_000  # for page state under a loaded machine: each wait ends as soon as the state is there
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip(
        "no chromium binary on PATH (Debian: apt-get install chromium; make test does)", allow_module_level=True
    )

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "notes"
HOSTILE = (
    "# Hostile note\n\n<script>document.title = 'owned'; window.ran = true</script>\n\n"
    '[click me](javascript:window.ran=true) <img src=x onerror="window.ran=true">\n\n' + "x" * 20000 + "\n"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def site_env(tmp_path_factory, server_url):
    """The environment of the served home: the CLI run with it sees what the page wrote."""
    from tests.conftest import _with_database

    home = tmp_path_factory.mktemp("web-home")
    db = "pgrecall_web_browser"
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {db}")
    env = dict(
        os.environ,
        PGRECALL_HOME=str(home),
        PGRECALL_DATABASE_URL=_with_database(server_url, db),
        PGRECALL_LOG_FORMAT="json",
        PGRECALL_CONFIG=str(home / "no-config.toml"),
    )
    env.pop("PGRECALL_API_TOKEN", None)
    notes = home / "notes"
    shutil.copytree(EXAMPLES, notes)
    write_notes(notes, {"hostile.md": HOSTILE, "broken/latin1.txt": b"caf\xe9 cr\xe8me"})
    assert run_cli("index", str(notes), env=env, timeout=600).returncode == 0
    return env


@pytest.fixture(scope="module")
def site(site_env):
    env = site_env
    port = _free_port()
    server = start_cli(
        "ui", "--no-browser", "--port", str(port), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )

    def up():
        try:
            return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(up, 120, message="pgrecall ui up")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(30)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.errors = errors
    yield opened
    context.close()


def test_typing_a_query_shows_the_right_hit_first_and_opening_it_marks_its_chunk(site, page):
    page.goto(site + "/")
    page.locator("#q").press_sequentially("E-4712", delay=40)
    page.locator('#results .hits[data-q="E-4712"]').wait_for()  # the results of the whole query
    first = page.locator("#results .hit").first
    assert "incident-e4712.md" in first.locator(".path").inner_text()
    assert first.locator("mark").first.inner_text() == "E-4712"
    assert "q=E-4712" in page.url  # the URL holds the query
    page.locator("#q").press("ArrowDown")  # keyboard navigation: the first hit, then open it
    assert page.evaluate("document.activeElement.classList.contains('hit-link')")
    page.keyboard.press("Enter")
    page.wait_for_url("**/documents/**")
    chunk = page.locator(".hit-chunk")
    assert chunk.count() == 1 and "E-4712" in chunk.inner_text()
    assert chunk.is_visible() and page.evaluate(
        "(() => { const r = document.querySelector('.hit-chunk').getBoundingClientRect();"
        " return r.top < window.innerHeight && r.bottom > 0; })()"
    )
    assert page.errors == []


def test_a_search_works_without_javascript(site, browser):
    context = browser.new_context(java_script_enabled=False)
    try:
        bare = context.new_page()
        bare.goto(site + "/?q=tomatoes")
        assert "gardening.md" in bare.locator(".hit .path").first.inner_text()
    finally:
        context.close()


def test_a_hit_marks_whole_words_without_stop_words_and_reads_as_text(site, page):
    """Issue 38: "the" marked inside "them", stop words marked, `code` ticks and a `# ... > ## ...` heading."""
    page.goto(site + "/?q=" + "the roots grow".replace(" ", "+") + "&mode=keyword")
    first = page.locator("#results .hit").first
    assert "gardening.md" in first.locator(".path").inner_text()
    assert sorted(set(first.locator(".snippet mark").all_inner_texts())) == ["grow", "roots"]
    assert first.locator(".heading").inner_text() == "Garden journal › Tomatoes"
    if os.environ.get("PGRECALL_SCREENSHOT"):  # to look at the page: PGRECALL_SCREENSHOT=/tmp/hits.png
        page.screenshot(path=os.environ["PGRECALL_SCREENSHOT"], full_page=True)
    welcome = page.goto(site + "/?q=pgrecall+search&mode=keyword")
    assert welcome.ok and "`" not in page.locator("#results").inner_text()


def test_a_hostile_note_renders_inert(site, page):
    page.goto(site + "/?q=hostile+note&mode=keyword")
    page.locator("#results .hit-link").first.click()
    page.wait_for_url("**/documents/**")
    assert "<script>" in page.locator("article").inner_text()  # shown as text
    assert page.title() != "owned" and page.evaluate("window.ran === undefined")
    assert page.locator("article a[href^='javascript']").count() == 0 and page.locator("article img").count() == 0
    width = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert width  # the 20,000-character line wraps instead of widening the page


def test_a_cross_origin_post_is_refused(site, page, tmp_path):
    # A page of another origin (here: none, as a file or a sandbox has) posts a form to the API.
    form = f'<form method="post" action="{site}/memories" enctype="text/plain"><input name="x" value="y"></form>'
    page.set_content(form)
    with page.expect_navigation():
        page.evaluate("document.forms[0].submit()")
    assert "another site" in page.locator("body").inner_text()


def test_status_shows_a_planted_failure_with_its_reason(site, page):
    page.goto(site + "/status")
    failures = page.locator("table.failures")
    assert "broken/latin1.txt" in failures.inner_text()
    assert "parse" in failures.inner_text() and "UTF-8" in failures.inner_text()


def test_remember_edit_forget_and_undo_a_memory_from_the_page(site, site_env, page):
    expect = sync_api.expect
    page.set_default_timeout(WAIT_MS)  # clicks and fills wait for their element as long
    page.goto(site + "/memories")
    if not page.locator("#remember textarea").is_visible():
        page.locator("details.remember summary").click()
    page.locator("#remember textarea").fill("The quarkle service restarts at 04:00 UTC <b>nightly</b>.")
    page.locator("#remember input[name=title]").fill("Quarkle restarts")
    page.locator("#remember input[name=tags]").fill("ops, quarkle")
    page.locator("#remember button[type=submit]").click()
    expect(page.locator(".flash")).to_contain_text("Remembered.", timeout=WAIT_MS)
    expect(page.locator("article.memory h1")).to_have_text("Quarkle restarts", timeout=WAIT_MS)
    expect(page.locator("article.memory .chunk")).to_contain_text(
        "<b>nightly</b>", timeout=WAIT_MS
    )  # escaped, shown as text
    memory_id = page.locator("article.memory .meta code").first.inner_text()
    expect(page).to_have_url(f"{site}/memories/{memory_id}?done=remembered", timeout=WAIT_MS)  # bookmarkable
    page.evaluate("window.samePage = true")  # htmx swaps the pages in: the forms below never reload it

    page.locator("details.edit summary").click()
    page.locator("#edit textarea").fill("The quarkle service restarts at 05:00 UTC since the move.")
    page.locator("#edit input[name=title]").fill("Quarkle restart time")
    page.locator("#edit input[name=tags]").fill("ops")
    page.locator("#edit button[type=submit]").click()
    expect(page.locator(".flash")).to_contain_text("Saved.", timeout=WAIT_MS)
    expect(page.locator("article.memory .chunk")).to_contain_text("05:00 UTC since the move", timeout=WAIT_MS)

    # Someone else changes it while the page is open: the page's edit is refused, and kept.
    changed = run_cli("update", memory_id, "--text", "Changed from a terminal meanwhile.", env=site_env)
    assert changed.returncode == 0, changed.stderr
    page.locator("details.edit summary").click()
    page.locator("#edit textarea").fill("The quarkle service restarts at 05:30 UTC, said the page.")
    page.locator("#edit button[type=submit]").click()
    expect(page.locator(".error.stale")).to_contain_text("nothing was saved", timeout=WAIT_MS)
    expect(page.locator("article.memory .chunk")).to_contain_text("Changed from a terminal meanwhile.", timeout=WAIT_MS)
    expect(page.locator("#edit textarea")).to_have_value(
        "The quarkle service restarts at 05:30 UTC, said the page.", timeout=WAIT_MS
    )
    page.locator("#edit button[type=submit]").click()  # again, knowing: it applies over the text now
    expect(page.locator(".flash")).to_contain_text("Saved.", timeout=WAIT_MS)
    expect(page.locator("article.memory .chunk")).to_contain_text("05:30 UTC, said the page", timeout=WAIT_MS)

    page.locator("#forget button[type=submit]").click()
    expect(page.locator(".flash")).to_contain_text("Forgotten: Quarkle restart time", timeout=WAIT_MS)
    expect(page.locator(f'.memories a[href="/memories/{memory_id}"]')).to_have_count(0, timeout=WAIT_MS)
    expect(page).to_have_url(f"{site}/memories?forgotten={memory_id}", timeout=WAIT_MS)
    page.locator(".flash button.undo").click()
    expect(page.locator(".flash")).to_contain_text("Brought back from the trash.", timeout=WAIT_MS)
    expect(page.locator("article.memory h1")).to_have_text("Quarkle restart time", timeout=WAIT_MS)
    assert page.evaluate("window.samePage === true") and page.errors == []

    listed = run_cli("memories", "--json", env=site_env, timeout=300)
    assert listed.returncode == 0, listed.stderr
    (memory,) = [m for m in json.loads(listed.stdout) if m["id"] == memory_id]
    assert memory["text"] == "The quarkle service restarts at 05:30 UTC, said the page."
    assert memory["title"] == "Quarkle restart time" and memory["tags"] == ["ops"] and memory["source"] == "web"


def test_a_near_duplicate_on_the_page_is_shown_with_a_save_anyway_that_saves(site, site_env, page):
    expect = sync_api.expect
    page.set_default_timeout(WAIT_MS)
    fact = "The glimmer backup bucket keeps 14 daily snapshots because restores rarely reach further back."
    paraphrase = "Because restores rarely reach further back, the glimmer backup bucket keeps 14 daily snapshots."
    for text in (fact, paraphrase):
        page.goto(site + "/memories")
        if not page.locator("#remember textarea").is_visible():
            page.locator("details.remember summary").click()
        page.locator("#remember textarea").fill(text)
        page.locator("#remember button[type=submit]").first.click()
        if text == fact:
            expect(page.locator(".flash")).to_contain_text("Remembered.", timeout=WAIT_MS)
    expect(page.locator("#remember .error")).to_contain_text("nearly the same", timeout=WAIT_MS)
    expect(page.locator("#remember ul.near a")).to_contain_text("glimmer backup bucket", timeout=WAIT_MS)
    expect(page.locator("#remember textarea")).to_have_value(paraphrase, timeout=WAIT_MS)  # nothing typed is lost
    page.locator("#remember button[name=force]").click()
    expect(page.locator(".flash")).to_contain_text("Remembered.", timeout=WAIT_MS)
    expect(page.locator("article.memory .chunk")).to_contain_text(paraphrase, timeout=WAIT_MS)
    listed = run_cli("memories", "--json", env=site_env, timeout=300)
    assert [m["text"] for m in json.loads(listed.stdout)].count(paraphrase) == 1 and page.errors == []
