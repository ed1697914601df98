"""The limits of chat memory, in one place."""

from typing import Final

# -- a conversation's memory: recent messages, summary, pins, open questions ---------

MAX_RECENT_MESSAGES: Final = 8
"""Compaction starts once a memory thread holds more messages than this."""
COMPACTION_KEEP_MESSAGES: Final = 4
"""Newest messages (whole turns) that survive a compaction verbatim."""
HARD_MESSAGE_CAP: Final = 16
"""A memory thread never holds more messages than this, even if every compaction fails."""
MAX_SUMMARY_CHARS: Final = 2500
SUMMARY_PREVIEW_CHARS: Final = 240
MAX_PINNED_DECISIONS: Final = 20
MAX_PINNED_DECISION_CHARS: Final = 300
MAX_OPEN_QUESTIONS: Final = 10
MAX_OPEN_QUESTION_CHARS: Final = 300
DELIVERY_REPORT_MAX_CHARS: Final = 8000


def validate_keep(keep: int) -> int:
    """A `COMPACTION_KEEP_MESSAGES` override checked: even, positive, below the recent
    limit (`ValueError` if it would split a turn or leave nothing to fold)."""
    if isinstance(keep, bool) or not isinstance(keep, int):
        raise ValueError(f"compaction keep must be an int, got {type(keep).__name__}")
    if keep <= 0 or keep % 2 or keep >= MAX_RECENT_MESSAGES:
        raise ValueError(
            f"compaction keep must be even, positive and less than {MAX_RECENT_MESSAGES}; "
            f"got {keep}"
        )
    return keep


# -- a session's conversations, a turn's input and its context ----------------------

MAX_CONVERSATIONS: Final = 10
MAX_TITLE_CHARS: Final = 80
MAX_ID_CHARS: Final = 120
MIN_SECRET_CHARS: Final = 32
MAX_MESSAGE_CHARS: Final = 16_000
"""Longest user message accepted as input to a turn."""
DEFAULT_CONTEXT_BUDGET_TOKENS: Final = 16_000
"""Tokens a turn's context may hold (`AGENT_CONTEXT_BUDGET_TOKENS`)."""
MIN_CONTEXT_BUDGET_TOKENS: Final = 4_000
"""The smallest budget accepted: below it the largest pins and summary leave no room."""
CLIP_FLOOR_CHARS: Final = 1_000
"""A recent message clipped to fit the budget keeps at least this many characters."""


# -- long-term memory ---------------------------------------------------------------

MAX_MEMORY_ITEMS: Final = 100
"""Long-term items kept per session; past it the least important, then oldest, go."""
MAX_HISTORY_ITEMS: Final = 100
"""Items a later statement changed, kept as history per session; past it the oldest go."""

MAX_TOMBSTONES: Final = 4 * (MAX_MEMORY_ITEMS + MAX_HISTORY_ITEMS)
"""Forgotten items' ids a session keeps, so that a turn racing a forgetting redacts them:
twice the most one forgetting names (every item a session holds, with room for what a
crashed writer left over), so that even forgetting everything keeps the tombstones of
the forgettings just before it."""
MAX_FORGOTTEN_MARKS: Final = 2 * MAX_TOMBSTONES
"""Marks of forgotten texts a session keeps (an item's text and its quote each leave one)."""

EXTRACTION_BATCH_TURNS: Final = 4
"""Owed turns that make a model extraction due: fewer wait for a batch (or for the
conversation to go idle, compaction, or another conversation of the user)."""
MAX_OWED_IN_ONE_CALL: Final = 8
"""Owed turns sent to the extraction model in one call (a batch)."""
MAX_NEW_MEMORIES_PER_TURN: Final = 8
"""New items one turn may add, each on a distinct quote (a message stating several
facts keeps them all)."""
MAX_MEMORY_TEXT_CHARS: Final = 300
MAX_QUOTE_CHARS: Final = 600
"""The longest quote kept as an item's provenance (the user's words that state it)."""
MIN_IMPORTANCE: Final = 1
MAX_IMPORTANCE: Final = 5

RECALL_MAX_ITEMS: Final = 8
"""Long-term items injected into one turn's context."""
RECALL_MAX_CHARS: Final = 1200
"""Characters of long-term item text injected into one turn's context."""


# -- episodic memory: the archive of past turns -----------------------------------------

DEFAULT_RECALL_TOKENS: Final = 2_000
"""Tokens of earlier conversations' lines a turn's context may hold (`AGENT_RECALL_TOKENS`)."""
DEFAULT_RECALL_DISTANCE: Final = 0.6
"""The farthest (cosine distance) an archived line sharing no subject term with a message
may be from it to be recalled (`AGENT_EMBEDDINGS_MAX_DISTANCE`): a cosine similarity of at
least 0.4, meant for text-embedding-3 models, which rate unrelated sentences lower (not
measured here: the tests reach no model; ada-002 rates everything higher)."""

MAX_SEARCH_QUERY_CHARS: Final = 500
MAX_SEARCH_RESULTS: Final = 50


# -- export and import ----------------------------------------------------------------

MAX_EXPORT_BYTES: Final = 10 * 1024 * 1024
"""The largest export document an import reads (`POST /api/import`'s body limit too)."""
MAX_EXPORT_LINES: Final = 20_000
"""Archived lines an export document may hold."""
MAX_EXPORT_TEXT_CHARS: Final = 64_000
"""The longest message or archived line an export document may hold (four times the
longest message a user may send: an answer can be longer than its question)."""
