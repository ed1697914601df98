"""The dialogue set follows its rules (evals/dialogue.py): two splits of long two-speaker
dialogues in English and Chinese, every question type in each split, evidence that the
strict rule finds in its own text but not in a question nor, by chance, in a large
unrelated context."""

from __future__ import annotations

from evals.crowded import history, scenario_turns
from evals.dialogue import Context, Dialogue, content_words, load_split, turn_text

SPLITS = ("dev", "heldout")


def every() -> dict[str, list[Dialogue]]:
    return {split: load_split(split) for split in SPLITS}


def test_both_splits_mix_languages_kinds_and_question_types() -> None:
    dialogues = every()
    assert sum(len(d) for d in dialogues.values()) >= 6
    for found in dialogues.values():
        assert {d.language for d in found} == {"en", "zh"}
        assert {d.kind for d in found} == {"casual", "work"}
        assert {q.type for d in found for q in d.questions} == {"single", "multi_hop", "temporal"}
        for dialogue in found:
            assert len(dialogue.sessions) >= 8
            for session in dialogue.sessions:
                assert {m.speaker for m in session.messages} == set(dialogue.speakers)
    names = [d.name for found in dialogues.values() for d in found]
    assert len(names) == len(set(names))


def test_evidence_is_found_in_itself_and_never_in_its_question() -> None:
    for found in every().values():
        for dialogue in found:
            messages = dialogue.messages
            for question in dialogue.questions:
                asked = Context(question.question)
                for evidence in question.evidence:
                    text = messages[evidence].text
                    assert Context(text).has(text), (dialogue.name, evidence)
                    assert not asked.has(text), (dialogue.name, question.id)


def test_a_large_unrelated_context_does_not_pass_by_chance() -> None:
    dialogues = [d for found in every().values() for d in found]
    for dialogue in dialogues:
        others = "\n".join(
            m.text for d in dialogues if d is not dialogue for s in d.sessions for m in s.messages
        )
        context = Context(others)
        for question in dialogue.questions:
            for evidence in question.evidence:
                assert not context.has(dialogue.messages[evidence].text), evidence


def test_the_rule_reads_word_pairs_and_chinese_character_pairs() -> None:
    assert content_words("The deploy is on Friday") == ["deploy", "friday"]
    assert content_words("我在成都买了房子") == ["成", "都", "买", "房", "子"]
    evidence = "We moved the release to the 3rd of June because of the audit."
    assert Context(f"noise. {evidence} more noise").has(evidence)
    assert not Context("release audit june moved").has(evidence)  # same words, no pairs
    assert Context("…装修预算大概二十五万…").has("硬装大概二十五万")
    assert not Context("二十 五万 大概").has("硬装大概二十五万，家具另算。")


def test_a_crowd_surrounds_every_dialogue_session_and_keeps_every_turn() -> None:
    dialogues = load_split("dev")
    crowd = scenario_turns("dev")
    turns = history(dialogues, crowd)
    said = sum(len(s.messages) for d in dialogues for s in d.sessions)
    assert len(turns) == said + len(crowd)
    # each dialogue session's messages stay together and in order, after some crowd turns
    first = dialogues[0].sessions[0]
    conversation = f"{dialogues[0].name}-{first.id}"
    at = [i for i, turn in enumerate(turns) if turn.conversation == conversation]
    assert at == list(range(at[0], at[0] + len(first.messages))) and at[0] > 0
    assert turns[at[0]].text == turn_text(first, 0, first.messages[0])
    # the sessions of different dialogues alternate: no dialogue is played all at once
    names = {d.name for d in dialogues}
    owners = [t.conversation.rsplit("-", 1)[0] for t in turns]
    order = [owner for owner in owners if owner in names]
    assert order[: len(first.messages)] == [dialogues[0].name] * len(first.messages)
    assert order[len(first.messages)] == dialogues[1].name
