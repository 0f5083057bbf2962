"""Each adapter's extra installs on its own: ``pip install './clients/python[EXTRA]'`` into a
fresh virtualenv brings everything the adapter imports, and nothing of the daemon's nor of
the checkout's venv is visible to the new one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.page_examples import install_extra, run_outside

ADAPTERS = {
    "langgraph": "errord_client.adapters.langgraph",
    "langchain": "errord_client.adapters.langchain",
    "openai-agents": "errord_client.adapters.openai_agents",
    "mcp": "errord_client.adapters.mcp",
}
"""Each extra, and the adapter module it is for."""


@pytest.mark.parametrize(("extra", "adapter"), ADAPTERS.items())
def test_the_extra_installs_on_its_own_into_a_fresh_virtualenv(
    extra: str, adapter: str, tmp_path: Path
) -> None:
    python = install_extra(extra, tmp_path / "venv")
    script = f"import importlib.util, {adapter}; print(importlib.util.find_spec('errord'))"
    imported = run_outside(tmp_path, python, "-c", script)
    assert (imported.returncode, imported.stdout) == (0, "None\n"), imported.stderr
