"""errord where agents are built: adapters for agent frameworks, each an optional extra.

- ``errord_client.adapters.langgraph`` (``errord-client[langgraph]``): a node usable wherever
  LangGraph's ``ToolNode`` is.
- ``errord_client.adapters.openai_agents`` (``errord-client[openai-agents]``): the OpenAI
  Agents SDK's function tools guarded by errord.
- ``errord_client.adapters.mcp`` (``errord-client[mcp]``): an MCP ClientSession whose
  tools are called through the executor.

Importing one needs its framework; this package imports none of them.
"""
