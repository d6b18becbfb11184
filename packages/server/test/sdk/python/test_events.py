"""sessions.events: stream + create (message, steer, cancel), keep-alives, a failed turn, resume, idempotency."""

from __future__ import annotations

import uuid
from typing import Any

import openai
import pytest
from openai.types.beta.agent_session import AgentSession

from support import (
    MODEL,
    NONE_ENV,
    Settle,
    StrictOpenAI,
    final_text,
    message,
    read_until,
    settled,
    shell,
    types,
)

FAIL = "FAIL_THIS_TURN (the scripted model answers every request of this turn with a failure)"


def started_command(e: Any) -> bool:
    return e.type == "agent.session.turn.item.added" and e.item.type == "command_execution"


def test_message_on_an_idle_session(client: StrictOpenAI, idle_session: AgentSession) -> None:
    sid = idle_session.id
    with client.beta.agents.sessions.events.stream(sid) as stream:
        events = iter(stream)
        # Subscribing to an idle session starts with its current state.
        first = next(events)
        assert first.type == "agent.session.idle" and first.session.id == sid
        assert client.beta.agents.sessions.events.create(sid, events=[message("Reply with exactly: via events")]) is None
        got = read_until(events, Settle())
    kinds = types(got)
    assert kinds[0] == "agent.session.turn.created" and kinds[-1] == "agent.session.idle"
    assert "agent.session.in_progress" in kinds and kinds[-2] == "agent.session.turn.completed"
    user = next(e for e in got if e.type == "agent.session.turn.item.added" and e.item.type == "message")
    assert user.item.role == "user" and user.output_index is None
    assert final_text(got) == "via events"


def test_raw_202_for_events_create(client: StrictOpenAI, idle_session: AgentSession) -> None:
    raw = client.beta.agents.sessions.events.with_raw_response.create(
        idle_session.id, events=[message("Reply with exactly: accepted")]
    )
    assert raw.http_response.status_code == 202 and raw.parse() is None
    settled(client, idle_session.id)


def test_steer_a_running_turn(client: StrictOpenAI, idle_session: AgentSession) -> None:
    sid = idle_session.id
    with client.beta.agents.sessions.events.stream(sid) as stream:
        client.beta.agents.sessions.events.create(sid, events=[message(shell("sleep 1", "not steered"))])
        head = read_until(stream, started_command)
        turn_id = next(e.turn_id for e in head if e.type == "agent.session.turn.created")
        # A message while the turn runs steers it: accepted (202), no new turn.
        client.beta.agents.sessions.events.create(sid, events=[message("Reply with exactly: steered")])
        tail = read_until(stream, Settle(turn_id))
    events = head + tail
    assert types(events).count("agent.session.turn.created") == 1
    assert next(e for e in tail if e.type == "agent.session.turn.completed").turn_id == turn_id
    users = [e.item.content[0].text for e in events if e.type == "agent.session.turn.item.added"
             and e.item.type == "message" and e.item.role == "user"]
    assert users == [shell("sleep 1", "not steered"), "Reply with exactly: steered"]
    assert final_text(events, turn_id) == "steered"
    assert [t.id for t in client.beta.agents.sessions.turns.list(sid, order="desc", limit=1)][0] == turn_id


def test_cancel_a_running_turn(client: StrictOpenAI, idle_session: AgentSession) -> None:
    sid = idle_session.id
    with client.beta.agents.sessions.events.stream(sid) as stream:
        client.beta.agents.sessions.events.create(sid, events=[message(shell("sleep 20", "never"))])
        head = read_until(stream, started_command)
        turn_id = next(e.turn_id for e in head if e.type == "agent.session.turn.created")
        client.beta.agents.sessions.events.create(sid, events=[{"type": "agent.session.input.cancel"}])
        tail = read_until(stream, Settle(turn_id))
    assert types(tail)[-2:] == ["agent.session.turn.cancelled", "agent.session.idle"]
    cancelled = tail[-2]
    assert cancelled.turn.status == "cancelled" and cancelled.turn.error is None
    assert cancelled.turn.completed_at is not None
    turn = client.beta.agents.sessions.turns.retrieve(turn_id, session_id=sid)
    assert turn.status == "cancelled"
    assert client.beta.agents.sessions.retrieve(sid).status == "idle"


def test_a_turn_longer_than_the_keepalive_interval(client: StrictOpenAI, idle_session: AgentSession) -> None:
    # The server sends a keep-alive comment every 200 ms (AGENT_SSE_KEEPALIVE_MS): ~7 during this turn. The SDK's
    # parser must never see an empty event (it used to fail with JSONDecodeError).
    sid = idle_session.id
    with client.beta.agents.sessions.stream(sid, input=shell("sleep 1.5", "still here")) as s:
        events = list(s)
    assert types(events)[-1] == "agent.session.idle"
    command = next(e.item for e in events if e.type == "agent.session.turn.item.done" and e.item.type == "command_execution")
    assert command.status == "completed" and command.exit_code == 0 and command.duration_ms >= 1000  # type: ignore[operator]
    assert final_text(events) == "still here"
    # The same through events.stream, subscribed before the input.
    with client.beta.agents.sessions.events.stream(sid) as stream:
        client.beta.agents.sessions.events.create(sid, events=[message(shell("sleep 1.5", "again"))])
        got = read_until(stream, Settle())
    assert final_text(got) == "again"


def test_a_failed_turn_is_events_not_an_exception(client: StrictOpenAI) -> None:
    stream = client.beta.agents.sessions.create(environment=NONE_ENV, agent={"model": MODEL}, input=FAIL, stream=True)
    with stream:
        events = list(stream)  # no APIError: no streamed payload has a top-level `error`
    kinds = types(events)
    assert kinds[-2:] == ["agent.session.turn.failed", "agent.session.idle"]
    assert "error" not in kinds
    failed = events[-2]
    assert failed.turn.status == "failed" and failed.turn.error is not None
    assert failed.turn.error.message and failed.turn.error.code
    sid = events[0].session.id
    session = client.beta.agents.sessions.retrieve(sid)
    assert session.status == "idle" and session.error is None
    turn = client.beta.agents.sessions.turns.retrieve(failed.turn_id, session_id=sid)
    assert turn.status == "failed" and turn.error is not None and turn.error.code == failed.turn.error.code

    # The helper on the same session: the failed turn ends its iteration normally (turn.failed, then idle) ...
    with client.beta.agents.sessions.stream(sid, input=FAIL + " again") as s:
        again = list(s)
    assert types(again)[-2:] == ["agent.session.turn.failed", "agent.session.idle"]
    # ... and the session stays usable.
    with client.beta.agents.sessions.stream(sid, input="Reply with exactly: recovered") as s:
        assert final_text(list(s)) == "recovered"


def test_resume_with_the_event_id_after_a_dropped_connection(client: StrictOpenAI, idle_session: AgentSession) -> None:
    sid = idle_session.id
    stream = client.beta.agents.sessions.events.stream(sid)
    it = iter(stream)
    state = next(it)
    assert state.type == "agent.session.idle"
    client.beta.agents.sessions.events.create(sid, events=[message(shell("sleep 1", "resumed"))])
    head = read_until(it, started_command)
    stream.close()  # the connection drops mid-turn

    last = head[-1].event_id
    assert last.startswith("evt_")
    with client.beta.agents.sessions.events.stream(sid, extra_headers={"Last-Event-ID": last}) as resumed:
        tail = read_until(resumed, Settle())
    # The whole turn again, replayed from the state event that preceded it: the reference.
    with client.beta.agents.sessions.events.stream(sid, extra_headers={"Last-Event-ID": state.event_id}) as replay:
        reference = read_until(replay, Settle())

    ids = [e.event_id for e in head + tail]
    assert len(ids) == len(set(ids)), "duplicates after resuming"
    assert ids == [e.event_id for e in reference], "events lost or reordered after resuming"
    assert tail[0].type != "agent.session.idle"  # no state frame on resume
    assert final_text(head + tail) == "resumed"


def test_idempotency_key(client: StrictOpenAI, idle_session: AgentSession) -> None:
    sid = idle_session.id
    before = len(list(client.beta.agents.sessions.turns.list(sid)))
    key = str(uuid.uuid4())
    body = [message("Reply with exactly: once")]
    client.beta.agents.sessions.events.create(sid, events=body, extra_headers={"Idempotency-Key": key})
    settled(client, sid)
    # The same key and body again (a retry): the same answer, not applied twice.
    raw = client.beta.agents.sessions.events.with_raw_response.create(sid, events=body, extra_headers={"Idempotency-Key": key})
    assert raw.http_response.status_code == 202
    client.beta.agents.sessions.events.create(sid, events=body, idempotency_key=key)
    assert settled(client, sid).status == "idle"
    assert len(list(client.beta.agents.sessions.turns.list(sid))) == before + 1
    # The same key with another body is a conflict, and not retried by the SDK.
    with pytest.raises(openai.ConflictError) as info:
        client.beta.agents.sessions.events.create(sid, events=[message("Reply with exactly: other")], idempotency_key=key)
    assert info.value.response.headers.get("x-should-retry") == "false"
    assert info.value.response.request.headers.get("x-stainless-retry-count") == "0"
    assert len(list(client.beta.agents.sessions.turns.list(sid))) == before + 1
