"""The openai SDK clients the suite uses (validating everything they receive) and small helpers."""

from __future__ import annotations

import os
import json
import time
from typing import Any, Callable, Iterable, Optional, get_args

from collections import Counter

import pydantic
import openai
from typing_extensions import Literal
from openai._base_client import BasePage

from strict import check, type_name

BASE_URL = os.environ.get("AGENT_API_BASE_URL", "").rstrip("/")
if not BASE_URL:
    raise RuntimeError("AGENT_API_BASE_URL is not set: run this suite through packages/server/test/sdk/python.external.test.ts")
API_URL = f"{BASE_URL}/v1"
MODEL = "mock-model"
# The server runs every session in a container (the `container` project of vitest.config.ts).
ON_CONTAINER_BACKEND = os.environ.get("TEST_SANDBOX_BACKEND") == "container"
NONE_ENV: Any = {"type": "none"}
TURN_END = ("agent.session.turn.completed", "agent.session.turn.failed", "agent.session.turn.cancelled")
SETTLED = ("agent.session.idle", "agent.session.failed")
# What every client of the run validated, by kind (object type or event type): printed at the end of the run.
VALIDATED: Counter[str] = Counter()


class ListEnvelope(pydantic.BaseModel):
    """What every list answers: `{object: "list", data, first_id, last_id, has_more}` (all present)."""

    model_config = pydantic.ConfigDict(strict=True, extra="forbid")
    object: Literal["list"]
    data: list  # type: ignore[type-arg]
    first_id: Optional[str]
    last_id: Optional[str]
    has_more: bool


def validate_response(cast_to: Any, data: Any, where: str) -> None:
    """Strictly validates one raw JSON body or streamed event the SDK is about to turn into `cast_to`."""
    if data is None or cast_to is object:
        return
    if isinstance(cast_to, type) and issubclass(cast_to, BasePage):
        envelope = check(ListEnvelope, data, where)
        (item_type,) = get_args(cast_to.model_fields["data"].annotation)
        for i, item in enumerate(envelope.data):
            check(item_type, item, f"{where} data[{i}]")
        return
    check(cast_to, data, where)


def kind_of(cast_to: Any) -> str:
    if isinstance(cast_to, type) and issubclass(cast_to, BasePage):
        (item_type,) = get_args(cast_to.model_fields["data"].annotation)
        return f"list of {kind_of(item_type)}"
    name = type_name(cast_to)
    return "AgentSessionItem" if name.startswith("AgentSessionMessage |") else name


class _Validating:
    """Mixin: every response body and streamed event goes through `validate_response` before the SDK sees it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (what, where) of everything validated, in order.
        self.validated: list[tuple[str, str]] = []

    def _process_response_data(self, *, data: Any, cast_to: Any, response: Any) -> Any:
        where = f"{response.request.method} {response.request.url.path}"
        validate_response(cast_to, data, where)
        if data is not None and cast_to is not object:
            kind = data.get("type") if isinstance(data, dict) and "type" in data else kind_of(cast_to)
            self.validated.append((str(kind), where))
            VALIDATED[str(kind)] += 1
        return super()._process_response_data(data=data, cast_to=cast_to, response=response)  # type: ignore[misc]


class StrictOpenAI(_Validating, openai.OpenAI):
    pass


class StrictAsyncOpenAI(_Validating, openai.AsyncOpenAI):
    pass


def client_kwargs() -> dict[str, Any]:
    return {"base_url": API_URL, "api_key": os.environ.get("AGENT_API_TOKEN") or "unused", "timeout": 20}


def shell(cmd: str, reply: str) -> str:
    """A message that makes the scripted model run `cmd` in the workspace, then reply `reply`."""
    return f"Run this exact shell command and wait for it to finish: {cmd}. Then reply with exactly: {reply}"


def message(text: str) -> Any:
    return {"type": "agent.session.input.message", "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}]}


def wait_for(fn: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    """Polls `fn` until it returns something truthy (or fails after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def settled(client: openai.OpenAI, session_id: str) -> Any:
    return wait_for(
        lambda: (s := client.beta.agents.sessions.retrieve(session_id)).status != "in_progress" and s,
        f"session {session_id} to settle",
    )


class Settle:
    """Stream predicate: true on the session status event that follows a turn's terminal event."""

    def __init__(self, turn_id: Optional[str] = None) -> None:
        self.turn_id = turn_id
        self.end: Any = None

    def __call__(self, e: Any) -> bool:
        if e.type in TURN_END and (self.turn_id is None or e.turn_id == self.turn_id):
            self.end = e
        return self.end is not None and e.type in SETTLED


def read_until(events: Iterable[Any], pred: Callable[[Any], bool]) -> list[Any]:
    """Reads events until `pred` holds for one (included); fails if the stream ends first."""
    out: list[Any] = []
    for e in events:
        out.append(e)
        if pred(e):
            return out
    raise AssertionError(f"the stream ended before the expected event; got {[e.type for e in out]}")


def final_text(events: Iterable[Any], turn_id: Optional[str] = None) -> str:
    """The turn's result text, as the SDK helpers define it: completed non-commentary assistant messages."""
    done = [
        e
        for e in events
        if e.type == "agent.session.turn.item.done"
        and e.item.type == "message"
        and e.item.status == "completed"
        and e.item.phase != "commentary"
        and (turn_id is None or e.item.turn_id == turn_id)
    ]
    done.sort(key=lambda e: e.output_index)
    return "".join(c.text for e in done for c in e.item.content if c.type == "output_text")


def types(events: Iterable[Any]) -> list[str]:
    return [e.type for e in events]


def raw_json(raw_response: Any) -> Any:
    """The body of a `with_raw_response` call as JSON (the bytes the server sent)."""
    return json.loads(raw_response.http_response.text)
