"""Ragged causal prefill: our varlen call against SDPA on the same batch padded.

torch.ops.fusedops.flash_attention_varlen (tile_flash_attention with cu_seqlens) runs a batch of
B sequences of drawn lengths (uniform in [1, S], a fixed seed) packed as [tokens, H, D]. The
peer is what a caller without a varlen kernel does: F.scaled_dot_product_attention on the batch
right-padded to its longest sequence, is_causal=True (with right padding a real query sees only
real keys, so the padded call's real rows are the answer), under each SDPA backend alone. The
padded tensors are made once, outside the timing (the peer's padding copies are not charged).
Every output's real rows are checked against ours.

Timing as bench/vs_torch.py's attention (its Timer: a steady state at the power limit), in
rounds with the providers' order rotated, the median of each reported. TFLOP/s counts the useful
pairs only, as for causal attention: 4 * H * D * sum(l^2) / 2.

    PYTHONPATH=python python3 bench/varlen_vs_sdpa.py --lib build/libfusedops.so \\
        [--shapes 32x16x1024x64,...] [--dtype bf16] [--seed 7] [--rounds 3]
"""
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)


def lengths(batch, longest, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, longest + 1, (batch,), generator=g).tolist()


def main():
    import vs_torch
    ap = vs_torch.sdpa_tool_args(__doc__, "32x16x1024x64,16x16x2048x64,16x16x2048x128,64x32x512x128", 3)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    vs_torch.load_torch_ops(args.lib)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    timer = vs_torch.Timer(10)
    print("shape (B x H x S x D), tokens, longest | TFLOP/s of useful pairs: ours, "
          "SDPA padded flash, cudnn, efficient | max |diff| to ours")
    for shape in args.shapes.split(","):
        b, h, s, d = (int(x) for x in shape.split("x"))
        lens = lengths(b, s, args.seed)
        longest, tokens = max(lens), sum(lens)
        g = torch.Generator(device="cuda").manual_seed(args.seed)
        q, k, v = (torch.randn(tokens, h, d, generator=g, device="cuda").to(dtype)
                   for _ in range(3))
        cu = torch.tensor([0] + lens, device="cuda").cumsum(0).to(torch.int32)
        starts = cu.tolist()
        padded = []
        for t in (q, k, v):
            p = torch.zeros(b, h, longest, d, dtype=dtype, device="cuda")
            for i, n in enumerate(lens):
                p[i, :, :n] = t[starts[i]:starts[i] + n].transpose(0, 1)
            padded.append(p)
        flops = 4.0 * h * d * sum(n * n for n in lens) / 2

        def ours(_i):
            return torch.ops.fusedops.flash_attention_varlen(q, k, v, cu, cu, longest, longest,
                                                             True)
        timed = {"ours": ours}
        out = ours(0)
        diffs = {}
        for backend in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"):
            be = getattr(SDPBackend, backend)

            def peer(_i, be=be):
                with sdpa_kernel(be):
                    return F.scaled_dot_product_attention(*padded, is_causal=True)
            try:
                got = peer(0)
                worst = 0.0
                for i, n in enumerate(lens):
                    real = got[i, :, :n].transpose(0, 1).float()
                    worst = max(worst, float((real - out[starts[i]:starts[i] + n].float())
                                             .abs().max()))
                diffs[backend] = worst
                timed[backend] = peer
            except RuntimeError as e:
                diffs[backend] = f"cannot run: {str(e).splitlines()[0][:80]}"
        times = vs_torch.rotated_rounds_ms(timer, timed, args.rounds, 10)
        tf = {name: flops / (statistics.median(ms) * 1e-3) / 1e12 for name, ms in times.items()}
        cells = " ".join(f"{tf[n]:.1f}" if n in tf else "-" for n in
                         ("ours", "FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"))
        print(f"{shape}, {tokens}, {longest} | {cells} | "
              + ", ".join(f"{n.split('_')[0].lower()} {v if isinstance(v, str) else f'{v:.4f}'}"
                          for n, v in diffs.items()), flush=True)


if __name__ == "__main__":
    main()
