"""`STOP`: LangGraph's `END`, typed for routers that return `Literal[..., "__end__"]`.

`END` is a plain `str` to the type checker, so a router annotated with the destinations
Studio draws (`Literal[...]`, `Command[Literal[...]]`) cannot return it as is. Edges and
path maps use `END`; routers return `STOP`, the same value with the literal type.
"""

from __future__ import annotations

from typing import Literal, cast

from langgraph.graph import END

STOP = cast(Literal["__end__"], END)
"""`END`, typed for `Command[Literal[...]]` and `Literal[...]` routers."""
