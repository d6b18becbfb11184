"""Sessions: inline and saved agents, create(stream=True), the sessions.stream() helper, update, list, delete."""

from __future__ import annotations

import uuid

import openai
import pytest
from openai.types.beta.agent_session import AgentSession

from strict import check
from support import MODEL, NONE_ENV, Settle, StrictOpenAI, final_text, raw_json, read_until, settled, shell, types


def test_inline_agent(client: StrictOpenAI) -> None:
    raw = client.beta.agents.sessions.with_raw_response.create(
        environment=NONE_ENV,
        agent={"model": MODEL, "instructions": "Be brief.", "reasoning": {"effort": "low"}},
        input="Reply with exactly: inline works",
        metadata={"case": "inline"},
    )
    check(AgentSession, raw_json(raw), "POST /v1/agents/sessions (raw)")
    s = raw.parse()
    assert s.object == "agent.session" and s.status in ("in_progress", "idle")
    assert (s.agent.model, s.agent.instructions, s.agent.reasoning.effort) == (MODEL, "Be brief.", "low")
    assert s.environment.type == "none" and s.metadata == {"case": "inline"}
    done = settled(client, s.id)
    assert done.status == "idle" and done.error is None
    assert done.usage is not None and done.usage.total_tokens > 0
    said = [i for i in client.beta.agents.sessions.items.list(s.id, order="asc") if i.type == "message"]
    assert [(i.role, i.content[0].text) for i in said] == [  # type: ignore[union-attr]
        ("user", "Reply with exactly: inline works"),
        ("assistant", "inline works"),
    ]


def test_saved_agent_list_update_delete(client: StrictOpenAI) -> None:
    agent = client.beta.agents.create(model=MODEL, name="saved", instructions="Saved instructions.")
    tag = uuid.uuid4().hex
    s = client.beta.agents.sessions.create(
        agent_id=agent.id, environment=NONE_ENV, input="Reply with exactly: saved works", metadata={"tag": tag}
    )
    assert (s.agent.id, s.agent.name, s.agent.instructions, s.agent.model) == (
        agent.id, "saved", "Saved instructions.", MODEL
    )
    # With agent_id, agent fields override the saved agent for this session only.
    other = client.beta.agents.sessions.create(
        agent_id=agent.id, agent={"instructions": "Overridden."}, environment=NONE_ENV, input="Reply with exactly: o"
    )
    assert (other.agent.id, other.agent.instructions) == (agent.id, "Overridden.")
    assert client.beta.agents.retrieve(agent.id).instructions == "Saved instructions."

    listed = [x.id for x in client.beta.agents.sessions.list(agent_id=agent.id, limit=1)]
    assert sorted(listed) == sorted([s.id, other.id])
    assert [x.id for x in client.beta.agents.sessions.list(agent_id=agent.id, order="asc")] == [s.id, other.id]
    by_metadata = client.beta.agents.sessions.list(extra_query={"metadata[tag]": tag})
    assert [x.id for x in by_metadata.data] == [s.id]

    settled(client, s.id)
    settled(client, other.id)
    updated = client.beta.agents.sessions.update(s.id, metadata={"tag": tag, "more": "yes"}, agent={"model": MODEL})
    assert updated.metadata == {"tag": tag, "more": "yes"}
    assert client.beta.agents.sessions.retrieve(s.id).metadata == updated.metadata

    for sid in (s.id, other.id):
        deleted = client.beta.agents.sessions.delete(sid)
        assert (deleted.id, deleted.object, deleted.deleted) == (sid, "agent.session.deleted", True)
        with pytest.raises(openai.NotFoundError):
            client.beta.agents.sessions.retrieve(sid)


def test_create_with_stream_true(client: StrictOpenAI) -> None:
    before = len(client.validated)
    stream = client.beta.agents.sessions.create(
        environment=NONE_ENV, agent={"model": MODEL}, input="Reply with exactly: streamed hello", stream=True
    )
    with stream:
        events = list(stream)
    kinds = types(events)
    assert kinds[0] == "agent.session.created" and kinds[-1] == "agent.session.idle"
    assert kinds.count("agent.session.turn.created") == 1 and "agent.session.turn.completed" in kinds
    assert kinds.index("agent.session.turn.created") < kinds.index("agent.session.turn.completed")
    sid = events[0].session.id
    turn_id = next(e.turn_id for e in events if e.type == "agent.session.turn.created")
    deltas = "".join(e.delta for e in events if e.type == "agent.session.turn.output_text.delta")
    assert deltas == "streamed hello" == final_text(events, turn_id)
    assert len({e.event_id for e in events}) == len(events)
    # Every event was validated strictly (raw JSON) before the SDK built it.
    assert [k for k, _ in client.validated[before:]] == kinds
    assert events[-1].session.id == sid and events[-1].session.status == "idle"
    completed = next(e for e in events if e.type == "agent.session.turn.completed")
    assert completed.usage is not None and completed.turn.status == "completed"


def test_sessions_stream_helper(client: StrictOpenAI, idle_session: AgentSession) -> None:
    sid = idle_session.id
    with client.beta.agents.sessions.stream(sid, input="Reply with exactly: helper result") as s:
        events = list(s)
    kinds = types(events)
    # The helper ends at the idle that follows its turn; the initial idle (state on subscribe) does not end it.
    assert kinds[-1] == "agent.session.idle" and "agent.session.turn.completed" in kinds
    turn_id = next(e.turn_id for e in events if e.type == "agent.session.turn.created")
    end = next(e for e in events if e.type == "agent.session.turn.completed")
    assert end.turn_id == turn_id and end.turn.status == "completed" and end.turn.subagent_id is None
    assert final_text(events, turn_id) == "helper result"
    turn = client.beta.agents.sessions.turns.retrieve(turn_id, session_id=sid)
    assert turn.status == "completed" and turn.usage is not None
    assert turn.usage.model_dump() == end.usage.model_dump()  # type: ignore[union-attr]

    # until_done() and an explicit idempotency key
    with client.beta.agents.sessions.stream(sid, input="Reply with exactly: second", idempotency_key=str(uuid.uuid4())) as s2:
        s2.until_done()
    items = list(client.beta.agents.sessions.items.list(sid, order="desc", limit=1))
    assert items[0].type == "message" and items[0].content[0].text == "second"  # type: ignore[union-attr]


def test_sessions_stream_helper_refuses_a_busy_session(client: StrictOpenAI) -> None:
    s = client.beta.agents.sessions.create(environment=NONE_ENV, agent={"model": MODEL}, input=shell("sleep 1", "slept"))
    with pytest.raises(ValueError, match="requires an idle session"):
        with client.beta.agents.sessions.stream(s.id, input="Reply with exactly: no"):
            pass
    # Subscribing while a turn runs replays that turn from its start, then follows it live.
    with client.beta.agents.sessions.events.stream(s.id) as live:
        got = read_until(live, Settle())
    assert types(got)[0] == "agent.session.turn.created" and final_text(got) == "slept"


def test_self_hosted_session_without_input(client: StrictOpenAI) -> None:
    s = client.beta.agents.sessions.create(
        environment={"type": "self_hosted", "workspace_directory": "/workspace"}, agent={"model": MODEL}
    )
    assert s.status == "idle" and s.environment.type == "self_hosted"
    assert list(client.beta.agents.sessions.turns.list(s.id)) == []
    with client.beta.agents.sessions.stream(s.id, input="Reply with exactly: first turn") as st:
        events = list(st)
    assert final_text(events) == "first turn"
    turn = client.beta.agents.sessions.turns.list(s.id).data[0]
    # The turn names the session's agent (an inline agent gets an id too).
    assert turn.agent_id == s.agent.id
