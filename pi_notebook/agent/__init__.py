"""``pi_notebook.agent``: Pi's agent loop and the stateful ``Agent`` (``pi-agent-core``).

* ``loop``: the stateless loop (``agent_loop``, ``run_agent_loop`` and their ``_continue``
  forms) that streams turns and runs tools, emitting ``AgentEvent``s.
* ``agent``: ``Agent``, which owns the transcript, the queues and the active run.
* ``tools``: tool batches and the worker threads for sync tool code; ``decorator``: ``@tool``.
* ``types``: messages, tools, hook contexts, the loop config and the events.

Imports only ``pi_notebook.ai``; never IPython. Every name loads its module on first access
(``pi_notebook._lazy``), so ``from pi_notebook.agent import Agent`` loads no ``@tool`` machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
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
    from .run_options import AgentRunOptions
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

_HOMES = {
    "AfterToolCallContext": "types",
    "AfterToolCallResult": "types",
    "Agent": "agent",
    "AgentContext": "types",
    "AgentEndEvent": "types",
    "AgentEvent": "types",
    "AgentEventSink": "types",
    "AgentListener": "types",
    "AgentLoopConfig": "types",
    "AgentLoopTurnUpdate": "types",
    "AgentRunOptions": "run_options",
    "AgentMessage": "types",
    "AgentStartEvent": "types",
    "AgentState": "agent",
    "AgentTool": "types",
    "AgentToolResult": "types",
    "AgentToolUpdateCallback": "types",
    "BeforeToolCallContext": "types",
    "BeforeToolCallResult": "types",
    "ConvertToLlm": "types",
    "CustomAgentMessage": "types",
    "FunctionTool": "decorator",
    "MessageEndEvent": "types",
    "MessageSource": "types",
    "MessageStartEvent": "types",
    "MessageUpdateEvent": "types",
    "PrepareNextTurnContext": "types",
    "QueueMode": "types",
    "ShouldStopAfterTurnContext": "types",
    "StreamFn": "types",
    "ThinkingLevel": "types",
    "ToolExecutionEndEvent": "types",
    "ToolExecutionMode": "types",
    "ToolExecutionStartEvent": "types",
    "ToolExecutionUpdateEvent": "types",
    "TransformContext": "types",
    "TurnContext": "types",
    "TurnEndEvent": "types",
    "TurnStartEvent": "types",
    "agent_loop": "loop",
    "agent_loop_continue": "loop",
    "get_default_stream_fn": "loop",
    "run_agent_loop": "loop",
    "run_agent_loop_continue": "loop",
    "set_default_stream_fn": "loop",
    "tool": "decorator",
}
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
    "AgentRunOptions",
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


__getattr__, __dir__ = exports(__name__, _HOMES, __all__)
