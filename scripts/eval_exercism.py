"""Exercism mode of `scripts/eval`: the Python practice exercises of a local
checkout of github.com/exercism/python (the exercises aider's code-editing
benchmark is built on), laid out one per workspace, prompted with their
instructions, and judged by their own test file restored after the run.

`--exercism` takes a checkout, or a git repository without a work tree
(a bare clone, `fetch`'s mirror), whose HEAD is exported into a scratch
directory ([`open_checkout`]). Layout, from the checkout (never copied
into this repository):
- `config.json` at the root: `exercises.practice[]` with `slug`,
  `difficulty` (1-10) and `status` (`deprecated` ones are skipped);
- `exercises/practice/<slug>/.meta/config.json`: `files.solution` (the stub
  the agent edits), `files.test` (the tests), optionally `files.editor`
  (helpers the tests import);
- `exercises/practice/<slug>/.docs/`: `introduction.md` (optional),
  `instructions.md`, `instructions.append.md` (optional), concatenated in
  that order as aider's benchmark does.

The sample is `random.Random(seed).sample()` over the eligible slugs in
sorted order, so a seed names the same exercises on every machine with the
same checkout. `--exclude-seed S` leaves out the exercises seed S would
pick (same size and difficulty), for a tune sample that never touches the
judge's. Tests run with pytest from a venv of the eval's own
(`<cache>/eval-venv`, pytest pinned) whose bin directory goes first on PATH,
so `python3` in the test command is that venv's.
"""
import atexit, json, os, random, shutil, subprocess, sys, tempfile
from pathlib import Path

CACHE = Path(os.environ.get("PIRN_CACHE_DIR", Path.home() / ".cache" / "pirn"))
PYTEST_VERSION = "8.3.4"


def eval_venv_bin():
    """The bin directory of a venv with pytest, created on first use."""
    venv = CACHE / "eval-venv"
    if not (venv / "bin" / "pytest").exists():
        print(f"eval: installing pytest=={PYTEST_VERSION} into {venv}", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                        f"pytest=={PYTEST_VERSION}"], check=True)
    return str(venv / "bin")


def checkout_commit(root):
    p = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else "unknown (not a git checkout)"


def open_checkout(path):
    """(root, commit) for `--exercism PATH`: a checkout (a directory with
    config.json) as it is, or a git repository without a work tree (a bare
    clone, or the git directory a mirror keeps), whose HEAD is exported
    with `git archive` into a scratch directory (the repository is only
    read) and named by its commit. Exits with why when it is neither."""
    path = Path(path).resolve()
    if (path / "config.json").exists():
        return path, checkout_commit(path)
    head = subprocess.run(["git", "--git-dir", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        sys.exit(f"eval: {path} is neither a checkout of exercism/python (no config.json) nor a git repository")
    scratch = Path(tempfile.mkdtemp(prefix="exercism-"))
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    archive = subprocess.Popen(["git", "--git-dir", str(path), "archive", "HEAD"], stdout=subprocess.PIPE)
    tar = subprocess.run(["tar", "-x", "-C", str(scratch)], stdin=archive.stdout)
    archive.stdout.close()
    if archive.wait() != 0 or tar.returncode != 0 or not (scratch / "config.json").exists():
        sys.exit(f"eval: {path} at {head.stdout.strip()} has no config.json at its root: not exercism/python")
    print(f"# exported {path} at HEAD into {scratch}", flush=True)
    return scratch, head.stdout.strip()


def eligible(root, max_difficulty):
    cfg = json.loads((Path(root) / "config.json").read_text())
    out = []
    for ex in cfg["exercises"]["practice"]:
        if ex.get("status") == "deprecated" or ex.get("difficulty", 99) > max_difficulty:
            continue
        if (Path(root) / "exercises" / "practice" / ex["slug"] / ".meta" / "config.json").exists():
            out.append((ex["slug"], ex["difficulty"]))
    return sorted(out)


def sample(root, n, seed, max_difficulty=3, exclude=()):
    """[(slug, difficulty)] chosen by the seed, sorted by slug. `exclude`
    holds slugs left out of the pool first (a tune sample kept apart from
    the judge's)."""
    pool = [e for e in eligible(root, max_difficulty) if e[0] not in set(exclude)]
    return sorted(random.Random(seed).sample(pool, min(n, len(pool))))


def load(root, slug, difficulty):
    """One exercise as an eval task: prompt, files, test command."""
    d = Path(root) / "exercises" / "practice" / slug
    files = json.loads((d / ".meta" / "config.json").read_text())["files"]
    docs = [d / ".docs" / n for n in ("introduction.md", "instructions.md", "instructions.append.md")]
    text = "\n\n".join(p.read_text().strip() for p in docs if p.exists())
    solution, tests, editor = files["solution"], files["test"], files.get("editor", [])
    test_cmd = "python3 -m pytest -q " + " ".join(t for t in tests if t.endswith("_test.py"))
    prompt = (f"{text}\n\n"
              f"Use the above instructions to modify the supplied files: {', '.join(solution)}\n"
              "Don't change the names of existing functions or classes, as they may be referenced from other code "
              "like unit tests, etc.\nOnly use standard python libraries, don't suggest installing any packages.\n"
              f"The tests are in {', '.join(tests)}; run them with `{test_cmd}`.")
    return {"name": slug, "split": "exercism", "difficulty": difficulty, "prompt": prompt, "dir": str(d),
            "solution": solution, "tests": tests + editor, "test_cmd": test_cmd,
            "may_change": solution, "markers": {}, "max_iterations": 10}


def lay_out(task, ws):
    """Copies the stub, the tests and any helper into ws."""
    for rel in task["solution"] + task["tests"]:
        dst = Path(ws) / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(task["dir"]) / rel, dst)


def judge(task, ws, env):
    """Restores the exercise's tests and runs them: True when they pass."""
    for rel in task["tests"]:
        shutil.copy2(Path(task["dir"]) / rel, Path(ws) / rel)
    shutil.rmtree(Path(ws) / ".pytest_cache", ignore_errors=True)
    try:
        p = subprocess.run(["bash", "-c", task["test_cmd"]], cwd=ws, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return False
    return p.returncode == 0
