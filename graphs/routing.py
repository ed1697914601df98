"""`STOP`: LangGraph's `END` typed as `Literal["__end__"]` (`END` is a plain `str`), for
routers annotated with the destinations Studio draws; edges and path maps use `END`.
"""

from __future__ import annotations

from typing import Literal, cast

from langgraph.graph import END

STOP = cast(Literal["__end__"], END)
"""`END`, typed for `Command[Literal[...]]` and `Literal[...]` routers."""
