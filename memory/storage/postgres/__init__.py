"""PostgreSQL storage (the `postgres` extra): `PostgresSaver`, the memory documents and the
long-term items on one pool, and advisory locks, which die with a worker's connection."""
