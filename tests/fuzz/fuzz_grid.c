/* libFuzzer harness for the generator's grid files (generator/grid.c): arbitrary text goes
 * through grid_parse; a grid that parses is expanded (work bounded) and every expression in it
 * is evaluated under two scopes, with metamorphic checks on && / || short-circuiting. The
 * whole input is also evaluated as one expression. Crashes, sanitizer reports and failed
 * checks (abort) are findings.
 *
 *   scripts/fuzz.sh 60          build with clang and run both fuzzers for 60 s each
 *   build-fuzz/tests/fuzz/fuzz_grid -dict=tests/fuzz/grid.dict CORPUS_DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid.h"

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "fuzz_grid: check failed at %s:%d: %s\n", __FILE__, __LINE__, \
                    #cond);                                                               \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* Work bounds: grids whose cartesian product is larger are parsed but not expanded, and the
 * visitor stops after so many points or so many expression characters evaluated. */
#define MAX_PRODUCT 100000
#define MAX_POINTS 10000
#define MAX_EXPR_CHARS 4000000

static void check_terminated(const char *s, size_t size) { CHECK(memchr(s, '\0', size) != NULL); }

typedef struct visit_ctx {
    const grid_file *grid;
    long points;
    long cost_per_point[GRID_MAX_FAMILIES];
    long chars;
} visit_ctx;

static int visit(void *p, const grid_point *pt, const char *pruned_reason) {
    visit_ctx *ctx = p;
    const grid_file *g = ctx->grid;
    CHECK(pt->family >= g->families && pt->family < g->families + g->family_count);
    CHECK(pt->dtype >= 0 && pt->dtype < GRID_MAX_DTYPES);
    check_terminated(pt->name, sizeof pt->name);
    if (pruned_reason) {
        CHECK(strlen(pruned_reason) < GRID_MAX_MESSAGE);
    } else {
        /* A survivor's name is its template with {dtype} filled in: never empty. */
        CHECK(pt->name[0] != '\0');
    }
    for (int i = 0; i < pt->family->param_count; i++) {
        const grid_param *param = &pt->family->params[i];
        int found = 0;
        for (int k = 0; k < param->value_count; k++) found |= param->values[k] == pt->param_values[i];
        CHECK(found);
    }
    ctx->points++;
    ctx->chars += ctx->cost_per_point[pt->family - g->families];
    return ctx->points >= MAX_POINTS || ctx->chars >= MAX_EXPR_CHARS;
}

/* The scope of a family's first grid point (lets as 0), or with every value replaced by
 * `value` when override is set. */
static void family_scope(const grid_family *f, int override, int64_t value, grid_scope *s) {
    memset(s, 0, sizeof *s);
    s->names[s->count] = "DTYPE_BYTES";
    s->values[s->count++] = override ? value : 2;
    for (int i = 0; i < f->param_count; i++) {
        s->names[s->count] = f->params[i].name;
        s->values[s->count++] = override ? value : f->params[i].values[0];
    }
    for (int i = 0; i < f->let_count; i++) {
        s->names[s->count] = f->lets[i].name;
        s->values[s->count++] = override ? value : 0;
    }
}

/* Checks that hold for any expression text under any scopes a and b with the same names. */
static void eval_checks(const char *text, const grid_scope *a, const grid_scope *b) {
    char err[256];
    memset(err, 0x7f, sizeof err);
    int64_t v = 0x5a5a;
    int r = grid_eval(text, a, &v, err, sizeof err);
    if (r != 0) {
        CHECK(r == -1);
        check_terminated(err, sizeof err);
        CHECK(err[0] != '\0');
        CHECK(v == 0x5a5a); /* *value untouched on failure */
        return;
    }
    /* The text parsed completely under a, so it is well formed. Parenthesized, its value does
     * not change; on the untaken side of && or || it is parsed but not evaluated, so under b
     * (other values: divisions by zero) those must succeed too. */
    char wrapped[GRID_MAX_EXPR * 2 + 64];
    const char *forms[] = {"(%s)", "0 && (%s)", "1 || (%s)", "(%s) * 0 + 7"};
    const int64_t want[] = {v, 0, 1, 7};
    for (int i = 0; i < 4; i++) {
        snprintf(wrapped, sizeof wrapped, forms[i], text);
        const grid_scope *scope = i == 0 || i == 3 ? a : b;
        int64_t w = 0;
        r = grid_eval(wrapped, scope, &w, err, sizeof err);
        if (r != 0 && strstr(err, "nested too deeply")) continue; /* one more level of () */
        if (r != 0) {
            fprintf(stderr, "fuzz_grid: \"%s\" evaluates under scope a, but \"%s\" fails: %s\n",
                    text, wrapped, err);
            abort();
        }
        if (w != want[i]) {
            fprintf(stderr, "fuzz_grid: \"%s\" gives %lld, want %lld\n", wrapped, (long long)w,
                    (long long)want[i]);
            abort();
        }
    }
}

static void family_checks(const grid_family *f, int64_t extreme) {
    grid_scope first, other;
    family_scope(f, 0, 0, &first);
    family_scope(f, 1, extreme, &other);
    for (int i = 0; i < f->let_count; i++) eval_checks(f->lets[i].expr.text, &first, &other);
    for (int i = 0; i < f->require_count; i++) eval_checks(f->requires[i].expr.text, &first, &other);
    for (int i = 0; i < GRID_FIELD_COUNT; i++)
        if (f->set_present[i]) eval_checks(f->sets[i].text, &first, &other);
}

static long family_cost(const grid_family *f) {
    long chars = 1;
    for (int i = 0; i < f->let_count; i++) chars += (long)strlen(f->lets[i].expr.text);
    for (int i = 0; i < f->require_count; i++) chars += (long)strlen(f->requires[i].expr.text);
    for (int i = 0; i < GRID_FIELD_COUNT; i++)
        if (f->set_present[i]) chars += (long)strlen(f->sets[i].text);
    return chars;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 256 * 1024) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    /* The whole input as one expression, with a few names bound to edge values. */
    {
        grid_scope s = {.count = 0};
        const char *names[] = {"A", "B", "Z", "M", "N"};
        const int64_t values[] = {3, 4, 0, INT64_MIN, -1};
        for (int i = 0; i < 5; i++) {
            s.names[s.count] = names[i];
            s.values[s.count++] = values[i];
        }
        grid_scope zero = s;
        for (int i = 0; i < zero.count; i++) zero.values[i] = 0;
        if (!strchr(text, '\n') && size < GRID_MAX_EXPR) eval_checks(text, &s, &zero);
        else {
            int64_t v;
            char err[64]; /* small: messages must truncate safely */
            if (grid_eval(text, &s, &v, err, sizeof err)) check_terminated(err, sizeof err);
        }
    }

    static grid_file grid;
    char err[GRID_MAX_MESSAGE];
    memset(err, 0x7f, sizeof err);
    if (grid_parse("fuzz.grid", text, &grid, err, sizeof err) != 0) {
        check_terminated(err, sizeof err);
        CHECK(strncmp(err, "fuzz.grid:", 10) == 0);
        free(text);
        return 0;
    }
    CHECK(grid.family_count >= 1 && grid.family_count <= GRID_MAX_FAMILIES);
    CHECK(grid.dtype_count >= 1 && grid.dtype_count <= GRID_MAX_DTYPES);

    /* Expressions under the first point and under edge values. */
    const int64_t extremes[] = {0, -1, INT64_MIN, INT64_MAX};
    for (int f = 0; f < grid.family_count; f++)
        for (int e = 0; e < 4; e++) family_checks(&grid.families[f], extremes[e]);

    /* Expansion, when the grid is small enough. */
    double product = 0;
    visit_ctx ctx = {.grid = &grid};
    for (int f = 0; f < grid.family_count; f++) {
        double p = 1;
        for (int i = 0; i < grid.families[f].param_count; i++)
            p *= grid.families[f].params[i].value_count;
        product += p;
        ctx.cost_per_point[f] = family_cost(&grid.families[f]);
    }
    product *= grid.dtype_count;
    if (product <= MAX_PRODUCT) {
        memset(err, 0x7f, sizeof err);
        int r = grid_expand(&grid, visit, &ctx, err, sizeof err);
        CHECK(r == 0 || r == -1);
        if (r) {
            check_terminated(err, sizeof err);
            CHECK(strncmp(err, "fuzz.grid:", 10) == 0);
        } else if (ctx.points < MAX_POINTS && ctx.chars < MAX_EXPR_CHARS) {
            CHECK((double)ctx.points == product); /* every point visited once */
        }
    }
    free(text);
    return 0;
}
