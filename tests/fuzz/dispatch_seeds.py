#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_dispatch (tests/fuzz/corpus/dispatch/) in the byte layout
fuzz_dispatch.c decodes. Run from the repository root; the seeds are committed, so this is
needed only when the layout changes."""
import os
import struct

OUT = "tests/fuzz/corpus/dispatch"


def i64(v):
    """take_i64: small values as (tag, delta), anything else raw (tag 0, delta, 8 bytes)."""
    if -8 <= v <= 55:
        return bytes([((v + 8) << 2) | 1, 0])
    return bytes([0, 0]) + struct.pack(">q", v)


def i32(v):
    """take_i32: 0..127 as one byte, anything else raw."""
    if 0 <= v <= 127:
        return bytes([v << 1])
    return bytes([1]) + struct.pack(">i", v)


def arch(a):
    """arch: the small form holds 80..111 (0..31) and 0..63 (64..127); others raw."""
    if 80 <= a <= 111:
        return i32(a - 80)
    if 0 <= a <= 63:
        return i32(a + 64)
    return bytes([1]) + struct.pack(">i", a)


def seed(dtype, rows, cols, ld_y=None, ld_x=None, align=16, a=90, flags=0, y_off=0, x_off=0,
         sms=132, sms2=114, index=0, struct_sel=0, smem=None, smem2=None, tail=b""):
    b = bytes([dtype]) if dtype in (0, 1, 2) else bytes([0xF0]) + i32(dtype)
    b += i64(rows) + i64(cols)
    ldsel = 0
    rest = b""
    if ld_y is not None:
        ldsel |= 1
        rest += i64(ld_y)
    if ld_x is not None:
        ldsel |= 16
        rest += i64(ld_x)
    b += bytes([ldsel]) + rest
    b += i32(align) + arch(a) + bytes([flags])
    b += struct.pack(">HHHH", y_off, x_off, sms, sms2) + i32(index)
    b += struct.pack(">H", struct_sel)
    # two 12-bit shared-memory limits in units of 128 bytes; None: the arch's own limit
    smem_sel = 0 if smem is None else ((smem // 128) << 1) | 1
    if smem2 is not None:
        smem_sel |= (((smem2 // 128) << 1) | 1) << 12
    b += struct.pack(">I", smem_sel)[1:]
    return b + tail


def attention_arch(a):
    """fuzz_attention's arch: the small form holds 75..106 (0..31) and 0..63 (64..127)."""
    if 75 <= a <= 106:
        return i32(a - 75)
    if 0 <= a <= 63:
        return i32(a + 64)
    return bytes([1]) + struct.pack(">i", a)


def attention_seed(dtype=2, batch=2, heads_q=16, heads_kv=4, head_dim=128, causal=0,
                   seqlen_q=1024, seqlen_k=1024, scale=0.0, flags=0, total_q=0, total_k=0,
                   strides=None, offsets=(0, 0, 0, 0), a=90, index=0, struct_size=None,
                   workspace=None):
    """The layout fuzz_attention decodes after a first byte 0xE0 | dtype selector (3: f32).
    strides: {field number 0..11 (q, k, v, o x batch, seq, head): value} replacing the dense
    BSHD default. workspace: the byte after them (0 or None: NULL, w: w - 1 bytes past an
    8-byte aligned address)."""
    sel = {1: 1, 2: 2, 0: 3}[dtype]
    b = bytes([0xE0 | sel])
    b += i32(batch) + i32(heads_q) + i32(heads_kv) + i32(head_dim) + i32(causal)
    b += i64(seqlen_q) + i64(seqlen_k) + struct.pack(">f", scale)
    if struct_size is not None:
        flags |= 0x20
    b += bytes([flags]) + i64(total_q) + i64(total_k)
    strides = strides or {}
    mask = 0
    for i in strides:
        mask |= 1 << i
    b += struct.pack(">H", mask)
    for i in sorted(strides):
        b += i64(strides[i])
    b += struct.pack(">HHHH", *offsets) + attention_arch(a) + i32(index)
    if struct_size is not None:
        b += struct.pack(">H", struct_size)
    if workspace is not None:
        b += bytes([workspace])
    return b


def grouped_matmul_seed(dtype=2, groups=8, total_m=4096, n=4096, k=2048, flags=1,
                        strides=None, offsets=(0, 0, 0, 0, 0), a=90, index=0, struct_size=None,
                        workspace=None):
    """The layout fuzz_grouped_matmul decodes after a first byte 0xD0 | dtype selector (3: f32).
    strides: {field number 0..5 (ldc, lda, b_group_stride, b_k_stride, b_n_stride,
    bias_group_stride): value} replacing the dense default. flags: 1 bias, 2/4/0x80 a/c/b NULL,
    8 offsets NULL, 0x10 offsets misaligned, 0x40 B stored [groups, n, k]. workspace: the
    byte after them (0 or None: NULL, w: w - 1 bytes past an 8-byte aligned address)."""
    sel = {1: 1, 2: 2, 0: 3}[dtype]
    b = bytes([0xD0 | sel])
    b += i32(groups) + i64(total_m) + i64(n) + i64(k)
    if struct_size is not None:
        flags |= 0x20
    b += bytes([flags])
    strides = strides or {}
    mask = 0
    for i in strides:
        mask |= 1 << i
    b += bytes([mask])
    for i in sorted(strides):
        b += i64(strides[i])
    b += struct.pack(">HHHHH", *offsets) + attention_arch(a) + i32(index)
    if struct_size is not None:
        b += struct.pack(">H", struct_size)
    if workspace is not None:
        b += bytes([workspace])
    return b


SEEDS = {
    "f32_small": seed(0, 4, 8),
    "f16_one_row": seed(1, 1, 1000, a=80),
    "bf16_wide": seed(2, 1024, 4096, a=90),
    "f32_vocab": seed(0, 8, 262144, a=90, index=5),
    "f16_staged": seed(1, 4096, 65536, a=90),
    "f16_staged_small_smem": seed(1, 4096, 65536, a=86, smem=99 * 1024),
    "two_devices": seed(0, 3, 3000, a=90, sms=8, sms2=132, smem2=227 * 1024),
    "f16_padded_ld": seed(1, 33, 1000, ld_y=1024, ld_x=1032, align=8, a=80),
    "f32_misaligned": seed(0, 4, 8, align=2, y_off=2),
    "in_place": seed(2, 16, 128, flags=16),
    "null_y": seed(0, 4, 8, flags=4),
    "arch_zero": seed(0, 4, 8, a=0),
    "arch_5": seed(1, 4, 8, a=5),
    "arch_120": seed(0, 4, 8, a=120),
    "arch_100": seed(1, 64, 2048, a=100),
    "bad_dtype": seed(7, 4, 8),
    "negative_rows": seed(0, -1, 8),
    "huge_rows_f16": seed(1, 2**62 - 1, 1, a=90),
    "huge_rows_f32": seed(0, 2**61 - 1, 1, a=80),
    "huge_cols_f16": seed(1, 1, 2**62 - 1, a=90),
    "overflow_ld": seed(0, 2**40, 1, ld_y=2**40, a=90),
    "small_decision": seed(0, 4, 8, flags=1 | 32, struct_sel=17),
    "variant_name": seed(0, 4, 8, index=3, tail=b"softmax_f32_r1_n512_w4_v4"),
    "tuning_line": seed(1, 4, 8, tail=b"sm_90\tsoftmax\tf16\t1024x4096\tsoftmax_f16_r1_n4096_w4_v8"
                        b"\t10.5\tsoftmax_f16_r1_n4096_w8_v8\t11.0\n"),
    "tuning_bad": seed(2, 4, 8, tail=b"sm_9\tsoftmax\tf64\t3x4096\tx"),
    # attention (tile_flash_attention*): valid GQA, causal, varlen, and one break each
    "attn_bf16_gqa": attention_seed(),
    "attn_f16_causal_d40": attention_seed(dtype=1, head_dim=40, causal=1, seqlen_k=77, a=86),
    "attn_varlen_lse": attention_seed(flags=1 | 8, seqlen_q=300, seqlen_k=500, total_q=900,
                                      total_k=1400, a=80, index=5),
    "attn_varlen_one_cu": attention_seed(flags=1 | 0x40, total_q=10, total_k=10),
    "attn_f32": attention_seed(dtype=0),
    "attn_head_dim_12": attention_seed(head_dim=12),
    "attn_heads_3_of_2": attention_seed(heads_q=3, heads_kv=2),
    "attn_o_batch_0": attention_seed(strides={9: 0}),
    "attn_misaligned_k_seq": attention_seed(strides={4: 4 * 128 + 4}, a=90),
    "attn_odd_q": attention_seed(offsets=(1, 0, 0, 0)),
    "attn_lse_odd": attention_seed(flags=8 | 0x10),
    "attn_overflow": attention_seed(strides={0: 2**62}),
    "attn_sm75": attention_seed(a=75),
    "attn_arch_0": attention_seed(a=0),
    "attn_nan_scale": attention_seed(scale=float("nan")),
    "attn_short_struct": attention_seed(struct_size=40),
    "attn_long_struct": attention_seed(struct_size=400),
    "attn_bhsd": attention_seed(strides={1: 128, 2: 1024 * 128, 10: 128, 11: 1024 * 128}),
    "attn_workspace": attention_seed(head_dim=64, workspace=1),
    "attn_workspace_misaligned": attention_seed(workspace=5),
    # grouped matmul (tile_grouped_matmul*): valid MoE shapes, both B layouts, one break each
    "gmm_bf16_moe": grouped_matmul_seed(),
    "gmm_f16_kmajor": grouped_matmul_seed(dtype=1, groups=64, total_m=8192, n=1408, k=2048,
                                          flags=1 | 0x40, a=80),
    "gmm_no_rows": grouped_matmul_seed(total_m=0, flags=0),
    "gmm_one_group_b0": grouped_matmul_seed(groups=1, strides={2: 0}),
    "gmm_groups_b0": grouped_matmul_seed(strides={2: 0}),
    "gmm_interleaved_b": grouped_matmul_seed(groups=4, n=64, k=32, strides={2: 64, 3: 256}),
    "gmm_both_unit_n1": grouped_matmul_seed(n=1, strides={0: 8, 3: 1, 4: 1}, flags=0),
    "gmm_neither_unit": grouped_matmul_seed(strides={4: 2}),
    "gmm_f32": grouped_matmul_seed(dtype=0),
    "gmm_groups_65537": grouped_matmul_seed(groups=65537),
    "gmm_n_2e31": grouped_matmul_seed(n=2**31, strides={0: 2**31}),
    "gmm_ldc_short": grouped_matmul_seed(strides={0: 4095}),
    "gmm_bias_overlap": grouped_matmul_seed(strides={5: 8}),
    "gmm_misaligned_lda": grouped_matmul_seed(strides={1: 2052}),
    "gmm_odd_a": grouped_matmul_seed(offsets=(1, 0, 0, 0, 0)),
    "gmm_offsets_misaligned": grouped_matmul_seed(flags=1 | 0x10),
    "gmm_offsets_null": grouped_matmul_seed(flags=8),
    "gmm_overflow": grouped_matmul_seed(strides={2: 2**62}),
    "gmm_arch_0": grouped_matmul_seed(a=0),
    "gmm_workspace": grouped_matmul_seed(workspace=1),
    "gmm_workspace_misaligned": grouped_matmul_seed(workspace=5),
    "gmm_short_struct": grouped_matmul_seed(struct_size=40),
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"{len(SEEDS)} seeds in {OUT}")
