"""Agents: create / retrieve / update / list (cursor pagination) / delete."""

from __future__ import annotations

import uuid

import openai
import pytest
from openai.types.beta.agent import Agent

from strict import check
from support import MODEL, StrictOpenAI, raw_json


def test_create_retrieve_update_delete(client: StrictOpenAI) -> None:
    raw = client.beta.agents.with_raw_response.create(
        model=MODEL, name="helper", instructions="Be brief.", metadata={"team": "py"}
    )
    assert raw.http_response.status_code == 200
    body = raw_json(raw)
    check(Agent, body, "POST /v1/agents (raw)")
    agent = raw.parse()
    assert (agent.object, agent.model, agent.name, agent.instructions, agent.metadata) == (
        "agent", MODEL, "helper", "Be brief.", {"team": "py"}
    )
    assert agent.id == body["id"] and isinstance(agent.created_at, int)

    got = client.beta.agents.retrieve(agent.id)
    assert got.model_dump() == agent.model_dump()

    updated = client.beta.agents.update(agent.id, name="renamed", metadata={"team": "sdk"}, reasoning={"effort": "high"})
    assert (updated.name, updated.instructions, updated.metadata) == ("renamed", "Be brief.", {"team": "sdk"})
    assert updated.reasoning.effort == "high"
    assert updated.updated_at >= agent.updated_at
    # null clears the name (AgentUpdateParams)
    assert client.beta.agents.update(agent.id, name=None).name is None

    deleted = client.beta.agents.delete(agent.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (agent.id, "agent.deleted", True)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.retrieve(agent.id)


def test_list_paginates_with_the_cursor(client: StrictOpenAI) -> None:
    tag = uuid.uuid4().hex[:8]
    made = [client.beta.agents.create(model=MODEL, name=f"{tag}-{i}").id for i in range(5)]

    first = client.beta.agents.list(limit=2)
    assert len(first.data) == 2 and first.has_more is True and first.has_next_page()
    second = first.get_next_page()
    assert len(second.data) == 2
    assert not {a.id for a in first.data} & {a.id for a in second.data}

    # Auto-pagination walks every page (after = the last id of the page) without loss or duplicates.
    desc = [a.id for a in client.beta.agents.list(limit=2)]
    asc = [a.id for a in client.beta.agents.list(limit=2, order="asc")]
    assert len(desc) == len(set(desc)) and set(made) <= set(desc)
    assert [i for i in desc if i in made] == list(reversed(made))
    assert [i for i in asc if i in made] == made
    assert sorted(desc) == sorted(asc)
    # `after` is exclusive in the selected order.
    after = client.beta.agents.list(after=made[1], order="asc", limit=3)
    assert [a.id for a in after.data][:3] == made[2:5]
    for agent_id in made:
        client.beta.agents.delete(agent_id)
