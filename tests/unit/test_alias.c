/* test_alias.c - operands that are the output's own memory (docs/semantics.md
 * "Runtime": bcg_run allows an exact alias, the same element size and
 * strides as the output).
 *
 * test_random_aliases: seeded random trees over a and b, both the output's
 * memory (the output passed as their pointer, or a the in-place target and
 * b the same memory), beside c, an operand of its own that is contiguous,
 * one value a row, reversed, strided or transposed, so that the kernels
 * take the JIT's forms over rows (the fused function row by row, per-row
 * values computed once a row, 2-D tiles with gathers, the microkernels'
 * tiles, the flat and small forms, streaming stores, two threads).  Every
 * kernel must write each element only after it has read every operand's
 * element there; the output is compared bit for bit with the reference
 * evaluator run on copies of the inputs, the shared memory against a page
 * that faults.  The test counts the kernels that call vector code and
 * fails when too few do. */
/* internal.h comes before cmocka.h: cmocka defines a fail() macro. */
#include "internal.h"
#include "vex.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compare.h"
#include "guarded.h"

static uint64_t random_state = 0x616c696173657321ull;

static uint64_t next(void) { return xorshift64(&random_state); }
static int below(int n) { return (int)(next() % (uint64_t)n); }

/* Finite values (no NaN: its payload is not promised), small integers and
 * fractions, so sums and products stay exact enough to mean something. */
static void fill(void *buffer, bcg_dtype t, int64_t count)
{
    size_t size = bcg_dtype_size(t);
    for (int64_t i = 0; i < count; i++) {
        uint64_t r = next();
        double v = (double)(int64_t)(r % 41) - 20.0 + ((r >> 8) & 1 ? 0.25 * (double)((r >> 9) % 4) : 0);
        char *at = (char *)buffer + (size_t)i * size;
        if (t == BCG_F32)
            *(float *)at = (float)v;
        else if (t == BCG_F64)
            *(double *)at = v;
        else
            memcpy(at, &r, size); /* integers: any bits */
    }
}

static void evaluate(const char *expr, const bcg_operand *ops, int count, const bcg_options *options,
                     void *want, const void *const *in)
{
    bcg_error err;
    arena *ar = arena_new();
    assert_non_null(ar);
    compile *front = arena_alloc(ar, sizeof *front);
    assert_non_null(front);
    memset(front, 0, sizeof *front);
    front->arena = ar;
    front->err = &err;
    assert_int_equal(compile_front(front, expr, ops, count, options), BCG_OK);
    assert_int_equal(eval_run(front, want, in, NULL), BCG_OK);
    arena_free(ar);
}

/* The expression under construction (cut short, never overflowed). */
typedef struct text {
    char s[2048];
    size_t n;
    int aliased_leaves; /* a and b written */
} text;

static void put(text *t, const char *s)
{
    size_t len = strlen(s);
    if (t->n + len < sizeof t->s) {
        memcpy(t->s + t->n, s, len + 1);
        t->n += len;
    }
}

/* A tree over a, b and c of the operations the vector code and the
 * microkernels take: arithmetic, minimum/maximum, comparisons, where. */
static void tree(text *t, int depth)
{
    static const char *const leaves[] = {"a", "b", "c", "a", "b", "3"};
    if (depth == 0 || below(4) == 0) {
        int leaf = below(6);
        t->aliased_leaves += leaf == 0 || leaf == 1 || leaf == 3 || leaf == 4;
        put(t, leaves[leaf]);
        return;
    }
    static const char *const open[] = {"(", "(", "(", "minimum(", "maximum(", "where(", "abs("};
    static const char *const middle[] = {" + ", " - ", " * ", ", ", ", ", " > ", ""};
    int op = below(7);
    put(t, open[op]);
    size_t x_at = t->n;
    tree(t, depth - 1);
    size_t x_end = t->n;
    if (op == 6) {
        put(t, ")");
        return;
    }
    put(t, middle[op]);
    size_t y_at = t->n;
    tree(t, depth - 1);
    size_t y_end = t->n;
    if (op == 5) { /* where(x > y, y, x) */
        char x[2048], y[2048];
        snprintf(x, sizeof x, "%.*s", (int)(x_end - x_at), t->s + x_at);
        snprintf(y, sizeof y, "%.*s", (int)(y_end - y_at), t->s + y_at);
        put(t, ", ");
        put(t, y);
        put(t, ", ");
        put(t, x);
    }
    put(t, ")");
}

/* One case: EXPR over a and b (dtype T, shape (ROWS, RUN), contiguous) and
 * c (C_DTYPE, laid out by C_LAYOUT); a and b are the output's memory.
 * Returns false when the kernel's result is not of T's size (no alias). */
/* the forms a kernel's source names (SEEN_COUNT, ORDER FORM: form_names) */
enum { SEEN_SMALL, SEEN_FUSED_ROWS, SEEN_GATHERED, SEEN_STREAMED, SEEN_MICROKERNELS, SEEN_COUNT };
static const char *const form_names[SEEN_COUNT] = {"small", "fused row by row", "gathered tiles",
                                                   "streamed", "microkernel calls"};

static bool alias_case(const char *expr, bcg_dtype t, bcg_dtype c_dtype, int64_t rows, int64_t run,
                       int c_layout, bool inplace, bool threads, int stream, unsigned *forms)
{
    static guarded shared_memory, c_memory;
    size_t size = bcg_dtype_size(t), c_size = bcg_dtype_size(c_dtype);
    int64_t n = rows * run;
    int64_t shape[2] = {rows, run};
    /* c: 0 contiguous, 1 one value a row, 2 reversed rows and run, 3 run
     * stride 2, 4 transposed */
    int64_t c_shape[2] = {rows, c_layout == 1 ? 1 : run}, c_strides[2], c_span, c_offset = 0;
    switch (c_layout) {
    case 1: c_strides[0] = 1, c_strides[1] = 1, c_span = rows; break;
    case 2: c_strides[0] = -run, c_strides[1] = -1, c_span = n, c_offset = n - 1; break;
    case 3: c_strides[0] = 2 * run, c_strides[1] = 2, c_span = 2 * n - 1; break;
    case 4: c_strides[0] = 1, c_strides[1] = rows, c_span = n; break;
    default: c_strides[0] = run, c_strides[1] = 1, c_span = n; break;
    }
    bcg_operand ops[3] = {{"a", t, 2, shape, NULL}, {"b", t, 2, shape, NULL},
                          {"c", c_dtype, 2, c_shape, c_strides}};
    bcg_options options;
    bcg_options_init(&options);
    options.inplace = inplace ? 0 : -1;
    options.stream_stores = stream;
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_kernel *k = NULL;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, expr, ops, 3, &options, &k, &err), BCG_OK);
    if (bcg_dtype_size(bcg_kernel_dtype(k)) != size || (inplace && bcg_kernel_dtype(k) != t)) {
        bcg_context_free(ctx);
        return false;
    }
    const char *source = bcg_kernel_source(k);
    assert_non_null(source);
    *forms = (strstr(source, "bcg_vex_small") || strstr(source, "bcg_vex_flat") ? 1u << SEEN_SMALL : 0) |
             (strstr(source, ", row_count);") ? 1u << SEEN_FUSED_ROWS : 0) |
             (strstr(source, "bcg_mk_gather") ? 1u << SEEN_GATHERED : 0) |
             (strstr(source, "bcg_mk_fence") ? 1u << SEEN_STREAMED : 0) |
             (strstr(source, "bcg_mk_") && !strstr(source, "bcg_vex") ? 1u << SEEN_MICROKERNELS : 0);
    char *shared = guarded_alloc(&shared_memory, (size_t)n * size, below(2));
    char *c_base = guarded_alloc(&c_memory, (size_t)c_span * c_size, below(2));
    fill(shared, t, n);
    fill(c_base, c_dtype, c_span);
    char *copy_a = malloc((size_t)n * size), *copy_b = malloc((size_t)n * size);
    char *want = malloc((size_t)n * size);
    assert_true(copy_a && copy_b && want);
    memcpy(copy_a, shared, (size_t)n * size);
    memcpy(copy_b, shared, (size_t)n * size);
    const char *c_at = c_base + c_offset * (int64_t)c_size;
    const void *reference_in[3] = {copy_a, copy_b, c_at};
    bcg_options plain = options;
    plain.inplace = -1; /* (the evaluator writes WANT; the result's dtype is the same) */
    evaluate(expr, ops, 3, &plain, want, reference_in);
    const void *in[3] = {shared, shared, c_at};
    bcg_status status = threads ? bcg_run_threads(k, inplace ? NULL : shared, in, 2, &err)
                                : bcg_run(k, inplace ? NULL : shared, in, &err);
    assert_int_equal(status, BCG_OK);
    if (memcmp(shared, want, (size_t)n * size) != 0) {
        int64_t e = 0;
        while (memcmp(shared + e * (int64_t)size, want + e * (int64_t)size, size) == 0)
            e++;
        print_error("%s: a, b %s (%lld, %lld) the output's memory%s, c %s layout %d, %s, stream %d: "
                    "element %lld differs from eval.c\n",
                    expr, bcg_dtype_name(t), (long long)rows, (long long)run, inplace ? " (in place)" : "",
                    bcg_dtype_name(c_dtype), c_layout, threads ? "2 threads" : "1 thread", stream,
                    (long long)e);
    }
    assert_memory_equal(shared, want, (size_t)n * size);
    free(copy_a);
    free(copy_b);
    free(want);
    bcg_context_free(ctx);
    return true;
}

static void test_random_aliases(void **state)
{
    (void)state;
    static const bcg_dtype types[] = {BCG_F32, BCG_F64, BCG_I32, BCG_I16, BCG_U8, BCG_I8, BCG_I64};
    /* c's dtype promotes with the type to the type itself */
    static const bcg_dtype narrower[] = {BCG_I16, BCG_F32, BCG_I8, BCG_U8, BCG_U8, BCG_I8, BCG_I32};
    static const int64_t runs[] = {3, 7, 8, 16, 17, 33, 64, 65, 100, 257, 1000, 4096};
    int cases = 200, run_cases = 0, vector = 0, form_count[SEEN_COUNT] = {0};
    for (int i = 0; i < cases; i++) {
        int ti = below(7);
        bcg_dtype t = types[ti];
        bcg_dtype c_dtype = below(2) ? t : narrower[ti];
        int64_t run = runs[below(12)];
        int64_t rows = 1 + below(run > 1000 ? 40 : 200);
        text built = {.n = 0, .aliased_leaves = 0};
        built.s[0] = 0;
        tree(&built, 1 + below(3));
        if (!built.aliased_leaves) /* (an operand not read takes no part in the shape) */
            put(&built, " + a");
        const char *expr = built.s;
        static const int streams[] = {BCG_STREAM_AUTO, 0, 1};
        unsigned forms = 0;
        static const int layouts[] = {0, 1, 1, 1, 2, 3, 4, 4};
        int layout = layouts[below(8)];
        if (layout == 1 && below(2)) { /* medium rows past the small kernels: the rows forms */
            static const int64_t medium[] = {17, 33, 65, 100, 257};
            run = medium[below(5)];
            rows = 40 + below(160);
        }
        if (alias_case(expr, t, c_dtype, rows, run, layout, below(3) == 0, below(4) == 0,
                       streams[below(3)], &forms)) {
            run_cases++;
            vector += forms != 0;
            for (int f = 0; f < SEEN_COUNT; f++)
                form_count[f] += forms >> f & 1;
        }
    }
    print_message("# %d of %d kernels with a and b the output's memory run, %d through vector code "
                  "or microkernels:",
                  run_cases, cases, vector);
    for (int f = 0; f < SEEN_COUNT; f++)
        print_message(" %s %d%s", form_names[f], form_count[f], f + 1 < SEEN_COUNT ? "," : "\n");
    assert_true(run_cases * 2 > cases);
    assert_true(vector * 2 > run_cases);
    for (int f = 0; f < SEEN_COUNT; f++) /* (every form reached; AVX2 for the fused ones) */
        assert_true(form_count[f] * 50 >= run_cases || (f != SEEN_MICROKERNELS && !vex_cpu_ok()));
}

int main(void)
{
    random_state = seeded_stream(random_state);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_aliases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
