"""Vaults and credentials through the Python SDK (every response strictly validated): CRUD, write-only secrets,
rotation of a credential's secret, what is refused, a session's vault_ids."""

from __future__ import annotations

import uuid

import openai
import pytest

from support import MODEL, NONE_ENV, StrictOpenAI


def test_vaults_and_credentials(client: StrictOpenAI) -> None:
    v = client.beta.agents.vaults.create(name="python vault", metadata={"team": "py"})
    assert (v.object, v.name, v.metadata) == ("vault", "python vault", {"team": "py"})
    secret = f"py-secret-{uuid.uuid4().hex}"
    c = client.beta.agents.vaults.credentials.create(
        v.id,
        name="docs",
        auth={"type": "static_bearer", "token": secret, "mcp_server_url": "https://mcp.example.com/mcp"},
    )
    assert c.object == "vault.credential" and c.vault_id == v.id and c.auth.type == "static_bearer"
    o = client.beta.agents.vaults.credentials.create(
        v.id,
        name="oauth",
        auth={
            "type": "mcp_oauth",
            "access_token": secret + "-access",
            "mcp_server_url": "https://oauth.example.com/mcp",
            "refresh": {
                "client_id": "cid",
                "refresh_token": secret + "-refresh",
                # (An address: a name would be resolved when the credential is saved, and this suite stays offline.)
                "token_endpoint": "https://93.184.216.34/token",
                "token_endpoint_auth": {"type": "none"},
            },
        },
    )
    assert o.auth.type == "mcp_oauth" and o.auth.expires_at is None  # type: ignore[union-attr]
    rotated = client.beta.agents.vaults.credentials.update(
        c.id, vault_id=v.id, auth={"type": "static_bearer", "token": secret + "-2"}, metadata={"rotated": "yes"}
    )
    assert rotated.metadata == {"rotated": "yes"}
    listed = client.beta.agents.vaults.credentials.list(v.id)
    assert [x.id for x in listed] == [o.id, c.id]
    everything = [
        c.model_dump_json(),
        o.model_dump_json(),
        rotated.model_dump_json(),
        client.beta.agents.vaults.credentials.retrieve(c.id, vault_id=v.id).model_dump_json(),
        client.beta.agents.vaults.retrieve(v.id).model_dump_json(),
    ]
    assert all(secret not in x for x in everything)
    assert v.id in [x.id for x in client.beta.agents.vaults.list(status=["active"])]

    s = client.beta.agents.sessions.create(agent={"model": MODEL}, environment=NONE_ENV, vault_ids=[v.id])
    assert s.vault_ids == [v.id]
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.sessions.create(agent={"model": MODEL}, environment=NONE_ENV, vault_ids=["vault_nope"])
    with pytest.raises(openai.UnprocessableEntityError) as env_var:
        client.beta.agents.vaults.credentials.create(
            v.id,
            name="env",
            auth={
                "type": "environment_variable",
                "secret_name": "API_KEY",
                "secret_value": "x",
                "networking": {"type": "unrestricted"},
            },
        )
    assert env_var.value.code == "unsupported_credential_type"

    d = client.beta.agents.vaults.credentials.delete(c.id, vault_id=v.id)
    assert (d.id, d.deleted, d.object) == (c.id, True, "vault.credential.deleted")
    gone = client.beta.agents.vaults.delete(v.id)
    assert (gone.id, gone.deleted, gone.object) == (v.id, True, "vault.deleted")
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.vaults.retrieve(v.id)
