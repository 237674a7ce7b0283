"""Drives pirn through the official Python Claude Agent SDK (claude-agent-sdk).

Usage: python drive.py PIRN_BINARY SCRIPT_JSON. Prints a JSON report on stdout:
{"turns": [[message, ...], ...], "asked": [{"tool", "input"}], "errors": [...]}.
Each message is the SDK's parsed dataclass as a dict with its class in "kind".

The script: {"cwd", "options": {ClaudeAgentOptions fields}, "deny": [tool names the
can_use_tool callback denies; others it allows] (absent: no callback), and either
"prompt" (the query() function) or "steps" (ClaudeSDKClient): {"op": "query", "text"},
{"op": "interrupt_on_tool", "text", "after_s"} (query, interrupt once a tool_use
arrives), each step's messages up to its ResultMessage are one turn; {"op": "rewind",
"turn": i} calls rewind_files() with the uuid of turn i's replayed UserMessage (the
options need extra_args {"replay-user-messages": null}) and is a turn of one message,
{"kind": "Rewound", "uuid"} or {"kind": "RewindError", "error"}.
"sdk_tools": {server: [{"name", "description", "sleep_s"?}]} defines in-process MCP tools
(create_sdk_mcp_server) taking {"a": int, "b": int} and answering "sum=<a+b>" (after "sleep_s").
"hooks": {event: [{"matcher", "timeout"?, "on_failure"?, "answer": hook output, "sleep_s"?, "raise"?}]}
registers hook callbacks (options.hooks) that record their input in the report's
"hooked" and return "answer" (after "sleep_s"; or raise "raise").
"""

import asyncio
import dataclasses
import json
import sys
import time

from claude_agent_sdk import (
    AgentDefinition,
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    create_sdk_mcp_server,
    tool,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    ToolUseBlock,
    query,
)


def as_dict(m):
    d = dataclasses.asdict(m) if dataclasses.is_dataclass(m) else {"repr": repr(m)}
    d["kind"] = type(m).__name__
    return d


async def main():
    cli, script = sys.argv[1], json.loads(sys.argv[2])
    asked = []
    options = dict(script.get("options", {}))
    options["cli_path"] = cli
    options["cwd"] = script["cwd"]
    if "agents" in options:
        options["agents"] = {name: AgentDefinition(**a) for name, a in options["agents"].items()}
    if "deny" in script:
        deny = set(script["deny"])

        async def can_use_tool(name, tool_input, context):
            asked.append({"tool": name, "input": tool_input, "tool_use_id": context.tool_use_id})
            if name in deny:
                return PermissionResultDeny(message=f"{name} is not allowed here")
            return PermissionResultAllow()

        options["can_use_tool"] = can_use_tool
    if "sdk_tools" in script:
        def make(spec):
            @tool(spec["name"], spec.get("description", "adds two integers"), {"a": int, "b": int})
            async def run(args):
                if spec.get("sleep_s"):
                    await asyncio.sleep(spec["sleep_s"])
                asked.append({"tool": spec["name"], "input": args})
                return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']}"}]}
            return run

        servers = dict(options.get("mcp_servers") or {})
        for server, tools in script["sdk_tools"].items():
            servers[server] = create_sdk_mcp_server(name=server, version="1.0.0", tools=[make(t) for t in tools])
        options["mcp_servers"] = servers
    hooked = []
    if "hooks" in script:
        def callback(event, spec):
            async def hook(hook_input, tool_use_id, context):
                hooked.append({"event": event, "input": hook_input, "tool_use_id": tool_use_id})
                if spec.get("sleep_s"):
                    await asyncio.sleep(spec["sleep_s"])
                if spec.get("raise"):
                    raise RuntimeError(spec["raise"])
                return spec.get("answer", {})
            return hook

        options["hooks"] = {
            event: [HookMatcher(matcher=m.get("matcher"), hooks=[callback(event, m)], timeout=m.get("timeout"),
                                on_failure=m.get("on_failure"))
                    for m in matchers]
            for event, matchers in script["hooks"].items()
        }
    opts = ClaudeAgentOptions(**options)
    turns, errors, timings = [], [], []
    try:
        if "prompt" in script:
            prompt = script["prompt"]
            if options.get("can_use_tool"):
                # can_use_tool needs a streamed prompt.
                async def stream(text):
                    yield {"type": "user", "message": {"role": "user", "content": text}}

                prompt = stream(prompt)
            turns.append([as_dict(m) async for m in query(prompt=prompt, options=opts)])
        else:
            async with ClaudeSDKClient(options=opts) as client:
                for step in script["steps"]:
                    if step["op"] == "rewind":
                        def is_prompt(m):
                            c = m.get("content")
                            return m["kind"] == "UserMessage" and m.get("uuid") and (
                                isinstance(c, str) or (isinstance(c, list) and c and "text" in c[0]))

                        prompts = [m for m in turns[step["turn"]] if is_prompt(m)]
                        uuid = prompts[0]["uuid"] if prompts else None
                        try:
                            await client.rewind_files(uuid)
                            turns.append([{"kind": "Rewound", "uuid": uuid}])
                        except Exception as e:
                            turns.append([{"kind": "RewindError", "error": f"{type(e).__name__}: {e}"}])
                        timings.append({})
                        continue
                    turn = []
                    started = time.monotonic()
                    await client.query(step["text"])
                    interrupted = False
                    async for m in client.receive_response():
                        turn.append(as_dict(m))
                        if (
                            step["op"] == "interrupt_on_tool"
                            and not interrupted
                            and isinstance(m, AssistantMessage)
                            and any(isinstance(b, ToolUseBlock) for b in m.content)
                        ):
                            await asyncio.sleep(step.get("after_s", 0.5))
                            sent = time.monotonic()
                            await client.interrupt()
                            interrupted = True
                        if isinstance(m, ResultMessage):
                            break
                    done = time.monotonic()
                    timings.append({"turn_s": done - started,
                                    "after_interrupt_s": (done - sent) if interrupted else None})
                    turns.append(turn)
    except Exception as e:  # the report says what failed
        errors.append(f"{type(e).__name__}: {e}")
    print(json.dumps({"turns": turns, "asked": asked, "hooked": hooked, "errors": errors, "timings": timings},
                     default=str))


asyncio.run(main())
