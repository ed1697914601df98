"""Export and import routes: the session's export document as a download, and its import."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from agent.api.deps import AgentDep, SessionDep

IMPORT_PATH = "/api/import"
DOWNLOAD = 'attachment; filename="memory-export.json"'

router = APIRouter(prefix="/api", tags=["transfer"])


@router.get("/export")
def export(agent: AgentDep, session_id: SessionDep) -> JSONResponse:
    """The session's export document (`ChatAgent.export`), as a file to save."""
    return JSONResponse(
        agent.export(session_id=session_id),
        headers={"Content-Disposition": DOWNLOAD, "Cache-Control": "no-store"},
    )


@router.post("/import")
async def import_(request: Request, agent: AgentDep, session_id: SessionDep) -> dict[str, Any]:
    """Import an export document (the JSON body, at most 10 MB: 413 past it) into the
    session, all or nothing: what was imported, skipped, refused and pruned
    (`ChatAgent.import_`); 400 `invalid_request` names what is wrong with a document,
    and nothing is written."""
    body = await request.body()
    return await run_in_threadpool(agent.import_, body, session_id=session_id)
