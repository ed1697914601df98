"""Package exports imported on first use: importing one module of a package (its errors,
its limits) then does not import all of it. The HTTP app starts in a fraction of a second
this way, before any model or storage stack is loaded."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, Iterable[str]]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports each exported name from its
    module (`exports`: module -> names) the first time it is read, then keeps it."""
    modules = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(importlib.import_module(package), name, value)
        return value

    return __getattr__
