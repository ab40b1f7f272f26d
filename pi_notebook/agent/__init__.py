"""``pi_notebook.agent``: Pi's agent loop and the stateful ``Agent`` (``pi-agent-core``).

Imports only ``pi_notebook.ai``; never IPython.
"""

from __future__ import annotations

from .types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
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
    MessageEndEvent,
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
    TurnContext,
    TurnEndEvent,
    TurnStartEvent,
)

__all__ = [
    "AfterToolCallContext", "AfterToolCallResult", "AgentContext", "AgentEndEvent", "AgentEvent",
    "AgentListener", "AgentLoopConfig", "AgentLoopTurnUpdate", "AgentMessage", "AgentStartEvent", "AgentTool",
    "AgentToolResult", "AgentToolUpdateCallback", "BeforeToolCallContext", "BeforeToolCallResult",
    "MessageEndEvent", "MessageStartEvent", "MessageUpdateEvent", "PrepareNextTurnContext", "QueueMode",
    "ShouldStopAfterTurnContext", "StreamFn", "ThinkingLevel", "ToolExecutionEndEvent", "ToolExecutionMode",
    "ToolExecutionStartEvent", "ToolExecutionUpdateEvent", "TurnContext", "TurnEndEvent", "TurnStartEvent",
]
# The agent-core helper adds: Agent, AgentState, agent_loop, agent_loop_continue, run_agent_loop,
# run_agent_loop_continue, set_default_stream_fn, tool.
