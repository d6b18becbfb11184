"""The Files API through the Python SDK (every response strictly validated): upload (multipart), retrieve, list
(pages, purpose), content, wait_for_processing, delete, expires_after; and file_id references in environments (a
session's inline environment, environments.files.create), whose contents reach the agent's commands."""

from __future__ import annotations

import hashlib
import os
import time
from typing import Any, AsyncIterator

import openai
import pytest

from support import MODEL, StrictAsyncOpenAI, StrictOpenAI, client_kwargs, raw_json, settled, shell, wait_for


def outputs(client: StrictOpenAI, session_id: str) -> str:
    items = client.beta.agents.sessions.items.list(session_id, order="asc")
    return "\n".join((i.output or "") for i in items if i.type == "command_execution")  # type: ignore[union-attr]


def test_files_lifecycle(client: StrictOpenAI) -> None:
    data = os.urandom(3000)
    f = client.files.create(file=("data.bin", data), purpose="user_data")
    assert f.id.startswith("file-") and f.object == "file" and f.bytes == 3000 and f.filename == "data.bin"
    assert f.purpose == "user_data" and f.status == "processed" and f.expires_at is None
    assert abs(f.created_at - time.time()) < 60
    # The JSON itself: expires_at and status_details are sent (null), as the official API does.
    raw = raw_json(client.files.with_raw_response.retrieve(f.id))
    assert raw["expires_at"] is None and raw["status_details"] is None
    assert client.files.retrieve(f.id) == f
    assert client.files.wait_for_processing(f.id, poll_interval=0.01) == f
    assert hashlib.sha256(client.files.content(f.id).read()).hexdigest() == hashlib.sha256(data).hexdigest()

    others = [client.files.create(file=(f"v{i}.png", b"img"), purpose="vision") for i in range(3)]
    mine = {f.id, *(o.id for o in others)}
    listed = [x.id for x in client.files.list(limit=1) if x.id in mine]
    assert listed == [o.id for o in reversed(others)] + [f.id]
    asc = [x.id for x in client.files.list(order="asc") if x.id in mine]
    assert asc == [f.id] + [o.id for o in others]
    assert {x.id for x in client.files.list(purpose="vision")} >= {o.id for o in others}
    assert f.id not in {x.id for x in client.files.list(purpose="vision")}

    deleted = client.files.delete(f.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (f.id, "file", True)
    with pytest.raises(openai.NotFoundError) as gone:
        client.files.retrieve(f.id)
    assert gone.value.code == "not_found" and gone.value.param == "file_id"
    with pytest.raises(openai.NotFoundError):
        client.files.content(f.id)
    assert f.id not in {x.id for x in client.files.list()}
    for o in others:
        client.files.delete(o.id)


def test_upload_parameters(client: StrictOpenAI) -> None:
    f = client.files.create(
        file=("brief.txt", b"brief"), purpose="user_data", expires_after={"anchor": "created_at", "seconds": 7200}
    )
    assert f.expires_at is not None and 7199 <= f.expires_at - f.created_at <= 7201
    with pytest.raises(openai.BadRequestError) as purpose:
        client.files.create(file=("x.txt", b"x"), purpose="nonsense")  # type: ignore[arg-type]
    assert purpose.value.param == "purpose"
    with pytest.raises(openai.BadRequestError) as seconds:
        client.files.create(
            file=("x.txt", b"x"), purpose="user_data", expires_after={"anchor": "created_at", "seconds": 10}
        )
    assert seconds.value.param == "expires_after.seconds"
    client.files.delete(f.id)


def test_file_ids_in_environments(client: StrictOpenAI) -> None:
    up = client.files.create(file=("input.txt", b"uploaded from python\n"), purpose="user_data")
    s = client.beta.agents.sessions.create(
        agent={"model": MODEL},
        environment={"type": "openai_hosted", "files": [{"type": "file_id", "file_id": up.id, "path": "/workspace/in/input.txt"}]},
        input=shell("cat in/input.txt; echo seen-upload", "done"),
    )
    env: Any = s.environment
    assert [(x.type, x.file_id, x.path, x.size_bytes) for x in env.files] == [
        ("file_id", up.id, "/workspace/in/input.txt", 21)
    ]
    settled(client, s.id)
    assert "uploaded from python\nseen-upload" in outputs(client, s.id)

    # Between turns: one more file by reference; the copy stays when the upload is deleted.
    more = client.files.create(file=("more.txt", b"more\n"), purpose="user_data")
    ef = client.beta.agents.environments.files.create(env.id, type="file_id", file_id=more.id, path="/workspace/more.txt")
    assert (ef.object, ef.environment_id, ef.path, ef.size_bytes) == ("agent.environment.file", env.id, "/workspace/more.txt", 5)
    client.files.delete(more.id)
    client.files.delete(up.id)
    client.beta.agents.sessions.events.create(
        s.id, events=[{"type": "agent.session.input.message", "input": shell("cat more.txt in/input.txt; echo seen-more", "ok")}]
    )
    wait_for(lambda: "seen-more" in outputs(client, s.id), "the second command")
    assert "more\nuploaded from python\nseen-more" in outputs(client, s.id)
    with pytest.raises(openai.NotFoundError) as gone:
        client.beta.agents.environments.files.create(env.id, type="file_id", file_id=more.id, path="/workspace/again.txt")
    assert gone.value.param == "file_id"


@pytest.fixture
async def aclient() -> AsyncIterator[StrictAsyncOpenAI]:
    async with StrictAsyncOpenAI(**client_kwargs()) as c:
        yield c


async def test_async_upload(aclient: StrictAsyncOpenAI) -> None:
    f = await aclient.files.create(file=("async.txt", b"from the async client"), purpose="assistants")
    assert (f.bytes, f.purpose) == (21, "assistants")
    assert (await (await aclient.files.content(f.id)).aread()) == b"from the async client"
    assert (await aclient.files.delete(f.id)).deleted is True
