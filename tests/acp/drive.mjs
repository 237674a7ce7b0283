// Drives `pirn acp` with the official ACP TypeScript SDK
// (@agentclientprotocol/sdk, stable v1 API) and prints what happened as one
// JSON object on stdout, for tests/suite/acp.rs.
//
//   node drive.mjs SDK_DIR PIRN_BIN SCRIPT_JSON
//
// SCRIPT_JSON: {"args": [...pirn acp flags], "cwd": "...",
//   "capabilities": {"fs": {"readTextFile": true, ...}},
//   "permission": "allow_once" | "allow_always" | "reject_once" | "reject_always" | "cancelled",
//   "files": {"/abs/path": "text the editor holds"} (unsaved buffers; the
//   client's fs reads them first, then the disk; its writes land here),
//   "steps": [{"op": "new"} | {"op": "prompt", "text": "...", "cancelOn": "tool_call"}
//             | {"op": "load", "sessionId": "..."} | {"op": "list"}
//             | {"op": "fork", "sessionId": "..."} (unstable session/fork; the fork
//               becomes the session later steps prompt)]}
//
// Every session/update, permission request and fs call the client receives
// is recorded with the time since the step began (ms).
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";

const [sdkDir, pirn, scriptJson] = process.argv.slice(2);
const acp = await import(`${sdkDir}/dist/v1/stable/acp.js`);
const script = JSON.parse(scriptJson);

const child = spawn(pirn, ["acp", ...(script.args ?? [])], {
  cwd: script.cwd,
  stdio: ["pipe", "pipe", "inherit"],
});
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const report = { updates: [], permissions: [], fs: [], steps: [] };
const editor = { ...(script.files ?? {}) };
let stepStart = Date.now();
let onUpdate = () => {};

const app = acp
  .client({ name: "pirn-tests" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    report.updates.push({ ms: Date.now() - stepStart, ...params });
    onUpdate(params);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    report.permissions.push(params);
    const choice = script.permission ?? "reject_once";
    if (choice === "cancelled") return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: choice } };
  })
  // As an editor does: an open buffer first, else the disk; a write goes
  // to the buffer only (an unsaved edit), never to the disk.
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    report.fs.push({ op: "read", ...params });
    const content = editor[params.path] ?? (existsSync(params.path) ? readFileSync(params.path, "utf8") : undefined);
    if (content === undefined) throw new acp.RequestError(-32002, "Resource not found", { uri: params.path });
    return { content };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    report.fs.push({ op: "write", ...params });
    editor[params.path] = params.content;
    return {};
  });

try {
  await app.connectWith(stream, async (ctx) => {
    stepStart = Date.now();
    report.initialize = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: script.capabilities ?? {},
    });
    let sessionId = null;
    for (const step of script.steps) {
      stepStart = Date.now();
      const done = { op: step.op };
      try {
        if (step.op === "new") {
          const r = await ctx.request(acp.methods.agent.session.new, { cwd: script.cwd, mcpServers: [] });
          sessionId = r.sessionId;
          done.sessionId = sessionId;
        } else if (step.op === "load") {
          sessionId = step.sessionId;
          await ctx.request(acp.methods.agent.session.load, { sessionId, cwd: script.cwd, mcpServers: [] });
          done.updatesBefore = report.updates.length;
        } else if (step.op === "fork") {
          // session/fork is in the SDK's unstable API (the agent offers it
          // in sessionCapabilities.fork).
          const unstable = await import(`${sdkDir}/dist/v1/unstable/acp.js`);
          const r = await ctx.request(unstable.methods.agent.session.fork, {
            sessionId: step.sessionId ?? sessionId, cwd: script.cwd, mcpServers: [],
          });
          sessionId = r.sessionId;
          done.sessionId = sessionId;
        } else if (step.op === "list") {
          done.result = await ctx.request(acp.methods.agent.session.list, {});
        } else if (step.op === "prompt") {
          let cancelled = null;
          onUpdate = (params) => {
            if (step.cancelOn && params.update.sessionUpdate === step.cancelOn && cancelled === null) {
              cancelled = Date.now();
              ctx.notify(acp.methods.agent.session.cancel, { sessionId });
            }
          };
          const r = await ctx.request(acp.methods.agent.session.prompt, {
            sessionId,
            prompt: step.prompt ?? [{ type: "text", text: step.text }],
          });
          done.stopReason = r.stopReason;
          if (cancelled !== null) done.cancelMs = Date.now() - cancelled;
          onUpdate = () => {};
        }
      } catch (e) {
        done.error = { code: e.code, message: e.message, data: e.data };
      }
      done.ms = Date.now() - stepStart;
      report.steps.push(done);
    }
  });
} catch (e) {
  report.connectionError = String(e);
}
child.stdin.end();
const exited = await new Promise((resolve) => {
  const t = setTimeout(() => { child.kill("SIGKILL"); resolve(null); }, 10000);
  child.on("exit", (code) => { clearTimeout(t); resolve(code); });
});
report.exitCode = exited;
report.editor = editor;
process.stdout.write(JSON.stringify(report) + "\n");
