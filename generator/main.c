/*
 * fusedops-gen: expands kernel grids into CUDA sources and the variant registry.
 *
 *   fusedops-gen --out DIR --templates DIR [--m4 PATH] [--tuned FILE.tsv ...] GRID...
 *   fusedops-gen --list [--pruned] GRID...
 *
 * For each grid it writes DIR/<op>.cu (every surviving grid point and dtype, expanded by m4
 * from kernels/<source>), then DIR/kernels.cu (includes them all: one translation unit, one
 * fatbinary), DIR/registry.c (the variant table) and DIR/tuned.c (the tuned winners).
 * Output is deterministic, and a file is rewritten only when its bytes change.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grid.h"
#include "tuning_parse.h"

/* ---------------------------------------------------------------- growable text */

typedef struct text {
    char *data;
    size_t len, cap;
} text;

_Noreturn static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("fusedops-gen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void text_append(text *t, const char *s, size_t n) {
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n + 1) cap *= 2;
        char *p = realloc(t->data, cap);
        if (!p) die("out of memory");
        t->data = p;
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

static void text_printf(text *t, const char *fmt, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf) die("internal: line too long");
    text_append(t, buf, (size_t)n);
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) die("%s: %s", path, strerror(errno));
    text t = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) text_append(&t, buf, n);
    fclose(f);
    if (!t.data) text_append(&t, "", 0);
    return t.data;
}

/* Writes `t` to `path` only when the bytes differ, so unchanged outputs keep their mtime. */
static void write_if_changed(const char *path, const text *t) {
    FILE *f = fopen(path, "rb");
    if (f) {
        int same = 1;
        size_t i = 0;
        int ch;
        while ((ch = fgetc(f)) != EOF)
            if (i >= t->len || (char)ch != t->data[i++]) {
                same = 0;
                break;
            }
        fclose(f);
        if (same && i == t->len) return;
    }
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    f = fopen(tmp, "wb");
    if (!f) die("%s: %s", tmp, strerror(errno));
    if (fwrite(t->data, 1, t->len, f) != t->len || fclose(f)) die("%s: write failed", tmp);
    if (rename(tmp, path)) die("%s: %s", path, strerror(errno));
}

/* ---------------------------------------------------------------- m4 */

/* Runs m4 with argv and appends its standard output to *out; m4's errors (file:line:
 * message, from the tile language's checks) go straight to our stderr. */
static void run_m4(char *const argv[], text *out) {
    int fds[2];
    if (pipe(fds)) die("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execvp(argv[0], argv);
        fprintf(stderr, "fusedops-gen: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    char buf[65536];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) text_append(out, buf, (size_t)n);
    close(fds[0]);
    int status;
    if (waitpid(pid, &status, 0) < 0) die("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status)) die("m4 failed (see the message above)");
}

/* ---------------------------------------------------------------- expansion */

#define MAX_VARIANTS 4096

typedef struct variant_row {
    char name[160];
    char op[GRID_MAX_NAME];
    int dtype;
    int64_t fields[GRID_FIELD_COUNT];
    char params[512];
    char twin_key[512];    /* params but MAXREG and LEAN (link_lean_twins) */
    char kernel[GRID_MAX_NAME];
    const char *grid_path; /* where its family is, for errors found after expansion */
    int family_line;
    int lean_twin;         /* registry index of its lean twin, or -1 */
} variant_row;

typedef struct gen_state {
    const char *m4;
    const char *templates;
    const char *kernel_dir;
    const grid_file *grid;
    const char *grid_path; /* the grid's file (argv: outlives every grid parsed after it) */
    text *cu;
    int list, list_pruned;
    int survivors, pruned;
    variant_row *rows;
    int row_count;
} gen_state;

/* A lean variant (grid field `lean`) is a general variant compiled for rows of exactly
 * max_cols columns and calls without optional inputs: fewer registers a thread. Its general
 * twins are the variants of the same op, dtype, kernel and registry fields with the same grid
 * point (params in the same order) but for MAXREG (a register cap, which the lean variant sets
 * itself) and LEAN: the same twin_key. Dispatch takes the lean variant in their place wherever
 * the call allows. */
static int lean_twins(const variant_row *general, const variant_row *lean) {
    if (general->fields[GRID_FIELD_LEAN] || strcmp(general->op, lean->op) ||
        strcmp(general->kernel, lean->kernel) || general->dtype != lean->dtype)
        return 0;
    for (int f = 0; f < GRID_FIELD_COUNT; f++)
        if (f != GRID_FIELD_LEAN && general->fields[f] != lean->fields[f]) return 0;
    return !strcmp(general->twin_key, lean->twin_key);
}

/* Links every lean row to its general twins; a lean row without one fails the build. */
static void link_lean_twins(variant_row *rows, int count) {
    for (int i = 0; i < count; i++) {
        if (!rows[i].fields[GRID_FIELD_LEAN]) continue;
        int twins = 0;
        for (int j = 0; j < count; j++) {
            if (!lean_twins(&rows[j], &rows[i])) continue;
            if (rows[j].lean_twin >= 0)
                die("%s:%d: %s has two lean twins", rows[i].grid_path, rows[i].family_line,
                    rows[j].name);
            rows[j].lean_twin = i;
            twins++;
        }
        if (!twins)
            die("%s:%d: lean variant %s has no general twin (same op, dtype, kernel, fields and "
                "grid point but for MAXREG)",
                rows[i].grid_path, rows[i].family_line, rows[i].name);
    }
}

/* The value of the grid point's parameter `name`, or `otherwise` where its family has none. */
static int64_t param_or(const grid_point *pt, const char *name, int64_t otherwise) {
    for (int i = 0; i < pt->family->param_count; i++)
        if (!strcmp(pt->family->params[i].name, name)) return pt->param_values[i];
    return otherwise;
}

/* "NAME=VALUE ..." of the grid point's params; for_twins: without MAXREG and LEAN, the params
 * in which a lean variant and its general twins differ. */
static void describe_point(const grid_point *pt, int for_twins, char *buf, size_t size) {
    buf[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < pt->family->param_count && used < size; i++) {
        const char *name = pt->family->params[i].name;
        if (for_twins && (!strcmp(name, "MAXREG") || !strcmp(name, "LEAN"))) continue;
        int n = snprintf(buf + used, size - used, "%s%s=%lld", used ? " " : "", name,
                         (long long)pt->param_values[i]);
        if (n < 0) break;
        used += (size_t)n;
    }
}

static int visit_point(void *ctx, const grid_point *pt, const char *pruned_reason) {
    gen_state *st = ctx;
    char params[512];
    describe_point(pt, 0, params, sizeof params);
    if (pruned_reason) {
        st->pruned++;
        if (st->list_pruned)
            printf("pruned  %-8s %-10s %s: %s\n", grid_dtype_names[pt->dtype], pt->family->name,
                   params, pruned_reason);
        return 0;
    }
    /* The registry fields must describe a launchable kernel; a grid that sets nonsense fails
     * the build here rather than dispatch at run time. */
    const int64_t *f = pt->fields;
    const char *bad = NULL;
    if (f[GRID_FIELD_THREADS] < 32 || f[GRID_FIELD_THREADS] > 1024 || f[GRID_FIELD_THREADS] % 32)
        bad = "threads must be a multiple of 32 in 32..1024";
    else if (f[GRID_FIELD_ROWS_PER_PROGRAM] < 1 || f[GRID_FIELD_ROWS_PER_PROGRAM] > 1024)
        bad = "rows_per_program must be in 1..1024";
    else if (f[GRID_FIELD_CLUSTER] < 1 || f[GRID_FIELD_CLUSTER] > 16 ||
             (f[GRID_FIELD_CLUSTER] & (f[GRID_FIELD_CLUSTER] - 1)))
        bad = "cluster must be a power of two in 1..16";
    else if (f[GRID_FIELD_SMEM] < 0 || f[GRID_FIELD_SMEM] > 232448)
        bad = "smem must be in 0..232448 bytes (227 KiB)";
    else if (f[GRID_FIELD_MAX_COLS] < 0)
        bad = "max_cols must be >= 0 (0: any width)";
    else if (f[GRID_FIELD_ALIGN] < 1 || f[GRID_FIELD_ALIGN] > 256 ||
             (f[GRID_FIELD_ALIGN] & (f[GRID_FIELD_ALIGN] - 1)))
        bad = "align must be a power of two in 1..256";
    else if (f[GRID_FIELD_ARCH_MIN] < 50 ||
             (f[GRID_FIELD_ARCH_MAX] && f[GRID_FIELD_ARCH_MAX] < f[GRID_FIELD_ARCH_MIN]))
        bad = "arch_min must be >= 50 and arch_max 0 or >= arch_min";
    else if (f[GRID_FIELD_PERSISTENT] != 0 && f[GRID_FIELD_PERSISTENT] != 1)
        bad = "persistent must be 0 or 1";
    else if (f[GRID_FIELD_FEATURES] < 0 || f[GRID_FIELD_FEATURES] > 0xffff)
        bad = "features must be a bit set in 0..0xffff";
    else if (f[GRID_FIELD_LEAN] != 0 && f[GRID_FIELD_LEAN] != 1)
        bad = "lean must be 0 or 1";
    else if (f[GRID_FIELD_LEAN] && (!f[GRID_FIELD_MAX_COLS] || f[GRID_FIELD_FEATURES]))
        bad = "a lean variant needs max_cols (the one width it takes) and no features";
    else if (f[GRID_FIELD_LEAN] && (f[GRID_FIELD_CLUSTER] != 1 ||
                                    param_or(pt, "BLOCK_N", -1) != f[GRID_FIELD_MAX_COLS]))
        /* TILE_ROW_WIDTH makes cols BLOCK_N: the row must be one program's one tile */
        bad = "a lean variant's max_cols must be its BLOCK_N, without a cluster";
    else if (param_or(pt, "LEAN", 0) != f[GRID_FIELD_LEAN])
        /* the CLI and tests know lean variants by the LEAN=1 in their params */
        bad = "param LEAN and field lean must agree (set lean = LEAN)";
    else if (f[GRID_FIELD_COLUMN_TILE] < 0 ||
             (f[GRID_FIELD_COLUMN_TILE] &&
              (f[GRID_FIELD_MAX_COLS] || f[GRID_FIELD_CLUSTER] != 1 ||
               f[GRID_FIELD_PERSISTENT] || f[GRID_FIELD_LEAN] ||
               param_or(pt, "BLOCK_N", -1) != f[GRID_FIELD_COLUMN_TILE])))
        /* launches count programs of BLOCK_N columns over rows of any width */
        bad = "column_tile must be 0, or the BLOCK_N of a variant of any width (max_cols 0) "
              "without a cluster, persistence or lean";
    else if (param_or(pt, "POINTWISE", 0) != (f[GRID_FIELD_COLUMN_TILE] > 0))
        /* the CLI and tests know pointwise variants by the POINTWISE=1 in their params */
        bad = "param POINTWISE and field column_tile must agree (POINTWISE 1 with column_tile "
              "BLOCK_N)";
    if (bad) die("%s:%d: family %s, %s: %s", st->grid->path, pt->family->line, pt->family->name,
                 params, bad);
    st->survivors++;
    for (int i = 0; i < st->row_count; i++)
        if (!strcmp(st->rows[i].name, pt->name))
            die("%s:%d: name template gives '%s' to two grid points", st->grid->path,
                pt->family->name_line, pt->name);
    if (st->row_count == MAX_VARIANTS) die("more than %d variants", MAX_VARIANTS);
    variant_row *row = &st->rows[st->row_count++];
    memset(row, 0, sizeof *row);
    snprintf(row->name, sizeof row->name, "%s", pt->name);
    snprintf(row->op, sizeof row->op, "%s", st->grid->op);
    row->dtype = pt->dtype;
    memcpy(row->fields, pt->fields, sizeof row->fields);
    snprintf(row->kernel, sizeof row->kernel, "%s", pt->family->kernel);
    row->grid_path = st->grid_path;
    row->family_line = pt->family->line;
    row->lean_twin = -1;
    snprintf(row->params, sizeof row->params, "%s", params);
    describe_point(pt, 1, row->twin_key, sizeof row->twin_key);
    if (st->list) {
        printf("%-44s %s\n", pt->name, params);
        return 0;
    }

    /* One m4 run per variant: the grid point arrives as -D definitions. */
    char defs[GRID_MAX_PARAMS + GRID_MAX_LETS + 8][256];
    char *argv[GRID_MAX_PARAMS + GRID_MAX_LETS + 16];
    int argc = 0, ndef = 0;
    argv[argc++] = (char *)st->m4;
    argv[argc++] = "-P";
    argv[argc++] = "-s";
#define DEF(...)                                                        \
    do {                                                                \
        snprintf(defs[ndef], sizeof defs[ndef], "-D" __VA_ARGS__);      \
        argv[argc++] = defs[ndef++];                                    \
    } while (0)
    DEF("OP=%s", st->grid->op);
    DEF("DTYPE=%s", grid_dtype_names[pt->dtype]);
    DEF("KERNEL=%s", pt->family->kernel);
    DEF("VARIANT=%s", pt->name);
    for (int i = 0; i < pt->family->param_count; i++)
        DEF("%s=%lld", pt->family->params[i].name, (long long)pt->param_values[i]);
    DEF("THREADS=%lld", (long long)pt->fields[GRID_FIELD_THREADS]);
    /* The architectures the registry lets the variant run on (0: no upper bound). */
    DEF("ARCH_MIN=%lld", (long long)pt->fields[GRID_FIELD_ARCH_MIN]);
    DEF("ARCH_MAX=%lld", (long long)pt->fields[GRID_FIELD_ARCH_MAX]);
    /* What the launch gives the kernel, so its layout can check that it fits. */
    DEF("SMEM=%lld", (long long)pt->fields[GRID_FIELD_SMEM]);
    /* 1: rows of exactly max_cols columns and no optional inputs (TILE_ROW_WIDTH) */
    DEF("LEAN=%lld", (long long)pt->fields[GRID_FIELD_LEAN]);
#undef DEF
    static char tile_m4[1024], source[1024];
    snprintf(tile_m4, sizeof tile_m4, "%s/tile.m4", st->templates);
    snprintf(source, sizeof source, "%s/%s", st->kernel_dir, st->grid->source);
    argv[argc++] = tile_m4;
    argv[argc++] = source;
    argv[argc] = NULL;

    text_printf(st->cu, "\n// variant %s: family %s, %s %s\nnamespace %s {\n", pt->name,
                pt->family->name, grid_dtype_names[pt->dtype], params, pt->name);
    run_m4(argv, st->cu);
    text_printf(st->cu, "} // namespace %s\n", pt->name);
    return 0;
}

/* ---------------------------------------------------------------- tuned tables */

static int find_row(const gen_state *st, const char *name) {
    for (int i = 0; i < st->row_count; i++)
        if (!strcmp(st->rows[i].name, name)) return i;
    return -1;
}

/* The row of `name`, a tuned line's winner or (runner_up) its runner-up, which must be a variant
 * of the line's op (or of the variant op of a table op, tuning_parse.h) and dtype (else the
 * build stops: path:line and why). */
static int line_row(const gen_state *st, const char *path, int line_no, const tuning_line *t,
                    const char *name, int runner_up) {
    const int v = find_row(st, name);
    const char *op = tuning_variant_op(t->op);
    if (v >= 0 && !strcmp(st->rows[v].op, op) && st->rows[v].dtype == t->dtype) return v;
    if (v < 0 && !runner_up) die("%s:%d: unknown variant '%s'", path, line_no, name);
    die("%s:%d: %s '%s' is not a %s %s variant", path, line_no, runner_up ? "runner-up" : "variant",
        name, op, grid_dtype_names[t->dtype]);
}

/* Appends the entries of one tuned TSV (docs/tuning.md) to *out as C initializers. */
static void read_tuned(const gen_state *st, const char *path, text *out, int *count) {
    char *data = read_file(path);
    int line_no = 0;
    for (char *line = data, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        line_no++;
        tuning_line t;
        char err[256];
        int r = tuning_parse_line(line, &t, err, sizeof err);
        if (r < 0) die("%s:%d: %s", path, line_no, err);
        if (r == 0) continue;
        const int v = line_row(st, path, line_no, &t, t.variant, 0);
        const int runner_up = t.runner_up ? line_row(st, path, line_no, &t, t.runner_up, 1) : -1;
        text_printf(out,
                    "    {%d, \"%s\", (tile_dtype)%d, %d, %d, %d, %.9g, %d, %.9g, %d}, /* %s */\n",
                    t.arch, t.op, t.dtype, t.rows_log2, t.cols_step, v, t.time_us, runner_up,
                    t.runner_up_us, t.bandwidth_gbs, t.variant);
        (*count)++;
    }
    free(data);
}

/* ---------------------------------------------------------------- main */

static void usage(void) {
    fputs("usage: fusedops-gen --out DIR --templates DIR [--m4 PATH] [--tuned FILE.tsv ...] "
          "GRID...\n       fusedops-gen --list [--pruned] GRID...\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv) {
    const char *out_dir = NULL, *templates = NULL, *m4 = "m4";
    const char *grids[64], *tuned[64];
    int grid_count = 0, tuned_count = 0, list = 0, list_pruned = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out_dir = argv[++i];
        else if (!strcmp(argv[i], "--templates") && i + 1 < argc) templates = argv[++i];
        else if (!strcmp(argv[i], "--m4") && i + 1 < argc) m4 = argv[++i];
        else if (!strcmp(argv[i], "--tuned") && i + 1 < argc && tuned_count < 64)
            tuned[tuned_count++] = argv[++i];
        else if (!strcmp(argv[i], "--list")) list = 1;
        else if (!strcmp(argv[i], "--pruned")) list = list_pruned = 1;
        else if (argv[i][0] == '-') usage();
        else if (grid_count < 64) grids[grid_count++] = argv[i];
        else usage();
    }
    if (!grid_count || (!list && (!out_dir || !templates))) usage();

    static variant_row rows[MAX_VARIANTS];
    gen_state st = {.m4 = m4, .templates = templates, .list = list, .list_pruned = list_pruned,
                    .rows = rows};
    text umbrella = {0};
    text_printf(&umbrella, "// Generated by fusedops-gen: every kernel variant in one translation "
                           "unit, so one fatbinary holds them all. Do not edit.\n");
    static grid_file grid;
    char err[1024];
    for (int g = 0; g < grid_count; g++) {
        char *src = read_file(grids[g]);
        if (grid_parse(grids[g], src, &grid, err, sizeof err)) die("%s", err);
        free(src);
        char kernel_dir[1024];
        snprintf(kernel_dir, sizeof kernel_dir, "%s", grids[g]);
        char *slash = strrchr(kernel_dir, '/');
        if (slash) *slash = '\0';
        else snprintf(kernel_dir, sizeof kernel_dir, ".");
        text cu = {0};
        text_printf(&cu, "// Generated by fusedops-gen from %s/%s over the grid %s. Do not "
                         "edit.\n#include \"tile_device.cuh\"\n",
                    kernel_dir, grid.source, grids[g]);
        st.grid = &grid;
        st.grid_path = grids[g];
        st.kernel_dir = kernel_dir;
        st.cu = &cu;
        st.survivors = st.pruned = 0;
        if (grid_expand(&grid, visit_point, &st, err, sizeof err)) die("%s", err);
        fprintf(list ? stdout : stderr, "fusedops-gen: %s: %d variants, %d grid points pruned\n",
                grids[g], st.survivors, st.pruned);
        if (!list) {
            char path[1200];
            snprintf(path, sizeof path, "%s/%s.cu", out_dir, grid.op);
            write_if_changed(path, &cu);
            text_printf(&umbrella, "#include \"%s.cu\"\n", grid.op);
        }
        free(cu.data);
    }
    if (list) {
        free(umbrella.data);
        return 0;
    }

    link_lean_twins(rows, st.row_count);
    text reg = {0};
    text_printf(&reg, "// Generated by fusedops-gen from the kernel grids. Do not edit.\n"
                      "#include \"registry.h\"\n\nconst tile_variant tile_registry[] = {\n");
    for (int i = 0; i < st.row_count; i++) {
        const variant_row *r = &rows[i];
        const int64_t *f = r->fields;
        text_printf(&reg,
                    "    {\"%s\", \"%s\", (tile_dtype)%d, %lld, %lld, %lld, %lld, %lldLL, %lld, "
                    "%lld, %lld, %lld, %lld, %lld, %d, %lld, \"%s\"},\n",
                    r->name, r->op, r->dtype, (long long)f[GRID_FIELD_THREADS],
                    (long long)f[GRID_FIELD_ROWS_PER_PROGRAM], (long long)f[GRID_FIELD_CLUSTER],
                    (long long)f[GRID_FIELD_SMEM], (long long)f[GRID_FIELD_MAX_COLS],
                    (long long)f[GRID_FIELD_ALIGN], (long long)f[GRID_FIELD_ARCH_MIN],
                    (long long)f[GRID_FIELD_ARCH_MAX], (long long)f[GRID_FIELD_PERSISTENT],
                    (long long)f[GRID_FIELD_FEATURES], (long long)f[GRID_FIELD_LEAN], r->lean_twin,
                    (long long)f[GRID_FIELD_COLUMN_TILE], r->params);
    }
    text_printf(&reg, "};\nconst int32_t tile_registry_count = %d;\n", st.row_count);
    char path[1200];
    snprintf(path, sizeof path, "%s/registry.c", out_dir);
    write_if_changed(path, &reg);

    text tun = {0};
    int entries = 0;
    text_printf(&tun, "// Generated by fusedops-gen from autotune_results/. Do not edit.\n"
                      "#include \"registry.h\"\n\nconst tile_tuned_entry tile_tuned_table[] = {\n");
    for (int i = 0; i < tuned_count; i++) read_tuned(&st, tuned[i], &tun, &entries);
    if (!entries) text_printf(&tun, "    {0, \"\", (tile_dtype)0, 0, 0, -1}, /* none */\n");
    text_printf(&tun, "};\nconst int32_t tile_tuned_count = %d;\n", entries);
    snprintf(path, sizeof path, "%s/tuned.c", out_dir);
    write_if_changed(path, &tun);

    snprintf(path, sizeof path, "%s/kernels.cu", out_dir);
    write_if_changed(path, &umbrella);
    free(umbrella.data);
    free(reg.data);
    free(tun.data);
    return 0;
}
