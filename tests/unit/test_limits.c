/* test_limits.c - every documented limit (README "Safety") at the limit and
 * one past it: the first works, the second is BCG_ERR_LIMIT with a message
 * that names the limit, never exhaustion, a crash or a deep recursion.
 *
 *   BCG_MAX_EXPR      bytes of expression text
 *   BCG_MAX_DEPTH     nesting depth: parentheses, unary chains, operator chains
 *   BCG_MAX_OPERANDS  operands per expression
 *   BCG_MAX_RANK      dimensions per operand
 *   BCG_MAX_NAME      bytes per operand or function name
 *   INT64_MAX         elements, and bytes, of the broadcast result, and
 *                     bytes an operand's strides span
 *   unroll factor 1..64 and full-unroll limit 0..65536 (bcg_options)
 *   full unrolling only while elements x tree nodes <= 2^20 (then loops)
 *   BCG_MAX_SOURCE    bytes of C bcg_compile hands to tcc, which bounds its
 *                     time: unrolled kernels over it loop, others fail
 *   NPY_MAX_HEADER, NPY_MAX_BYTES   .npy header and data sizes */
#include "internal.h"
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

static bcg_status emit1(const char *expr, bcg_dtype t, int rank, const int64_t *shape,
                        const bcg_options *o, char **source, bcg_error *err)
{
    bcg_operand op = {"a", t, rank, shape, NULL};
    *source = NULL;
    return bcg_emit(expr, &op, 1, o, NULL, source, err);
}

static void expect_limit(bcg_status s, const bcg_error *err, const char *named)
{
    if (s != BCG_ERR_LIMIT || !strstr(err->message, named))
        print_message("# status %d: %s (want BCG_ERR_LIMIT naming %s)\n", (int)s, err->message,
                      named);
    assert_int_equal(s, BCG_ERR_LIMIT);
    assert_non_null(strstr(err->message, named));
}

static const int64_t four[] = {4};

static void test_expression_length(void **state)
{
    (void)state;
    char *text = malloc(BCG_MAX_EXPR + 2);
    assert_non_null(text);
    /* "a" and spaces: exactly BCG_MAX_EXPR bytes, then one more. */
    memset(text, ' ', BCG_MAX_EXPR + 1);
    text[0] = 'a';
    text[BCG_MAX_EXPR] = 0;
    char *source;
    bcg_error err;
    assert_int_equal(emit1(text, BCG_F32, 1, four, NULL, &source, &err), BCG_OK);
    bcg_free(source);
    text[BCG_MAX_EXPR] = ' ';
    text[BCG_MAX_EXPR + 1] = 0;
    expect_limit(emit1(text, BCG_F32, 1, four, NULL, &source, &err), &err, "BCG_MAX_EXPR");
    assert_null(source);
    free(text);
}

/* PREFIX repeated N times, then CORE, then SUFFIX repeated N times. */
static char *nest(const char *prefix, int n, const char *core, const char *suffix)
{
    size_t length = (strlen(prefix) + strlen(suffix)) * (size_t)n + strlen(core) + 1;
    char *text = malloc(length);
    assert_non_null(text);
    text[0] = 0;
    char *at = text;
    for (int i = 0; i < n; i++)
        at = stpcpy(at, prefix);
    at = stpcpy(at, core);
    for (int i = 0; i < n; i++)
        at = stpcpy(at, suffix);
    return text;
}

/* The deepest accepted nesting of each kind, and one more level. */
static void check_depth(const char *prefix, const char *core, const char *suffix, int deepest)
{
    char *source;
    bcg_error err;
    char *ok = nest(prefix, deepest, core, suffix);
    bcg_status s = emit1(ok, BCG_F32, 1, four, NULL, &source, &err);
    if (s != BCG_OK)
        print_message("# %d x '%s': %s\n", deepest, prefix, err.message);
    assert_int_equal(s, BCG_OK);
    bcg_free(source);
    char *over = nest(prefix, deepest + 1, core, suffix);
    expect_limit(emit1(over, BCG_F32, 1, four, NULL, &source, &err), &err, "BCG_MAX_DEPTH");
    assert_true(err.column > 0);
    free(ok);
    free(over);
}

static void test_nesting_depth(void **state)
{
    (void)state;
    /* One rule: 200 levels of any construct parse, 201 do not. */
    check_depth("(", "a", ")", BCG_MAX_DEPTH);
    check_depth("-", "a", "", BCG_MAX_DEPTH);
    check_depth("abs(", "a", ")", BCG_MAX_DEPTH);
    check_depth("", "a", " + a", BCG_MAX_DEPTH);
    check_depth("a ** ", "a", "", BCG_MAX_DEPTH);
    /* Far past the limit: an error, not a stack overflow. */
    char *deep = nest("(", 1000000, "a", ")");
    char *source;
    bcg_error err;
    expect_limit(emit1(deep, BCG_F32, 1, four, NULL, &source, &err), &err, "BCG_MAX_EXPR");
    free(deep);
    deep = nest("-", BCG_MAX_EXPR - 1, "a", "");
    expect_limit(emit1(deep, BCG_F32, 1, four, NULL, &source, &err), &err, "BCG_MAX_DEPTH");
    free(deep);
}

static void test_operand_count(void **state)
{
    (void)state;
    static char names[BCG_MAX_OPERANDS + 1][8];
    bcg_operand ops[BCG_MAX_OPERANDS + 1];
    for (int i = 0; i <= BCG_MAX_OPERANDS; i++) {
        snprintf(names[i], sizeof names[i], "x%d", i);
        ops[i] = (bcg_operand){names[i], BCG_F32, 1, four, NULL};
    }
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k;
    bcg_error err;
    /* All 64 operands used, compiled and run. */
    char expr[BCG_MAX_OPERANDS * 6];
    char *at = expr;
    for (int i = 0; i < BCG_MAX_OPERANDS; i++)
        at += sprintf(at, i ? "+x%d" : "x%d", i);
    /* a left-deep chain of 63 additions is within BCG_MAX_DEPTH */
    assert_int_equal(bcg_compile(ctx, expr, ops, BCG_MAX_OPERANDS, NULL, &k, &err), BCG_OK);
    float data[BCG_MAX_OPERANDS][4], out[4];
    const void *in[BCG_MAX_OPERANDS];
    for (int i = 0; i < BCG_MAX_OPERANDS; i++) {
        for (int j = 0; j < 4; j++)
            data[i][j] = (float)(i + j);
        in[i] = data[i];
    }
    assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
    for (int j = 0; j < 4; j++)
        assert_true(out[j] == (float)(63 * 64 / 2 + 64 * j));
    expect_limit(bcg_compile(ctx, "x0", ops, BCG_MAX_OPERANDS + 1, NULL, &k, &err), &err,
                 "1 to 64");
    assert_null(k);
    bcg_context_free(ctx);
}

static void test_rank(void **state)
{
    (void)state;
    int64_t ones[BCG_MAX_RANK + 1];
    for (int d = 0; d <= BCG_MAX_RANK; d++)
        ones[d] = 1;
    ones[0] = 3;
    char *source;
    bcg_error err;
    assert_int_equal(emit1("a * 2", BCG_F32, BCG_MAX_RANK, ones, NULL, &source, &err), BCG_OK);
    bcg_free(source);
    expect_limit(emit1("a * 2", BCG_F32, BCG_MAX_RANK + 1, ones, NULL, &source, &err), &err,
                 "ranks go from 0 to 64");

    /* Regression (found by build-asan for issue 6): a rank past the limit
     * with a shorter shape array made the cache key read past its end. */
    bcg_context *ctx = bcg_context_new();
    int64_t one_size = 3;
    bcg_operand op = {"a", BCG_F32, BCG_MAX_RANK + 1, &one_size, NULL};
    bcg_kernel *k;
    expect_limit(bcg_compile(ctx, "a", &op, 1, NULL, &k, &err), &err, "ranks go from 0 to 64");
    op.rank = INT32_MAX;
    expect_limit(bcg_compile(ctx, "a", &op, 1, NULL, &k, &err), &err, "ranks go from 0 to 64");
    bcg_context_free(ctx);
}

static void test_name_length(void **state)
{
    (void)state;
    char name[BCG_MAX_NAME + 2];
    memset(name, 'n', sizeof name);
    name[BCG_MAX_NAME] = 0;
    bcg_operand op = {name, BCG_F32, 1, four, NULL};
    char *source;
    bcg_error err;
    assert_int_equal(bcg_emit(name, &op, 1, NULL, name, &source, &err), BCG_OK);
    bcg_free(source);
    name[BCG_MAX_NAME] = 'n';
    name[BCG_MAX_NAME + 1] = 0;
    expect_limit(bcg_emit(name, &op, 1, NULL, NULL, &source, &err), &err, "the limit is 63");
    /* As a function name it is not an identifier bcgen accepts. */
    op.name = "a";
    assert_int_equal(bcg_emit("a", &op, 1, NULL, name, &source, &err), BCG_ERR_USAGE);
    assert_non_null(strstr(err.message, "at most 63"));
}

static void test_elements_and_bytes(void **state)
{
    (void)state;
    char *source;
    bcg_error err;
    /* 2^61 - 1 f32 elements: bytes just under 2^63.  No memory is touched
     * by emitting. */
    int64_t at[] = {((int64_t)1 << 61) - 1};
    assert_int_equal(emit1("a + 1", BCG_F32, 1, at, NULL, &source, &err), BCG_OK);
    bcg_free(source);
    int64_t past[] = {(int64_t)1 << 61};
    expect_limit(emit1("a + 1", BCG_F32, 1, past, NULL, &source, &err), &err, "INT64_MAX bytes");
    /* Elements themselves past INT64_MAX. */
    int64_t huge[] = {(int64_t)1 << 32, (int64_t)1 << 31};
    expect_limit(emit1("a", BCG_BOOL, 2, huge, NULL, &source, &err), &err, "INT64_MAX");
    int64_t max_elements[] = {INT64_MAX};
    assert_int_equal(emit1("a", BCG_BOOL, 1, max_elements, NULL, &source, &err), BCG_OK);
    bcg_free(source);
}

/* Strides reaching both ways: each end fits in a byte offset while the span
 * between them (what a buffer must hold, the AOT _BYTES macro) must too. */
static void test_strided_span(void **state)
{
    (void)state;
    char *source;
    bcg_error err;
    const int64_t shape[] = {2, 2};
    const int64_t b_shape[] = {2, 2};
    int64_t at[] = {-(((int64_t)1 << 59) - 1), ((int64_t)1 << 59) - 1}; /* 2^60 - 1 elements */
    int64_t past[] = {-((int64_t)1 << 59), (int64_t)1 << 59};          /* 2^60 + 1 elements */
    bcg_operand ops[] = {{"a", BCG_F64, 2, shape, at}, {"b", BCG_F64, 2, b_shape, NULL}};
    assert_int_equal(bcg_emit("a + b", ops, 2, NULL, NULL, &source, &err), BCG_OK);
    bcg_free(source);
    ops[0].strides = past;
    expect_limit(bcg_emit("a + b", ops, 2, NULL, NULL, &source, &err), &err,
                 "more than a 64-bit byte count holds");
    assert_null(source);
    assert_int_equal(err.operand, 0);
}

/* Issue 9, finding 9: a contiguous operand's bytes must fit in int64 too
 * (2^61 f64 elements overflowed a multiplication in compile.c, and bcg_run
 * then skipped the operand's NULL check).  The result of `a > 0` is bool,
 * so only the input's own check can catch it. */
static void test_contiguous_span(void **state)
{
    (void)state;
    char *source;
    bcg_error err;
    int64_t at[] = {((int64_t)1 << 60) - 1};   /* 2^63 - 8 bytes */
    int64_t past[] = {(int64_t)1 << 61};       /* 2^64 bytes */
    int64_t split[] = {(int64_t)1 << 31, (int64_t)1 << 30};
    bcg_operand op = {"a", BCG_F64, 1, at, NULL};
    assert_int_equal(bcg_emit("a > 0", &op, 1, NULL, NULL, &source, &err), BCG_OK);
    bcg_free(source);
    op.shape = past;
    expect_limit(bcg_emit("a > 0", &op, 1, NULL, NULL, &source, &err), &err,
                 "more f64 elements than INT64_MAX bytes hold");
    assert_int_equal(err.operand, 0);
    op.rank = 2;
    op.shape = split;
    expect_limit(bcg_emit("a > 0", &op, 1, NULL, NULL, &source, &err), &err,
                 "up to dimension 0");
    /* the JIT path checks the same, and a kernel over the largest operand
     * still checks its pointer */
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k;
    op.rank = 1;
    op.shape = past;
    expect_limit(bcg_compile(ctx, "a > 0", &op, 1, NULL, &k, &err), &err,
                 "64-bit byte count");
    op.shape = at;
    int64_t one[] = {1};
    bcg_operand ops[] = {op, {"b", BCG_F64, 1, one, NULL}};
    assert_int_equal(bcg_compile(ctx, "b > 0", ops, 2, NULL, &k, &err), BCG_OK);
    bcg_context_free(ctx);
}

static void test_unroll_options(void **state)
{
    (void)state;
    bcg_options o;
    bcg_options_init(&o);
    char *source;
    bcg_error err;
    o.unroll_factor = 64;
    assert_int_equal(emit1("a + 1", BCG_F32, 1, four, &o, &source, &err), BCG_OK);
    bcg_free(source);
    o.unroll_factor = 65;
    expect_limit(emit1("a + 1", BCG_F32, 1, four, &o, &source, &err), &err, "(1..64)");
    bcg_options_init(&o);
    o.unroll_limit = 65536;
    assert_int_equal(emit1("a + 1", BCG_F32, 1, four, &o, &source, &err), BCG_OK);
    bcg_free(source);
    o.unroll_limit = 65537;
    expect_limit(emit1("a + 1", BCG_F32, 1, four, &o, &source, &err), &err, "(0..65536");
}

/* elements x nodes <= 2^20 is unrolled, one more element loops.  Sixteen
 * nodes: -(a + a + ... + a) with eight a's (negation, 7 additions, 8 leaves). */
static void test_unroll_budget_bounds_source(void **state)
{
    (void)state;
    const char *sixteen_nodes = "-(a + a + a + a + a + a + a + a)";
    bcg_options o;
    bcg_options_init(&o);
    o.unroll_limit = 65536;
    int64_t at[] = {65536}, past[] = {65537};
    char *source;
    bcg_error err;
    assert_int_equal(emit1(sixteen_nodes, BCG_F32, 1, at, &o, &source, &err), BCG_OK);
    assert_non_null(strstr(source, "Code: fully unrolled"));
    size_t unrolled_size = strlen(source);
    bcg_free(source);
    /* Past the element limit of the options: loops. */
    assert_int_equal(emit1(sixteen_nodes, BCG_F32, 1, past, &o, &source, &err), BCG_OK);
    assert_null(strstr(source, "Code: fully unrolled"));
    bcg_free(source);
    /* Past the node budget with elements within the options: loops. */
    int64_t half[] = {32769};
    const char *thirty_two_nodes = "-(a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a)";
    assert_int_equal(emit1(thirty_two_nodes, BCG_F32, 1, half, &o, &source, &err), BCG_OK);
    assert_null(strstr(source, "Code: fully unrolled"));
    bcg_free(source);
    half[0] = 32768;
    assert_int_equal(emit1(thirty_two_nodes, BCG_F32, 1, half, &o, &source, &err), BCG_OK);
    assert_non_null(strstr(source, "Code: fully unrolled"));
    /* The largest unrolled kernel's source: the bound README "Safety" gives
     * for what tcc is handed (16 MiB). */
    print_message("# largest unrolled sources: %zu and %zu bytes\n", unrolled_size,
                  strlen(source));
    assert_true(unrolled_size < ((size_t)16 << 20));
    assert_true(strlen(source) < ((size_t)16 << 20));
    bcg_free(source);
}

/* ---- BCG_MAX_SOURCE: the C bcg_compile hands to tcc --------------------------------- */

/* Compiles "a * 3 + 1" over f32[N] on a context whose source budget is
 * BUDGET (0: the default); returns the status, the source in *source
 * (copied; NULL on failure) and checks the kernel's result. */
static bcg_status compile_budget(size_t budget, int64_t n, const bcg_options *o, char **source,
                                 bcg_error *err)
{
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    if (budget)
        compile_set_max_source(ctx, budget);
    bcg_operand op = {"a", BCG_F32, 1, &n, NULL};
    bcg_kernel *k = NULL;
    *source = NULL;
    bcg_status s = bcg_compile(ctx, "a * 3 + 1", &op, 1, o, &k, err);
    if (s == BCG_OK) {
        assert_string_equal(bcg_kernel_note(k), "");
        *source = strdup(bcg_kernel_source(k));
        float in_data[64], out[64];
        assert_true(n <= 64);
        for (int i = 0; i < n; i++)
            in_data[i] = (float)i - 7.5f;
        const void *in[] = {in_data};
        assert_int_equal(bcg_run(k, out, in, err), BCG_OK);
        for (int i = 0; i < n; i++)
            assert_true(out[i] == in_data[i] * 3.0f + 1.0f);
    } else {
        assert_null(k);
    }
    bcg_context_free(ctx);
    return s;
}

static void expect_source_limit(bcg_status s, const bcg_error *err, size_t length)
{
    expect_limit(s, err, "BCG_MAX_SOURCE");
    char size[64];
    snprintf(size, sizeof size, "%zu bytes", length);
    assert_non_null(strstr(err->message, size));
}

/* A looped kernel exactly at the budget compiles; one byte less is
 * BCG_ERR_LIMIT naming the limit and the size. */
static void test_source_budget_looped(void **state)
{
    (void)state;
    char *source, *again;
    bcg_error err;
    assert_int_equal(compile_budget(0, 60, NULL, &source, &err), BCG_OK);
    size_t length = strlen(source);
    assert_null(strstr(source, "Code: fully unrolled"));
    assert_int_equal(compile_budget(length, 60, NULL, &again, &err), BCG_OK);
    assert_string_equal(source, again);
    free(again);
    expect_source_limit(compile_budget(length - 1, 60, NULL, &again, &err), &err, length);
    assert_null(again);
    free(source);
}

/* A fully unrolled kernel over the budget is made with loops instead; when
 * the loops are over it too, BCG_ERR_LIMIT gives the looped size. */
static void test_source_budget_unrolled_falls_back(void **state)
{
    (void)state;
    bcg_options o;
    bcg_options_init(&o);
    o.unroll_limit = 64;
    o.disable_vector_code = 1; /* tcc's unrolled C, not a small kernel's vector code */
    char *unrolled, *looped, *source;
    bcg_error err;
    assert_int_equal(compile_budget(0, 48, &o, &unrolled, &err), BCG_OK);
    assert_non_null(strstr(unrolled, "Code: fully unrolled"));
    bcg_options loops = o;
    loops.unroll_limit = 0;
    assert_int_equal(compile_budget(0, 48, &loops, &looped, &err), BCG_OK);
    size_t unrolled_length = strlen(unrolled), looped_length = strlen(looped);
    assert_true(looped_length < unrolled_length);
    /* at the budget: unrolled as asked */
    assert_int_equal(compile_budget(unrolled_length, 48, &o, &source, &err), BCG_OK);
    assert_string_equal(source, unrolled);
    free(source);
    /* one byte under: the looped kernel (the test helper checked its result) */
    assert_int_equal(compile_budget(unrolled_length - 1, 48, &o, &source, &err), BCG_OK);
    assert_null(strstr(source, "Code: fully unrolled"));
    assert_string_equal(source, looped);
    free(source);
    /* the loops exactly fit, then do not */
    assert_int_equal(compile_budget(looped_length, 48, &o, &source, &err), BCG_OK);
    assert_string_equal(source, looped);
    free(source);
    expect_source_limit(compile_budget(looped_length - 1, 48, &o, &source, &err), &err,
                        looped_length);
    assert_null(source);
    /* bcg_emit hands nothing to tcc and has no budget */
    int64_t n = 48;
    bcg_operand op = {"a", BCG_F32, 1, &n, NULL};
    assert_int_equal(bcg_emit("a * 3 + 1", &op, 1, &o, NULL, &source, &err), BCG_OK);
    assert_non_null(strstr(source, "Code: fully unrolled"));
    bcg_free(source);
    free(unrolled);
    free(looped);
}

/* The real budget (12 MiB), with a kernel just past it, which is never
 * handed to tcc: a 4096-leaf product over 986 elements, its loop unrolled
 * 64 times (and the 26 trips left over), makes 12.6 MiB of C.  (Falling back from full unrolling is the same code at
 * any budget: the test above.  This one stays small because test_valgrind
 * runs it under memcheck.) */
static void test_source_budget_default(void **state)
{
    (void)state;
    /* ((a * a) * (a * a)) ... with 4096 leaves */
    size_t cap = 4096 * 8;
    char *product = malloc(cap), *next = malloc(cap);
    assert_non_null(product);
    assert_non_null(next);
    strcpy(product, "a");
    for (int level = 0; level < 12; level++) {
        snprintf(next, cap, "(%s*%s)", product, product);
        strcpy(product, next);
    }
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_options o;
    bcg_options_init(&o);
    o.unroll_factor = 64;
    /* (per-element code: as tiles, the repeated subtrees are computed once
     * each, a dozen calls of C; lower.c, tile_repeats) */
    o.microkernel_run = 0;
    int64_t n = 986;
    bcg_operand op = {"a", BCG_I32, 1, &n, NULL};
    bcg_kernel *k;
    bcg_error err;
    bcg_status s = bcg_compile(ctx, product, &op, 1, &o, &k, &err);
    print_message("# %s\n", err.message);
    expect_limit(s, &err, "BCG_MAX_SOURCE");
    assert_non_null(strstr(err.message, "12582912 bytes"));
    assert_null(k);
    free(product);
    free(next);
    bcg_context_free(ctx);
}

/* ---- .npy limits ------------------------------------------------------------------ */

static char npy_path[64];

/* A version-2 .npy file whose header is HEADER padded with spaces to
 * HEADER_LENGTH bytes (ending in '\n'), and DATA_BYTES zero bytes after it. */
static void write_npy(const char *header, size_t header_length, size_t data_bytes)
{
    FILE *f = fopen(npy_path, "wb");
    assert_non_null(f);
    unsigned char prefix[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0};
    prefix[8] = (unsigned char)header_length;
    prefix[9] = (unsigned char)(header_length >> 8);
    prefix[10] = (unsigned char)(header_length >> 16);
    prefix[11] = (unsigned char)(header_length >> 24);
    fwrite(prefix, 1, sizeof prefix, f);
    char *text = malloc(header_length);
    assert_non_null(text);
    memset(text, ' ', header_length);
    memcpy(text, header, strlen(header));
    text[header_length - 1] = '\n';
    fwrite(text, 1, header_length, f);
    free(text);
    for (size_t i = 0; i < data_bytes; i++)
        fputc(0, f);
    assert_int_equal(fclose(f), 0);
}

static void test_npy_header_size(void **state)
{
    (void)state;
    snprintf(npy_path, sizeof npy_path, "/tmp/bcgen_limits_%ld.npy", (long)getpid());
    const char *header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    npy_array a;
    bcg_error err;
    error_clear(&err);
    write_npy(header, NPY_MAX_HEADER, 8);
    bcg_status s = npy_read(npy_path, &a, &err);
    if (s)
        print_message("# %s\n", err.message);
    assert_int_equal(s, BCG_OK);
    npy_free(&a);
    error_clear(&err);
    write_npy(header, NPY_MAX_HEADER + 1, 8);
    expect_limit(npy_read(npy_path, &a, &err), &err, "NPY_MAX_HEADER");
    assert_null(a.data);
    unlink(npy_path);
}

static void test_npy_data_size(void **state)
{
    (void)state;
    snprintf(npy_path, sizeof npy_path, "/tmp/bcgen_limits_%ld.npy", (long)getpid());
    npy_array a;
    bcg_error err;
    /* Exactly NPY_MAX_BYTES of f4: within the limit, so the error is the
     * missing data, not the size. */
    error_clear(&err);
    write_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (274877906944,), }", 128, 0);
    assert_int_equal(npy_read(npy_path, &a, &err), BCG_ERR_IO);
    assert_non_null(strstr(err.message, "truncated"));
    error_clear(&err);
    write_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (274877906945,), }", 128, 0);
    expect_limit(npy_read(npy_path, &a, &err), &err, "NPY_MAX_BYTES");
    assert_null(a.data);
    unlink(npy_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expression_length),
        cmocka_unit_test(test_nesting_depth),
        cmocka_unit_test(test_operand_count),
        cmocka_unit_test(test_rank),
        cmocka_unit_test(test_name_length),
        cmocka_unit_test(test_elements_and_bytes),
        cmocka_unit_test(test_strided_span),
        cmocka_unit_test(test_contiguous_span),
        cmocka_unit_test(test_unroll_options),
        cmocka_unit_test(test_unroll_budget_bounds_source),
        cmocka_unit_test(test_source_budget_looped),
        cmocka_unit_test(test_source_budget_unrolled_falls_back),
        cmocka_unit_test(test_source_budget_default),
        cmocka_unit_test(test_npy_header_size),
        cmocka_unit_test(test_npy_data_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
