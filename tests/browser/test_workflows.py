"""Workflows on the page: the task-list review as a form (approve, edit, respond,
reject), delivery stages in words, and continuing a run a crash stopped."""

from __future__ import annotations

import pytest

from tests.browser.support import (
    BrowserContext,
    Page,
    Route,
    api_chat,
    expect,
    last_answer,
    open_page,
    send,
    titles,
)
from tests.integration.conftest import Server

pytestmark = pytest.mark.integration

TASKLIST = "/tasklist Set up CI. Add linting."


def test_a_task_list_is_approved_from_the_form(page: Page, server: Server) -> None:
    open_page(page, server.url)
    send(page, TASKLIST)
    review = page.locator("#review")
    expect(review).to_be_visible()
    expect(review.locator("h2")).to_have_text("Review the task list")
    titles_in_form = review.locator("[data-field=title]")
    expect(titles_in_form).to_have_count(3)
    assert titles_in_form.nth(0).input_value() == "Set up CI"
    expect(last_answer(page).locator(".progress")).to_contain_text("Planned 3 tasks")

    review.locator("[data-action=approve]").click()

    answer = last_answer(page)
    expect(answer).to_have_attribute("data-state", "done")
    # the summary's Markdown is rendered: headings and lists, not their markup
    expect(answer.locator(".text h3").first).to_have_text("Outcome")
    expect(answer.locator(".text li").filter(has_text="Add linting")).to_have_count(1)
    expect(answer.locator(".text")).not_to_contain_text("###")
    expect(answer.locator(".progress")).to_contain_text("Task 3 of 3 done")
    expect(answer.locator(".memory-notes")).to_contain_text("Saved to memory")
    expect(review).to_be_hidden()
    expect(page.locator("#messages .decision")).to_have_text("You approved the task list.")
    assert titles(page) == ["Set up CI. Add linting."]


def test_edited_tasks_are_what_the_task_list_runs(page: Page, server: Server) -> None:
    open_page(page, server.url)
    send(page, TASKLIST)
    review = page.locator("#review")
    rows = review.locator(".task-row")
    expect(rows).to_have_count(3)
    rows.nth(2).get_by_role("button", name="Remove this task").click()
    rows.nth(1).locator("[data-field=title]").fill("Add linting and formatting")
    rows.nth(1).locator("[data-field=criteria]").fill("ruff passes")
    # a rewritten title drops the criterion generated for the old one
    rows.nth(0).locator("[data-field=title]").fill("Set up CI on every push")
    expect(rows.nth(0).locator("[data-field=criteria]")).to_have_value("")
    approve = review.locator("[data-action=approve]")
    expect(approve).to_have_text("Approve edited tasks")

    approve.click()

    answer = last_answer(page).locator(".text")
    expect(answer.locator("li").filter(has_text="Add linting and formatting")).to_have_count(1)
    expect(answer).not_to_contain_text("Check the result against the goal")


def test_feedback_replans_and_a_rejection_is_not_kept(page: Page, server: Server) -> None:
    open_page(page, server.url)
    send(page, TASKLIST)
    review = page.locator("#review")
    review.locator("[data-action=reject]").click()  # no reason given: the form says so
    expect(review.locator(".form-error").last).to_contain_text("write a few words")

    review.locator("#review-respond").fill("Plan the linting first.")
    review.locator("[data-action=respond]").click()
    expect(page.locator("#messages .decision")).to_have_text(
        "You asked for a new plan: Plan the linting first."
    )
    expect(last_answer(page)).to_have_attribute("data-state", "review")  # a new plan
    expect(review).to_be_visible()

    review.locator("#review-reject").fill("not now")
    review.locator("[data-action=reject]").click()
    expect(last_answer(page).locator(".text")).to_contain_text("not now")
    # one note says what a rejection did; no "not saved" beside it
    notes = last_answer(page).locator(".memory-notes li")
    expect(notes).to_have_count(1)
    expect(notes).to_contain_text("Rejected")
    expect(review).to_be_hidden()
    expect(page.locator("#conversation-list li")).to_have_count(0)  # a rejection is not kept


def test_delivery_stages_are_shown_in_words(page: Page, server: Server) -> None:
    open_page(page, server.url)
    send(page, "/delivery Build a login page with tests and docs.")
    answer = last_answer(page)
    expect(answer.locator(".route")).to_have_text("delivery")
    progress = answer.locator(".progress")
    for words in (
        "Planned 2 tasks for 1 deliverable",  # tasks are the work, deliverables the result
        "2 of 2 tasks done",
        "Quality review passed",
        "Report ready",
    ):
        expect(progress).to_contain_text(words)
    expect(answer.locator(".text h1")).to_have_text("Delivery report")


def test_an_unfinished_run_is_offered_to_continue(
    page: Page, context: BrowserContext, server: Server
) -> None:
    """A conversation the list marks `unfinished` (a crash stopped its workflow: tested
    for real in tests/integration/test_recovery.py) offers to continue it; here the mark
    is added on the way to the page, so the real server refuses, and the page says why."""
    cid = api_chat(context.request, server.url, "nothing stopped here", createConversation=True)

    def mark_unfinished(route: Route) -> None:
        response = route.fetch()
        listing = response.json()
        for entry in listing["conversations"]:
            entry["unfinished"] = True
        route.fulfill(response=response, json=listing)

    page.route("**/api/conversations", mark_unfinished)
    open_page(page, server.url, f"#c={cid}")
    expect(page.locator("#conversation-list .badge")).to_have_text("unfinished")
    expect(page.locator("#recover")).to_be_visible()

    page.click("#recover-button")

    expect(page.locator("#notice-text")).to_contain_text("no unfinished run to recover")
    expect(page.locator("#send")).to_be_visible()
