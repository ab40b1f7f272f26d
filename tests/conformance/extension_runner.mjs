// Pi 0.83.0's own ExtensionRunner on declared extensions: every handler is a list entry saying
// what it does (return a value, throw, change the event, record what it saw). For each
// scenario the runner's emit* method for the event is called as AgentSession calls it, and
// what it returned (or threw), the errors it reported and what each handler saw are written
// out. test_extension_runner_conformance.py runs the same declarations through pi_notebook's
// ExtensionRunner and compares.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const core = join(here, "node_modules/@earendil-works/pi-coding-agent/dist/core");
const { ExtensionRunner } = await import(join(core, "extensions/runner.js"));

function handlerOf(spec, seen) {
  return async (event) => {
    seen.push(spec.see ? structuredClone(spec.see.map((key) => event[key])) : null);
    if (spec.set) Object.assign(event[spec.set.field], spec.set.value);
    if (spec.throws) throw new Error(spec.throws);
    return spec.returns === null ? undefined : spec.returns;
  };
}

async function run(scenario) {
  const seen = [];
  const extensions = scenario.extensions.map((handlers, index) => ({
    path: `ext${index}`,
    handlers: new Map([[scenario.event, handlers.map((spec) => handlerOf(spec, seen))]]),
  }));
  const runner = new ExtensionRunner(extensions, {}, "/tmp", undefined, undefined);
  const errors = [];
  runner.onError((error) => errors.push([error.extensionPath, error.event, error.error]));
  const input = structuredClone(scenario.input);
  let result;
  let threw = null;
  try {
    switch (scenario.event) {
      case "tool_call":
        result = await runner.emitToolCall({ type: "tool_call", ...input });
        break;
      case "tool_result":
        result = await runner.emitToolResult({ type: "tool_result", ...input });
        break;
      case "input":
        result = await runner.emitInput(input.text, input.images, "interactive", undefined);
        break;
      case "context":
        result = await runner.emitContext(input.messages);
        break;
      case "before_agent_start":
        result = await runner.emitBeforeAgentStart(input.prompt, input.images, input.systemPrompt, {});
        break;
      case "message_end":
        result = await runner.emitMessageEnd({ type: "message_end", message: input.message });
        break;
      default:
        result = await runner.emit({ type: scenario.event, ...input });
    }
  } catch (error) {
    threw = error.message;
  }
  return { result: result ?? null, threw, errors, seen, input };
}

const scenarios = JSON.parse(readFileSync(0, "utf-8"));
const out = {};
for (const [name, scenario] of Object.entries(scenarios)) out[name] = await run(scenario);
process.stdout.write(JSON.stringify(out));
