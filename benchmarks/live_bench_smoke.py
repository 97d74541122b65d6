"""End-to-end check of the live sweep path on this CPU (`python -m k3lab bench`).

It builds a tiny random Llama (2 layers, 64-wide) as a GGUF file plus a matching
word-level Hugging Face tokenizer in a temporary folder, starts a real OpenAI-compatible
server on 127.0.0.1 (llama.cpp's, through ``llama_cpp.server`` of llama-cpp-python; it
accepts sglang's ``ignore_eos``/``best_of`` sampling fields, unlike ``transformers serve``),
then runs ``python -m k3lab bench`` against it, which drives the real
``python -m sglang.bench_serving``. The JSONL that bench_serving wrote lands in
``data/measured/cpu-2core/bench_live_smoke.jsonl`` with a ``.meta.json``.

The numbers measure a toy model on 2 shared cores: they prove the path, not a speed.

    python benchmarks/live_bench_smoke.py --sglang-python .venv-sglang/bin/python \
        --server-python /path/to/env-with-llama-cpp-python/bin/python

Run it with an interpreter that has ``gguf`` and ``tokenizers`` (the sglang env has both).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT_DIR = REPO / "data" / "measured" / "cpu-2core"
WORDS = [chr(c) for c in range(ord("a"), ord("z") + 1)]


def make_tokenizer(d: Path) -> None:
    """A word-level tokenizer over a..z (+ specials), saved as a HF fast tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(WORDS)}
    vocab.update({"<unk>": len(vocab), "<s>": len(vocab) + 1, "</s>": len(vocab) + 2})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>")
    fast.save_pretrained(d)


def make_gguf(path: Path, seed: int = 0) -> None:
    """A 2-layer random Llama with a SentencePiece-style vocab (specials, 256 byte
    tokens, '▁a'..'▁z', 'a'..'z'), float32, as GGUF."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    ttype = [2, 3, 3] + [6] * 256
    pieces = ["▁"] + ["▁" + w for w in WORDS] + WORDS
    tokens += pieces
    ttype += [1] * len(pieces)
    scores = [0.0, 0.0, 0.0] + [0.0] * 256 + [-float(i) for i in range(len(pieces))]
    n_vocab, n_embd, n_ff, n_head, n_layer, n_ctx = len(tokens), 64, 128, 4, 2, 2048
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("k3lab-tiny-llama")
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_file_type(0)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(ttype)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)

    def t(name, *shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.05).astype(np.float32))

    t("token_embd.weight", n_vocab, n_embd)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    t("output.weight", n_vocab, n_embd)
    for i in range(n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        for nm in ("attn_q", "attn_k", "attn_v", "attn_output"):
            t(f"blk.{i}.{nm}.weight", n_embd, n_embd)
        t(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
        t(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        t(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, timeout_s: float = 120.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"server at {url} not ready after {timeout_s:.0f} s")


def pkg_version(python: str, mod: str) -> str:
    r = subprocess.run([python, "-c", f"import {mod}; print(getattr({mod}, '__version__', '?'))"],
                       capture_output=True, text=True)
    return r.stdout.strip() or "unavailable"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--sglang-python", required=True, help="interpreter with sglang (+ datasets)")
    ap.add_argument("--server-python", required=True, help="interpreter with llama-cpp-python[server]")
    ap.add_argument("--concurrency", default="1,4")
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--output-len", type=int, default=16)
    ap.add_argument("--num-prompts-per-concurrency", type=int, default=2)
    ap.add_argument("--out", default=str(OUT_DIR / "bench_live_smoke.jsonl"))
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="k3lab-live-") as tmp:
        tmp = Path(tmp)
        model, tokdir = tmp / "tiny.gguf", tmp / "tokenizer"
        make_gguf(model)
        make_tokenizer(tokdir)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = open(tmp / "server.log", "w")
        srv = subprocess.Popen([a.server_python, "-m", "llama_cpp.server", "--model", str(model),
                                "--model_alias", "k3lab-tiny", "--host", "127.0.0.1", "--port", str(port),
                                "--n_ctx", "2048", "--n_threads", "1", "--verbose", "False"],
                               stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_ready(url)
            cmd = [sys.executable, "-m", "k3lab", "bench", "--base-url", url,
                   "--concurrency", a.concurrency, "--input-len", str(a.input_len),
                   "--output-len", str(a.output_len),
                   "--num-prompts-per-concurrency", str(a.num_prompts_per_concurrency),
                   "--backend", "vllm", "--tokenizer", str(tokdir), "--model", "k3lab-tiny",
                   "--python", a.sglang_python, "--out", a.out]
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
            r = subprocess.run(cmd, env=env)
            if r.returncode:
                print((tmp / "server.log").read_text()[-3000:], file=sys.stderr)
                return r.returncode
        finally:
            srv.terminate()
            try:
                srv.wait(timeout=20)
            except subprocess.TimeoutExpired:
                srv.kill()
            log.close()
    meta = {
        "what": "live sweep path smoke test: real sglang bench_serving against a real llama.cpp OpenAI-compatible server serving a tiny random 2-layer Llama (toy model; the numbers prove the path, not a speed)",
        "machine": {"kind": "cpu-2core", "cpu": platform.processor() or platform.machine(),
                    "cores": os.cpu_count(), "platform": platform.platform()},
        "versions": {"python": platform.python_version(),
                     "sglang": pkg_version(a.sglang_python, "sglang"),
                     "llama_cpp": pkg_version(a.server_python, "llama_cpp"),
                     "datasets": pkg_version(a.sglang_python, "datasets")},
        "date": dt.date.today().isoformat(),
        "command": "python benchmarks/live_bench_smoke.py --sglang-python SGLANG_PY --server-python LLAMA_CPP_PY",
        "bench_command": "python -m k3lab bench " + " ".join(
            "<URL>" if x == url else ("<TOKENIZER_DIR>" if x == str(tokdir) else
                                      ("<SGLANG_PY>" if x == a.sglang_python else
                                       ("<OUT>" if x == a.out else x))) for x in cmd[4:]),
        "model": "random 2-layer Llama, n_embd 64, vocab 318 (SentencePiece-style, float32), seed 0",
    }
    Path(a.out).with_suffix(".meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
