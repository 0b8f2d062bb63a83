/* Grid files: a line-based format (docs/tile-language.md, "Grids"). */
#include "grid.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const grid_field_names[GRID_FIELD_COUNT] = {
    "threads", "rows_per_program", "cluster", "smem", "max_cols", "align", "arch_min", "arch_max",
    "persistent", "features", "lean", "column_tile",
};
const int64_t grid_field_defaults[GRID_FIELD_COUNT] = {128, 1, 1, 0, 0, 1, 80, 0, 0, 0, 0, 0};

const char *const grid_dtype_names[GRID_MAX_DTYPES] = {"f32", "f16", "bf16"};
const int grid_dtype_bytes[GRID_MAX_DTYPES] = {4, 2, 2};

/* ---------------------------------------------------------------- expressions */

typedef struct expr_parser {
    const char *at;
    const grid_scope *scope;
    char *err;
    size_t err_size;
    int failed;
    int skipping; /* inside the untaken side of && or ||: parse, but do not fail on values */
} expr_parser;

static void expr_fail(expr_parser *p, const char *fmt, ...) {
    if (p->failed) return;
    p->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->err_size, fmt, ap);
    va_end(ap);
}

static void skip_space(expr_parser *p) {
    while (*p->at == ' ' || *p->at == '\t') p->at++;
}

static int accept(expr_parser *p, const char *token) {
    skip_space(p);
    size_t n = strlen(token);
    if (strncmp(p->at, token, n) != 0) return 0;
    /* "<" must not swallow "<=", "=" is only part of "==" */
    if (n == 1 && (token[0] == '<' || token[0] == '>' || token[0] == '!') && p->at[1] == '=')
        return 0;
    if (n == 1 && (token[0] == '|' || token[0] == '&') && p->at[1] == token[0]) return 0;
    p->at += n;
    return 1;
}

static int64_t parse_or(expr_parser *p, int depth);

/* Wrapping arithmetic: the grid's numbers are small, and a fuzzed grid must not trap. */
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }

static int64_t parse_primary(expr_parser *p, int depth) {
    skip_space(p);
    if (depth > 64) {
        expr_fail(p, "expression nested too deeply");
        return 0;
    }
    if (accept(p, "(")) {
        int64_t v = parse_or(p, depth + 1);
        if (!accept(p, ")")) expr_fail(p, "expected ')' at '%s'", p->at);
        return v;
    }
    if (accept(p, "-")) return wrap_sub(0, parse_primary(p, depth + 1));
    if (accept(p, "!")) return !parse_primary(p, depth + 1);
    if (isdigit((unsigned char)*p->at)) {
        errno = 0;
        char *end;
        long long v = strtoll(p->at, &end, 10);
        if (errno) expr_fail(p, "number out of range at '%s'", p->at);
        p->at = end;
        return v;
    }
    if (isalpha((unsigned char)*p->at) || *p->at == '_') {
        const char *start = p->at;
        while (isalnum((unsigned char)*p->at) || *p->at == '_') p->at++;
        size_t n = (size_t)(p->at - start);
        for (int i = 0; i < p->scope->count; i++)
            if (strlen(p->scope->names[i]) == n && strncmp(p->scope->names[i], start, n) == 0)
                return p->scope->values[i];
        expr_fail(p, "unknown name '%.*s'", (int)n, start);
        return 0;
    }
    expr_fail(p, "expected a number, a name or '(' at '%s'", p->at);
    return 0;
}


static int64_t parse_mul(expr_parser *p, int depth) {
    int64_t v = parse_primary(p, depth);
    for (;;) {
        int op = accept(p, "*") ? '*' : accept(p, "/") ? '/' : accept(p, "%") ? '%' : 0;
        if (!op) return v;
        int64_t r = parse_primary(p, depth);
        if (op == '*') {
            v = wrap_mul(v, r);
        } else if (r == 0 || (v == INT64_MIN && r == -1)) {
            /* On the untaken side of && or || the value is unused: keep parsing the rest of
             * the term ("B / A * 2"), which returning here would leave unparsed. */
            if (p->skipping) {
                v = 0;
                continue;
            }
            expr_fail(p, "division by zero or overflow");
            return 0;
        } else {
            v = op == '/' ? v / r : v % r;
        }
    }
}

static int64_t parse_add(expr_parser *p, int depth) {
    int64_t v = parse_mul(p, depth);
    for (;;) {
        if (accept(p, "+")) v = wrap_add(v, parse_mul(p, depth));
        else if (accept(p, "-")) v = wrap_sub(v, parse_mul(p, depth));
        else return v;
    }
}

/* Relational operators bind tighter than equality ones, as in C. */
static int64_t parse_rel(expr_parser *p, int depth) {
    int64_t v = parse_add(p, depth);
    for (;;) {
        if (accept(p, "<=")) v = v <= parse_add(p, depth);
        else if (accept(p, ">=")) v = v >= parse_add(p, depth);
        else if (accept(p, "<")) v = v < parse_add(p, depth);
        else if (accept(p, ">")) v = v > parse_add(p, depth);
        else return v;
    }
}

static int64_t parse_eq(expr_parser *p, int depth) {
    int64_t v = parse_rel(p, depth);
    for (;;) {
        if (accept(p, "==")) v = v == parse_rel(p, depth);
        else if (accept(p, "!=")) v = v != parse_rel(p, depth);
        else return v;
    }
}

/* && and || short-circuit as in C: the untaken side is parsed, not evaluated for errors. */
static int64_t parse_and(expr_parser *p, int depth) {
    int64_t v = parse_eq(p, depth);
    while (accept(p, "&&")) {
        int outer = p->skipping;
        p->skipping |= !v;
        int64_t r = parse_eq(p, depth);
        p->skipping = outer;
        v = v && r;
    }
    return v;
}

static int64_t parse_or(expr_parser *p, int depth) {
    int64_t v = parse_and(p, depth);
    while (accept(p, "||")) {
        int outer = p->skipping;
        p->skipping |= v != 0;
        int64_t r = parse_and(p, depth);
        p->skipping = outer;
        v = v || r;
    }
    return v;
}

int grid_eval(const char *text, const grid_scope *scope, int64_t *value, char *err,
              size_t err_size) {
    expr_parser p = {text, scope, err, err_size, 0, 0};
    int64_t v = parse_or(&p, 0);
    skip_space(&p);
    if (!p.failed && *p.at) expr_fail(&p, "unexpected '%s'", p.at);
    if (p.failed) return -1;
    *value = v;
    return 0;
}

/* ---------------------------------------------------------------- parsing */

typedef struct line_cursor {
    const char *path;
    int line;
    char *err;
    size_t err_size;
} line_cursor;

static int fail_at(const line_cursor *c, const char *fmt, ...) {
    int n = snprintf(c->err, c->err_size, "%s:%d: ", c->path, c->line);
    if (n < 0) n = 0;
    if ((size_t)n < c->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->err_size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int is_identifier(const char *s) {
    if (!(isalpha((unsigned char)*s) || *s == '_')) return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_')) return 0;
    return 1;
}

/* Splits off the next whitespace-separated word; returns NULL at the end of the line. */
static char *next_word(char **cursor) {
    char *s = *cursor;
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) return NULL;
    char *start = s;
    while (*s && *s != ' ' && *s != '\t') s++;
    if (*s) *s++ = '\0';
    *cursor = s;
    return start;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = '\0';
    return s;
}

static int copy_checked(const line_cursor *c, char *dst, size_t dst_size, const char *src,
                        const char *what) {
    if (strlen(src) >= dst_size) return fail_at(c, "%s too long (at most %zu characters)", what,
                                                dst_size - 1);
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

static int name_taken(const grid_family *f, const char *name) {
    if (!strcmp(name, "DTYPE_BYTES")) return 1;
    for (int i = 0; i < f->param_count; i++)
        if (!strcmp(f->params[i].name, name)) return 1;
    for (int i = 0; i < f->let_count; i++)
        if (!strcmp(f->lets[i].name, name)) return 1;
    return 0;
}

static int parse_family_line(const line_cursor *c, grid_family *f, const char *keyword,
                             char *rest) {
    if (!strcmp(keyword, "kernel")) {
        char *name = next_word(&rest);
        if (!name || next_word(&rest) || !is_identifier(name))
            return fail_at(c, "'kernel' takes one identifier");
        return copy_checked(c, f->kernel, sizeof f->kernel, name, "kernel name");
    }
    if (!strcmp(keyword, "param")) {
        char *name = next_word(&rest);
        if (!name || !is_identifier(name)) return fail_at(c, "'param' needs a name");
        if (name_taken(f, name)) return fail_at(c, "'%s' is already defined", name);
        if (f->param_count == GRID_MAX_PARAMS)
            return fail_at(c, "too many params (at most %d)", GRID_MAX_PARAMS);
        grid_param *p = &f->params[f->param_count];
        memset(p, 0, sizeof *p);
        if (copy_checked(c, p->name, sizeof p->name, name, "param name")) return -1;
        for (char *w; (w = next_word(&rest));) {
            if (p->value_count == GRID_MAX_VALUES)
                return fail_at(c, "too many values for '%s' (at most %d)", name, GRID_MAX_VALUES);
            char *end;
            errno = 0;
            long long v = strtoll(w, &end, 10);
            if (*end || errno || v < 0 || v > 1000000000)
                return fail_at(c, "'%s' is not an integer in 0..1e9", w);
            for (int i = 0; i < p->value_count; i++)
                if (p->values[i] == v) return fail_at(c, "value %lld repeated", v);
            p->values[p->value_count++] = v;
        }
        if (!p->value_count) return fail_at(c, "param '%s' has no values", name);
        f->param_count++;
        return 0;
    }
    if (!strcmp(keyword, "let")) {
        char *name = next_word(&rest);
        char *eq = next_word(&rest);
        if (!name || !is_identifier(name) || !eq || strcmp(eq, "="))
            return fail_at(c, "expected 'let NAME = EXPR'");
        if (name_taken(f, name)) return fail_at(c, "'%s' is already defined", name);
        if (f->let_count == GRID_MAX_LETS)
            return fail_at(c, "too many lets (at most %d)", GRID_MAX_LETS);
        grid_let *l = &f->lets[f->let_count];
        if (copy_checked(c, l->name, sizeof l->name, name, "let name")) return -1;
        char *expr = trim(rest);
        if (!*expr) return fail_at(c, "'let %s' has no expression", name);
        if (copy_checked(c, l->expr.text, sizeof l->expr.text, expr, "expression")) return -1;
        l->expr.line = c->line;
        f->let_count++;
        return 0;
    }
    if (!strcmp(keyword, "require")) {
        char *colon = strchr(rest, ':'); /* expressions have no ternary */
        if (!colon) return fail_at(c, "expected 'require EXPR : reason'");
        *colon = '\0';
        char *expr = trim(rest), *reason = trim(colon + 1);
        if (!*expr || !*reason) return fail_at(c, "'require' needs an expression and a reason");
        if (f->require_count == GRID_MAX_REQUIRES)
            return fail_at(c, "too many requires (at most %d)", GRID_MAX_REQUIRES);
        grid_require *r = &f->requires[f->require_count];
        if (copy_checked(c, r->expr.text, sizeof r->expr.text, expr, "expression") ||
            copy_checked(c, r->reason, sizeof r->reason, reason, "reason"))
            return -1;
        r->expr.line = c->line;
        f->require_count++;
        return 0;
    }
    if (!strcmp(keyword, "set")) {
        char *field = next_word(&rest);
        char *eq = next_word(&rest);
        if (!field || !eq || strcmp(eq, "=")) return fail_at(c, "expected 'set FIELD = EXPR'");
        int index = -1;
        for (int i = 0; i < GRID_FIELD_COUNT; i++)
            if (!strcmp(grid_field_names[i], field)) index = i;
        if (index < 0) return fail_at(c, "unknown field '%s'", field);
        if (f->set_present[index]) return fail_at(c, "field '%s' set twice", field);
        char *expr = trim(rest);
        if (!*expr) return fail_at(c, "'set %s' has no expression", field);
        if (copy_checked(c, f->sets[index].text, sizeof f->sets[index].text, expr, "expression"))
            return -1;
        f->sets[index].line = c->line;
        f->set_present[index] = 1;
        return 0;
    }
    if (!strcmp(keyword, "name")) {
        char *tmpl = trim(rest);
        if (!*tmpl || strchr(tmpl, ' ')) return fail_at(c, "'name' takes one template word");
        if (f->name_template[0]) return fail_at(c, "'name' given twice");
        f->name_line = c->line;
        return copy_checked(c, f->name_template, sizeof f->name_template, tmpl, "name template");
    }
    return fail_at(c, "unknown keyword '%s'", keyword);
}

/* Checks a name template: {op}, {dtype} and {PARAM} only, and every param named once. */
static int check_template(const line_cursor *c, const grid_family *f) {
    int seen[GRID_MAX_PARAMS] = {0};
    for (const char *s = f->name_template; *s; s++) {
        if (*s == '}') return fail_at(c, "unmatched '}' in name template");
        if (*s != '{') {
            if (!(isalnum((unsigned char)*s) || *s == '_'))
                return fail_at(c, "name template has '%c': use letters, digits and '_'", *s);
            continue;
        }
        const char *end = strchr(s, '}');
        if (!end) return fail_at(c, "unmatched '{' in name template");
        size_t n = (size_t)(end - s - 1);
        int found = (n == 2 && !strncmp(s + 1, "op", 2)) || (n == 5 && !strncmp(s + 1, "dtype", 5));
        for (int i = 0; i < f->param_count; i++)
            if (strlen(f->params[i].name) == n && !strncmp(f->params[i].name, s + 1, n)) {
                found = 1;
                seen[i] = 1;
            }
        if (!found) return fail_at(c, "name template names unknown '{%.*s}'", (int)n, s + 1);
        s = end;
    }
    if (!strstr(f->name_template, "{dtype}"))
        return fail_at(c, "name template must contain {dtype}");
    for (int i = 0; i < f->param_count; i++)
        if (!seen[i] && f->params[i].value_count > 1)
            return fail_at(c, "name template omits '%s', which takes several values",
                           f->params[i].name);
    return 0;
}

static int finish_family(const line_cursor *c, const grid_family *f) {
    line_cursor at = *c;
    at.line = f->line;
    if (!f->kernel[0]) return fail_at(&at, "family '%s' has no 'kernel' line", f->name);
    if (!f->param_count) return fail_at(&at, "family '%s' has no params", f->name);
    if (!f->name_template[0]) return fail_at(&at, "family '%s' has no 'name' line", f->name);
    at.line = f->name_line;
    return check_template(&at, f);
}

int grid_parse(const char *path, const char *text, grid_file *grid, char *err, size_t err_size) {
    memset(grid, 0, sizeof *grid);
    line_cursor c = {path, 0, err, err_size};
    if (strlen(path) >= sizeof grid->path) return fail_at(&c, "path too long");
    memcpy(grid->path, path, strlen(path) + 1);
    grid_family *family = NULL;
    const char *s = text;
    char line[2048];
    while (*s) {
        c.line++;
        const char *end = strchr(s, '\n');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n >= sizeof line) return fail_at(&c, "line too long");
        memcpy(line, s, n);
        line[n] = '\0';
        s += n + (end ? 1 : 0);
        if (memchr(line, '\0', n) != NULL && strlen(line) != n)
            return fail_at(&c, "NUL byte in line");
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *rest = trim(line);
        char *keyword = next_word(&rest);
        if (!keyword) continue;
        if (!strcmp(keyword, "op") || !strcmp(keyword, "source")) {
            if (family) return fail_at(&c, "'%s' must come before the first family", keyword);
            char *value = next_word(&rest);
            if (!value || next_word(&rest)) return fail_at(&c, "'%s' takes one word", keyword);
            if (!strcmp(keyword, "op")) {
                if (!is_identifier(value)) return fail_at(&c, "op must be an identifier");
                if (copy_checked(&c, grid->op, sizeof grid->op, value, "op")) return -1;
            } else if (copy_checked(&c, grid->source, sizeof grid->source, value, "source")) {
                return -1;
            }
        } else if (!strcmp(keyword, "dtypes")) {
            if (family) return fail_at(&c, "'dtypes' must come before the first family");
            if (grid->dtype_count) return fail_at(&c, "'dtypes' given twice");
            for (char *w; (w = next_word(&rest));) {
                int d = -1;
                for (int i = 0; i < GRID_MAX_DTYPES; i++)
                    if (!strcmp(w, grid_dtype_names[i])) d = i;
                if (d < 0) return fail_at(&c, "unknown dtype '%s' (f32, f16, bf16)", w);
                for (int i = 0; i < grid->dtype_count; i++)
                    if (grid->dtypes[i] == d) return fail_at(&c, "dtype '%s' repeated", w);
                grid->dtypes[grid->dtype_count++] = d;
            }
            if (!grid->dtype_count) return fail_at(&c, "'dtypes' lists none");
        } else if (!strcmp(keyword, "family")) {
            if (family && finish_family(&c, family)) return -1;
            char *name = next_word(&rest);
            if (!name || next_word(&rest) || !is_identifier(name))
                return fail_at(&c, "'family' takes one identifier");
            for (int i = 0; i < grid->family_count; i++)
                if (!strcmp(grid->families[i].name, name))
                    return fail_at(&c, "family '%s' defined twice", name);
            if (grid->family_count == GRID_MAX_FAMILIES)
                return fail_at(&c, "too many families (at most %d)", GRID_MAX_FAMILIES);
            family = &grid->families[grid->family_count++];
            memset(family, 0, sizeof *family);
            family->line = c.line;
            if (copy_checked(&c, family->name, sizeof family->name, name, "family name")) return -1;
        } else {
            if (!family) return fail_at(&c, "'%s' outside a family", keyword);
            if (parse_family_line(&c, family, keyword, rest)) return -1;
        }
    }
    c.line++;
    if (!grid->op[0]) return fail_at(&c, "no 'op' line");
    if (!grid->source[0]) return fail_at(&c, "no 'source' line");
    if (!grid->dtype_count) return fail_at(&c, "no 'dtypes' line");
    if (!family) return fail_at(&c, "no family");
    return finish_family(&c, family);
}

/* ---------------------------------------------------------------- expansion */

static int eval_at(const grid_file *grid, const grid_expr *e, const grid_scope *scope,
                   int64_t *value, char *err, size_t err_size) {
    char detail[256];
    if (grid_eval(e->text, scope, value, detail, sizeof detail) == 0) return 0;
    snprintf(err, err_size, "%s:%d: %s", grid->path, e->line, detail);
    return -1;
}

static void render_name(const grid_file *grid, const grid_family *f, grid_point *pt) {
    char *out = pt->name;
    size_t room = sizeof pt->name;
    for (const char *s = f->name_template; *s && room > 1; s++) {
        if (*s != '{') {
            *out++ = *s;
            room--;
            continue;
        }
        const char *end = strchr(s, '}');
        size_t n = (size_t)(end - s - 1);
        int w = 0;
        if (n == 2 && !strncmp(s + 1, "op", 2)) {
            w = snprintf(out, room, "%s", grid->op);
        } else if (n == 5 && !strncmp(s + 1, "dtype", 5)) {
            w = snprintf(out, room, "%s", grid_dtype_names[pt->dtype]);
        } else {
            for (int i = 0; i < f->param_count; i++)
                if (strlen(f->params[i].name) == n && !strncmp(f->params[i].name, s + 1, n))
                    w = snprintf(out, room, "%lld", (long long)pt->param_values[i]);
        }
        if (w < 0 || (size_t)w >= room) break;
        out += w;
        room -= (size_t)w;
        s = end;
    }
    *out = '\0';
}

static int expand_family(const grid_file *grid, const grid_family *f, int dtype,
                         grid_visit_fn visit, void *ctx, char *err, size_t err_size) {
    int index[GRID_MAX_PARAMS] = {0};
    for (;;) {
        grid_point pt;
        memset(&pt, 0, sizeof pt);
        pt.family = f;
        pt.dtype = dtype;
        grid_scope scope = {.count = 0};
        scope.names[scope.count] = "DTYPE_BYTES";
        scope.values[scope.count++] = grid_dtype_bytes[dtype];
        for (int i = 0; i < f->param_count; i++) {
            pt.param_values[i] = f->params[i].values[index[i]];
            scope.names[scope.count] = f->params[i].name;
            scope.values[scope.count++] = pt.param_values[i];
        }
        /* A let that divides by zero prunes the point rather than failing the build: lets
         * are often ratios that only make sense where the requires hold. */
        const char *pruned = NULL;
        for (int i = 0; i < f->let_count && !pruned; i++) {
            int64_t v = 0;
            char detail[256];
            if (grid_eval(f->lets[i].expr.text, &scope, &v, detail, sizeof detail)) {
                if (strstr(detail, "division by zero")) {
                    pruned = "a 'let' divides by zero";
                } else {
                    snprintf(err, err_size, "%s:%d: %s", grid->path, f->lets[i].expr.line,
                             detail);
                    return -1;
                }
            }
            scope.names[scope.count] = f->lets[i].name;
            scope.values[scope.count++] = v;
        }
        for (int i = 0; i < f->require_count && !pruned; i++) {
            int64_t ok;
            if (eval_at(grid, &f->requires[i].expr, &scope, &ok, err, err_size)) return -1;
            if (!ok) pruned = f->requires[i].reason;
        }
        if (!pruned) {
            for (int i = 0; i < GRID_FIELD_COUNT; i++) {
                pt.fields[i] = grid_field_defaults[i];
                if (f->set_present[i] &&
                    eval_at(grid, &f->sets[i], &scope, &pt.fields[i], err, err_size))
                    return -1;
            }
        }
        render_name(grid, f, &pt);
        if (visit(ctx, &pt, pruned)) return 1;
        int k = f->param_count - 1;
        while (k >= 0 && ++index[k] == f->params[k].value_count) index[k--] = 0;
        if (k < 0) return 0;
    }
}

int grid_expand(const grid_file *grid, grid_visit_fn visit, void *ctx, char *err,
                size_t err_size) {
    for (int d = 0; d < grid->dtype_count; d++)
        for (int f = 0; f < grid->family_count; f++) {
            int r = expand_family(grid, &grid->families[f], grid->dtypes[d], visit, ctx, err,
                                  err_size);
            if (r < 0) return -1;
            if (r > 0) return 0; /* the visitor asked to stop */
        }
    return 0;
}
