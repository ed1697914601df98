"""The delivery's stage plumbing: progress events, failure handling, and the texts its
stages build (request size, bullet lists, the context block, the report)."""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, cast

from graphs.delivery import prompts as texts
from graphs.delivery.schemas import DeliveryReport
from graphs.delivery.state import PlanRecord, Verdict
from graphs.events import emit

logger = logging.getLogger(__name__)

REVIEWERS: dict[str, tuple[str, str]] = {
    "quality": ("Quality review", texts.QUALITY_REVIEW_PROMPT),
    "risk": ("Risk review", texts.RISK_REVIEW_PROMPT),
    "boundary": ("Scope boundary review", texts.BOUNDARY_REVIEW_PROMPT),
}
"""The review group, by reviewer name: (title in the report, system prompt)."""

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(f"[{_CJK}]|[^\\W_{_CJK}]+")


def progress(stage: str, status: str, **fields: Any) -> None:
    """A `progress` event of the custom stream (a `status` event for clients)."""
    emit("progress", workflow="delivery", stage=stage, status=status, **fields)


def request_words(text: str) -> int:
    """How many words `text` has; each CJK character counts as one."""
    return len(_WORD.findall(text))


def bullets(items: Sequence[str]) -> str:
    """A markdown list, or a line that says nothing is listed."""
    return "\n".join(f"- {' '.join(i.split())}" for i in items if i.strip()) or texts.NOTHING_LISTED


def as_json(value: object) -> str:
    """`value` as indented JSON, for a stage input."""
    return json.dumps(value, ensure_ascii=False, indent=2)


def context_block(summary: str, pins: Sequence[str]) -> str:
    """The conversation's summary and pinned decisions as a prompt block."""
    numbered = "\n".join(f"{n}. {pin}" for n, pin in enumerate(pins, start=1))
    return texts.CONTEXT_INPUT.format(
        summary=summary.strip() or texts.NO_CONTEXT, pins=numbered or texts.NO_CONTEXT
    )


def blocks(verdict: Verdict) -> bool:
    """A review blocks when its verdict is `fail` or it names a blocking issue."""
    return verdict["verdict"] == "fail" or bool(verdict["blocking_issues"])


def review_line(verdict: Verdict) -> str:
    """The report line of one review: its outcome and blocking issues, never its notes."""
    title = REVIEWERS[verdict["reviewer"]][0]
    if not blocks(verdict):
        return texts.REVIEW_PASSED_LINE.format(title=title)
    issues = "; ".join(verdict["blocking_issues"]) or texts.REVIEW_FAILED_WITHOUT_ISSUE
    return texts.REVIEW_BLOCKING_LINE.format(title=title, issues=" ".join(issues.split()))


def render_report(
    report: DeliveryReport, plan: PlanRecord, verdicts: Sequence[Verdict], status: str, limit: int
) -> str:
    """The markdown report: status, summary, deliverables, review findings, open risks."""
    risks = list(report.open_risks)
    if plan["dropped_tasks"]:
        risks.append(texts.DROPPED_TASKS_RISK.format(count=plan["dropped_tasks"], limit=limit))
    findings = [review_line(v) for v in verdicts]
    if report.findings:
        findings.append(bullets(report.findings))
    return texts.REPORT_TEMPLATE.format(
        status=texts.STATUS_BLOCKED if status == "blocked" else texts.STATUS_COMPLETED,
        summary=report.summary.strip() or texts.NOTHING_LISTED,
        deliverables=bullets(report.deliverables or plan["deliverables"]),
        findings="\n".join(findings),
        risks=bullets(risks),
    )


def blocked_for_missing(missing: Sequence[str]) -> dict[str, Any]:
    """End the run `blocked` with a report that says what the request lacks."""
    text = texts.THIN_REQUEST_REPORT.format(missing=bullets(missing))
    return {"workflow_status": "blocked", "workflow_text": text}


class Timed(Protocol):
    """What a stage reads of the steps object whose node it is."""

    stage_timeout: float


StageMethod = TypeVar("StageMethod", bound=Callable[..., Awaitable[dict[str, Any]]])
"""A node method of a steps object: `(self, state) -> update`."""


def stage(
    *, parallel: bool = False, starts: Callable[[Any], bool] = lambda state: True
) -> Callable[[StageMethod], StageMethod]:
    """Make a steps method a stage node (named by the method, labelled in `STAGE_LABELS`):
    `started` progress (on the step `starts` picks, for a stage of several), and any
    exception (a timeout too) logged as a clear user text that ends a sequential stage's
    run `failed`; a parallel reviewer records it for `synthesize_report` (parallel status
    writes would clash). Cancellation propagates, and the run writes nothing."""

    def wrap(body: StageMethod) -> StageMethod:
        name = body.__name__
        label = texts.STAGE_LABELS[name]

        @functools.wraps(body)
        async def node(steps: Timed, state: Mapping[str, Any]) -> dict[str, Any]:
            extra = {"reviewer": state.get("reviewer")} if parallel else {}
            if starts(state):
                progress(name, "started", **extra)
            try:
                return await body(steps, state)
            except TimeoutError:
                timeout = steps.stage_timeout
                logger.warning("delivery stage %s timed out after %ss", name, timeout)
                text = texts.DELIVERY_TIMED_OUT.format(stage=label, seconds=timeout)
            except Exception:
                logger.exception("delivery stage %s failed", name)
                text = texts.DELIVERY_FAILED.format(stage=label)
            progress(name, "failed", **extra)
            if parallel:
                return {"failures": [text]}
            return {"failures": [text], "workflow_status": "failed", "workflow_text": text}

        # the wrapper takes the method's own arguments, so it keeps the method's type
        return cast(StageMethod, node)

    return wrap
