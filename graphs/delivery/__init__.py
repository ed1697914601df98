"""The delivery workflow: its builder and what other packages use of it.

`graph` builds the subgraph, `stages` holds its stage plumbing, `state` its run state,
`prompts` its prompts and texts, `schemas` the structured outputs its stages answer with.
"""

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
