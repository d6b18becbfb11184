"""Errors: the SDK's exception classes by status, and the `{"error": {...}}` body (validated as ErrorObject)."""

from __future__ import annotations

from typing import Any, Callable

import openai
import pytest
from openai.types.shared.error_object import ErrorObject

from strict import check
from support import MODEL, NONE_ENV, StrictOpenAI, message, settled, shell


def expect_error(cls: type[openai.APIStatusError], status: int, call: Callable[[], Any]) -> openai.APIStatusError:
    with pytest.raises(cls) as info:
        call()
    err = info.value
    assert err.status_code == status
    body = err.response.json()
    assert set(body) == {"error"}
    check(ErrorObject, body["error"], f"{status} error body", optional=["misalignment"])
    assert err.message.startswith(f"Error code: {status}") and err.body == body["error"]
    assert err.type == body["error"]["type"] and err.code == body["error"]["code"]
    return err


def test_not_found(client: StrictOpenAI, idle_session: Any) -> None:
    sid = idle_session.id
    a = client.beta.agents
    expect_error(openai.NotFoundError, 404, lambda: a.retrieve("agent_doesnotexist"))
    expect_error(openai.NotFoundError, 404, lambda: a.update("agent_doesnotexist", name="x"))
    expect_error(openai.NotFoundError, 404, lambda: a.delete("agent_doesnotexist"))
    expect_error(openai.NotFoundError, 404, lambda: a.sessions.retrieve("sess_doesnotexist"))
    expect_error(openai.NotFoundError, 404, lambda: a.sessions.delete("sess_doesnotexist"))
    expect_error(openai.NotFoundError, 404, lambda: a.sessions.events.create("sess_doesnotexist", events=[message("hi")]))
    expect_error(openai.NotFoundError, 404, lambda: a.sessions.events.stream("sess_doesnotexist"))
    expect_error(openai.NotFoundError, 404, lambda: a.sessions.items.list("sess_doesnotexist"))
    expect_error(openai.NotFoundError, 404, lambda: a.sessions.turns.retrieve("turn_doesnotexist", session_id=sid))
    expect_error(openai.NotFoundError, 404, lambda: a.sessions.artifacts.retrieve("bm9wZQ", session_id=sid))
    expect_error(openai.NotFoundError, 404, lambda: a.sessions.artifacts.content("bm9wZQ", session_id=sid))
    expect_error(
        openai.NotFoundError, 404,
        lambda: a.sessions.create(agent_id="agent_doesnotexist", environment=NONE_ENV, input="hi"),
    )


def test_bad_request(client: StrictOpenAI, idle_session: Any) -> None:
    sid = idle_session.id
    a = client.beta.agents
    expect_error(openai.BadRequestError, 400, lambda: a.create(model=""))
    expect_error(openai.BadRequestError, 400, lambda: a.create(model=MODEL, metadata={"k": 1}))  # type: ignore[dict-item]
    expect_error(openai.BadRequestError, 400, lambda: a.sessions.create(environment=NONE_ENV, agent={"model": MODEL}, input=""))
    expect_error(
        openai.BadRequestError, 400,
        lambda: a.sessions.create(environment=NONE_ENV, agent={"model": MODEL}, stream=True),
    )
    expect_error(openai.BadRequestError, 400, lambda: a.sessions.events.create(sid, events=[]))
    expect_error(
        openai.BadRequestError, 400,
        lambda: a.sessions.events.create(sid, events=[{"type": "agent.session.input.bogus"}]),  # type: ignore[list-item]
    )
    expect_error(
        openai.BadRequestError, 400,
        lambda: a.sessions.events.stream(sid, extra_headers={"Last-Event-ID": "not-an-id"}),
    )
    other = a.sessions.create(environment=NONE_ENV, agent={"model": MODEL}, input="Reply with exactly: other")
    foreign = f"evt_{other.id[5:]}_1_0"  # an event_id of another session
    expect_error(
        openai.BadRequestError, 400, lambda: a.sessions.events.stream(sid, extra_headers={"Last-Event-ID": foreign})
    )
    expect_error(openai.BadRequestError, 400, lambda: a.list(limit=0))
    expect_error(openai.BadRequestError, 400, lambda: a.sessions.list(order="sideways"))  # type: ignore[arg-type]
    # An environment this server cannot provide (system packages: it has no installer for them).
    expect_error(
        openai.UnprocessableEntityError, 422,
        lambda: a.sessions.create(
            environment={"type": "openai_hosted", "packages": {"system": ["jq"]}},
            agent={"model": MODEL},
            input="hi",
        ),
    )
    # Nothing was applied.
    assert client.beta.agents.sessions.retrieve(sid).status == "idle"


def test_conflict_deleting_a_session_with_a_running_turn(client: StrictOpenAI) -> None:
    s = client.beta.agents.sessions.create(environment=NONE_ENV, agent={"model": MODEL}, input=shell("sleep 1", "done"))
    err = expect_error(openai.ConflictError, 409, lambda: client.beta.agents.sessions.delete(s.id))
    # A conflict is final: the SDK (which retries 409 by default) is told not to retry.
    assert err.response.headers.get("x-should-retry") == "false"
    assert err.response.request.headers.get("x-stainless-retry-count") == "0"
    assert client.beta.agents.sessions.retrieve(s.id).status == "in_progress"
    settled(client, s.id)
    assert client.beta.agents.sessions.delete(s.id).deleted is True
