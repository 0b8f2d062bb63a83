"""Decode-shaped attention (a few queries a sequence against long keys) against SDPA.

torch.ops.fusedops.flash_attention (tile_flash_attention, BSHD) against
F.scaled_dot_product_attention(enable_gqa=True) under each SDPA backend alone, on the same
tensors (uniform in [-1, 1), a fixed seed); causal shapes (a trailing c: speculative decode)
give the peers torch's bottom-right causal bias (causal_lower_right, our convention), n/a where
a backend refuses it. Ours is checked first against an fp32
SDPA of the same inputs (the largest |difference| is printed). Timing by bench/vs_torch.py's
Timer.per_launch_ms (the GPU waits while the host enqueues a batch: these kernels are shorter
than a launch from Python, so back to back they would time the host), over enough copies of K
and V (rotated a launch) that they do not stay in L2, in --rounds rounds with the providers'
order rotated, the median of each. Reported:
microseconds a call and the GB/s of reading K and V once in our time (decode is bound by
reading the key/value cache). docs/perf-notes.md, A44, has what the library does with such
calls.

    PYTHONPATH=python python3 bench/decode_vs_sdpa.py --lib build/libfusedops.so \\
        [--shapes 1x32/8x1x8192x128,...] [--dtype bf16] [--rounds 2]

A shape is B x HQ/HKV x SQ x SK x D[c]: batch, query heads / key-value heads, queries and keys a
sequence, head dim, c for causal.
"""
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

# K and V bytes the copies span at least: past the L2 (50 or 60 MiB), so each launch reads its
# cache from DRAM as a server's decode step does.
L2_FLUSH_MB = 200
SHAPES = ("1x32/8x1x8192x128,8x32/8x1x8192x128,64x32/8x1x4096x128,1x32/32x1x16384x128,"
          "4x32/8x4x8192x128,16x16/16x1x2048x64,1x32/8x1x32768x128,4x32/8x1x16384x128,"
          "2x64/8x1x32768x128,1x16/16x1x8192x64,2x16/16x1x8192x64,32x32/8x1x4096x128,"
          "32x16/16x1x4096x64,4x32/8x4x8192x128c")  # docs/performance.md's decode table


def parse_shape(text):
    """'BxHQ/HKVxSQxSKxD[c]' -> (b, hq, hkv, sq, sk, d, causal)."""
    causal = text.endswith("c")
    b, heads, sq, sk, d = text.rstrip("c").split("x")
    hq, hkv = heads.split("/")
    return int(b), int(hq), int(hkv), int(sq), int(sk), int(d), causal


def main():
    import vs_torch
    args = vs_torch.sdpa_tool_args(__doc__, SHAPES, 2).parse_args()
    vs_torch.load_torch_ops(args.lib)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right
    F = torch.nn.functional
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    timer = vs_torch.Timer(3)
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    print(f"{'B x HQ/HKV x SQ x SK x D':26} {'K+V MB':>7} {'ours us':>8} "
          + " ".join(f"{n:>9}" for n in backends) + f" {'ours GB/s':>9}  max |ours - fp32|")
    for shape in args.shapes.split(","):
        b, hq, hkv, sq, sk, d, causal = parse_shape(shape)
        mask = causal_lower_right(sq, sk) if causal else None
        # the reference's: key j seen by query i iff j <= i + sk - sq
        dense = (torch.ones(sq, sk, dtype=torch.bool, device="cuda").tril(sk - sq)
                 if causal else None)
        g = torch.Generator(device="cuda").manual_seed(1)
        kv_mb = 2 * b * sk * hkv * d * torch.empty(0, dtype=dtype).element_size() / 1e6
        copies = max(1, -(-L2_FLUSH_MB // int(kv_mb + 1)))
        q = torch.empty(b, sq, hq, d, device="cuda").uniform_(-1, 1, generator=g).to(dtype)
        ks = [torch.empty(b, sk, hkv, d, device="cuda").uniform_(-1, 1, generator=g).to(dtype)
              for _ in range(copies)]
        vs = [torch.empty(b, sk, hkv, d, device="cuda").uniform_(-1, 1, generator=g).to(dtype)
              for _ in range(copies)]
        qt = q.transpose(1, 2)  # BHSD views
        kts, vts = [k.transpose(1, 2) for k in ks], [v.transpose(1, 2) for v in vs]

        def ours(i):
            return torch.ops.fusedops.flash_attention(q, ks[i], vs[i], causal)

        ref = F.scaled_dot_product_attention(qt.float(), kts[0].float(), vts[0].float(),
                                             attn_mask=dense, enable_gqa=True).transpose(1, 2)
        err = (ours(0).float() - ref).abs().max().item()
        timed = {"ours": ours}
        for name, backend in backends.items():
            def peer(i, backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(qt, kts[i], vts[i], attn_mask=mask,
                                                          enable_gqa=True)
            try:
                peer(0)
                timed[name] = peer
            except Exception:  # noqa: BLE001  the backend does not take this shape (n/a)
                pass
        us = {name: statistics.median(ms) * 1e3
              for name, ms in vs_torch.rotated_rounds_ms(timer, timed, args.rounds, 16, copies,
                                                         steady=False).items()}
        cells = " ".join(f"{us[n]:9.1f}" if n in us else f"{'n/a':>9}" for n in backends)
        print(f"{shape:26} {kv_mb:7.1f} {us['ours']:8.1f} {cells} {kv_mb / us['ours'] * 1e3:9.0f}  "
              f"{err:.2e}", flush=True)

if __name__ == "__main__":
    main()
