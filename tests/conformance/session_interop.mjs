// Drives the real Pi 0.83.0 SessionManager and compaction code for tests/conformance/test_session_interop*.py.
// Reads {"actions": [...]} on stdin, runs each action, prints the list of results as JSON.
// The package's main entry needs a newer node, so the core modules are imported by file.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));
const core = join(here, "node_modules/@earendil-works/pi-coding-agent/dist/core");
const sm = await import(join(core, "session-manager.js"));
const comp = await import(join(core, "compaction/index.js"));
const { SessionManager, buildSessionContext, getDefaultSessionDir } = sm;

function flatTree(nodes, out = []) {
    for (const node of nodes) {
        out.push({ id: node.entry.id, children: node.children.map((c) => c.entry.id), label: node.label ?? null });
        flatTree(node.children, out);
    }
    return out;
}

function snapshot(manager) {
    const labels = {};
    for (const entry of manager.getEntries()) {
        const label = manager.getLabel(entry.id);
        if (label !== undefined) labels[entry.id] = label;
    }
    return {
        path: manager.getSessionFile() ?? null,
        header: manager.getHeader(),
        entries: manager.getEntries(),
        leafId: manager.getLeafId(),
        context: manager.buildSessionContext(),
        tree: flatTree(manager.getTree()),
        name: manager.getSessionName() ?? null,
        labels,
    };
}

// ops reference the ids returned by earlier ops as {"ref": index}
function resolve(value, ids) {
    if (value && typeof value === "object" && !Array.isArray(value) && "ref" in value) return ids[value.ref];
    return value;
}

function runOps(manager, ops) {
    const ids = [];
    for (const [kind, ...raw] of ops) {
        // JSON has no undefined: a null argument means "not given", except a branch summary's
        // starting point, where null means "from the root".
        const a = raw.map((v, i) => (v === null && !(kind === "branch_summary" && i === 0) ? undefined : resolve(v, ids)));
        let id = null;
        switch (kind) {
            case "message": id = manager.appendMessage(a[0]); break;
            case "model": id = manager.appendModelChange(a[0], a[1]); break;
            case "thinking": id = manager.appendThinkingLevelChange(a[0]); break;
            case "compaction": id = manager.appendCompaction(a[0], a[1], a[2], a[3], a[4], a[5]); break;
            case "branch_summary": id = manager.branchWithSummary(a[0], a[1], a[2], a[3], a[4]); break;
            case "custom": id = manager.appendCustomEntry(a[0], a[1]); break;
            case "custom_message": id = manager.appendCustomMessageEntry(a[0], a[1], a[2], a[3]); break;
            case "label": id = manager.appendLabelChange(a[0], a[1]); break;
            case "name": id = manager.appendSessionInfo(a[0]); break;
            case "branch": manager.branch(a[0]); break;
            case "reset": manager.resetLeaf(); break;
            default: throw new Error(`unknown op ${kind}`);
        }
        ids.push(id);
    }
    return ids;
}

function fakeStream(calls, texts) {
    return async (model, context, options) => {
        calls.push({ context, maxTokens: options.maxTokens, reasoning: options.reasoning ?? null, cacheRetention: options.cacheRetention });
        const text = texts[Math.min(calls.length - 1, texts.length - 1)];
        const message = {
            role: "assistant",
            content: [{ type: "text", text }],
            api: model.api,
            provider: model.provider,
            model: model.id,
            usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
            stopReason: "stop",
            timestamp: 0,
        };
        return { result: async () => message };
    };
}

function fileOpsJson(ops) {
    return { read: [...ops.read].sort(), written: [...ops.written].sort(), edited: [...ops.edited].sort() };
}

const actions = {
    load: ({ path }) => snapshot(SessionManager.open(path)),
    write: ({ dir, cwd, ops }) => {
        const manager = SessionManager.create(cwd, dir);
        const ids = runOps(manager, ops);
        return { ...snapshot(manager), ids };
    },
    context: ({ entries, leafId }) => buildSessionContext(entries, leafId === undefined ? undefined : leafId),
    estimate: ({ messages }) => ({
        tokens: messages.map((m) => comp.estimateTokens(m)),
        context: comp.estimateContextTokens(messages),
    }),
    cut: ({ entries, start, end, keep }) => comp.findCutPoint(entries, start, end, keep),
    compaction: async ({ entries, settings, model, texts, customInstructions, thinkingLevel }) => {
        const preparation = comp.prepareCompaction(entries, settings);
        if (!preparation) return { preparation: null };
        const calls = [];
        const result = await comp.compact(preparation, model, "test-key", undefined, customInstructions, undefined, thinkingLevel, fakeStream(calls, texts));
        return { preparation: { ...preparation, fileOps: fileOpsJson(preparation.fileOps) }, calls, result };
    },
    branch_summary: async ({ entries, model, texts, customInstructions, reserveTokens }) => {
        const calls = [];
        const result = await comp.generateBranchSummary(entries, { model, customInstructions, reserveTokens, streamFn: fakeStream(calls, texts) });
        return { calls, result };
    },
    collect: ({ path, oldLeafId, targetId }) => {
        const { entries, commonAncestorId } = comp.collectEntriesForBranchSummary(SessionManager.open(path), oldLeafId, targetId);
        return { ids: entries.map((e) => e.id), commonAncestorId };
    },
    list: async ({ cwd, dir }) => (await SessionManager.list(cwd, dir)).map((s) => ({ ...s, created: s.created.toISOString(), modified: s.modified.toISOString() })),
    fork: ({ source, cwd, dir }) => snapshot(SessionManager.forkFrom(source, cwd, dir)),
    branched: ({ path, leafId }) => {
        const manager = SessionManager.open(path);
        manager.createBranchedSession(leafId);
        return snapshot(manager);
    },
    default_dir: ({ cwd, agentDir }) => getDefaultSessionDir(cwd, agentDir),
};

const payload = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const action of payload.actions) {
    results.push(await actions[action.kind](action));
}
process.stdout.write(JSON.stringify(results));
