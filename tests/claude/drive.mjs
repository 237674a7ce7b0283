// Drives pirn through the official TypeScript Claude Agent SDK
// (@anthropic-ai/claude-agent-sdk from npm).
//
// Usage: node drive.mjs SDK_DIR PIRN_BINARY SCRIPT_JSON, where SDK_DIR holds
// node_modules/ (scripts/claude-sdk-client) and the script is
// {"cwd", "prompt", "options": {Options fields}, "deny": [tool names]} (with
// "deny", a canUseTool callback denies those and allows the rest), as the
// Python driver (drive.py) reads it:
// "sdk_tools": {server: [{"name", "description"}]} defines in-process MCP
// tools (tool() + createSdkMcpServer) taking {a: int, b: int} and answering
// "sum=<a+b>"; "hooks": {event: [{"matcher", "timeout"?, "onFailure"?,
// "answer": hook output, "sleep_s"?, "raise"?}]} registers hook callbacks
// that record their input in "hooked" and return "answer".
// Prints {"messages": [...], "asked": [...], "hooked": [...], "errors": [...]}
// as JSON on stdout.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, pirn, scriptJson] = process.argv.slice(2);
const script = JSON.parse(scriptJson);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "node_modules", p)).href);
const sdk = await load("@anthropic-ai/claude-agent-sdk/sdk.mjs");

const asked = [];
const hooked = [];
const options = { ...(script.options ?? {}), cwd: script.cwd, pathToClaudeCodeExecutable: pirn };
if (script.deny) {
  options.canUseTool = async (toolName, input, ctx) => {
    asked.push({ tool: toolName, input, tool_use_id: ctx?.toolUseID });
    return script.deny.includes(toolName)
      ? { behavior: "deny", message: `${toolName} is not allowed here` }
      : { behavior: "allow", updatedInput: input };
  };
}
if (script.sdk_tools) {
  const { z } = await load("zod/index.js");
  const servers = { ...(options.mcpServers ?? {}) };
  for (const [server, tools] of Object.entries(script.sdk_tools)) {
    const defined = tools.map((spec) =>
      sdk.tool(spec.name, spec.description ?? "adds two integers", { a: z.number().int(), b: z.number().int() },
        async (args) => {
          asked.push({ tool: spec.name, input: args });
          return { content: [{ type: "text", text: `sum=${args.a + args.b}` }] };
        }),
    );
    servers[server] = sdk.createSdkMcpServer({ name: server, version: "1.0.0", tools: defined });
  }
  options.mcpServers = servers;
}
if (script.hooks) {
  const sleep = (s) => new Promise((r) => setTimeout(r, s * 1000));
  options.hooks = {};
  for (const [event, matchers] of Object.entries(script.hooks)) {
    options.hooks[event] = matchers.map((m) => ({
      matcher: m.matcher,
      timeout: m.timeout,
      onFailure: m.onFailure,
      hooks: [
        async (input, toolUseID) => {
          hooked.push({ event, input, tool_use_id: toolUseID });
          if (m.sleep_s) await sleep(m.sleep_s);
          if (m.raise) throw new Error(m.raise);
          return m.answer ?? {};
        },
      ],
    }));
  }
}
const messages = [];
const errors = [];
try {
  // Hooks and in-process tools need streaming input (the SDK's rule).
  const prompt = script.sdk_tools || script.hooks
    ? (async function* () {
        yield { type: "user", message: { role: "user", content: script.prompt }, parent_tool_use_id: null };
      })()
    : script.prompt;
  for await (const m of sdk.query({ prompt, options })) messages.push(m);
} catch (e) {
  errors.push(String(e?.stack ?? e));
}
process.stdout.write(JSON.stringify({ messages, asked, hooked, errors }));
