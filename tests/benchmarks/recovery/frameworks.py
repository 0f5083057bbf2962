"""The agent frameworks' stacks, each its default error handling around the same tool:

- langgraph: a ReAct graph (a model node, ``ToolNode`` with its default
  ``handle_tool_errors``, ``tools_condition``); the default hands the model only a call's
  invalid arguments and raises anything else out of the graph.
- openai-agents: an ``Agent`` with ``function_tool``s, whose default failure_error_function
  tells the model "An error occurred while running the tool. Please try again.", run by
  ``Runner.run``; tracing off (it would export to OpenAI).

The scripted model is each framework's model: a graph node, and the SDK's ``Model``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import agents
from agents import Agent, FunctionTool, ModelResponse, RunConfig, Runner, function_tool
from agents.items import TResponseInputItem
from agents.models.interface import Model
from agents.usage import Usage
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from tests.benchmarks.recovery.scripted_model import MAX_CALLS, Call, Observation, ScriptedModel
from tests.benchmarks.recovery.stacks import StackAgent, Tools

# LangGraph


async def think(state: MessagesState, config: RunnableConfig) -> dict[str, list[BaseMessage]]:
    """The graph's model node: the task's scripted model reads the last tool message."""
    model: ScriptedModel = config["configurable"]["model"]
    last = state["messages"][-1]
    observation = Observation(str(last.content)) if isinstance(last, ToolMessage) else None
    step = await model.step(observation)
    if step is None:
        return {"messages": [AIMessage("done")]}
    tool_call = {"id": step.id, "name": step.tool, "args": step.arguments}
    return {"messages": [AIMessage("", tool_calls=[tool_call])]}


def react_graph(node: ToolNode) -> CompiledStateGraph[Any]:
    builder = StateGraph(MessagesState)
    builder.add_node("model", think)
    builder.add_node("tools", node)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile()


@dataclass
class LangGraphAgent:
    graph: CompiledStateGraph[Any]
    notes: Counter[str] = field(default_factory=Counter)

    async def run(self, model: ScriptedModel) -> None:
        config: RunnableConfig = {
            "configurable": {"model": model},
            "recursion_limit": 4 * MAX_CALLS,
        }
        try:
            await self.graph.ainvoke({"messages": [HumanMessage(model.task.query)]}, config)
        except Exception as error:  # the default handle_tool_errors raises the tool's error
            model.raised(error)

    async def close(self) -> None:
        return None


async def with_langgraph(tools: Tools, address: str) -> StackAgent:
    langchain_tools = [
        StructuredTool.from_function(coroutine=tool, name=name, description=tool.__doc__ or name)
        for name, tool in tools.items()
    ]
    return LangGraphAgent(react_graph(ToolNode(langchain_tools)))


# The OpenAI Agents SDK


class AgentsModel(Model):
    """The task's scripted model as the SDK's Model: it reads the last tool output."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    async def get_response(
        self, system_instructions: str | None, input: str | list[TResponseInputItem], *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:  # fmt: skip
        items: list[Any] = list(input) if isinstance(input, list) else []
        outputs = [
            item["output"]
            for item in items
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        observation = Observation(str(outputs[-1])) if outputs else None
        step = await self.model.step(observation)
        return ModelResponse(output=_answer(step), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the benchmark's model does not stream")


def _answer(step: Call | None) -> list[Any]:
    if step is not None:
        arguments = json.dumps(step.arguments)
        return [
            ResponseFunctionToolCall(
                id=f"item-{step.id}", call_id=step.id, name=step.tool, arguments=arguments,
                type="function_call",
            )
        ]  # fmt: skip
    text = ResponseOutputText(text="done", type="output_text", annotations=[])
    return [
        ResponseOutputMessage(
            id="item-final", role="assistant", status="completed", type="message", content=[text]
        )
    ]


@dataclass
class OpenAIAgentsAgent:
    tools: list[FunctionTool]
    notes: Counter[str] = field(default_factory=Counter)

    async def run(self, model: ScriptedModel) -> None:
        agent = Agent(
            name="searcher",
            instructions="Search.",
            tools=list(self.tools),
            model=AgentsModel(model),
        )
        try:
            await Runner.run(agent, model.task.query, run_config=RunConfig(tracing_disabled=True))
        except Exception as error:
            model.raised(error)

    async def close(self) -> None:
        return None


async def with_openai_agents(tools: Tools, address: str) -> StackAgent:
    agents.set_tracing_disabled(True)
    return OpenAIAgentsAgent(
        [function_tool(tool, name_override=name) for name, tool in tools.items()]
    )
