"""Environments this server prepares (openai_hosted), their files and templates, through the Python SDK (every
response strictly validated): a session's environment with a file, a setup command and a variable; what is refused;
environments made ahead and their files; templates that cannot be broadened."""

from __future__ import annotations

import base64
import hashlib
import uuid
from typing import Any

import openai
import pytest

from support import MODEL, ON_CONTAINER_BACKEND, StrictOpenAI, settled, shell, wait_for


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def outputs(client: StrictOpenAI, session_id: str) -> str:
    items = client.beta.agents.sessions.items.list(session_id, order="asc")
    return "\n".join((i.output or "") for i in items if i.type == "command_execution")  # type: ignore[union-attr]


def test_session_environment_files_setup_and_variables(client: StrictOpenAI) -> None:
    token = f"py-token-{uuid.uuid4().hex}"
    s = client.beta.agents.sessions.create(
        agent={"model": MODEL},
        environment={
            "type": "openai_hosted",
            "files": [{"type": "inline", "path": "/workspace/notes/a.txt", "data": b64("from python\n")}],
            "setup_commands": [{"command": "echo python-setup > setup.txt"}],
            "env": {"PY_TOKEN": token},
        },
        input=shell('cat notes/a.txt setup.txt; printf %s "$PY_TOKEN" | sha256sum', "done"),
    )
    assert s.environment.type == "openai_hosted"
    env: Any = s.environment
    assert [f.path for f in env.files] == ["/workspace/notes/a.txt"]
    assert env.network.access == "disabled" and env.packages.npm == []
    done = settled(client, s.id)
    assert done.status == "idle"
    out = outputs(client, s.id)
    assert "from python" in out and "python-setup" in out
    assert hashlib.sha256(token.encode()).hexdigest() in out
    info = client.beta.agents.environments.retrieve(env.id)
    assert info.object == "agent.environment" and info.status == "connected" and info.type == "openai_hosted"
    assert token not in client.beta.agents.sessions.retrieve(s.id).model_dump_json()


def test_refused_environments(client: StrictOpenAI) -> None:
    restricted_env: Any = {"type": "openai_hosted", "network": {"access": "restricted", "allowed_domains": ["x.org"]}}
    if ON_CONTAINER_BACKEND:
        # An egress proxy enforces the allowlist there.
        s = client.beta.agents.sessions.create(agent={"model": MODEL}, environment=restricted_env)
        shown: Any = s.environment
        assert shown.type == "openai_hosted"
        assert shown.network.access == "restricted" and shown.network.allowed_domains == ["x.org"]
        client.beta.agents.sessions.delete(s.id)
    else:
        with pytest.raises(openai.UnprocessableEntityError) as restricted:
            client.beta.agents.sessions.create(agent={"model": MODEL}, environment=restricted_env)
        assert restricted.value.code == "unsupported_network_policy"
    with pytest.raises(openai.UnprocessableEntityError) as system:
        client.beta.agents.sessions.create(
            agent={"model": MODEL}, environment={"type": "openai_hosted", "packages": {"system": ["jq"]}}
        )
    assert system.value.code == "unsupported_system_packages"
    with pytest.raises(openai.NotFoundError) as file_id:
        client.beta.agents.sessions.create(
            agent={"model": MODEL},
            environment={"type": "openai_hosted", "files": [{"type": "file_id", "file_id": "f", "path": "/workspace/f"}]},
        )
    assert file_id.value.code == "not_found"
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.sessions.create(
            agent={"model": MODEL},
            environment={"type": "openai_hosted", "files": [{"type": "inline", "path": "/etc/passwd", "data": ""}]},
        )


def test_environment_files(client: StrictOpenAI) -> None:
    # (this SDK has no environments.create: the environment is a session's)
    s = client.beta.agents.sessions.create(
        agent={"model": MODEL},
        environment={"type": "openai_hosted", "setup_commands": [{"command": "echo first > first.txt"}]},
        input=shell("cat first.txt", "done"),
    )
    env_id = s.environment.id  # type: ignore[union-attr]
    settled(client, s.id)
    f = client.beta.agents.environments.files.create(env_id, type="inline", path="/workspace/in.txt", data=b64("in\n"))
    assert (f.object, f.environment_id, f.path, f.size_bytes) == ("agent.environment.file", env_id, "/workspace/in.txt", 3)
    client.beta.agents.sessions.events.create(
        s.id,
        events=[{"type": "agent.session.input.message", "input": shell("cat in.txt; echo seen-in", "copied")}],
    )
    wait_for(lambda: "seen-in" in outputs(client, s.id), "the second command")
    assert "in\nseen-in" in outputs(client, s.id)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.environments.files.create(env_id, type="file_id", file_id="file_1", path="/workspace/x")
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.environments.retrieve("env_missing")


def test_templates(client: StrictOpenAI) -> None:
    t = client.beta.agents.environments.templates.create(
        name="py template",
        env={"SECRET_IN_TEMPLATE": "template-secret-value"},
        setup_commands=[{"command": "echo confidential"}],
        network={"access": "disabled"},
    )
    assert t.object == "agent.environment.template" and t.name == "py template"
    assert t.network.access == "disabled" and t.packages.npm == []
    assert "template-secret-value" not in t.model_dump_json() and "confidential" not in t.model_dump_json()
    with pytest.raises(openai.BadRequestError) as broadened:
        client.beta.agents.sessions.create(
            agent={"model": MODEL},
            environment={"type": "openai_hosted", "environment_template_id": t.id, "network": {"access": "enabled"}},
        )
    assert broadened.value.code == "network_policy_broadened"
    u = client.beta.agents.environments.templates.update(t.id, name="renamed")
    assert u.name == "renamed" and client.beta.agents.environments.templates.retrieve(t.id).name == "renamed"
    assert t.id in [x.id for x in client.beta.agents.environments.templates.list()]
    deleted = client.beta.agents.environments.templates.delete(t.id)
    assert (deleted.id, deleted.deleted, deleted.object) == (t.id, True, "agent.environment.template.deleted")
