"""The SSE framing read by a spec-following parser (httpx-sse), independent of the SDK's own parser."""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterator

import httpx
import pytest
from httpx_sse import ServerSentEvent, connect_sse
from openai.types.beta.agent_session import AgentSession
from openai.types.beta.agent_session_event import AgentSessionEvent

from strict import check
from support import API_URL, MODEL, StrictOpenAI, message, shell

HEADERS = {"OpenAI-Beta": "agents=v1", "Authorization": "Bearer unused"}
SSE_ID = re.compile(r"^\d+(:\d+)?$")


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(base_url=API_URL, headers=HEADERS, timeout=20) as c:
        yield c


class Tee:
    """Iterates a response's server-sent events (httpx-sse) and keeps the raw text it was parsed from."""

    def __init__(self, source: Any) -> None:
        self.raw: list[str] = []
        response = source.response
        original = response.iter_text

        def iter_text(*args: Any, **kwargs: Any) -> Iterator[str]:
            for text in original(*args, **kwargs):
                self.raw.append(text)
                yield text

        response.iter_text = iter_text
        self.events = source.iter_sse()

    def text(self) -> str:
        return "".join(self.raw)


def parsed(sse: ServerSentEvent) -> dict[str, Any]:
    """An event as a spec-following client sees it: never empty, JSON, a valid official event, named by its type."""
    assert sse.data, f"an event without data was dispatched: {sse!r}"
    data = json.loads(sse.data)
    check(AgentSessionEvent, data, f"SSE {sse.event} id={sse.id}")
    assert sse.event == data["type"]
    assert sse.id is not None and SSE_ID.match(sse.id), f"bad SSE id {sse.id!r}"
    return data


def read_until(events: Iterator[ServerSentEvent], pred: Callable[[dict[str, Any]], bool]) -> list[tuple[ServerSentEvent, dict[str, Any]]]:
    out = []
    for sse in events:
        data = parsed(sse)
        out.append((sse, data))
        if pred(data):
            return out
    raise AssertionError(f"stream ended early: {[d['type'] for _, d in out]}")


def settle() -> Callable[[dict[str, Any]], bool]:
    ended = False

    def pred(d: dict[str, Any]) -> bool:
        nonlocal ended
        if d["type"].startswith("agent.session.turn.") and d["type"].rsplit(".", 1)[1] in ("completed", "failed", "cancelled"):
            ended = True
        return ended and d["type"] in ("agent.session.idle", "agent.session.failed")

    return pred


def command_started(d: dict[str, Any]) -> bool:
    return d["type"] == "agent.session.turn.item.added" and d["item"]["type"] == "command_execution"


def test_keepalives_never_dispatch_an_event_and_retry_is_read(
    client: StrictOpenAI, idle_session: AgentSession, http: httpx.Client
) -> None:
    sid = idle_session.id
    with connect_sse(http, "GET", f"/agents/sessions/{sid}/events") as source:
        assert source.response.status_code == 200
        assert source.response.headers["content-type"].startswith("text/event-stream")
        tee = Tee(source)
        first = next(tee.events)
        assert first.retry == 3000  # reconnection advice, on the first frame
        assert parsed(first)["type"] == "agent.session.idle"
        client.beta.agents.sessions.events.create(sid, events=[message(shell("sleep 1.5", "kept alive"))])
        got = read_until(tee.events, settle())
    raw = tee.text()
    keepalives = re.findall(r"^:[^\n]*\n", raw, flags=re.M)
    assert len(keepalives) >= 3, f"expected keep-alive comments during a 1.5 s command (every 200 ms): {raw[:2000]}"
    # Exactly one dispatched event per data line: the comments produced none.
    assert len(re.findall(r"^data:", raw, flags=re.M)) == 1 + len(got)
    assert all(sse.retry is None for sse, _ in got)
    assert [d["type"] for _, d in got][-2:] == ["agent.session.turn.completed", "agent.session.idle"]


@pytest.mark.parametrize("form", ["sse id", "event_id"])
def test_resume_by_either_id(client: StrictOpenAI, idle_session: AgentSession, http: httpx.Client, form: str) -> None:
    sid = idle_session.id

    def resume_id(sse: ServerSentEvent, data: dict[str, Any]) -> str:
        return sse.id if form == "sse id" else data["event_id"]  # type: ignore[return-value]

    with connect_sse(http, "GET", f"/agents/sessions/{sid}/events") as source:
        events = source.iter_sse()
        state = read_until(events, lambda d: True)[0]
        client.beta.agents.sessions.events.create(sid, events=[message(shell("sleep 0.5", "resumed"))])
        head = read_until(events, command_started)
    # Dropped mid-turn; a reconnecting client sends the last id it saw.
    last = resume_id(*head[-1])
    with connect_sse(http, "GET", f"/agents/sessions/{sid}/events", headers={"Last-Event-ID": last}) as source:
        tail = read_until(source.iter_sse(), settle())
    with connect_sse(http, "GET", f"/agents/sessions/{sid}/events", headers={"Last-Event-ID": resume_id(*state)}) as source:
        reference = read_until(source.iter_sse(), settle())
    seen = [(sse.id, d["event_id"]) for sse, d in head + tail]
    assert len(seen) == len(set(seen))
    assert seen == [(sse.id, d["event_id"]) for sse, d in reference]


def test_created_stream_ends_with_done(http: httpx.Client) -> None:
    body = {"environment": {"type": "none"}, "agent": {"model": MODEL}, "input": "Reply with exactly: done", "stream": True}
    with connect_sse(http, "POST", "/agents/sessions", json=body) as source:
        all_events = list(source.iter_sse())
    assert all_events[-1].data == "[DONE]"  # the official SDKs stop on it
    events = [parsed(sse) for sse in all_events[:-1]]
    assert all_events[0].retry == 3000
    assert events[0]["type"] == "agent.session.created" and events[-1]["type"] == "agent.session.idle"
    check(AgentSession, events[-1]["session"])
