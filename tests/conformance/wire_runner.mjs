// Plays the wire scenarios through the real Pi 0.83.0 (`@earendil-works/pi-ai`).
//
// stdin: {"scenarios": [{name, model, context, options, simple}]} where every model.baseUrl
// already points at a loopback server the Python test started and scripted for that scenario.
// stdout: {"<name>": {"events": [...], "final": {...}}}. The HTTP requests themselves are
// recorded by the loopback servers on the Python side, so this script only streams.
import { stream, streamSimple } from "@earendil-works/pi-ai/compat";

// Keys from the environment must never leak into a scenario (Pi falls back to them).
for (const name of Object.keys(process.env)) {
	if (/_API_KEY$|_OAUTH_TOKEN$|^GOOGLE_APPLICATION_CREDENTIALS$/.test(name)) delete process.env[name];
}

// What an event says, without the partial message it carries (that object keeps mutating
// until the end, so a snapshot of it says nothing stable; the final message is compared).
function eventRecord(event) {
	const out = { type: event.type };
	for (const key of ["contentIndex", "delta", "content", "toolCall", "reason"]) {
		if (event[key] !== undefined) out[key] = event[key];
	}
	return JSON.parse(JSON.stringify(out));
}

async function play(scenario) {
	const fn = scenario.simple ? streamSimple : stream;
	const s = fn(scenario.model, scenario.context, scenario.options ?? {});
	const events = [];
	for await (const event of s) events.push(eventRecord(event));
	const final = JSON.parse(JSON.stringify(await s.result()));
	return { events, final };
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const payload = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const results = {};
for (const scenario of payload.scenarios) {
	const started = performance.now();
	try {
		results[scenario.name] = await play(scenario);
		results[scenario.name].ms = Math.round(performance.now() - started); // for slow-suite hunting
	} catch (error) {
		results[scenario.name] = { thrown: String(error?.stack ?? error) };
	}
}
process.stdout.write(JSON.stringify(results));
