/* The attention walk's division by a call's fixed divisors (templates/attention_args.h): the
 * multiply-and-shift against the integer division over its domain (numerators below 2^31), for
 * every divisor up to 70000 on numerators around its multiples and at the end of the range, and
 * for divisors near powers of two up to 2^31 - 1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "attention_args.h"

static void check(uint32_t d, uint32_t n) {
    const tile_divisor v = tile_divisor_of(d);
    const uint32_t got = tile_divide(n, v), want = n / d;
    if (got != want) fail_msg("%u / %u: %u, not %u (multiplier %u, shift %u)", n, d, got, want,
                              v.multiplier, v.shift);
}

static void check_around_multiples(uint32_t d) {
    static const uint32_t ends[] = {0, 1, 2, 0x7ffffffeu, 0x7fffffffu};
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) check(d, ends[i]);
    for (uint64_t k = 1; k < 40; k++) { /* k * d - 1, k * d, k * d + 1 */
        const uint64_t m = k * d;
        if (m > 0x7fffffffu) break;
        check(d, (uint32_t)m - 1);
        check(d, (uint32_t)m);
        if (m < 0x7fffffffu) check(d, (uint32_t)m + 1);
    }
    /* and the largest multiple below 2^31 */
    const uint64_t top = (0x7fffffffull / d) * d;
    check(d, (uint32_t)top - 1);
    check(d, (uint32_t)top);
}

static void test_small_divisors(void **state) {
    (void)state;
    for (uint32_t d = 1; d <= 70000; d++) check_around_multiples(d);
}

static void test_divisors_near_powers_of_two(void **state) {
    (void)state;
    for (int s = 1; s < 31; s++)
        for (int delta = -3; delta <= 3; delta++) {
            const int64_t d = ((int64_t)1 << s) + delta;
            if (d >= 1 && d < ((int64_t)1 << 31)) check_around_multiples((uint32_t)d);
        }
    check_around_multiples(0x7fffffffu);
}

/* Every numerator below 2^20 for a few divisors of the walk's kinds: heads (12, 16, 40, 128),
 * a group's units (5 * 16, 3 * 341), a head ratio (1, 4, 7). */
static void test_every_numerator(void **state) {
    (void)state;
    static const uint32_t ds[] = {1, 4, 7, 12, 16, 40, 80, 128, 1023};
    for (size_t i = 0; i < sizeof ds / sizeof *ds; i++)
        for (uint32_t n = 0; n < (1u << 20); n++) check(ds[i], n);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_divisors),
        cmocka_unit_test(test_divisors_near_powers_of_two),
        cmocka_unit_test(test_every_numerator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
