"""The web page of `pgrecall api`: search, read a document, the status, and the memories (read-only).

Pages are rendered on the server from Jinja2 templates (api/templates, autoescaped) and work
without JavaScript: `/?q=...` is a search anyone can bookmark. htmx (vendored in api/static,
version and checksum in api/static/VENDORED.md; no CDN) adds search-as-you-type and the status
page's refresh. Every read goes through the same Searcher and contract as the JSON API; nothing
here writes a row or a file. The memories' pages and forms are pgrecall.api.web_memories: they
write through the memory client the JSON API is handed.

Safety (mount() installs it):
- Host allow-list: without a token only loopback names (and the address listened on) are served,
  so a page of another site cannot reach this one by DNS rebinding.
- With a token (any non-loopback address needs one) a page asks for it once (/login) and keeps
  it in an HttpOnly, SameSite=Strict cookie; the bearer header works as well.
- "Open in editor" (PGRECALL_EDITOR_COMMAND, pgrecall.api.editor) is a POST like any write: it
  runs the command only for the file of the document the URL's id names, looked up here, never
  a path the request carries; refused under --read-only.
- A write (any method but GET, HEAD, OPTIONS), of the page or of the JSON API, whose Origin is
  another site's, or whose Sec-Fetch-Site says cross-site, is refused with 403.
- Every page carries a strict Content-Security-Policy (scripts and styles from this server only,
  no inline script, no eval), text of notes is escaped, and Markdown is rendered with HTML off.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import structlog
from fastapi import APIRouter, Depends, FastAPI, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from markdown_it import MarkdownIt
from markupsafe import Markup
from starlette.datastructures import Headers
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from pgrecall import contract, kinds
from pgrecall.api import editor
from pgrecall.api.searcher import Searcher, make_snippet
from pgrecall.api.web_text import MARK_END, MARK_START, breadcrumb, marked, minute, plain_text
from pgrecall.errors import EmbeddingSpaceMismatch, InvalidInput
from pgrecall.settings import DEFAULT_MAX_FILE_BYTES

HERE = Path(__file__).parent
COOKIE = "pgrecall_token"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CROSS_SITE_REASON = "refused: a write from another site (Origin or Sec-Fetch-Site)"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
CONVERSATION_KINDS = frozenset(
    {kinds.CLAUDE_CONVERSATION, kinds.CLAUDE_CODE_SESSION, kinds.CHATGPT_CONVERSATION, kinds.CLAUDE_PROJECT}
)
EDITOR_READ_ONLY = "this page is read-only (pgrecall api --read-only): it opens no editor"

# CommonMark with tables; raw HTML off, so `<script>` in a note is text. markdown-it's own
# link check refuses javascript:, vbscript:, file: and data: (but images) URLs.
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.filters["minute"] = minute
log = structlog.get_logger(__name__)


def render_markdown(text: str) -> Markup:
    """Markdown as HTML, raw HTML in it escaped."""
    return Markup(_markdown.render(text))


def shown_hits(searcher: Searcher, hits: Sequence[contract.Hit], query: str) -> list[dict[str, Any]]:
    """What the results list shows of each hit: its title and a snippet of the words its Markdown
    shows, the query's words marked (whole words, stop words never: Searcher.headlines), its
    heading as a breadcrumb. The JSON API's `snippet` stays the passage's text as written."""
    shown = []
    for hit in hits:
        words = hit.text if hit.kind == kinds.TEXT else plain_text(hit.text)
        heading = breadcrumb(hit.heading)
        shown.append(
            {"title": hit.title or heading or hit.path, "snippet": make_snippet(words, query), "heading": heading}
        )
    texts = [
        (item[field], hit.chunk_id) for item, hit in zip(shown, hits, strict=True) for field in ("title", "snippet")
    ]
    headlines = iter(searcher.headlines(query, texts, MARK_START, MARK_END))
    for item in shown:
        item["title"] = marked(next(headlines), item["title"])
        item["snippet"] = marked(next(headlines), item["snippet"])
    return shown


def passage_key(text: str) -> str:
    """What links a hit to its chunk in the document view (a hit carries no ordinal): its text's digest."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def chunk_link(chunk_id: int) -> str:
    """A link's `passage` naming a chunk by id: a hit joined from several chunks (chunk_ids) has no
    one chunk's text to digest; the document view takes either form (chunk_of)."""
    return f"c{chunk_id}"


def chunk_of(chunks: Sequence[dict[str, Any]], passage: str) -> dict[str, Any] | None:
    """The chunk a link's `passage` names: by its text's digest (passage_key) or its id (chunk_link)."""
    if not passage:
        return None
    return next((c for c in chunks if passage in (passage_key(c["text"]), chunk_link(c["chunk_id"]))), None)


def why_matched(hit: contract.Hit) -> list[str]:
    """Each arm that found the passage, with its rank (and its normalised score under convex fusion)."""
    reasons = []
    for arm, rank in sorted(hit.ranks.items()):
        if rank is None:
            continue
        score = (hit.arm_scores or {}).get(arm)
        reasons.append(f"{arm} #{rank}" + (f" ({score:.2f})" if score is not None else ""))
    if hit.similarity is not None:
        reasons.append(f"similarity {hit.similarity:.2f}")
    return reasons


def role_of(heading: str) -> str | None:
    """A conversation chunk's part where its heading names one ("Title > attachment notes.txt");
    None for an exchange (heading "Title"), whose text names each speaker."""
    if ">" not in heading:
        return None
    return heading.rsplit(">", 1)[-1].strip().lower() or "turn"


def host_name(host: str) -> str:
    """The name of a Host header, without its port."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def is_cross_site(headers: Headers) -> bool:
    """True for a request a page of another site made: its Origin is not this Host, or the browser says so."""
    if headers.get("sec-fetch-site") in ("cross-site", "same-site"):
        return True
    origin = headers.get("origin")
    if origin is None:
        return False  # not a browser's cross-origin request (curl, the CLI, a same-origin form of older browsers)
    if origin == "null":
        return True
    return urlsplit(origin).netloc.lower() != headers.get("host", "").lower()


class CrossSiteWriteGuard:
    """ASGI middleware: a write from another site is refused with 403 before any route runs."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS and is_cross_site(Headers(scope=scope)):
            await JSONResponse({"error": CROSS_SITE_REASON}, status_code=403)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class PageRoute(APIRoute):
    """A page on the path of a JSON route (/documents/{id}, /memories): it answers only requests that
    ask for HTML, as a browser's navigation does; the others reach the JSON route."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and "text/html" not in Headers(scope=scope).get("accept", ""):
            return Match.NONE, {}
        return super().matches(scope)


class NeedsLogin(Exception):
    """A page asked for without the token."""


def page(request: Request, name: str, context: dict[str, Any], status_code: int = 200) -> HTMLResponse:
    response = templates.TemplateResponse(request, name, context, status_code=status_code)
    response.headers.update(SECURITY_HEADERS)
    return response


def page_context(read_only: bool, memory_folder: Path | None) -> dict[str, Any]:
    """What every page's template is given about the server: read-only, and whether memories are kept."""
    return {"read_only": read_only, "with_memories": memory_folder is not None}


def allowed_hosts(listen_host: str | None, token: str | None) -> frozenset[str] | None:
    """The Host names pages answer: loopback names and the address listened on; None (any) with a token."""
    if token:
        return None
    return LOOPBACK_NAMES | ({host_name(listen_host)} if listen_host else set())


def mount(
    app: FastAPI,
    searcher: Searcher,
    token: str | None = None,
    read_only: bool = False,
    memory_folder: Path | None = None,
    status: Callable[[], dict[str, Any]] | None = None,
    hosts: frozenset[str] | None = frozenset(LOOPBACK_NAMES),
    page_routers: Sequence[APIRouter] = (),
    editor_command: tuple[str, ...] | None = None,
) -> None:
    """The pages, their static files and the cross-site write guard, on `app`. `status`: what
    `pgrecall status` reports (built by the caller with a read-only connection); without it the
    status page shows the search side's /health. `hosts`: the Host allow-list (None: any).
    `page_routers`: more pages behind the same guards (pgrecall.api.web_memories.router's).
    `editor_command`: PGRECALL_EDITOR_COMMAND as editor.parse_command split it (none: no button)."""
    app.add_middleware(CrossSiteWriteGuard)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    async def on_needs_login(request: Request, exc: Exception) -> Response:
        return RedirectResponse("/login?" + urlencode({"next": request.url.path}), status_code=303)

    app.add_exception_handler(NeedsLogin, on_needs_login)
    guards = [Depends(_host_guard(hosts)), Depends(_login_guard(token))]
    app.include_router(router(searcher, token, read_only, memory_folder, status, editor_command), dependencies=guards)
    for pages in page_routers:
        app.include_router(pages, dependencies=guards)
    app.include_router(login_router(token), dependencies=[Depends(_host_guard(hosts))])


def _host_guard(hosts: frozenset[str] | None) -> Callable[[Request], None]:
    def check(request: Request) -> None:
        if hosts is not None and host_name(request.headers.get("host", "")) not in hosts:
            from fastapi import HTTPException

            raise HTTPException(status_code=421, detail="this page answers only on its own address (Host refused)")

    return check


def _presented_token(request: Request) -> str:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else request.cookies.get(COOKIE, "")


def _login_guard(token: str | None) -> Callable[[Request], None]:
    def check(request: Request) -> None:
        if token is not None and not hmac.compare_digest(_presented_token(request).encode(), token.encode()):
            raise NeedsLogin()

    return check


def _safe_next(target: str) -> str:
    """Only a path of this site: never another host (`//evil`, `https://...`)."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


def login_router(token: str | None) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/login", response_class=HTMLResponse)
    def login_form(request: Request, next: str = "/") -> HTMLResponse:
        return page(request, "login.html", {"next": _safe_next(next), "wrong": False, "token_needed": bool(token)})

    @router.post("/login", response_class=HTMLResponse)
    def login(request: Request, token_field: str = Form("", alias="token"), next: str = Form("/")) -> Response:
        if token is None:
            return RedirectResponse(_safe_next(next), status_code=303)
        if not hmac.compare_digest(token_field.encode(), token.encode()):
            context = {"next": _safe_next(next), "wrong": True, "token_needed": True}
            return page(request, "login.html", context, status_code=401)
        response = RedirectResponse(_safe_next(next), status_code=303)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
        return response

    return router


def _search_filters(root: str, kind: str, project: str, since: str, before: str) -> dict[str, str]:
    given = {"root": root, "kind": kind, "project": project, "since": since, "before": before}
    return {name: value.strip() for name, value in given.items() if value.strip()}


def router(
    searcher: Searcher,
    token: str | None,
    read_only: bool,
    memory_folder: Path | None,
    status: Callable[[], dict[str, Any]] | None,
    editor_command: tuple[str, ...] | None = None,
) -> APIRouter:
    """GET /, /documents/{id} (HTML), /status; POST /documents/{id}/open (the editor)."""
    router = APIRouter(include_in_schema=False)
    common = page_context(read_only, memory_folder)

    @router.get("/", response_class=HTMLResponse)
    def search_page(
        request: Request,
        q: str = "",
        mode: str = "hybrid",
        k: int = contract.DEFAULT_K,
        root: str = "",
        kind: str = "",
        project: str = "",
        since: str = "",
        before: str = "",
        all: str = "",
    ) -> HTMLResponse:
        filters = _search_filters(root, kind, project, since, before)
        show_all = all == "1"  # every hit as ranked, not only those an arm vouches for
        hits: list[contract.Hit] = []
        error = None
        if q.strip():
            try:
                asked = contract.search_request(q, k=k, mode=mode, filters=filters or None, floor=not show_all)
                hits = searcher.run(asked)
            except (InvalidInput, EmbeddingSpaceMismatch) as exc:
                error = str(exc)
        context = {
            **common,
            "q": q,
            "mode": mode,
            "k": k,
            "filters": {"root": root, "kind": kind, "project": project, "since": since, "before": before},
            "show_all": show_all,
            "modes": contract.MODES,
            "kinds": kinds.SEARCHABLE,
            "hits": [
                {
                    "hit": hit,
                    **shown,
                    "why": why_matched(hit),
                    "date": minute(hit.occurred_at or hit.modified),
                    "link": f"/documents/{hit.document_id}?"
                    + urlencode({"passage": chunk_link(hit.chunk_id), "q": q})
                    + f"#{chunk_link(hit.chunk_id)}",
                }
                for hit, shown in zip(hits, shown_hits(searcher, hits, q), strict=True)
            ],
            "error": error,
        }
        # htmx asks for the results alone as the query is typed; a navigation gets the page.
        partial = (
            request.headers.get("hx-request") == "true" and request.headers.get("hx-history-restore-request") != "true"
        )
        return page(
            request, "results.html" if partial else "search.html", context, 422 if error and not partial else 200
        )

    def document_page(
        request: Request, document_id: int, passage: str = "", q: str = "", opened: str = ""
    ) -> HTMLResponse:
        found = searcher.get_document(document_id)
        if found is None:
            return page(request, "missing.html", {**common, "what": f"no document {document_id}"}, 404)
        return document_view(request, found, passage, q, opened=opened == "1")

    def document_view(
        request: Request, found: Any, passage: str, q: str, opened: bool = False, editor_error: str | None = None
    ) -> HTMLResponse:
        conversation = found.kind in CONVERSATION_KINDS
        named = chunk_of(found.chunks, passage)
        passage = passage_key(named["text"]) if named is not None else passage
        chunks = [
            {
                "key": passage_key(chunk["text"]),
                "chunk_id": chunk["chunk_id"],
                "heading": breadcrumb(chunk["heading"]),
                "role": role_of(chunk["heading"]) if conversation else None,
                "html": render_markdown(chunk["text"]),
                "hit": bool(passage) and passage_key(chunk["text"]) == passage,
            }
            for chunk in found.chunks
        ]
        location = file_of(found)
        context = {
            **common,
            "document": found,
            "chunks": chunks,
            "conversation": conversation,
            "q": q,
            "file_url": location.as_uri() if location.is_absolute() else None,
            "location": str(location),
            "date": minute(found.occurred_at or found.mtime),
            "passage": passage,
            "editor": editor_command is not None and not read_only and location.is_absolute(),
            "opened": opened,
            "editor_error": editor_error,
        }
        return page(request, "document.html", context, 500 if editor_error else 200)

    router.add_api_route("/documents/{document_id}", document_page, methods=["GET"], route_class_override=PageRoute)

    @router.post("/documents/{document_id}/open", response_class=HTMLResponse)
    def open_in_editor(request: Request, document_id: int, passage: str = Form(""), q: str = Form("")) -> Response:
        if read_only:
            return page(request, "missing.html", {**common, "what": EDITOR_READ_ONLY}, 403)
        if editor_command is None:
            what = "no editor is configured (PGRECALL_EDITOR_COMMAND)"
            return page(request, "missing.html", {**common, "what": what}, 404)
        found = searcher.get_document(document_id)
        if found is None:
            return page(request, "missing.html", {**common, "what": f"no document {document_id}"}, 404)
        location = file_of(found)
        if not location.is_absolute() or not location.is_file():
            what = f"the file of document {document_id} is not there: {location}"
            return page(request, "missing.html", {**common, "what": what}, 404)
        named = chunk_of(found.chunks, passage)
        chunk = named["text"] if named is not None else None
        passage = passage_key(chunk) if chunk is not None else passage
        line = editor.find_line(location, chunk, DEFAULT_MAX_FILE_BYTES)
        try:
            pid = editor.launch(editor.argv_for(editor_command, str(location), line))
        except OSError as exc:
            log.warning("editor_failed", document=document_id, program=editor_command[0], error=str(exc))
            return document_view(request, found, passage, q, editor_error=f"{editor_command[0]}: {exc.strerror or exc}")
        log.info("editor_opened", document=document_id, line=line, pid=pid)
        target = f"/documents/{document_id}?" + urlencode({"passage": passage, "q": q, "opened": "1"})
        return RedirectResponse(target + (f"#p-{passage}" if chunk is not None else ""), status_code=303)

    @router.get("/status", response_class=HTMLResponse)
    def status_page(request: Request) -> HTMLResponse:
        report = status() if status is not None else None
        health = searcher.health() if report is None else None
        partial = request.headers.get("hx-request") == "true"
        context = {**common, "report": report, "health": health}
        return page(request, "status_body.html" if partial else "status.html", context)

    return router


def file_of(found: Any) -> Path:
    """The file a document was read from (a conversation of an export: the export's file)."""
    return Path(found.source_root) / found.path.split("#", 1)[0]
