"""PostgreSQL storage: `PostgresSaver` over a connection pool, the memory documents and
the long-term items beside it on the same pool, and advisory locks.

Requires the `postgres` extra (`pip install '.[postgres]'`). Every worker process
sharing the database serialises writers through session advisory locks, which the
server releases when a worker's connection ends (a killed worker leaves no lock).
"""
