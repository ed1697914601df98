"""`Archive`: every completed turn's final texts and every superseded summary of a
session, kept so that any past turn can be found again, in any of its conversations
(searches are scoped to one session's key).

Lines are written in the transaction that writes the turn (or the compaction, or the
deletion of the conversation) to memory: the archive is never ahead of or behind the
conversation's memory. A conversation pruned from the ten-conversation list keeps
its lines until the retention sweep; deleting a conversation deletes them with it.

With embeddings (`AGENT_EMBEDDINGS_MODEL`), the user's lines are embedded after the
turn, off the reply path (`embed_lines`, a step of the turn's upkeep), and recall finds
the lines nearest the message's embedding besides the lexical hits. Embeddings are
network calls or a local model's seconds: none is made under a lock or inside a
transaction. A line without a vector (not embedded yet, or its upkeep failed) is still
found lexically.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import ContextThreadPoolExecutor

from memory.analysis import redact_secrets
from memory.archive.embedding import EMBED_BATCH, EMBED_CHARS, QUERY_CHARS, ArchiveEmbeddings
from memory.archive.forgetting import plan_forgetting
from memory.archive.lines import FORGOTTEN, REDACTED, ROLES, ArchivedLine, ArchiveRow, ArchiveWrite
from memory.archive.recall import CANDIDATES, Recall, choose, clears_floor, recall_query
from memory.archive.relevance import by_score, distinct, judge
from memory.archive.repeats import unrepeated
from memory.archive.terms import query_terms
from memory.ids import ThreadIds
from memory.limits import DEFAULT_RECALL_TOKENS
from memory.schema import ChatThreadMessage, ThreadState
from memory.storage import ThreadStore, storage_errors
from memory.storage.documents import InTransaction
from memory.text import clamp

if TYPE_CHECKING:
    from memory.archive.postgres import PostgresArchive
    from memory.archive.postgres_vectors import PostgresVectors
    from memory.archive.sqlite import SqliteArchive
    from memory.archive.sqlite_vectors import SqliteVectors

logger = logging.getLogger(__name__)

FORGET_PAGE = 500
"""Lines read at a time when forgetting (all of the session's are read)."""
RowOf = Callable[..., ArchiveRow]
Embedding = Future[list[float]]
_EMBEDDING = ContextThreadPoolExecutor(4, thread_name_prefix="recall-embedding")
"""Where a message is embedded while its lexical search runs (the local model serialises
its calls, an endpoint's overlap); the context is copied: the call stays in the trace."""
OTHER_DIMS = "the embeddings have %d dimensions, not AGENT_EMBEDDINGS_DIMS=%d: recall is lexical"


@dataclass(eq=False)
class Archive:
    """A session-scoped archive of past lines on one backend; `recall_tokens`
    (`AGENT_RECALL_TOKENS`) is the most tokens recall adds to a context, `embeddings` and
    their `vectors` come together (None: lexical recall only), and `judge` is the local
    model (`LocalEmbeddings`) whose query embedding the relevance judge reads (None: the
    score alone decides whether a message recalls)."""

    backend: SqliteArchive | PostgresArchive
    ids: ThreadIds
    _: KW_ONLY
    recall_tokens: int = DEFAULT_RECALL_TOKENS
    embeddings: ArchiveEmbeddings | None = None
    vectors: SqliteVectors | PostgresVectors | None = None
    judge: Embeddings | None = None

    def __post_init__(self) -> None:
        if (self.embeddings is None) != (self.vectors is None):
            raise ValueError("embeddings and their vectors come together")

    @property
    def embeds(self) -> bool:
        """Whether the user's lines are embedded (each turn leaves that owed)."""
        return self.vectors is not None

    # -- what a transaction writes ------------------------------------------------------

    def turn(
        self,
        session_id: str,
        conversation_id: str,
        title: str,
        messages: Sequence[ChatThreadMessage],
        superseded: ThreadState | None = None,
        *,
        user_text: str | None = None,
        context: Sequence[str] = (),
    ) -> ArchiveWrite:
        """The lines a written turn appends (and the summary it superseded, if any); its
        texts are kept secret-redacted (`user_text`: the user's, redacted already by the
        turn's reading of it). An answer is indexed without what it repeats of the user's
        message and `context`, the texts of the turn's context (`memory.archive.repeats`)."""
        new_row = self._rows(session_id, conversation_id, title)
        rows = [_summary_row(new_row, superseded)]
        said = [
            user_text if m.role == "user" and user_text is not None else redact_secrets(m.text)
            for m in messages
        ]
        given = [text for m, text in zip(messages, said, strict=True) if m.role == "user"]
        given.extend(context)
        for m, text in zip(messages, said, strict=True):
            indexed = unrepeated(text, given) if m.role == "assistant" else None
            rows.append(new_row(m.id, m.role, m.created_at, text, indexed=indexed))
        return ArchiveWrite(rows=[row for row in rows if row is not None])

    def superseded(
        self, session_id: str, conversation_id: str, title: str, old: ThreadState, now: datetime
    ) -> ArchiveWrite:
        """The line a compaction appends: the summary version it replaced."""
        row = _summary_row(self._rows(session_id, conversation_id, title), old, now)
        return ArchiveWrite(rows=[] if row is None else [row])

    def dropped(self, session_id: str, conversation_ids: Iterable[str]) -> ArchiveWrite:
        """What deleting conversations removes: all their lines."""
        keys = [self.ids.conversation_key(session_id, cid) for cid in conversation_ids]
        return ArchiveWrite(drop_conversations=keys)

    def writer(self, change: ArchiveWrite) -> Callable[[Any], None] | None:
        """The step a documents' transaction runs with its cursor (None: nothing to do)."""
        if not change:
            return None
        return lambda cursor: self.backend.write(cursor, change)

    def _rows(self, session_id: str, conversation_id: str, title: str) -> RowOf:
        return functools.partial(
            ArchiveRow,
            self.ids.session_key(session_id),
            self.ids.conversation_key(session_id, conversation_id),
            conversation_id,
            title,
        )

    # -- reads --------------------------------------------------------------------------

    @storage_errors
    def recall(
        self,
        session_id: str,
        conversation_id: str,
        text: str,
        state: ThreadState,
        *,
        exclude_message_ids: Collection[str] = (),
    ) -> Recall:
        """The earlier lines a turn about `text` gets (`memory.archive.recall`), never those
        of `exclude_message_ids` (they stay searchable): nothing unless the message passes
        `memory.archive.relevance` (no lock is held while the message is embedded, beside
        the lexical search); with embeddings, the lines nearest its embedding too (the
        same call when they are the local model's; a failure leaves recall lexical)."""
        if self.recall_tokens <= 0:
            return Recall()
        terms, query = recall_query(text, state)
        if not terms:
            return Recall()
        session_key = self.ids.session_key(session_id)
        roles = ("user", "assistant")
        frequencies = self.backend.frequencies(session_key, terms, roles)
        rare = distinct(terms, frequencies)
        # (with embeddings, a line may be near the message though no word singles it out)
        if not rare and self.embeddings is None:  # no hit could stand out: no search
            return Recall()
        # the message's embedding (tens of ms on the reply path) is computed while the
        # lexical search runs; the judge reads it only when the score is not enough
        judged, dense = self._embedding(clamp(query, QUERY_CHARS))
        hits = self.backend.search(
            session_key, terms, CANDIDATES, neighbours=True, roles=roles, frequencies=frequencies
        )
        if not (rare and by_score(hits, frequencies.total)) and not self._asks(judged):
            return Recall()
        vector = self._embedded_query(dense)
        nearest: list[ArchivedLine] = []
        if vector is not None and self.vectors is not None:
            nearest = self.vectors.nearest(session_key, vector, CANDIDATES)
        if exclude_message_ids:
            hits = [hit for hit in hits if hit.message_id not in exclude_message_ids]
            nearest = [hit for hit in nearest if hit.message_id not in exclude_message_ids]
        return choose(
            hits,
            terms,
            conversation_id=conversation_id,
            state=state,
            max_tokens=self.recall_tokens,
            nearest=nearest,
            max_distance=self.embeddings.max_distance if self.embeddings else 0.0,
            exclude_message_ids=exclude_message_ids,
        )

    def _embedding(self, query: str) -> tuple[Embedding | None, Embedding | None]:
        """The judge's and the dense ranking's embeddings of `query` (None without its
        model), started in worker threads (the local model's C engine and an endpoint's
        request leave the GIL to the search); one model is asked once."""
        dense = self.embeddings.embeddings if self.embeddings is not None else None
        judged = None if self.judge is None else _EMBEDDING.submit(self.judge.embed_query, query)
        if dense is None or dense is self.judge:
            return judged, None if dense is None else judged
        return judged, _EMBEDDING.submit(dense.embed_query, query)

    def _asks(self, judged: Embedding | None) -> bool:
        """Whether the judge says the message asks for the user's past; False without the
        local model, or when it fails (logged by kind: the score alone decides this turn)."""
        if judged is None:
            return False
        try:
            return judge().asks(judged.result())
        except Exception as exc:
            logger.warning("judging the message failed (%s): recall by score", type(exc).__name__)
            return False

    def _embedded_query(self, dense: Embedding | None) -> list[float] | None:
        """The message's embedding for dense ranking, or None (no embeddings; or they
        failed: the failure is logged, by its kind only, and the turn recalls lexically)."""
        if dense is None or self.embeddings is None:
            return None
        try:
            vector = dense.result()
        except Exception as exc:
            logger.warning(
                "embedding the message failed (%s): recall is lexical", type(exc).__name__
            )
            return None
        if len(vector) != self.embeddings.dims:
            logger.warning(OTHER_DIMS, len(vector), self.embeddings.dims)
            return None
        return vector

    def embed_lines(self, session_id: str) -> int:
        """Embed the session's newest lines without a vector of their text (`EMBED_BATCH`)
        in one embeddings call with no lock held, then store the vectors in a short
        transaction of their own (a line deleted or rewritten meanwhile is left out).
        Returns how many were stored (0 without embeddings). Raises StorageError, whatever
        the embeddings raise, and ValueError for vectors of the wrong number or size."""
        if self.embeddings is None or self.vectors is None:
            return 0
        session_key = self.ids.session_key(session_id)
        owed = storage_errors(self.vectors.unembedded)(session_key, EMBED_BATCH)
        if not owed:
            return 0
        texts = [clamp(text, EMBED_CHARS) for _, text in owed]
        vectors = self.embeddings.embeddings.embed_documents(texts)
        if len(vectors) != len(owed) or any(len(v) != self.embeddings.dims for v in vectors):
            raise ValueError("the embeddings returned vectors of another number or size")
        embedded = [(*line, vector) for line, vector in zip(owed, vectors, strict=True)]
        return storage_errors(self.vectors.add)(session_key, embedded)

    @storage_errors
    def search(
        self, session_id: str, query: str, limit: int, *, conversation_id: str | None = None
    ) -> list[ArchivedLine]:
        """The session's lines (summaries included) that share words with `query`, most
        relevant first, of the conversation `conversation_id` only when given; nothing when
        it has no searchable word."""
        terms = query_terms(query)
        if not terms:
            return []
        key = conversation_id and self.ids.conversation_key(session_id, conversation_id)
        hits = self.backend.search(
            self.ids.session_key(session_id), terms, limit, conversation_key=key
        )
        # a line found only by a short word or a lone digit ("1" of "1.5 bar") is noise
        said = [hit for hit in hits if hit.text not in (REDACTED, FORGOTTEN)]
        return [hit for hit in said if clears_floor(hit, terms)][:limit]

    # -- forgetting ---------------------------------------------------------------------

    @storage_errors
    def sweep(self, cutoff: datetime) -> int:
        """Delete the lines of conversations idle since before `cutoff` (every session)."""
        return self.backend.sweep(cutoff)

    def forgetter(self, session_id: str, texts: Sequence[str]) -> InTransaction | None:
        """The step a documents' transaction runs to forget profile items' `texts` in the
        session's archive (`memory.archive.forgetting`); None when no text has a searchable
        word. Every line of the session is read, a page at a time on the transaction's
        cursor (however many lines repeat an item; by their text, not by what the index
        holds of them); the caller holds the session's lock, the one every writer of its
        archived lines holds, so no turn archives a line meanwhile."""
        wanted = [text for text in texts if query_terms(text)]
        if not wanted:
            return None
        session_key = self.ids.session_key(session_id)

        def forget(cursor: Any) -> None:
            after = 0
            while page := self.backend.page(cursor, session_key, after, FORGET_PAGE):
                after = page[-1].id
                for text in wanted:  # each text's plan sees what the earlier ones changed
                    plan = plan_forgetting(page, text)
                    self.backend.rewrite(cursor, session_key, plan)
                    page = plan.applied(page)

        return forget

    def count(self, session_id: str) -> int:
        # (the lines of every role, as the triggers of every write count them)
        return self.backend.frequencies(self.ids.session_key(session_id), (), ROLES).total

    @storage_errors
    def lines(self, session_id: str) -> list[ArchiveRow]:
        """Every line the session has archived, in the order they were (an export)."""
        return self.backend.lines(self.ids.session_key(session_id))


def _summary_row(
    row: RowOf, old: ThreadState | None, now: datetime | None = None
) -> ArchiveRow | None:
    if old is None or not old.summary:
        return None
    return row(
        f"summary-{old.summary_version}",
        "summary",
        now or old.last_compacted_at or old.messages[0].created_at,
        redact_secrets(old.summary),
        covers=f"..{old.covered_until}" if old.covered_until else None,
    )


def open_archive(
    threads: ThreadStore,
    ids: ThreadIds,
    *,
    recall_tokens: int = DEFAULT_RECALL_TOKENS,
    embeddings: ArchiveEmbeddings | None = None,
    judge: Embeddings | None = None,
) -> Archive:
    """The archive on a thread store's database, beside its memory documents (tables
    created on first use), with its vectors when `embeddings` are given. Raises TypeError
    for a dialect with no archive, UnsupportedDatabaseUrl for `embeddings` on a SQLite
    store opened without vectors (`open_thread_store(..., vectors=True)`)."""
    documents: Any = threads.documents
    backend: SqliteArchive | PostgresArchive
    vectors: Any = None
    if documents.dialect == "sqlite":
        from memory.archive.sqlite import SqliteArchive
        from memory.storage.sqlite.connection import SETUP_LOCK_KEY

        if embeddings is not None:  # (only then is sqlite-vec loaded)
            from memory.archive.sqlite_vectors import SqliteVectors

            vectors = SqliteVectors(
                documents.conn, documents.lock, model=embeddings.model, dims=embeddings.dims
            )
        backend = SqliteArchive(documents.conn, documents.lock, vectors)
        with threads.lock(SETUP_LOCK_KEY):
            backend.setup()
            if vectors is not None:
                vectors.setup()
    elif documents.dialect == "postgresql":
        from memory.archive.postgres import PostgresArchive

        backend = PostgresArchive(documents.pool)
        backend.setup()
        if embeddings is not None:
            from memory.archive.postgres_vectors import PostgresVectors

            vectors = PostgresVectors(documents.pool, model=embeddings.model, dims=embeddings.dims)
            vectors.setup()
    else:
        raise TypeError(f"no archive for the {documents.dialect!r} dialect")
    return Archive(
        backend,
        ids,
        recall_tokens=recall_tokens,
        embeddings=embeddings,
        vectors=vectors,
        judge=judge,
    )
