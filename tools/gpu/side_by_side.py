#!/usr/bin/env python3
"""side_by_side.py — Trident's device bench and eager PyTorch, one table, tokens/s side by side.

    side_by_side.py BENCH_MD TORCH_JSONL [-o OUT.md]

BENCH_MD is what `trident bench --suite device --device cuda` wrote (bench.md): its note lines
"training step (..., fp32|bf16): S s = N tokens/s = G GFLOP/s of model FLOPs" give Trident's
step and its model FLOP/s. TORCH_JSONL is what tools/gpu/torch_gpt2_step.py --out wrote, one
line per case (fp32/bf16, math/sdpa attention). PyTorch's model FLOP/s are its tokens/s times
Trident's model FLOPs per token (the same model and shape: the bench counts them once, in
src/model/flops.c), so the two columns differ only by time.

Prints the markdown table and writes it to OUT.md. Standard library only.
Not here: any measuring (both sides ran before, on the same GPU, one after the other).
"""
import argparse
import json
import re
import sys

STEP = re.compile(r"training step \(([^)]*)\): ([0-9.eE+-]+) s = ([0-9.eE+-]+) tokens/s = "
                  r"([0-9.eE+-]+) GFLOP/s")


SHAPE = re.compile(r"L=(\d+) C=(\d+) T=(\d+) B=(\d+)")


def trident_shape(path):
    m = SHAPE.search(open(path, encoding="utf-8").read())
    return tuple(int(x) for x in m.groups()) if m else None


def trident_rows(path):
    rows = {}
    for line in open(path, encoding="utf-8"):
        m = STEP.search(line)
        if m:
            dtype = "bf16" if "bf16" in m.group(1) else "fp32"
            rows[dtype] = {"step_s": float(m.group(2)), "tokens_per_s": float(m.group(3)),
                           "gflops": float(m.group(4))}
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("bench_md")
    p.add_argument("torch_jsonl")
    p.add_argument("-o", "--output")
    a = p.parse_args()
    tri = trident_rows(a.bench_md)
    if not tri:
        print(f"side_by_side: no 'training step (...)' line in {a.bench_md}", file=sys.stderr)
        return 1
    torch_rows = []
    try:
        torch_rows = [json.loads(l) for l in open(a.torch_jsonl, encoding="utf-8") if l.strip()]
    except OSError as e:
        print(f"side_by_side: {e}; Trident's rows only", file=sys.stderr)
    out = ["## GPT-2-small training step on one GPU: Trident vs eager PyTorch (same shape, same GPU)", "",
           "| precision | implementation | ms / step | tokens/s | model TFLOP/s | Trident ÷ this |",
           "|---|---|---:|---:|---:|---:|"]
    for dtype in ("fp32", "bf16"):
        t = tri.get(dtype)
        if t:
            out.append(f"| {dtype} | Trident (`trident bench --suite device`) | {t['step_s'] * 1e3:.1f} | "
                       f"{t['tokens_per_s']:.0f} | {t['gflops'] / 1e3:.3g} | 1.00 |")
        for r in torch_rows:
            if r.get("dtype") != dtype:
                continue
            tflops = ""
            ratio = ""
            if t:
                flops_per_token = t["gflops"] * 1e9 / t["tokens_per_s"]
                tflops = f"{r['tokens_per_s'] * flops_per_token / 1e12:.3g}"
                ratio = f"{t['tokens_per_s'] / r['tokens_per_s']:.2f}"
            out.append(f"| {dtype} | PyTorch {r.get('torch', '?')} eager, attention {r['attention']} | "
                       f"{r['step_s'] * 1e3:.1f} | {r['tokens_per_s']:.0f} | {tflops} | {ratio} |")
    shape = torch_rows[0] if torch_rows else {}
    if shape:
        out += ["", f"Shape: L={shape['L']} C={shape['C']} NH={shape['NH']} T={shape['T']} B={shape['B']} "
                    f"V={shape['V']} ({shape['params']:,} parameters in PyTorch); PyTorch: median of "
                    f"{shape['steps']} steps; fp32 without TF32 on both sides; bf16 = bf16 products with "
                    "fp32 accumulation and fp32 master weights on both sides (PyTorch: autocast)."]
        ts = trident_shape(a.bench_md)
        if ts and ts != (shape["L"], shape["C"], shape["T"], shape["B"]):
            out += ["", f"**Shapes differ**: Trident's bench ran L, C, T, B = {ts}: the rows are not comparable."]
    text = "\n".join(out) + "\n"
    print(text)
    if a.output:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
