"""The delivery workflow: its builder and what other packages use of it."""

from graphs.delivery.graph import build_delivery_graph
from graphs.delivery.schemas import (
    DeliveryPlan,
    DeliveryReport,
    DeliveryTaskResult,
    PlannedDeliveryTask,
    ReviewVerdict,
)
from graphs.delivery.stages import request_words

__all__ = [
    "DeliveryPlan",
    "DeliveryReport",
    "DeliveryTaskResult",
    "PlannedDeliveryTask",
    "ReviewVerdict",
    "build_delivery_graph",
    "request_words",
]
