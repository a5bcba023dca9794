/* test_perf.c - the performance work's paths, checked for exactness: the
 * structural cache key (hits only for the very same key, whatever differs),
 * and the cache-blocked loop pair for inputs read with a long stride
 * (emit.c "cache blocking"), whose results must equal the reference
 * evaluator's bit for bit, with remainders in both blocked dimensions, a
 * loop outside the pair, negative strides, in place, and on two threads. */
/* internal.h comes before cmocka.h: cmocka defines a fail() macro. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* ---- the cache key -------------------------------------------------------------- */

static void test_cache_key_is_exact(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_error err;
    int64_t sa[] = {3, 4}, sb[] = {4}, contiguous[] = {4, 1}, other[] = {1, 3};
    bcg_operand ops[2] = {{"a", BCG_F32, 2, sa, NULL}, {"b", BCG_F32, 1, sb, NULL}};
    bcg_kernel *first, *again, *k;
    assert_int_equal(bcg_compile(ctx, "a + b", ops, 2, NULL, &first, &err), BCG_OK);
    long compiles = compile_tcc_count(ctx);
    assert_int_equal(bcg_compile(ctx, "a + b", ops, 2, NULL, &again, &err), BCG_OK);
    assert_ptr_equal(first, again);
    assert_int_equal(compile_tcc_count(ctx), compiles);

    /* a copy of the arrays is the same key: the key is the values */
    int64_t sa_copy[] = {3, 4};
    bcg_operand copy[2] = {{"a", BCG_F32, 2, sa_copy, NULL}, {"b", BCG_F32, 1, sb, NULL}};
    assert_int_equal(bcg_compile(ctx, "a + b", copy, 2, NULL, &k, &err), BCG_OK);
    assert_ptr_equal(k, first);

    /* each of these differs from the first key in one part only */
    bcg_options unroll;
    bcg_options_init(&unroll);
    unroll.unroll_factor = 2;
    bcg_operand strided[2] = {{"a", BCG_F32, 2, sa, contiguous}, {"b", BCG_F32, 1, sb, NULL}};
    bcg_operand transposed[2] = {{"a", BCG_F32, 2, sa, other}, {"b", BCG_F32, 1, sb, NULL}};
    bcg_operand renamed[2] = {{"b", BCG_F32, 2, sa, NULL}, {"a", BCG_F32, 1, sb, NULL}};
    bcg_operand retyped[2] = {{"a", BCG_F64, 2, sa, NULL}, {"b", BCG_F32, 1, sb, NULL}};
    int64_t wider[] = {3, 1};
    bcg_operand reshaped[2] = {{"a", BCG_F32, 2, sa, NULL}, {"b", BCG_F32, 2, wider, NULL}};
    bcg_kernel *seen[8] = {first};
    int count = 1;
    struct {
        const char *expr;
        const bcg_operand *ops;
        const bcg_options *options;
    } variants[] = {
        {"a + b ", ops, NULL},     {"a + b", ops, &unroll},  {"a + b", strided, NULL},
        {"a + b", transposed, NULL}, {"a + b", renamed, NULL}, {"a + b", retyped, NULL},
        {"a + b", reshaped, NULL},
    };
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        assert_int_equal(bcg_compile(ctx, variants[v].expr, variants[v].ops, 2,
                                     variants[v].options, &k, &err),
                         BCG_OK);
        for (int j = 0; j < count; j++)
            assert_ptr_not_equal(k, seen[j]);
        seen[count++] = k;
        /* and each is a hit the second time */
        bcg_kernel *hit;
        long before = compile_tcc_count(ctx);
        assert_int_equal(bcg_compile(ctx, variants[v].expr, variants[v].ops, 2,
                                     variants[v].options, &hit, &err),
                         BCG_OK);
        assert_ptr_equal(hit, k);
        assert_int_equal(compile_tcc_count(ctx), before);
    }
    /* one operand fewer with the same leading bytes is another key */
    assert_int_equal(bcg_compile(ctx, "a + 1", ops, 1, NULL, &k, &err), BCG_OK);
    for (int j = 0; j < count; j++)
        assert_ptr_not_equal(k, seen[j]);
    bcg_context_free(ctx);
}

/* ---- the blocked loop pair ---------------------------------------------------------- */

typedef struct blocked_case {
    const char *expr;
    int operand_count;
    bcg_operand ops[3];
    int inplace;
    bool no_microkernels; /* bcg_options.microkernel_run 0: no tiles */
} blocked_case;

/* Elements a strided operand's buffer needs, and the offset of its element
 * [0, ..., 0] in it (negative strides walk below it). */
static void operand_extent(const bcg_operand *op, int64_t *count, int64_t *origin)
{
    int64_t low = 0, high = 0;
    for (int d = 0; d < op->rank; d++) {
        int64_t stride = op->strides ? op->strides[d] : 1;
        if (!op->strides) {
            stride = 1;
            for (int e = d + 1; e < op->rank; e++)
                stride *= op->shape[e];
        }
        int64_t reach = stride * (op->shape[d] - 1);
        if (reach < 0)
            low += reach;
        else
            high += reach;
    }
    *count = high - low + 1;
    *origin = -low;
}

static void fill(float *data, int64_t count, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (int64_t i = 0; i < count; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data[i] = (float)(x % 20001) / 1000.0f - 10.0f;
    }
}

/* Runs C through bcg_run (and bcg_run_threads when THREADS) and through the
 * reference evaluator, and checks the results are equal byte for byte. */
static void check_blocked(const blocked_case *c, bool threads)
{
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_options options;
    bcg_options_init(&options);
    options.inplace = c->inplace;
    if (c->no_microkernels)
        options.microkernel_run = 0;
    bcg_error err;
    bcg_kernel *k;
    assert_int_equal(bcg_compile(ctx, c->expr, c->ops, c->operand_count, &options, &k, &err),
                     BCG_OK);
    assert_string_equal(bcg_kernel_note(k), "");
    /* the path under test was taken */
    assert_non_null(strstr(bcg_kernel_source(k), "run in blocks of 128 x 4 trips"));

    float *buffers[3], *reference_buffers[3];
    const void *in[3], *reference_in[3];
    int64_t counts[3];
    for (int i = 0; i < c->operand_count; i++) {
        int64_t origin;
        operand_extent(&c->ops[i], &counts[i], &origin);
        buffers[i] = malloc(sizeof(float) * (size_t)counts[i]);
        reference_buffers[i] = malloc(sizeof(float) * (size_t)counts[i]);
        assert_non_null(buffers[i]);
        assert_non_null(reference_buffers[i]);
        fill(buffers[i], counts[i], (unsigned)i + 7);
        memcpy(reference_buffers[i], buffers[i], sizeof(float) * (size_t)counts[i]);
        in[i] = buffers[i] + origin;
        reference_in[i] = reference_buffers[i] + origin;
    }
    int64_t elements = bcg_kernel_elements(k);
    float *out = NULL, *expected = NULL;
    if (c->inplace < 0) {
        out = calloc((size_t)elements, sizeof(float));
        expected = calloc((size_t)elements, sizeof(float));
        assert_non_null(out);
        assert_non_null(expected);
    }

    arena *a = arena_new();
    compile *front = a ? arena_alloc(a, sizeof *front) : NULL;
    assert_non_null(front);
    front->arena = a;
    front->err = &err;
    assert_int_equal(compile_front(front, c->expr, c->ops, c->operand_count, &options), BCG_OK);
    void *reference_out = c->inplace < 0 ? (void *)expected : (void *)reference_in[c->inplace];
    assert_int_equal(eval_run(front, reference_out, reference_in, &err), BCG_OK);

    if (threads) {
        assert_int_equal(bcg_run_threads(k, out, in, 2, &err), BCG_OK);
        assert_int_equal(compile_threaded_run_count(ctx), 1); /* really cut in pieces */
    } else
        assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
    if (c->inplace < 0) {
        assert_memory_equal(out, expected, sizeof(float) * (size_t)elements);
    } else {
        int t = c->inplace;
        assert_memory_equal(buffers[t], reference_buffers[t], sizeof(float) * (size_t)counts[t]);
    }
    for (int i = 0; i < c->operand_count; i++) {
        free(buffers[i]);
        free(reference_buffers[i]);
    }
    free(out);
    free(expected);
    arena_free(a);
    bcg_context_free(ctx);
}

/* 300 = 2 * 128 + 44 rows and 130 = 32 * 4 + 2 columns: both remainders. */
static int64_t rows_cols[] = {300, 130}, transposed[] = {1, 300}, cols[] = {130};
static int64_t rows_one[] = {300, 1};

static void test_blocked_transposed_with_remainders(void **state)
{
    (void)state;
    /* (the 2-D tiles take it with microkernels: lower.c long_stride_run) */
    blocked_case c = {"a * b + c", 3,
                      {{"a", BCG_F32, 2, rows_cols, transposed},
                       {"b", BCG_F32, 1, cols, NULL},
                       {"c", BCG_F32, 2, rows_one, NULL}},
                      -1, true};
    check_blocked(&c, false);
}

static void test_blocked_outer_loop_and_negative_strides(void **state)
{
    (void)state;
    /* a loop outside the blocked pair; input a walks every ninth row
     * backwards (runs longer than 2-D tiles take: lower.c, TILES2D_MAX_RUN;
     * rows of stride -1 or 1 take the 2-D tiles over a transposed input,
     * and strides of 2 to 8 their spaced gather: lower.c spaced_along) */
    int64_t shape[] = {2, 260, 602}, strides[] = {9 * 520 * 602, -9, 520}, row[] = {602};
    blocked_case c = {"a - b", 2,
                      {{"a", BCG_F32, 3, shape, strides}, {"b", BCG_F32, 1, row, NULL}},
                      -1, false};
    check_blocked(&c, false);
    check_blocked(&c, true); /* 72800 elements: two pieces, each blocked */
}

static void test_blocked_in_place(void **state)
{
    (void)state;
    /* in place into the contiguous operand; the transposed one is read
     * (runs of 602: shorter ones take 2-D tiles; a transposed view of every
     * ninth column, stride 9 outside: a plain transposed one takes the 2-D
     * tiles of whole runs, test_microkernels' test_transposed_long_runs,
     * and every second to eighth column their spaced gather) */
    int64_t rows_long[] = {300, 602}, contiguous[] = {602, 1}, transposed_9[] = {9, 2700};
    blocked_case c = {"b + 2 * a", 2,
                      {{"a", BCG_F32, 2, rows_long, transposed_9},
                       {"b", BCG_F32, 2, rows_long, contiguous}},
                      1, false};
    check_blocked(&c, false);
}

static void test_short_strided_runs_stay_plain(void **state)
{
    (void)state;
    /* a transposed 20 x 20 stays in L1: no blocks */
    int64_t shape[] = {20, 20}, strides[] = {1, 20};
    bcg_operand ops[1] = {{"a", BCG_F32, 2, shape, strides}};
    char *source = NULL;
    bcg_error err;
    assert_int_equal(bcg_emit("a + 1", ops, 1, NULL, NULL, &source, &err), BCG_OK);
    assert_null(strstr(source, "blocks of"));
    bcg_free(source);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_key_is_exact),
        cmocka_unit_test(test_blocked_transposed_with_remainders),
        cmocka_unit_test(test_blocked_outer_loop_and_negative_strides),
        cmocka_unit_test(test_blocked_in_place),
        cmocka_unit_test(test_short_strided_runs_stay_plain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
