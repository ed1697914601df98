"""The write gate: explicit, reusable, no secrets, duplicates, conflicts, and the caps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.limits import MAX_MEMORY_ITEMS, MAX_NEW_MEMORIES_PER_TURN
from memory.longterm import Extraction, MemoryItem, Proposal, WritePlan, extract, plan_write
from memory.longterm.gate import REFUSED_INFERRED, grounded, revoked_by
from memory.longterm.items import MemoryKind, Source, normalise
from memory.longterm.rules import subject_of

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def item(
    text: str,
    *,
    kind: MemoryKind = "preference",
    importance: int = 3,
    age_days: int = 0,
    item_id: str | None = None,
) -> MemoryItem:
    moment = NOW - timedelta(days=age_days)
    return MemoryItem(
        id=item_id or f"m_{abs(hash((text, age_days))) % 10**12:012d}",
        kind=kind,
        text=text,
        importance=importance,
        created_at=moment,
        updated_at=moment,
        key=normalise(text),
        subject=subject_of(text),
    )


def plan(current: list[MemoryItem], text: str, *, source: Source = "rules") -> WritePlan:
    return plan_write(
        current,
        extract(text),
        user_text=text,
        conversation_id="c1",
        now=NOW,
        source=source,
    )


def test_a_new_statement_is_added_with_its_conversation() -> None:
    result = plan([], "I prefer Chinese answers")
    assert [(i.kind, i.text, i.conversation_id) for i in result.added] == [
        ("preference", "I prefer Chinese answers", "c1")
    ]
    assert result.remembered == ("I prefer Chinese answers",)


def test_a_duplicate_refreshes_and_adds_nothing() -> None:
    old = item("I'm vegetarian", kind="fact", age_days=10)
    result = plan([old], "i am  vegetarian!")
    assert result.added == ()
    assert [(i.id, i.updated_at) for i in result.refreshed] == [(old.id, NOW)]
    assert result.refreshed[0].created_at == old.created_at


def test_a_statement_on_the_same_subject_supersedes() -> None:
    chinese = item("I prefer Chinese answers")
    result = plan([chinese], "Always answer in English from now on")
    assert result.retired == (chinese.id,)
    assert [i.text for i in result.added] == ["Always answer in English from now on"]


def test_the_opposite_of_a_statement_supersedes_it() -> None:
    likes = item("I like coffee")
    result = plan([likes], "I don't like coffee")
    assert result.retired == (likes.id,)
    assert [i.kind for i in result.added] == ["boundary"]


def test_a_revocation_retires_only_what_it_is_about() -> None:
    chinese, cats = item("I prefer Chinese answers"), item("I like cats")
    result = plan([chinese, cats], "I no longer want Chinese, use English")
    assert result.retired == (chinese.id,)
    assert [i.text for i in result.added] == ["Use English"]
    assert revoked_by("forget that I like dogs", [chinese, cats]) == []


def test_secrets_and_one_off_requests_are_refused_with_a_reason() -> None:
    # the rules read the whole text for secrets before any split: nothing is proposed
    assert extract("Remember that my password is hunter2") == Extraction()
    result = plan_write(
        [],
        Extraction((Proposal("fact", "my password is hunter2", 5),)),
        user_text="my password is hunter2",
        conversation_id=None,
        now=NOW,
        source="explicit",
    )
    assert result.added == () and "password" in result.refused[0].reason
    explicit = plan_write(
        [],
        Extraction((Proposal("preference", "translate this into English", 3),)),
        user_text="translate this into English",
        conversation_id=None,
        now=NOW,
        source="explicit",
    )
    assert explicit.added == () and "one-off" in explicit.refused[0].reason


def test_a_model_proposal_must_be_grounded_in_the_users_words() -> None:
    said = "Call me Sam. I work nights."
    proposals = (
        Proposal("fact", "User's name is Sam", 4),  # restates: kept
        Proposal("fact", "User is probably a nurse", 3),  # inferred: refused
    )
    result = plan_write(
        [], Extraction(proposals), user_text=said, conversation_id="c", now=NOW, source="model"
    )
    assert [i.text for i in result.added] == ["User's name is Sam"]
    assert [r.reason for r in result.refused] == [REFUSED_INFERRED]
    assert grounded("I work nights", said) and not grounded("User likes jazz", said)


def test_model_retirements_name_existing_items_only() -> None:
    old = item("I prefer Chinese answers", item_id="m_old")
    result = plan_write(
        [old],
        Extraction(retire=("m_old", "m_unknown")),
        user_text="forget the Chinese",
        conversation_id="c",
        now=NOW,
        source="model",
    )
    assert result.retired == ("m_old",)


def test_at_most_two_new_items_per_turn() -> None:
    text = "I like cats. I like jazz. I like tea. I like chess."
    result = plan([], text)
    assert len(result.added) == MAX_NEW_MEMORIES_PER_TURN
    assert len(result.refused) == 2


def test_past_the_session_limit_the_least_important_then_oldest_go() -> None:
    current = [
        item(f"I like topic number {n}", importance=5 if n % 2 else 3, age_days=n, item_id=f"m_{n}")
        for n in range(MAX_MEMORY_ITEMS)
    ]
    result = plan(current, "I prefer window seats")
    assert len(result.added) == 1
    # the oldest of the least important (importance 3, even numbers) goes
    assert result.evicted == ("m_98",)
    assert MAX_MEMORY_ITEMS - len(result.evicted) + len(result.added) == MAX_MEMORY_ITEMS


def said_in(text: str, conversation_id: str | None, age_days: int = 0) -> MemoryItem:
    return item(text, kind="fact", age_days=age_days).model_copy(
        update={"conversation_id": conversation_id}
    )


def test_a_move_new_job_or_manager_supersedes_by_subject() -> None:
    austin = item("I live in Austin", kind="fact")
    result = plan([austin], "We relocated from Austin to Denver.")
    assert result.retired == (austin.id,)
    assert [i.text for i in result.added] == ["We relocated from Austin to Denver."]
    old_boss = item("My manager is Lucy Chen.", kind="fact")
    result = plan([old_boss], "My new manager is Tom Becker.")
    assert result.retired == (old_boss.id,) and len(result.added) == 1
    shanghai = item("我住在上海。", kind="fact")
    result = plan([shanghai], "我搬到深圳了。")
    assert result.retired == (shanghai.id,) and len(result.added) == 1


def test_revocations_retire_by_subject_words_or_the_newest_said_here() -> None:
    veggie, jazz = item("I'm vegetarian", kind="fact"), item("I like jazz")
    result = plan([veggie, jazz], "I'm no longer vegetarian.")
    assert result.retired == (veggie.id,) and result.added == ()
    coffee = item("我每天喝咖啡", kind="fact")
    assert plan([coffee, jazz], "我现在不喝咖啡了。").retired == (coffee.id,)
    running = item("我喜欢跑步")
    assert plan([running, jazz], "我最近不跑步了。").retired == (running.id,)
    older, newer = said_in("I bike to work", "c1", age_days=2), said_in("I have a cat", "c1")
    elsewhere = said_in("I play chess", "c2")
    assert plan([older, newer, elsewhere], "Scratch that.").retired == (newer.id,)


def test_a_model_proposal_stands_only_when_the_user_stated_something() -> None:
    for said, proposed in [
        ("What do you remember about me?", "The user wants to know what is remembered"),
        ("> I always answer emails within an hour.", "I always answer emails within an hour"),
        ("My wife hates mushrooms.", "My wife hates mushrooms"),
        ("please keep going", "Keep going"),
    ]:
        result = plan_write(
            [],
            Extraction((Proposal("fact", proposed, 3),)),
            user_text=said,
            conversation_id="c1",
            now=NOW,
            source="model",
        )
        assert result.added == () and len(result.refused) == 1
    kept = plan_write(
        [],
        Extraction((Proposal("fact", "I live in Porto", 4),)),
        user_text="Home for me is Porto these days, I live in Porto",
        conversation_id="c1",
        now=NOW,
        source="model",
    )
    assert [i.text for i in kept.added] == ["I live in Porto"]
