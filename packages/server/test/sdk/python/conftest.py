from __future__ import annotations

import sys
import os
from typing import Any, Iterator

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from support import MODEL, NONE_ENV, VALIDATED, StrictOpenAI, client_kwargs, settled  # noqa: E402


def pytest_terminal_summary(terminalreporter: Any) -> None:
    total = sum(VALIDATED.values())
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(VALIDATED.items()))
    terminalreporter.write_line(f"strictly validated {total} SDK responses and stream events: {kinds}")


@pytest.fixture(scope="session")
def client() -> Iterator[StrictOpenAI]:
    with StrictOpenAI(**client_kwargs()) as c:
        yield c


@pytest.fixture
def idle_session(client: StrictOpenAI) -> Any:
    """A fresh session (inline agent) whose first turn has finished."""
    s = client.beta.agents.sessions.create(environment=NONE_ENV, agent={"model": MODEL}, input="Reply with exactly: ready")
    return settled(client, s.id)
