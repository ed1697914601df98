"""Thread ids: format, stability, secrecy and session separation; the secret."""

from __future__ import annotations

import re
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memory.errors import InvalidInput
from memory.ids import SECRET_FILE_NAME, ThreadIds, load_or_create_secret, resolve_secret

SECRET = "k" * 32
HEX = "[0-9a-f]{64}"


def test_formats() -> None:
    ids = ThreadIds(SECRET)
    assert re.fullmatch(f"chat-conversation:{HEX}:{HEX}", ids.memory_thread("s1", "c1"))
    assert re.fullmatch(f"agent-run:{HEX}:{HEX}", ids.run_thread("s1", "c1"))
    assert re.fullmatch(f"chat-registry:{HEX}", ids.registry_thread("s1"))


def test_stable_across_instances_and_shared_session_prefix() -> None:
    a, b = ThreadIds(SECRET), ThreadIds(SECRET)
    assert a.memory_thread("s1", "c1") == b.memory_thread("s1", "c1")
    session_hash = a.registry_thread("s1").split(":")[1]
    assert a.memory_thread("s1", "c1").split(":")[1] == session_hash
    assert a.run_thread("s1", "c1").split(":")[1] == session_hash


def test_memory_and_run_threads_differ_only_by_prefix() -> None:
    ids = ThreadIds(SECRET)
    memory, run = ids.memory_thread("s1", "c1"), ids.run_thread("s1", "c1")
    assert memory != run
    assert memory.split(":", 1)[1] == run.split(":", 1)[1]


def test_sessions_and_conversations_are_separated() -> None:
    ids = ThreadIds(SECRET)
    threads = {
        ids.memory_thread("s1", "c1"),
        ids.memory_thread("s2", "c1"),
        ids.memory_thread("s1", "c2"),
        # "s1:c1" must not collide with session "s1:c" + conversation "1" style joins
        ids.memory_thread("s1_", "c1"),
    }
    assert len(threads) == 4
    assert (
        ids.memory_thread("s1", "c1").split(":")[2] != ids.memory_thread("s2", "c1").split(":")[2]
    )


def test_secret_changes_every_id_and_no_raw_id_leaks() -> None:
    a, b = ThreadIds(SECRET), ThreadIds("z" * 32)
    assert a.memory_thread("s1", "c1") != b.memory_thread("s1", "c1")
    raw = "session-RAW-123"
    for thread in (a.memory_thread(raw, "conv-RAW-9"), a.run_thread(raw, "conv-RAW-9")):
        assert "RAW" not in thread and raw not in thread
    assert "RAW" not in a.registry_thread(raw)


def test_short_secret_is_rejected_without_echoing_it() -> None:
    with pytest.raises(InvalidInput, match="at least 32") as error:
        ThreadIds("short-secret")
    assert "short-secret" not in str(error.value)
    with pytest.raises(InvalidInput):
        resolve_secret("x" * 31, Path("/nonexistent"))


def test_generated_secret_is_private_and_reused(tmp_path: Path) -> None:
    first = resolve_secret(None, tmp_path / "data")
    path = tmp_path / "data" / SECRET_FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(first) >= 32
    assert resolve_secret(None, tmp_path / "data") == first
    assert resolve_secret("e" * 32, tmp_path / "data") == "e" * 32


def test_loose_secret_file_permissions_are_tightened(tmp_path: Path) -> None:
    path = tmp_path / SECRET_FILE_NAME
    path.write_text("q" * 40)
    path.chmod(0o644)
    assert load_or_create_secret(tmp_path) == "q" * 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_concurrent_first_use_agrees_on_one_secret(tmp_path: Path) -> None:
    with ThreadPoolExecutor(8) as pool:
        secrets = set(pool.map(lambda _: load_or_create_secret(tmp_path), range(16)))
    assert len(secrets) == 1
