"""``pi_notebook.agent``: Pi's agent loop and the stateful ``Agent`` (``pi-agent-core``).

* ``loop``: the stateless loop (``agent_loop``, ``run_agent_loop`` and their ``_continue``
  forms) that streams turns and runs tools, emitting ``AgentEvent``s.
* ``agent``: ``Agent``, which owns the transcript, the queues and the active run.
* ``tools``: tool batches and the worker threads for sync tool code; ``decorator``: ``@tool``.
* ``types``: messages, tools, hook contexts, the loop config and the events.

Imports only ``pi_notebook.ai``; never IPython.
"""

from __future__ import annotations

from .agent import Agent, AgentState
from .decorator import FunctionTool, tool
from .loop import (
    agent_loop,
    agent_loop_continue,
    get_default_stream_fn,
    run_agent_loop,
    run_agent_loop_continue,
    set_default_stream_fn,
)
from .types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentEventSink,
    AgentListener,
    AgentLoopConfig,
    AgentLoopTurnUpdate,
    AgentMessage,
    AgentStartEvent,
    AgentTool,
    AgentToolResult,
    AgentToolUpdateCallback,
    BeforeToolCallContext,
    BeforeToolCallResult,
    ConvertToLlm,
    CustomAgentMessage,
    MessageEndEvent,
    MessageSource,
    MessageStartEvent,
    MessageUpdateEvent,
    PrepareNextTurnContext,
    QueueMode,
    ShouldStopAfterTurnContext,
    StreamFn,
    ThinkingLevel,
    ToolExecutionEndEvent,
    ToolExecutionMode,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TransformContext,
    TurnContext,
    TurnEndEvent,
    TurnStartEvent,
)

__all__ = [
    "AfterToolCallContext",
    "AfterToolCallResult",
    "Agent",
    "AgentContext",
    "AgentEndEvent",
    "AgentEvent",
    "AgentEventSink",
    "AgentListener",
    "AgentLoopConfig",
    "AgentLoopTurnUpdate",
    "AgentMessage",
    "AgentStartEvent",
    "AgentState",
    "AgentTool",
    "AgentToolResult",
    "AgentToolUpdateCallback",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "ConvertToLlm",
    "CustomAgentMessage",
    "FunctionTool",
    "MessageEndEvent",
    "MessageSource",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "PrepareNextTurnContext",
    "QueueMode",
    "ShouldStopAfterTurnContext",
    "StreamFn",
    "ThinkingLevel",
    "ToolExecutionEndEvent",
    "ToolExecutionMode",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "TransformContext",
    "TurnContext",
    "TurnEndEvent",
    "TurnStartEvent",
    "agent_loop",
    "agent_loop_continue",
    "get_default_stream_fn",
    "run_agent_loop",
    "run_agent_loop_continue",
    "set_default_stream_fn",
    "tool",
]
