"""Repositories in, branches out, through the Python SDK (every typed response strictly validated): a session whose
environment starts from a git repository (a path on this machine: the server runs with --allow-local-repositories),
the agent's change committed and pushed onto a branch after its turn, read back with the SDK's raw requests."""

from __future__ import annotations

import os
import subprocess
import tempfile
from typing import Any

from support import MODEL, StrictOpenAI, settled, shell

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: str, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.name=py", "-c", "user.email=py@localhost", *args],
        cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True,
    )
    return out.stdout.strip()


def test_repository_to_pushed_branch(client: StrictOpenAI) -> None:
    src = tempfile.mkdtemp(prefix="cas-py-repo-")
    git(src, "init", "-q", "-b", "main")
    with open(os.path.join(src, "README.md"), "w") as f:
        f.write("hello from python\n")
    git(src, "add", "-A")
    git(src, "commit", "-qm", "first")
    base = git(src, "rev-parse", "HEAD")

    s = client.beta.agents.sessions.create(
        agent={"model": MODEL},
        environment={
            "type": "openai_hosted",
            "repositories": [{"url": src, "output": {"type": "branch", "branch": "py/fix"}}],
        },  # type: ignore[typeddict-unknown-key]
        input=shell("cat README.md && echo fixed >> README.md", "done"),
    )
    env: Any = s.environment
    assert env.type == "openai_hosted"
    # The extension field rides along on the SDK's model (its extra fields).
    assert env.model_extra["repositories"][0]["url"] == src
    assert settled(client, s.id).status == "idle"

    repos: Any = client.get(f"/agents/sessions/{s.id}/repositories", cast_to=object)
    (repo,) = repos["data"]
    assert repo["base_commit"] == base and repo["branch"] == "main"
    (out,) = repo["outputs"]
    assert out["branch"] == "py/fix" and out["push"] == "pushed"
    assert git(src, "rev-parse", "py/fix") == out["commit"]
    assert git(src, "show", "py/fix:README.md") == "hello from python\nfixed"
