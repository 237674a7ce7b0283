// Drives pirn through the official TypeScript Claude Agent SDK
// (@anthropic-ai/claude-agent-sdk from npm).
//
// Usage: node drive.mjs SDK_DIR PIRN_BINARY SCRIPT_JSON, where SDK_DIR holds
// node_modules/ (scripts/claude-sdk-client) and the script is
// {"cwd", "prompt", "options": {Options fields}, "deny": [tool names]} (with
// "deny", a canUseTool callback denies those and allows the rest). Prints
// {"messages": [...], "asked": [...], "errors": [...]} as JSON on stdout.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, pirn, scriptJson] = process.argv.slice(2);
const script = JSON.parse(scriptJson);
const sdk = await import(
  pathToFileURL(path.join(sdkDir, "node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs")).href
);

const asked = [];
const options = { ...(script.options ?? {}), cwd: script.cwd, pathToClaudeCodeExecutable: pirn };
if (script.deny) {
  options.canUseTool = async (toolName, input, ctx) => {
    asked.push({ tool: toolName, input, tool_use_id: ctx?.toolUseID });
    return script.deny.includes(toolName)
      ? { behavior: "deny", message: `${toolName} is not allowed here` }
      : { behavior: "allow", updatedInput: input };
  };
}
const messages = [];
const errors = [];
try {
  for await (const m of sdk.query({ prompt: script.prompt, options })) messages.push(m);
} catch (e) {
  errors.push(String(e?.stack ?? e));
}
process.stdout.write(JSON.stringify({ messages, asked, errors }));
