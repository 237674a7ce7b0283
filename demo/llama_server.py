"""llama.cpp's HTTP server from the prebuilt PyPI wheel `xllamacpp`, started
with the subset of `llama-server`'s flags that scripts/demo, scripts/eval and
CI pass, so callers cannot tell the two apart:

    llama_server.py -m MODEL.gguf --host 127.0.0.1 --port N -c 8192 -np 1 \
        --jinja --chat-template-file demo/qwen-tools.jinja --temp 0

The server (llama.cpp's own C++ server, linked into the wheel) serves
`/health` and `/v1/chat/completions` on HOST:PORT from a thread of this
process and logs to stderr in llama-server's format. This process waits for
SIGTERM or SIGINT and then exits. An unknown flag is an error (exit 2), never
ignored; a model that fails to load exits 1.

scripts/setup-model copies this file next to the wheel it installs, with that
virtualenv's Python on its first line.
"""

import argparse
import os
import signal
import sys


def main() -> int:
    ap = argparse.ArgumentParser(prog="llama-server (xllamacpp)")
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("-c", "--ctx-size", type=int, default=8192)
    ap.add_argument("-np", "--parallel", type=int, default=1)
    ap.add_argument("--jinja", action="store_true")
    ap.add_argument("--chat-template-file")
    ap.add_argument("--temp", type=float)
    args = ap.parse_args()

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.n_ctx = args.ctx_size
    params.n_parallel = args.parallel
    params.hostnames = [args.host]
    params.port = args.port
    params.use_jinja = args.jinja
    if args.chat_template_file:
        with open(args.chat_template_file, encoding="utf-8") as f:
            params.chat_template = f.read()
    if args.temp is not None:
        params.sampling.temp = args.temp
    # The signals are blocked before the server's threads start, so they
    # inherit the mask and the wait below is the only place they land.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    try:
        server = xllamacpp.Server(params)
    except Exception as e:  # the model did not load, or the port is taken
        print(f"llama-server (xllamacpp): {e}", file=sys.stderr)
        return 1
    print(f"llama-server (xllamacpp {xllamacpp.__version__}) listening on {server.listening_address}",
          file=sys.stderr, flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    # The server's threads are native: exit without waiting for them.
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
