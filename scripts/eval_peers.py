"""Reference agents for `scripts/eval --peer NAME`, run on the same model and
tasks as pirn, so its figure has something to stand beside. This file has
aider; mini-swe-agent, opencode and Qwen Code are in eval_peers_more.py.

aider (PyPI `aider-chat`) is installed on first use into a venv of its own
(~/.cache/pirn/aider-venv, or $PIRN_CACHE_DIR/aider-venv). Each task's files
are committed to a fresh git repository (aider works on git repositories)
and given to it on the command line; it runs one `--message` in its
whole-file edit format against the OpenAI-compatible server pirn uses. Its
printed reply is taken as the answer. In Exercism mode only the solution
files are given to it, with `--auto-test --test-cmd` set to the exercise's
test command (aider then runs the tests after each edit and sends failures
back, as its own benchmark does).

aider prints `Tokens: 2.1k sent, 130 received.` after each model call; those
lines give its prompt tokens (rounded by aider to 0.1k above 1,000) as
`usage` events, so its rows carry the same token columns as pirn's.
"""
import os, re, subprocess, sys
from pathlib import Path

CACHE = Path(os.environ.get("PIRN_CACHE_DIR", Path.home() / ".cache" / "pirn"))
AIDER_VERSION = "0.86.2"


def aider_binary():
    venv = CACHE / "aider-venv"
    aider = venv / "bin" / "aider"
    if not aider.exists():
        print(f"eval: installing aider-chat=={AIDER_VERSION} into {venv}", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                        f"aider-chat=={AIDER_VERSION}"], check=True)
    return str(aider)


_TOKENS = re.compile(r"Tokens:\s*([\d.]+)(k?) sent,\s*([\d.]+)(k?) received")


def _count(num, k):
    return int(round(float(num) * (1000 if k else 1)))


def _usage(out):
    """`usage` events, one per `Tokens: … sent, … received.` line of aider's output."""
    return [{"type": "event", "event": {"event": "usage", "prompt_tokens": _count(m[0], m[1]),
                                        "completion_tokens": _count(m[2], m[3])}}
            for m in _TOKENS.findall(out)]


def run_aider(task, ws, env, timeout, model, base_url):
    """Runs aider on one task in `ws`; returns result lines shaped like a
    worker's (`usage` events from its token lines, then one `result` whose
    `response` is aider's output)."""
    files = task.get("solution") or sorted(
        str(p.relative_to(ws)) for p in Path(ws).rglob("*") if p.is_file() and ".git" not in p.parts)
    extra = ["--auto-test", "--test-cmd", task["test_cmd"]] if task.get("test_cmd") else []
    git = lambda *args: subprocess.run(["git", *args], cwd=ws, capture_output=True, check=True)
    git("init", "-q")
    git("-c", "user.name=eval", "-c", "user.email=eval@localhost", "add", "-A")
    git("-c", "user.name=eval", "-c", "user.email=eval@localhost", "commit", "-qm", "task files", "--allow-empty")
    cmd = [aider_binary(), "--model", f"openai/{model}", "--openai-api-base", base_url, "--openai-api-key", "none",
           "--edit-format", "whole", "--yes-always", "--no-auto-commits", "--no-pretty", "--no-stream",
           "--no-check-update", "--no-analytics", "--no-show-model-warnings", "--no-gitignore",
           "--no-show-release-notes", "--map-tokens", "0",
           *extra, "--message", task["prompt"], *files]
    # litellm would fetch its model price list from the internet at start.
    aider_env = dict(env, HOME=env.get("HOME", "/"), GIT_AUTHOR_NAME="eval", GIT_AUTHOR_EMAIL="eval@localhost",
                     GIT_COMMITTER_NAME="eval", GIT_COMMITTER_EMAIL="eval@localhost",
                     LITELLM_LOCAL_MODEL_COST_MAP="True", OPENAI_API_KEY="none", OPENAI_API_BASE=base_url,
                     PYTHONUNBUFFERED="1")  # its token lines reach the pipe as printed
    try:
        p = subprocess.run(cmd, cwd=ws, env=aider_env, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        # The model calls aider made before the kill still count: its token
        # lines so far become the row's usage (the eval reads `e.lines`).
        out = e.stdout.decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        e.lines = _usage(out)
        raise
    status = "ok" if p.returncode == 0 else "error"
    usage = _usage(p.stdout)
    total = {"prompt_tokens": sum(u["event"]["prompt_tokens"] for u in usage),
             "completion_tokens": sum(u["event"]["completion_tokens"] for u in usage)}
    return usage + [{"type": "result", "id": "task", "status": status, "response": p.stdout, "usage": total,
                     "iterations": len(usage),
                     "error": None if p.returncode == 0 else {"message": (p.stderr or p.stdout)[-300:]}}]
