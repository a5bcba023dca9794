/* test_output.c - output views and output dtypes through the C API (issue
 * 12, part 1): every path (libtcc JIT with and without microkernels, the
 * cc backend, threads, the reference evaluator, bcg_emit's plain C) writes
 * the same values into a strided view, and casts on store as NumPy's
 * casting='same_kind' allows; errors name what is wrong; the cache keys
 * the output description. */
/* internal.h comes before cmocka.h: cmocka defines a fail() macro. */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compare.h"

static bcg_context *ctx;

static int setup(void **state)
{
    (void)state;
    ctx = bcg_context_new();
    return ctx ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    bcg_context_free(ctx);
    return 0;
}

/* Reads element E of a C-contiguous array of SHAPE from a strided view. */
static int64_t view_offset(int rank, const int64_t *shape, const int64_t *strides, int64_t e)
{
    int64_t offset = 0;
    for (int d = rank - 1; d >= 0; d--) {
        offset += (e % shape[d]) * strides[d];
        e /= shape[d];
    }
    return offset;
}

/* a * b - c over f32 a (R,C), b (C), c (R,1), into a view of random
 * strides (a permutation of the dimensions, signs and gaps), as dtype
 * OUT_DTYPE; compared with the reference evaluator's C-contiguous result
 * cast element by element as C casts (the same_kind casts are C's). */
static void check_view(uint64_t *seed, int backend, int threads, int out_dtype)
{
    int64_t rows = 1 + (int64_t)(xorshift64(seed) % 70), cols = 1 + (int64_t)(xorshift64(seed) % 300);
    int64_t sa[2] = {rows, cols}, sb[1] = {cols}, sc[2] = {rows, 1};
    int64_t shape[2] = {rows, cols}, strides[2];
    int64_t gap = 1 + (int64_t)(xorshift64(seed) % 3);
    bool transposed = xorshift64(seed) % 2;
    strides[transposed ? 0 : 1] = gap;
    strides[transposed ? 1 : 0] = gap * (transposed ? rows : cols) * (1 + (int64_t)(xorshift64(seed) % 2));
    for (int d = 0; d < 2; d++)
        if (xorshift64(seed) % 3 == 0)
            strides[d] = -strides[d];
    bcg_operand ops[3] = {{"a", BCG_F32, 2, sa, NULL}, {"b", BCG_F32, 1, sb, NULL},
                          {"c", BCG_F32, 2, sc, NULL}};
    bcg_output output = {out_dtype, 2, strides, BCG_REDUCE_NONE, NULL};
    bcg_options options;
    bcg_options_init(&options);
    options.backend = backend;
    options.output = &output;
    bcg_error err;
    bcg_kernel *k = NULL;
    if (bcg_compile(ctx, "a * b - c", ops, 3, &options, &k, &err) != BCG_OK)
        fail_msg("compile: %s", err.message);
    bcg_dtype t = out_dtype == BCG_DTYPE_AUTO ? BCG_F32 : (bcg_dtype)out_dtype;
    assert_int_equal(bcg_kernel_dtype(k), t);

    float *a = malloc(sizeof *a * (size_t)(rows * cols)), *b = malloc(sizeof *b * (size_t)cols);
    float *c = malloc(sizeof *c * (size_t)rows), *want = malloc(sizeof *want * (size_t)(rows * cols));
    for (int64_t i = 0; i < rows * cols; i++)
        a[i] = (float)(int64_t)(xorshift64(seed) % 2001) / 8 - 125;
    for (int64_t i = 0; i < cols; i++)
        b[i] = (float)(int64_t)(xorshift64(seed) % 2001) / 16 - 62;
    for (int64_t i = 0; i < rows; i++)
        c[i] = (float)(int64_t)(xorshift64(seed) % 2001) / 4 - 250;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++)
            want[r * cols + j] = a[r * cols + j] * b[j] - c[r];

    /* the view's buffer, filled with a pattern no result has */
    int64_t low = 0, high = 0;
    for (int d = 0; d < 2; d++)
        *(strides[d] < 0 ? &low : &high) += strides[d] * (shape[d] - 1);
    size_t size = bcg_dtype_size(t), span = (size_t)(high - low + 1);
    unsigned char *buffer = malloc(span * size);
    memset(buffer, 0xA5, span * size);
    unsigned char *out = buffer - low * (int64_t)size;
    const void *in[3] = {a, b, c};
    if (bcg_run_threads(k, out, in, threads, &err) != BCG_OK)
        fail_msg("run: %s", err.message);
    size_t written = 0;
    for (int64_t e = 0; e < rows * cols; e++) {
        unsigned char *at = out + view_offset(2, shape, strides, e) * (int64_t)size;
        written++;
        if (t == BCG_F32) {
            float got;
            memcpy(&got, at, sizeof got);
            if (got != want[e])
                fail_msg("element %lld: %g, want %g", (long long)e, got, want[e]);
        } else if (t == BCG_F64) {
            double got;
            memcpy(&got, at, sizeof got);
            if (got != (double)want[e])
                fail_msg("element %lld: %g, want %g (f64)", (long long)e, got, (double)want[e]);
        }
    }
    /* nothing outside the view's elements was written */
    size_t untouched = 0;
    for (size_t i = 0; i < span * size; i++)
        untouched += buffer[i] == 0xA5;
    assert_true(untouched >= (span - written) * size);
    free(buffer);
    free(a);
    free(b);
    free(c);
    free(want);
    bcg_kernel_release(k);
}

static void test_views_on_every_path(void **state)
{
    (void)state;
    uint64_t seed = 0x5eed0012;
    for (int i = 0; i < 120; i++) {
        int backend = i % 10 == 9 ? BCG_BACKEND_CC : BCG_BACKEND_TCC;
        int threads = 1 + i % 3;
        int dtype = i % 2 ? BCG_DTYPE_AUTO : BCG_F64;
        check_view(&seed, backend, threads, dtype);
    }
}

/* Casts on store give what a cast in the expression gives (the reference
 * evaluator's wrap and rounding, which the differential tests hold to
 * NumPy), for every same_kind pair. */
static void test_store_casts_match_expression_casts(void **state)
{
    (void)state;
    int64_t shape[1] = {37};
    int checked = 0;
    for (int from = 0; from < BCG_DTYPE_COUNT; from++)
        for (int to = 0; to < BCG_DTYPE_COUNT; to++) {
            bcg_operand op = {"a", (bcg_dtype)from, 1, shape, NULL};
            bcg_output output = {to, 0, NULL, BCG_REDUCE_NONE, NULL};
            bcg_options options;
            bcg_options_init(&options);
            options.output = &output;
            bcg_error err;
            bcg_kernel *k = NULL, *cast = NULL;
            bcg_status s = bcg_compile(ctx, "a * 3", &op, 1, &options, &k, &err);
            /* "a * 3" keeps a's dtype (a weak literal), bool gives i64 */
            bcg_dtype result = from == BCG_BOOL ? BCG_I64 : (bcg_dtype)from;
            if (!dtype_same_kind(result, (bcg_dtype)to)) {
                assert_int_equal(s, BCG_ERR_TYPE);
                assert_non_null(strstr(err.message, "same-kind"));
                continue;
            }
            assert_int_equal(s, BCG_OK);
            char text[64];
            snprintf(text, sizeof text, "%s(a * 3)", bcg_dtype_name((bcg_dtype)to));
            assert_int_equal(bcg_compile(ctx, text, &op, 1, NULL, &cast, &err), BCG_OK);
            unsigned char in[37 * 8], got[37 * 8], want[37 * 8];
            uint64_t seed = (uint64_t)(from * 16 + to + 1);
            for (size_t i = 0; i < sizeof in; i++)
                in[i] = (unsigned char)xorshift64(&seed);
            if (from == BCG_BOOL)
                for (int i = 0; i < 37; i++)
                    in[i] &= 1;
            if (from == BCG_F32 || from == BCG_F64) /* finite values */
                for (int i = 0; i < 37; i++) {
                    double v = (double)(int64_t)(xorshift64(&seed) % 100001) / 7 - 7000;
                    if (from == BCG_F32) {
                        float f = (float)v;
                        memcpy(in + 4 * i, &f, 4);
                    } else {
                        memcpy(in + 8 * i, &v, 8);
                    }
                }
            const void *inputs[1] = {in};
            assert_int_equal(bcg_run(k, got, inputs, &err), BCG_OK);
            assert_int_equal(bcg_run(cast, want, inputs, &err), BCG_OK);
            assert_memory_equal(got, want, 37 * bcg_dtype_size((bcg_dtype)to));
            bcg_kernel_release(k);
            bcg_kernel_release(cast);
            checked++;
        }
    assert_true(checked > 40);
}

static bcg_status compile_with(const bcg_output *output, int inplace, bcg_error *err)
{
    int64_t sa[2] = {3, 4}, sb[1] = {4};
    bcg_operand ops[2] = {{"a", BCG_F32, 2, sa, NULL}, {"b", BCG_F32, 1, sb, NULL}};
    bcg_options options;
    bcg_options_init(&options);
    options.output = output;
    options.inplace = inplace;
    bcg_kernel *k = NULL;
    bcg_status s = bcg_compile(ctx, "a + b", ops, 2, &options, &k, err);
    bcg_kernel_release(k);
    return s;
}

static void test_errors_name_what_is_wrong(void **state)
{
    (void)state;
    bcg_error err;
    int64_t zero[2] = {0, 1}, interleaved[2] = {1, 1}, short_rank[1] = {1}, fine[2] = {1, 3};
    int64_t huge[2] = {INT64_MAX / 2, 1};
    bcg_output o = {BCG_DTYPE_AUTO, 2, zero, BCG_REDUCE_NONE, NULL};
    assert_int_equal(compile_with(&o, -1, &err), BCG_ERR_BROADCAST);
    assert_non_null(strstr(err.message, "stride 0 in dimension 0"));
    assert_int_equal(err.dimension, 0);
    o.strides = interleaved;
    assert_int_equal(compile_with(&o, -1, &err), BCG_ERR_BROADCAST);
    assert_non_null(strstr(err.message, "overlap"));
    o.strides = short_rank;
    o.rank = 1;
    assert_int_equal(compile_with(&o, -1, &err), BCG_ERR_BROADCAST);
    assert_non_null(strstr(err.message, "rank 1; the result (3, 4) has rank 2"));
    o.rank = 2;
    o.strides = huge;
    assert_int_equal(compile_with(&o, -1, &err), BCG_ERR_LIMIT);
    assert_non_null(strstr(err.message, "the output"));
    o.strides = fine;
    o.dtype = BCG_I32;
    assert_int_equal(compile_with(&o, -1, &err), BCG_ERR_TYPE);
    assert_non_null(strstr(err.message, "from f32 to the output dtype i32"));
    o.dtype = 99;
    assert_int_equal(compile_with(&o, -1, &err), BCG_ERR_USAGE);
    o.dtype = BCG_DTYPE_AUTO;
    assert_int_equal(compile_with(&o, 0, &err), BCG_ERR_USAGE);
    assert_non_null(strstr(err.message, "in-place target a"));
    bcg_output f64_out = {BCG_F64, 0, NULL, BCG_REDUCE_NONE, NULL};
    assert_int_equal(compile_with(&f64_out, 0, &err), BCG_ERR_TYPE);
    assert_int_equal(compile_with(&f64_out, -1, &err), BCG_OK);
    o.strides = fine;
    assert_int_equal(compile_with(&o, -1, &err), BCG_OK);
}

/* In place with a result of another dtype: allowed where same_kind allows
 * it (x.add_(y) with an f32 x and an f64 y), as NumPy's out=x. */
static void test_inplace_casts_same_kind(void **state)
{
    (void)state;
    int64_t s[1] = {5};
    bcg_operand ops[2] = {{"x", BCG_F32, 1, s, NULL}, {"y", BCG_F64, 1, s, NULL}};
    bcg_options options;
    bcg_options_init(&options);
    options.inplace = 0;
    bcg_error err;
    bcg_kernel *k = NULL;
    assert_int_equal(bcg_compile(ctx, "x + y", ops, 2, &options, &k, &err), BCG_OK);
    assert_int_equal(bcg_kernel_dtype(k), BCG_F32);
    float x[5] = {1, 2, 3, 4, 5};
    double y[5] = {0.1, 0.2, 0.3, 0.4, 0.5};
    const void *in[2] = {x, y};
    assert_int_equal(bcg_run(k, x, in, &err), BCG_OK);
    for (int i = 0; i < 5; i++)
        assert_true(x[i] == (float)((double)(float)(i + 1) + y[i]));
    bcg_operand ints[2] = {{"x", BCG_I32, 1, s, NULL}, {"y", BCG_F64, 1, s, NULL}};
    assert_int_equal(bcg_compile(ctx, "x + y", ints, 2, &options, &k, &err), BCG_ERR_TYPE);
    assert_non_null(strstr(err.message, "f64 to i32 is not a same-kind cast"));
}

/* The output description is part of the cache key. */
static void test_cache_keys_the_output(void **state)
{
    (void)state;
    int64_t sa[2] = {3, 4}, sb[1] = {4}, t1[2] = {1, 3}, t2[2] = {1, 6};
    bcg_operand ops[2] = {{"a", BCG_F32, 2, sa, NULL}, {"b", BCG_F32, 1, sb, NULL}};
    bcg_output o1 = {BCG_DTYPE_AUTO, 2, t1, BCG_REDUCE_NONE, NULL};
    bcg_output o2 = {BCG_DTYPE_AUTO, 2, t2, BCG_REDUCE_NONE, NULL};
    bcg_output o3 = {BCG_F64, 0, NULL, BCG_REDUCE_NONE, NULL};
    int64_t t1_again[2] = {1, 3};
    bcg_output o1_again = {BCG_DTYPE_AUTO, 2, t1_again, BCG_REDUCE_NONE, NULL};
    const bcg_output *outs[5] = {NULL, &o1, &o2, &o3, &o1_again};
    bcg_kernel *k[5];
    bcg_error err;
    for (int i = 0; i < 5; i++) {
        bcg_options options;
        bcg_options_init(&options);
        options.output = outs[i];
        assert_int_equal(bcg_compile(ctx, "a + b", ops, 2, &options, &k[i], &err), BCG_OK);
    }
    assert_ptr_not_equal(k[0], k[1]);
    assert_ptr_not_equal(k[1], k[2]);
    assert_ptr_not_equal(k[0], k[3]);
    assert_ptr_equal(k[1], k[4]);
    /* the source (rebuilt from the key) is the view's */
    assert_non_null(strstr(bcg_kernel_source(k[2]), "a view with strides (1,6)"));
    for (int i = 0; i < 5; i++)
        bcg_kernel_release(k[i]);
}

/* bcg_run rejects an output view that partly overlaps an input. */
static void test_run_checks_the_view(void **state)
{
    (void)state;
    int64_t s[1] = {8}, strides[1] = {-1};
    bcg_operand op = {"a", BCG_F32, 1, s, NULL};
    bcg_output o = {BCG_DTYPE_AUTO, 1, strides, BCG_REDUCE_NONE, NULL};
    bcg_options options;
    bcg_options_init(&options);
    options.output = &o;
    bcg_error err;
    bcg_kernel *k = NULL;
    assert_int_equal(bcg_compile(ctx, "a + 1", &op, 1, &options, &k, &err), BCG_OK);
    float buffer[16] = {0};
    const void *in[1] = {buffer};
    /* out at buffer[11] reaches buffer[4..11]; a is buffer[0..7] */
    assert_int_equal(bcg_run(k, buffer + 11, in, &err), BCG_ERR_RUN);
    /* reversed into its own buffer: fine */
    float a[8] = {0, 1, 2, 3, 4, 5, 6, 7}, out[8];
    in[0] = a;
    assert_int_equal(bcg_run(k, out + 7, in, &err), BCG_OK);
    for (int i = 0; i < 8; i++)
        assert_true(out[7 - i] == a[i] + 1);
    bcg_kernel_release(k);
}

/* bcg_emit's plain C takes the same view. */
static void test_emit_writes_the_view(void **state)
{
    (void)state;
    int64_t sa[2] = {2, 3}, t[2] = {1, 2};
    bcg_operand op = {"a", BCG_I16, 2, sa, NULL};
    bcg_output o = {BCG_I64, 2, t, BCG_REDUCE_NONE, NULL};
    bcg_options options;
    bcg_options_init(&options);
    options.output = &o;
    bcg_error err;
    char *source = NULL;
    assert_int_equal(bcg_emit("a - 1", &op, 1, &options, "k", &source, &err), BCG_OK);
    assert_non_null(strstr(source, "out:  i64 (2,3), 6 elements, a view with strides (1,2)"));
    assert_non_null(strstr(source, "out = i64((in0 - 1))"));
    mem_free(source);
}

/* Reductions through the API: sums over rows and columns of f32 against a
 * long double reference, the same bytes on 1-4 threads and on the cc
 * backend, and the errors (a target that does not broadcast, min over an
 * empty axis). */
static void test_reductions(void **state)
{
    (void)state;
    int64_t shape[2] = {257, 300}, rows[2] = {1, 300}, cols[1] = {257}, scalar_rank = 0;
    (void)scalar_rank;
    bcg_operand op = {"a", BCG_F32, 2, shape, NULL};
    float *a = malloc(sizeof *a * 257 * 300);
    uint64_t seed = 77;
    for (int i = 0; i < 257 * 300; i++)
        a[i] = (float)((double)(int64_t)(xorshift64(&seed) % 2000001) / 1000.0 - 1000.0) *
               (i % 7 == 0 ? 1e4f : 1.0f);
    struct { int rank; const int64_t *shape; int64_t count; bool along_rows; } targets[] = {
        {2, rows, 300, true}, {1, cols, 257, false}};
    const void *in[1] = {a};
    for (size_t t = 0; t < 2; t++) {
        bcg_output o = {BCG_DTYPE_AUTO, targets[t].rank, NULL, BCG_REDUCE_SUM, targets[t].shape};
        if (t == 1) { /* (257,) is not (257, 300) right-aligned: reduce to (257, 1) */
            static const int64_t col_shape[2] = {257, 1};
            o.rank = 2;
            o.shape = col_shape;
        }
        float first[300];
        for (int backend = 0; backend < 2; backend++)
            for (int threads = 1; threads <= 4; threads++) {
                bcg_options options;
                bcg_options_init(&options);
                options.output = &o;
                options.backend = backend;
                bcg_error err;
                bcg_kernel *k = NULL;
                if (bcg_compile(ctx, "a * 1", &op, 1, &options, &k, &err) != BCG_OK)
                    fail_msg("compile: %s", err.message);
                assert_int_equal(bcg_kernel_elements(k), targets[t].count);
                assert_string_equal(bcg_kernel_note(k), ""); /* compiled, no fallback */
                float out[300];
                assert_int_equal(bcg_run_threads(k, out, in, threads, &err), BCG_OK);
                if (backend == 0 && threads == 1)
                    memcpy(first, out, sizeof out);
                else /* threads and the backend change no bit */
                    assert_memory_equal(out, first, sizeof(float) * (size_t)targets[t].count);
                for (int64_t j = 0; j < targets[t].count; j++) {
                    long double exact = 0;
                    int64_t n = targets[t].along_rows ? 257 : 300;
                    for (int64_t i = 0; i < n; i++)
                        exact += targets[t].along_rows ? a[i * 300 + j] : a[j * 300 + i];
                    float want = (float)exact;
                    if (out[j] != want && fabsl((long double)out[j] - exact) >
                                              fabsl((long double)nextafterf(want, INFINITY) - want))
                        fail_msg("sum %lld: %.9g, exact %.9Lg", (long long)j, out[j], exact);
                }
                bcg_kernel_release(k);
            }
    }
    bcg_error err;
    bcg_kernel *k = NULL;
    int64_t bad[2] = {2, 300};
    bcg_output wrong = {BCG_DTYPE_AUTO, 2, NULL, BCG_REDUCE_SUM, bad};
    bcg_options options;
    bcg_options_init(&options);
    options.output = &wrong;
    assert_int_equal(bcg_compile(ctx, "a", &op, 1, &options, &k, &err), BCG_ERR_BROADCAST);
    assert_non_null(strstr(err.message, "dimension 0 has size 257 in the result and 2 in the output"));
    assert_int_equal(err.dimension, 0);
    int64_t empty_shape[2] = {3, 0}, three[2] = {3, 1};
    bcg_operand empty = {"a", BCG_I32, 2, empty_shape, NULL};
    bcg_output max = {BCG_DTYPE_AUTO, 2, NULL, BCG_REDUCE_MAX, three};
    options.output = &max;
    assert_int_equal(bcg_compile(ctx, "a", &empty, 1, &options, &k, &err), BCG_ERR_BROADCAST);
    assert_non_null(strstr(err.message, "max over dimension 1 of size 0"));
    /* the identity over an empty axis: prod 1, on the JIT path */
    bcg_output prod = {BCG_DTYPE_AUTO, 2, NULL, BCG_REDUCE_PROD, three};
    options.output = &prod;
    assert_int_equal(bcg_compile(ctx, "a", &empty, 1, &options, &k, &err), BCG_OK);
    assert_int_equal(bcg_kernel_dtype(k), BCG_I64);
    int64_t got[3] = {0, 0, 0};
    int32_t nothing[1] = {0};
    const void *none[1] = {nothing};
    assert_int_equal(bcg_run(k, got, none, &err), BCG_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(got[i], 1);
    bcg_kernel_release(k);
    free(a);
}

/* The microkernel forms of float sums and means (laned tiles along a
 * contiguous reduced run, blocks of accumulators along a kept loop, whole
 * rows of an operand or of a binary operation of two operands in one
 * call, laned sums of a tile of whole runs in one call) against the
 * scalar code of the same kernel (microkernel_run 0), and that against
 * the reference evaluator: bit for bit (any NaN for a
 * NaN), on 1 and 3 threads, over random shapes, reduced dimension sets,
 * negative strides, trees and bare operands, with infinities, NaN and
 * zero divisors now and then. */
static void test_reduction_microkernels_match_scalar_code(void **state)
{
    (void)state;
    uint64_t seed = 2026;
    static const char *const exprs[] = {"a", "a * b", "a * b + 1.5", "sqrt(a * a) - b",
                                        "b - a", "a / b", "minimum(a, b)", "maximum(b, a)",
                                        "a + a"};
    enum { EXPRS = sizeof exprs / sizeof exprs[0] };
    /* laned tiles, blocks, rows calls of an operand, of an operation */
    int forms_seen[5] = {0, 0, 0, 0, 0}; /* and laned sums of whole rows */
    for (int trial = 0; trial < 160; trial++) {
        int rank = 2 + (int)(xorshift64(&seed) % 2);
        int64_t shape[3], strides[3], total = 1;
        for (int d = 0; d < rank; d++)
            shape[d] = 1 + (int64_t)(xorshift64(&seed) % (d == rank - 1 ? 300 : 90));
        for (int d = rank - 1; d >= 0; d--) {
            strides[d] = total;
            total *= shape[d];
        }
        bool flip = xorshift64(&seed) % 4 == 0;
        int64_t flipped[3];
        memcpy(flipped, strides, sizeof strides);
        if (flip) /* the last dimension read backwards */
            flipped[rank - 1] = -1;
        bcg_dtype t = xorshift64(&seed) % 2 ? BCG_F32 : BCG_F64;
        size_t size = bcg_dtype_size(t);
        unsigned char *a = malloc(size * (size_t)total), *b = malloc(size * (size_t)total);
        for (int64_t i = 0; i < total; i++) {
            /* wide exponents: sums whose bits depend on the order of the adds */
            double v = ldexp((double)(int64_t)(xorshift64(&seed) % 2000001) / 1e6 - 1.0,
                             (int)(xorshift64(&seed) % 90) - 45);
            double w = (double)(int64_t)(xorshift64(&seed) % 2001) / 1000.0;
            if (xorshift64(&seed) % 16 == 0) /* huge values that cancel: order shows */
                v = xorshift64(&seed) % 2 ? 0x1p90 : -0x1p90;
            if (trial % 8 == 7 && xorshift64(&seed) % 64 == 0) /* and specials, now and then */
                v = (double[]){NAN, INFINITY, -INFINITY, -0.0}[xorshift64(&seed) % 4];
            if (xorshift64(&seed) % 128 == 0) /* a zero divisor, a zero product */
                w = 0.0;
            if (t == BCG_F32) {
                ((float *)a)[i] = (float)v;
                ((float *)b)[i] = (float)w;
            } else {
                ((double *)a)[i] = v;
                ((double *)b)[i] = w;
            }
        }
        int64_t target[3];
        for (int d = 0; d < rank; d++)
            target[d] = xorshift64(&seed) % 2 ? 1 : shape[d];
        const char *expr = exprs[xorshift64(&seed) % EXPRS];
        int reduce = xorshift64(&seed) % 3 ? BCG_REDUCE_SUM : BCG_REDUCE_MEAN;
        bcg_operand ops[2] = {{"a", t, rank, shape, flip ? flipped : NULL},
                              {"b", t, rank, shape, NULL}};
        /* element [0,...,0] of a flipped operand sits at the end of its row */
        const void *in[2] = {a + (flip ? size * (size_t)(shape[rank - 1] - 1) : 0), b};
        bcg_output o = {BCG_DTYPE_AUTO, rank, NULL, reduce, target};
        int64_t out_elements = 1;
        for (int d = 0; d < rank; d++)
            out_elements *= target[d];
        unsigned char *want = calloc((size_t)out_elements, size),
                      *got = calloc((size_t)out_elements, size);
        for (int fast = 0; fast < 2; fast++)
            for (int threads = 1; threads <= (fast ? 3 : 1); threads += 2) {
                bcg_options options;
                bcg_options_init(&options);
                options.output = &o;
                options.microkernel_run = fast ? 64 : 0;
                bcg_error err;
                bcg_kernel *k = NULL;
                if (bcg_compile(ctx, expr, ops, 2, &options, &k, &err) != BCG_OK)
                    fail_msg("compile %s: %s", expr, err.message);
                assert_string_equal(bcg_kernel_note(k), "");
                const char *source = bcg_kernel_source(k);
                if (fast && threads == 1) {
                    forms_seen[0] += strstr(source, "bcg_mk_sum16_") != NULL;
                    forms_seen[1] += strstr(source, "bcg_mk_accadd_f") != NULL;
                    forms_seen[2] += strstr(source, "bcg_mk_accadd_rows_") != NULL;
                    forms_seen[3] += strstr(source, "_accadd_rows_") != NULL &&
                                     strstr(source, "bcg_mk_accadd_rows_") == NULL;
                    forms_seen[4] += strstr(source, "bcg_mk_sum16_rows_") != NULL;
                }
                assert_int_equal(bcg_run_threads(k, fast ? got : want, in, threads, &err),
                                 BCG_OK);
                if (!fast) { /* the scalar code is the reference evaluator's, bit for bit */
                    unsigned char *reference = calloc((size_t)out_elements, size);
                    compile front = {.arena = arena_new(), .err = &err};
                    assert_non_null(front.arena);
                    assert_int_equal(compile_front(&front, expr, ops, 2, &options), BCG_OK);
                    assert_int_equal(eval_run(&front, reference, in, &err), BCG_OK);
                    arena_free(front.arena);
                    if (first_difference((const char *)reference, (const char *)want, t,
                                         out_elements, false) >= 0)
                        fail_msg("trial %d: %s %s: the scalar code differs from the reference "
                                 "evaluator", trial, reduce_name(reduce), expr);
                    free(reference);
                }
                if (fast && first_difference((const char *)got, (const char *)want, t,
                                             out_elements, false) >= 0)
                    fail_msg("trial %d: %s %s over [%lld %lld %lld] differs from the scalar "
                             "code (%d threads)", trial, reduce_name(reduce), expr,
                             (long long)shape[0], (long long)shape[1],
                             (long long)(rank > 2 ? shape[2] : 0), threads);
                bcg_kernel_release(k);
            }
        free(a);
        free(b);
        free(want);
        free(got);
    }
    /* every form was reached */
    assert_true(forms_seen[0] > 0);
    assert_true(forms_seen[1] > 0);
    assert_true(forms_seen[2] > 0);
    assert_true(forms_seen[3] > 0);
    assert_true(forms_seen[4] > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_views_on_every_path),
        cmocka_unit_test(test_store_casts_match_expression_casts),
        cmocka_unit_test(test_errors_name_what_is_wrong),
        cmocka_unit_test(test_inplace_casts_same_kind),
        cmocka_unit_test(test_cache_keys_the_output),
        cmocka_unit_test(test_run_checks_the_view),
        cmocka_unit_test(test_emit_writes_the_view),
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_reduction_microkernels_match_scalar_code),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
