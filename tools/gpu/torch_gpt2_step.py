#!/usr/bin/env python3
"""torch_gpt2_step.py — the PyTorch side of `trident bench --suite device --device cuda`.

Times an eager PyTorch training step (forward, backward, AdamW) of the model the device suite
trains — GPT-2 shaped: token + position embedding, pre-LayerNorm blocks of causal attention and
a tanh-GELU MLP 4C wide, final LayerNorm, LM head tied to the token embedding — with the same
shape (L, C, NH, T, B, padded vocabulary V) on the same GPU, so that tokens/s can be read side
by side with Trident's. Four cases:

    fp32  math   fp32 weights and products, TF32 off (as cuBLAS runs in trident's fp32 step),
                 attention written out: softmax of the (T, T) scores, as trident computes it
    fp32  sdpa   the same, attention through scaled_dot_product_attention (fused kernels)
    bf16  math   torch.autocast(bfloat16): bf16 products with fp32 accumulation, fp32 master
                 weights and optimizer (what trident's --bf16 does)
    bf16  sdpa   the same with scaled_dot_product_attention

Each case: --warmup steps, then --steps timed steps, each ended by torch.cuda.synchronize();
the median is reported. One line per case on stdout; with --out, one JSON object per line.

Not here: FLOP counting (the trident bench counts the model's FLOPs once, in
src/model/flops.c; the session script converts tokens/s with it), multi-GPU, torch.compile.
Written for this repository; needs only torch.
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, NH, sdpa):
        super().__init__()
        self.NH, self.sdpa = NH, sdpa
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)  # (3C, C)
        self.proj = nn.Linear(C, C)
        self.fc = nn.Linear(C, 4 * C)  # (4C, C)
        self.fcproj = nn.Linear(4 * C, C)

    def attention(self, x):  # x (B, T, C) -> (B, T, C)
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.NH, C // self.NH).transpose(1, 2) for t in (q, k, v))  # (B, NH, T, HS)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # (B, NH, T, T)
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = att @ v
        return self.proj(y.transpose(1, 2).reshape(B, T, C))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, V, T, L, C, NH, sdpa):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, NH, sdpa) for _ in range(L))
        self.lnf = nn.LayerNorm(C)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx, targets):  # idx, targets (B, T) -> scalar loss
        T = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.lnf(x) @ self.wte.weight.t()  # tied head: (B, T, V)
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def time_case(a, dtype, sdpa):
    torch.manual_seed(1234)
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    model = GPT(a.vocab, a.seq, a.layers, a.hidden, a.heads, sdpa).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1)
    idx = torch.randint(0, a.real_vocab, (a.batch, a.seq), device=dev)
    tgt = torch.randint(0, a.real_vocab, (a.batch, a.seq), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(a.device, dtype=torch.bfloat16, enabled=dtype == "bf16"):
            loss = model(idx, tgt)
        loss.backward()
        opt.step()
        return loss

    times = []
    for i in range(a.warmup + a.steps):
        sync()
        t0 = time.perf_counter()
        loss = step()
        sync()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    t = statistics.median(times)
    row = {
        "framework": "pytorch-eager",
        "torch": torch.__version__,
        "dtype": dtype,
        "attention": "sdpa" if sdpa else "math",
        "L": a.layers, "C": a.hidden, "NH": a.heads, "T": a.seq, "B": a.batch, "V": a.vocab,
        "params": sum(p.numel() for p in model.parameters()),
        "step_s": t,
        "tokens_per_s": a.batch * a.seq / t,
        "peak_mem_bytes": torch.cuda.max_memory_allocated() if a.device == "cuda" else 0,
        "last_loss": float(loss),
        "steps": a.steps,
    }
    del model, opt
    if a.device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=256, help="padded vocabulary (trident pads 256 bytes to 256)")
    p.add_argument("--real-vocab", type=int, default=256)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--cases", default="fp32:math,fp32:sdpa,bf16:math,bf16:sdpa")
    p.add_argument("--out", help="append one JSON line per case here")
    p.add_argument("--device", default="cuda", help="cpu: try the script on a machine without a GPU")
    a = p.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("torch_gpt2_step: no CUDA device visible to PyTorch", file=sys.stderr)
        return 77
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32, as in trident's cuBLAS calls
    torch.backends.cudnn.allow_tf32 = False
    where = torch.cuda.get_device_name() if a.device == "cuda" else "cpu"
    print(f"torch {torch.__version__} on {where}: GPT L={a.layers} C={a.hidden} "
          f"NH={a.heads} T={a.seq} B={a.batch} V={a.vocab}, median of {a.steps} steps after {a.warmup}")
    for case in a.cases.split(","):
        dtype, attn = case.split(":")
        row = time_case(a, dtype, attn == "sdpa")
        print(f"  {dtype} {row['attention']:4s}: {row['step_s'] * 1e3:8.2f} ms/step  "
              f"{row['tokens_per_s']:10.0f} tokens/s  peak {row['peak_mem_bytes'] / 2**30:.1f} GiB  "
              f"loss {row['last_loss']:.4f}", flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
