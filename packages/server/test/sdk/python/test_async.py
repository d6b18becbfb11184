"""The async client (AsyncOpenAI): sessions.create (plain and streamed), sessions.stream, events.stream/create."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

import pytest

from support import MODEL, NONE_ENV, Settle, StrictAsyncOpenAI, client_kwargs, final_text, message, shell, types


@pytest.fixture
async def aclient() -> AsyncIterator[StrictAsyncOpenAI]:
    async with StrictAsyncOpenAI(**client_kwargs()) as c:
        yield c


async def read_until(events: Any, pred: Any) -> list[Any]:
    out: list[Any] = []
    async for e in events:
        out.append(e)
        if pred(e):
            return out
    raise AssertionError(f"the stream ended before the expected event; got {types(out)}")


async def test_async_sessions(aclient: StrictAsyncOpenAI) -> None:
    agent = await aclient.beta.agents.create(model=MODEL, name="async")
    s = await aclient.beta.agents.sessions.create(agent_id=agent.id, environment=NONE_ENV, input="Reply with exactly: a1")
    assert s.agent.id == agent.id

    stream = await aclient.beta.agents.sessions.create(
        environment=NONE_ENV, agent={"model": MODEL}, input="Reply with exactly: async stream", stream=True
    )
    async with stream:
        events = [e async for e in stream]
    assert types(events)[0] == "agent.session.created" and types(events)[-1] == "agent.session.idle"
    assert final_text(events) == "async stream"
    sid = events[0].session.id

    async with aclient.beta.agents.sessions.stream(sid, input=shell("sleep 0.5", "async helper")) as helper:
        got = [e async for e in helper]
    assert types(got)[-1] == "agent.session.idle" and final_text(got) == "async helper"

    async with await aclient.beta.agents.sessions.events.stream(sid) as live:
        it = live.__aiter__()
        assert (await it.__anext__()).type == "agent.session.idle"
        await aclient.beta.agents.sessions.events.create(sid, events=[message("Reply with exactly: async events")])
        tail = await asyncio.wait_for(read_until(it, Settle()), 20)
    assert final_text(tail) == "async events"
    assert len(aclient.validated) >= len(events) + len(got) + len(tail)
    paged = [t.id async for t in aclient.beta.agents.sessions.turns.list(sid, limit=1)]
    assert len(paged) == 3
    assert (await aclient.beta.agents.sessions.delete(sid)).deleted is True
    await aclient.beta.agents.delete(agent.id)
