// Plays the agent conformance scenarios (scenarios/agent.json, read from stdin) on the real
// Pi 0.83.0: pi-agent-core's Agent streaming from pi-ai's faux provider. Prints one JSON
// result per scenario: every agent event as JSON at the moment it was emitted, the outcome of
// each step, the context of every provider request, and the agent's final state.
// agent_runner.py does the same with pi_notebook; test_agent_conformance.py diffs the two.
import { Agent } from "@earendil-works/pi-agent-core";
import { registerFauxProvider, streamSimple } from "@earendil-works/pi-ai/compat";

const SCENARIO_TIMEOUT_MS = 10000;

const DEFAULT_PARAMETERS = {
  type: "object",
  properties: { text: { type: "string" } },
  required: ["text"],
};

const plain = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));
const userMessage = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function echoResult(args, extra = {}) {
  return { content: [{ type: "text", text: JSON.stringify(args) }], details: { args }, ...extra };
}

// Tool behaviours; agent_runner.py implements the same names identically.
function makeTool(spec) {
  const behaviours = {
    echo: async (_id, args) => echoResult(args),
    throw: async () => {
      throw new Error(spec.error ?? "tool failed");
    },
    delay: async (_id, args) => {
      await sleep(spec.delayMs ?? 10);
      return echoResult(args);
    },
    update: async (_id, args, _signal, onUpdate) => {
      onUpdate?.({ content: [{ type: "text", text: "working" }], details: { step: 1 } });
      return echoResult(args);
    },
    wait_abort: async (_id, args, signal, onUpdate) => {
      onUpdate?.({ content: [{ type: "text", text: "waiting" }], details: {} });
      if (!signal.aborted) {
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      }
      return echoResult(args, { details: { aborted: true } });
    },
    terminate: async (_id, args) => echoResult(args, { terminate: true }),
    bare: async (_id, args) => ({ content: [{ type: "text", text: JSON.stringify(args) }] }),
    image: async () => ({
      content: [
        { type: "text", text: "a chart" },
        { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
      ],
      details: {},
    }),
  };
  const execute = behaviours[spec.behaviour];
  if (!execute) throw new Error(`unknown tool behaviour ${spec.behaviour}`);
  const tool = {
    name: spec.name,
    label: spec.name,
    description: spec.description ?? `The ${spec.name} tool`,
    parameters: spec.parameters ?? DEFAULT_PARAMETERS,
    execute,
  };
  if (spec.executionMode) tool.executionMode = spec.executionMode;
  if (spec.prepare?.rename) {
    // Renames legacy argument names; returns the same object when there is nothing to rename.
    tool.prepareArguments = (args) => {
      const renames = Object.entries(spec.prepare.rename).filter(([from]) => from in args);
      if (renames.length === 0) return args;
      const prepared = { ...args };
      for (const [from, to] of renames) {
        prepared[to] = prepared[from];
        delete prepared[from];
      }
      return prepared;
    };
  }
  return tool;
}

function makeResponse(spec) {
  if (spec.throw !== undefined) {
    return () => {
      throw new Error(spec.throw);
    };
  }
  const message = {
    role: "assistant",
    content: structuredClone(spec.content ?? []),
    api: "faux",
    provider: "faux",
    model: "faux-1",
    usage: {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: spec.stopReason ?? "stop",
    timestamp: Date.now(),
  };
  for (const block of message.content) {
    // Pi's fauxToolCall: a call without an id gets a random one.
    if (block.type === "toolCall" && block.id === undefined) {
      block.id = `tool:${Date.now()}:${Math.random().toString(36).slice(2)}`;
    }
  }
  if (spec.errorMessage !== undefined) message.errorMessage = spec.errorMessage;
  return message;
}

// The "notes" convertToLlm: a custom {role: "note", text} message becomes a user message.
function convertNotes(messages) {
  return messages.flatMap((message) => {
    if (message.role === "note") return [userMessage(`Note: ${message.text}`)];
    return ["user", "assistant", "toolResult"].includes(message.role) ? [message] : [];
  });
}

function convertThrows() {
  throw new Error("convertToLlm failed");
}

function hookRules(rules, toolName) {
  return (rules ?? []).filter((rule) => rule.tool === toolName);
}

function makeHooks(hooks, getAgent) {
  const options = {};
  if (hooks?.beforeToolCall) {
    options.beforeToolCall = async ({ toolCall, args }) => {
      for (const rule of hookRules(hooks.beforeToolCall, toolCall.name)) {
        if (rule.abort) getAgent().abort();
        if (rule.throw) throw new Error(rule.throw);
        if (rule.rewrite) Object.assign(args, rule.rewrite);
        if (rule.block) return rule.reason === undefined ? { block: true } : { block: true, reason: rule.reason };
      }
      return undefined;
    };
  }
  if (hooks?.afterToolCall) {
    options.afterToolCall = async ({ toolCall }) => {
      for (const rule of hookRules(hooks.afterToolCall, toolCall.name)) {
        if (rule.throw) throw new Error(rule.throw);
        const override = {};
        if (rule.content !== undefined) override.content = [{ type: "text", text: rule.content }];
        if (rule.details !== undefined) override.details = rule.details;
        if (rule.isError !== undefined) override.isError = rule.isError;
        if (rule.terminate !== undefined) override.terminate = rule.terminate;
        return override;
      }
      return undefined;
    };
  }
  return options;
}

// An event matcher {type, role?, event?, nth}: the nth event of that type (and message role,
// or assistant event type for message_update) since the scenario started.
function makeMatcher(at) {
  let seen = 0;
  return (event) => {
    if (event.type !== at.type) return false;
    if (at.role !== undefined && event.message?.role !== at.role) return false;
    if (at.event !== undefined && event.assistantMessageEvent?.type !== at.event) return false;
    seen += 1;
    return seen === (at.nth ?? 1);
  };
}

async function runScenario(scenario) {
  const faux = registerFauxProvider({
    api: "faux",
    provider: "faux",
    tokenSize: scenario.tokenSize ?? { min: 2, max: 2 },
    tokensPerSecond: scenario.tokensPerSecond,
  });
  faux.setResponses((scenario.responses ?? []).map(makeResponse));
  const requests = [];
  const streamFn = (model, context, options) => {
    requests.push(
      plain({
        systemPrompt: context.systemPrompt,
        messages: context.messages,
        tools: (context.tools ?? []).map((tool) => tool.name),
      }),
    );
    return streamSimple(model, context, options);
  };
  const agent = new Agent({
    streamFn,
    initialState: {
      model: faux.getModel(),
      systemPrompt: scenario.systemPrompt ?? "",
      tools: (scenario.tools ?? []).map(makeTool),
      messages: structuredClone(scenario.initialMessages ?? []),
    },
    toolExecution: scenario.options?.toolExecution,
    steeringMode: scenario.options?.steeringMode,
    followUpMode: scenario.options?.followUpMode,
    sessionId: scenario.options?.sessionId,
    convertToLlm: { notes: convertNotes, throw: convertThrows }[scenario.convertToLlm],
    transformContext: scenario.transformContext
      ? async (messages) => messages.slice(-scenario.transformContext.lastMessages)
      : undefined,
    ...makeHooks(scenario.hooks, () => agent),
  });

  const events = [];
  const kept = []; // the event objects themselves, serialised after the run ("late": true)
  const actionErrors = [];
  const actions = (scenario.actions ?? []).map((action) => ({ ...action, matches: makeMatcher(action.at) }));
  agent.subscribe((event) => {
    events.push(plain(event));
    if (scenario.late) kept.push(event);
    for (const action of actions) {
      if (!action.matches(event)) continue;
      if (action.do === "abort") agent.abort();
      else if (action.do === "steer") agent.steer(userMessage(action.text));
      else if (action.do === "followUp") agent.followUp(userMessage(action.text));
      else if (action.do === "reset") agent.reset();
      else if (action.do === "prompt") {
        agent.prompt(action.text).catch((error) => actionErrors.push(error.message));
      }
    }
  });
  for (const listener of scenario.listeners ?? []) {
    const matches = makeMatcher(listener.throwAt);
    agent.subscribe((event) => {
      if (matches(event)) throw new Error(listener.message);
    });
  }

  const steps = [];
  for (const step of scenario.steps ?? []) {
    try {
      if (step.prompt !== undefined) await agent.prompt(step.prompt);
      else if (step.continue) await agent.continue();
      else if (step.steer !== undefined) agent.steer(userMessage(step.steer));
      else if (step.followUp !== undefined) agent.followUp(userMessage(step.followUp));
      steps.push({ ok: true });
    } catch (error) {
      steps.push({ error: error.message });
    }
  }
  await agent.waitForIdle();
  faux.unregister();
  const state = agent.state;
  return {
    events,
    ...(scenario.late ? { lateEvents: plain(kept) } : {}),
    steps,
    actionErrors,
    requests,
    pendingResponses: faux.getPendingResponseCount(),
    state: plain({
      messages: state.messages,
      errorMessage: state.errorMessage,
      isStreaming: state.isStreaming,
      streamingMessage: state.streamingMessage,
      pendingToolCalls: [...state.pendingToolCalls].sort(),
      hasQueuedMessages: agent.hasQueuedMessages(),
    }),
  };
}

async function main() {
  let input = "";
  for await (const chunk of process.stdin) input += chunk;
  const scenarios = JSON.parse(input);
  const results = {};
  for (const scenario of scenarios) {
    // One broken or hung scenario must not hide the results of the others.
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error("scenario timed out")), SCENARIO_TIMEOUT_MS);
    });
    try {
      results[scenario.name] = await Promise.race([runScenario(scenario), timeout]);
    } catch (error) {
      results[scenario.name] = { runnerError: `${error.name}: ${error.message}` };
    } finally {
      clearTimeout(timer);
    }
  }
  process.stdout.write(JSON.stringify(results));
}

await main();
