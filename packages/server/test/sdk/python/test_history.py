"""Items (pages), turns, turn items, artifacts (list / retrieve / content / delete)."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai.pagination import SyncConversationCursorPage
from openai.types.beta.agent_session_item import AgentSessionItem

from support import MODEL, NONE_ENV, StrictOpenAI, settled, shell


@pytest.fixture(scope="module")
def history(client: StrictOpenAI) -> dict[str, Any]:
    """A session with three turns: a reply, a shell command that writes a file, another reply."""
    s = client.beta.agents.sessions.create(environment=NONE_ENV, agent={"model": MODEL}, input="Reply with exactly: one")
    settled(client, s.id)
    for text in (shell("printf 'hello artifact' > report.txt", "written"), "Reply with exactly: three"):
        with client.beta.agents.sessions.stream(s.id, input=text) as st:
            st.until_done()
    turns = list(client.beta.agents.sessions.turns.list(s.id, order="asc"))
    return {"sid": s.id, "turns": turns}


def text_of(item: Any) -> str:
    return "".join(getattr(c, "text", "") for c in item.content) if item.type == "message" else ""


def test_items_pages(client: StrictOpenAI, history: dict[str, Any]) -> None:
    sid = history["sid"]
    everything = client.beta.agents.sessions.items.list(sid, order="asc", limit=100)
    assert everything.has_more is False
    all_ids = [i.id for i in everything.data]
    assert len(all_ids) == len(set(all_ids)) >= 7
    # Small pages, followed by the SDK's cursor (after = the last item's id): same items, same order.
    paged = list(client.beta.agents.sessions.items.list(sid, order="asc", limit=2))
    assert [i.id for i in paged] == all_ids
    first = client.beta.agents.sessions.items.list(sid, order="asc", limit=2)
    assert len(first.data) == 2 and first.has_more is True
    assert [i.id for i in first.get_next_page().data] == all_ids[2:4]
    # Default order is newest first.
    assert [i.id for i in client.beta.agents.sessions.items.list(sid, limit=100)] == list(reversed(all_ids))
    said = [(i.role, text_of(i)) for i in everything.data if i.type == "message"]
    assert said == [
        ("user", "Reply with exactly: one"),
        ("assistant", "one"),
        ("user", shell("printf 'hello artifact' > report.txt", "written")),
        ("assistant", "written"),
        ("user", "Reply with exactly: three"),
        ("assistant", "three"),
    ]
    command = next(i for i in everything.data if i.type == "command_execution")
    assert command.exit_code == 0 and command.status == "completed" and "report.txt" in command.command
    assert {i.turn_id for i in everything.data} == {t.id for t in history["turns"]}


def test_turns(client: StrictOpenAI, history: dict[str, Any]) -> None:
    sid, turns = history["sid"], history["turns"]
    assert len(turns) == 3 and all(t.status == "completed" for t in turns)
    assert [t.id for t in client.beta.agents.sessions.turns.list(sid, limit=1)] == [t.id for t in reversed(turns)]
    page = client.beta.agents.sessions.turns.list(sid, order="asc", limit=1)
    assert page.has_more is True and [t.id for t in page.get_next_page().data] == [turns[1].id]
    for t in turns:
        got = client.beta.agents.sessions.turns.retrieve(t.id, session_id=sid)
        assert got.model_dump() == t.model_dump()
        assert (got.object, got.session_id, got.subagent_id, got.error) == ("agent.session.turn", sid, None, None)
        assert got.started_at is not None and got.completed_at is not None and got.usage is not None
        assert got.created_at <= got.completed_at


def test_turn_items(client: StrictOpenAI, history: dict[str, Any]) -> None:
    # openai 3.22.1 has no sessions.turns.items resource: the SDK's generic list call with its
    # ConversationCursorPage (cursor = the body's last_id), as the official typings define the endpoint.
    sid, turns = history["sid"], history["turns"]
    everything = list(client.beta.agents.sessions.items.list(sid, order="asc", limit=100))
    for t in turns:
        page = client.get_api_list(
            f"/agents/sessions/{sid}/turns/{t.id}/items",
            model=AgentSessionItem,  # type: ignore[arg-type]
            page=SyncConversationCursorPage[AgentSessionItem],  # type: ignore[valid-type]
            options={"headers": {"OpenAI-Beta": "agents=v1"}, "params": {"order": "asc", "limit": 1}},
        )
        assert page.last_id == page.data[0].id
        items = list(page)
        assert [i.id for i in items] == [i.id for i in everything if i.turn_id == t.id]
    with pytest.raises(openai.NotFoundError):
        client.get(
            f"/agents/sessions/{sid}/turns/turn_nope/items",
            cast_to=SyncConversationCursorPage[AgentSessionItem],  # type: ignore[valid-type]
            options={"headers": {"OpenAI-Beta": "agents=v1"}},
        )


def test_artifacts(client: StrictOpenAI, history: dict[str, Any]) -> None:
    sid, turns = history["sid"], history["turns"]
    listed = list(client.beta.agents.sessions.artifacts.list(sid))
    report = next(a for a in listed if a.path.endswith("/report.txt"))
    # The SDK's environment_id filter: the session's own environment lists them all, another none.
    env = report.environment_id
    assert [a.id for a in client.beta.agents.sessions.artifacts.list(sid, environment_id=env)] == [a.id for a in listed]
    assert list(client.beta.agents.sessions.artifacts.list(sid, environment_id="env_other")) == []
    assert report.object == "agent.session.artifact" and report.session_id == sid
    assert report.size_bytes == len("hello artifact")
    assert report.turn_id == turns[1].id  # the turn that wrote it
    got = client.beta.agents.sessions.artifacts.retrieve(report.id, session_id=sid)
    assert got.model_dump() == report.model_dump()
    content = client.beta.agents.sessions.artifacts.content(report.id, session_id=sid)
    assert content.content == b"hello artifact" and content.text == "hello artifact"
    deleted = client.beta.agents.sessions.artifacts.delete(report.id, session_id=sid)
    assert (deleted.id, deleted.object, deleted.deleted) == (report.id, "agent.session.artifact.deleted", True)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.sessions.artifacts.retrieve(report.id, session_id=sid)
    assert report.id not in [a.id for a in client.beta.agents.sessions.artifacts.list(sid)]
