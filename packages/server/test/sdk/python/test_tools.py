"""Function tools through the SDK's own tool_handlers (sync and async): the handler runs, its output reaches the
model, the history has the call and its output."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from support import MODEL, NONE_ENV, StrictAsyncOpenAI, StrictOpenAI, client_kwargs

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
ASK = 'Call the function get_weather with arguments {"city":"%s"}. Then reply with its output'


def assistant_texts(items: list[Any]) -> list[str]:
    return [
        "".join(getattr(c, "text", "") for c in i.content)
        for i in items
        if i.type == "message" and i.role == "assistant"
    ]


def test_tool_handlers_answer_the_call(client: StrictOpenAI) -> None:
    s = client.beta.agents.sessions.create(environment=NONE_ENV, agent={"model": MODEL, "tools": [WEATHER]})
    seen: list[dict[str, Any]] = []

    def get_weather(args: dict[str, Any]) -> str:
        seen.append(args)
        return f"Sunny in {args['city']}"

    with client.beta.agents.sessions.stream(s.id, input=ASK % "Paris", tool_handlers={"get_weather": get_weather}) as st:
        st.until_done()
    assert seen == [{"city": "Paris"}]
    items = list(client.beta.agents.sessions.items.list(s.id, order="asc"))
    call = next(i for i in items if i.type == "function_call")
    output = next(i for i in items if i.type == "function_call_output")
    assert call.name == "get_weather" and output.call_id == call.call_id
    assert output.output == "Sunny in Paris" and output.error is None
    assert assistant_texts(items)[-1] == "Sunny in Paris"
    after = client.beta.agents.sessions.retrieve(s.id)
    assert after.status == "idle" and after.required_actions == []


@pytest.fixture
async def async_client() -> AsyncIterator[StrictAsyncOpenAI]:
    async with StrictAsyncOpenAI(**client_kwargs()) as c:
        yield c


async def test_async_tool_handlers(async_client: StrictAsyncOpenAI) -> None:
    s = await async_client.beta.agents.sessions.create(environment=NONE_ENV, agent={"model": MODEL, "tools": [WEATHER]})

    async def get_weather(args: dict[str, Any]) -> dict[str, Any]:
        return {"city": args["city"], "sky": "grey"}

    async with async_client.beta.agents.sessions.stream(
        s.id, input=ASK % "Oslo", tool_handlers={"get_weather": get_weather}
    ) as st:
        await st.until_done()
    items = [i async for i in async_client.beta.agents.sessions.items.list(s.id, order="asc")]
    output = next(i for i in items if i.type == "function_call_output")
    # A JSON object result is sent as its JSON text.
    assert output.output == '{"city":"Oslo","sky":"grey"}'
    assert assistant_texts(items)[-1] == '{"city":"Oslo","sky":"grey"}'
