"""Model loading: `ChatOpenAI` for any OpenAI-compatible endpoint, or the offline model."""

from __future__ import annotations

import functools
import logging
import sys
from typing import TYPE_CHECKING

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel, BaseLanguageModel
from langchain_core.messages.utils import count_tokens_approximately
from pydantic import SecretStr

from agent.offline import OfflineChatModel
from agent.settings import Settings, SettingsError
from graphs.structured import token_limit
from memory.archive.embedding import LOCAL, LocalEmbeddings
from memory.context import TokenCounter
from memory.errors import InvalidInput

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

# langchain-openai (and the openai client under it) is imported where a model or
# embeddings client is built: importing the app, the graph or the offline agent stays cheap

logger = logging.getLogger(__name__)


LOCAL_NOT_SERVED = (
    "AGENT_MODEL=local is served by the agent it runs in: open a ChatAgent (or "
    "agent.runtime.assemble), or point settings at the server with agent.local_model"
)
NO_KEY = SecretStr("unused")
"""What is sent as the key to an endpoint that needs none (a local server takes any)."""


def chat_openai(
    base_url: str | None,
    model: str,
    *,
    api_key: SecretStr | None = None,
    temperature: float | None = None,
    timeout: float,
    max_retries: int,
    max_tokens: int | None = None,
) -> ChatOpenAI:
    """`ChatOpenAI` on an OpenAI-compatible endpoint (`base_url`; None: OpenAI's), the client of
    every model the agent builds; `max_tokens` bounds an answer (structured calls set their own)."""
    import openai
    from langchain_openai import ChatOpenAI

    limit = token_limit(base_url, max_tokens) if max_tokens is not None else {}
    return ChatOpenAI(
        model=model,
        api_key=api_key or NO_KEY,
        base_url=base_url,
        temperature=temperature,
        timeout=timeout,
        max_retries=max_retries,
        **limit,
        # an async client of the model's own: langchain-openai shares one per base URL
        # across the process, and its connections belong to the event loop that opened
        # them, which a closed agent's loop takes with it
        http_async_client=openai.DefaultAsyncHttpxClient(timeout=timeout),
    )


def _on_endpoint(
    settings: Settings,
    model: str,
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> BaseChatModel:
    """`model` on the settings' endpoint, or the offline model without one."""
    if settings.local:  # "local" is no model name an endpoint knows
        raise SettingsError(LOCAL_NOT_SERVED)
    if settings.offline:
        return OfflineChatModel()
    return chat_openai(
        settings.openai_base_url,
        model,
        api_key=settings.openai_api_key,
        temperature=temperature,
        timeout=settings.request_timeout,
        max_retries=settings.max_retries,
        max_tokens=max_tokens,
    )


def load_chat_model(settings: Settings) -> BaseChatModel:
    """The chat model: `ChatOpenAI(AGENT_MODEL)`, or the offline model without an endpoint."""
    if settings.offline and not settings.local:  # local unserved: _on_endpoint refuses it
        logger.info("neither OPENAI_API_KEY nor OPENAI_BASE_URL is set: using the offline model")
    return _on_endpoint(settings, settings.model, max_tokens=settings.answer_tokens)


def load_compaction_model(settings: Settings) -> BaseChatModel:
    """The compaction model: `AGENT_COMPACTION_MODEL` (default `AGENT_MODEL`) at temperature 0."""
    return _on_endpoint(settings, settings.compaction_model or settings.model, temperature=0)


def at_temperature_zero(model: BaseChatModel) -> BaseChatModel:
    """A copy of `model` with temperature 0 where the model has a temperature."""
    if "temperature" in type(model).model_fields:
        return model.model_copy(update={"temperature": 0})
    return model


EMBEDDINGS_NEED_AN_ENDPOINT = (
    "AGENT_EMBEDDINGS_MODEL is set, but neither OPENAI_API_KEY nor OPENAI_BASE_URL (a local "
    "OpenAI-compatible endpoint) is: the offline model has no embeddings; set one, or unset "
    "AGENT_EMBEDDINGS_MODEL to rank memory lexically"
)


def load_embeddings(settings: Settings) -> Embeddings:
    """`OpenAIEmbeddings(AGENT_EMBEDDINGS_MODEL)` on the configured endpoint, or the
    packaged local model for `local` (it runs offline too). Texts are sent as they are:
    checking their length would tokenise them with tiktoken, which downloads its
    encodings on first use, and memory items are short."""
    if not settings.embeddings_model:
        raise ValueError("AGENT_EMBEDDINGS_MODEL is not set")
    if settings.embeddings_model == LOCAL:
        return LocalEmbeddings()
    if settings.offline:  # the offline model has no embeddings: say so before anything opens
        raise InvalidInput(EMBEDDINGS_NEED_AN_ENDPOINT)
    key = settings.openai_api_key or NO_KEY
    from langchain_openai import OpenAIEmbeddings

    return OpenAIEmbeddings(
        model=settings.embeddings_model,
        openai_api_key=key,
        openai_api_base=settings.openai_base_url,
        request_timeout=settings.request_timeout,
        max_retries=settings.max_retries,
        check_embedding_ctx_length=False,
    )


RECENT_VECTORS = 64
"""Texts whose vectors `RecentEmbeddings` keeps (a turn asks for one text up to three
times within a second or so: a few turns at once fit)."""


class RecentEmbeddings(Embeddings):
    """`embeddings` keeping the vectors of the texts embedded one at a time lately.

    A turn's message is embedded up to three times (long-term recall, the archive's recall,
    and the upkeep storing its archived line's vector), two of them on the reply path: kept
    here, it is sent once; a batch of several texts is sent as it is. OpenAI's query and
    document vectors are one (`embed_query` is `embed_documents` of one text), so both share
    what is kept. LangChain's `CacheBackedEmbeddings` would keep every vector, unbounded.
    """

    def __init__(self, embeddings: Embeddings, size: int = RECENT_VECTORS) -> None:
        self.embeddings = embeddings
        # thread-safe and bounded; a failed request is not kept (the next one retries)
        self._one = functools.lru_cache(maxsize=size)(self._embed_one)

    def _embed_one(self, text: str) -> tuple[float, ...]:
        return tuple(self.embeddings.embed_documents([text])[0])

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if len(texts) == 1:
            return [list(self._one(texts[0]))]
        return self.embeddings.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return list(self._one(text))


def token_counter(model: BaseChatModel | None) -> TokenCounter:
    """The model's own token counter where it has one that runs locally, else LangChain's
    `count_tokens_approximately`: `ChatOpenAI` counts with tiktoken and the base class
    with a GPT-2 tokenizer, both downloaded on first use, and nothing may download at
    run time."""
    # a ChatOpenAI exists only once its module is loaded: recognising one imports nothing
    openai = sys.modules.get("langchain_openai")
    if model is None or (openai is not None and isinstance(model, openai.ChatOpenAI)):
        return count_tokens_approximately
    own = type(model).get_num_tokens_from_messages
    if own is BaseLanguageModel.get_num_tokens_from_messages or own is (
        BaseChatModel.get_num_tokens_from_messages
    ):
        return count_tokens_approximately
    return lambda messages: model.get_num_tokens_from_messages(list(messages))
