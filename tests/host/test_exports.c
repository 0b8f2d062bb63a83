/* libfusedops.so exports exactly the tile_* functions that include/fusedops.h declares
 * (TILE_API ... tile_xxx(...)): nothing internal leaks, and nothing declared is missing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAMES 256

typedef struct names {
    char name[MAX_NAMES][128];
    int count;
} names;

static int has(const names *n, const char *s) {
    for (int i = 0; i < n->count; i++)
        if (!strcmp(n->name[i], s)) return 1;
    return 0;
}

static void add(names *n, const char *s) {
    assert_true(n->count < MAX_NAMES);
    assert_true(strlen(s) < sizeof n->name[0]);
    if (!has(n, s)) strcpy(n->name[n->count++], s);
}

/* Functions the header declares: lines that start with TILE_API (the #define does not). */
static void header_functions(names *out) {
    FILE *f = fopen(FUSEDOPS_HEADER, "r");
    assert_non_null(f);
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        const char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        if (strncmp(s, "TILE_API", 8) || !isspace((unsigned char)s[8])) continue;
        const char *paren = strchr(s, '(');
        assert_non_null(paren); /* every declaration names its function on the TILE_API line */
        const char *end = paren;
        while (end > s && isspace((unsigned char)end[-1])) end--;
        const char *start = end;
        while (start > s && (isalnum((unsigned char)start[-1]) || start[-1] == '_')) start--;
        char name[128];
        size_t n = (size_t)(end - start);
        assert_true(n > 0 && n < sizeof name);
        memcpy(name, start, n);
        name[n] = '\0';
        add(out, name);
    }
    fclose(f);
}

/* Defined dynamic symbols of the library, as nm -D --defined-only lists them. */
static void library_symbols(names *out, names *types) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' -D --defined-only '%s'", FUSEDOPS_NM, FUSEDOPS_LIB);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[1024];
    while (fgets(line, sizeof line, p)) {
        /* "ADDRESS TYPE NAME[@VERSION]" */
        char addr[64], type[8], name[512];
        if (sscanf(line, "%63s %7s %511s", addr, type, name) != 3) continue;
        char *at = strchr(name, '@');
        if (at) *at = '\0';
        add(out, name);
        add(types, type);
    }
    assert_int_equal(pclose(p), 0);
}

static void test_exports_match_header(void **state) {
    (void)state;
    static names declared, exported, types;
    memset(&declared, 0, sizeof declared);
    memset(&exported, 0, sizeof exported);
    memset(&types, 0, sizeof types);
    header_functions(&declared);
    library_symbols(&exported, &types);
    assert_true(declared.count >= 10);
    assert_true(has(&declared, "tile_softmax"));
    assert_true(has(&declared, "tile_version"));

    int bad = 0;
    for (int i = 0; i < declared.count; i++) {
        if (strncmp(declared.name[i], "tile_", 5)) {
            print_error("the header declares %s, which does not start with tile_\n",
                        declared.name[i]);
            bad++;
        }
        if (!has(&exported, declared.name[i])) {
            print_error("%s is declared but not exported\n", declared.name[i]);
            bad++;
        }
    }
    for (int i = 0; i < exported.count; i++)
        if (!has(&declared, exported.name[i])) {
            print_error("%s is exported but not declared in fusedops.h\n", exported.name[i]);
            bad++;
        }
    /* functions only: no exported data */
    for (int i = 0; i < types.count; i++)
        if (strcmp(types.name[i], "T")) {
            print_error("an exported symbol has nm type %s (functions only)\n", types.name[i]);
            bad++;
        }
    assert_int_equal(bad, 0);
    assert_int_equal(exported.count, declared.count);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exports_match_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
