/* test_multi.c - programs of several outputs through the C API (issue 12,
 * part 3): bcg_compile_program, bcg_run_outputs and bcg_emit_program.  The
 * motivating case (forward and gradient: y = g * a; s = y summed to b's
 * shape) against single-output kernels and plain C, on every thread count;
 * outputs described by name and by index; and every error naming what is
 * wrong (duplicate, unknown and later names, output shapes, overlaps). */
/* internal.h comes before cmocka.h: cmocka defines a fail() macro. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

enum { ROWS = 37, COLS = 301 };
static const int64_t shape_ga[2] = {ROWS, COLS}, shape_b[1] = {COLS};

static void fill(float *x, int64_t n, unsigned seed)
{
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 8) % 2001) / 250.0f - 4.0f;
    }
}

/* y = g * a (element-wise) and s = y summed over rows to b's shape: y is
 * g * a exactly, s is bit for bit what the single-output reduction kernel
 * gives, on 1 to 4 threads; a third output t = y + b cast to f64. */
static void test_forward_and_gradient(void **state)
{
    (void)state;
    bcg_operand ops[] = {{"g", BCG_F32, 2, shape_ga, NULL},
                         {"a", BCG_F32, 2, shape_ga, NULL},
                         {"b", BCG_F32, 1, shape_b, NULL}};
    static float g[ROWS * COLS], a[ROWS * COLS], b[COLS];
    fill(g, ROWS * COLS, 1);
    fill(a, ROWS * COLS, 2);
    fill(b, COLS, 3);
    const void *in[] = {g, a, b};
    bcg_output outs[2] = {{.dtype = BCG_DTYPE_AUTO, .reduce = BCG_REDUCE_SUM, .rank = 1,
                           .shape = shape_b},
                          {.dtype = BCG_F64}};
    const char *names[2] = {"s", "t"};
    bcg_options o;
    bcg_options_init(&o);
    o.outputs = outs;
    o.output_count = 2;
    o.output_names = names;
    bcg_program *p = NULL;
    bcg_error err;
    assert_int_equal(bcg_compile_program(ctx, "y = g * a; s = y; t = y + b", ops, 3, &o, &p,
                                         &err), BCG_OK);
    assert_int_equal(bcg_program_output_count(p), 3);
    assert_string_equal(bcg_program_output_name(p, 0), "y");
    assert_string_equal(bcg_program_output_name(p, 2), "t");
    assert_int_equal(bcg_kernel_rank(bcg_program_kernel(p, 1)), 1);
    assert_int_equal(bcg_kernel_dtype(bcg_program_kernel(p, 2)), BCG_F64);

    /* the single-output reduction, for the bits of s */
    bcg_output reduce = {.dtype = BCG_DTYPE_AUTO, .reduce = BCG_REDUCE_SUM, .rank = 1,
                         .shape = shape_b};
    bcg_options ro;
    bcg_options_init(&ro);
    ro.output = &reduce;
    bcg_kernel *k = NULL;
    assert_int_equal(bcg_compile(ctx, "g * a", ops, 3, &ro, &k, &err), BCG_OK);
    static float want_s[COLS];
    assert_int_equal(bcg_run(k, want_s, in, &err), BCG_OK);

    for (int threads = 1; threads <= 4; threads++) {
        static float y[ROWS * COLS], s[COLS];
        static double t[ROWS * COLS];
        memset(y, 0, sizeof y);
        memset(s, 0, sizeof s);
        void *out[] = {y, s, t};
        assert_int_equal(bcg_run_outputs(p, out, in, threads, &err), BCG_OK);
        for (int i = 0; i < ROWS * COLS; i++) {
            assert_true(y[i] == g[i] * a[i]);
            assert_true(t[i] == (double)(g[i] * a[i] + b[i % COLS]));
        }
        assert_memory_equal(s, want_s, sizeof s);
    }
    bcg_kernel_release(k);
    bcg_program_free(p);
}

/* Outputs by index, a plain expression through bcg_compile_program, and a
 * name used twice later (its value recomputed, the same bits). */
static void test_by_index_and_plain(void **state)
{
    (void)state;
    int64_t n = 1000, shape[1] = {n};
    bcg_operand ops[] = {{"x", BCG_I8, 1, shape, NULL}};
    int8_t x[1000];
    for (int i = 0; i < n; i++)
        x[i] = (int8_t)(i * 7);
    const void *in[] = {x};
    bcg_output outs[2] = {{.dtype = BCG_DTYPE_AUTO}, {.dtype = BCG_DTYPE_AUTO,
                                                      .reduce = BCG_REDUCE_SUM}};
    bcg_options o;
    bcg_options_init(&o);
    o.outputs = outs;
    o.output_count = 2;
    bcg_program *p = NULL;
    bcg_error err;
    assert_int_equal(bcg_compile_program(ctx, " d = x * x ; total = d + d ;", ops, 1, &o, &p,
                                         &err), BCG_OK);
    int8_t d[1000];
    int64_t total = 0, want = 0;
    void *out[] = {d, &total};
    assert_int_equal(bcg_run_outputs(p, out, in, 1, &err), BCG_OK);
    for (int i = 0; i < n; i++) {
        int8_t sq = (int8_t)(x[i] * x[i]);
        assert_int_equal(d[i], sq);
        want += (int8_t)(sq + sq); /* i8 arithmetic wraps, the sum is i64 */
    }
    assert_int_equal(total, want);
    bcg_program_free(p);

    bcg_output one = {.dtype = BCG_I32};
    bcg_options_init(&o);
    o.output = &one;
    assert_int_equal(bcg_compile_program(ctx, "x + 1", ops, 1, &o, &p, &err), BCG_OK);
    assert_int_equal(bcg_program_output_count(p), 1);
    assert_string_equal(bcg_program_output_name(p, 0), "");
    int32_t r[1000];
    void *out1[] = {r};
    assert_int_equal(bcg_run_outputs(p, out1, in, 2, &err), BCG_OK);
    for (int i = 0; i < n; i++)
        assert_int_equal(r[i], (int8_t)(x[i] + 1));
    bcg_program_free(p);
}

static void expect_error(const char *text, const bcg_options *o, bcg_status status,
                         const char *part, int column)
{
    static const int64_t shape[2] = {3, 4}, row[1] = {4};
    bcg_operand ops[] = {{"a", BCG_F32, 2, shape, NULL}, {"b", BCG_F32, 1, row, NULL}};
    bcg_program *p = (bcg_program *)&p;
    bcg_error err;
    bcg_status s = bcg_compile_program(ctx, text, ops, 2, o, &p, &err);
    if (s != status || !strstr(err.message, part) || (column >= 0 && err.column != column))
        fail_msg("%s: got status %d column %d '%s'; want %d column %d '%s'", text, s,
                 err.column, err.message, status, column, part);
    assert_null(p);
}

static void test_errors_name_what_is_wrong(void **state)
{
    (void)state;
    expect_error("y = a; y = b", NULL, BCG_ERR_USAGE, "statement name y is given twice", 8);
    expect_error("y = a; s = z + a", NULL, BCG_ERR_PARSE, "statement s: unknown name 'z'", 12);
    expect_error("y = s; s = a", NULL, BCG_ERR_PARSE, "s, which is not an earlier statement",
                 5);
    expect_error("a = b * 2; s = a", NULL, BCG_ERR_USAGE, "statement name a is also an "
                 "operand's name", 1);
    expect_error("y = a;; s = b", NULL, BCG_ERR_PARSE, "statement 2 at column 7 is empty", 7);
    expect_error("y = a; b + 1", NULL, BCG_ERR_PARSE, "statement 2 at column 8 is not NAME = "
                 "EXPR", 8);
    expect_error("y = a +; s = b", NULL, BCG_ERR_PARSE, "statement y:", -1);

    int64_t bad[1] = {3};
    bcg_output outs[2] = {{.dtype = BCG_DTYPE_AUTO, .reduce = BCG_REDUCE_SUM, .rank = 1,
                           .shape = bad},
                          {.dtype = BCG_DTYPE_AUTO}};
    const char *names[2] = {"s", "nope"};
    bcg_options o;
    bcg_options_init(&o);
    o.outputs = outs;
    o.output_count = 1;
    o.output_names = names;
    expect_error("y = a * b; s = y", &o, BCG_ERR_BROADCAST,
                 "statement s: cannot reduce the result (3, 4) to the output shape (3,)", -1);
    o.outputs = &outs[1];
    o.output_names = &names[1];
    expect_error("y = a * b; s = y", &o, BCG_ERR_USAGE, "names nope, which is not a statement",
                 -1);
    bcg_output twice[2] = {{.dtype = BCG_DTYPE_AUTO}, {.dtype = BCG_DTYPE_AUTO}};
    const char *y_twice[2] = {"y", "y"};
    o.outputs = twice;
    o.output_names = y_twice;
    o.output_count = 2;
    expect_error("y = a * b; s = y", &o, BCG_ERR_USAGE, "output 0 (y) is described twice", -1);
    int64_t keep[1] = {4};
    bcg_output reduced = {.dtype = BCG_DTYPE_AUTO, .reduce = BCG_REDUCE_MAX, .rank = 1,
                          .shape = keep};
    o.outputs = &reduced;
    o.output_names = y_twice;
    o.output_count = 1;
    expect_error("y = a * b; s = y + 1", &o, BCG_ERR_USAGE,
                 "statement s uses y, whose output is a reduction (max)", -1);
    bcg_output wrong = {.dtype = BCG_I8};
    o.outputs = &wrong;
    o.output_names = &names[0];
    expect_error("y = a * b; s = y", &o, BCG_ERR_TYPE, "statement s: cannot cast the result "
                 "from f32 to the output dtype i8", -1);
    bcg_options_init(&o);
    o.inplace = 0;
    expect_error("y = a * b; s = y", &o, BCG_ERR_USAGE, "cannot write in place", -1);
    o.inplace = -1;
    o.output_count = 3;
    o.outputs = outs;
    expect_error("y = a * b; s = y", &o, BCG_ERR_USAGE, "3 output descriptions given", -1);

    /* bcg_compile takes one expression */
    static const int64_t shape[2] = {3, 4};
    bcg_operand ops[] = {{"a", BCG_F32, 2, shape, NULL}};
    bcg_kernel *k;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, "y = a; s = a", ops, 1, NULL, &k, &err), BCG_ERR_PARSE);
    assert_non_null(strstr(err.message, "bcg_compile_program"));
    bcg_options_init(&o);
    o.outputs = twice;
    o.output_count = 1;
    assert_int_equal(bcg_compile(ctx, "a", ops, 1, &o, &k, &err), BCG_ERR_USAGE);
    assert_non_null(strstr(err.message, "bcg_compile_program"));
    /* ... also when the same kernel without them is cached */
    assert_int_equal(bcg_compile(ctx, "a", ops, 1, NULL, &k, &err), BCG_OK);
    assert_int_equal(bcg_compile(ctx, "a", ops, 1, &o, &k, &err), BCG_ERR_USAGE);
    assert_null(k);
    char *source = NULL;
    assert_int_equal(bcg_emit("y = a; s = a", ops, 1, NULL, NULL, &source, &err), BCG_ERR_PARSE);
    assert_null(source);
}

/* bcg_run_outputs: outputs may not overlap each other or an operand. */
static void test_run_checks_overlaps(void **state)
{
    (void)state;
    static const int64_t shape[1] = {8};
    bcg_operand ops[] = {{"a", BCG_F32, 1, shape, NULL}};
    bcg_program *p = NULL;
    bcg_error err;
    assert_int_equal(bcg_compile_program(ctx, "y = a + 1; z = a * 2", ops, 1, NULL, &p, &err),
                     BCG_OK);
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, buf[16];
    const void *in[] = {a};
    void *same[] = {buf, buf + 4};
    assert_int_equal(bcg_run_outputs(p, same, in, 1, &err), BCG_ERR_RUN);
    assert_non_null(strstr(err.message, "output z overlaps output y"));
    void *into_a[] = {buf, a};
    assert_int_equal(bcg_run_outputs(p, into_a, in, 1, &err), BCG_ERR_RUN);
    assert_non_null(strstr(err.message, "output z overlaps operand a"));
    assert_int_equal(bcg_run_outputs(p, NULL, in, 1, &err), BCG_ERR_RUN);
    assert_int_equal(bcg_run_outputs(NULL, same, in, 1, &err), BCG_ERR_USAGE);
    void *fine[] = {buf, buf + 8};
    assert_int_equal(bcg_run_outputs(p, fine, in, 1, &err), BCG_OK);
    for (int i = 0; i < 8; i++) {
        assert_true(buf[i] == a[i] + 1);
        assert_true(buf[8 + i] == a[i] * 2);
    }
    bcg_program_free(p);
    bcg_program_free(NULL);
}

/* bcg_emit_program: each statement's function and the program's, one
 * prelude; the same text twice. */
static void test_emit_program(void **state)
{
    (void)state;
    static const int64_t shape[2] = {3, 4}, row[1] = {4};
    bcg_operand ops[] = {{"g", BCG_F16, 2, shape, NULL}, {"b", BCG_I8, 1, row, NULL}};
    bcg_output s = {.dtype = BCG_DTYPE_AUTO, .reduce = BCG_REDUCE_SUM, .rank = 1, .shape = row};
    const char *name = "s";
    bcg_options o;
    bcg_options_init(&o);
    o.outputs = &s;
    o.output_count = 1;
    o.output_names = &name;
    char *first = NULL, *second = NULL;
    bcg_error err;
    assert_int_equal(bcg_emit_program("y = exp(g) * b; s = y // b", ops, 2, &o, "step", &first,
                                      &err), BCG_OK);
    assert_int_equal(bcg_emit_program("y = exp(g) * b; s = y // b", ops, 2, &o, "step", &second,
                                      &err), BCG_OK);
    assert_string_equal(first, second);
    /* fused: one function computing both outputs, called by the program's */
    assert_non_null(strstr(first, "void step_fused(void *output, const void *const *inputs)"));
    assert_null(strstr(first, "void step_y("));
    assert_non_null(strstr(first, "void step(void *const *out, const void *const *in)"));
    assert_non_null(strstr(first, "step_fused(out[1], operands);"));
    bcg_free(first);
    /* statement by statement (separate_statements): a function each */
    o.separate_statements = 1;
    assert_int_equal(bcg_emit_program("y = exp(g) * b; s = y // b", ops, 2, &o, "step", &first,
                                      &err), BCG_OK);
    o.separate_statements = 0;
    assert_non_null(strstr(first, "void step_y(void *output, const void *const *inputs)"));
    assert_non_null(strstr(first, "void step_s(void *output, const void *const *inputs)"));
    assert_non_null(strstr(first, "void step(void *const *out, const void *const *in)"));
    /* one prelude: the typedefs and each helper once */
    const char *at = strstr(first, "typedef signed char bcg_i8;");
    assert_non_null(at);
    assert_null(strstr(at + 1, "typedef signed char bcg_i8;"));
    at = strstr(first, "static float bcg_floordiv_f32(");
    assert_non_null(at);
    assert_null(strstr(at + 1, "static float bcg_floordiv_f32("));
    bcg_free(first);
    bcg_free(second);
    assert_int_equal(bcg_emit_program("y = g; s = y", ops, 2, NULL, "1bad", &first, &err),
                     BCG_ERR_USAGE);
}

/* The emitted program compiled by libtcc (jit.c) and called through its
 * wrapper writes what bcg_run_outputs writes, bit for bit. */
static void test_emitted_program_runs(void **state)
{
    (void)state;
    static const int64_t shape[2] = {7, 33}, row[1] = {33};
    bcg_operand ops[] = {{"g", BCG_F32, 2, shape, NULL}, {"b", BCG_I16, 1, row, NULL}};
    bcg_output outs[2] = {{.dtype = BCG_DTYPE_AUTO, .reduce = BCG_REDUCE_MEAN, .rank = 1,
                           .shape = row},
                          {.dtype = BCG_F64}};
    const char *names[2] = {"s", "t"};
    bcg_options o;
    bcg_options_init(&o);
    o.outputs = outs;
    o.output_count = 2;
    o.output_names = names;
    const char *text = "y = g * b - 1.5; s = y; t = sqrt(abs(y)) // b";
    char *source = NULL;
    bcg_error err;
    assert_int_equal(bcg_emit_program(text, ops, 2, &o, "prog", &source, &err), BCG_OK);
    jit_code *code = NULL;
    kernel_fn fn = NULL;
    assert_int_equal(jit_compile(source, "prog", NULL, 0, &code, &fn, &err), BCG_OK);
    bcg_free(source);
    bcg_program *p = NULL;
    assert_int_equal(bcg_compile_program(ctx, text, ops, 2, &o, &p, &err), BCG_OK);
    static float g[7 * 33], y1[7 * 33], y2[7 * 33], s1[33], s2[33];
    static double t1[7 * 33], t2[7 * 33];
    static int16_t b[33];
    fill(g, 7 * 33, 9);
    for (int i = 0; i < 33; i++)
        b[i] = (int16_t)(i % 5 - 2);
    const void *in[] = {g, b};
    void *a_out[] = {y1, s1, t1}, *b_out[] = {y2, s2, t2};
    assert_int_equal(bcg_run_outputs(p, a_out, in, 1, &err), BCG_OK);
    /* the wrapper's ABI: void prog(void *const *out, const void *const *in) */
    void (*wrapper)(void *const *, const void *const *);
    memcpy(&wrapper, &fn, sizeof wrapper);
    wrapper(b_out, in);
    assert_memory_equal(y1, y2, sizeof y1);
    assert_memory_equal(s1, s2, sizeof s1);
    assert_memory_equal(t1, t2, sizeof t1);
    jit_free(code);
    bcg_program_free(p);
}

/* Fusion: a program over one result shape runs as one kernel (a fused
 * kernel exists) whose outputs are bit for bit the per-statement kernels'
 * (separate_statements), on 1 to 4 threads, in every code form the fused
 * kernel takes: tiles of microkernels with shared subtrees, a block of
 * accumulators (the forward + gradient case), 16 partial sums along the
 * innermost loop, per-element loops (a strided view, a cast on store) and
 * full unrolling; and programs that cannot fuse run statement by
 * statement. */
typedef struct fused_case {
    const char *text;
    bcg_dtype dtype;        /* of g and a */
    int64_t rows, cols;
    int reduce;             /* of output "s" (BCG_REDUCE_NONE: none) */
    int64_t reduce_shape[2];
    int reduce_rank;
    bcg_dtype cast;         /* output "y"'s dtype (BCG_DTYPE_AUTO: its own) */
    bool transposed;        /* output "y" written through a transposed view */
    bool fuses;
} fused_case;

static void run_both(const fused_case *fc, int count, const char **names, bcg_program *fused,
                     bcg_program *separate, const void *const *in, int threads)
{
    size_t bytes = (size_t)(fc->rows * fc->cols) * 8 + 64;
    void *got[4], *want[4];
    for (int k = 0; k < count; k++) {
        got[k] = calloc(1, bytes);
        want[k] = calloc(1, bytes);
        assert_non_null(got[k]);
        assert_non_null(want[k]);
    }
    bcg_error err;
    assert_int_equal(bcg_run_outputs(fused, got, in, threads, &err), BCG_OK);
    assert_int_equal(bcg_run_outputs(separate, want, in, 1, &err), BCG_OK);
    for (int k = 0; k < count; k++) {
        if (memcmp(got[k], want[k], bytes) != 0)
            fail_msg("%s: output %s differs from its statement's kernel on %d threads", fc->text,
                     names[k], threads);
        free(got[k]);
        free(want[k]);
    }
}

static void test_fused_matches_statements(void **state)
{
    (void)state;
    static const fused_case cases[] = {
        /* forward + gradient: a block of accumulators along the rows */
        {"y = g * a; s = y", BCG_F32, 256, 1000, BCG_REDUCE_SUM, {1, 1000}, 2,
         BCG_DTYPE_AUTO, false, true},
        {"y = g * a; s = y", BCG_F64, 256, 1000, BCG_REDUCE_SUM, {1, 1000}, 2,
         BCG_DTYPE_AUTO, false, true},
        /* a sum along the innermost loop (16 partial sums), y cast on store */
        {"y = g * a - 1; s = y * y; t = -y", BCG_F32, 300, 700, BCG_REDUCE_MEAN, {300, 1}, 2,
         BCG_F64, false, true},
        /* element-wise tiles sharing g * a across three outputs */
        {"y = g * a; s = sqrt(abs(y)) + y; t = y * 2", BCG_F32, 200, 1024, BCG_REDUCE_NONE,
         {0, 0}, 0, BCG_DTYPE_AUTO, false, true},
        /* per-element loops: y through a transposed view; a max */
        {"y = g - a; s = maximum(y, g); t = y", BCG_F64, 180, 333, BCG_REDUCE_MAX, {1, 1}, 2,
         BCG_DTYPE_AUTO, true, true},
        /* integers, fully unrolled */
        {"y = g + a; s = y * a", BCG_I32, 3, 5, BCG_REDUCE_NONE, {0, 0}, 0, BCG_I64, false,
         true},
        {"y = g + a; s = y * a", BCG_I32, 3, 5, BCG_REDUCE_PROD, {3, 1}, 2, BCG_I64, false,
         true},
        /* not fusable: y's result is g's shape, s's the broadcast with b's */
        {"y = g * 2; s = a + b", BCG_F32, 4, 1000, BCG_REDUCE_NONE, {0, 0}, 0, BCG_DTYPE_AUTO,
         false, false},
        /* two reductions to one shape: both accumulators in one loop nest */
        {"y = g * a; s = y; t = a", BCG_F32, 64, 64, BCG_REDUCE_SUM, {1, 64}, 2,
         BCG_DTYPE_AUTO, false, true},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const fused_case *fc = &cases[c];
        int64_t shape[2] = {fc->rows, fc->cols}, row[2] = {1, fc->cols};
        int64_t b_shape[1] = {fc->cols};
        bcg_operand ops[] = {{"g", fc->dtype, 2, shape, NULL},
                             {"a", fc->dtype, 2, fc->cols == 1000 && fc->rows == 4 ? row : shape,
                              NULL},
                             {"b", fc->dtype, 1, b_shape, NULL}};
        size_t size = bcg_dtype_size(fc->dtype), n = (size_t)(fc->rows * fc->cols);
        unsigned char *g = malloc(n * size), *a = malloc(n * size), *b = malloc((size_t)fc->cols * size);
        assert_non_null(g);
        assert_non_null(a);
        assert_non_null(b);
        float *scratch = malloc(n * sizeof *scratch);
        assert_non_null(scratch);
        for (int which = 0; which < 3; which++) {
            unsigned char *x = which == 0 ? g : which == 1 ? a : b;
            size_t count = which == 2 ? (size_t)fc->cols : n;
            fill(scratch, (int64_t)count, 11u + (unsigned)which + 7u * (unsigned)c);
            for (size_t i = 0; i < count; i++) {
                if (fc->dtype == BCG_F32)
                    memcpy(x + i * size, &scratch[i], size);
                else if (fc->dtype == BCG_F64) {
                    double v = (double)scratch[i] * 1.000001;
                    memcpy(x + i * size, &v, size);
                } else {
                    int32_t v = (int32_t)(scratch[i] * 3.0f);
                    memcpy(x + i * size, &v, size);
                }
            }
        }
        free(scratch);
        const void *in[] = {g, a, b};
        int64_t transposed[2] = {1, fc->rows};
        bcg_output outs[2] = {{.dtype = fc->cast, .rank = fc->transposed ? 2 : 0,
                               .strides = fc->transposed ? transposed : NULL},
                              {.dtype = BCG_DTYPE_AUTO, .reduce = fc->reduce,
                               .rank = fc->reduce_rank, .shape = fc->reduce_shape}};
        const char *described[2] = {"y", "s"};
        const char *names[4] = {"y", "s", "t", NULL};
        bcg_options o;
        bcg_options_init(&o);
        o.outputs = outs;
        o.output_count = 2;
        o.output_names = described;
        bcg_output third = {.dtype = BCG_DTYPE_AUTO, .reduce = BCG_REDUCE_SUM, .rank = 2,
                            .shape = fc->reduce_shape};
        bcg_output three[3] = {outs[0], outs[1], third};
        const char *three_names[3] = {"y", "s", "t"};
        if (strstr(fc->text, "t = a")) { /* the second reduction */
            o.outputs = three;
            o.output_count = 3;
            o.output_names = three_names;
        }
        int count = strstr(fc->text, "t =") ? 3 : 2;
        bcg_program *fused = NULL, *separate = NULL;
        bcg_error err;
        if (bcg_compile_program(ctx, fc->text, ops, 3, &o, &fused, &err) != BCG_OK)
            fail_msg("%s: %s", fc->text, err.message);
        o.separate_statements = 1;
        assert_int_equal(bcg_compile_program(ctx, fc->text, ops, 3, &o, &separate, &err), BCG_OK);
        if ((bcg_program_fused(fused) != NULL) != fc->fuses)
            fail_msg("%s: %s", fc->text, fc->fuses ? "not fused" : "fused");
        assert_null(bcg_program_fused(separate));
        for (int threads = 1; threads <= 4; threads++)
            run_both(fc, count, names, fused, separate, in, threads);
        bcg_program_free(fused);
        bcg_program_free(separate);
        free(g);
        free(a);
        free(b);
    }
}

/* Several reductions in one fused kernel (the backward pass: gradients of
 * several broadcast operands, each summed, averaged, multiplied, or its
 * extreme or truth taken): each output bit for bit its statement's own
 * kernel on 1-4 threads, in f32, f64 and i32, in the three forms (a block
 * of accumulators per sum over the rows, 16 partial sums per sum along
 * them, per-element code); reductions over other dimensions than the
 * first's do not fuse and say why, nor do ones the tiles cannot take over
 * long runs (per-element code would be slower than their own kernels). */
typedef struct reduce_output {
    const char *name;
    int reduce;           /* BCG_REDUCE_NONE: element-wise */
    int rank;
    int64_t shape[2];
    bcg_dtype dtype;
} reduce_output;

typedef struct reductions_case {
    const char *text;
    bcg_dtype dtype;
    int64_t rows, cols;
    int count;
    reduce_output outputs[4];
    const char *why; /* NULL: fuses; else part of the reason it does not ("": slower) */
    bool scalar;     /* microkernel_run 0: no tiles, the per-element form */
} reductions_case;

static void fill_dtype(unsigned char *x, bcg_dtype dtype, size_t n, unsigned seed)
{
    float *scratch = malloc(n * sizeof *scratch);
    assert_non_null(scratch);
    fill(scratch, (int64_t)n, seed);
    size_t size = bcg_dtype_size(dtype);
    for (size_t i = 0; i < n; i++) {
        if (dtype == BCG_F32) {
            memcpy(x + i * size, &scratch[i], size);
        } else if (dtype == BCG_F64) {
            double v = (double)scratch[i] * 1.000001;
            memcpy(x + i * size, &v, size);
        } else {
            int32_t v = (int32_t)(scratch[i] * 3.0f);
            memcpy(x + i * size, &v, size);
        }
    }
    free(scratch);
}

static void test_fused_reductions(void **state)
{
    (void)state;
    static const reductions_case cases[] = {
        /* gradients of g and a (both summed over rows) and the forward y */
        {"s1 = g * a; s2 = g; y = g * a", BCG_F32, 256, 1000, 3,
         {{"s1", BCG_REDUCE_SUM, 2, {1, 1000}, BCG_DTYPE_AUTO},
          {"s2", BCG_REDUCE_SUM, 1, {1000}, BCG_DTYPE_AUTO},
          {"y", BCG_REDUCE_NONE, 0, {0, 0}, BCG_DTYPE_AUTO}}, NULL, false},
        /* along the innermost loop in tiles (16 partial sums each) */
        {"s1 = g * a; y = g * a + 1; s2 = g - a", BCG_F32, 300, 700, 3,
         {{"s1", BCG_REDUCE_SUM, 2, {300, 1}, BCG_DTYPE_AUTO},
          {"y", BCG_REDUCE_NONE, 0, {0, 0}, BCG_DTYPE_AUTO},
          {"s2", BCG_REDUCE_MEAN, 2, {300, 1}, BCG_DTYPE_AUTO}}, NULL, false},
        {"s1 = g * a; s2 = g", BCG_F64, 200, 900, 2,
         {{"s1", BCG_REDUCE_MEAN, 2, {1, 900}, BCG_DTYPE_AUTO},
          {"s2", BCG_REDUCE_SUM, 2, {1, 900}, BCG_F32}}, NULL, false},
        /* per-element code: f64 compensated partial sums and a max */
        {"s1 = g * a; s2 = g - a; m = g", BCG_F64, 300, 700, 3,
         {{"s1", BCG_REDUCE_SUM, 2, {300, 1}, BCG_DTYPE_AUTO},
          {"s2", BCG_REDUCE_MEAN, 2, {300, 1}, BCG_DTYPE_AUTO},
          {"m", BCG_REDUCE_MAX, 2, {300, 1}, BCG_DTYPE_AUTO}}, NULL, true},
        /* ... which the tiles cannot take: slower than the statements' kernels */
        {"s1 = g * a; m = g", BCG_F64, 300, 700, 2,
         {{"s1", BCG_REDUCE_SUM, 2, {300, 1}, BCG_DTYPE_AUTO},
          {"m", BCG_REDUCE_MAX, 2, {300, 1}, BCG_DTYPE_AUTO}}, "", false},
        /* f32 mean, min, prod and a cast on store, over everything */
        {"y = g * a; s1 = y; s2 = g; s3 = abs(a) < 2", BCG_F32, 40, 70, 4,
         {{"y", BCG_REDUCE_NONE, 0, {0, 0}, BCG_F64},
          {"s1", BCG_REDUCE_MEAN, 0, {0, 0}, BCG_DTYPE_AUTO},
          {"s2", BCG_REDUCE_MIN, 2, {1, 1}, BCG_DTYPE_AUTO},
          {"s3", BCG_REDUCE_ALL, 0, {0, 0}, BCG_DTYPE_AUTO}}, NULL, true},
        /* integers: a wrapping sum, a product and any, f64 out */
        {"s1 = g * a; s2 = g + 1; s3 = a > 0", BCG_I32, 50, 64, 3,
         {{"s1", BCG_REDUCE_SUM, 2, {1, 64}, BCG_F64},
          {"s2", BCG_REDUCE_PROD, 2, {1, 64}, BCG_DTYPE_AUTO},
          {"s3", BCG_REDUCE_ANY, 1, {64}, BCG_DTYPE_AUTO}}, NULL, true},
        /* one over rows, one over columns: not one set of reduced loops */
        {"s1 = g * a; s2 = g", BCG_F32, 64, 64, 2,
         {{"s1", BCG_REDUCE_SUM, 2, {1, 64}, BCG_DTYPE_AUTO},
          {"s2", BCG_REDUCE_SUM, 2, {64, 1}, BCG_DTYPE_AUTO}},
         "reduces dimensions {1}, statement s1 dimensions {0}", false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const reductions_case *rc = &cases[c];
        int64_t shape[2] = {rc->rows, rc->cols};
        bcg_operand ops[] = {{"g", rc->dtype, 2, shape, NULL}, {"a", rc->dtype, 2, shape, NULL}};
        size_t n = (size_t)(rc->rows * rc->cols);
        unsigned char *g = malloc(n * 8), *a = malloc(n * 8);
        assert_non_null(g);
        assert_non_null(a);
        fill_dtype(g, rc->dtype, n, 21u + 3u * (unsigned)c);
        fill_dtype(a, rc->dtype, n, 22u + 3u * (unsigned)c);
        const void *in[] = {g, a};
        bcg_output outs[4];
        const char *names[4];
        for (int k = 0; k < rc->count; k++) {
            const reduce_output *ro = &rc->outputs[k];
            outs[k] = (bcg_output){.dtype = ro->dtype, .reduce = ro->reduce, .rank = ro->rank,
                                   .shape = ro->reduce ? ro->shape : NULL};
            names[k] = ro->name;
        }
        bcg_options o;
        bcg_options_init(&o);
        o.outputs = outs;
        o.output_count = rc->count;
        o.output_names = names;
        if (rc->scalar)
            o.microkernel_run = 0;
        bcg_program *fused = NULL, *separate = NULL;
        bcg_error err;
        if (bcg_compile_program(ctx, rc->text, ops, 2, &o, &fused, &err) != BCG_OK)
            fail_msg("%s: %s", rc->text, err.message);
        o.separate_statements = 1;
        assert_int_equal(bcg_compile_program(ctx, rc->text, ops, 2, &o, &separate, &err), BCG_OK);
        if ((bcg_program_fused(fused) != NULL) != (rc->why == NULL))
            fail_msg("%s: %s", rc->text, rc->why ? "fused" : "not fused");
        if (rc->why && rc->why[0]) {
            program p;
            program_fusion f;
            arena *ar = arena_new();
            assert_non_null(ar);
            o.separate_statements = 0;
            assert_int_equal(program_resolve(ar, rc->text, ops, 2, &o, &p, &err), BCG_OK);
            assert_int_equal(program_fuse_check(ar, &p, ops, 2, rc->text, &f), BCG_OK);
            assert_false(f.fused);
            if (!strstr(f.why, rc->why))
                fail_msg("%s: %s", rc->text, f.why);
            arena_free(ar);
        } else if (!rc->why) {
            const char *source = bcg_kernel_source(bcg_program_fused(fused));
            assert_non_null(source);
            /* a second accumulator (acc<j>, j the root after the first reduction) */
            if (!strstr(source, "acc1") && !strstr(source, "acc2") && !strstr(source, "acc3"))
                fail_msg("%s: %s", rc->text, source);
        }
        for (int threads = 1; threads <= 4; threads++) {
            void *got[4], *want[4];
            for (int k = 0; k < rc->count; k++) {
                got[k] = calloc(1, n * 8 + 64);
                want[k] = calloc(1, n * 8 + 64);
                assert_non_null(got[k]);
                assert_non_null(want[k]);
            }
            assert_int_equal(bcg_run_outputs(fused, got, in, threads, &err), BCG_OK);
            assert_int_equal(bcg_run_outputs(separate, want, in, 1, &err), BCG_OK);
            for (int k = 0; k < rc->count; k++) {
                if (memcmp(got[k], want[k], n * 8 + 64) != 0)
                    fail_msg("%s: output %s differs from its statement's kernel on %d threads",
                             rc->text, names[k], threads);
                free(got[k]);
                free(want[k]);
            }
        }
        bcg_program_free(fused);
        bcg_program_free(separate);
        free(g);
        free(a);
    }
}

/* The fused kernel computes a subtree several outputs share once: one
 * multiplication call a tile in the tiled form, one element local in the
 * per-element form (its C source says so). */
static int count_of(const char *text, const char *what)
{
    int n = 0;
    for (const char *at = strstr(text, what); at; at = strstr(at + 1, what))
        n++;
    return n;
}

static void test_fused_shares(void **state)
{
    (void)state;
    static const int64_t big[2] = {8, 2048}, small[2] = {3, 5};
    for (int tiled = 0; tiled < 2; tiled++) {
        const int64_t *shape = tiled ? big : small;
        bcg_operand ops[] = {{"g", BCG_F32, 2, shape, NULL}, {"a", BCG_F32, 2, shape, NULL}};
        bcg_program *p = NULL;
        bcg_error err;
        assert_int_equal(bcg_compile_program(ctx, "y = g * a; s = sqrt(g * a) + 1; t = -(g * a)",
                                             ops, 2, NULL, &p, &err), BCG_OK);
        const bcg_kernel *k = bcg_program_fused(p);
        assert_non_null(k);
        const char *source = bcg_kernel_source(k);
        assert_non_null(source);
        if (tiled) {
            assert_int_equal(count_of(source, "bcg_mk_mul_f32("), 2); /* declared, called */
        } else {
            assert_non_null(strstr(source, "const float element0 = "));
            assert_int_equal(count_of(source, "in0[") , 15); /* g read once an element */
        }
        bcg_program_free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_and_gradient),
        cmocka_unit_test(test_by_index_and_plain),
        cmocka_unit_test(test_errors_name_what_is_wrong),
        cmocka_unit_test(test_run_checks_overlaps),
        cmocka_unit_test(test_emit_program),
        cmocka_unit_test(test_emitted_program_runs),
        cmocka_unit_test(test_fused_matches_statements),
        cmocka_unit_test(test_fused_shares),
        cmocka_unit_test(test_fused_reductions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
