"""Model calls bounded in time: a call past its bound raises `ModelTimeout` and is never
waited for, so a model that hangs cannot hold a turn (or its conversation's lock)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

MODEL_TIMED_OUT = "the model did not answer within {seconds:g} s"

T = TypeVar("T")


class ModelTimeout(TimeoutError):
    """A model call took longer than its bound (the call is abandoned, never awaited)."""


def bounded_invoke(call: Callable[[], T], timeout: float | None) -> T:
    """`call()` in a worker thread, waited for at most `timeout` seconds: a synchronous call
    cannot be interrupted, so past its bound it is left to finish on its own (its result
    unused) and the caller goes on with `ModelTimeout`. The context (LangGraph's config, the
    stream writer) travels with it."""
    if timeout is None:
        return call()
    done = threading.Event()
    box: dict[str, Any] = {}
    context = contextvars.copy_context()

    def run() -> None:
        try:
            box["value"] = context.run(call)
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="model-call", daemon=True).start()
    if not done.wait(timeout):
        raise ModelTimeout(MODEL_TIMED_OUT.format(seconds=timeout))
    if "error" in box:
        raise box["error"]
    return box["value"]


async def bounded_ainvoke(call: Callable[[], Any], timeout: float | None) -> Any:
    """`await call()`, cancelled past `timeout` seconds (`ModelTimeout`)."""
    if timeout is None:
        return await call()
    try:
        return await asyncio.wait_for(call(), timeout)
    except TimeoutError:
        raise ModelTimeout(MODEL_TIMED_OUT.format(seconds=timeout)) from None
