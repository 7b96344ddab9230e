#!/usr/bin/env python3
"""Writes calib-data/workloads.json: the shapes the cost model is fitted
and judged on, each labelled with its model family and configuration.

The first entries are the original 30 (kept as they were, with their
labels); the rest come from the published configurations of the models
below: per model, the projections of a prefill and of decode steps, the
batched attention scores and values, and the attention and vocabulary
softmaxes. Every tensor stays under 4 GiB (the profiler's limit).

    python3 calib-data/make_workloads.py   # rewrites calib-data/workloads.json
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "workloads.json")

# The original workloads, in their order, with their labels.
ORIGINAL = [
    ("mm_small_256x512", "matmul", (256, 512, 512, 1), "synthetic", "prototype"),
    ("mm_medium_1024", "matmul", (1024, 1024, 1024, 1), "synthetic", "square"),
    ("mm_large_2048", "matmul", (2048, 2048, 2048, 1), "synthetic", "square"),
    ("mm_bert_qkv_512x768", "matmul", (512, 2304, 768, 1), "bert", "bert-base"),
    ("mm_gpt2_ffn_768x3072", "matmul", (768, 3072, 768, 1), "gpt2", "gpt2-small"),
    ("sm_small_256x512", "softmax", (256, 512), "synthetic", "prototype"),
    ("sm_medium_512x1024", "softmax", (512, 1024), "synthetic", "prototype"),
    ("sm_large_1024x2048", "softmax", (1024, 2048), "synthetic", "prototype"),
    ("sm_attn_512x512", "softmax", (512, 512), "synthetic", "prototype"),
    ("mm_llama_4096", "matmul", (4096, 4096, 4096, 1), "synthetic", "square"),
    ("mm_big_8192", "matmul", (8192, 8192, 8192, 1), "synthetic", "square"),
    ("llama3_8b_qkv_prefill_2k", "matmul", (2048, 6144, 4096, 1), "llama3", "llama3-8b"),
    ("llama3_8b_down_prefill_2k", "matmul", (2048, 4096, 14336, 1), "llama3", "llama3-8b"),
    ("llama3_8b_o_proj_prefill_8k", "matmul", (8192, 4096, 4096, 1), "llama3", "llama3-8b"),
    ("llama3_8b_gate_up_decode_b1", "matmul", (1, 28672, 4096, 1), "llama3", "llama3-8b"),
    ("llama3_8b_qkv_decode_b1", "matmul", (1, 6144, 4096, 1), "llama3", "llama3-8b"),
    ("llama3_8b_o_proj_decode_b16", "matmul", (16, 4096, 4096, 1), "llama3", "llama3-8b"),
    ("mistral_7b_qkv_decode_b8", "matmul", (8, 6144, 4096, 1), "mistral", "mistral-7b"),
    ("mistral_7b_down_prefill_512", "matmul", (512, 4096, 14336, 1), "mistral", "mistral-7b"),
    ("gpt2_attn_scores_1k", "matmul", (1024, 1024, 64, 12), "gpt2", "gpt2-small"),
    ("gpt2_lm_head_decode_b1", "matmul", (1, 50257, 768, 1), "gpt2", "gpt2-small"),
    ("vit_b16_qkv_197", "matmul", (197, 2304, 768, 1), "vit", "vit-b16"),
    ("vit_b16_mlp_fc_b32", "matmul", (6304, 3072, 768, 1), "vit", "vit-b16"),
    ("bert_base_ffn_out_b8", "matmul", (4096, 768, 3072, 1), "bert", "bert-base"),
    ("sm_gpt2_attn_1k", "softmax", (12288, 1024), "gpt2", "gpt2-small"),
    ("sm_llama3_attn_2k", "softmax", (65536, 2048), "llama3", "llama3-8b"),
    ("sm_vit_attn_197", "softmax", (2364, 197), "vit", "vit-b16"),
    ("sm_clip_text_77", "softmax", (924, 77), "clip", "clip-vit-l14-text"),
    ("sm_gpt2_vocab_decode_b8", "softmax", (8, 50257), "gpt2", "gpt2-small"),
    ("sm_8192", "softmax", (8192, 8192), "synthetic", "square"),
    ("copy_1gib", "copy", (1073741824,), "synthetic", "bandwidth"),
    ("transpose_gpt2_1024x768", "transpose", (1024, 768), "gpt2", "gpt2-small"),
    ("transpose_llama_2048x4096", "transpose", (2048, 4096), "llama3", "llama3-8b"),
    ("transpose_4096x14336", "transpose", (4096, 14336), "llama3", "llama3-8b"),
]

# Decoder language models: (family, model, hidden, heads, kv_heads,
# head_dim, ffn, vocab, gated FFN, prefill tokens, decode batch, attention
# length). Sizes from each model's published configuration.
DECODERS = [
    ("llama2", "llama2-7b", 4096, 32, 32, 128, 11008, 32000, True, 512, 32, 4096),
    ("llama2", "llama2-13b", 5120, 40, 40, 128, 13824, 32000, True, 1024, 4, 1024),
    ("llama2", "llama2-70b", 8192, 64, 8, 128, 28672, 32000, True, 256, 16, 512),
    ("llama3", "llama3-70b", 8192, 64, 8, 128, 28672, 128256, True, 128, 8, 1024),
    ("mistral", "mistral-7b", 4096, 32, 8, 128, 14336, 32000, True, 4096, 64, 4096),
    ("qwen2", "qwen2-7b", 3584, 28, 4, 128, 18944, 152064, True, 1024, 16, 2048),
    ("qwen2", "qwen2-0.5b", 896, 14, 2, 64, 4864, 151936, True, 8192, 32, 8192),
    ("phi3", "phi3-mini", 3072, 32, 32, 96, 8192, 32064, True, 2048, 8, 4096),
    ("gemma", "gemma-7b", 3072, 16, 16, 256, 24576, 256000, True, 384, 4, 2048),
    ("gemma", "gemma-2b", 2048, 8, 1, 256, 16384, 256000, True, 1536, 1, 4096),
    ("deepseek", "deepseek-llm-7b", 4096, 32, 32, 128, 11008, 102400, True, 768, 16, 2048),
    ("gpt2", "gpt2-xl", 1600, 25, 25, 64, 6400, 50257, False, 1024, 8, 1024),
    ("gptj", "gptj-6b", 4096, 16, 16, 256, 16384, 50400, False, 640, 4, 2048),
    ("gpt-neox", "gpt-neox-20b", 6144, 64, 64, 96, 24576, 50432, False, 200, 2, 1024),
]

# Encoders (bidirectional attention, no decode): (family, model, hidden,
# heads, ffn, tokens per sequence, sequences).
ENCODERS = [
    ("bert", "bert-large", 1024, 16, 4096, 512, 4),
    ("t5", "t5-base", 768, 12, 3072, 512, 8),
    ("t5", "t5-large", 1024, 16, 4096, 512, 2),
    ("vit", "vit-l16", 1024, 16, 4096, 197, 8),
    ("vit", "vit-h14", 1280, 16, 5120, 257, 4),
    ("clip", "clip-vit-l14-vision", 1024, 16, 4096, 257, 8),
    ("clip", "clip-vit-l14-text", 768, 12, 3072, 77, 32),
    ("whisper", "whisper-large-v3-encoder", 1280, 20, 5120, 1500, 1),
    ("whisper", "whisper-base-encoder", 512, 8, 2048, 1500, 4),
]

FOUR_GIB = 4 << 30


def matmul(name, m, n, k, batch, family, model):
    assert 2 * batch * max(m * k, k * n, m * n) <= FOUR_GIB, name
    w = {"name": name, "kind": "matmul", "m": m, "n": n, "k": k}
    if batch != 1:
        w["batch"] = batch
    w["family"], w["model"] = family, model
    return w


def softmax(name, rows, cols, family, model):
    assert 4 * rows * cols <= FOUR_GIB, name
    return {"name": name, "kind": "softmax", "rows": rows, "cols": cols, "family": family, "model": model}


def tag(n):
    return f"{n // 1024}k" if n % 1024 == 0 and n >= 1024 else str(n)


def decoder(family, model, hidden, heads, kv, hd, ffn, vocab, gated, prefill, batch, seq):
    p = model.replace("-", "_").replace(".", "_")
    qkv = (heads + 2 * kv) * hd
    up = 2 * ffn if gated else ffn
    out = []
    pre, dec = f"prefill_{tag(prefill)}", f"decode_b{batch}"
    out.append(matmul(f"{p}_qkv_{pre}", prefill, qkv, hidden, 1, family, model))
    out.append(matmul(f"{p}_up_{pre}", prefill, up, hidden, 1, family, model))
    out.append(matmul(f"{p}_down_{pre}", prefill, hidden, ffn, 1, family, model))
    out.append(matmul(f"{p}_qkv_{dec}", batch, qkv, hidden, 1, family, model))
    out.append(matmul(f"{p}_o_proj_{dec}", batch, hidden, heads * hd, 1, family, model))
    out.append(matmul(f"{p}_lm_head_decode_b{batch}", batch, vocab, hidden, 1, family, model))
    # Attention over `seq` tokens, heads as the batch (the KV heads' keys
    # and values shared by their groups are read per query head here).
    out.append(matmul(f"{p}_attn_scores_{tag(seq)}", seq, seq, hd, heads, family, model))
    out.append(matmul(f"{p}_attn_values_{tag(seq)}", seq, hd, seq, heads, family, model))
    out.append(softmax(f"sm_{p}_attn_{tag(seq)}", heads * seq, seq, family, model))
    out.append(softmax(f"sm_{p}_vocab_decode_b{batch}", batch, vocab, family, model))
    return out


def encoder(family, model, hidden, heads, ffn, tokens, seqs):
    p = model.replace("-", "_").replace(".", "_")
    m = tokens * seqs
    hd = hidden // heads
    return [
        matmul(f"{p}_qkv_b{seqs}", m, 3 * hidden, hidden, 1, family, model),
        matmul(f"{p}_fc1_b{seqs}", m, ffn, hidden, 1, family, model),
        matmul(f"{p}_fc2_b{seqs}", m, hidden, ffn, 1, family, model),
        matmul(f"{p}_attn_scores_{tokens}", tokens, tokens, hd, heads * min(seqs, 8), family, model),
        softmax(f"sm_{p}_attn_{tokens}_b{seqs}", heads * seqs * tokens, tokens, family, model),
    ]


def extra():
    """Mixtral's experts, Stable Diffusion's attention, Whisper's decoder."""
    out = []
    # Mixtral 8x7B: 8 experts of FFN 14336 on hidden 4096; 2048 tokens
    # routed top-2 give 512 tokens an expert, the experts as a batch.
    for tokens, phase in [(512, "prefill_2k"), (16, "decode_b64")]:
        out.append(matmul(f"mixtral_8x7b_experts_up_{phase}", tokens, 2 * 14336, 4096, 8, "mixtral", "mixtral-8x7b"))
        out.append(matmul(f"mixtral_8x7b_experts_down_{phase}", tokens, 4096, 14336, 8, "mixtral", "mixtral-8x7b"))
    out.append(matmul("mixtral_8x7b_router_prefill_2k", 2048, 8, 4096, 1, "mixtral", "mixtral-8x7b"))
    out.append(matmul("mixtral_8x7b_qkv_decode_b64", 64, 6144, 4096, 1, "mixtral", "mixtral-8x7b"))
    out.append(softmax("sm_mixtral_8x7b_router_2k", 2048, 8, "mixtral", "mixtral-8x7b"))
    # Stable Diffusion 1.5's UNet: self-attention at 64x64, 32x32 and
    # 16x16 latents (320, 640, 1280 channels, 8 heads), cross-attention to
    # 77 text tokens of 768, batch 2 (classifier-free guidance).
    for side, ch in [(64, 320), (32, 640), (16, 1280)]:
        t, hd = side * side, ch // 8
        out.append(matmul(f"sd15_qkv_{side}x{side}", 2 * t, 3 * ch, ch, 1, "stable-diffusion", "sd15-unet"))
        out.append(matmul(f"sd15_attn_scores_{side}x{side}", t, t, hd, 16, "stable-diffusion", "sd15-unet"))
        out.append(matmul(f"sd15_attn_values_{side}x{side}", t, hd, t, 16, "stable-diffusion", "sd15-unet"))
        out.append(matmul(f"sd15_cross_scores_{side}x{side}", t, 77, hd, 16, "stable-diffusion", "sd15-unet"))
        out.append(matmul(f"sd15_ff_{side}x{side}", 2 * t, 8 * ch, ch, 1, "stable-diffusion", "sd15-unet"))
        out.append(softmax(f"sm_sd15_attn_{side}x{side}", 16 * t, t, "stable-diffusion", "sd15-unet"))
        out.append(softmax(f"sm_sd15_cross_{side}x{side}", 16 * t, 77, "stable-diffusion", "sd15-unet"))
    # Whisper large-v3's decoder: cross-attention to 1500 frames, decode.
    out.append(matmul("whisper_large_v3_cross_scores_b4", 4, 1500, 64, 20 * 4, "whisper", "whisper-large-v3-decoder"))
    out.append(matmul("whisper_large_v3_proj_decode_b4", 4, 1280, 1280, 1, "whisper", "whisper-large-v3-decoder"))
    out.append(matmul("whisper_large_v3_lm_head_b4", 4, 51866, 1280, 1, "whisper", "whisper-large-v3-decoder"))
    out.append(softmax("sm_whisper_large_v3_cross_b4", 20 * 4, 1500, "whisper", "whisper-large-v3-decoder"))
    # The longest prefill: Mistral 7B's QKV projection over 16384 tokens.
    out.append(matmul("mistral_7b_qkv_prefill_16k", 16384, 6144, 4096, 1, "mistral", "mistral-7b"))
    # Odd sizes: a prime vocabulary, an odd hidden size, odd token counts.
    out.append(matmul("odd_77x197x96", 77, 197, 96, 1, "synthetic", "odd"))
    out.append(matmul("odd_1000x1000x1000", 1000, 1000, 1000, 1, "synthetic", "odd"))
    out.append(matmul("odd_3x50021x1000", 3, 50021, 1000, 1, "synthetic", "odd"))
    out.append(matmul("odd_4095x4097x1023", 4095, 4097, 1023, 1, "synthetic", "odd"))
    out.append(softmax("sm_odd_1x1", 1, 1, "synthetic", "odd"))
    out.append(softmax("sm_odd_999x4099", 999, 4099, "synthetic", "odd"))
    return out


def main():
    items = []
    for name, kind, dims, family, model in ORIGINAL:
        if kind == "matmul":
            items.append(matmul(name, *dims, family, model))
        elif kind == "softmax":
            items.append(softmax(name, *dims, family, model))
        elif kind == "copy":
            items.append({"name": name, "kind": "copy", "bytes": dims[0], "family": family, "model": model})
        else:
            items.append({"name": name, "kind": kind, "rows": dims[0], "cols": dims[1], "family": family, "model": model})
    for d in DECODERS:
        items += decoder(*d)
    for e in ENCODERS:
        items += encoder(*e)
    items += extra()
    names = [w["name"] for w in items]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, dup
    with open(OUT, "w") as f:
        f.write("[\n" + ",\n".join("  " + json.dumps(w) for w in items) + "\n]\n")
    kinds = {k: sum(w["kind"] == k for w in items) for k in ("matmul", "softmax")}
    families = sorted({w["family"] for w in items})
    print(f"{len(items)} workloads ({kinds['matmul']} matmul, {kinds['softmax']} softmax), {len(families)} families: {', '.join(families)}")


if __name__ == "__main__":
    main()
