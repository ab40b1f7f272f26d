// Pi 0.83.0's own SettingsManager on a settings.json (the agent dir and cwd from stdin): what
// it reads of the keys pi_notebook reads, then, when asked, setDefaultModelAndProvider() written
// to the file. test_settings_conformance.py compares both with pi_notebook's settings_file.py.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const core = join(here, "node_modules/@earendil-works/pi-coding-agent/dist/core");
const { SettingsManager } = await import(join(core, "settings-manager.js"));

const payload = JSON.parse(readFileSync(0, "utf-8"));
const manager = SettingsManager.create(payload.cwd, payload.agentDir);
const read = {
  defaultProvider: manager.getDefaultProvider() ?? null,
  defaultModel: manager.getDefaultModel() ?? null,
  defaultThinkingLevel: manager.getDefaultThinkingLevel() ?? null,
  compaction: manager.getCompactionSettings(),
  retry: manager.getRetrySettings(),
  errors: manager.drainErrors().map((e) => e.scope),
};
if (payload.save) {
  manager.setDefaultModelAndProvider(payload.save.provider, payload.save.model);
  await manager.flush();
}
process.stdout.write(JSON.stringify(read));
