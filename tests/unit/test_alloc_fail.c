/* test_alloc_fail.c - the allocation-failure sweep (issue 6, after SQLite's
 * malloc tests): a representative workload - compile (unrolled and looped,
 * strided, in place, an expression error), run, emit, broadcast shapes,
 * .npy write and read, a run on two threads (its pieces compiled and the
 * pool started on first use), an AOT .c/.h pair - is run once to count its
 * allocations, then once for
 * every N with the Nth allocation failing (util.c's mem_fail_after).  Each
 * run must end in BCG_ERR_NOMEM with a message (never a crash, never a
 * wrong result), leak nothing, and leave the context usable: the same
 * workload on the same context then succeeds with correct results.
 *
 * Leaks: util.c's count of live blocks (mem_live) must be the same before
 * and after each iteration; under build-asan LeakSanitizer also checks
 * every allocation, libtcc's included, at exit.
 *
 * Not covered: allocations inside libtcc itself (tcc calls malloc directly
 * and exits on failure outside tcc_compile_string); see README "Safety". */
#include "aot.h"
#include "internal.h"
#include "npy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* cmocka defines a fail() macro: (fail)(...) calls util.c's fail(). */

/* ---- the workload ------------------------------------------------------------- */

static const int64_t shape_a[] = {5, 3, 4, 1}, shape_b[] = {3, 1, 1}, shape_x[] = {4, 3};
static const int64_t strides_x[] = {1, 4}; /* a transposed view of a 3x4 buffer */
static float data_a[60], data_b[3], data_c = 2.5f;
static float data_x[12];
/* bcg_run_threads splits only outputs of at least 2 x 32768 elements */
#define WIDE_ROWS 128
#define WIDE_COLUMNS 512
static const int64_t shape_wide[] = {WIDE_ROWS, WIDE_COLUMNS}, shape_row[] = {WIDE_COLUMNS};
static float data_wide[WIDE_ROWS * WIDE_COLUMNS], data_row[WIDE_COLUMNS];
static float out_wide[WIDE_ROWS * WIDE_COLUMNS];

static void fill_inputs(void)
{
    for (int i = 0; i < 60; i++)
        data_a[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < 3; i++)
        data_b[i] = (float)i - 1.0f;
    for (int i = 0; i < 12; i++)
        data_x[i] = (float)i * 0.5f;
    for (int i = 0; i < WIDE_ROWS * WIDE_COLUMNS; i++)
        data_wide[i] = (float)(i % 13) - 6.0f;
    for (int i = 0; i < WIDE_COLUMNS; i++)
        data_row[i] = (float)(i % 5) * 0.25f;
}

static float expected_main(int i)
{
    float a = data_a[i], b = data_b[(i / 4) % 3];
    float left = a > b ? sqrtf(fabsf(a)) * data_c : b - 2.0f;
    return left + (a > 1.0f ? a : 1.0f);
}

/* Runs every step; returns the first failing status (err holds its message). */
static bcg_status workload(bcg_context *ctx, bcg_error *err, const char *npy_path)
{
    bcg_operand ops[3] = {{"a", BCG_F32, 4, shape_a, NULL},
                          {"b", BCG_F32, 3, shape_b, NULL},
                          {"c", BCG_F32, 0, NULL, NULL}};
    bcg_kernel *k;
    bcg_status s;

    /* 1. the seed example, looped (60 elements > the default unroll limit) */
    const char *expr = "where(a > b, sqrt(abs(a)) * c, b - 2) + maximum(a, 1)";
    if ((s = bcg_compile(ctx, expr, ops, 3, NULL, &k, err)))
        return s;
    float out[60];
    const void *in[] = {data_a, data_b, &data_c};
    if ((s = bcg_run(k, out, in, err)))
        return s;
    for (int i = 0; i < 60; i++)
        if (out[i] != expected_main(i))
            return (fail)(err, BCG_ERR_RUN, "wrong result at %d: %g, want %g", i, out[i],
                        expected_main(i));

    /* 2. fully unrolled, strided input, in place */
    bcg_options o;
    bcg_options_init(&o);
    o.unroll_limit = 64;
    o.inplace = 0;
    float target[12];
    for (int i = 0; i < 12; i++)
        target[i] = 1.0f;
    bcg_operand ops2[2] = {{"t", BCG_F32, 2, shape_x, NULL}, {"x", BCG_F32, 2, shape_x, strides_x}};
    if ((s = bcg_compile(ctx, "t + x * 2", ops2, 2, &o, &k, err)))
        return s;
    const void *in2[] = {target, data_x};
    if ((s = bcg_run(k, NULL, in2, err)))
        return s;
    for (int r = 0; r < 4; r++)
        for (int col = 0; col < 3; col++)
            if (target[r * 3 + col] != 1.0f + data_x[r + col * 4] * 2.0f)
                return (fail)(err, BCG_ERR_RUN, "wrong in-place result at %d,%d", r, col);

    /* 3. an expression error: the error path must not leak either */
    s = bcg_compile(ctx, "a + (b * ", ops, 3, NULL, &k, err);
    if (s != BCG_ERR_PARSE)
        return s ? s : (fail)(err, BCG_ERR_RUN, "a parse error compiled");
    error_clear(err);

    /* 4. emit with a function name */
    char *source = NULL;
    if ((s = bcg_emit("clip(a, -1, 1) // 2", ops, 3, NULL, "clipped", &source, err)))
        return s;
    bool named = strstr(source, "clipped") != NULL;
    bcg_free(source);
    if (!named)
        return (fail)(err, BCG_ERR_RUN, "emitted source lacks its function name");

    /* 5. shapes alone, with the legacy warning */
    const int64_t *shapes[] = {shape_a, shape_b};
    int ranks[] = {4, 3}, rank;
    int64_t result[BCG_MAX_RANK];
    char warning[256];
    bcg_options legacy;
    bcg_options_init(&legacy);
    legacy.warn_legacy = 1;
    if ((s = bcg_broadcast_shapes(2, shapes, ranks, NULL, &legacy, result, &rank, warning,
                                  sizeof warning, err)))
        return s;

    /* 6. a .npy round trip (the CLI's reader and writer) */
    npy_array array = {BCG_F32, {2, {4, 3}}, data_x}, back;
    if ((s = npy_write(npy_path, &array, err)))
        return s;
    if ((s = npy_read(npy_path, &back, err)))
        return s;
    bool same = memcmp(back.data, data_x, sizeof data_x) == 0;
    npy_free(&back);
    if (!same)
        return (fail)(err, BCG_ERR_RUN, ".npy round trip changed the data");

    /* 7. two threads: the first threaded run compiles the kernel's pieces
     * and starts the context's pool */
    bcg_operand wide[2] = {{"w", BCG_F32, 2, shape_wide, NULL},
                           {"r", BCG_F32, 1, shape_row, NULL}};
    if ((s = bcg_compile(ctx, "w * 2 - r", wide, 2, NULL, &k, err)))
        return s;
    const void *in_wide[] = {data_wide, data_row};
    memset(out_wide, 0, sizeof out_wide);
    if ((s = bcg_run_threads(k, out_wide, in_wide, 2, err)))
        return s;
    for (int i = 0; i < WIDE_ROWS * WIDE_COLUMNS; i++)
        if (out_wide[i] != data_wide[i] * 2.0f - data_row[i % WIDE_COLUMNS])
            return (fail)(err, BCG_ERR_RUN, "wrong threaded result at %d", i);
    if (compile_threaded_run_count(ctx) < 1)
        return (fail)(err, BCG_ERR_RUN, "the run did not use two threads");

    /* 8. an AOT pair of two kernels (libm, strides, in place) */
    bcg_operand aot_ops[2] = {{"t", BCG_I16, 2, shape_x, NULL},
                              {"x", BCG_I16, 2, shape_x, strides_x}};
    aot_kernel kernels[2] = {{.name = "scaled", .expression = "sqrt(abs(a)) * c + b",
                              .operands = ops, .operand_count = 3},
                             {.name = "accumulate", .expression = "t + x",
                              .operands = aot_ops, .operand_count = 2}};
    bcg_options_init(&kernels[0].options);
    bcg_options_init(&kernels[1].options);
    kernels[1].options.inplace = 0;
    aot_request request = {.kernel_count = 2, .kernels = kernels, .restrict_pointers = true,
                           .index_bits = 32, .command = "test_alloc_fail",
                           .source_name = "k.c", .header_name = "k.h"};
    char *aot_source = NULL, *aot_header = NULL;
    if ((s = aot_generate(&request, &aot_source, &aot_header, err)))
        return s;
    bool complete = strstr(aot_source, "void accumulate(") && strstr(aot_source, "sqrtf") &&
                    strstr(aot_header, "#define SCALED_OUT_ELEMENTS 60");
    mem_free(aot_source);
    mem_free(aot_header);
    if (!complete)
        return (fail)(err, BCG_ERR_RUN, "the AOT pair lacks a kernel");

    /* 9. a program of two outputs (issue 12 part 3): compiled, run on two
     * threads, emitted, and as an AOT kernel with its wrapper */
    static const int64_t shape_sum[] = {1, 3, 1, 1};
    bcg_output total = {.dtype = BCG_DTYPE_AUTO, .reduce = BCG_REDUCE_SUM, .rank = 4,
                        .shape = shape_sum};
    const char *total_name = "s";
    bcg_options_init(&o);
    o.outputs = &total;
    o.output_count = 1;
    o.output_names = &total_name;
    bcg_program *p = NULL;
    if ((s = bcg_compile_program(ctx, "y = a * b; s = y", ops, 3, &o, &p, err)))
        return s;
    float y[60], sums[3];
    void *outs[] = {y, sums};
    s = bcg_run_outputs(p, outs, in, 2, err);
    bcg_program_free(p);
    if (s)
        return s;
    for (int i = 0; i < 60; i++)
        if (y[i] != data_a[i] * data_b[(i / 4) % 3])
            return (fail)(err, BCG_ERR_RUN, "wrong program output y at %d", i);
    if ((s = bcg_emit_program("y = a * b; s = y", ops, 3, &o, "step", &source, err)))
        return s;
    named = strstr(source, "void step(void *const *out") != NULL;
    bcg_free(source);
    if (!named)
        return (fail)(err, BCG_ERR_RUN, "the emitted program lacks its function");
    aot_kernel program_kernel = {.name = "step", .expression = "y = a * b; s = y",
                                 .operands = ops, .operand_count = 3, .options = o};
    request.kernels = &program_kernel;
    request.kernel_count = 1;
    if ((s = aot_generate(&request, &aot_source, &aot_header, err)))
        return s;
    complete = strstr(aot_source, "void step(") && strstr(aot_header, "void step_s(");
    mem_free(aot_source);
    mem_free(aot_header);
    if (!complete)
        return (fail)(err, BCG_ERR_RUN, "the AOT pair lacks the program");
    return BCG_OK;
}

/* ---- the sweep ------------------------------------------------------------------- */

static char npy_path[64];

static void test_sweep_every_allocation(void **state)
{
    (void)state;
    fill_inputs();
    bcg_error err;

    /* Warm-up: libc and libtcc make one-time allocations on first use. */
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    assert_int_equal(workload(ctx, &err, npy_path), BCG_OK);
    bcg_context_free(ctx);

    mem_fail_after(0);
    ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_status s = workload(ctx, &err, npy_path);
    long total = mem_fail_after(0);
    bcg_context_free(ctx);
    assert_int_equal(s, BCG_OK);
    assert_true(total > 50);

    long nomem = 0, leaks = 0, wrong = 0, unusable = 0;
    for (long n = 1; n <= total; n++) {
        long before = mem_live();
        mem_fail_after(n);
        ctx = bcg_context_new();
        if (ctx) {
            error_clear(&err);
            s = workload(ctx, &err, npy_path);
            mem_fail_after(0);
            if (s == BCG_ERR_NOMEM && err.status == BCG_ERR_NOMEM && err.message[0]) {
                nomem++;
            } else {
                wrong++;
                print_message("# allocation %ld of %ld: status %d (%s), want BCG_ERR_NOMEM\n", n,
                              total, (int)s, err.message);
            }
            /* The same context, no failure: everything works. */
            if (workload(ctx, &err, npy_path) != BCG_OK) {
                unusable++;
                print_message("# after failing allocation %ld the context fails: %s\n", n,
                              err.message);
            }
            bcg_context_free(ctx);
        } else {
            mem_fail_after(0);
            nomem++;
        }
        long after = mem_live();
        if (after != before) {
            leaks++;
            print_message("# allocation %ld of %ld: %ld blocks live before, %ld after\n", n,
                          total, before, after);
        }
    }
    print_message("# %ld allocation points, each failed once: %ld gave BCG_ERR_NOMEM\n", total,
                  nomem);
    assert_int_equal(wrong, 0);
    assert_int_equal(unusable, 0);
    assert_int_equal(leaks, 0);
    assert_int_equal(nomem, total);
}

/* A kernel compiled before a failure stays valid and cached after it. */
static void test_failure_keeps_cached_kernels(void **state)
{
    (void)state;
    fill_inputs();
    long live = mem_live();
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    assert_true(mem_live() > live); /* the leak check counts what contexts hold */
    int64_t n[] = {8};
    bcg_operand ops[1] = {{"a", BCG_F32, 1, n, NULL}};
    bcg_kernel *first, *again, *other;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, "a * 3", ops, 1, NULL, &first, &err), BCG_OK);
    mem_fail_after(1);
    assert_int_equal(bcg_compile(ctx, "a * 4", ops, 1, NULL, &other, &err), BCG_ERR_NOMEM);
    assert_null(other);
    mem_fail_after(0);
    long tcc_before = compile_tcc_count(ctx);
    assert_int_equal(bcg_compile(ctx, "a * 3", ops, 1, NULL, &again, &err), BCG_OK);
    assert_ptr_equal(first, again);
    assert_int_equal(compile_tcc_count(ctx), tcc_before);
    float out[8];
    const void *in[] = {data_a};
    assert_int_equal(bcg_run(again, out, in, &err), BCG_OK);
    for (int i = 0; i < 8; i++)
        assert_true(out[i] == data_a[i] * 3.0f);
    bcg_context_free(ctx);
    assert_int_equal(mem_live(), live);
}

static int setup(void **state)
{
    (void)state;
    snprintf(npy_path, sizeof npy_path, "/tmp/bcgen_alloc_fail_%ld.npy", (long)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(npy_path);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_every_allocation),
        cmocka_unit_test(test_failure_keeps_cached_kernels),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
