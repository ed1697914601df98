"""Private files: conversations and the session secret are readable by this user only."""

from __future__ import annotations

from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def make_private_dir(path: Path) -> None:
    """Create `path` and every missing parent with mode 0700 (existing ones are left)."""
    missing = [part for part in (path, *path.parents) if not part.exists()]
    for directory in reversed(missing):
        directory.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
