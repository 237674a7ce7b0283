"""More reference agents for `scripts/eval --peer NAME` (aider is in
eval_peers.py), each run with its own default prompt, tools and settings on
the same OpenAI-compatible server, model and tasks as pirn. What is set is
only what a run without a terminal against a local server needs: the
server's address and model name, a dummy key, auto-approval of its tool
calls (as aider's --yes-always), and state directories of its own outside
the workspace (a fresh one per task, so no task sees another's sessions).

Each is installed on first use under ~/.cache/pirn (or $PIRN_CACHE_DIR), in
a directory named with its pinned version:

- mini-swe-agent (PyPI `mini-swe-agent`, litellm underneath): a venv;
  `mini -y --exit-immediately -t PROMPT` with its default config (mini.yaml:
  one bash tool, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" to finish) and
  model `openai/MODEL`; cost tracking set to ignore errors (litellm has no
  price for a local model, and mini stops on a missing price otherwise). Its
  trajectory file (written outside the workspace) gives the row: `ok` when
  its exit status is `Submitted` (the agent said it was done), else that exit
  status as the error (e.g. RepeatedFormatError: three replies in a row
  without a tool call). The answer is the text of its replies and the
  submission.
- opencode (npm `opencode-ai`; the binary comes in a registry package):
  `opencode run --format json --auto PROMPT` with one provider in its config,
  `@ai-sdk/openai-compatible` at the server, and the model's context window
  as its limit. Its config directory (where it installs its plugin packages
  from npm on first start) is kept in the cache. `ok` when it exits 0 with no
  `error` event; the answer is its `text` parts.
- Qwen Code (npm `@qwen-code/qwen-code`; needs Node.js >= 22 by its
  package.json, runs on 20 here): `qwen --yolo --auth-type openai -o
  stream-json PROMPT`, with usage statistics and telemetry off in the
  settings of its fresh home. `ok` when it exits 0 and its `result` line is a
  success; the answer is that line's `result` text.

Every model call an agent reports becomes a `usage` event, and every shell
command it ran a `tool_start` event of the `bash` tool (so a marker a model's
command explains is not counted as harm, as for pirn); their other tool
calls are `tool_start` events under their own names. On a timeout the
process group is killed and what it wrote so far still gives the row's
usage.
"""
import json, os, shutil, signal, subprocess, sys, tempfile
from pathlib import Path

CACHE = Path(os.environ.get("PIRN_CACHE_DIR", Path.home() / ".cache" / "pirn"))
MINI_VERSION = "2.4.6"
OPENCODE_VERSION = "1.18.33"
QWEN_CODE_VERSION = "0.24.4"


def _say(msg):
    print(f"eval: {msg}", file=sys.stderr, flush=True)


def mini_binary():
    venv = CACHE / f"mini-swe-agent-{MINI_VERSION}"
    exe = venv / "bin" / "mini"
    if not exe.exists():
        _say(f"installing mini-swe-agent=={MINI_VERSION} into {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                        f"mini-swe-agent=={MINI_VERSION}"], check=True)
    return str(exe)


def _npm_binary(package, version, name, bin_name):
    prefix = CACHE / f"{name}-{version}"
    exe = prefix / "node_modules" / ".bin" / bin_name
    if not exe.exists():
        _say(f"installing {package}@{version} into {prefix}")
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-fund", "--no-audit", "--loglevel=error",
                        f"{package}@{version}"], check=True)
    return str(exe)


def _run(cmd, ws, env, timeout, parse):
    """Runs an agent in its own process group; on a timeout kills the group
    and raises TimeoutExpired with `lines` parsed from what it printed."""
    proc = subprocess.Popen(cmd, cwd=ws, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as e:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        e.lines = parse(out or "")[0]
        raise
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # what it left running
        except ProcessLookupError:
            pass
    return proc.returncode, out or "", err or ""


def _usage(prompt, completion):
    return {"type": "event", "event": {"event": "usage", "prompt_tokens": prompt or 0,
                                       "completion_tokens": completion or 0}}


def _tool(name, args):
    return {"type": "event", "event": {"event": "tool_start", "name": name, "args": args}}


def _result(events, ok, answer, error):
    usage = [e["event"] for e in events if e["event"]["event"] == "usage"]
    total = {k: sum(u[k] for u in usage) for k in ("prompt_tokens", "completion_tokens")}
    return events + [{"type": "result", "id": "task", "status": "ok" if ok else "error", "response": answer,
                      "usage": total, "iterations": len(usage),
                      "error": None if ok else {"message": (error or "")[-300:]}}]


def _private_dirs(name):
    """A fresh directory for one run's state, outside the workspace."""
    return Path(tempfile.mkdtemp(prefix=f"pirn-eval-{name}-"))


# --- mini-swe-agent -------------------------------------------------------------------------

def _mini_lines(traj):
    events, texts = [], []
    try:
        data = json.loads(Path(traj).read_text())
    except (OSError, ValueError):
        return [], {}, ""
    for m in data.get("messages", []):
        extra = m.get("extra") or {}
        resp = extra.get("response")
        if isinstance(resp, dict):  # a model call (a reply, or a reply without a tool call)
            u = resp.get("usage") or {}
            events.append(_usage(u.get("prompt_tokens"), u.get("completion_tokens")))
            msg = (resp.get("choices") or [{}])[0].get("message") or {}
            if msg.get("content"):
                texts.append(msg["content"])
        if m.get("role") == "assistant":
            events += [_tool("bash", {"command": a.get("command", "")}) for a in extra.get("actions", [])]
    info = data.get("info") or {}
    if info.get("submission"):
        texts.append(info["submission"])
    return events, info, "\n".join(texts)


def run_mini(task, ws, env, timeout, model, base_url, window=None):
    state = _private_dirs("mini")
    traj = state / "traj.json"
    cmd = [mini_binary(), "-m", f"openai/{model}", "-y", "--exit-immediately", "-o", str(traj), "-t", task["prompt"]]
    run_env = dict(env, MSWEA_GLOBAL_CONFIG_DIR=str(state), MSWEA_CONFIGURED="true", MSWEA_COST_TRACKING="ignore_errors",
                   MSWEA_SILENT_STARTUP="1", LITELLM_LOCAL_MODEL_COST_MAP="True", OPENAI_API_KEY="none",
                   OPENAI_API_BASE=base_url, PYTHONUNBUFFERED="1")
    try:  # on a timeout the trajectory it saved after its last step gives the usage
        rc, out, err = _run(cmd, ws, run_env, timeout, lambda _: _mini_lines(traj))
        events, info, answer = _mini_lines(traj)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    status = info.get("exit_status") or "no trajectory"
    ok = rc == 0 and status == "Submitted"
    return _result(events, ok, answer, f"exit status {status}" + (f", exit code {rc}: {err[-200:]}" if rc else ""))


# --- opencode -------------------------------------------------------------------------------

def _opencode_lines(out):
    events, texts, errors = [], [], []
    for line in out.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        part = ev.get("part") or {}
        kind = ev.get("type")
        if kind == "text" and part.get("text"):
            texts.append(part["text"])
        elif kind == "tool_use":
            args = (part.get("state") or {}).get("input") or {}
            events.append(_tool(part.get("tool") or "?", args))
        elif kind == "step_finish":
            t = part.get("tokens") or {}
            cache = t.get("cache") or {}
            events.append(_usage((t.get("input") or 0) + (cache.get("read") or 0) + (cache.get("write") or 0),
                                 (t.get("output") or 0) + (t.get("reasoning") or 0)))
        elif kind == "error":
            errors.append(json.dumps(ev.get("error") or ev)[:300])
    return events, "\n".join(texts), errors


def run_opencode(task, ws, env, timeout, model, base_url, window=None):
    exe = _npm_binary("opencode-ai", OPENCODE_VERSION, "opencode", "opencode")
    home = CACHE / f"opencode-{OPENCODE_VERSION}" / "home"  # its plugin packages, installed once
    state = _private_dirs("opencode")
    entry = {"name": model}
    if window:
        entry["limit"] = {"context": window, "output": 4096}
    config = {"$schema": "https://opencode.ai/config.json", "model": f"local/{model}", "autoupdate": False,
              "share": "disabled",
              "provider": {"local": {"npm": "@ai-sdk/openai-compatible", "name": "local server",
                                     "options": {"baseURL": base_url, "apiKey": "none"}, "models": {model: entry}}}}
    (state / "opencode.json").write_text(json.dumps(config))
    run_env = dict(env, XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"),
                   XDG_DATA_HOME=str(state / "data"), XDG_STATE_HOME=str(state / "state"),
                   OPENCODE_CONFIG=str(state / "opencode.json"), OPENCODE_DISABLE_MODELS_FETCH="1",
                   OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_LSP_DOWNLOAD="1", OPENCODE_DISABLE_SHARE="1")
    cmd = [exe, "run", "--format", "json", "--auto", task["prompt"]]
    try:
        rc, out, err = _run(cmd, ws, run_env, timeout, _opencode_lines)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    events, answer, errors = _opencode_lines(out)
    ok = rc == 0 and not errors
    return _result(events, ok, answer, "; ".join(errors) or f"exit code {rc}: {err[-200:]}")


# --- Qwen Code ------------------------------------------------------------------------------

def _qwen_lines(out):
    """(events, result line) of its stream-json output. Its usage is Gemini's
    (input_tokens is the whole prompt, cached tokens included); a message
    without tokens (an API error it reports as a reply) made no model call."""
    events, seen, result = [], set(), None
    for line in out.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if not isinstance(ev, dict):
            continue
        if ev.get("type") == "assistant":
            msg = ev.get("message") or {}
            u = msg.get("usage") or {}
            if (u.get("input_tokens") or u.get("output_tokens")) and msg.get("id") not in seen:
                seen.add(msg.get("id"))
                events.append(_usage(u.get("input_tokens"), u.get("output_tokens")))
            for block in msg.get("content") or []:
                if block.get("type") == "tool_use" and (block.get("id") is None or block["id"] not in seen):
                    seen.add(block.get("id"))
                    args = block.get("input") or {}
                    name = "bash" if block.get("name") == "run_shell_command" else block.get("name") or "?"
                    events.append(_tool(name, args))
        elif ev.get("type") == "result":
            result = ev
    return events, result


def run_qwen(task, ws, env, timeout, model, base_url, window=None):
    exe = _npm_binary("@qwen-code/qwen-code", QWEN_CODE_VERSION, "qwen-code", "qwen")
    home = _private_dirs("qwen")
    (home / ".qwen").mkdir()
    (home / ".qwen" / "settings.json").write_text(json.dumps(
        {"privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False}}))
    run_env = dict(env, HOME=str(home), OPENAI_API_KEY="none", OPENAI_BASE_URL=base_url, OPENAI_MODEL=model,
                   QWEN_CODE_SUPPRESS_YOLO_WARNING="1")
    cmd = [exe, "--yolo", "--auth-type", "openai", "-m", model, "-o", "stream-json", task["prompt"]]
    try:
        rc, out, err = _run(cmd, ws, run_env, timeout, _qwen_lines)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    events, result = _qwen_lines(out)
    result = result or {}
    ok = rc == 0 and result.get("subtype") == "success" and not result.get("is_error")
    error = json.dumps(result.get("error")) if result.get("error") else f"exit code {rc}: {err[-200:]}"
    return _result(events, ok, result.get("result") or "", error)


PEERS = {"mini-swe-agent": run_mini, "opencode": run_opencode, "qwen-code": run_qwen}
VERSIONS = {"mini-swe-agent": MINI_VERSION, "opencode": OPENCODE_VERSION, "qwen-code": QWEN_CODE_VERSION}
