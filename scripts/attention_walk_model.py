#!/usr/bin/env python3
"""An independent model of attention's walks, for tests/host/test_waves.c's expected times.

    python3 scripts/attention_walk_model.py

Written apart from src/attention.c (walk_span, tile_attention_walk_ratio) from the kernels'
walks (templates/tile_attention.cuh, program_block_at) and launch(): a query block's work is
its query-key pairs over 128 x 128 (key tiles to the causal diagonal; the three-consumer
192-row blocks in warpgroups of 64 rows, each causal one to its own rows' diagonal) plus 2.5 such tiles a 128 rows of block height, plus
2.5 of its own key tiles where it runs as a program of its own; blocks come in groups of heads
that share L2, the last rows' block first (with a counter, a full call's in order), and go to
the program free first (counter, one program a block) or in turns (fixed and paired walks); a
ragged full call on the fixed walk takes each head's blocks in a row, turned by the walk's turn
at the head's first block.
Prints each test case's two predictions (the line's times scaled by the call's busiest program
over the grid shape's, 132 SMs, one program of each variant an SM) and the pick (the runner-up
where predicted over 4% faster for a causal call, 7% for a full one). The library's times are
floats, so its printed values may differ in the last digit.
"""
import heapq

OVERHEAD = 2.5  # BLOCK_OVERHEAD_TILES
OWN_PROGRAM = 2.5  # PAIRED_WALK_SAVES_TILES
SMS = 132
WS3 = dict(bm=192, bn=128, warpgroups=4, persistent=True, handed=False)
WS = dict(bm=128, bn=128, warpgroups=3, persistent=True, handed=True)


def heads_a_group(head_dim, seqlen_k, causal, pairs, elem=2):
    kv_bytes = 2 * max(seqlen_k, 1) * head_dim * elem
    return max(1, min(((16 if causal else 8) << 20) // kv_bytes, pairs))


def tiles_seen(sk, sq, bn, causal, last_row):
    tiles = -(-sk // bn)
    if causal:
        last_key = last_row + sk - sq
        tiles = min(tiles, 0 if last_key < 0 else last_key // bn + 1)
    return tiles


def block_shift(v, sq, causal):
    # a causal fixed-length call's blocks move back on three consumers where the last block
    # would hold one warpgroup's rows (perf-notes A63)
    bm = v["bm"]
    if not causal or v["warpgroups"] - 1 < 3:
        return 0
    return bm - 64 if 0 < sq % bm <= 64 else 0


def block_work(v, sq, sk, causal, j):
    bm, bn = v["bm"], v["bn"]
    consumers = v["warpgroups"] - 1
    quantum = 64 if consumers >= 3 else bm
    m0 = j * bm - block_shift(v, sq, causal)
    end = min(m0 + bm, sq)
    tiles = tiles_seen(sk, sq, bn, causal, end - 1)
    if causal and 64 * (consumers - 1) >= bn:
        # each consumer's 64 rows to their own diagonal (a consumer whose rows see no key, or
        # lie past the sequence where two consumers do not skip them, walks the block's tiles;
        # those before row 0 of a block moved back pass)
        pairs = 0
        for w in range(consumers):
            r0 = m0 + 64 * w
            if r0 < 0 or (r0 >= end and quantum == 64):
                continue
            last = min(r0 + 63, end - 1)
            own = tiles if last + sk - sq < 0 else tiles_seen(sk, sq, bn, causal, last)
            pairs += 64 * own * bn
    else:
        pairs = -(-(end - m0) // quantum) * quantum * tiles * bn
    return (pairs / 128.0 + OVERHEAD * bm) / 128.0


def walks_in_pairs(v, programs, causal, sq, sk, units):
    if not causal or not v["persistent"] or units < 1:
        return False
    rounds = -(-units // programs)
    tiles = max(1.0, (sk - 0.5 * sq) / v["bn"])
    return (tiles + OWN_PROGRAM) / tiles > rounds * programs / units


def busiest(v, pairs, sq, sk, causal, counter, programs=SMS, head_dim=64):
    bm, bn = v["bm"], v["bn"]
    m_blocks = -(-sq // bm)
    units = (m_blocks + 1) // 2
    counted = counter and v["handed"]
    paired = not counted and walks_in_pairs(v, programs, causal, sq, sk, pairs * units)
    one_each = not v["persistent"] or (causal and not paired and not counted)
    kinds = units if paired else m_blocks
    work = []
    for k in range(kinds):
        j = k if counted and not causal else m_blocks - 1 - k
        w = block_work(v, sq, sk, causal, j) + (OWN_PROGRAM * bm * bn / 16384 if one_each else 0)
        if paired and k != j:
            w += block_work(v, sq, sk, causal, k)
        work.append(w)
    if v["persistent"] and not causal and not counted and sq % bm:
        # a ragged full call on the fixed walk: each head's blocks in a row, turned by the
        # walk's turn at the head's first block (program_block_at's blocks_fastest 2)
        programs = min(programs, pairs * m_blocks)
        load = [0.0] * programs
        for pair in range(pairs):
            turn = pair * m_blocks // programs % m_blocks
            for j in range(m_blocks):
                load[(pair * m_blocks + j) % programs] += work[(j + turn) % m_blocks]
        return max(load)
    group = heads_a_group(head_dim, sk, causal, pairs)
    order = []
    for first in range(0, pairs, group):
        for w in work:
            order += [w] * min(group, pairs - first)
    programs = min(programs, len(order))
    if counted or one_each:
        load = [0.0] * programs
        for w in order:
            heapq.heappush(load, heapq.heappop(load) + w)
        return max(load)
    load = [0.0] * programs
    for i, w in enumerate(order):
        load[i % programs] += w
    return max(load)


def predict(times, grid, pairs, sq, sk, causal, counter=True):
    (w3_us, ws_us), (b, h, s) = times, grid
    w3 = w3_us * busiest(WS3, pairs, sq, sk, causal, counter) / busiest(WS3, b * h, s, s, False, True)
    ws = ws_us * busiest(WS, pairs, sq, sk, causal, counter) / busiest(WS, b * h, s, s, False, True)
    pick = "WS" if ws < (0.96 if causal else 0.93) * w3 else "WS3"
    return w3, ws, pick


LINE_262144 = ((318.60, 341.74), (4, 32, 2048))
LINE_65536 = ((83.93, 86.39), (2, 16, 2048))
LINE_1048576 = ((100.00, 97.50), (4, 32, 8192))
CASES = [
    ("grid shape, full", LINE_262144, 128, 2048, 2048, False, True),
    ("1x16x2048 full", LINE_65536, 16, 2048, 2048, False, True),
    ("1x16x2048 causal", LINE_65536, 16, 2048, 2048, True, True),
    ("16x16x1024 causal", LINE_262144, 256, 1024, 1024, True, True),
    ("16x16x1024 causal, no workspace", LINE_262144, 256, 1024, 1024, True, False),
    ("8x16x2048 causal", LINE_262144, 128, 2048, 2048, True, True),
    ("4x16x4096 causal", LINE_262144, 64, 4096, 4096, True, True),
    ("4x16x4096 causal, no workspace", LINE_262144, 64, 4096, 4096, True, False),
    ("1x16x16384 causal", LINE_262144, 16, 16384, 16384, True, True),
    ("256 heads, 1024 queries, 8192 keys, causal", LINE_262144, 256, 1024, 8192, True, True),
    ("16x16x4096 full", LINE_1048576, 256, 4096, 4096, False, True),
]

if __name__ == "__main__":
    for name, line, pairs, sq, sk, causal, counter in CASES:
        w3, ws, pick = predict(line[0], line[1], pairs, sq, sk, causal, counter)
        print(f"{name:45s} WS3 {w3:9.3f} us  WS {ws:9.3f} us  -> {pick}")
