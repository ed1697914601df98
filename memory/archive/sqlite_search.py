"""One search of the SQLite archive in one statement: a session's ranked lines, each with
the lines said around it in its conversation (read back by `memory.archive.lines.read_line`).

The ranking is the caller's (FTS5's `bm25()`, sqlite-vec's distance): every ranking
gets the same neighbours the same way."""

from __future__ import annotations


def _near(direction: str, pick: str, role: str, line: str = "h.id") -> str:
    # the nearest line of `role` before or after `line` in a hit's conversation: one
    # seek of the (conversation_key, role, id) index
    return (
        f"(SELECT {pick}(q.id) FROM archive_lines q WHERE q.conversation_key ="
        f" h.conversation_key AND q.role = '{role}' AND q.id {direction} {line})"
    )


_COLUMNS = "l.id, l.conversation_id, l.title, l.message_id, l.role, l.created_at, l.text"


def search_sql(ranked: str) -> str:
    """The statement of a search ranked by `ranked`: a query of `(id, score, distance,
    mark)`, the candidate lines best first (a higher `score`, then a lower `distance`),
    whose parameters come first; then the session key (a candidate of another session
    is never read) and, twice, whether to read each hit's neighbours."""
    return f"""
WITH ranked AS ({ranked}), hits AS MATERIALIZED (
  SELECT {_COLUMNS}, l.conversation_key, r.score, r.distance, r.mark
  FROM ranked r JOIN archive_lines l ON l.id = r.id AND l.session_key = ?
), nearest AS MATERIALIZED (
  SELECT h.*, {_near("<", "MAX", "user")} AS pu, {_near("<", "MAX", "assistant")} AS pa,
         {_near(">", "MIN", "user")} AS nu, {_near(">", "MIN", "assistant")} AS na
  FROM hits h WHERE ?
  UNION ALL SELECT h.*, NULL, NULL, NULL, NULL FROM hits h WHERE NOT ?
), near AS MATERIALIZED (
  SELECT h.*, {_near(">", "MIN", "user", "h.nu")} AS nl FROM nearest h
)
SELECT h.id, h.conversation_id, h.title, h.message_id, h.role, h.created_at, h.text, h.score,
       p.id, p.message_id, p.role, p.created_at, p.text,
       n.id, n.message_id, n.role, n.created_at, n.text,
       pu.id, pu.message_id, pu.role, pu.created_at, pu.text,
       nu.id, nu.message_id, nu.role, nu.created_at, nu.text,
       nl.id, nl.message_id, nl.role, nl.created_at, nl.text,
       h.distance, h.mark
FROM near h
LEFT JOIN archive_lines p ON p.id = max(coalesce(h.pu, 0), coalesce(h.pa, 0))
LEFT JOIN archive_lines n ON n.id = min(coalesce(h.nu, h.na), coalesce(h.na, h.nu))
LEFT JOIN archive_lines pu ON pu.id = h.pu
LEFT JOIN archive_lines nu ON nu.id = h.nu
LEFT JOIN archive_lines nl ON nl.id = h.nl
ORDER BY h.score DESC, h.distance, h.id DESC
"""


MARK_COLUMN = 34
"""Where a row of `search_sql` holds its candidate's `mark`."""
