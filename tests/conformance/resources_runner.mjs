// Pi 0.83.0's own resource loader on folder trees (from stdin: a list of scenarios, each with
// cwd, agentDir, home, a base system prompt and prompts to expand). For each: Pi's trust rules
// (hasTrustRequiringProjectResources, the trust store), then DefaultResourceLoader.reload() with
// the trust Pi's main.js would give the folder without asking, the system prompt
// buildSystemPrompt makes of it, the skills, templates and diagnostics, and every prompt as
// AgentSession.prompt expands it (_expandSkillCommand, then expandPromptTemplate).
// test_resources_conformance.py compares all of it with pi_notebook.runtime.resources.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const core = join(here, "node_modules/@earendil-works/pi-coding-agent/dist/core");
const { DefaultResourceLoader } = await import(join(core, "resource-loader.js"));
const { SettingsManager } = await import(join(core, "settings-manager.js"));
const { buildSystemPrompt } = await import(join(core, "system-prompt.js"));
const { expandPromptTemplate } = await import(join(core, "prompt-templates.js"));
const { AgentSession } = await import(join(core, "agent-session.js"));
const { ProjectTrustStore, hasTrustRequiringProjectResources } = await import(join(core, "trust-manager.js"));

async function run(scenario) {
  process.env.HOME = scenario.home; // Pi reads ~/.agents/skills from $HOME at call time
  const { cwd, agentDir } = scenario;
  const needsTrust = hasTrustRequiringProjectResources(cwd);
  const decision = new ProjectTrustStore(agentDir).get(cwd);
  const projectTrusted = !needsTrust || decision === true; // main.js, without a prompt
  const settingsManager = SettingsManager.create(cwd, agentDir, { projectTrusted });
  const loader = new DefaultResourceLoader({
    cwd,
    agentDir,
    settingsManager,
    systemPrompt: scenario.base,
    noExtensions: true,
    noThemes: true,
    noContextFiles: scenario.noContextFiles ?? false,
  });
  await loader.reload();
  const { skills, diagnostics } = loader.getSkills();
  const prompts = loader.getPrompts();
  const systemPrompt = buildSystemPrompt({
    customPrompt: loader.getSystemPrompt(),
    cwd,
    contextFiles: loader.getAgentsFiles().agentsFiles,
    skills,
    selectedTools: ["read"],
  });
  const session = { resourceLoader: loader, _extensionRunner: { emitError() {} } };
  const expanded = scenario.inputs.map((text) =>
    expandPromptTemplate(AgentSession.prototype._expandSkillCommand.call(session, text), [...prompts.prompts]),
  );
  return {
    needsTrust,
    decision,
    trusted: projectTrusted,
    systemPrompt,
    skills: skills.map((s) => ({ name: s.name, path: s.filePath, hidden: s.disableModelInvocation })),
    skillDiagnostics: diagnostics.map((d) => ({ type: d.type, path: d.path, winner: d.collision?.winnerPath ?? null })),
    templates: prompts.prompts.map((p) => ({ name: p.name, description: p.description, hint: p.argumentHint ?? null })),
    templateDiagnostics: prompts.diagnostics.map((d) => ({ type: d.type, path: d.path, winner: d.collision?.winnerPath ?? null })),
    expanded,
  };
}

const payload = JSON.parse(readFileSync(0, "utf-8"));
const results = [];
for (const scenario of payload.scenarios) results.push(await run(scenario));
// Pi's ProjectTrustStore.setMany on an agent dir of its own, for the bytes of trust.json
for (const write of payload.trustWrites) new ProjectTrustStore(write.agentDir).setMany(write.updates);
process.stdout.write(JSON.stringify(results));
