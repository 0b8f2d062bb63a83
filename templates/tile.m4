m4_divert(-1)
# The tile language: m4 macros that kernels/*.tile are written in (docs/tile-language.md).
# Run as `m4 -P -s -DNAME=VALUE... tile.m4 kernel.tile`: -P prefixes m4's builtins with m4_,
# -s emits #line so nvcc's errors point into the .tile file. The generator passes the grid point
# (OP, DTYPE, KERNEL, VARIANT, every grid param, THREADS, ARCH_MIN, ARCH_MAX, SMEM) as -D
# definitions.
#
# Quotes are <| and |>, which C never writes. `#` comments stay on while this file is read (so
# macro names in these comments are not expanded) and go off at its end, so that #pragma and
# #include in a .tile pass through.
m4_changequote(<|, |>)

# ---------------------------------------------------------------------------- diagnostics
# TILE_ERROR(message): print "file:line: message" and fail the expansion.
m4_define(<|TILE_ERROR|>, <|m4_errprint(m4___file__:m4___line__: <|$1|>
)m4_m4exit(1)|>)
# TILE_NEED(NAME): NAME must come from the grid point.
m4_define(<|TILE_NEED|>, <|m4_ifdef(<|$1|>, , <|TILE_ERROR(<|grid point defines no $1|>)|>)|>)
m4_define(<|TILE_ARGS|>, <|m4_ifelse(<|$2|>, , <|TILE_ERROR(<|$1 needs $3 arguments|>)|>)|>)

# ---------------------------------------------------------------------------- kernels
# TILE_KERNEL(name, (params)) ... TILE_END: one kernel of the source. Only the one the grid
# point's KERNEL names is emitted; the others are discarded. Compiled for an architecture
# outside the variant's ARCH_MIN..ARCH_MAX, the body is left out (the kernel traps): the loader
# never resolves it there, so the fatbin need not carry sm_80 code of Hopper-only variants.
m4_define(<|TILE_KERNEL|>, <|TILE_NEED(<|KERNEL|>)TILE_NEED(<|VARIANT|>)TILE_NEED(<|THREADS|>)m4_dnl
TILE_NEED(<|ARCH_MIN|>)TILE_NEED(<|ARCH_MAX|>)m4_dnl
m4_ifelse(<|$1|>, KERNEL, <|m4_define(<|TILE_IN_KERNEL|>, 1)m4_dnl
extern "C" __global__ void __launch_bounds__(THREADS<||>TILE_MIN_PROGRAMS) VARIANT $2 {
TILE_ARCH_GUARD
    tile::grid_dependency_sync();
    using T = tile::DTYPE;|>, <|m4_define(<|TILE_IN_KERNEL|>, 0)m4_divert(-1)|>)|>)
m4_define(<|TILE_END|>, <|m4_ifelse(TILE_IN_KERNEL, 1, <|TILE_ARCH_GUARD_END}|>, <|m4_divert(0)|>)|>)
# TILE_ARCH_GUARD / TILE_ARCH_GUARD_END: an #if on __CUDA_ARCH__ around the body: code only
# for images that can run on an architecture the variant is registered for. Below, by major
# version (sm_80 code runs on sm_86 and sm_89, so arch_min 86 still gets it); above, past
# ARCH_MAX's last minor (no ARCH_MAX: no upper bound).
m4_define(<|TILE_ARCH_GUARD|>, <|m4_dnl
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < m4_eval(ARCH_MIN / 10 * 100)<||>m4_ifelse(ARCH_MAX, 0, , <| || __CUDA_ARCH__ > ARCH_MAX<||>9|>))
    __trap(); // not registered for this architecture
#else|>)
m4_define(<|TILE_ARCH_GUARD_END|>, <|#endif
|>)

# TILE_MIN_PROGRAMS: where the grid point sets MAXREG (a register cap per thread, a tuning knob),
# the programs an SM must hold at once, which makes nvcc keep a thread within MAXREG registers.
m4_define(<|TILE_MIN_PROGRAMS|>, <|m4_ifdef(<|MAXREG|>, <|, m4_eval(65536 / (THREADS * MAXREG))|>)|>)

# TILE_ROW_LAYOUT(L): L is the [ROWS, BLOCK_N] row tile of this grid point (CLUSTER programs
# split a row when the grid sets CLUSTER).
m4_define(<|TILE_ROW_LAYOUT|>, <|TILE_NEED(<|ROWS|>)TILE_NEED(<|BLOCK_N|>)TILE_NEED(<|VEC|>)m4_dnl
using $1 = tile::row_layout<ROWS, BLOCK_N, THREADS, VEC, m4_ifdef(<|CLUSTER|>, CLUSTER, 1)>|>)

# TILE_PROGRAM_ROWS(row, L): row = the rows this program owns (one per row of the tile).
m4_define(<|TILE_PROGRAM_ROWS|>, <|TILE_ARGS(<|TILE_PROGRAM_ROWS|>, <|$2|>, 2)m4_dnl
const int64_t $1 = tile::program_row<$2>()|>)
# TILE_PROGRAM_COLUMN(col0, L): first column of this program's slice of the row.
m4_define(<|TILE_PROGRAM_COLUMN|>, <|const int64_t $1 = tile::program_column<$2>()|>)

# TILE_PROGRAM_TILE(row, col0, L, cols): the rows and the first column of this program's tile
# where programs cover rows x column tiles (a grid point with `set column_tile = BLOCK_N`).
m4_define(<|TILE_PROGRAM_TILE|>, <|TILE_ARGS(<|TILE_PROGRAM_TILE|>, <|$4|>, 4)m4_dnl
const int64_t $1 = tile::tile_program_row<$3>($4);
    const int64_t $2 = tile::tile_program_column<$3>($4)|>)

# TILE_ROW_WIDTH(cols, L, n): cols = n, the width of the rows; in a lean variant (the grid sets
# `lean`: rows of exactly one tile, no optional inputs) the tile's width BLOCK_N instead, a
# constant, so the code for partial tiles drops out. TILE_LEAN: 1 in a lean variant, else 0.
m4_define(<|TILE_ROW_WIDTH|>, <|TILE_ARGS(<|TILE_ROW_WIDTH|>, <|$3|>, 3)m4_dnl
const int64_t $1 = m4_ifelse(LEAN, 1, <|TILE_NEED(<|BLOCK_N|>)(int64_t)BLOCK_N|>, <|($3)|>)|>)
m4_define(<|TILE_LEAN|>, <|m4_ifelse(LEAN, 1, 1, 0)|>)

# TILE_FOR_ROW_BLOCKS(row, L, rows) ... TILE_END_FOR: a persistent program walks its row blocks
# (strided by the grid); `row` advances by TILE_ROW_STRIDE(L) rows each time.
m4_define(<|TILE_FOR_ROW_BLOCKS|>, <|TILE_ARGS(<|TILE_FOR_ROW_BLOCKS|>, <|$3|>, 3)m4_dnl
for (int64_t $1 = tile::program_row<$2>(); tile::row_block_live<$2>($1, $3); $1 += tile::row_stride<$2>()) {|>)
m4_define(<|TILE_ROW_STRIDE|>, <|tile::row_stride<$1>()|>)

# ---------------------------------------------------------------------------- memory
# TILE_LOAD(t, L, ptr, row, rows, col0, cols, ld, other): t = ptr[row, col0 + [0, BLOCK_N)] as
# fp32, `other` where row >= rows or the column >= cols. 16-byte accesses where VEC allows.
m4_define(<|TILE_LOAD|>, <|TILE_ARGS(<|TILE_LOAD|>, <|$9|>, 9)m4_dnl
tile::frag<$2> $1; tile::load<$2, tile::hint::read_only>($1, (const T *)($3), $4, $5, $6, $7, $8, $9)|>)
# TILE_LOAD_LAST(...): as TILE_LOAD for the last read of the data (evict-first, unless the grid
# point sets EVICT_FIRST to 0, or L2_KEEP to 1 for the read-only path with an L2 evict-last
# policy: tuning knobs).
m4_define(<|TILE_EVICT_FIRST|>, <|m4_ifelse(m4_ifdef(<|L2_KEEP|>, <|L2_KEEP|>, 0), 1, <|tile::hint::keep_l2|>, <|m4_ifdef(<|EVICT_FIRST|>, <|m4_ifelse(EVICT_FIRST, 0, tile::hint::read_only, tile::hint::evict_first)|>, tile::hint::evict_first)|>)|>)
m4_define(<|TILE_LOAD_LAST|>, <|TILE_ARGS(<|TILE_LOAD_LAST|>, <|$9|>, 9)m4_dnl
tile::frag<$2> $1; tile::load<$2, TILE_EVICT_FIRST>($1, (const T *)($3), $4, $5, $6, $7, $8, $9)|>)
# TILE_LOAD_INTO(t, L, ptr, row, rows, col0, cols, ld, other): as TILE_LOAD into an existing tile
# t, always evict-first (a prefetch into a second register buffer; EVICT_FIRST and L2_KEEP do
# not apply).
m4_define(<|TILE_LOAD_INTO|>, <|TILE_ARGS(<|TILE_LOAD_INTO|>, <|$9|>, 9)m4_dnl
tile::load<$2, tile::hint::evict_first>($1, (const T *)($3), $4, $5, $6, $7, $8, $9)|>)
# TILE_LOAD_WITH(t, u, L, ptr_t, ld_t, ptr_u, ld_u, row, rows, col0, cols, other, again|last):
# declares tiles t and u; loads t from ptr_t (as TILE_LOAD for `again`, data read again later;
# as TILE_LOAD_LAST for `last`) and, where ptr_u is not NULL, u from ptr_u (as TILE_LOAD_LAST),
# the same rows and columns, with both tiles' reads in flight at once.
m4_define(<|TILE_LOAD_WITH|>, <|TILE_ARGS(<|TILE_LOAD_WITH|>, <|$13|>, 13)m4_dnl
tile::frag<$3> $1, $2; tile::load_with<$3, m4_ifelse($13, again, tile::hint::read_only, $13, last, TILE_EVICT_FIRST, <|TILE_ERROR(<|TILE_LOAD_WITH: again or last, not $13|>)|>), TILE_EVICT_FIRST>($1, (const T *)($4), $5, $2, (const T *)($6), $7, $8, $9, $10, $11, $12)|>)
# TILE_COPY(dst, src): dst = a copy of tile src (registers; frees src for the next load).
m4_define(<|TILE_COPY|>, <|auto $1 = $2|>)
# TILE_STORE(ptr, t, row, rows, col0, cols, ld): ptr[row, col0 + c] = t[c], in bounds only.
m4_define(<|TILE_STORE|>, <|TILE_ARGS(<|TILE_STORE|>, <|$7|>, 7)m4_dnl
tile::store((T *)($1), $2, $3, $4, $5, $6, $7)|>)
# TILE_FOR_COLUMN_TILES(col0, L, cols) ... TILE_END_FOR: col0 walks this program's column
# tiles of the row (a cluster interleaves its programs' tiles).
m4_define(<|TILE_FOR_COLUMN_TILES|>, <|TILE_ARGS(<|TILE_FOR_COLUMN_TILES|>, <|$3|>, 3)m4_dnl
for (int64_t $1 = tile::program_column<$2>(); $1 < ($3); $1 += tile::column_step<$2>()) {|>)
m4_define(<|TILE_END_FOR|>, <|}|>)
# TILE_STAGE(s): s = this program's shared-memory stage for its slice of the row (storage dtype;
# the grid's `set smem` sizes it).
m4_define(<|TILE_STAGE|>, <|T *const $1 = tile::stage_buffer<T>()|>)
# TILE_STAGE_COPY(s, L, ptr, row, rows, col0, cols, ld): start copying tile col0 of ptr's row
# into s (cp.async, 16-byte vectors); TILE_STAGE_WAIT: wait for this thread's copies.
m4_define(<|TILE_STAGE_COPY|>, <|TILE_ARGS(<|TILE_STAGE_COPY|>, <|$8|>, 8)m4_dnl
tile::stage_copy<$2>($1, (const T *)($3), $4, $5, $6, $7, $8)|>)
m4_define(<|TILE_STAGE_WAIT|>, <|tile::stage_wait()|>)
# TILE_STAGE_LOAD(t, L, s, ptr, row, rows, col0, cols, ld, other): t = tile col0 read back from
# the stage (ptr for the row's partial last vector), fp32, `other` outside the row.
m4_define(<|TILE_STAGE_LOAD|>, <|TILE_ARGS(<|TILE_STAGE_LOAD|>, <|$10|>, 10)m4_dnl
tile::frag<$2> $1; tile::stage_load<$2>($1, $3, (const T *)($4), $5, $6, $7, $8, $9, $10)|>)
# TILE_STAGE_STORE(s, L, t, row, rows, col0, cols): tile t (fp32) back into stage s as storage
# values, where tile col0 was staged, so that TILE_STAGE_LOAD reads t afterwards (its whole
# vectors; the row's partial last vector is read from the pointer TILE_STAGE_LOAD is given).
m4_define(<|TILE_STAGE_STORE|>, <|TILE_ARGS(<|TILE_STAGE_STORE|>, <|$7|>, 7)m4_dnl
tile::stage_store<$2>($1, $3, $4, $5, $6, $7)|>)

# TILE_RING(r, L, ptr, rows, cols, ld): r = a ring of STAGES (the grid point's) row buffers in
# shared memory, filled by Hopper bulk copies; the program's first STAGES rows of ptr start
# copying. Collective. For persistent programs of one row (ROWS 1) walking TILE_FOR_ROW_BLOCKS.
# STAGES is checked only in the kernel the grid point emits (m4 still expands the discarded
# kernels, whose points need not define it).
m4_define(<|TILE_RING|>, <|TILE_ARGS(<|TILE_RING|>, <|$6|>, 6)m4_dnl
m4_ifelse(TILE_IN_KERNEL, 1, <|TILE_NEED(<|STAGES|>)|>)m4_dnl
tile::ring<$2, T, STAGES> $1 = tile::ring_start<$2, T, STAGES>((const T *)($3), $4, $5, $6)|>)
# TILE_RING_LOAD(t, L, r, row, other): t = row `row` (the loop's current row) as fp32 from ring
# r once its copy has landed, `other` beyond cols; its buffer then starts copying the row
# STAGES rows ahead. Collective.
m4_define(<|TILE_RING_LOAD|>, <|TILE_ARGS(<|TILE_RING_LOAD|>, <|$5|>, 5)m4_dnl
tile::frag<$2> $1; tile::ring_load<$2>($1, $3, $4, $5)|>)

# TILE_STREAM(s, L, ptr, rows, cols, ld): s = the program's rows of ptr as a stream of column
# tiles through a ring of STAGE_N / BLOCK_N (the grid point's) tile slots in shared memory,
# filled by Hopper bulk copies; the first slots' tiles start copying. Collective. For
# persistent programs of one row (ROWS 1) walking TILE_FOR_ROW_BLOCKS, rows of at most STAGE_N
# columns, every tile of a row released once, in order (TILE_STREAM_RELEASE).
m4_define(<|TILE_STREAM|>, <|TILE_ARGS(<|TILE_STREAM|>, <|$6|>, 6)m4_dnl
m4_ifelse(TILE_IN_KERNEL, 1, <|TILE_NEED(<|STAGE_N|>)|>)m4_dnl
static_assert(STAGE_N % BLOCK_N == 0, "whole tile slots: a row of STAGE_N columns fits the ring"); m4_dnl
auto $1 = tile::stream_start<$2, T, STAGE_N / BLOCK_N>((const T *)($3), $4, $5, $6)|>)
# TILE_STREAM_LOAD(t, L, s, row, col0, other): t = tile col0 of the loop's current row `row` as
# fp32 from stream s once its copy has landed, `other` beyond cols; read again as often as
# needed until released. Collective.
m4_define(<|TILE_STREAM_LOAD|>, <|TILE_ARGS(<|TILE_STREAM_LOAD|>, <|$6|>, 6)m4_dnl
tile::frag<$2> $1; tile::stream_load<$2>($1, $3, $4, $5, $6)|>)
# TILE_STREAM_RELEASE(s, col0): tile col0 of the current row is read for the last time: its
# slot starts copying the stream's next tile; after the row's last tile, s moves to the next
# row. Collective (a barrier).
m4_define(<|TILE_STREAM_RELEASE|>, <|TILE_ARGS(<|TILE_STREAM_RELEASE|>, <|$2|>, 2)m4_dnl
tile::stream_release($1, $2)|>)

# TILE_LOAD_VECTOR(t, L, ptr, col0, cols, other): t = the [BLOCK_N] vector ptr[col0 + c]
# (a weight or bias of `cols` elements) broadcast over the tile's rows, `other` beyond cols.
m4_define(<|TILE_LOAD_VECTOR|>, <|TILE_ARGS(<|TILE_LOAD_VECTOR|>, <|$6|>, 6)m4_dnl
tile::frag<$2> $1; tile::load_vector<$2>($1, (const T *)($3), $4, $5, $6)|>)
# TILE_STORE_ROW(ptr, L, row, rows, value): ptr[row] = value (fp32 per-row results, such as
# row statistics), once per row.
m4_define(<|TILE_STORE_ROW|>, <|TILE_ARGS(<|TILE_STORE_ROW|>, <|$5|>, 5)m4_dnl
tile::store_row<$2>($1, $3, $4, $5)|>)
# TILE_ROUND(t): t = t rounded to the storage dtype (what storing it writes), kept in fp32.
m4_define(<|TILE_ROUND|>, <|tile::round_to<T>($1)|>)

# ---------------------------------------------------------------------------- maps
# TILE_APPLY(t, expr): t = expr applied in place to every element v of t (no new registers).
m4_define(<|TILE_APPLY|>, <|TILE_ARGS(<|TILE_APPLY|>, <|$2|>, 2)m4_dnl
tile::apply($1, [&](float v) { return $2; })|>)

# TILE_APPLY_WITH(t, u, expr): t = expr in place, elementwise, reading v (t's element) and u
# (the same element of tile u).
m4_define(<|TILE_APPLY_WITH|>, <|TILE_ARGS(<|TILE_APPLY_WITH|>, <|$3|>, 3)m4_dnl
tile::apply_with($1, $2, [&](float v, float u) { return $3; })|>)

# ---------------------------------------------------------------------------- dropout
# TILE_DROPOUT(t, L, keep, row, col0, seed, offset, threshold, scale): dropout in place over
# tile col0 of `row`: element (row, col) is kept iff its Philox4x32-10 word for (seed, offset,
# row, col) is >= threshold, kept ones scaled by scale, dropped ones 0; keep = which were kept.
m4_define(<|TILE_DROPOUT|>, <|TILE_ARGS(<|TILE_DROPOUT|>, <|$9|>, 9)m4_dnl
tile::keep_bits<$2> $3; tile::dropout<$2>($1, $3, $4, $5, $6, $7, $8, $9)|>)
# TILE_DROPOUT_DRAW(keep, L, row, col0, seed, offset, threshold): keep = which elements of tile
# col0 of `row` dropout keeps: element (row, col) iff its Philox4x32-10 word for (seed, offset,
# row, col) is >= threshold: TILE_DROPOUT's draws alone. No tile data: a kernel may draw before
# it loads the tile.
m4_define(<|TILE_DROPOUT_DRAW|>, <|TILE_ARGS(<|TILE_DROPOUT_DRAW|>, <|$7|>, 7)m4_dnl
tile::dropout_draw<$2>($1, $3, $4, $5, $6, $7)|>)
# TILE_KEEP_BITS(keep, L): declares keep, dropout's keep bits for one tile of a thread.
m4_define(<|TILE_KEEP_BITS|>, <|tile::keep_bits<$2> $1 = {0}|>)
# TILE_DROPOUT_APPLY(t, keep, scale): dropout in place over t by keep (TILE_DROPOUT_DRAW): kept
# elements scaled by scale, dropped ones 0.
m4_define(<|TILE_DROPOUT_APPLY|>, <|TILE_ARGS(<|TILE_DROPOUT_APPLY|>, <|$3|>, 3)m4_dnl
tile::dropout_apply($1, $2, $3)|>)
# TILE_STORE_KEEP(ptr, keep, L, row, rows, col0, cols, ld): ptr[row * ld + col] = 1 where
# dropout kept the element, 0 where it dropped it (bytes), in bounds only.
m4_define(<|TILE_STORE_KEEP|>, <|TILE_ARGS(<|TILE_STORE_KEEP|>, <|$8|>, 8)m4_dnl
tile::store_keep<$3>($1, $2, $4, $5, $6, $7, $8)|>)

# ---------------------------------------------------------------------------- reductions
# TILE_ROW_MAX(m, L, t) / TILE_ROW_SUM(s, L, t): m = max over the row of t, s = its sum; every
# element of the row gets the same value. Collective: the whole program calls it.
m4_define(<|TILE_ROW_MAX|>, <|TILE_ARGS(<|TILE_ROW_MAX|>, <|$3|>, 3)m4_dnl
const float $1 = tile::row_reduce<$2>(tile::thread_reduce($3, tile::op_max{}), tile::op_max{})|>)
m4_define(<|TILE_ROW_SUM|>, <|TILE_ARGS(<|TILE_ROW_SUM|>, <|$3|>, 3)m4_dnl
const float $1 = tile::row_reduce<$2>(tile::thread_reduce($3, tile::op_sum{}), tile::op_sum{})|>)
# TILE_ROW_SUM_OF(s, L, t, expr): s = sum over each row of expr applied to every element v of
# t (expr reads `v`), without keeping expr's values as a second tile. Collective.
m4_define(<|TILE_ROW_SUM_OF|>, <|TILE_ARGS(<|TILE_ROW_SUM_OF|>, <|$4|>, 4)m4_dnl
const float $1 = tile::row_reduce<$2>(tile::thread_reduce($3, tile::op_sum{}, [&](float v) { return $4; }), tile::op_sum{})|>)
# TILE_ROW_SQ_DEV(r, L, t, center, col0, cols): r = the row's sum of (t - center)^2 over the
# elements of tile col0 below cols (with the row mean as center: n * variance). Collective.
m4_define(<|TILE_ROW_SQ_DEV|>, <|TILE_ARGS(<|TILE_ROW_SQ_DEV|>, <|$6|>, 6)m4_dnl
const float $1 = tile::row_reduce<$2>(tile::sq_dev_sum<$2>($3, $4, $5, $6), tile::op_sum{})|>)
# TILE_ONLINE(acc): running softmax statistics (max, sum of exp), empty.
m4_define(<|TILE_ONLINE|>, <|tile::online $1 = {-__builtin_huge_valf(), 0.0f}|>)
# TILE_ONLINE_UPDATE(acc, t): fold tile t into acc.
m4_define(<|TILE_ONLINE_UPDATE|>, <|$1 = tile::online_update($1, $2)|>)
# TILE_ROW_ONLINE(m, s, L, acc): combine acc over the row: m = row max, s = sum exp(x - m).
m4_define(<|TILE_ROW_ONLINE|>, <|TILE_ARGS(<|TILE_ROW_ONLINE|>, <|$4|>, 4)m4_dnl
const tile::online $1_$2 = tile::row_reduce<$3>($4, tile::op_online{}); m4_dnl
const float $1 = $1_$2.m, $2 = $1_$2.s|>)

# TILE_MOMENTS(acc): running row statistics (count, mean, sum of squared deviations), empty.
# TILE_MOMENTS_UPDATE(acc, L, t, col0, cols): fold the elements of tile col0 below cols in.
# TILE_ROW_MOMENTS(mean, var, L, acc): combine acc over the row: its mean and (biased)
# variance. Collective, as TILE_ROW_SUM.
m4_define(<|TILE_MOMENTS|>, <|tile::moments $1 = {0.0f, 0.0f, 0.0f}|>)
m4_define(<|TILE_MOMENTS_UPDATE|>, <|TILE_ARGS(<|TILE_MOMENTS_UPDATE|>, <|$5|>, 5)m4_dnl
$1 = tile::moments_update<$2, true>($1, $3, $4, $5)|>)
# TILE_SQUARES_UPDATE(acc, L, t, col0, cols): fold in the sum of squares only (mean taken as 0:
# TILE_ROW_MOMENTS then gives var = mean(x^2)), one FFMA an element.
m4_define(<|TILE_SQUARES_UPDATE|>, <|TILE_ARGS(<|TILE_SQUARES_UPDATE|>, <|$5|>, 5)m4_dnl
$1 = tile::moments_update<$2, false>($1, $3, $4, $5)|>)
m4_define(<|TILE_ROW_MOMENTS|>, <|TILE_ARGS(<|TILE_ROW_MOMENTS|>, <|$4|>, 4)m4_dnl
const tile::moments $1_$2 = tile::row_reduce<$3>($4, tile::op_moments{}); m4_dnl
const float $1 = $1_$2.mean, $2 = $1_$2.m2 / $1_$2.n|>)

# ---------------------------------------------------------------------------- math
# exp and log as the tile language computes them (SFU approximations, fp32).
# TILE_EXP_SUB(a, b) is exp(a - b) in one FFMA and one MUFU.EX2 (prefer it inside maps).
m4_define(<|TILE_EXP|>, <|tile::exp($1)|>)
m4_define(<|TILE_EXP_SUB|>, <|TILE_ARGS(<|TILE_EXP_SUB|>, <|$2|>, 2)tile::exp_sub($1, $2)|>)
m4_define(<|TILE_LOG|>, <|tile::log($1)|>)
# TILE_RSQRT(x): 1 / sqrt(x) (SFU approximation, fp32).
m4_define(<|TILE_RSQRT|>, <|rsqrtf($1)|>)

# ---------------------------------------------------------------------------- attention
# Tensor-core tiles for attention (templates/tile_attention.cuh). A program owns a BLOCK_M-row
# query block of one (batch, head); key and value tiles of BLOCK_N rows pass through shared
# memory; scores and the output accumulator stay in registers. The grid point gives HEAD_DIM,
# BLOCK_M, BLOCK_N and WARPS; each warp owns BLOCK_M / WARPS query rows (16 or 32).
# TILE_ATTENTION_LAYOUT(L): L is the attention tiling of this grid point.
m4_define(<|TILE_ATTENTION_LAYOUT|>, <|TILE_NEED(<|HEAD_DIM|>)TILE_NEED(<|BLOCK_M|>)TILE_NEED(<|BLOCK_N|>)TILE_NEED(<|WARPS|>)m4_dnl
using $1 = tile::attn::layout<HEAD_DIM, BLOCK_M, BLOCK_N, WARPS, BLOCK_M / WARPS>; m4_dnl
static_assert(sizeof(T) * $1::SMEM_ELEMENTS <= SMEM, "the grid's smem holds the Q, K and V tiles"); m4_dnl
static_assert($1::PROGRAM_THREADS == THREADS, "the grid's threads are the layout's (each copies its chunks: for_thread_chunks)")|>)
# TILE_ATTENTION_PROGRAM(blk, L, a): blk = this program's (batch, head, query block), its
# sequence extents and the key tiles it visits, [0, blk.n_end); blk.empty: nothing to do.
m4_define(<|TILE_ATTENTION_PROGRAM|>, <|TILE_ARGS(<|TILE_ATTENTION_PROGRAM|>, <|$3|>, 3)m4_dnl
const auto $1 = tile::attn::program_block<$2>($3)|>)
# TILE_ATTENTION_TILES(tiles, L): tiles.q, tiles.k, tiles.v = the shared-memory Q, K and V
# tiles (the grid's `set smem` sizes them).
m4_define(<|TILE_ATTENTION_TILES|>, <|const auto $1 = tile::attn::shared_tiles<$2, T>()|>)
# TILE_COPY_Q(tiles, L, a, blk), TILE_COPY_K(tiles, L, a, blk, n), TILE_COPY_V(...): start the
# asynchronous copy of the query block, or of key/value tile n, into tiles (zeros outside the
# sequence and past head_dim). TILE_COPY_COMMIT closes a group of started copies;
# TILE_COPY_WAIT waits for all of them and for every thread of the program (a barrier).
m4_define(<|TILE_COPY_Q|>, <|TILE_ARGS(<|TILE_COPY_Q|>, <|$4|>, 4)tile::attn::copy_q<$2, T>($1, $3, $4)|>)
m4_define(<|TILE_COPY_K|>, <|TILE_ARGS(<|TILE_COPY_K|>, <|$5|>, 5)tile::attn::copy_k<$2, T>($1, $3, $4, $5)|>)
m4_define(<|TILE_COPY_V|>, <|TILE_ARGS(<|TILE_COPY_V|>, <|$5|>, 5)tile::attn::copy_v<$2, T>($1, $3, $4, $5)|>)
m4_define(<|TILE_COPY_COMMIT|>, <|tile::copy_commit()|>)
m4_define(<|TILE_COPY_WAIT|>, <|tile::attn::copy_wait_all()|>)
# TILE_Q_FRAGMENTS(q, L, tiles): q = the program's query rows as matrix-product operands
# (registers for HEAD_DIM <= 128; beyond that they are read from tiles.q at each product).
m4_define(<|TILE_Q_FRAGMENTS|>, <|TILE_ARGS(<|TILE_Q_FRAGMENTS|>, <|$3|>, 3)m4_dnl
tile::attn::q_frags<$2> $1; tile::attn::load_q_frags<$2>($1, $3.q)|>)
# TILE_ATTENTION_STATE(acc, L): acc = output accumulator [BLOCK_M, HEAD_DIM] = 0 and the
# running softmax statistics of its rows (max -inf, sum 0).
m4_define(<|TILE_ATTENTION_STATE|>, <|tile::attn::state<$2> $1; tile::attn::state_init<$2>($1)|>)
# TILE_FOR_KEY_TILES(n, blk) ... TILE_END_FOR: n walks the key tiles the block sees, last
# first (the tiles that need masks come first). TILE_FOR_KEY_TILES_DOWN_TO(n, blk, lo): the same,
# stopping after key tile lo.
m4_define(<|TILE_FOR_KEY_TILES_DOWN_TO|>, <|TILE_ARGS(<|TILE_FOR_KEY_TILES_DOWN_TO|>, <|$3|>, 3)m4_dnl
for (int32_t $1 = $2.n_end - 1; $1 >= $3; $1--) {|>)
m4_define(<|TILE_FOR_KEY_TILES|>, <|TILE_FOR_KEY_TILES_DOWN_TO($1, $2, 0)|>)
# TILE_SCORES(s, L, q, tiles): s = q K^T [BLOCK_M, BLOCK_N] for the key tile in tiles.k
# (tensor cores, fp32 accumulation).
m4_define(<|TILE_SCORES|>, <|TILE_ARGS(<|TILE_SCORES|>, <|$4|>, 4)m4_dnl
tile::attn::scores<$2> $1; tile::attn::qk<$2>($1, $3, $4.q, $4.k)|>)
# TILE_KEY_TILE_MASKED(L, blk, n, causal): whether key tile n has keys past the sequence or,
# causal, above the diagonal. TILE_MASK_SCORES(s, blk, n, causal): those scores become -inf.
m4_define(<|TILE_KEY_TILE_MASKED|>, <|tile::attn::tile_needs_mask<$1>($2, $3, $4)|>)
m4_define(<|TILE_MASK_SCORES|>, <|TILE_ARGS(<|TILE_MASK_SCORES|>, <|$4|>, 4)tile::attn::mask($1, $2, $3, $4)|>)
# TILE_ONLINE_SOFTMAX(acc, s, scale_log2): fold the scores into acc's running max and sum,
# rescale acc's output, and turn s into p = exp(scale * (s - max)) in place.
m4_define(<|TILE_ONLINE_SOFTMAX|>, <|TILE_ARGS(<|TILE_ONLINE_SOFTMAX|>, <|$3|>, 3)tile::attn::online_softmax($1, $2, $3)|>)
# TILE_ACCUMULATE_PV(acc, p, tiles): acc's output += p V for the value tile in tiles.v (p
# rounded to the storage type, fp32 accumulation).
m4_define(<|TILE_ACCUMULATE_PV|>, <|TILE_ARGS(<|TILE_ACCUMULATE_PV|>, <|$3|>, 3)tile::attn::pv($1, $2, $3.v)|>)
# TILE_ATTENTION_STORE(a, blk, acc, tiles): O = acc's output / its row sums, written for the
# block's rows in the sequence (through tiles.q); the rows' log-sum-exp where a.lse is given.
m4_define(<|TILE_ATTENTION_STORE|>, <|TILE_ARGS(<|TILE_ATTENTION_STORE|>, <|$4|>, 4)tile::attn::store($1, $2, $3, $4.q)|>)

# Hopper (sm_90a) attention over warpgroup products (wgmma): WARPS / 4 warpgroups of 64 query
# rows, Q, K and V in swizzled shared-memory tiles, STAGES buffers each of K and V.
# TILE_ATTENTION_WG_LAYOUT(L): L is the warpgroup tiling of this grid point.
m4_define(<|TILE_ATTENTION_WG_LAYOUT|>, <|TILE_NEED(<|HEAD_DIM|>)TILE_NEED(<|BLOCK_N|>)TILE_NEED(<|WARPS|>)m4_dnl
using $1 = tile::attn::wg_layout<HEAD_DIM, BLOCK_N, WARPS / 4, m4_ifdef(<|STAGES|>, STAGES, 2)>; m4_dnl
static_assert($1::SMEM_BYTES <= SMEM, "the grid's smem holds the swizzled tiles and their alignment"); m4_dnl
static_assert($1::PROGRAM_THREADS == THREADS, "the grid's threads are the layout's (each copies its chunks: for_thread_chunks)")|>)
# TILE_WG_AHEAD(L): how many key tiles the copies run ahead of the products (stages - 1).
m4_define(<|TILE_WG_AHEAD|>, <|$1::AHEAD|>)
# TILE_WG_TILES(tiles, L): tiles.q and STAGES buffers tiles.k(s), tiles.v(s) in shared memory.
m4_define(<|TILE_WG_TILES|>, <|const auto $1 = tile::attn::wg_shared_tiles<$2, T>()|>)
# TILE_WG_COPY_Q(tiles, L, a, blk), TILE_WG_COPY_K(tiles, L, a, blk, n), TILE_WG_COPY_V(...):
# start copying the query block, or key / value tile n (into K / V stage n % stages);
# TILE_WG_COPY_WAIT(L) waits for all but the AHEAD - 1 latest groups of them, makes them
# visible to the tensor cores and waits for the program (a barrier).
m4_define(<|TILE_WG_COPY_Q|>, <|TILE_ARGS(<|TILE_WG_COPY_Q|>, <|$4|>, 4)tile::attn::wg_copy_q<$2, T>($1, $3, $4)|>)
m4_define(<|TILE_WG_COPY_K|>, <|TILE_ARGS(<|TILE_WG_COPY_K|>, <|$5|>, 5)tile::attn::wg_copy_k<$2, T>($1, $3, $4, $5)|>)
m4_define(<|TILE_WG_COPY_V|>, <|TILE_ARGS(<|TILE_WG_COPY_V|>, <|$5|>, 5)tile::attn::wg_copy_v<$2, T>($1, $3, $4, $5)|>)
m4_define(<|TILE_WG_COPY_WAIT|>, <|tile::wg_copy_wait<$1::AHEAD - 1>()|>)
# TILE_PROGRAM_BARRIER: every thread of the program waits for the others (shared tiles read by
# one warpgroup may be overwritten after it).
m4_define(<|TILE_PROGRAM_BARRIER|>, <|__syncthreads()|>)
# TILE_ATTENTION_SCORES(s, L): s = a score tile [BLOCK_M, BLOCK_N] (registers).
m4_define(<|TILE_ATTENTION_SCORES|>, <|tile::attn::scores<$2> $1|>)
# TILE_WG_QK_START(s, L, tiles, n): start s = Q K_n^T (asynchronous warpgroup products);
# TILE_WG_WAIT_SCORES(s, pending): wait for them, letting `pending` later groups run on.
m4_define(<|TILE_WG_QK_START|>, <|TILE_ARGS(<|TILE_WG_QK_START|>, <|$4|>, 4)tile::attn::wg_qk_start<$2>($1, $3, $4)|>)
m4_define(<|TILE_WG_WAIT_SCORES|>, <|TILE_ARGS(<|TILE_WG_WAIT_SCORES|>, <|$2|>, 2)tile::attn::wg_wait_scores<$2>($1)|>)
# TILE_WG_PV_START(pv, L, acc, tiles, n): start acc's output += P V_n, P packed in the operand
# pv (TILE_WG_PACK_P); TILE_WG_PV_FINISH(acc, pv): wait for it.
m4_define(<|TILE_WG_PV_START|>, <|TILE_ARGS(<|TILE_WG_PV_START|>, <|$5|>, 5)tile::attn::wg_pv_start<$2>($1, $3, $4, $5)|>)
m4_define(<|TILE_WG_PV_FINISH|>, <|TILE_ARGS(<|TILE_WG_PV_FINISH|>, <|$2|>, 2)tile::attn::wg_pv_finish($1, $2)|>)
# TILE_RESCALE(acc, alpha): acc's output rows *= alpha (TILE_ONLINE_SOFTMAX_DEFERRED's factors).
m4_define(<|TILE_RESCALE|>, <|TILE_ARGS(<|TILE_RESCALE|>, <|$2|>, 2)tile::attn::rescale($1, $2)|>)

# Hopper, warp-specialized (WARPGROUPS 3 or 4): a producer warpgroup copies by tensor map (the
# host encodes a.q_map, a.k_map, a.v_map per call) into rings of stages; BLOCK_M / 64 consumer
# warpgroups of 64 query rows run the products above. TILE_ATTENTION_WS_LAYOUT(L): L is this
# tiling (BLOCK_M query rows, BLOCK_N keys, STAGES stages of K and of V); its tiles come from
# TILE_WG_TILES.
m4_define(<|TILE_ATTENTION_WS_LAYOUT|>, <|TILE_NEED(<|HEAD_DIM|>)TILE_NEED(<|BLOCK_N|>)TILE_NEED(<|BLOCK_M|>)m4_dnl
using $1 = tile::attn::ws_layout<HEAD_DIM, BLOCK_N, m4_ifdef(<|STAGES|>, STAGES, 2), BLOCK_M / 64, m4_ifdef(<|HANDED|>, HANDED, 0), m4_ifdef(<|QREG|>, QREG, 0), m4_ifdef(<|O_ON_Q|>, O_ON_Q, 0)>; m4_dnl
static_assert($1::PROGRAM_THREADS == THREADS && $1::QUERY_ROWS == BLOCK_M, "the grid's threads and query rows match the layout"); m4_dnl
static_assert($1::SMEM_BYTES <= SMEM, "the grid's smem holds the swizzled tiles and their alignment")|>)
# TILE_WS_RINGS(rings, L): rings.q, rings.k, rings.v = the Q stage and the K and V rings, with
# a full and an empty barrier per stage (collective, once). TILE_WS_PRODUCER(L): whether this
# thread is in the producer warpgroup; TILE_WS_PRODUCER_THREAD(L): the one that issues copies.
m4_define(<|TILE_WS_RINGS|>, <|auto $1 = tile::attn::ws_rings_start<$2>()|>)
m4_define(<|TILE_WS_PRODUCER|>, <|tile::attn::ws_is_producer<$1>()|>)
m4_define(<|TILE_WS_PRODUCER_THREAD|>, <|tile::attn::ws_is_producer_thread<$1>()|>)
# TILE_WS_LOAD_Q(rings, tiles, a, blk): copy the query block into tiles.q (once), the block
# beside it for the consumers.
# TILE_WS_LOAD_KV(rings, tiles, a, blk, n): wait for a free K stage and a free V stage, copy key
# and value tile n into them (zeros past the sequence and past head_dim).
m4_define(<|TILE_WS_LOAD_Q|>, <|TILE_ARGS(<|TILE_WS_LOAD_Q|>, <|$4|>, 4)tile::attn::ws_load_q($1, $2, $3, $4)|>)
m4_define(<|TILE_WS_LOAD_KV|>, <|TILE_ARGS(<|TILE_WS_LOAD_KV|>, <|$5|>, 5)tile::attn::ws_load_kv($1, $2, $3, $4, $5)|>)
# TILE_WS_WAIT_Q(rings): the consumers wait for the query block (a handed block's Q was taken
# with it: nothing).
m4_define(<|TILE_WS_WAIT_Q|>, <|m4_ifelse(m4_ifdef(<|HANDED|>, HANDED, 0), 1, <|(void)0|>, <|(void)$1.q.take()|>)|>)
# TILE_WS_Q_OPERAND(qa, L): qa = registers for Q as S = Q K^T's operand, where the layout keeps
# it there (grid param QREG); TILE_WS_LOAD_Q_OPERAND(qa, tiles): fill them from the Q stage
# (once a block, after TILE_WS_WAIT_Q; nothing where Q stays in shared memory).
m4_define(<|TILE_WS_Q_OPERAND|>, <|tile::attn::q_operand<$2> $1|>)
m4_define(<|TILE_WS_LOAD_Q_OPERAND|>, <|TILE_ARGS(<|TILE_WS_LOAD_Q_OPERAND|>, <|$2|>, 2)tile::attn::ws_load_q_operand($1, $2)|>)
# TILE_WS_QK_START(s, L, rings, tiles, qa): wait for the next key tile, start s = Q K^T on it.
# TILE_WS_PV_START(pv, L, acc, rings, tiles): wait for the next value tile, start acc's
# output += pv V on it (TILE_WG_PV_FINISH waits). TILE_WS_RELEASE_K(rings) / TILE_WS_RELEASE_V(rings):
# hand the oldest K / V stage back once the products reading it are done.
m4_define(<|TILE_WS_QK_START|>, <|TILE_ARGS(<|TILE_WS_QK_START|>, <|$5|>, 5)tile::attn::ws_qk_start<$2>($1, $3, $4, $5)|>)
# TILE_WS_HALF_KEY_TILE(L, blk, n, causal): this consumer warpgroup's rows of blk see no key of
# key tile n's second half (always false but on 128-key tiles at head dim 64). TILE_WS_QK_START_HALF(s, L,
# rings, tiles, qa): TILE_WS_QK_START over the tile's first half of keys;
# (TILE_WG_WAIT_SCORES waits for them; the second half's scores stay unset: the mask writes
# them, TILE_ONLINE_SOFTMAX_DEFERRED_HALF never reads them, so pair the two.)
# TILE_ONLINE_SOFTMAX_DEFERRED_HALF(alpha, acc, s, scale_log2, half): TILE_ONLINE_SOFTMAX_DEFERRED,
# with no exponentials on the second half (P 0 there) where `half`.
m4_define(<|TILE_WS_HALF_KEY_TILE|>, <|tile::attn::ws_half_key_tile<$1>($2, $3, $4)|>)
m4_define(<|TILE_WS_QK_START_HALF|>, <|TILE_ARGS(<|TILE_WS_QK_START_HALF|>, <|$5|>, 5)tile::attn::ws_qk_start_half<$2>($1, $3, $4, $5)|>)
m4_define(<|TILE_ONLINE_SOFTMAX_DEFERRED_HALF|>, <|TILE_ARGS(<|TILE_ONLINE_SOFTMAX_DEFERRED_HALF|>, <|$5|>, 5)m4_dnl
tile::attn::online_softmax_deferred_half($2, $3, $4, $1, $5)|>)
# TILE_WG_P_OPERAND(pv, L): pv = registers for P as a product operand (TILE_WG_PACK_P fills them).
m4_define(<|TILE_WG_P_OPERAND|>, <|tile::attn::p_operand<$2> $1|>)
# TILE_RESCALE_FACTORS(alpha, L): alpha = per-row rescale factors of the output (uninitialized).
# TILE_ONLINE_SOFTMAX_DEFERRED(alpha, acc, s, scale_log2): TILE_ONLINE_SOFTMAX without the
# rescale of acc's output; alpha = the per-row factors for TILE_RESCALE(acc, alpha), applied
# once the products still adding into the output are done. TILE_WG_PACK_P(pv, s): pv = P in s
# rounded to the storage type, as P V's operand.
m4_define(<|TILE_RESCALE_FACTORS|>, <|TILE_ARGS(<|TILE_RESCALE_FACTORS|>, <|$2|>, 2)float $1[$2::MF][2]|>)
m4_define(<|TILE_ONLINE_SOFTMAX_DEFERRED|>, <|TILE_ARGS(<|TILE_ONLINE_SOFTMAX_DEFERRED|>, <|$4|>, 4)m4_dnl
tile::attn::online_softmax_deferred($2, $3, $4, $1)|>)
m4_define(<|TILE_WG_PACK_P|>, <|TILE_ARGS(<|TILE_WG_PACK_P|>, <|$2|>, 2)tile::attn::wg_pack_p<T>($1, $2)|>)
m4_define(<|TILE_WS_PV_START|>, <|TILE_ARGS(<|TILE_WS_PV_START|>, <|$5|>, 5)tile::attn::ws_pv_start<$2>($1, $3, $4, $5)|>)
m4_define(<|TILE_WS_RELEASE_K|>, <|$1.k.release()|>)
m4_define(<|TILE_WS_RELEASE_V|>, <|$1.v.release()|>)
# TILE_WS_TURNS(turns, L): turns = this consumer warpgroup's place in the round-robin
# ping-pong of the consumers, across all its query blocks. TILE_WS_TURN_WAIT(turns, L): wait
# for this warpgroup's turn to issue products; TILE_WS_TURN_PASS(turns, L): its products are
# issued, the next one's turn; TILE_WS_TURNS_FINISH(turns, L): after the last block (balances
# the turns).
m4_define(<|TILE_WS_TURNS|>, <|TILE_ARGS(<|TILE_WS_TURNS|>, <|$2|>, 2)tile::attn::ws_turns $1 = tile::attn::ws_turns_start<$2>()|>)
m4_define(<|TILE_WS_TURN_WAIT|>, <|TILE_ARGS(<|TILE_WS_TURN_WAIT|>, <|$2|>, 2)tile::attn::ws_turn_wait<$2>($1)|>)
m4_define(<|TILE_WS_TURN_PASS|>, <|TILE_ARGS(<|TILE_WS_TURN_PASS|>, <|$2|>, 2)tile::attn::ws_turn_pass<$2>($1)|>)
m4_define(<|TILE_WS_TURNS_FINISH|>, <|TILE_ARGS(<|TILE_WS_TURNS_FINISH|>, <|$2|>, 2)tile::attn::ws_turns_finish<$2>($1)|>)
# TILE_WS_STORES_FINISH(a, L): after a consumer warpgroup's last block, its output copies by
# tensor map (TILE_WS_STORE's, where the host encoded one) have completed.
m4_define(<|TILE_WS_STORES_FINISH|>, <|TILE_ARGS(<|TILE_WS_STORES_FINISH|>, <|$2|>, 2)tile::attn::ws_stores_finish<$2>($1)|>)
# TILE_FOR_ATTENTION_BLOCKS(blk, L, a) ... TILE_END_FOR: blk takes this program's query blocks
# (blockIdx.x, + gridDim.x, ...: one each unless the grid makes the variant persistent; a
# persistent causal walk takes them in long/short pairs, templates/tile_attention.cuh).
m4_define(<|TILE_FOR_ATTENTION_BLOCKS|>, <|TILE_ARGS(<|TILE_FOR_ATTENTION_BLOCKS|>, <|$3|>, 3)m4_dnl
for (int64_t $1_pid = blockIdx.x, $1_turn = 0, $1_walk = tile::attn::attention_walk($3); m4_dnl
$1_pid < $1_walk; $1_pid += gridDim.x, $1_turn++) { m4_dnl
const tile::attn::block $1 = tile::attn::program_block_at<$2>($3, $1_pid, $1_turn);|>)
# Warp-specialized variants, whose walk depends on the grid param HANDED (perf-notes A28b):
# TILE_FOR_WS_PRODUCER_BLOCKS(blk, L, a, rings) ... TILE_END_FOR: the producer's walk, blk each
# query block it loads. TILE_WS_HAND_END(rings, a): after it. TILE_FOR_WS_CONSUMER_BLOCKS(blk,
# L, a, rings) ... TILE_END_FOR: the consumers' walk, blk each non-empty block.
# - HANDED 0: every warpgroup walks the fixed order (TILE_FOR_ATTENTION_BLOCKS); the consumers
#   skip empty blocks, and TILE_WS_HAND_END is nothing.
# - HANDED 1: the producer walks (the fixed order, or with a block counter the counter's next
#   as the program finishes: templates/tile_attention.cuh, ws_walk) and hands each block over
#   beside its Q; the consumers take it once Q has landed; TILE_WS_HAND_END hands over the end.
m4_define(<|TILE_FOR_WS_PRODUCER_BLOCKS|>, <|TILE_ARGS(<|TILE_FOR_WS_PRODUCER_BLOCKS|>, <|$4|>, 4)m4_dnl
m4_ifelse(m4_ifdef(<|HANDED|>, HANDED, 0), 1, <|m4_dnl
for (tile::attn::ws_walk $1_walk = tile::attn::ws_walk_start($3); tile::attn::ws_walk_more($1_walk); m4_dnl
tile::attn::ws_walk_next($1_walk, $3)) { m4_dnl
const tile::attn::block $1 = tile::attn::program_block_at<$2>($3, $1_walk.pid, $1_walk.turn);|>, m4_dnl
<|TILE_FOR_ATTENTION_BLOCKS($1, $2, $3)|>)|>)
m4_define(<|TILE_WS_HAND_END|>, <|m4_ifelse(m4_ifdef(<|HANDED|>, HANDED, 0), 1, <|tile::attn::ws_hand_end($1, $2)|>, <|(void)0|>)|>)
m4_define(<|TILE_FOR_WS_CONSUMER_BLOCKS|>, <|TILE_ARGS(<|TILE_FOR_WS_CONSUMER_BLOCKS|>, <|$4|>, 4)m4_dnl
m4_ifelse(m4_ifdef(<|HANDED|>, HANDED, 0), 1, <|for (tile::attn::block $1; tile::attn::ws_block_handed<$2>($4, $1);) {|>, m4_dnl
<|TILE_FOR_ATTENTION_BLOCKS($1, $2, $3) if ($1.empty) continue;|>)|>)
# TILE_WS_RELEASE_Q(rings, L): hand the query block's stage back (its last products are done),
# unless the layout stages the output there (grid param O_ON_Q). TILE_WS_STAGING_DONE(rings, L,
# a): after TILE_WS_STORE, where it does: hand the stage back once the output has left it.
m4_define(<|TILE_WS_RELEASE_Q|>, <|TILE_ARGS(<|TILE_WS_RELEASE_Q|>, <|$2|>, 2)tile::attn::ws_release_q<$2>($1)|>)
m4_define(<|TILE_WS_STAGING_DONE|>, <|TILE_ARGS(<|TILE_WS_STAGING_DONE|>, <|$3|>, 3)tile::attn::ws_staging_done<$2>($1, $3)|>)
# TILE_WS_ROWS_PAST(blk, L): this consumer warpgroup's query rows all lie past the sequence
# (or before it: a causal sequence's blocks moved back, causal_block_shift).
# TILE_WS_PASS_BLOCK(turns, rings, L, blk): for such a warpgroup, the block's stages and turns
# without products (the other warpgroups' loop stays in step).
m4_define(<|TILE_WS_ROWS_PAST|>, <|TILE_ARGS(<|TILE_WS_ROWS_PAST|>, <|$2|>, 2)tile::attn::ws_rows_past<$2>($1)|>)
m4_define(<|TILE_WS_PASS_BLOCK|>, <|TILE_ARGS(<|TILE_WS_PASS_BLOCK|>, <|$4|>, 4)tile::attn::ws_pass_block<$3>($1, $2, $4)|>)
# TILE_WS_OWN_KEY_TILES(turns, rings, L, blk, causal): blk as this consumer warpgroup sees it:
# causal key tiles that lie wholly above its rows' diagonal pass (stages and turns only, as
# TILE_WS_PASS_BLOCK) and n_end stops before them.
m4_define(<|TILE_WS_OWN_KEY_TILES|>, <|TILE_ARGS(<|TILE_WS_OWN_KEY_TILES|>, <|$5|>, 5)tile::attn::ws_own_key_tiles<$3>($1, $2, $4, $5)|>)
# TILE_WS_KEY_TILE_MASKED(L, blk, n, causal): TILE_KEY_TILE_MASKED for this consumer
# warpgroup's rows of blk.
m4_define(<|TILE_WS_KEY_TILE_MASKED|>, <|tile::attn::ws_tile_needs_mask<$1>($2, $3, $4)|>)
# TILE_WS_STORE(a, blk, acc, L, tiles): TILE_ATTENTION_STORE for one consumer warpgroup's rows,
# staged in its own rows of a staging tile after the stages (only its 128 threads synchronize).
m4_define(<|TILE_WS_STORE|>, <|TILE_ARGS(<|TILE_WS_STORE|>, <|$5|>, 5)tile::attn::ws_store<$4>($1, $2, $3, $5)|>)

# ---------------------------------------------------------------------------- grouped matmul
# C_g = A_g B_g over the groups of a grouped (mixture-of-experts) product: persistent programs
# take C tiles of BLOCK_M x BLOCK_N from a scheduler that reads the group sizes on the device;
# each tile streams K through STAGES shared-memory buffers. The grid point gives BLOCK_M,
# BLOCK_N and STAGES, and either BLOCK_K, WARPS_M and WARPS_N (mma.sync warp tiles) or
# WARPGROUPS (3: wgmma, K steps of 64, a producer warpgroup copying by tensor map for two
# consumer warpgroups of 64 rows each of a 128-row tile).
# TILE_GEMM_LAYOUT(L): L is the tiling of this grid point.
m4_define(<|TILE_GEMM_LAYOUT|>, <|TILE_NEED(<|BLOCK_M|>)TILE_NEED(<|BLOCK_N|>)TILE_NEED(<|STAGES|>)m4_dnl
using $1 = m4_ifdef(<|WARPGROUPS|>, <|tile::gemm::ws_layout<BLOCK_M, BLOCK_N, STAGES, m4_ifdef(<|SLOTS|>, SLOTS, 2)>|>, <|tile::gemm::mma_layout<BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES>|>); m4_dnl
static_assert($1::BM == BLOCK_M && $1::PROGRAM_THREADS == THREADS, "the grid's tile and threads match the layout"); m4_dnl
static_assert($1::SMEM_BYTES <= SMEM, "the grid's smem holds the stages")|>)
# TILE_GEMM_TILES(tiles, L): STAGES buffers of an A k-tile and a B k-tile in shared memory.
m4_define(<|TILE_GEMM_TILES|>, <|const auto $1 = tile::gemm::shared_tiles<$2, T>()|>)
# TILE_GEMM_SCHEDULER(sched, L, a): sched walks the C tiles of every group (tile numbers
# blockIdx.x, + gridDim.x, ...). TILE_FOR_GEMM_TILES(pos, sched, L, a) ... TILE_END_FOR: pos
# takes each of this program's tiles: pos.group, rows [pos.row0, pos.row_end), pos.col0.
m4_define(<|TILE_GEMM_SCHEDULER|>, <|TILE_ARGS(<|TILE_GEMM_SCHEDULER|>, <|$3|>, 3)m4_dnl
tile::gemm::scheduler $1 = tile::gemm::scheduler_init<$2>($3)|>)
m4_define(<|TILE_FOR_GEMM_TILES|>, <|TILE_ARGS(<|TILE_FOR_GEMM_TILES|>, <|$4|>, 4)m4_dnl
for (tile::gemm::tile_pos $1; tile::gemm::scheduler_next<$3>($2, $4, $1);) {|>)
# TILE_GEMM_K_TILES(L, a): the k-tiles of BLOCK_K (wgmma: 64) a C tile streams.
# TILE_GEMM_AHEAD(L): how many k-tiles the copies run ahead of the products.
m4_define(<|TILE_GEMM_K_TILES|>, <|(($2.k + $1::BK - 1) / $1::BK)|>)
m4_define(<|TILE_GEMM_AHEAD|>, <|$1::AHEAD|>)
# TILE_GEMM_COPY(tiles, L, a, pos, kt): start copying k-tile kt of the tile's rows of A and of
# its group's B columns into stage kt % STAGES (zeros past the matrices' edges).
# TILE_GEMM_COPY_WAIT(L): wait for every k-tile but the AHEAD - 1 latest, and for the program
# (a barrier: every warp is done with the stage the next copy overwrites).
m4_define(<|TILE_GEMM_COPY|>, <|TILE_ARGS(<|TILE_GEMM_COPY|>, <|$5|>, 5)tile::gemm::copy_k_tile<$2, T>($1, $3, $4, $5)|>)
m4_define(<|TILE_GEMM_COPY_WAIT|>, <|tile::gemm::copy_wait<$1>()|>)
# TILE_GEMM_ACCUMULATOR(acc, L): acc = a [BLOCK_M, BLOCK_N] fp32 accumulator, zero (mma.sync;
# on wgmma TILE_GEMM_CONSUME_K_TILES's first product writes it).
m4_define(<|TILE_GEMM_ACCUMULATOR|>, <|tile::gemm::accumulator<$2> $1; tile::gemm::accumulator_zero<$2>($1)|>)
# TILE_GEMM_PRODUCT(acc, L, tiles, kt, b_kmajor): acc += A_kt B_kt from stage kt % STAGES
# (B K-major or N-major; mma.sync variants).
m4_define(<|TILE_GEMM_PRODUCT|>, <|TILE_ARGS(<|TILE_GEMM_PRODUCT|>, <|$5|>, 5)tile::gemm::product_k_tile<$2, T>($1, $3, $4, $5)|>)
# TILE_GEMM_STORE(a, pos, acc, L, tiles): C's tile at pos = acc + the group's bias row (if
# any), rounded to the storage type; rows past the group and columns past n are not written
# (warp-specialized variants through a staging tile in tiles: by C's tensor map where the
# rows allow, else whole 16-byte chunks out).
m4_define(<|TILE_GEMM_STORE|>, <|TILE_ARGS(<|TILE_GEMM_STORE|>, <|$5|>, 5)tile::gemm::store_tile<$4, T>($1, $2, $3, $5)|>)
# TILE_GEMM_STORES_DRAIN(L): after a program's last TILE_GEMM_STORE, wait for its copies out
# through C's tensor map (warp-specialized variants; they read the staging tiles).
m4_define(<|TILE_GEMM_STORES_DRAIN|>, <|tile::gemm::stores_drain<$1>()|>)

# Warp-specialized variants (WARPGROUPS 3): TILE_GEMM_PIPELINE(pipe, L): pipe = the ring of
# stages with a full and an empty barrier each (collective, once). TILE_GEMM_PRODUCER(L): whether
# this thread is in the producer warpgroup; TILE_GEMM_PRODUCER_WARP(L): in the one warp of it
# that walks the tiles (its lane 0 issues the copies). TILE_PRODUCER_REGISTERS(L) / TILE_CONSUMER_REGISTERS(L): the warpgroup
# gives registers back / takes them (every thread of the warpgroup).
m4_define(<|TILE_GEMM_PIPELINE|>, <|auto $1 = tile::gemm::pipeline_start<$2>()|>)
m4_define(<|TILE_GEMM_PRODUCER|>, <|tile::gemm::is_producer<$1>()|>)
m4_define(<|TILE_GEMM_PRODUCER_WARP|>, <|tile::gemm::is_producer_warp<$1>()|>)
m4_define(<|TILE_PRODUCER_REGISTERS|>, <|tile::warpgroup_registers_release<$1::PRODUCER_REGS>()|>)
m4_define(<|TILE_CONSUMER_REGISTERS|>, <|tile::warpgroup_registers_claim<$1::CONSUMER_REGS>()|>)
# TILE_GEMM_PRODUCE(pipe, tiles, a, pos, kt): wait for a free stage, then copy k-tile kt of the
# tile at pos into it (tensor maps a.a_map, a.b_map; zeros outside the tensors; a half tile's
# A in boxes of 8 rows, a.a_rows_map, its rows past the group as zeros).
# TILE_GEMM_HALF_TILE(L, a, pos): whether the tile is a half tile (64 rows or fewer, on a layout
# of 256-column consumers, where the host asks for them: a.half_tiles): each consumer then takes
# the 64 rows by half the columns.
# TILE_GEMM_CONSUME_K_TILES(pipe, acc, tiles, k_tiles, b_kmajor, half): a tile's k-loop: for
# each of its k_tiles k-tiles, wait for the copies, start acc += A B from it (the first writes
# acc; half: the tile's 64 rows by the consumer's half of the columns), hand back the stage of
# the product before.
# TILE_GEMM_CONSUME_FINISH(pipe, acc): wait for the last product, hand back its stage.
m4_define(<|TILE_GEMM_PRODUCE|>, <|TILE_ARGS(<|TILE_GEMM_PRODUCE|>, <|$5|>, 5)tile::gemm::produce_k_tile($1, $2, $3, $4, $5)|>)
m4_define(<|TILE_GEMM_HALF_TILE|>, <|TILE_ARGS(<|TILE_GEMM_HALF_TILE|>, <|$3|>, 3)tile::gemm::is_half_tile<$1>($2, $3)|>)
m4_define(<|TILE_GEMM_CONSUME_K_TILES|>, <|TILE_ARGS(<|TILE_GEMM_CONSUME_K_TILES|>, <|$6|>, 6)tile::gemm::consume_k_tiles($1, $2, $3, $4, $5, $6)|>)
m4_define(<|TILE_GEMM_CONSUME_FINISH|>, <|TILE_ARGS(<|TILE_GEMM_CONSUME_FINISH|>, <|$2|>, 2)tile::gemm::consume_finish($1, $2)|>)
# Who takes which tile (warp-specialized variants): the producer decides, the consumers follow.
# TILE_FOR_GEMM_TILES_TAKEN(pos, sched, L, a) ... TILE_END_FOR: the producer warp's tiles: with a
# caller's workspace (a.tile_counter) each next one from its counter as the program finishes
# the last, else TILE_FOR_GEMM_TILES's. TILE_GEMM_PRODUCE_END(pipe, a): after them, ends the
# consumers' walk (and zeroes the counter, by the last program out).
# TILE_FOR_GEMM_TILES_HANDED(pos, sched, L, a, pipe) ... TILE_END_FOR: the consumers' tiles, in
# the order the producer put them in the ring.
m4_define(<|TILE_FOR_GEMM_TILES_TAKEN|>, <|TILE_ARGS(<|TILE_FOR_GEMM_TILES_TAKEN|>, <|$4|>, 4)m4_dnl
for (tile::gemm::tile_pos $1; tile::gemm::scheduler_take<$3>($2, $4, $1);) {|>)
m4_define(<|TILE_GEMM_PRODUCE_END|>, <|TILE_ARGS(<|TILE_GEMM_PRODUCE_END|>, <|$2|>, 2)tile::gemm::produce_end($1, $2)|>)
m4_define(<|TILE_FOR_GEMM_TILES_HANDED|>, <|TILE_ARGS(<|TILE_FOR_GEMM_TILES_HANDED|>, <|$5|>, 5)m4_dnl
for (tile::gemm::tile_pos $1; tile::gemm::scheduler_handed<$3>($2, $4, $5, $1);) {|>)

m4_changecom()m4_divert(0)m4_dnl
