"""The relevance judge (`memory.archive.relevance`): a frozen probe over the local model's
embedding of a message decides whether it asks for the user's past; without it, or when
it fails, the score alone decides."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from agent.runtime import relevance_judge
from agent.settings import Settings
from memory import ThreadIds
from memory.archive.archive import open_archive
from memory.archive.embedding import LOCAL_DIMS, LOCAL_MODEL, local_embeddings
from memory.archive.relevance import JUDGE_PATH, judge
from memory.conversations import ConversationMemory
from memory.schema import ThreadState
from memory.storage import ThreadStore
from memory.turns import chat_turn
from tests.conftest import SECRET

REPOSITORY = Path(__file__).resolve().parents[2]
FITTED_ON = {
    "archive": REPOSITORY / "evals" / "archives" / "dev",
    "dialogue": REPOSITORY / "evals" / "dialogues" / "dev",
    "offtopic": REPOSITORY / "evals" / "offtopic",
}


@pytest.mark.parametrize(
    "text",
    [
        "what did you suggest for the holiday dinner?",
        "where did we leave my boat?",
        "remind me what we said about deployments",
        "what's my new salary and when does it start?",
        "你说过五花肉那道菜具体怎么做？",
        "上次我们聊过咖啡吗？",
        "What did Yusuf do before joining?",  # an event in the past, a name
    ],
)
def test_the_judge_passes_a_message_about_the_users_past(text: str) -> None:
    assert judge().asks(local_embeddings().embed_query(text))


@pytest.mark.parametrize(
    "text",
    [
        "reverse a linked list in Python",
        "how does a heat pump work?",
        "what's the capital of Australia?",
        "How do I read a CSV file into a pandas DataFrame?",
        "convert 72 F to C",
        "write a haiku about autumn",
        "怎么用Python读取Excel文件？",
        "帮我写一封请假邮件",
    ],
)
def test_the_judge_stops_a_request_about_the_world(text: str) -> None:
    assert not judge().asks(local_embeddings().embed_query(text))


def test_the_frozen_judge_reads_the_local_models_vectors() -> None:
    fitted = judge()
    assert fitted.model == LOCAL_MODEL and len(fitted.weights) == LOCAL_DIMS
    with pytest.raises(ValueError, match="dimensions"):
        fitted.asks([0.1] * 8)


def test_the_frozen_judge_was_fitted_on_the_data_in_the_repository() -> None:
    # a change to its dev data (or to the examples) must come with a new fit:
    # `python -m evals.relevance_fit`
    fitted = json.loads(JUDGE_PATH.read_text(encoding="utf-8"))["data_sha256"]
    for name, digest in fitted.items():
        source, _, file = name.rpartition("/")
        if source == "realmem":  # outside the repository
            continue
        path = FITTED_ON[source] / file if source else REPOSITORY / "evals" / file
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, name


class Failing(Embeddings):
    def embed_query(self, text: str) -> list[float]:
        raise ConnectionError("the model is gone")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise ConnectionError("the model is gone")


def test_without_the_judge_or_when_it_fails_the_score_alone_decides(
    store: ThreadStore, caplog: pytest.LogCaptureFixture
) -> None:
    # one word in common, in an archive of twenty-one lines: too little for the score
    asked = "what did I tell you about Alma?"
    for n, (judged, found) in enumerate(
        ((local_embeddings(), True), (None, False), (Failing(), False))
    ):
        ids = ThreadIds(SECRET)
        memory = ConversationMemory(store, ids, archive=open_archive(store, ids, judge=judged))
        session = f"s{n}"  # (a session of its own: its archive holds this one line)
        memory.accept_draft(session, "c1")
        for k in range(20):
            memory.write_turn(
                session, "c1", chat_turn(f"Note {k} about the weather", f"Noted {k}.")
            )
        memory.write_turn(session, "c1", chat_turn("My sister Alma lives in Lisbon", "Noted."))
        with caplog.at_level(logging.WARNING):
            lines = memory.recall(session, "c2", asked, ThreadState()).lines
        assert bool(lines) is found
    assert "judging the message failed (ConnectionError)" in caplog.text


def test_agent_embeddings_model_none_turns_the_judge_off() -> None:
    assert relevance_judge(Settings()) is local_embeddings()
    assert relevance_judge(Settings(embeddings_model="local")) is local_embeddings()
    off = Settings(embeddings_model="None")
    assert relevance_judge(off) is None and not off.embeddings_model
