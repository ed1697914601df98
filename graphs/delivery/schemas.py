"""The delivery's structured outputs: the plan, a task's result, a verdict, the report
(their field descriptions are part of the prompt)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class PlannedDeliveryTask(BaseModel):
    """One task of a delivery plan, for one sub-agent."""

    title: str = Field(description="A short imperative title.")
    description: str = Field(default="", description="What to do and what done looks like.")


class DeliveryPlan(BaseModel):
    """The plan of a delivery."""

    deliverables: list[str] = Field(description="What the user will receive.")
    tasks: list[PlannedDeliveryTask] = Field(description="The tasks, in order.")
    risks: list[str] = Field(default_factory=list, description="What could go wrong.")
    missing_information: list[str] = Field(
        default_factory=list,
        description="Only when the request cannot be acted on: what the user must add.",
    )


class DeliveryTaskResult(BaseModel):
    """What a task's sub-agent reports."""

    outcome: str = Field(description="The work product of the task.")
    done: bool = Field(description="Whether the task is accomplished.")
    open_issues: list[str] = Field(default_factory=list, description="What remains open.")


class ReviewVerdict(BaseModel):
    """One reviewer's verdict on the delivery."""

    verdict: Literal["pass", "fail"] = Field(description="pass, or fail when anything blocks.")
    blocking_issues: list[str] = Field(
        default_factory=list, description="Issues that must be resolved before acceptance."
    )
    notes: list[str] = Field(default_factory=list, description="Remarks that do not block.")


class DeliveryReport(BaseModel):
    """The content of the final report; the graph renders it as markdown."""

    summary: str = Field(description="What was delivered, in a few sentences.")
    deliverables: list[str] = Field(description="Each deliverable with its state.")
    findings: list[str] = Field(default_factory=list, description="Findings worth reading.")
    open_risks: list[str] = Field(default_factory=list, description="Risks that remain open.")
