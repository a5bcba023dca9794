/* test_compile_cost.c - what a compile and a cache hit cost, pinned where
 * that needs no clock (issue 11: compile median <= 0.5 ms, a hit <= 1 us;
 * the times themselves are measured by `bench/sweep --compile-only`, never
 * here):
 *   - a cache hit allocates nothing (an injected failure of the next
 *     allocation does not reach it);
 *   - a compile hands libtcc only the functions its source names, not the
 *     thousand the table holds;
 *   - libtcc frees all of its scratch memory by the end of every compile,
 *     so the scratch is reused (jit.c), and what is kept stays bounded;
 *   - the C of a tiled kernel and of a transposed one stays small. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#include <cmocka.h>

static bcg_kernel *compile_or_fail(bcg_context *ctx, const char *expr, const bcg_operand *ops,
                                   int count)
{
    bcg_kernel *k = NULL;
    bcg_error err;
    if (bcg_compile(ctx, expr, ops, count, NULL, &k, &err) != BCG_OK)
        fail_msg("%s: %s", expr, err.message);
    return k;
}

static void test_hit_allocates_nothing(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    /* rank 5 with strides: the longest kind of key */
    int64_t shape[] = {2, 3, 4, 5, 6}, strides[] = {-720, 240, 60, 12, 2};
    int64_t b_shape[] = {5, 1};
    bcg_operand ops[] = {{"alpha", BCG_F32, 5, shape, strides}, {"b", BCG_F32, 2, b_shape, NULL}};
    const char *expr = "where(alpha > 0.5, sqrt(abs(alpha)) * b, minimum(alpha, b) - 1.5)";
    bcg_kernel *first = compile_or_fail(ctx, expr, ops, 2);
    bcg_cache_stats before;
    bcg_context_stats(ctx, &before);
    mem_fail_after(1); /* the next allocation would fail */
    bcg_kernel *again = NULL;
    bcg_error err;
    bcg_status s = bcg_compile(ctx, expr, ops, 2, NULL, &again, &err);
    long made = mem_fail_after(0);
    assert_int_equal(s, BCG_OK);
    assert_ptr_equal(again, first);
    assert_int_equal(made, 0);
    bcg_cache_stats after;
    bcg_context_stats(ctx, &after);
    assert_int_equal(after.compiles, before.compiles);
    bcg_kernel_release(again);
    bcg_kernel_release(first);
    bcg_context_free(ctx);
}

static void test_compile_hands_only_named_functions(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    int64_t shape[] = {64, 256};
    bcg_operand ops[] = {{"a", BCG_F32, 2, shape, NULL}, {"b", BCG_F32, 2, shape, NULL}};
    bcg_kernel *k = compile_or_fail(ctx, "sqrt(a) + b", ops, 2);
    jit_cost_info info;
    jit_costs(&info);
    /* bcg_mk_sqrt_f32, bcg_mk_add_f32, sqrtf perhaps, and tcc's cast helpers */
    assert_true(info.symbols_handed >= 2);
    assert_true(info.symbols_handed <= 16);
    assert_true(info.callables > 200);
    /* and it runs: the names it calls were all handed over */
    static float a[64 * 256], b[64 * 256], out[64 * 256];
    for (int i = 0; i < 64 * 256; i++) {
        a[i] = (float)(i % 97);
        b[i] = 0.25f;
    }
    const void *in[] = {a, b};
    bcg_error err;
    assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
    assert_string_equal(bcg_kernel_note(k), "");
    for (int i = 0; i < 64 * 256; i += 67)
        assert_true(out[i] == sqrtf(a[i]) + 0.25f);
    bcg_kernel_release(k);
    bcg_context_free(ctx);
}

/* A u64 -> f32 cast makes tcc's code call __floatundisf, which the source
 * never names: it must be handed over all the same. */
static void test_cast_helpers_are_handed_over(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    int64_t shape[] = {7};
    bcg_operand ops[] = {{"a", BCG_U64, 1, shape, NULL}};
    bcg_kernel *k = compile_or_fail(ctx, "f32(a) + f64(a)", ops, 1);
    assert_string_equal(bcg_kernel_note(k), "");
    uint64_t a[7] = {0, 1, 3, 1ull << 40, (1ull << 63) + 5, ~0ull, 12345};
    double out[7];
    const void *in[] = {a};
    bcg_error err;
    assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
    for (int i = 0; i < 7; i++)
        assert_true(out[i] == (double)(float)a[i] + (double)a[i]);
    bcg_kernel_release(k);
    bcg_context_free(ctx);
}

static void test_scratch_is_reused_and_bounded(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    int64_t shape[] = {3, 33};
    bcg_operand ops[] = {{"a", BCG_I16, 2, shape, NULL}, {"b", BCG_F64, 2, shape, NULL}};
    for (int i = 0; i < 40; i++) {
        char expr[96];
        snprintf(expr, sizeof expr, "where(a > %d, exp(b) * %d, f64(a) - b)", i, i + 1);
        bcg_kernel_free(compile_or_fail(ctx, expr, ops, 2));
        jit_cost_info info;
        jit_costs(&info);
        assert_int_equal(info.scratch_live, 0);
        assert_true(info.scratch_reused);
        assert_true(info.scratch_kept <= 16u * 1024 * 1024);
    }
    bcg_context_free(ctx);
}

/* The emitted C of a tiled kernel and of one over a transposed operand:
 * libtcc's time grows with it.  Measured 2.6 KB on average over the sweep's
 * kernels, 5.9 KB at most, and 3.2 KB and 2.7 KB for these two; the bound
 * leaves room for comments and helpers. */
static void test_emitted_source_stays_small(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    int64_t shape[] = {16, 3, 1000}, bshape[] = {3, 1};
    int64_t transposed[] = {1, 16, 48};
    bcg_operand tiled[] = {{"a", BCG_F32, 3, shape, NULL}, {"b", BCG_F32, 2, bshape, NULL}};
    bcg_operand across[] = {{"a", BCG_F32, 3, shape, transposed},
                            {"b", BCG_F32, 2, bshape, NULL}};
    const char *expr = "maximum(a * b + 1.5, sqrt(abs(a)) - b)";
    bcg_kernel *k1 = compile_or_fail(ctx, expr, tiled, 2);
    bcg_kernel *k2 = compile_or_fail(ctx, expr, across, 2);
    const char *s1 = bcg_kernel_source(k1), *s2 = bcg_kernel_source(k2);
    assert_non_null(s1);
    assert_non_null(s2);
    assert_true(strstr(s1, "bcg_mk_") || strstr(s1, "bcg_vex(")); /* tiled */
    assert_true(strlen(s1) < 5000);
    assert_true(strlen(s2) < 5000);
    bcg_kernel_release(k1);
    bcg_kernel_release(k2);
    bcg_context_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_allocates_nothing),
        cmocka_unit_test(test_compile_hands_only_named_functions),
        cmocka_unit_test(test_cast_helpers_are_handed_over),
        cmocka_unit_test(test_scratch_is_reused_and_bounded),
        cmocka_unit_test(test_emitted_source_stays_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
