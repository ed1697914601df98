"""The delivery workflow: its builder and what other packages use of it.

`graph` builds the subgraph, `state` holds its run state, `prompts` its prompts and
texts, `schemas` the structured outputs its stages answer with.
"""

from graphs.delivery.graph import build_delivery_graph, request_words
from graphs.delivery.schemas import (
    DeliveryPlan,
    DeliveryReport,
    DeliveryTaskResult,
    PlannedDeliveryTask,
    ReviewVerdict,
)

__all__ = [
    "DeliveryPlan",
    "DeliveryReport",
    "DeliveryTaskResult",
    "PlannedDeliveryTask",
    "ReviewVerdict",
    "build_delivery_graph",
    "request_words",
]
