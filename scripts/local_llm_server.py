"""Serve a local GGUF model with llama.cpp's own HTTP server (the xllamacpp package).

Routes (llama.cpp): /health, /v1/models, /v1/chat/completions, /v1/messages,
/v1/embeddings. Serves until SIGTERM or SIGINT. Used by scripts/local-llm.
"""

import argparse
import signal
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="path of the .gguf file")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--alias", default="local", help="model name clients send")
    ap.add_argument("--template", help="a Jinja chat template file (for tool calls)")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--embedding", action="store_true", help="serve embeddings (mean pooling)")
    args = ap.parse_args()

    import xllamacpp as xlc

    p = xlc.CommonParams()
    p.model.path = args.model
    p.hostnames = ["127.0.0.1"]
    p.port = args.port
    p.n_ctx = args.ctx
    p.n_parallel = 1
    p.use_jinja = True  # needed for `tools`
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.model_alias = {args.alias}
    if args.template:
        with open(args.template, encoding="utf-8") as f:
            p.chat_template = f.read()
    if args.embedding:
        p.embedding = True
        p.pooling_type = xlc.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    server = xlc.Server(p)  # serves until the process ends
    print(f"serving {args.model} on 127.0.0.1:{args.port}", file=sys.stderr, flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
