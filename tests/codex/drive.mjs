// Drives pirn through the official Codex SDK (@openai/codex-sdk), the
// way an application does: `new Codex({codexPathOverride})`, a thread,
// `run()` / `runStreamed()`, `resumeThread(id)`, an AbortSignal.
//
// node drive.mjs SDK_DIR PIRN_BINARY SCRIPT_JSON
// SCRIPT: {cwd, codex: {...Codex options}, thread: {...ThreadOptions},
//          steps: [{op: "run"|"streamed"|"resume"|"abort_on_command"|"run_abort_after",
//                   prompt, outputSchema?, after_ms?}]}
// Prints {steps: [...], errors: [...]} on stdout: each step's outcome
// ({ok, items, finalResponse, usage, threadId} or {ok: false, error}),
// streamed steps with their events, abort steps with how long the
// rejection took after the abort.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, pirn, scriptText] = process.argv.slice(2);
const script = JSON.parse(scriptText);
const { Codex } = await import(
  pathToFileURL(path.join(sdkDir, "node_modules/@openai/codex-sdk/dist/index.js")).href
);

const codex = new Codex({ codexPathOverride: pirn, ...(script.codex ?? {}) });
const threadOptions = { workingDirectory: script.cwd, skipGitRepoCheck: true, ...(script.thread ?? {}) };
let thread = codex.startThread(threadOptions);
const report = { steps: [], errors: [] };

for (const step of script.steps) {
  const turnOptions = step.outputSchema ? { outputSchema: step.outputSchema } : {};
  try {
    if (step.op === "run" || step.op === "resume") {
      if (step.op === "resume") {
        const id = thread.id;
        thread = new Codex({ codexPathOverride: pirn, ...(script.codex ?? {}) }).resumeThread(id, threadOptions);
      }
      const turn = await thread.run(step.prompt, turnOptions);
      report.steps.push({ ok: true, ...turn, threadId: thread.id });
    } else if (step.op === "streamed") {
      const { events } = await thread.runStreamed(step.prompt, turnOptions);
      const seen = [];
      for await (const event of events) seen.push(event);
      report.steps.push({ ok: true, events: seen, threadId: thread.id });
    } else if (step.op === "abort_on_command") {
      const controller = new AbortController();
      const { events } = await thread.runStreamed(step.prompt, { signal: controller.signal });
      let abortedAt = null;
      const seen = [];
      try {
        for await (const event of events) {
          seen.push(event);
          if (event.type === "item.started" && event.item.type === "command_execution" && abortedAt === null) {
            await new Promise((r) => setTimeout(r, step.after_ms ?? 300));
            abortedAt = Date.now();
            controller.abort();
          }
        }
        report.steps.push({ ok: true, events: seen });
      } catch (e) {
        report.steps.push({ ok: false, error: String(e?.message ?? e), name: e?.name, events: seen,
          after_abort_ms: abortedAt === null ? null : Date.now() - abortedAt });
      }
    } else if (step.op === "run_abort_after") {
      const controller = new AbortController();
      const started = Date.now();
      setTimeout(() => controller.abort(), step.after_ms ?? 1000);
      try {
        const turn = await thread.run(step.prompt, { signal: controller.signal });
        report.steps.push({ ok: true, ...turn });
      } catch (e) {
        report.steps.push({ ok: false, error: String(e?.message ?? e), name: e?.name, after_start_ms: Date.now() - started });
      }
    } else {
      report.errors.push(`unknown op ${step.op}`);
    }
  } catch (e) {
    report.steps.push({ ok: false, error: String(e?.message ?? e), name: e?.name });
  }
}
process.stdout.write(JSON.stringify(report));
