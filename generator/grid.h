/* Grid files: parsing, integer expressions, and expansion into grid points. */
#ifndef FUSEDOPS_GRID_H
#define FUSEDOPS_GRID_H

#include <stddef.h>
#include <stdint.h>

#define GRID_MAX_NAME 64
#define GRID_MAX_PARAMS 12
#define GRID_MAX_VALUES 24
#define GRID_MAX_LETS 12
#define GRID_MAX_REQUIRES 32
#define GRID_MAX_SETS 12
#define GRID_MAX_FAMILIES 16
#define GRID_MAX_DTYPES 3
#define GRID_MAX_EXPR 512
#define GRID_MAX_MESSAGE 512

/* The registry fields a family sets with `set FIELD = EXPR`; unset ones take their default. */
typedef enum grid_field {
    GRID_FIELD_THREADS,
    GRID_FIELD_ROWS_PER_PROGRAM,
    GRID_FIELD_CLUSTER,
    GRID_FIELD_SMEM,
    GRID_FIELD_MAX_COLS,
    GRID_FIELD_ALIGN,
    GRID_FIELD_ARCH_MIN,
    GRID_FIELD_ARCH_MAX,
    GRID_FIELD_PERSISTENT,
    GRID_FIELD_FEATURES,
    GRID_FIELD_LEAN,
    GRID_FIELD_COLUMN_TILE,
    GRID_FIELD_COUNT
} grid_field;

extern const char *const grid_field_names[GRID_FIELD_COUNT];
extern const int64_t grid_field_defaults[GRID_FIELD_COUNT];

typedef struct grid_expr {
    char text[GRID_MAX_EXPR];
    int line;
} grid_expr;

typedef struct grid_param {
    char name[GRID_MAX_NAME];
    int64_t values[GRID_MAX_VALUES];
    int value_count;
} grid_param;

typedef struct grid_let {
    char name[GRID_MAX_NAME];
    grid_expr expr;
} grid_let;

typedef struct grid_require {
    grid_expr expr;
    char reason[GRID_MAX_MESSAGE];
} grid_require;

typedef struct grid_family {
    char name[GRID_MAX_NAME];
    char kernel[GRID_MAX_NAME];
    int line;
    grid_param params[GRID_MAX_PARAMS];
    int param_count;
    grid_let lets[GRID_MAX_LETS];
    int let_count;
    grid_require requires[GRID_MAX_REQUIRES];
    int require_count;
    grid_expr sets[GRID_FIELD_COUNT];
    int set_present[GRID_FIELD_COUNT];
    char name_template[GRID_MAX_EXPR];
    int name_line;
} grid_family;

typedef struct grid_file {
    char path[512];
    char op[GRID_MAX_NAME];
    char source[256];
    int dtype_count;
    int dtypes[GRID_MAX_DTYPES]; /* tile_dtype values */
    grid_family families[GRID_MAX_FAMILIES];
    int family_count;
} grid_file;

/* Dtype names as grid files and variant names spell them, indexed by tile_dtype. */
extern const char *const grid_dtype_names[GRID_MAX_DTYPES];
extern const int grid_dtype_bytes[GRID_MAX_DTYPES];

/* Parses `text` (the contents of `path`) into *grid. On error returns -1 and writes
 * "path:line: message" into err. */
int grid_parse(const char *path, const char *text, grid_file *grid, char *err, size_t err_size);

/* Variables visible to an expression: a grid point's parameters, lets and built-ins. */
typedef struct grid_scope {
    const char *names[GRID_MAX_PARAMS + GRID_MAX_LETS + 4];
    int64_t values[GRID_MAX_PARAMS + GRID_MAX_LETS + 4];
    int count;
} grid_scope;

/* Evaluates an integer expression (C operators || && == != < <= > >= + - * / % ! unary -,
 * parentheses, names from scope). Returns -1 with "message" in err on a syntax error, an
 * unknown name or a division by zero. */
int grid_eval(const char *text, const grid_scope *scope, int64_t *value, char *err,
              size_t err_size);

/* One expanded grid point. */
typedef struct grid_point {
    const grid_family *family;
    int dtype;
    int64_t param_values[GRID_MAX_PARAMS];
    int64_t fields[GRID_FIELD_COUNT];
    char name[160];
} grid_point;

/* Called for every point of every family and dtype, in a fixed order. `pruned_reason` is NULL
 * for a survivor. Return non-zero to stop. */
typedef int (*grid_visit_fn)(void *ctx, const grid_point *point, const char *pruned_reason);

/* Expands every family over dtypes and parameter values. Returns -1 with "path:line: message"
 * in err on an expression error. */
int grid_expand(const grid_file *grid, grid_visit_fn visit, void *ctx, char *err,
                size_t err_size);

#endif
