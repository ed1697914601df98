"""The delivery's prompts and the texts the user reads (the report, failures). Stage
inputs wrap each part in a tag (`<request>`, `<plan>`, …) so that a model, and the
offline model's handlers (agent/offline/delivery.py), can tell the parts apart.
"""

# -- stage prompts ----------------------------------------------------------------------

PLANNER_PROMPT = """\
You plan a delivery: a piece of work the user wants done, ending in a report.
Name the deliverables, split the work into at most {max_tasks} concrete tasks (each one a \
sub-agent can carry out alone, in order), and list the risks. Respect the pinned \
decisions. Only when the request cannot be acted on at all, leave the tasks empty and \
say in missing_information what the user must add."""

TASK_AGENT_PROMPT = """\
You are a sub-agent carrying out one task of a delivery plan. Work on this task only, \
and use a tool whenever it gives an exact answer (arithmetic, the current time). \
Answer with the work product itself: concise, concrete, ready to use."""

TASK_RESULT_PROMPT = """\
Report the result of task {number} now: the outcome (the work product), whether the \
task is done, and any open issues that remain."""

QUALITY_REVIEW_PROMPT = """\
You are the quality reviewer of a delivery. Check that every task result is complete, \
correct and meets the request. A result that is missing, wrong or unusable is a \
blocking issue; smaller remarks are notes."""

RISK_REVIEW_PROMPT = """\
You are the risk reviewer of a delivery. Look for what could do harm: destructive \
changes to production systems or data, missing tests or backups, security and privacy \
problems. A risk that must be resolved before the delivery is accepted is a blocking \
issue; the rest are notes."""

BOUNDARY_REVIEW_PROMPT = """\
You are the scope boundary reviewer of a delivery. Check that the work stays within \
the request and the pinned decisions: nothing asked for is left out, nothing unasked \
is added, no pinned decision is broken. A broken decision or a change of scope the \
user did not ask for is a blocking issue; the rest are notes."""

REPORT_PROMPT = """\
You write the final report of a delivery for the user. From the request, the plan, the \
task results and the reviews, write a short summary of what was delivered, the list \
of deliverables with their state, your findings, and the risks that remain open. The \
status is decided already; do not contradict it."""

# -- stage inputs -------------------------------------------------------------------------

CONTEXT_INPUT = """\
<context>
Conversation summary: {summary}
Pinned decisions:
{pins}
</context>"""

NO_CONTEXT = "(none)"

PLAN_INPUT = """\
<request>
{request}
</request>

{context}"""

TASK_INPUT = """\
<request>
{request}
</request>

{context}

<task number="{number}" of="{total}">
{title}
{description}
</task>

<earlier_results>
{earlier}
</earlier_results>"""

REVIEW_INPUT = """\
<reviewer>{reviewer}</reviewer>

<request>
{request}
</request>

{context}

<plan>
{plan}
</plan>

<results>
{results}
</results>"""

REPORT_INPUT = """\
<request>
{request}
</request>

<plan>
{plan}
</plan>

<results>
{results}
</results>

<reviews>
{reviews}
</reviews>

<status>{status}</status>"""

# -- the report ---------------------------------------------------------------------------

REPORT_TEMPLATE = """\
# Delivery report

{status}

## Summary

{summary}

## Deliverables

{deliverables}

## Review findings

{findings}

## Open risks

{risks}"""

STATUS_COMPLETED = "**Status:** completed"
STATUS_BLOCKED = (
    "**Status:** blocked: a reviewer found a blocking issue. Resolve it and run the delivery again."
)
NOTHING_LISTED = "- None."
REVIEW_PASSED_LINE = "- **{title}:** passed."
REVIEW_BLOCKING_LINE = "- **{title}:** blocking: {issues}"
REVIEW_FAILED_WITHOUT_ISSUE = "the reviewer failed the delivery without naming an issue"
DROPPED_TASKS_RISK = (
    "{count} planned task(s) beyond the limit of {limit} were not run; ask for them in a "
    "follow-up delivery."
)

THIN_REQUEST_REPORT = """\
# Delivery blocked: the request needs more detail

The delivery did not start: the request is too thin to act on.

## What is missing

{missing}

Send it again as `/delivery <what to deliver, for whom, and how it will be checked>`."""

MISSING_DELIVERABLE = (
    "What should be delivered: describe the outcome in at least {words} words "
    "(for example “a migration plan for the orders table with a rollback step”)."
)

# -- failures (never the raw error) ------------------------------------------------------

STAGE_LABELS = {
    "load_request": "reading the request",
    "plan_delivery": "planning",
    "execute_tasks": "running the tasks",
    "review_delivery": "reviewing",
    "synthesize_report": "writing the report",
}

DELIVERY_FAILED = (
    "The delivery could not finish: {stage} failed. Nothing was saved to this "
    "conversation; please try again."
)
DELIVERY_TIMED_OUT = (
    "The delivery could not finish: {stage} took longer than {seconds:g} seconds. "
    "Nothing was saved to this conversation; please try again, perhaps with a smaller request."
)
