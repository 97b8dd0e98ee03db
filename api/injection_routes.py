"""GET /report: what the Claude Code hooks injected, what it cost and whether it was used, as JSON
and as a page (pgrecall.claude_integration.injection_use.report over the records of pgrecall.claude_integration.injection_ledger).

Read-only: the records and the sessions' transcripts are files under PGRECALL_HOME and Claude Code's
folder; no database is asked. Without a records folder (an app made without one) the report is empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from pgrecall.api.web import PageRoute, page
from pgrecall.claude_integration.injection_ledger import report_of
from pgrecall.claude_integration.injection_use import report


def _report(folder: Path | None) -> dict[str, Any]:
    return report_of(folder) if folder is not None else report([], {})


def json_router(folder: Path | None) -> APIRouter:
    router = APIRouter()

    @router.get("/report", summary="What the Claude Code hooks injected: tokens, latency, use")
    def injection_report() -> dict[str, Any]:
        """Overall, and per session, day and project: hook runs, injections, items, estimated tokens,
        p50 and max seconds, and the injected items the assistant used later in its session."""
        return _report(folder)

    return router


def page_router(folder: Path | None, common: dict[str, Any]) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    def report_page(request: Request) -> HTMLResponse:
        return page(request, "report.html", {**common, "report": _report(folder)})

    router.add_api_route("/report", report_page, methods=["GET"], route_class_override=PageRoute)
    return router
