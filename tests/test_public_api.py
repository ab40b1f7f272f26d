"""The public API, pinned: the exact ``__all__`` of ``pi_notebook``, ``pi_notebook.ai``,
``pi_notebook.agent``, ``pi_notebook.notebook``, ``pi_notebook.runtime`` and
``pi_notebook.runtime.extensions`` (a change to the public names must change this file too),
every exported name importable, and every module-level ``__all__`` in the two core packages
complete.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import pi_notebook
import pi_notebook.agent
import pi_notebook.ai
import pi_notebook.notebook

TOP_LEVEL = [
    "AgentSession",
    "__version__",
    "current",
    "load_ipython_extension",
    "unload_ipython_extension",
]

AI = [
    "AbortController",
    "AbortError",
    "AbortSignal",
    "ApiProvider",
    "AssistantMessage",
    "AssistantMessageDiagnostic",
    "AssistantMessageEvent",
    "AssistantMessageEventStream",
    "CacheRetention",
    "Context",
    "Cost",
    "CostTier",
    "DoneEvent",
    "ErrorEvent",
    "EventStream",
    "ImageContent",
    "LlmMessage",
    "Message",
    "Model",
    "ModelCost",
    "ModelNotFoundError",
    "ModelThinkingLevel",
    "RetryPolicy",
    "SimpleStreamOptions",
    "StartEvent",
    "StopReason",
    "StreamOptions",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevel",
    "ThinkingStartEvent",
    "Tool",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolResultMessage",
    "TypeBoxSchema",
    "Usage",
    "UserMessage",
    "calculate_cost",
    "clamp_thinking_level",
    "complete",
    "complete_simple",
    "content_text",
    "get_api_provider",
    "get_env_api_key",
    "get_model",
    "get_models",
    "get_providers",
    "get_supported_thinking_levels",
    "is_context_overflow",
    "is_retryable_assistant_error",
    "message_text",
    "models_are_equal",
    "now_ms",
    "openai_compatible_model",
    "parse_streaming_json",
    "register_api_provider",
    "register_models",
    "resolve_model",
    "retry_assistant_call",
    "sanitize_surrogates",
    "stream",
    "stream_simple",
    "transform_messages",
    "unregister_api_providers",
    "validate_tool_arguments",
    "validate_tool_call",
]

AGENT = [
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

NOTEBOOK = [
    "LiveView",
    "NotebookState",
    "PiConfig",
    "PiMagics",
    "PiResult",
    "RunFailed",
    "RunView",
    "StateObserver",
    "StaticView",
    "ask_approval",
    "load_ipython_extension",
    "render_html",
    "render_text",
    "run_pi",
    "run_pi_sync",
    "state_for",
    "unload_ipython_extension",
]

RUNTIME = [
    "AgentSession",
    "AgentSessionEvent",
    "AgentSessionSettings",
    "AgentSettledEvent",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "Budget",
    "BudgetReachedEvent",
    "CompactionEndEvent",
    "CompactionStartEvent",
    "EntryAppendedEvent",
    "QueueUpdateEvent",
    "RetrySettings",
    "SessionAgentEndEvent",
    "SessionInfoChangedEvent",
    "SessionWriteEvent",
    "Spend",
    "StreamingBehavior",
    "SummarizationRetryAttemptStartEvent",
    "SummarizationRetryFinishedEvent",
    "SummarizationRetryScheduledEvent",
    "ThinkingLevelChangedEvent",
]

EXTENSIONS = [
    "AgentEndEvent",
    "BeforeAgentStartEvent",
    "BeforeAgentStartResult",
    "ContextEvent",
    "ContextResult",
    "Extension",
    "ExtensionAPI",
    "ExtensionContext",
    "ExtensionError",
    "ExtensionRunner",
    "ExtensionUI",
    "InputEvent",
    "InputResult",
    "MessageEndEvent",
    "MessageEndResult",
    "ModelSelectEvent",
    "NoUI",
    "ProviderConfig",
    "RegisteredCommand",
    "SessionBeforeCompactEvent",
    "SessionBeforeCompactResult",
    "SessionShutdownEvent",
    "SessionStartEvent",
    "ToolCallEvent",
    "ToolCallResult",
    "ToolResultEvent",
    "ToolResultResult",
    "discover_extensions",
    "load_extension",
]

PINNED = {
    "pi_notebook": TOP_LEVEL,
    "pi_notebook.ai": AI,
    "pi_notebook.agent": AGENT,
    "pi_notebook.notebook": NOTEBOOK,
    "pi_notebook.runtime": RUNTIME,
    "pi_notebook.runtime.extensions": EXTENSIONS,
}


@pytest.mark.parametrize("package", sorted(PINNED))
def test_all_is_the_pinned_sorted_list(package: str) -> None:
    exported = importlib.import_module(package).__all__
    assert exported == sorted(exported), f"{package}.__all__ is not sorted"
    assert exported == PINNED[package]


@pytest.mark.parametrize("package", sorted(PINNED))
def test_every_exported_name_is_importable(package: str) -> None:
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)  # what a star import really binds
    assert set(module.__all__) <= set(namespace)


def test_importing_the_notebook_package_loads_none_of_its_modules() -> None:
    """``pi_notebook.notebook`` resolves its names on first access, so importing it (as
    ``%load_ext`` does) costs nothing beyond the package itself."""
    code = (
        "import sys, pi_notebook.notebook\n"
        "print(sorted(m for m in sys.modules if m.startswith('pi_notebook.notebook.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def _new_modules(setup: str, code: str) -> list[str]:
    """The modules ``code`` imports in a fresh interpreter after ``setup`` ran."""
    script = f"import sys\n{setup}\nbefore = set(sys.modules)\n{code}\n"
    script += "print(sorted(set(sys.modules) - before))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    return list(ast.literal_eval(out.stdout.strip().splitlines()[-1]))


HEAVY = ("pydantic", "httpx", "jiter", "ipywidgets", "markdown_it", "importlib.metadata")


def test_the_core_packages_load_their_modules_on_first_use() -> None:
    """``import pi_notebook.ai`` / ``pi_notebook.agent`` load no module of theirs and nothing
    heavy; a name loads the module that defines it."""
    loaded = _new_modules("", "import pi_notebook.ai, pi_notebook.agent")
    assert [m for m in loaded if m.startswith(("pi_notebook.ai.", "pi_notebook.agent.", *HEAVY))] == []
    loaded = _new_modules("import pi_notebook.ai", "from pi_notebook.ai import ThinkingLevel")
    assert loaded == ["pi_notebook.ai.levels"]


def test_load_ext_loads_no_agent_provider_widget_or_renderer() -> None:
    """``%load_ext pi_notebook`` imports only the light notebook modules: the agent, the data
    model (pydantic), httpx, ipywidgets and the Markdown renderers load with the first run."""
    setup = (
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()"
    )
    loaded = _new_modules(setup, "shell.run_line_magic('load_ext', 'pi_notebook')")
    assert "pi_notebook.notebook.magics" in loaded  # the extension did load
    heavy = ("pi_notebook.agent", "pi_notebook.session", "pi_notebook.mcp", "pi_notebook.ai.types")
    assert [m for m in loaded if m.startswith((*heavy, *HEAVY))] == []


def _core_modules() -> list[ModuleType]:
    """Every module of ``pi_notebook.ai`` and ``pi_notebook.agent`` (without the provider
    implementations in ``pi_notebook.ai.providers``, which the registry loads on demand)."""
    modules: list[ModuleType] = []
    for package in (pi_notebook.ai, pi_notebook.agent):
        modules.append(package)
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            if not info.ispkg:
                modules.append(importlib.import_module(info.name))
    return modules


def _defined_public_names(module: ModuleType) -> set[str]:
    """Names a module defines at top level (functions, classes, assignments) without a
    leading underscore."""
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text("utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_")}


@pytest.mark.parametrize("module", _core_modules(), ids=lambda m: m.__name__)
def test_module_all_is_complete_where_present(module: ModuleType) -> None:
    exported = getattr(module, "__all__", None)
    if exported is None:
        return
    assert len(exported) == len(set(exported)), f"{module.__name__}.__all__ has duplicates"
    assert [name for name in exported if not hasattr(module, name)] == []
    assert sorted(_defined_public_names(module) - set(exported)) == []
