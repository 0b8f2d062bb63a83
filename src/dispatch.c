/* Dispatch: eligibility by arch and shape predicate, then the tuned table for the arch
 * (exact bucket, then nearest), then a cost heuristic. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

int tile_variant_eligible(const tile_variant *v, const tile_problem *p, const char **why) {
    const char *reason = NULL;
    if (strcmp(v->op, p->op) || v->dtype != p->dtype) reason = "another op or dtype";
    else if (p->arch < v->arch_min || (v->arch_max && p->arch > v->arch_max))
        reason = "arch";
    else if (v->max_cols && p->cols > v->max_cols) reason = "cols";
    else if (p->align % v->align_bytes) reason = "alignment";
    if (why) *why = reason;
    return reason == NULL;
}

static int32_t floor_log2(int64_t x) {
    int32_t k = 0;
    while (x > 1) {
        x >>= 1;
        k++;
    }
    return k;
}
static int32_t ceil_log2(int64_t x) { return x <= 1 ? 0 : floor_log2(x - 1) + 1; }

/* The tuned table's bucket of a shape: rows rounded down, cols up to a power of two (a
 * variant's capacity is a power of two of columns). */
static void shape_bucket(const tile_problem *p, int32_t *rows_log2, int32_t *cols_log2) {
    *rows_log2 = floor_log2(p->rows);
    *cols_log2 = ceil_log2(p->cols);
}

/* Heuristic cost of a row-wise variant (lower is better): how many times the ideal traffic
 * it moves, times how badly it fills the GPU. Used only where no tuned entry applies. */
static double heuristic_cost(const tile_variant *v, const tile_problem *p) {
    const int32_t sms = p->sm_count > 0 ? p->sm_count : 132;
    double cost;
    int64_t programs;
    if (v->max_cols) {
        /* One pass: lanes beyond cols are wasted work; clusters cost a little sync. */
        double capacity = (double)v->max_cols;
        double fill = (double)p->cols / capacity;
        cost = 1.0 / (fill < 1.0 ? fill : 1.0);
        if (v->cluster > 1) cost *= 1.05;
        programs = (p->rows + v->rows_per_program - 1) / v->rows_per_program * v->cluster;
    } else {
        /* Two passes: the second read mostly hits L2; charge 30% more traffic. */
        cost = 1.3;
        programs = p->rows * v->cluster;
        /* Tile width beyond the row wastes lanes too. */
        int64_t tile = (int64_t)(v->threads * 8) * v->cluster;
        if (p->cols < tile) cost *= (double)tile / (double)p->cols;
    }
    if (programs < 2 * sms) cost *= 1.0 + (double)(2 * sms - programs) / (2.0 * sms);
    /* Prefer 16-byte accesses, then fewer threads per program (more loads in flight each). */
    cost *= 1.0 + 0.2 / v->align_bytes;
    cost *= 1.0 + v->threads / 65536.0;
    return cost;
}

tile_status tile_dispatch(const tile_problem *p, tile_decision *decision) {
    int32_t eligible = 0, arch_ok = 0, shape_ok = 0;
    for (int32_t i = 0; i < tile_registry_count; i++) {
        const tile_variant *v = &tile_registry[i];
        const char *why;
        if (tile_variant_eligible(v, p, &why)) eligible++;
        if (!strcmp(v->op, p->op) && v->dtype == p->dtype) {
            if (why == NULL || strcmp(why, "arch")) arch_ok++;
            if (why == NULL || !strcmp(why, "alignment")) shape_ok++;
        }
    }
    decision->variant = -1;
    decision->eligible = eligible;
    decision->arch = p->arch;
    decision->reason[0] = '\0';
    if (!eligible) {
        if (!arch_ok)
            return tile_fail(TILE_STATUS_ARCH_MISMATCH,
                             "no %s %s variant was compiled for sm_%d", p->op,
                             tile_dtype_string(p->dtype), p->arch);
        if (shape_ok)
            return tile_fail(TILE_STATUS_MISALIGNED,
                             "no %s %s variant takes pointers and strides aligned to only %d "
                             "bytes",
                             p->op, tile_dtype_string(p->dtype), p->align);
        return tile_fail(TILE_STATUS_NOT_SUPPORTED, "no %s %s variant covers %lldx%lld on sm_%d",
                         p->op, tile_dtype_string(p->dtype), (long long)p->rows,
                         (long long)p->cols, p->arch);
    }

    int32_t rows_log2, cols_log2;
    shape_bucket(p, &rows_log2, &cols_log2);
    int32_t best = -1, best_distance = 1 << 30;
    for (int32_t i = 0; i < tile_tuned_count; i++) {
        const tile_tuned_entry *e = &tile_tuned_table[i];
        if (e->arch != p->arch || e->dtype != p->dtype || strcmp(e->op, p->op)) continue;
        if (!tile_variant_eligible(&tile_registry[e->variant], p, NULL)) continue;
        int32_t dr = e->rows_log2 - rows_log2, dc = e->cols_log2 - cols_log2;
        dr = dr < 0 ? -dr : dr;
        dc = dc < 0 ? -dc : dc;
        /* A neighbour one column bucket away is still a good guess; further is not. */
        if (dc > 1 || dr > 3) continue;
        int32_t distance = dr + 4 * dc;
        if (distance < best_distance) {
            best_distance = distance;
            best = i;
        }
    }
    if (best >= 0) {
        const tile_tuned_entry *e = &tile_tuned_table[best];
        decision->variant = e->variant;
        decision->rule = best_distance == 0 ? TILE_RULE_TUNED : TILE_RULE_NEAREST;
        snprintf(decision->reason, sizeof decision->reason,
                 "%s: tuned table for sm_%d, bucket %lldx%lld%s", tile_rule_string(decision->rule),
                 p->arch, 1LL << e->rows_log2, 1LL << e->cols_log2,
                 best_distance == 0 ? "" : " (nearest to this shape's bucket)");
        return TILE_STATUS_SUCCESS;
    }

    double best_cost = 0;
    for (int32_t i = 0; i < tile_registry_count; i++) {
        const tile_variant *v = &tile_registry[i];
        if (!tile_variant_eligible(v, p, NULL)) continue;
        double cost = heuristic_cost(v, p);
        if (decision->variant < 0 || cost < best_cost) {
            best_cost = cost;
            decision->variant = i;
        }
    }
    decision->rule = TILE_RULE_HEURISTIC;
    snprintf(decision->reason, sizeof decision->reason,
             "heuristic: no tuned entry for sm_%d near bucket %lldx%lld; lowest estimated cost "
             "%.2f among %d eligible",
             p->arch, 1LL << rows_log2, 1LL << cols_log2, best_cost, eligible);
    return TILE_STATUS_SUCCESS;
}
