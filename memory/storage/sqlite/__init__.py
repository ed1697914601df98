"""SQLite storage: one file (or one in-memory database) holding the run threads' checkpoints,
the memory documents and the long-term items, on one connection; file locks."""
