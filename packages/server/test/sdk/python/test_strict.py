"""The validator itself: it must catch what the SDK lets through (negative tests on hand-made dicts)."""

from __future__ import annotations

import copy
from typing import Any

import httpx2
import pytest
from openai._models import construct_type, validate_type
from openai.types.beta.agent_session import AgentSession
from openai.types.beta.agent_session_event import AgentSessionEvent
from openai.types.beta.agent_session_item import AgentSessionItem

from strict import StrictValidationError, check
from support import StrictOpenAI, client_kwargs

USAGE = {
    "input_tokens": 1,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 1,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 2,
}
SESSION: dict[str, Any] = {
    "id": "sess_1",
    "object": "agent.session",
    "agent": {
        "id": "agent_1",
        "name": None,
        "instructions": None,
        "model": "m",
        "tools": [],
        "reasoning": {"effort": None, "summary": None},
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "service_tier": "auto",
        "multi_agent": {"enabled": False, "max_concurrent_subagents": None},
    },
    "created_at": 1,
    "last_active_at": 1,
    "environment": {"type": "none"},
    "error": None,
    "metadata": {},
    "required_actions": [],
    "status": "idle",
    "usage": USAGE,
    "vault_ids": [],
}


def mutated(fn: Any) -> dict[str, Any]:
    d = copy.deepcopy(SESSION)
    fn(d)
    return d


def test_a_complete_session_passes() -> None:
    check(AgentSession, SESSION)
    # Fields the official typings mark optional may be absent (review, spend_control) or present.
    check(AgentSession, mutated(lambda d: d.update(review="none")))


@pytest.mark.parametrize(
    "fn, expected",
    [
        (lambda d: d["agent"].pop("model"), "agent.model: Field required"),
        (lambda d: d.pop("status"), "status: Field required"),
        (lambda d: d.update(created_at="123"), "created_at: Input should be a valid integer"),
        (lambda d: d.update(created_at=1.5), "created_at: Input should be a valid integer"),
        (lambda d: d.update(status="done"), "status: Input should be"),
        (lambda d: d.update(metadata={"k": 1}), "metadata.k: Input should be a valid string"),
        (lambda d: d["usage"].update(total_tokens=None), "usage.total_tokens: Input should be a valid integer"),
        # Required but nullable: the SDK declares `Optional[X] = None`, pydantic never requires it.
        (lambda d: d.pop("error"), "lacks required fields: $.error"),
        (lambda d: d["agent"].pop("instructions"), "lacks required fields: $.agent.instructions"),
        (lambda d: d.pop("usage"), "lacks required fields: $.usage"),
    ],
)
def test_missing_or_mistyped_fields_fail(fn: Any, expected: str) -> None:
    bad = mutated(fn)
    with pytest.raises(StrictValidationError, match=expected.replace("$", r"\$").replace(".", r"\.")):
        check(AgentSession, bad)


def test_what_the_sdk_alone_lets_through() -> None:
    bad = mutated(lambda d: (d.update(created_at="123"), d["agent"].pop("model"), d.pop("error")))
    # The SDK's default: no validation at all.
    built = construct_type(type_=AgentSession, value=bad)
    assert built.created_at == "123"  # type: ignore[comparison-overlap]
    # Its `_strict_response_validation` is pydantic's lax mode: it coerces "123" and defaults a missing nullable.
    ok = mutated(lambda d: (d.update(created_at="123"), d.pop("error")))
    assert validate_type(type_=AgentSession, value=ok).created_at == 123
    with pytest.raises(StrictValidationError):
        check(AgentSession, ok)


def test_events_and_items_are_checked_by_their_type() -> None:
    with pytest.raises(StrictValidationError, match="'agent.session.bogus' is not one of"):
        check(AgentSessionEvent, {"type": "agent.session.bogus", "event_id": "e"})
    idle = {"type": "agent.session.idle", "event_id": "e", "session": SESSION}
    check(AgentSessionEvent, idle)
    with pytest.raises(StrictValidationError, match="event_id: Field required"):
        check(AgentSessionEvent, {k: v for k, v in idle.items() if k != "event_id"})
    msg = {"id": "m", "turn_id": "t", "type": "message", "role": "assistant", "phase": None, "status": "completed",
           "content": [{"type": "output_text", "text": "x"}]}
    check(AgentSessionItem, msg)
    with pytest.raises(StrictValidationError, match=r"content\.0\.\w*OutputText\.text: Input should be a valid string"):
        check(AgentSessionItem, {**msg, "content": [{"type": "output_text", "text": 5}]})
    with pytest.raises(StrictValidationError, match=r"lacks required fields: \$\.phase"):
        check(AgentSessionItem, {k: v for k, v in msg.items() if k != "phase"})


def test_the_client_hook_validates_what_the_sdk_receives() -> None:
    request = httpx2.Request("GET", "http://127.0.0.1/v1/agents/sessions/sess_1")
    response = httpx2.Response(200, request=request)
    with StrictOpenAI(**client_kwargs()) as c:
        assert c._process_response_data(data=SESSION, cast_to=AgentSession, response=response).id == "sess_1"
        assert c.validated == [("AgentSession", "GET /v1/agents/sessions/sess_1")]
        with pytest.raises(StrictValidationError, match="GET /v1/agents/sessions/sess_1"):
            c._process_response_data(data=mutated(lambda d: d.pop("error")), cast_to=AgentSession, response=response)
