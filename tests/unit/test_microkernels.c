/* test_microkernels.c - the vectorised inner runs (runtime/microkernels.c
 * and the tiles gen/emit.c writes for them) against the reference
 * evaluator, bit for bit.
 *
 * Each case compiles an expression with microkernel_run forced low, checks
 * from the kernel's source that the tiled path was taken where it must be,
 * runs it on random data (NaN, infinities, signed zeros and extreme
 * integers included) and compares every output byte with eval_run on the
 * same plan.  Layouts cover tile remainders (runs of 1 to 3000 elements
 * around the 1024-element tile), broadcast operands (stride 0 in the run),
 * strided and negatively strided inputs, pointers that are only
 * element-aligned, and in-place kernels (single operations on runs shorter
 * than a tile go through the _rows form); each layout once with plain stores
 * and once with streaming stores forced (bcg_options.stream_stores 1: the
 * root's _nt microkernel, its unaligned head and its tail).  The reference
 * evaluator is itself checked against NumPy by tests/diff. */
/* internal.h comes before cmocka.h: cmocka defines a fail() macro. */
#include "internal.h"
#include "kir.h"
#include "vex.h"

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
#include <sys/mman.h>
#include <unistd.h>

#include "compare.h"
#include "guarded.h"

static const char *const expressions[] = {
    "a + b", "a - b", "a * b", "a / b", "minimum(a, b)", "maximum(a, b)",
    "a > b", "a <= b", "a == b", "a != b", "a < b", "a >= b",
    "where(a > b, a, b)", "where(a > 0, a, 0.1 * a)", "a * b + c", "(a + b) * c - a",
    "-a + b", "abs(a) * b", "sqrt(abs(a)) + b", "exp(a) + b", "log(abs(a)) * b",
    "sin(a) * cos(b)", "tanh(a) - b", "floor(a) + ceil(b)", "a & b", "(a | b) ^ c",
    "minimum(a, maximum(b, c))", "where(c, a, b)", "a - 3", "2 < b",
    "add_sat(a, b)", "sub_sat(a, b) + c", "add_sat(a, 3)",
    /* the cast kernels (from FIRST_CAST on): explicit casts, mixed dtypes, where's condition */
    "f64(a) * b", "f32(a) - b", "i8(a) + b", "i16(a) * c", "i32(a) - b", "i64(a) + c",
    "u8(a) + b", "u16(a) - c", "u32(a) * b", "u64(a) + b", "bool(a) + b", "f32(a > b)",
    "where(a, b, c)", "abs(a) - i32(b)", "f64(a) / f32(b)", "i32(minimum(a, b)) * c",
    "f64(a) + f64(b)", "f32(a * b) - f32(c)", "f64(f32(a)) * b",
    /* repeated subtrees, computed once a tile (kernel_ir.same) */
    "(a * b + c) * (a * b + c)", "where(a > b, a - b, b - a) + (a - b)",
    "where(where(a >= 3, b, a) > 5, where(a >= 3, b, a), f64(b))",
    /* a root that is a literal or an operand once folded: a fill, a copy (b
     * reversed in the strided layout; a onto itself in place) */
    "where(1 > 0, 2, a)", "where(0 > 1, 2, b)", "where(0 > 1, 2, a)",
    /* fills of one byte repeated: memset (microkernels.c fill_bytes) */
    "where(1 > 0, 0, a)", "where(0 > 1, b, -1)", "a * 0",
};

#define FIRST_CAST 33 /* expressions[FIRST_CAST] is the first with a cast */

static const bcg_dtype dtypes[] = {BCG_F32, BCG_F64, BCG_I8, BCG_I16, BCG_I32,
                                   BCG_I64, BCG_U8, BCG_U16, BCG_U32, BCG_U64};

static uint64_t random_state = 88172645463325252ull;

static uint64_t random_next(void) { return xorshift64(&random_state); }

/* Random values with the special ones mixed in. */
static void fill(void *buffer, bcg_dtype t, int64_t count)
{
    static const double specials[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 0.5};
    for (int64_t i = 0; i < count; i++) {
        uint64_t r = random_next();
        if (t == BCG_F32 || t == BCG_F64) {
            double v = (r & 7) == 0 ? specials[(r >> 3) % 8]
                                    : ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 8.0;
            if (t == BCG_F32)
                ((float *)buffer)[i] = (float)v;
            else
                ((double *)buffer)[i] = v;
        } else if (t == BCG_F16 || t == BCG_BF16) {
            double v = (r & 7) == 0 ? specials[(r >> 3) % 8]
                                    : ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 8.0;
            ((uint16_t *)buffer)[i] = t == BCG_F16 ? bcg_f16_from_f64(v) : bcg_bf16_from_f32((float)v);
        } else if (t == BCG_BOOL) {
            ((uint8_t *)buffer)[i] = (uint8_t)(r % 3); /* 2 is a true byte too */
        } else if ((r & 3) == 0) {
            /* the integers' edges: divisors 0 and -1, shift counts around the
             * width (and negative ones), the minimum and maximum, small values */
            int64_t bits = (int64_t)(8 * bcg_dtype_size(t));
            int64_t edges[] = {0, 1, -1, 2, 3, bits - 1, bits, bits + 1, 64,
                               INT64_MIN, INT64_MAX, (int64_t)((r >> 8) % 17) - 8};
            int64_t v = edges[(r >> 2) % (sizeof edges / sizeof edges[0])];
            if (v == INT64_MIN || v == INT64_MAX) { /* of the dtype's width */
                uint64_t top = (uint64_t)1 << (bits - 1);
                bool is_unsigned = dtype_kind_of(t) == KIND_UINT;
                uint64_t u = v == INT64_MIN ? (is_unsigned ? 0 : top)
                                            : (is_unsigned ? top | (top - 1) : top - 1);
                memcpy((char *)buffer + (size_t)i * bcg_dtype_size(t), &u, bcg_dtype_size(t));
            } else {
                memcpy((char *)buffer + (size_t)i * bcg_dtype_size(t), &v, bcg_dtype_size(t));
            }
        } else {
            memcpy((char *)buffer + (size_t)i * bcg_dtype_size(t), &r, bcg_dtype_size(t));
        }
    }
}

/* The first element where GOT and WANT differ, or -1.  Bit for bit, except
 * that any two NaNs are equal: which NaN x86 returns for two NaN operands
 * depends on their order in the instruction, and docs/semantics.md (like
 * NumPy) promises a NaN, not its sign or payload. */
/* f32 exp, log, sin, cos and tanh are polynomials in the microkernels
 * (at most TRANSCENDENTAL_F32_MAX_ULP from the correctly rounded result)
 * where the reference calls libm: expressions using them are compared
 * within 4 ulp of the larger of the result and 64, the largest value such
 * a function gives on these inputs (exp(4) = 54.6), since the function's
 * error carries through the operations after it.  f64 exp and log
 * likewise (uses_f64_polynomial).  Exact everywhere else. */
static bool uses_name(const char *expr, const char *name)
{
    for (const char *p = strstr(expr, name); p; p = strstr(p + 1, name))
        if (p == expr || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z'))) /* a whole name */
            return true;
    return false;
}

static bool uses_transcendental(const char *expr)
{
    static const char *const names[] = {"exp(", "log(", "sin(", "cos(", "tanh(", "log1p(",
                                        "expm1(", "log2(", "log10(", "exp2(", "expit(",
                                        "tan(", "arctan(", "erf("};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (uses_name(expr, names[i]))
            return true;
    return false;
}

/* f64 exp and log are polynomials too (bcg_mk_exp_f64, bcg_mk_log_f64:
 * within 1 ulp): the same tolerance in double where the expression has
 * one. */
static bool uses_f64_polynomial(const char *expr)
{
    return uses_name(expr, "exp(") || uses_name(expr, "log(");
}

/* One operand of a case, laid out in its own buffer. */
typedef struct layout_operand {
    int rank;
    int64_t shape[2];
    int64_t strides[2];
    bool strided;
} layout_operand;

typedef enum layout {
    LAYOUT_ROWS,      /* a (m,n), b (n,), c (m,1): contiguous, broadcast run, broadcast row */
    LAYOUT_STRIDED,   /* a read with stride 2 along the run, b backwards */
    LAYOUT_INPLACE,   /* the output is a */
    LAYOUT_COUNT
} layout;

static const char *const layout_names[LAYOUT_COUNT] = {"rows", "strided", "in place"};

typedef struct tally {
    int cases, tiled, streamed, rows, skipped;
    int whole; /* tiled with runs of whole cache lines (or one run): they may stream */
} tally;

/* bcg_options.stream_stores for every case of a run_layout */
static int stream_stores = 0;

/* Runs EXPR over dtype T with run length N in LAYOUT; compares with the
 * reference evaluator.  Returns false (after printing why) on a mismatch. */
static bool check_case(const char *expr, bcg_dtype t, int64_t n, layout lay, tally *tally)
{
    const int64_t m = 3;
    layout_operand ops_layout[3] = {
        {2, {m, n}, {n, 1}, false},
        {1, {n, 0}, {1, 0}, false},
        {2, {m, 1}, {1, 1}, false},
    };
    if (lay == LAYOUT_STRIDED) {
        ops_layout[0] = (layout_operand){2, {m, n}, {2 * n + 1, 2}, true};
        ops_layout[1] = (layout_operand){1, {n, 0}, {-1, 0}, true};
    }
    bool where_bool = strcmp(expr, "where(c, a, b)") == 0;
    bcg_operand ops[3];
    const char *names[3] = {"a", "b", "c"};
    void *allocations[3] = {0};
    const void *inputs[3];
    for (int i = 0; i < 3; i++) {
        const layout_operand *o = &ops_layout[i];
        bcg_dtype dt = where_bool && i == 2 ? BCG_BOOL : t;
        ops[i] = (bcg_operand){names[i], dt, o->rank, o->shape, o->strided ? o->strides : NULL};
        /* the span, then one element more so the pointer can sit one element in */
        int64_t low = 0, high = 0;
        for (int d = 0; d < o->rank; d++) {
            int64_t reach = o->strides[d] * (o->shape[d] - 1);
            if (reach < 0)
                low += reach;
            else
                high += reach;
        }
        size_t size = bcg_dtype_size(dt);
        int64_t count = high - low + 2;
        allocations[i] = malloc((size_t)count * size);
        assert_non_null(allocations[i]);
        fill(allocations[i], dt, count);
        /* element-aligned but not vector-aligned: one element in, then to element [0..0] */
        inputs[i] = (char *)allocations[i] + size + (size_t)(-low) * size;
    }

    bcg_options options;
    bcg_options_init(&options);
    options.microkernel_run = 1;
    options.stream_stores = stream_stores;
    options.disable_vector_code = 1; /* the microkernels, not gen/vex.c (test_vex.c) */
    if (lay == LAYOUT_INPLACE)
        options.inplace = 0;
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_kernel *kernel = NULL;
    bcg_error err;
    bool ok = true;
    if (bcg_compile(ctx, expr, ops, 3, &options, &kernel, &err) != BCG_OK) {
        /* bitwise operators on floats, an in-place dtype change ...: not this test's subject */
        tally->skipped++;
        goto done;
    }
    tally->cases++;
    if (strstr(bcg_kernel_source(kernel), "bcg_mk_")) {
        tally->tiled++;
        /* (lower.c runs_whole_lines: runs that are not stream plainly) */
        tally->whole += n == 1 || n * (int64_t)bcg_dtype_size(bcg_kernel_dtype(kernel)) % 64 == 0;
    }
    if (strstr(bcg_kernel_source(kernel), "_rows("))
        tally->rows++;
    if (strstr(bcg_kernel_source(kernel), "bcg_mk_fence();") != NULL) {
        tally->streamed++;
        if (!strstr(bcg_kernel_source(kernel), "_nt(") &&
            !strstr(bcg_kernel_source(kernel), ", 1);")) { /* _nt, or _rows with stream 1 */
            print_error("%s %s: a fence without streaming stores\n", expr, bcg_dtype_name(t));
            ok = false;
        }
    }
    if (bcg_kernel_note(kernel)[0]) {
        print_error("%s %s n=%lld %s: the JIT failed: %s\n", expr, bcg_dtype_name(t),
                    (long long)n, layout_names[lay], bcg_kernel_note(kernel));
        ok = false;
        goto done;
    }

    /* the reference: the same front end, evaluated by eval.c */
    arena *a = arena_new();
    compile *front = a ? arena_alloc(a, sizeof *front) : NULL;
    assert_non_null(front);
    front->arena = a;
    front->err = &err;
    assert_int_equal(compile_front(front, expr, ops, 3, &options), BCG_OK);
    front->err = NULL;
    size_t out_size = bcg_dtype_size(bcg_kernel_dtype(kernel));
    int64_t elements = bcg_kernel_elements(kernel);
    size_t bytes = (size_t)elements * out_size;
    char *got = NULL, *want = NULL, *inplace_copy = NULL;
    if (lay == LAYOUT_INPLACE) {
        /* both write into a copy of a's buffer */
        size_t a_bytes = (size_t)(m * n + 1) * out_size; /* as allocated: one element in, m*n */
        inplace_copy = malloc(a_bytes);
        assert_non_null(inplace_copy);
        memcpy(inplace_copy, allocations[0], a_bytes);
        const void *reference_inputs[3] = {inplace_copy + out_size, inputs[1], inputs[2]};
        assert_int_equal(eval_run(front, inplace_copy + out_size, reference_inputs, NULL), BCG_OK);
        assert_int_equal(bcg_run(kernel, NULL, inputs, &err), BCG_OK);
        got = (char *)inputs[0];
        want = inplace_copy + out_size;
    } else {
        got = malloc(bytes + out_size);
        want = malloc(bytes);
        assert_non_null(got);
        assert_non_null(want);
        assert_int_equal(eval_run(front, want, inputs, NULL), BCG_OK);
        /* the output too only element-aligned */
        assert_int_equal(bcg_run(kernel, got + out_size, inputs, &err), BCG_OK);
        memmove(got, got + out_size, bytes);
    }
    int64_t at = first_difference_in(got, want, bcg_kernel_dtype(kernel), elements,
                                     uses_transcendental(expr), uses_f64_polynomial(expr));
    if (at >= 0) {
        uint64_t got_bits = 0, want_bits = 0;
        memcpy(&got_bits, got + at * (int64_t)out_size, out_size);
        memcpy(&want_bits, want + at * (int64_t)out_size, out_size);
        print_error("%s %s n=%lld %s: element %lld is 0x%llx, the reference evaluator's 0x%llx\n",
                    expr, bcg_dtype_name(t), (long long)n, layout_names[lay], (long long)at,
                    (unsigned long long)got_bits, (unsigned long long)want_bits);
        ok = false;
    }
    if (lay != LAYOUT_INPLACE) {
        free(got);
        free(want);
    }
    free(inplace_copy);
    arena_free(a);
done:
    bcg_context_free(ctx);
    for (int i = 0; i < 3; i++)
        free(allocations[i]);
    return ok;
}

/* BCGEN_TEST_SAMPLE=N (the ASan run of make test, tests/safety/test_asan.py)
 * checks every Nth case of each layout, starting at a different case for each
 * of the six layouts, so six layouts with N = 6 still check every expression,
 * dtype and run length once, in one layout or another. */
static bool sampled(int layout_index, long case_index)
{
    const char *text = getenv("BCGEN_TEST_SAMPLE");
    long every = text ? strtol(text, NULL, 10) : 1;
    if (every <= 1)
        return true;
    return case_index % every == layout_index % every;
}

static void run_layout(layout lay, int stream)
{
    static const int64_t runs[] = {1, 7, 64, 1023, 1024, 1025, 3001};
    tally tally = {0, 0, 0, 0, 0, 0}, casts = {0, 0, 0, 0, 0, 0};
    stream_stores = stream;
    int failures = 0;
    assert_non_null(strchr(expressions[FIRST_CAST], '('));
    long case_index = 0;
    for (size_t e = 0; e < sizeof expressions / sizeof expressions[0]; e++)
        for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
            for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++)
                if (sampled((int)lay * 2 + stream, case_index++) &&
                    !check_case(expressions[e], dtypes[d], runs[r], lay,
                                e < FIRST_CAST ? &tally : &casts))
                    failures++;
    print_message("# %s%s, casts: %d cases, %d through microkernels, %d not compilable\n",
                  layout_names[lay], stream ? ", streaming stores" : "", casts.cases,
                  casts.tiled, casts.skipped);
    /* the trees with conversions take the tiled path too */
    assert_true(casts.tiled * 2 > casts.cases);
    print_message("# %s%s: %d cases, %d through microkernels (%d of whole lines, %d streamed, "
                  "%d as rows), %d not compilable\n", layout_names[lay],
                  stream ? ", streaming stores" : "", tally.cases, tally.tiled, tally.whole,
                  tally.streamed, tally.rows, tally.skipped);
    /* single operations on runs shorter than a tile take the rows form */
    assert_true(tally.rows > 0);
    assert_int_equal(failures, 0);
    /* most of these trees must take the tiled path, or this test tests nothing */
    assert_true(tally.tiled * 2 > tally.cases);
    /* streaming: every tree whose root is a binary operation, comparison or
     * where() of operands and literals (about half of them); plain stores: none,
     * these outputs are small */
    if (stream)
        assert_true(tally.streamed * 3 > tally.whole);
    else
        assert_int_equal(tally.streamed, 0);
}

/* Every row of the operator table on every dtype it types on (issue 11:
 * each has a microkernel, tests/unit/test_ops.c), written on operands
 * (tile_coverage's expression: "a << b", "hypot(a, b)") and in a few trees
 * with literals, against the reference evaluator bit for bit over the
 * layouts (strides 1, 0, 2 and -1, in place) and runs around a tile, on
 * data with the edges mixed in (NaN, infinities, -0, the integers'
 * minimum, -1 and 0 divisors, shift counts from the width up and negative).
 * The f32 functions that are polynomials (gen/ops.h's transcendental rows)
 * are compared within the tolerance of uses_transcendental; the rest is
 * exact, the C library's own results for the functions computed by it. */
static void test_every_row(void **state)
{
    (void)state;
    static const char *const trees[] = {
        "a // b + a % b", "(a << 3) >> b", "isnan(a) | (b > 0)", "logaddexp(a, b) * 2",
        "where(isfinite(a), a, b)", "a ** 2", "~a & b", "logical_xor(a > 0, b)",
        "copysign(a, b) - fmin(a, b)", "hypot(a, 3) + fmod(b, 1.5)", "!(a < b) & signbit(c)",
        "sign(a) * square(b) + reciprocal(c)", "round(a) - trunc(b)", "mul_q15(a, b)",
        /* the 16-bit floats' cast kernels, to and from every dtype */
        "f16(a) + f16(b)", "bf16(a) * bf16(b)", "i32(f16(a)) + i8(bf16(b))",
        "u64(f16(a)) - bool(bf16(b))", "f64(bf16(a)) + f32(f16(b))",
        "u16(f16(a)) | i64(bf16(b))", "bf16(f16(a)) + f16(bf16(b))", "a ** 3 - b ** c",
    };
    static const int64_t runs[] = {7, 1030};
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    tally tally = {0, 0, 0, 0, 0, 0};
    int failures = 0, rows = 0;
    long case_index = 0;
    stream_stores = 0;
    for (int op = 0; op < OP_COUNT + (int)(sizeof trees / sizeof trees[0]); op++) {
        if (op == OP_OPERAND || op == OP_LITERAL || op == OP_CAST)
            continue;
        for (int t = 0; t < BCG_DTYPE_COUNT; t++) {
            char expr[64];
            if (op < OP_COUNT) {
                if (tile_coverage(ctx, (expr_op)op, (bcg_dtype)t, expr, sizeof expr) ==
                    COVER_UNTYPED)
                    continue;
                rows++;
            } else {
                snprintf(expr, sizeof expr, "%s", trees[op - OP_COUNT]);
            }
            if (!sampled(0, case_index++)) /* (the ASan run: every Nth) */
                continue;
            for (int lay = 0; lay < LAYOUT_COUNT; lay++)
                for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++)
                    if ((lay == LAYOUT_ROWS || r == 1) && /* short runs: the rows form */
                        !check_case(expr, (bcg_dtype)t, runs[r], (layout)lay, &tally))
                        failures++;
            /* the _nt variants: the long run's rows once more, streamed */
            stream_stores = 1;
            if (!check_case(expr, (bcg_dtype)t, runs[1], LAYOUT_ROWS, &tally))
                failures++;
            stream_stores = 0;
        }
    }
    bcg_context_free(ctx);
    print_message("# every row: %d row and dtype pairs, %d cases, %d through microkernels "
                  "(%d streamed), %d not compilable\n", rows, tally.cases, tally.tiled,
                  tally.streamed, tally.skipped);
    assert_int_equal(failures, 0);
    assert_true(rows > 500);
    assert_true(tally.tiled * 10 > tally.cases * 9);
}

static void test_rows(void **state) { (void)state; run_layout(LAYOUT_ROWS, 0); }
static void test_strided(void **state) { (void)state; run_layout(LAYOUT_STRIDED, 0); }
static void test_inplace(void **state) { (void)state; run_layout(LAYOUT_INPLACE, 0); }
static void test_rows_streamed(void **state) { (void)state; run_layout(LAYOUT_ROWS, 1); }
static void test_strided_streamed(void **state) { (void)state; run_layout(LAYOUT_STRIDED, 1); }
static void test_inplace_streamed(void **state) { (void)state; run_layout(LAYOUT_INPLACE, 1); }

/* bcg_emit (and so `bcgen emit` and the AOT path) stays plain C, and
 * microkernel_run 0 turns the tiles off in compiled kernels too. */
static void test_plain_forms(void **state)
{
    (void)state;
    int64_t sa[] = {4, 4096}, sb[] = {4096};
    bcg_operand ops[] = {{"a", BCG_F32, 2, sa, NULL}, {"b", BCG_F32, 1, sb, NULL}};
    char *source = NULL;
    bcg_error err;
    assert_int_equal(bcg_emit("a * b + 1", ops, 2, NULL, NULL, &source, &err), BCG_OK);
    assert_null(strstr(source, "bcg_mk_"));
    bcg_free(source);

    bcg_context *ctx = bcg_context_new();
    bcg_kernel *tiled = NULL, *plain = NULL;
    bcg_options options;
    bcg_options_init(&options);
    options.disable_vector_code = 1; /* (the fused code instead: test_vex.c) */
    assert_int_equal(bcg_compile(ctx, "a * b + 1", ops, 2, &options, &tiled, &err), BCG_OK);
    assert_non_null(strstr(bcg_kernel_source(tiled), "bcg_mk_mul_f32"));
    options.microkernel_run = 0;
    assert_int_equal(bcg_compile(ctx, "a * b + 1", ops, 2, &options, &plain, &err), BCG_OK);
    assert_true(plain != tiled); /* the option is part of the cache key */
    assert_null(strstr(bcg_kernel_source(plain), "bcg_mk_"));
    options.microkernel_run = -1;
    assert_int_equal(bcg_compile(ctx, "a * b + 1", ops, 2, &options, &plain, &err),
                     BCG_ERR_USAGE);
    bcg_context_free(ctx);
}

/* bcg_options.stream_stores: automatic by the bytes a kernel touches
 * against the last-level cache (compile_stream_bytes), forced on or off,
 * part of the cache key, checked; bcg_emit never streams. */
static void test_stream_option(void **state)
{
    (void)state;
    /* the threshold is the cache's size where Linux tells it */
    size_t threshold = compile_stream_bytes();
    assert_true(threshold >= ((size_t)1 << 20) && threshold <= ((size_t)1 << 30));
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (f) {
        char text[32] = "";
        char *unit = NULL;
        if (fgets(text, sizeof text, f)) {
            unsigned long long size = strtoull(text, &unit, 10);
            if (*unit == 'K')
                assert_int_equal(threshold, (size_t)size << 10);
        }
        fclose(f);
    }
    /* a + b over (rows, 1024) + (1024,) f32 touches 8192 bytes a row and 4
     * KiB: a row under the threshold, plain; at it, streaming */
    int64_t rows_below = (int64_t)(threshold / 8192) - 1, rows_above = (int64_t)(threshold / 8192);
    int64_t small[] = {rows_below, 1024}, large[] = {rows_above, 1024}, row[] = {1024};
    bcg_operand below[] = {{"a", BCG_F32, 2, small, NULL}, {"b", BCG_F32, 1, row, NULL}};
    bcg_operand above[] = {{"a", BCG_F32, 2, large, NULL}, {"b", BCG_F32, 1, row, NULL}};
    /* an outer sum whose output is 3/4 of the cache stays plain (it
     * streamed from 16 MiB, at half the speed of plain stores on a rerun) */
    int64_t column[] = {(int64_t)(threshold / 4096 * 3 / 4), 1}, line[] = {1, 1024};
    bcg_operand outer[] = {{"a", BCG_F32, 2, column, NULL}, {"b", BCG_F32, 2, line, NULL}};
    /* two full inputs (12288 bytes touched a row, reading twice what is
     * written) stream from half the threshold */
    int64_t half_below[] = {(int64_t)(threshold / 2 / 12288) - 1, 1024};
    int64_t half_above[] = {(int64_t)((threshold / 2 + 12287) / 12288), 1024};
    bcg_operand two_below[] = {{"a", BCG_F32, 2, half_below, NULL}, {"b", BCG_F32, 2, half_below, NULL}};
    bcg_operand two_above[] = {{"a", BCG_F32, 2, half_above, NULL}, {"b", BCG_F32, 2, half_above, NULL}};
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k = NULL, *other = NULL;
    bcg_options options;
    bcg_error err;
    bcg_options_init(&options);
    options.disable_vector_code = 1; /* (sqrt(a + b) would be fused: test_vex.c) */
    assert_int_equal(options.stream_stores, BCG_STREAM_AUTO);
    assert_int_equal(bcg_compile(ctx, "a + b", below, 2, &options, &k, &err), BCG_OK);
    assert_null(strstr(bcg_kernel_source(k), "_nt("));
    assert_int_equal(bcg_compile(ctx, "a + b", outer, 2, &options, &k, &err), BCG_OK);
    assert_null(strstr(bcg_kernel_source(k), "_nt("));
    assert_int_equal(bcg_compile(ctx, "a + b", two_below, 2, &options, &k, &err), BCG_OK);
    assert_null(strstr(bcg_kernel_source(k), "_nt("));
    assert_int_equal(bcg_compile(ctx, "a + b", two_above, 2, &options, &k, &err), BCG_OK);
    assert_non_null(strstr(bcg_kernel_source(k), "bcg_mk_add_f32_nt("));
    assert_int_equal(bcg_compile(ctx, "a + b", above, 2, &options, &k, &err), BCG_OK);
    assert_non_null(strstr(bcg_kernel_source(k), "bcg_mk_add_f32_nt("));
    assert_non_null(strstr(bcg_kernel_source(k), "streaming stores"));
    assert_non_null(strstr(bcg_kernel_source(k), "bcg_mk_fence();"));
    options.stream_stores = 0;
    assert_int_equal(bcg_compile(ctx, "a + b", above, 2, &options, &other, &err), BCG_OK);
    assert_true(other != k);
    assert_null(strstr(bcg_kernel_source(other), "_nt("));
    assert_null(strstr(bcg_kernel_source(other), "bcg_mk_fence"));
    options.stream_stores = 1;
    assert_int_equal(bcg_compile(ctx, "a + b", below, 2, &options, &k, &err), BCG_OK);
    assert_non_null(strstr(bcg_kernel_source(k), "bcg_mk_add_f32_nt("));
    /* a root with no streaming variant (a unary function) stays plain */
    assert_int_equal(bcg_compile(ctx, "sqrt(a + b)", below, 2, &options, &k, &err), BCG_OK);
    assert_non_null(strstr(bcg_kernel_source(k), "bcg_mk_sqrt_f32("));
    assert_null(strstr(bcg_kernel_source(k), "_nt("));
    assert_null(strstr(bcg_kernel_source(k), "bcg_mk_fence"));
    options.stream_stores = 2;
    assert_int_equal(bcg_compile(ctx, "a + b", below, 2, &options, &k, &err), BCG_ERR_USAGE);
    assert_non_null(strstr(err.message, "stream_stores is 2"));
    bcg_context_free(ctx);

    char *source = NULL;
    options.stream_stores = 1;
    assert_int_equal(bcg_emit("a + b", above, 2, &options, NULL, &source, &err), BCG_OK);
    assert_null(strstr(source, "_nt("));
    bcg_free(source);
}

/* The f32 polynomials against the double-precision C library rounded to
 * float: a sweep over every 521st bit pattern (8.2 million floats of every
 * sign and magnitude, NaNs and infinities included) and, for sin and cos,
 * the floats around their zeros up to the polynomials' limit, called in runs of
 * every length from 1 to 600 so that block remainders are covered; then
 * strided, backwards and in-place calls must give the same bits as the
 * contiguous one. */
typedef void (*unary_f32)(float *out, const float *a, long sa, long n);
void bcg_mk_exp_f32(float *, const float *, long, long);
void bcg_mk_log_f32(float *, const float *, long, long);
void bcg_mk_sin_f32(float *, const float *, long, long);
void bcg_mk_cos_f32(float *, const float *, long, long);
void bcg_mk_tanh_f32(float *, const float *, long, long);

static int64_t ordered(float f)
{
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i < 0 ? (int64_t)INT32_MIN - i : i;
}

static void test_transcendental_accuracy(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        unary_f32 microkernel;
        double (*libm)(double);
    } functions[] = {
        {"exp", bcg_mk_exp_f32, exp}, {"log", bcg_mk_log_f32, log}, {"sin", bcg_mk_sin_f32, sin},
        {"cos", bcg_mk_cos_f32, cos}, {"tanh", bcg_mk_tanh_f32, tanh},
    };
    enum { CHUNK = 1 << 16 };
    float *x = malloc(sizeof(float) * CHUNK * 2), *y = malloc(sizeof(float) * CHUNK * 2);
    float *z = malloc(sizeof(float) * CHUNK * 3);
    assert_true(x && y && z);
    for (size_t f = 0; f < sizeof functions / sizeof functions[0]; f++) {
        int64_t worst = 0;
        float worst_at = 0;
        uint64_t pattern = 0;
        long length = 1;
        while (pattern < (1ull << 32)) {
            long count = 0;
            for (; count < CHUNK && pattern < (1ull << 32); count++, pattern += 521) {
                uint32_t bits = (uint32_t)pattern;
                memcpy(&x[count], &bits, sizeof bits);
            }
            for (long start = 0; start < count; start += length, length = length % 600 + 1)
                functions[f].microkernel(y + start, x + start, 1,
                                         count - start < length ? count - start : length);
            for (long i = 0; i < count; i++) {
                float want = (float)functions[f].libm((double)x[i]);
                if (isnan(want) && isnan(y[i]))
                    continue;
                int64_t distance = isnan(want) != isnan(y[i]) ? INT32_MAX
                                                               : llabs(ordered(want) - ordered(y[i]));
                if (distance > worst) {
                    worst = distance;
                    worst_at = x[i];
                }
            }
            /* the same values strided (every other element), backwards, in place */
            for (long i = 0; i < count; i++)
                z[2 * i] = x[i];
            functions[f].microkernel(z + 2 * count, z, 2, count);
            assert_memory_equal(z + 2 * count, y, sizeof(float) * (size_t)count);
            for (long i = 0; i < count; i++)
                z[i] = x[count - 1 - i];
            functions[f].microkernel(z + count, z + count - 1, -1, count);
            assert_memory_equal(z + count, y, sizeof(float) * (size_t)count);
            memcpy(z, x, sizeof(float) * (size_t)count);
            functions[f].microkernel(z, z, 1, count);
            assert_memory_equal(z, y, sizeof(float) * (size_t)count);
        }
        /* sin and cos near their zeros, where a loose range reduction shows:
         * the 64 floats either side of k * pi / 2 for every k up to 330 */
        for (int k = 1; k <= 330 && f >= 2 && f <= 3; k++) {
            float centre = (float)(k * 1.57079632679489661923);
            for (int i = 0; i < 128; i++)
                x[i] = nextafterf(centre, i < 64 ? 0.0f : 1e9f);
            for (int i = 1; i < 64; i++) {
                x[i] = nextafterf(x[i - 1], 0.0f);
                x[64 + i] = nextafterf(x[64 + i - 1], 1e9f);
            }
            functions[f].microkernel(y, x, 1, 128);
            for (int i = 0; i < 128; i++) {
                int64_t distance = llabs(ordered((float)functions[f].libm((double)x[i])) - ordered(y[i]));
                if (distance > worst) {
                    worst = distance;
                    worst_at = x[i];
                }
            }
        }
        print_message("# %s f32: at most %lld ulp from the C library (at %a)\n", functions[f].name,
                      (long long)worst, (double)worst_at);
        assert_true(worst <= TRANSCENDENTAL_F32_MAX_ULP);
    }
    free(x);
    free(y);
    free(z);
}

/* f64 exp's and log's polynomials (bcg_mk_exp_f64, bcg_mk_log_f64)
 * against long double expl and logl over about a million arguments each
 * (exp: random bit patterns (every magnitude, NaNs and infinities),
 * uniform over [-750, 750] and over the reduced range [-0.35, 0.35], the
 * 20 doubles either side of every (k + 1/2) ln 2 (where the reduction's k
 * changes), the 10000 doubles either side of the edges of the easy range
 * and of the overflow and underflow thresholds, the integers and halves
 * from -800 to 800, +-2^e for every exponent; log: random bit patterns,
 * uniform over (0, 4) and around 1, the 10000 doubles either side of 1,
 * sqrt 2, sqrt(1/2), 2, 1/2 and the least normal, 2^e and sqrt(2) 2^e for
 * every exponent, the integers to 100000), in runs of every length from 1
 * to 600.  Errors in ulps of the double result (2^-1074 for subnormals)
 * must be at most F64_POLYNOMIAL_MAX_ULP; a result that is not a finite
 * non-zero double, and every special argument, must be the C library's
 * exactly.  Strided, backwards and in-place calls give the same bits as
 * the contiguous one. */
void bcg_mk_exp_f64(double *, const double *, long, long);
void bcg_mk_log_f64(double *, const double *, long, long);
#define F64_POLYNOMIAL_MAX_ULP 1.0

static void put_neighbours(double *x, long *count, double centre, int each_side)
{
    uint64_t bits;
    memcpy(&bits, &centre, sizeof bits);
    for (int j = -each_side; j <= each_side; j++) {
        uint64_t b = bits + (uint64_t)(int64_t)j;
        memcpy(&x[(*count)++], &b, sizeof b);
    }
}

static void check_f64_polynomial(const char *name, void (*microkernel)(double *, const double *, long, long),
                                 double (*libm)(double), long double (*reference)(long double),
                                 double *x, long count, long first_special)
{
    double *y = malloc(sizeof(double) * (size_t)count), *z = malloc(sizeof(double) * (size_t)count * 2);
    double *w = malloc(sizeof(double) * (size_t)count);
    assert_true(y && z && w);
    long length = 1;
    for (long start = 0; start < count; start += length, length = length % 600 + 1)
        microkernel(y + start, x + start, 1, count - start < length ? count - start : length);
    double worst = 0, worst_at = 0;
    for (long i = 0; i < count; i++) {
        double want_libm = libm(x[i]), error;
        if (!isfinite(y[i]) || y[i] == 0.0 || !isfinite(want_libm) || want_libm == 0.0) {
            error = memcmp(&y[i], &want_libm, sizeof want_libm) == 0 ||
                    (isnan(y[i]) && isnan(want_libm)) ? 0.0 : 1e9;
        } else {
            long double want = reference((long double)x[i]);
            int e;
            frexpl(want, &e); /* |want| in [2^(e-1), 2^e) */
            long double ulp = ldexpl(1.0L, e - 53 < -1074 ? -1074 : e - 53);
            error = (double)(fabsl((long double)y[i] - want) / ulp);
        }
        if (error > worst) {
            worst = error;
            worst_at = x[i];
        }
    }
    for (long i = first_special; i < count; i++) { /* the C library's bits */
        double want_libm = libm(x[i]);
        assert_true(isnan(want_libm) ? isnan(y[i]) : memcmp(&y[i], &want_libm, sizeof want_libm) == 0);
    }
    print_message("# %s f64: at most %.3f ulp from the correctly rounded result (at %a) over %ld "
                  "arguments\n", name, worst, worst_at, count);
    assert_true(worst <= F64_POLYNOMIAL_MAX_ULP);
    for (long i = 0; i < count; i++) /* strided, backwards, in place */
        z[2 * i] = x[i];
    microkernel(w, z, 2, count);
    assert_memory_equal(w, y, sizeof(double) * (size_t)count);
    for (long i = 0; i < count; i++)
        z[i] = x[count - 1 - i];
    microkernel(z + count, z + count - 1, -1, count);
    assert_memory_equal(z + count, y, sizeof(double) * (size_t)count);
    memcpy(z, x, sizeof(double) * (size_t)count);
    microkernel(z, z, 1, count);
    assert_memory_equal(z, y, sizeof(double) * (size_t)count);
    free(y);
    free(z);
    free(w);
}

/* The signs of zero results: the polynomials' sums gave +0 for -0 (tanh,
 * log1p, expm1), which ordered() above counts as no distance, though a
 * division by the result then gives -inf for +inf (1 / tanh(a), a = -0).
 * Every f32 polynomial at +-0 and at tiny and subnormal arguments either
 * way, in a block of 16 (the vector path), against the C library's sign. */
void bcg_mk_log1p_f32(float *, const float *, long, long);
void bcg_mk_expm1_f32(float *, const float *, long, long);
void bcg_mk_log2_f32(float *, const float *, long, long);
void bcg_mk_log10_f32(float *, const float *, long, long);
void bcg_mk_exp2_f32(float *, const float *, long, long);
void bcg_mk_tan_f32(float *, const float *, long, long);
void bcg_mk_arctan_f32(float *, const float *, long, long);
void bcg_mk_erf_f32(float *, const float *, long, long);

static void test_signed_zeros(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        unary_f32 microkernel;
        double (*libm)(double);
    } functions[] = {
        {"exp", bcg_mk_exp_f32, exp},       {"log", bcg_mk_log_f32, log},
        {"sin", bcg_mk_sin_f32, sin},       {"cos", bcg_mk_cos_f32, cos},
        {"tanh", bcg_mk_tanh_f32, tanh},    {"log1p", bcg_mk_log1p_f32, log1p},
        {"expm1", bcg_mk_expm1_f32, expm1}, {"log2", bcg_mk_log2_f32, log2},
        {"log10", bcg_mk_log10_f32, log10}, {"exp2", bcg_mk_exp2_f32, exp2},
        {"tan", bcg_mk_tan_f32, tan},       {"arctan", bcg_mk_arctan_f32, atan},
        {"erf", bcg_mk_erf_f32, erf},
    };
    static const float arguments[16] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f, -1e-40f,
                                        1e-45f, -1e-45f, 1e-8f, -1e-8f, 0.0f, -0.0f,
                                        -0.0f, 0.0f, -0.0f, 0.0f};
    float y[16];
    int failures = 0;
    for (size_t f = 0; f < sizeof functions / sizeof functions[0]; f++) {
        functions[f].microkernel(y, arguments, 1, 16);
        for (int i = 0; i < 16; i++) {
            float want = (float)functions[f].libm((double)arguments[i]);
            if (want == 0.0f && (y[i] != 0.0f || signbit(y[i]) != signbit(want))) {
                print_error("%s(%g): %g, the C library's %g\n", functions[f].name,
                            (double)arguments[i], (double)y[i], (double)want);
                failures++;
            }
        }
    }
    assert_int_equal(failures, 0);
}

static double uniform(uint64_t *seed, double low, double high)
{
    return low + (double)(xorshift64(seed) >> 11) / 9007199254740992.0 * (high - low);
}

/* f64 exp and log: calls of 16 elements or more take the AVX-512 clone
 * where the CPU has it, shorter ones the AVX2 clone (bcg_mk_exp_f64's
 * split); both must give the same bits, so that a CPU without AVX-512
 * computes what this one does.  Random arguments over exp's whole range
 * (its edges, +-0, infinities, NaN and raw bit patterns among them), each
 * block once in one call of 512 and again in calls of 8. */
static void test_f64_clones_agree(void **state)
{
    (void)state;
    enum { N = 512 };
    static const double edges[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 709.78, 709.79,
                                    709.8, 709.81, -745.1, -745.2, -745.5, -745.6, -708.4,
                                    5e-324, 1e-310, 1.0, 0.5};
    double x[N], wide[N], narrow[N];
    uint64_t seed = 0x2545f4914f6cdd1dull;
    int differences = 0;
    for (int round = 0; round < 64; round++) {
        for (int i = 0; i < N; i++) {
            uint64_t r = xorshift64(&seed);
            if (r % 7 == 0)
                x[i] = edges[(r >> 8) % (sizeof edges / sizeof edges[0])];
            else if (r % 7 == 1)
                memcpy(&x[i], &r, sizeof r);
            else
                x[i] = ((double)(r >> 11) / 9007199254740992.0 - 0.5) * ((r & 8) ? 1500.0 : 40.0);
            if (round & 1)
                x[i] = fabs(x[i]); /* (log's easy arguments) */
        }
        for (int f = 0; f < 2; f++) {
            void (*mk)(double *, const double *, long, long) = f ? bcg_mk_log_f64 : bcg_mk_exp_f64;
            mk(wide, x, 1, N);
            for (int i = 0; i < N; i += 8)
                mk(narrow + i, x + i, 1, 8);
            for (int i = 0; i < N; i++)
                if (memcmp(&wide[i], &narrow[i], sizeof wide[i]) != 0 &&
                    !(isnan(wide[i]) && isnan(narrow[i])) && differences++ < 5)
                    print_error("%s(%a): %a in a call of %d, %a in one of 8\n", f ? "log" : "exp",
                                x[i], wide[i], N, narrow[i]);
        }
    }
    assert_int_equal(differences, 0);
}

static void test_exp_f64_accuracy(void **state)
{
    (void)state;
    enum { COUNT = 1100000 };
    double *x = malloc(sizeof(double) * COUNT);
    assert_non_null(x);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    long count = 0;
    for (int i = 0; i < 400000; i++) {
        uint64_t bits = xorshift64(&seed);
        memcpy(&x[count++], &bits, sizeof bits);
    }
    for (int i = 0; i < 300000; i++)
        x[count++] = uniform(&seed, -750.0, 750.0);
    for (int i = 0; i < 100000; i++)
        x[count++] = uniform(&seed, -0.35, 0.35);
    for (int k = -1080; k <= 1030; k++)
        put_neighbours(x, &count, (k + 0.5) * 0.69314718055994531, 20);
    static const double edges[] = {-708.0, 709.0, 709.782712893384, -708.39641853226408,
                                   -745.13321910194111, -745.5, 709.8};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++)
        put_neighbours(x, &count, edges[e], 10000);
    for (int i = -800; i <= 800; i++) {
        x[count++] = i;
        x[count++] = i + 0.5;
    }
    for (int e = -1074; e <= 1023; e++) {
        x[count++] = ldexp(1.0, e);
        x[count++] = -ldexp(1.0, e);
    }
    static const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, DBL_MAX,
                                      -DBL_MAX, DBL_MIN, -DBL_MIN, 0x1p-60, -0x1p-60,
                                      0x1.fffffffffffffp-61, 1e-300, -1e-300, 710.0, -746.0};
    long first_special = count;
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        x[count++] = specials[i];
    assert_true(count <= COUNT);
    check_f64_polynomial("exp", bcg_mk_exp_f64, exp, expl, x, count, first_special);
    double edge[4] = {0.0, -0.0, INFINITY, -INFINITY}, out[4];
    bcg_mk_exp_f64(out, edge, 1, 4);
    assert_true(out[0] == 1.0 && out[1] == 1.0 && isinf(out[2]) && out[2] > 0 && out[3] == 0.0);
    free(x);
}

static void test_log_f64_accuracy(void **state)
{
    (void)state;
    enum { COUNT = 1100000 };
    double *x = malloc(sizeof(double) * COUNT);
    assert_non_null(x);
    uint64_t seed = 0x2545f4914f6cdd1dull;
    long count = 0;
    for (int i = 0; i < 350000; i++) { /* positive bit patterns mostly */
        uint64_t bits = xorshift64(&seed) & (i % 8 == 0 ? ~0ull : ~(1ull << 63));
        memcpy(&x[count++], &bits, sizeof bits);
    }
    for (int i = 0; i < 330000; i++)
        x[count++] = uniform(&seed, 0.0, 4.0);
    for (int i = 0; i < 100000; i++)
        x[count++] = uniform(&seed, 0.999, 1.001);
    static const double edges[] = {1.0, 1.4142135623730951, 0.70710678118654757, 2.0, 0.5,
                                   DBL_MIN};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++)
        put_neighbours(x, &count, edges[e], 10000);
    for (int e = -1074; e <= 1023; e++) {
        x[count++] = ldexp(1.0, e);
        x[count++] = ldexp(1.4142135623730951, e);
    }
    for (int i = 1; i <= 100000; i++)
        x[count++] = i;
    static const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, -1.0, 1.0,
                                      DBL_MAX, DBL_MIN, 0x1p-1074, 0x1.fffffffffffffp-1023};
    long first_special = count;
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        x[count++] = specials[i];
    assert_true(count <= COUNT);
    check_f64_polynomial("log", bcg_mk_log_f64, log, logl, x, count, first_special);
    double edge[5] = {0.0, -0.0, INFINITY, 1.0, -1.0}, out[5];
    bcg_mk_log_f64(out, edge, 1, 5);
    assert_true(isinf(out[0]) && out[0] < 0 && isinf(out[1]) && out[1] < 0 && isinf(out[2]) &&
                out[2] > 0 && out[3] == 0.0 && !signbit(out[3]) && isnan(out[4]));
    free(x);
}

/* Every symbol the emitter may name exists, and the lookup says so. */
/* Short runs (shorter than microkernel_run) of one operation on operands
 * take the rows form, and its periodic path (one operand repeating with
 * the run's period, laid out once in a tile) gives the reference
 * evaluator's bytes: every run length up to 63, both operand orders, with
 * and without streaming stores, several dtypes. */
static void test_periodic_rows(void **state)
{
    (void)state;
    static const char *const exprs[] = {"a * g", "g - a", "a < g", "maximum(g, a)"};
    static const bcg_dtype types[] = {BCG_F32, BCG_F64, BCG_I16, BCG_U8, BCG_I64};
    int rows_seen = 0, flat_seen = 0, checked = 0;
    for (int64_t n = 1; n < 64; n += (n < 8 ? 1 : 7))
        for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
            for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
                for (int stream = 0; stream < 2; stream++) {
                    int64_t r = 4096 / n + 7, sa[2] = {r, n}, sg[1] = {n};
                    bcg_operand ops[2] = {{"a", types[t], 2, sa, NULL}, {"g", types[t], 1, sg, NULL}};
                    bcg_options options;
                    bcg_options_init(&options);
                    options.stream_stores = stream;
                    bcg_context *ctx = bcg_context_new();
                    bcg_kernel *k = NULL;
                    bcg_error err;
                    assert_int_equal(bcg_compile(ctx, exprs[e], ops, 2, &options, &k, &err), BCG_OK);
                    rows_seen += strstr(bcg_kernel_source(k), "_rows(") != NULL;
                    flat_seen += strstr(bcg_kernel_source(k), VEX_SMALL_SYMBOL "(") != NULL;
                    size_t size = bcg_dtype_size(types[t]);
                    unsigned char *a = malloc((size_t)(r * n) * size), *g = malloc((size_t)n * size);
                    fill(a, types[t], r * n);
                    fill(g, types[t], n);
                    size_t out_size = bcg_dtype_size(bcg_kernel_dtype(k));
                    unsigned char *got = malloc((size_t)(r * n) * out_size);
                    unsigned char *want = malloc((size_t)(r * n) * out_size);
                    const void *in[2] = {a, g};
                    assert_int_equal(bcg_run(k, got, in, &err), BCG_OK);
                    arena *ar = arena_new();
                    compile *front = arena_alloc(ar, sizeof *front);
                    front->arena = ar;
                    front->err = &err;
                    assert_int_equal(compile_front(front, exprs[e], ops, 2, &options), BCG_OK);
                    assert_int_equal(eval_run(front, want, in, &err), BCG_OK);
                    if (memcmp(got, want, (size_t)(r * n) * out_size) != 0)
                        fail_msg("%s over %s, runs of %lld (stream %d): the JIT differs from "
                                 "the reference", exprs[e], bcg_dtype_name(types[t]),
                                 (long long)n, stream);
                    checked++;
                    arena_free(ar);
                    free(a);
                    free(g);
                    free(got);
                    free(want);
                    bcg_context_free(ctx);
                }
    print_message("# %d kernels, %d in the rows form, %d in the flat form\n", checked, rows_seen,
                  flat_seen);
    /* (runs of up to 40 take the flat form since VEX_FLAT_MAX_RUN 40, but
     * for i64 products; before, the rows form more than half) */
    assert_true(rows_seen + flat_seen > checked / 2 && rows_seen * 5 >= checked);
}

/* 2-D tiles (gen/lower.c, "2-D tiles"): trees over inner runs shorter than
 * microkernel_run (1 to 15) and runs the 1-D tiles would take one call per
 * run (16 to 64), at the default options, against the reference evaluator:
 * a (rows, run), b a per-row (rows, 1) operand, c a broadcast row (run,);
 * then a strided a and reversed b and c, a transposed a, in place, and a
 * strided output view (the root scattered); the strided layout with streaming
 * stores (a - b's root).  Rows are chosen so that every
 * kernel has several tiles and a shorter last one.  Each case with a run
 * under 16 must take the 2-D form (its source has row_start), and the
 * layouts that need them must gather and scatter. */
typedef enum short_layout {
    SHORT_ROWS, SHORT_STRIDED, SHORT_TRANSPOSED, SHORT_INPLACE, SHORT_OUT_VIEW, SHORT_LAYOUTS
} short_layout;

static const char *const short_layout_names[SHORT_LAYOUTS] = {
    "rows", "strided and reversed", "transposed", "in place", "strided output"};

/* Returns 1 when the case ran through tiles and matched, 0 when it did not
 * compile (not this test's subject), -1 on a mismatch or a wrong form. */
static int check_short_case(const char *expr, bcg_dtype t, int64_t n, short_layout lay,
                            int *gathers, int *scatters)
{
    const int64_t m = 1024 / n + 37;
    if (n == 1) /* a run of 1 merges into the loop outside it: 1-D tiles */
        return 0;
    layout_operand ops_layout[3] = {
        {2, {m, n}, {n, 1}, false},
        {2, {m, 1}, {1, 1}, false},
        {1, {n, 0}, {1, 0}, false},
    };
    if (lay == SHORT_STRIDED) {
        ops_layout[0] = (layout_operand){2, {m, n}, {2 * n + 1, 2}, true};
        ops_layout[1] = (layout_operand){2, {m, 1}, {-3, 1}, true};
        ops_layout[2] = (layout_operand){1, {n, 0}, {-1, 0}, true};
    } else if (lay == SHORT_TRANSPOSED) {
        ops_layout[0] = (layout_operand){2, {m, n}, {1, m}, true};
    }
    bcg_operand ops[3];
    const char *names[3] = {"a", "b", "c"};
    void *allocations[3] = {0};
    const void *inputs[3];
    for (int i = 0; i < 3; i++) {
        const layout_operand *o = &ops_layout[i];
        ops[i] = (bcg_operand){names[i], t, o->rank, o->shape, o->strided ? o->strides : NULL};
        int64_t low = 0, high = 0;
        for (int d = 0; d < o->rank; d++) {
            int64_t reach = o->strides[d] * (o->shape[d] - 1);
            if (reach < 0)
                low += reach;
            else
                high += reach;
        }
        size_t size = bcg_dtype_size(t);
        allocations[i] = malloc((size_t)(high - low + 1) * size);
        assert_non_null(allocations[i]);
        fill(allocations[i], t, high - low + 1);
        inputs[i] = (char *)allocations[i] + (size_t)(-low) * size;
    }
    bcg_options options;
    bcg_options_init(&options);
    int64_t out_strides[2] = {2 * n + 3, 2}; /* every other element, rows apart */
    bcg_output view;
    memset(&view, 0, sizeof view);
    view.dtype = BCG_DTYPE_AUTO;
    view.rank = 2;
    view.strides = out_strides;
    if (lay == SHORT_INPLACE)
        options.inplace = 0;
    if (lay == SHORT_STRIDED) /* a root of operands streams (a - b) */
        options.stream_stores = 1;
    if (lay == SHORT_OUT_VIEW)
        options.output = &view;
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_kernel *kernel = NULL;
    bcg_error err;
    int result = 1;
    if (bcg_compile(ctx, expr, ops, 3, &options, &kernel, &err) != BCG_OK) {
        result = 0;
        goto done;
    }
    const char *source = bcg_kernel_source(kernel);
    /* (runs of 16 or more keep the 1-D tiles where they hoist a per-row
     * subtree, b * b) */
    /* (or the flat form: the small kernel's code over a loop of rows) */
    bool flat = strstr(source, VEX_SMALL_SYMBOL "(out, inputs);") != NULL;
    if (!flat && !strstr(source, "row_start") && (n < 16 || !strstr(source, "bcg_mk_"))) {
        print_error("%s %s runs of %lld %s: not 2-D tiles\n", expr, bcg_dtype_name(t),
                    (long long)n, short_layout_names[lay]);
        result = -1;
        goto done;
    }
    /* (or read in place row by row by the fused function: vex.c's rows form) */
    *gathers += flat || strstr(source, "bcg_mk_gather_rows_") != NULL ||
                strstr(source, ", row_count);") != NULL;
    *scatters += strstr(source, "bcg_mk_scatter_rows_") != NULL;
    arena *a = arena_new();
    compile *front = a ? arena_alloc(a, sizeof *front) : NULL;
    assert_non_null(front);
    front->arena = a;
    front->err = &err;
    assert_int_equal(compile_front(front, expr, ops, 3, &options), BCG_OK);
    front->err = NULL;
    size_t out_size = bcg_dtype_size(bcg_kernel_dtype(kernel));
    int64_t span = lay == SHORT_OUT_VIEW ? (m - 1) * (2 * n + 3) + 2 * (n - 1) + 1 : m * n;
    size_t bytes = (size_t)span * out_size;
    char *got = NULL, *want = calloc(1, bytes), *copy = NULL;
    assert_non_null(want);
    if (lay == SHORT_INPLACE) {
        copy = malloc(bytes);
        assert_non_null(copy);
        memcpy(copy, inputs[0], bytes);
        const void *reference_inputs[3] = {copy, inputs[1], inputs[2]};
        assert_int_equal(eval_run(front, copy, reference_inputs, NULL), BCG_OK);
        memcpy(want, copy, bytes);
        assert_int_equal(bcg_run(kernel, NULL, inputs, &err), BCG_OK);
        got = (char *)inputs[0];
    } else {
        got = copy = calloc(1, bytes); /* the gaps of the view stay 0 in both */
        assert_non_null(got);
        assert_int_equal(eval_run(front, want, inputs, NULL), BCG_OK);
        assert_int_equal(bcg_run(kernel, got, inputs, &err), BCG_OK);
    }
    int64_t at = first_difference_in(got, want, bcg_kernel_dtype(kernel), span,
                                     uses_transcendental(expr), uses_f64_polynomial(expr));
    if (at >= 0) {
        print_error("%s %s runs of %lld %s: element %lld differs from the reference\n", expr,
                    bcg_dtype_name(t), (long long)n, short_layout_names[lay], (long long)at);
        result = -1;
    }
    free(want);
    free(copy);
    arena_free(a);
done:
    bcg_context_free(ctx);
    for (int i = 0; i < 3; i++)
        free(allocations[i]);
    return result;
}

static void test_short_runs(void **state)
{
    (void)state;
    static const char *const exprs[] = {
        "minimum(2, maximum(a, b * b))", "a * b + c", "(a - c) * (a - c) + b",
        "where(where(a >= 3, b, a) > 5, where(a >= 3, b, a), c)", "where(a > b, 1, c)",
        "f64(a) * c - i32(b)", "maximum(a, 0) - abs(c)", "a - b"};
    static const bcg_dtype types[] = {BCG_F32, BCG_F64, BCG_I16, BCG_U8, BCG_I64};
    static const int64_t runs[] = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 37, 64};
    int checked = 0, failures = 0, gathers[SHORT_LAYOUTS] = {0}, scatters = 0, unused = 0;
    int per_layout[SHORT_LAYOUTS] = {0};
    for (int lay = 0; lay < SHORT_LAYOUTS; lay++) {
        long case_index = 0;
        for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
            for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
                for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
                    /* every run with the first dtype; a spread of runs with the others */
                    if ((t > 0 && (r + t + e) % 4 != 0) || !sampled(lay, case_index++))
                        continue;
                    int got = check_short_case(exprs[e], types[t], runs[r], (short_layout)lay,
                                               &gathers[lay],
                                               lay == SHORT_OUT_VIEW ? &scatters : &unused);
                    per_layout[lay] += got != 0;
                    failures += got < 0;
                }
        checked += per_layout[lay];
    }
    print_message("# %d kernels in tiles; gathering: rows %d, strided %d, transposed %d, "
                  "in place %d, output view %d (%d scattered)\n", checked, gathers[0],
                  gathers[1], gathers[2], gathers[3], gathers[4], scatters);
    assert_int_equal(failures, 0);
    assert_true(checked > SHORT_LAYOUTS * 20);
    /* b (rows, 1) is gathered in every layout; the output view is scattered */
    assert_true(gathers[SHORT_STRIDED] * 10 > per_layout[SHORT_STRIDED] * 9);
    assert_true(gathers[SHORT_TRANSPOSED] * 10 > per_layout[SHORT_TRANSPOSED] * 9);
    assert_true(scatters * 10 > per_layout[SHORT_OUT_VIEW] * 9);
}

/* Long runs over a transposed input (gen/lower.c, "2-D tiles of long runs
 * over a transposed input"): a (m, n) C-contiguous, b the same shape as a
 * transposed view (strides (1, m)), c a row (n,); runs longer than half a
 * 1-D tile, m with a last tile of fewer rows (and, for u8 with m 37, a
 * stride shorter than a line: the blocked form), in place on a, with and
 * without streaming stores, on two threads, against the reference
 * evaluator bit for bit.
 * The gather's transposed path (bcg_mk_gather_rows_BITS, ro 1) is what
 * reads b.  Returns 1 when the case took 2-D tiles that gather, 0 when it
 * ran another form, -1 on a mismatch. */
static int check_transposed_case(const char *expr, bcg_dtype t, int64_t m, int64_t n,
                                 int stream, bool inplace, int threads)
{
    int64_t shape[2] = {m, n}, transposed[2] = {1, m}, row[1] = {n};
    bcg_operand ops[3] = {{"a", t, 2, shape, NULL}, {"b", t, 2, shape, transposed},
                          {"c", t, 1, row, NULL}};
    size_t size = bcg_dtype_size(t);
    void *a = malloc((size_t)(m * n) * size), *b = malloc((size_t)(m * n) * size);
    void *c = malloc((size_t)n * size);
    assert_true(a && b && c);
    fill(a, t, m * n);
    fill(b, t, m * n);
    fill(c, t, n);
    const void *in[3] = {a, b, c};
    bcg_options options;
    bcg_options_init(&options);
    options.stream_stores = stream;
    if (inplace)
        options.inplace = 0;
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k = NULL;
    bcg_error err;
    int result = 0;
    if (bcg_compile(ctx, expr, ops, 3, &options, &k, &err) != BCG_OK) {
        print_error("%s %s: %s\n", expr, bcg_dtype_name(t), err.message);
        result = -1;
        goto done;
    }
    const char *source = bcg_kernel_source(k);
    if (strstr(source, "row_start") && strstr(source, "bcg_mk_gather_rows_"))
        result = 1;
    arena *ar = arena_new();
    compile *front = ar ? arena_alloc(ar, sizeof *front) : NULL;
    assert_non_null(front);
    front->arena = ar;
    front->err = &err;
    assert_int_equal(compile_front(front, expr, ops, 3, &options), BCG_OK);
    front->err = NULL;
    size_t bytes = (size_t)(m * n) * bcg_dtype_size(bcg_kernel_dtype(k));
    char *want = malloc(bytes), *got = malloc(bytes);
    assert_true(want && got);
    if (inplace) { /* the reference into a copy of a */
        memcpy(want, a, bytes);
        const void *reference_in[3] = {want, b, c};
        assert_int_equal(eval_run(front, want, reference_in, NULL), BCG_OK);
        assert_int_equal(bcg_run(k, NULL, in, &err), BCG_OK);
        memcpy(got, a, bytes);
    } else {
        assert_int_equal(eval_run(front, want, in, NULL), BCG_OK);
        if (threads > 1) /* pieces of the rows, each compiled for its share */
            assert_int_equal(bcg_run_threads(k, got, in, threads, &err), BCG_OK);
        else
            assert_int_equal(bcg_run(k, got, in, &err), BCG_OK);
    }
    int64_t at = first_difference(got, want, bcg_kernel_dtype(k), m * n, false);
    if (at >= 0) {
        print_error("%s %s (%lld, %lld), b transposed, stream %d%s: element %lld differs from "
                    "the reference\n", expr, bcg_dtype_name(t), (long long)m, (long long)n,
                    stream, inplace ? ", in place" : "", (long long)at);
        result = -1;
    }
    free(want);
    free(got);
    arena_free(ar);
done:
    bcg_context_free(ctx);
    free(a);
    free(b);
    free(c);
    return result;
}

static void test_transposed_long_runs(void **state)
{
    (void)state;
    static const char *const exprs[] = {"a + b", "a * b + c", "where(a > b, a, c)",
                                        "minimum(2, maximum(b, a - c))"};
    static const bcg_dtype types[] = {BCG_F32, BCG_F64, BCG_I16, BCG_U8, BCG_I64};
    static const int64_t shapes[][2] = {{69, 513}, {37, 1000}, {21, 2049}, {3, 700}, {133, 1025}};
    int checked = 0, tiled = 0, tiled_wanted = 0, failures = 0, fallbacks = 0;
    long case_index = 0;
    for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (int variant = 0; variant < 4; variant++) {
                    if (!sampled(0, case_index++))
                        continue;
                    int64_t m = shapes[s][0], n = shapes[s][1];
                    int got = check_transposed_case(exprs[e], types[t], m, n, variant == 1,
                                                    variant == 2, variant == 3 ? 2 : 1);
                    /* b's stride along the run spans a line and a tile has 4 rows or more */
                    bool wanted = m >= 4 && m * (int64_t)bcg_dtype_size(types[t]) >= 64;
                    checked++;
                    failures += got < 0;
                    tiled += got > 0;
                    tiled_wanted += wanted;
                    /* (where the stack bound, 96 KB of tiles, leaves fewer than 4
                     * rows, the blocked form: 64-bit trees of two or three tiles over
                     * runs of 1000 or more) */
                    fallbacks += wanted && got == 0;
                }
    print_message("# %d kernels, %d as 2-D tiles over the transposed input (%d expected, "
                  "%d left blocked by the stack bound)\n", checked, tiled, tiled_wanted,
                  fallbacks);
    assert_int_equal(failures, 0);
    assert_true(tiled_wanted > checked / 2);
    assert_true(tiled * 10 >= tiled_wanted * 6); /* 204 of 272 unsampled */
}

/* A call per row of a 2-D tile over a transposed input (gen/lower.c,
 * row_calls_wanted), over columns of the run: a per-row operand d (m, 1)
 * is read in place, one value a call, and a row c (n,) in place.  Either a is the transposed view (strides (1, m)) and the
 * output C-contiguous, or a is C-contiguous and the output a transposed
 * view (strides (1, m)); e is a C-contiguous (m, n), c a row (n,), read
 * backwards in one variant (gathered a column at a time then).  Runs
 * longer than half a tile, a last tile of fewer rows, with and without
 * streaming stores and fused code, on two threads; bit for bit against the
 * reference evaluator.  Returns 1 when the kernel called per row (the
 * source's tile_row), 0 for another form, -1 on a mismatch. */
static int check_row_calls_case(const char *expr, bcg_dtype t, int64_t m, int64_t n,
                                int variant, bool out_transposed)
{
    int64_t shape[2] = {m, n}, transposed[2] = {1, m}, column[2] = {m, 1}, row[1] = {n};
    int64_t reversed[1] = {-1}; /* c backwards in variant 2: gathered, or per row */
    bcg_operand ops[4] = {{"a", t, 2, shape, out_transposed ? NULL : transposed},
                          {"d", t, 2, column, NULL},
                          {"c", t, 1, row, variant == 2 ? reversed : NULL},
                          {"e", t, 2, shape, NULL}};
    size_t size = bcg_dtype_size(t);
    void *a = malloc((size_t)(m * n) * size), *d = malloc((size_t)m * size);
    void *c = malloc((size_t)n * size), *e = malloc((size_t)(m * n) * size);
    assert_true(a && d && c && e);
    fill(a, t, m * n);
    fill(d, t, m);
    fill(c, t, n);
    fill(e, t, m * n);
    const void *in[4] = {a, d, variant == 2 ? (char *)c + (size_t)(n - 1) * size : c, e};
    bcg_options options;
    bcg_options_init(&options);
    options.stream_stores = variant == 1;
    options.disable_vector_code = variant == 2;
    bcg_output output = {.dtype = BCG_DTYPE_AUTO, .rank = 2, .strides = transposed};
    if (out_transposed)
        options.output = &output;
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k = NULL;
    bcg_error err;
    int result = 0;
    if (bcg_compile(ctx, expr, ops, 4, &options, &k, &err) != BCG_OK) {
        print_error("%s %s: %s\n", expr, bcg_dtype_name(t), err.message);
        bcg_context_free(ctx);
        result = -1;
        goto done;
    }
    if (strstr(bcg_kernel_source(k), "tile_row"))
        result = 1;
    arena *ar = arena_new();
    compile *front = ar ? arena_alloc(ar, sizeof *front) : NULL;
    assert_non_null(front);
    front->arena = ar;
    front->err = &err;
    assert_int_equal(compile_front(front, expr, ops, 4, &options), BCG_OK);
    front->err = NULL;
    size_t bytes = (size_t)(m * n) * bcg_dtype_size(bcg_kernel_dtype(k));
    char *want = malloc(bytes), *got = malloc(bytes);
    assert_true(want && got);
    memset(want, 0, bytes);
    memset(got, 0, bytes);
    assert_int_equal(eval_run(front, want, in, NULL), BCG_OK);
    if (variant == 3) /* pieces of the rows, each compiled for its share */
        assert_int_equal(bcg_run_threads(k, got, in, 2, &err), BCG_OK);
    else
        assert_int_equal(bcg_run(k, got, in, &err), BCG_OK);
    int64_t at = first_difference(got, want, bcg_kernel_dtype(k), m * n, false);
    if (at >= 0) {
        print_error("%s %s (%lld, %lld), %s transposed, variant %d: element %lld differs "
                    "from the reference\n", expr, bcg_dtype_name(t), (long long)m, (long long)n,
                    out_transposed ? "the output" : "a", variant, (long long)at);
        result = -1;
    }
    free(want);
    free(got);
    arena_free(ar);
    bcg_context_free(ctx);
done:
    free(a);
    free(d);
    free(c);
    free(e);
    return result;
}

static void test_transposed_row_calls(void **state)
{
    (void)state;
    /* (d is the per-row operand of a transposed a, c of a transposed output) */
    static const char *const exprs[] = {"a + d - c", "(a - d) * (c + 2)", "where(a > d, a, e - c)",
                                        "minimum(2, maximum(a, d)) + c"};
    static const bcg_dtype types[] = {BCG_F32, BCG_F64, BCG_I16, BCG_U8, BCG_I64};
    static const int64_t shapes[][2] = {{69, 513}, {37, 1000}, {21, 2049}, {133, 1025}};
    int checked = 0, per_row = 0, failures = 0;
    long case_index = 0;
    for (size_t x = 0; x < sizeof exprs / sizeof exprs[0]; x++)
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (int variant = 0; variant < 4; variant++) {
                    if (!sampled(0, case_index++))
                        continue;
                    /* the transposed output: the plan's innermost run is along m */
                    bool out_transposed = (case_index & 1) != 0;
                    int64_t m = shapes[s][0], n = shapes[s][1];
                    if (out_transposed) { /* runs of n over the output's rows */
                        m = shapes[s][1];
                        n = shapes[s][0];
                    }
                    int got = check_row_calls_case(exprs[x], types[t], m, n, variant,
                                                   out_transposed);
                    checked++;
                    failures += got < 0;
                    per_row += got > 0;
                }
    print_message("# %d kernels, %d called per row of a 2-D tile\n", checked, per_row);
    assert_int_equal(failures, 0);
    assert_true(per_row * 2 > checked);
    /* the bench's transposed_out: a + b into a transposed view, b a row */
    int64_t shape[2] = {2048, 2048}, transposed[2] = {1, 2048}, row[1] = {2048};
    bcg_operand ops[2] = {{"a", BCG_F32, 2, shape, NULL}, {"b", BCG_F32, 1, row, NULL}};
    bcg_options options;
    bcg_options_init(&options);
    bcg_output output = {.dtype = BCG_DTYPE_AUTO, .rank = 2, .strides = transposed};
    options.output = &output;
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k = NULL;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, "a + b", ops, 2, &options, &k, &err), BCG_OK);
    const char *source = bcg_kernel_source(k);
    if (!strstr(source, "tile_row") || strstr(source, "in1_tile"))
        fail_msg("transposed_out: no call per row, or b gathered:\n%s", source);
    /* a whole line of a per gather: 16 rows (the first tile up to a line
     * of a), in 3 columns of 704 (48 KB tiles) */
    if (!strstr(source, "row_next += 16") || !strstr(source, "column_start += 704"))
        fail_msg("transposed_out: not 16 rows in columns of 704:\n%s", source);
    bcg_context_free(ctx);
}

/* 1-D tiles of values narrower than 4 bytes hold TILE_MIN_BYTES (gen/lower.c,
 * tile_elements): runs around 2048 and 4096 elements, through check_case's
 * layouts, and the tile length in the source. */
static void test_narrow_tiles(void **state)
{
    (void)state;
    static const char *const exprs[] = {"a + b", "where(a > b, a, b)", "a - 3",
                                        "(a | b) ^ c", "where(a > 100, a, 0)", "f32(a) * b"};
    static const bcg_dtype types[] = {BCG_U8, BCG_I8, BCG_I16, BCG_U16};
    static const int64_t runs[] = {2047, 2049, 4095, 4097, 9001};
    tally tally = {0, 0, 0, 0, 0, 0};
    int failures = 0;
    long case_index = 0;
    for (int stream = 0; stream < 2; stream++)
        for (int lay = 0; lay < LAYOUT_COUNT; lay++) {
            stream_stores = stream;
            for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
                for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
                    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++)
                        if (sampled(lay, case_index++) &&
                            !check_case(exprs[e], types[t], runs[r], (layout)lay, &tally))
                            failures++;
        }
    stream_stores = 0;
    print_message("# %d cases, %d through microkernels, %d not compilable\n", tally.cases,
                  tally.tiled, tally.skipped);
    assert_int_equal(failures, 0);
    assert_true(tally.tiled * 2 > tally.cases);
    /* the tile lengths: 4096 u8 elements, 2048 i16, and 1024 as soon as an f32 is in the
     * tree or the values are f16 */
    static const struct {
        const char *expr;
        bcg_dtype t;
        const char *tile;
    } lengths[] = {{"where(a > 100, a, 0)", BCG_U8, "[4096]"},
                   {"a * b + 3", BCG_I16, "[2048]"},
                   {"f32(a) * 3", BCG_U8, "[1024]"},
                   {"a * b + 3", BCG_F16, "[1024]"}}; /* computed in float */
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        int64_t shape[1] = {100000};
        bcg_operand ops[2] = {{"a", lengths[i].t, 1, shape, NULL},
                              {"b", lengths[i].t, 1, shape, NULL}};
        bcg_context *ctx = bcg_context_new();
        bcg_kernel *k = NULL;
        bcg_error err;
        bcg_options options;
        bcg_options_init(&options);
        options.stream_stores = 0;
        options.disable_vector_code = 1; /* tiles of microkernel calls (fused: test_vex.c) */
        assert_int_equal(bcg_compile(ctx, lengths[i].expr, ops, 2, &options, &k, &err), BCG_OK);
        if (!strstr(bcg_kernel_source(k), lengths[i].tile))
            fail_msg("%s over %s: no tile of %s in\n%s", lengths[i].expr,
                     bcg_dtype_name(lengths[i].t), lengths[i].tile, bcg_kernel_source(k));
        bcg_context_free(ctx);
    }
}

/* bcg_run_threads splits the loop outside the 2-D tiles: each piece is
 * compiled for its share of the rows (2-D tiles again, a shorter last
 * tile), and the result is the reference evaluator's. */
static void test_short_runs_threads(void **state)
{
    (void)state;
    const int64_t m = 20011, n = 5;
    int64_t sa[2] = {m, n}, ta[2] = {n, -1}, sb[2] = {m, 1}, sc[1] = {n};
    bcg_operand ops[3] = {{"a", BCG_F32, 2, sa, ta}, {"b", BCG_F32, 2, sb, NULL},
                          {"c", BCG_F32, 1, sc, NULL}};
    const char *expr = "minimum(2, maximum(a, b * b)) + c";
    float *a = malloc(sizeof(float) * (size_t)(m * n)), *b = malloc(sizeof(float) * (size_t)m);
    float *c = malloc(sizeof(float) * (size_t)n), *got = malloc(sizeof(float) * (size_t)(m * n));
    float *want = malloc(sizeof(float) * (size_t)(m * n));
    assert_true(a && b && c && got && want);
    fill(a, BCG_F32, m * n);
    fill(b, BCG_F32, m);
    fill(c, BCG_F32, n);
    const void *in[3] = {a + n - 1, b, c}; /* a's rows reversed */
    bcg_options options;
    bcg_options_init(&options);
    bcg_context *ctx = bcg_context_new();
    bcg_kernel *k = NULL;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, expr, ops, 3, &options, &k, &err), BCG_OK);
    /* 2-D tiles, or the flat form (the small kernel's code over a loop of rows) */
    assert_true(strstr(bcg_kernel_source(k), "row_start") != NULL ||
                strstr(bcg_kernel_source(k), VEX_SMALL_SYMBOL "(out, inputs);") != NULL);
    assert_int_equal(bcg_run_threads(k, got, in, 2, &err), BCG_OK);
    arena *ar = arena_new();
    compile *front = arena_alloc(ar, sizeof *front);
    front->arena = ar;
    front->err = &err;
    assert_int_equal(compile_front(front, expr, ops, 3, &options), BCG_OK);
    assert_int_equal(eval_run(front, want, in, &err), BCG_OK);
    assert_true(first_difference((char *)got, (char *)want, BCG_F32, m * n, false) < 0);
    arena_free(ar);
    bcg_context_free(ctx);
    free(a);
    free(b);
    free(c);
    free(got);
    free(want);
}

/* Runs of 8- and 16-bit elements longer than a 64-byte block and not a
 * multiple of it (runtime/microkernels.c, RUN: the run's last block
 * computed first, the whole blocks before it by the vectorised loop, the
 * block stored last over the run's end; runs of a quarter block to two
 * blocks as two overlapping blocks, RUN_HALVES), against the reference evaluator
 * bit for bit: random binary operations, comparisons, where and
 * saturating operations on the 8- and 16-bit dtypes, random run lengths
 * from 2 to 300 and row counts, the run contiguous in both operands (one
 * long run, tiles and their remainders), an operand repeating each row
 * (the _rows form, its periodic tile), a value a row (stride 0 in the
 * run, either operand), in place on a, plain and streaming stores (the
 * _nt head and tail); every operand ends (or starts) at a page that
 * faults.  Returns 1 when the kernel called a microkernel on runs the
 * block takes, 0 when not, -1 on a mismatch. */
static int check_narrow_tail_case(const char *expr, bcg_dtype t, int64_t rows, int64_t n,
                                  int kind, bool inplace, int stream, bool at_end,
                                  guarded gd[4])
{
    /* kind 0: a, b (rows, n); 1: b (n,); 2: b (rows, 1); 3: a (rows, 1) */
    int64_t full[2] = {rows, n}, run[1] = {n}, column[2] = {rows, 1};
    bcg_operand ops[3] = {{"a", t, 2, kind == 3 ? column : full, NULL},
                          {"b", t, kind == 1 ? 1 : 2, kind == 1 ? run : kind == 2 ? column : full,
                           NULL},
                          {"c", BCG_BOOL, 2, full, NULL}};
    const void *in[3];
    for (int i = 0; i < 3; i++) {
        int64_t count = 1;
        for (int d = 0; d < ops[i].rank; d++)
            count *= ops[i].shape[d];
        size_t bytes = (size_t)count * bcg_dtype_size(ops[i].dtype);
        char *buffer = guarded_alloc(&gd[i], bytes, at_end);
        fill(buffer, ops[i].dtype, count);
        in[i] = buffer;
    }
    bcg_options options;
    bcg_options_init(&options);
    options.microkernel_run = 1;
    options.stream_stores = stream;
    options.disable_vector_code = 1; /* the microkernels, not gen/vex.c */
    if (inplace)
        options.inplace = 0;
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_kernel *k = NULL;
    bcg_error err;
    int result = 0;
    int operands = strstr(expr, "c") ? 3 : 2;
    if (bcg_compile(ctx, expr, ops, operands, &options, &k, &err) != BCG_OK)
        goto done; /* (an in-place dtype change, bitwise ops on a dtype that has none) */
    const char *source = bcg_kernel_source(k);
    size_t out_size = bcg_dtype_size(bcg_kernel_dtype(k));
    int64_t block = 64 / (int64_t)out_size;
    if (strstr(source, "bcg_mk_") && bcg_dtype_size(t) <= 2 && out_size <= 2 &&
        ((n > block && n % block != 0) || (n >= block / 4 && n < block)))
        result = 1;
    arena *ar = arena_new();
    compile *front = ar ? arena_alloc(ar, sizeof *front) : NULL;
    assert_non_null(front);
    front->arena = ar;
    front->err = &err;
    assert_int_equal(compile_front(front, expr, ops, operands, &options), BCG_OK);
    front->err = NULL;
    int64_t elements = bcg_kernel_elements(k); /* (rows, 1) for a * 5 in layout 3 */
    size_t bytes = (size_t)elements * out_size;
    char *want = malloc(bytes), *got = malloc(bytes);
    assert_true(want && got);
    if (inplace) { /* the reference into a copy of a; the kernel into a itself */
        memcpy(want, in[0], bytes);
        const void *reference_in[3] = {want, in[1], in[2]};
        assert_int_equal(eval_run(front, want, reference_in, NULL), BCG_OK);
        assert_int_equal(bcg_run(k, NULL, in, &err), BCG_OK);
        memcpy(got, in[0], bytes);
    } else {
        assert_int_equal(eval_run(front, want, in, NULL), BCG_OK);
        char *out = guarded_alloc(&gd[3], bytes, !at_end);
        assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
        memcpy(got, out, bytes);
    }
    int64_t at = first_difference(got, want, bcg_kernel_dtype(k), elements, false);
    if (at >= 0) {
        print_error("%s %s (%lld, %lld), layout %d, stream %d%s: element %lld differs from "
                    "the reference\n", expr, bcg_dtype_name(t), (long long)rows, (long long)n,
                    kind, stream, inplace ? ", in place" : "", (long long)at);
        result = -1;
    }
    free(want);
    free(got);
    arena_free(ar);
done:
    bcg_context_free(ctx);
    return result;
}

static void test_narrow_tails(void **state)
{
    (void)state;
    static const char *const exprs[] = {
        "a * b", "a + b", "a - b", "minimum(a, b)", "maximum(a, b)", "a > b", "a == b",
        "a <= b", "where(a > b, a, b)", "where(c, a, b)", "a & b", "a ^ b", "add_sat(a, b)",
        "sub_sat(a, b)", "a * 5", "3 - a", "where(c, a, 7)", "mul_q15(a, b)", "mul_q7(a, b)"};
    static const bcg_dtype types[] = {BCG_U8, BCG_I8, BCG_I16, BCG_U16};
    guarded gd[4] = {{0}};
    random_state = 0x6e61727277746169ull; /* (the cases are the same every run) */
    int cases = 0, taken = 0, failures = 0;
    for (int i = 0; i < 360; i++) {
        uint64_t r = random_next();
        const char *expr = exprs[r % (sizeof exprs / sizeof exprs[0])];
        bcg_dtype t = types[(r >> 8) % 4];
        /* mostly lengths past one block, some short ones and whole blocks */
        int64_t n = (r >> 12) % 8 == 0 ? 64 * (int64_t)((r >> 16) % 4 + 1)
                                       : 2 + (int64_t)((r >> 16) % 299);
        int64_t rows = 1 + (int64_t)((r >> 28) % 40);
        int kind = (int)((r >> 36) % 4);
        bool inplace = kind != 3 && (r >> 40) % 4 == 0;
        int stream = (int)((r >> 44) % 3 == 0);
        bool at_end = (r >> 48) & 1;
        int got = check_narrow_tail_case(expr, t, rows, n, kind, inplace, stream, at_end, gd);
        cases++;
        taken += got > 0;
        failures += got < 0;
    }
    for (int i = 0; i < 4; i++)
        guarded_free(&gd[i]);
    print_message("# narrow tails: %d cases, %d through microkernels on runs the block takes\n",
                  cases, taken);
    assert_int_equal(failures, 0);
    assert_true(taken * 2 > cases);
}

/* One case of test_rows_gathers: EXPR over a of rank 3 (SHAPE, strides ST),
 * a against a faulting page at its first or last element, the output at
 * an element offset SHIFT before a faulting page; bit for bit against the
 * reference evaluator.  Returns 1 when the kernel's source has SIGN (the
 * path the case is for), 0 when not, -1 on a mismatch. */
static int check_rows_gather_case(const char *expr, bcg_dtype t, int64_t *shape, int64_t *st,
                                  const char *sign, bool at_end, int64_t shift, guarded gd[2])
{
    int64_t low = 0, high = 0, n = 1;
    for (int d = 0; d < 3; d++) {
        int64_t reach = (shape[d] - 1) * st[d];
        low += reach < 0 ? reach : 0;
        high += reach > 0 ? reach : 0;
        n *= shape[d];
    }
    size_t size = bcg_dtype_size(t);
    char *base = guarded_alloc(&gd[0], (size_t)(high - low + 1) * size, at_end);
    fill(base, t, high - low + 1);
    const void *in[1] = {base - low * (int64_t)size};
    bcg_operand ops[1] = {{"a", t, 3, shape, st}};
    bcg_options options;
    bcg_options_init(&options);
    options.stream_stores = 0;
    options.disable_vector_code = 1; /* the microkernels, not gen/vex.c's flat or rows forms */
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_kernel *k = NULL;
    bcg_error err;
    int result = 0;
    assert_int_equal(bcg_compile(ctx, expr, ops, 1, &options, &k, &err), BCG_OK);
    result = strstr(bcg_kernel_source(k), sign) != NULL;
    arena *ar = arena_new();
    compile *front = ar ? arena_alloc(ar, sizeof *front) : NULL;
    assert_non_null(front);
    front->arena = ar;
    front->err = &err;
    assert_int_equal(compile_front(front, expr, ops, 1, &options), BCG_OK);
    front->err = NULL;
    size_t out_size = bcg_dtype_size(bcg_kernel_dtype(k));
    char *want = malloc((size_t)n * out_size);
    assert_non_null(want);
    assert_int_equal(eval_run(front, want, in, NULL), BCG_OK);
    char *out = guarded_alloc(&gd[1], (size_t)(n + shift) * out_size, true) + shift * (int64_t)out_size;
    assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
    int64_t at = first_difference(out, want, bcg_kernel_dtype(k), n, false);
    if (at >= 0) {
        print_error("%s %s (%lld, %lld, %lld) strides [%lld, %lld, %lld]: element %lld differs "
                    "from the reference\n", expr, bcg_dtype_name(t), (long long)shape[0],
                    (long long)shape[1], (long long)shape[2], (long long)st[0], (long long)st[1],
                    (long long)st[2], (long long)at);
        result = -1;
    }
    free(want);
    arena_free(ar);
    bcg_kernel_free(k);
    bcg_context_free(ctx);
    return result;
}

/* The gathers of 2-D tiles over runs of medium length (17 to 300): (1)
 * copies of an input read forwards whose rows are reversed, permuted or
 * apart (`a`, maximum(a, a) folded), which the gather writes straight
 * into the output's rows, every row of the loop outside the run a call
 * (lower.c rows_copy, the gather's memcpy a row); (2) trees over an input
 * of stride 2 to 4 along runs of 17 to 64, gathered into tiles through
 * the 1-D gather's loops for those strides (microkernels.c
 * GATHER_SCATTER_ROWS).  Every dtype, a against a faulting page at
 * either end, the output at an element offset before one; bit for bit
 * against eval.c, and the share of cases taking each path. */
static void test_rows_gathers(void **state)
{
    (void)state;
    uint64_t saved_state = random_state;
    random_state = 0x726f7767617468ull; /* (the cases are the same every run) */
    guarded gd[2] = {{0}};
    int copies = 80, into_out = 0, strided = 60, gathered = 0, failures = 0;
    for (int i = 0; i < copies + strided; i++) {
        bcg_dtype t = dtypes[random_next() % 10];
        bool copy = i < copies;
        int64_t run = copy ? 17 + (int64_t)(random_next() % 284) : 17 + (int64_t)(random_next() % 48);
        int64_t rows = 4 + (int64_t)(random_next() % 30), planes = 2 + (int64_t)(random_next() % 12);
        int64_t shape[3] = {planes, rows, run};
        int64_t along = copy ? 1 : 2 + (int64_t)(random_next() % 3);
        int64_t line = run * along + (int64_t)(random_next() % 3) * (int64_t)(random_next() % 2);
        int64_t st[3] = {rows * line, line, along};
        int kind = (int)(random_next() % 3);
        if (kind == 1) { /* the rows reversed */
            st[1] = -line;
        } else if (kind == 2) { /* the two outer dimensions permuted */
            st[0] = line;
            st[1] = planes * line;
        }
        if (random_next() % 2)
            st[0] = -st[0];
        if (copy && kind == 0 && line == run) /* (contiguous: one run, no rows) */
            st[1] = -line;
        static const char *const copy_exprs[] = {"a", "maximum(a, a)", "minimum(a, a)"};
        static const char *const tree_exprs[] = {"a + 1", "minimum(f32(a), 0.5)",
                                                 "a * a - 2", "maximum(a, 3) - a"};
        const char *expr = copy ? copy_exprs[random_next() % 3] : tree_exprs[random_next() % 4];
        char into[48]; /* the gather's call with the output's rows as its destination */
        snprintf(into, sizeof into, "_gather_rows_%d(out + ", 8 * (int)bcg_dtype_size(t));
        int got = check_rows_gather_case(expr, t, shape, st, copy ? into : "bcg_mk_gather_rows_",
                                         random_next() % 2, (int64_t)(random_next() % 8), gd);
        failures += got < 0;
        if (copy)
            into_out += got > 0;
        else
            gathered += got > 0;
    }
    guarded_free(&gd[0]);
    guarded_free(&gd[1]);
    random_state = saved_state;
    print_message("# rows gathers: %d of %d copies gathered into the output's rows, %d of %d "
                  "trees over strides 2 to 4 gathered\n", into_out, copies, gathered, strided);
    assert_int_equal(failures, 0);
    assert_true(into_out * 4 > copies * 3);
    assert_true(gathered * 3 > strided);
}

static void test_symbol_table(void **state)
{
    (void)state;
    assert_true(microkernel_symbol_count > 150);
    assert_true(microkernel_exists("bcg_mk_add_f32"));
    assert_true(microkernel_exists("bcg_mk_where_u64"));
    assert_true(microkernel_exists("bcg_mk_exp_f64"));
    assert_true(microkernel_exists("bcg_mk_add_f32_nt"));
    assert_true(microkernel_exists("bcg_mk_gt_i8_nt"));
    assert_true(microkernel_exists("bcg_mk_fence"));
    assert_false(microkernel_exists("bcg_mk_exp_f32_nt"));
    assert_false(microkernel_exists("bcg_mk_bitand_f32"));
    assert_false(microkernel_exists("bcg_mk_div_i32"));
    for (int i = 0; i < microkernel_symbol_count; i++) {
        assert_non_null(microkernel_symbols[i].address);
        /* every name is one the generator can ask for: bool, never _Bool */
        assert_null(strstr(microkernel_symbols[i].name, "_Bool"));
    }
    /* a cast kernel between every two dtypes of the cast table, under the
     * name kir_cast_name gives (the casts from bool were named
     * bcg_mk_cast__Bool_T, so u8(a > b) never took the tiles) */
    for (int from = 0; from <= BCG_F64; from++)
        for (int to = 0; to <= BCG_F64; to++) {
            char name[48];
            kir_cast_name((bcg_dtype)from, (bcg_dtype)to, name, sizeof name);
            if (!microkernel_exists(name))
                fail_msg("no cast kernel %s", name);
        }
}

/* The binary _rows microkernels with streaming stores (stream 1) against
 * the operation's plain microkernel run by run (itself checked against
 * the reference evaluator above), bit for bit (any NaN for any NaN): every
 * binary operation and comparison with a _nt variant, on its dtype; runs
 * contiguous or one value each (strides 1/1, 1/0, 0/1) and strided ones;
 * run lengths most of them whole 256-byte streaming blocks, some not;
 * output runs on 64-byte boundaries most of the time (the rows_stream path:
 * at least a third of the calls must take it), else one element in; run
 * strides of the output a whole number of lines or not, of the operands
 * any (0: a repeated run). */
static size_t suffix_size(const char *name, bcg_dtype *dtype)
{
    static const struct {
        const char *suffix;
        bcg_dtype dtype;
    } suffixes[] = {{"_f32", BCG_F32}, {"_f64", BCG_F64}, {"_i8", BCG_I8},   {"_i16", BCG_I16},
                    {"_i32", BCG_I32}, {"_i64", BCG_I64}, {"_u8", BCG_U8},   {"_u16", BCG_U16},
                    {"_u32", BCG_U32}, {"_u64", BCG_U64}, {"_bool", BCG_BOOL}};
    size_t length = strlen(name);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t s = strlen(suffixes[i].suffix);
        if (length > s && strcmp(name + length - s, suffixes[i].suffix) == 0) {
            *dtype = suffixes[i].dtype;
            return bcg_dtype_size(suffixes[i].dtype);
        }
    }
    return 0;
}

static const void *symbol_address(const char *name)
{
    for (int i = 0; i < microkernel_symbol_count; i++)
        if (strcmp(microkernel_symbols[i].name, name) == 0)
            return microkernel_symbols[i].address;
    return NULL;
}

typedef void binary_rows_fn(void *, long, const void *, long, long, const void *, long, long,
                            long, long, long);
typedef void binary_fn(void *, const void *, long, const void *, long, long);

static void test_rows_streamed_aligned(void **state)
{
    (void)state;
    enum { MAX_ROWS = 9, MAX_RUN = 1100, OUT_CAP = MAX_ROWS * (MAX_RUN + 64) * 8 + 64 };
    static const char *const compares[] = {"eq_", "ne_", "lt_", "le_", "gt_", "ge_"};
    static const long strides[][2] = {{1, 1}, {1, 1}, {1, 0}, {0, 1}, {1, 0}, {0, 1}, {2, 1}};
    unsigned char *got = NULL, *want = NULL;
    assert_int_equal(posix_memalign((void **)&got, 64, OUT_CAP), 0);
    assert_int_equal(posix_memalign((void **)&want, 64, OUT_CAP), 0);
    unsigned char *a = malloc((size_t)MAX_ROWS * 2 * MAX_RUN * 8), *b = malloc((size_t)MAX_ROWS * 2 * MAX_RUN * 8);
    assert_non_null(a);
    assert_non_null(b);
    int kernels = 0, calls = 0, aligned_calls = 0;
    for (int s = 0; s < microkernel_symbol_count; s++) {
        const char *rows_name = microkernel_symbols[s].name;
        size_t length = strlen(rows_name);
        char base[96], nt[112];
        if (length < 6 || length >= sizeof base || strcmp(rows_name + length - 5, "_rows") != 0)
            continue;
        memcpy(base, rows_name, length - 5);
        base[length - 5] = '\0';
        snprintf(nt, sizeof nt, "%s_nt", base);
        bcg_dtype dtype = BCG_U8;
        size_t size = suffix_size(base, &dtype);
        const void *plain_address = symbol_address(base);
        if (!size || !plain_address || !microkernel_exists(nt) || strstr(base, "where_"))
            continue; /* not a binary operation's (accadd, sum16, transposed ...) */
        size_t out_size = size;
        for (size_t c = 0; c < sizeof compares / sizeof compares[0]; c++)
            if (strncmp(base + 7, compares[c], 3) == 0)
                out_size = 1;
        binary_rows_fn *rows_fn = (binary_rows_fn *)microkernel_symbols[s].address;
        binary_fn *plain = (binary_fn *)plain_address;
        kernels++;
        for (int trial = 0; trial < 8; trial++) {
            long block = 256 / (long)out_size;
            long n = block * (1 + (long)(random_next() % 4));
            if (random_next() % 8 == 0)
                n = 1 + (long)(random_next() % MAX_RUN);
            long rows = 1 + (long)(random_next() % MAX_ROWS);
            long line = 64 / (long)out_size;
            long ro = n + line * (long)(random_next() % 3);
            if (random_next() % 8 == 0)
                ro = n + 1;
            const long *st = strides[random_next() % (sizeof strides / sizeof strides[0])];
            long sa = st[0], sb = st[1];
            long ra = random_next() % 3 ? (sa ? sa * n : 1) : 0;
            long rb = random_next() % 3 ? (sb ? sb * n + 3 : 1) : 0;
            long offset = random_next() % 8 == 0 ? 1 : 0; /* elements off the line */
            fill(a, dtype, MAX_ROWS * 2 * MAX_RUN);
            fill(b, dtype, MAX_ROWS * 2 * MAX_RUN);
            size_t span = (size_t)((rows - 1) * ro + n + offset) * out_size;
            assert_true(span <= OUT_CAP);
            memset(got, 0x5a, span);
            memset(want, 0x5a, span);
            rows_fn(got + offset * (long)out_size, ro, a, sa, ra, b, sb, rb, n, rows, 1);
            for (long r = 0; r < rows; r++)
                plain(want + (offset + r * ro) * (long)out_size, a + (size_t)(r * ra) * size, sa,
                      b + (size_t)(r * rb) * size, sb, n);
            bcg_dtype out_dtype = out_size == 1 && size != 1 ? BCG_U8 : dtype;
            int64_t at = first_difference_in((const char *)got, (const char *)want, out_dtype,
                                             (int64_t)(span / out_size), false, false);
            if (at >= 0)
                fail_msg("%s: %ld runs of %ld (output one %s, run stride %ld; strides %ld %ld, "
                         "run strides %ld %ld): element %lld differs", rows_name, rows, n,
                         offset ? "element in" : "line-aligned", ro, sa, sb, ra, rb,
                         (long long)at);
            calls++;
            aligned_calls += !offset && (ro * (long)out_size) % 64 == 0 &&
                             (n * (long)out_size) % 256 == 0 && (sa == 1 || sb == 1) &&
                             (sa <= 1 && sb <= 1);
        }
    }
    print_message("# %d binary _rows kernels, %d calls, %d of aligned whole blocks\n", kernels,
                  calls, aligned_calls);
    assert_true(kernels > 100);
    assert_true(aligned_calls * 3 > calls);
    free(a);
    free(b);
    free(got);
    free(want);
}

/* bcg_mk_accadd_rows_f32 and _f64 (a block of accumulators taking many
 * runs: sums over an outer loop, the AVX2 path included) against the
 * plain loop they replace, accumulator j taking run 0's element j, then run
 * 1's, ... in double (Neumaier's step for f64), bit for bit: run counts and
 * lengths around the 8-run groups and 16-accumulator blocks, run strides
 * longer than a run, contiguous and strided elements, values whose sums
 * depend on the order. */
void bcg_mk_accadd_rows_f32(double *, const float *, long, long, long, long);
void bcg_mk_accadd_rows_f64(double *, double *, const double *, long, long, long, long);

static void test_accadd_rows(void **state)
{
    (void)state;
    uint64_t seed = 77;
    enum { MAX_N = 70, MAX_ROWS = 40 };
    static float xf[MAX_ROWS * (2 * MAX_N + 5)];
    static double xd[MAX_ROWS * (2 * MAX_N + 5)];
    for (size_t i = 0; i < sizeof xf / sizeof xf[0]; i++) {
        double v = ldexp((double)(int64_t)(xorshift64(&seed) % 2000001) / 1e6 - 1.0,
                         (int)(xorshift64(&seed) % 80) - 40);
        xf[i] = (float)v;
        xd[i] = v;
    }
    for (int trial = 0; trial < 400; trial++) {
        long n = 1 + (long)(xorshift64(&seed) % MAX_N);
        long rows = 1 + (long)(xorshift64(&seed) % MAX_ROWS);
        long sx = xorshift64(&seed) % 4 ? 1 : 2;
        long rx = sx * n + (long)(xorshift64(&seed) % 5);
        double want[MAX_N], got[MAX_N], want_c[MAX_N], got_c[MAX_N];
        for (long j = 0; j < n; j++) {
            want[j] = got[j] = (double)(int64_t)(xorshift64(&seed) % 200) - 100.0;
            want_c[j] = got_c[j] = 0.0;
        }
        bool f64 = trial % 2;
        for (long r = 0; r < rows; r++)
            for (long j = 0; j < n; j++) {
                if (!f64) {
                    want[j] += (double)xf[r * rx + j * sx];
                    continue;
                }
                double x = xd[r * rx + j * sx], t = want[j] + x;
                want_c[j] += fabs(want[j]) >= fabs(x) ? (want[j] - t) + x : (x - t) + want[j];
                want[j] = t;
            }
        if (f64)
            bcg_mk_accadd_rows_f64(got, got_c, xd, sx, rx, rows, n);
        else
            bcg_mk_accadd_rows_f32(got, xf, sx, rx, rows, n);
        if (memcmp(got, want, sizeof got[0] * (size_t)n) != 0 ||
            (f64 && memcmp(got_c, want_c, sizeof got_c[0] * (size_t)n) != 0))
            fail_msg("accadd_rows_%s: %ld runs of %ld (stride %ld, run stride %ld) differ",
                     f64 ? "f64" : "f32", rows, n, sx, rx);
    }
}

/* bcg_mk_OP_accadd_rows_T (a binary operation of two operands computed as
 * it is added into a block of accumulators: the gradient of a broadcast)
 * against the order the reference evaluator defines: accumulator j takes
 * (double)(a OP b) of run 0's element j, then run 1's, ..., the f32 value
 * rounded to float first; f64 with Neumaier's step.  Every operation and
 * float dtype; run counts and lengths from 0 around the 8-run groups and
 * 16-accumulator blocks (tails on both), contiguous, broadcast (stride 0),
 * strided and backwards elements, run strides longer than a run, values
 * whose sums depend on the order, NaN, infinities and signed zeros. */
#define ACCADD_OPS(X) X(add, x + y) X(sub, x - y) X(mul, x * y) X(div, x / y) \
    X(minimum, (x < y || x != x) ? x : y) X(maximum, (x > y || x != x) ? x : y)
#define DECLARE_ACCADD_OP(OP, EXPR)                                                           \
    void bcg_mk_##OP##_accadd_rows_f32(double *, const float *, long, long, const float *,   \
                                       long, long, long, long);                              \
    void bcg_mk_##OP##_accadd_rows_f64(double *, double *, const double *, long, long,       \
                                       const double *, long, long, long, long);              \
    static float op_##OP##_f32(float x, float y) { return EXPR; }                            \
    static double op_##OP##_f64(double x, double y) { return EXPR; }
ACCADD_OPS(DECLARE_ACCADD_OP)

typedef void accadd_op_f32(double *, const float *, long, long, const float *, long, long,
                           long, long);
typedef void accadd_op_f64(double *, double *, const double *, long, long, const double *,
                           long, long, long, long);
static const struct {
    const char *name;
    accadd_op_f32 *f32;
    accadd_op_f64 *f64;
    float (*scalar_f32)(float, float);
    double (*scalar_f64)(double, double);
} accadd_ops[] = {
#define ACCADD_OP_ROW(OP, EXPR) {#OP, bcg_mk_##OP##_accadd_rows_f32, bcg_mk_##OP##_accadd_rows_f64, \
                                 op_##OP##_f32, op_##OP##_f64},
    ACCADD_OPS(ACCADD_OP_ROW)
};

static double accadd_value(uint64_t *seed)
{
    switch (xorshift64(seed) % 40) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return -0.0;
    case 4: return 0.0;
    case 5: return xorshift64(seed) % 2 ? 0x1p90 : -0x1p90; /* cancelling giants */
    default:
        return ldexp((double)(int64_t)(xorshift64(seed) % 2000001) / 1e6 - 1.0,
                     (int)(xorshift64(seed) % 80) - 40);
    }
}

/* Bit for bit, any NaN matching any NaN (which NaN an addition of two
 * keeps depends on the order of its operands, which C does not fix). */
static bool same_doubles(const double *got, const double *want, long n)
{
    for (long j = 0; j < n; j++)
        if (memcmp(&got[j], &want[j], sizeof got[j]) != 0 && !(isnan(got[j]) && isnan(want[j])))
            return false;
    return true;
}

static void test_accadd_op_rows(void **state)
{
    (void)state;
    uint64_t seed = 1212;
    enum { MAX_N = 70, MAX_ROWS = 40, SPAN = MAX_ROWS * (3 * MAX_N + 5) };
    static float af[SPAN], bf[SPAN];
    static double ad[SPAN], bd[SPAN];
    static const long element_strides[] = {1, 1, 1, 0, 2, -1};
    for (int trial = 0; trial < 1200; trial++) {
        if (trial % 100 == 0) /* new values now and then, some with many specials */
            for (size_t i = 0; i < SPAN; i++) {
                double v = accadd_value(&seed), w = accadd_value(&seed);
                af[i] = (float)v;
                bf[i] = (float)w;
                ad[i] = v;
                bd[i] = w;
            }
        int which = (int)(xorshift64(&seed) % (sizeof accadd_ops / sizeof accadd_ops[0]));
        long n = (long)(xorshift64(&seed) % (MAX_N + 1));
        long rows = (long)(xorshift64(&seed) % (MAX_ROWS + 1));
        if (trial % 7 == 0) /* the whole groups and blocks exactly */
            n = 16 * (1 + (long)(xorshift64(&seed) % 4)), rows = 8 * (1 + (long)(xorshift64(&seed) % 4));
        long sa = element_strides[xorshift64(&seed) % 6], sb = element_strides[xorshift64(&seed) % 6];
        long ra = 3 * MAX_N + (long)(xorshift64(&seed) % 5), rb = 3 * MAX_N + (long)(xorshift64(&seed) % 5);
        if (xorshift64(&seed) % 4 == 0)
            ra = 0; /* one run for every row: a broadcast operand */
        /* element [0] of each run where a backwards run still stays inside */
        long a0 = sa < 0 ? MAX_N : 0, b0 = sb < 0 ? MAX_N : 0;
        double want[MAX_N], got[MAX_N], want_c[MAX_N], got_c[MAX_N];
        for (long j = 0; j < n; j++) {
            want[j] = got[j] = (double)(int64_t)(xorshift64(&seed) % 200) - 100.0;
            want_c[j] = got_c[j] = (double)(int64_t)(xorshift64(&seed) % 3) * 0x1p-60;
        }
        bool f64 = trial % 2;
        for (long r = 0; r < rows; r++)
            for (long j = 0; j < n; j++) {
                long ia = a0 + r * ra + j * sa, ib = b0 + r * rb + j * sb;
                if (!f64) {
                    want[j] += (double)accadd_ops[which].scalar_f32(af[ia], bf[ib]);
                    continue;
                }
                double x = accadd_ops[which].scalar_f64(ad[ia], bd[ib]), t = want[j] + x;
                want_c[j] += fabs(want[j]) >= fabs(x) ? (want[j] - t) + x : (x - t) + want[j];
                want[j] = t;
            }
        if (f64)
            accadd_ops[which].f64(got, got_c, ad + a0, sa, ra, bd + b0, sb, rb, rows, n);
        else
            accadd_ops[which].f32(got, af + a0, sa, ra, bf + b0, sb, rb, rows, n);
        if (!same_doubles(got, want, n) || (f64 && !same_doubles(got_c, want_c, n)))
            fail_msg("%s_accadd_rows_%s: %ld runs of %ld (strides %ld %ld, run strides %ld %ld) "
                     "differ", accadd_ops[which].name, f64 ? "f64" : "f32", rows, n, sa, sb, ra,
                     rb);
    }
}

/* bcg_mk_sum16_f64 (16 Neumaier partial sums, element i into sum i % 16;
 * an AVX2 path for contiguous runs) against the plain loop, bit for bit
 * with the compensations: run lengths around multiples of 16, partial sums
 * carried over from an earlier call, huge values that cancel, infinities
 * and NaNs. */
void bcg_mk_sum16_f64(double *, double *, const double *, long, long);

static void test_sum16_f64(void **state)
{
    (void)state;
    uint64_t seed = 91;
    enum { MAX_N = 100 };
    static double x[2 * MAX_N];
    for (int trial = 0; trial < 400; trial++) {
        for (int i = 0; i < 2 * MAX_N; i++) {
            uint64_t r = xorshift64(&seed);
            x[i] = ldexp((double)(int64_t)(r % 2000001) / 1e6 - 1.0, (int)(r >> 40) % 80 - 40);
            if (r % 23 == 0)
                x[i] = r % 2 ? 0x1p900 : -0x1p900;
            if (trial % 10 == 9 && r % 37 == 0)
                x[i] = r % 3 ? INFINITY : NAN;
        }
        long n = (long)(xorshift64(&seed) % MAX_N), sx = xorshift64(&seed) % 4 ? 1 : 2;
        double want[16], got[16], want_c[16], got_c[16];
        for (int k = 0; k < 16; k++) {
            want[k] = got[k] = (double)(int64_t)(xorshift64(&seed) % 200) - 100.0;
            want_c[k] = got_c[k] = k % 3 ? 0.0 : 0x1p-60;
        }
        for (long i = 0; i < n; i++) {
            double *s = &want[i % 16], *c = &want_c[i % 16], v = x[i * sx], t = *s + v;
            *c += fabs(*s) >= fabs(v) ? (*s - t) + v : (v - t) + *s;
            *s = t;
        }
        bcg_mk_sum16_f64(got, got_c, x, sx, n);
        /* NaN for NaN: the sign of inf - inf's NaN in a compensation
         * depends on the operand order (not specified, docs/semantics.md;
         * -nan for nan under a scratch seed) */
        if (!same_doubles(got, want, 16) || !same_doubles(got_c, want_c, 16))
            fail_msg("sum16_f64: %ld elements (stride %ld) differ", n, sx);
    }
}

/* bcg_mk_sum16_f32 (16 double partial sums, element i into sum i % 16; the
 * AVX2 path takes two blocks of 16 a trip, then one, then the tail):
 * against that order, bit for bit, over lengths 0-299 (every tail),
 * contiguous and strided, with infinities and NaN now and then. */
void bcg_mk_sum16_f32(double *, const float *, long, long);

static void test_sum16_f32(void **state)
{
    (void)state;
    uint64_t seed = 93;
    enum { MAX_N = 300 };
    static float x[2 * MAX_N];
    for (int trial = 0; trial < 600; trial++) {
        for (int i = 0; i < 2 * MAX_N; i++) {
            uint64_t r = xorshift64(&seed);
            x[i] = (float)ldexp((double)(int64_t)(r % 2000001) / 1e6 - 1.0,
                                (int)(r >> 40) % 80 - 40);
            if (r % 23 == 0)
                x[i] = r % 2 ? 0x1p100f : -0x1p100f;
            if (trial % 10 == 9 && r % 37 == 0)
                x[i] = r % 3 ? INFINITY : NAN;
        }
        long n = trial < MAX_N ? trial : (long)(xorshift64(&seed) % MAX_N);
        long sx = xorshift64(&seed) % 4 ? 1 : 2;
        double want[16], got[16];
        for (int k = 0; k < 16; k++)
            want[k] = got[k] = (double)(int64_t)(xorshift64(&seed) % 200) - 100.0;
        for (long i = 0; i < n; i++)
            want[i % 16] += (double)x[i * sx];
        bcg_mk_sum16_f32(got, x, sx, n);
        if (!same_doubles(got, want, 16))
            fail_msg("sum16_f32: %ld elements (stride %ld) differ", n, sx);
    }
}

/* bcg_mk_sum16_rows_f32 (the finished laned sums of many runs: a sum over
 * the last axis, a tile of kept elements a call) against the order every
 * path gives a laned f32 sum: 16 partial sums from 0, element i of the run
 * into sum i % 16, then ((p0 + p1) + (p2 + p3)) + ... pairwise; bit for bit
 * (any NaN for a NaN), over run counts and lengths from 0, contiguous,
 * strided and backwards elements, run strides of either sign. */
void bcg_mk_sum16_rows_f32(double *, const float *, long, long, long, long);

static void test_sum16_rows_f32(void **state)
{
    (void)state;
    uint64_t seed = 95;
    enum { MAX_N = 90, MAX_ROWS = 12, SPAN = 2 * MAX_ROWS * (2 * MAX_N + 3) };
    static float x[SPAN];
    for (int i = 0; i < SPAN; i++) {
        uint64_t r = xorshift64(&seed);
        x[i] = (float)ldexp((double)(int64_t)(r % 2000001) / 1e6 - 1.0, (int)(r >> 40) % 80 - 40);
        if (r % 23 == 0)
            x[i] = r % 2 ? 0x1p100f : -0x1p100f;
        if (r % 301 == 0)
            x[i] = r % 3 ? -INFINITY : NAN;
        if (r % 97 == 0)
            x[i] = -0.0f;
    }
    for (int trial = 0; trial < 600; trial++) {
        long n = (long)(xorshift64(&seed) % (MAX_N + 1));
        long rows = (long)(xorshift64(&seed) % (MAX_ROWS + 1));
        long sx = (long[]){1, 1, 1, 2, -1}[xorshift64(&seed) % 5];
        long rx = (2 * MAX_N + 1 + (long)(xorshift64(&seed) % 3)) * (xorshift64(&seed) % 4 ? 1 : -1);
        /* element [0] of run 0 where every element read stays inside x */
        long base = SPAN / 2;
        double want[MAX_ROWS], got[MAX_ROWS];
        for (long r = 0; r < rows; r++) {
            double lane[16] = {0.0}, q[8];
            for (long i = 0; i < n; i++)
                lane[i % 16] += (double)x[base + r * rx + i * sx];
            for (int i = 0; i < 8; i++)
                q[i] = lane[2 * i] + lane[2 * i + 1];
            for (int width = 8; width > 1; width /= 2)
                for (int i = 0; i < width / 2; i++)
                    q[i] = q[2 * i] + q[2 * i + 1];
            want[r] = q[0];
            got[r] = 12345.0;
        }
        bcg_mk_sum16_rows_f32(got, x + base, rx, sx, n, rows);
        if (!same_doubles(got, want, rows))
            fail_msg("sum16_rows_f32: %ld runs of %ld (stride %ld, run stride %ld) differ", rows,
                     n, sx, rx);
    }
}

/* The f16 and bf16 microkernels against the scalar conversions of
 * runtime/half.h (what the straight-line code and the evaluator use): every
 * bit pattern times 1 and plus -0 (exact, so only the conversions act;
 * NaNs made quiet), and products that round, subnormal and overflowing
 * ones included, over contiguous, broadcast and strided inputs and odd
 * lengths (the F16C loop's tail). */
void bcg_mk_mul_f16(uint16_t *, const uint16_t *, long, const uint16_t *, long, long);
void bcg_mk_add_f16(uint16_t *, const uint16_t *, long, const uint16_t *, long, long);
void bcg_mk_mul_bf16(uint16_t *, const uint16_t *, long, const uint16_t *, long, long);
void bcg_mk_sqrt_f16(uint16_t *, const uint16_t *, long, long);

static void test_half_conversions(void **state)
{
    (void)state;
    enum { N = 65536 };
    static uint16_t all[N], out[N], other[N];
    for (long i = 0; i < N; i++)
        all[i] = (uint16_t)i;
    const uint16_t one = 0x3c00, minus_zero = 0x8000, bf_one = 0x3f80;
    bcg_mk_mul_f16(out, all, 1, &one, 0, N);
    for (long i = 0; i < N; i++)
        assert_int_equal(out[i], bcg_f16_from_f32(bcg_f16_to_f32(all[i]) * 1.0f));
    bcg_mk_add_f16(out, &minus_zero, 0, all, 1, N - 3);
    for (long i = 0; i < N - 3; i++)
        assert_int_equal(out[i], bcg_f16_from_f32(-0.0f + bcg_f16_to_f32(all[i])));
    bcg_mk_mul_bf16(out, all, 1, &bf_one, 0, N);
    for (long i = 0; i < N; i++)
        assert_int_equal(out[i], bcg_bf16_from_f32(bcg_bf16_to_f32(all[i]) * 1.0f));
    for (long i = 0; i < N; i++) /* a spread of values to multiply by */
        other[i] = (uint16_t)((i * 40503u) & 0xffffu);
    for (long stride = 1; stride <= 3; stride += 2) {
        long n = N / stride - 5;
        bcg_mk_mul_f16(out, all, stride, other, 1, n);
        for (long i = 0; i < n; i++) {
            uint16_t want = bcg_f16_from_f32(bcg_f16_to_f32(all[i * stride]) *
                                             bcg_f16_to_f32(other[i]));
            /* two NaNs: which payload wins is the instruction's choice */
            if (out[i] != want && !((out[i] & 0x7fff) > 0x7c00 && (want & 0x7fff) > 0x7c00))
                fail_msg("f16 0x%04x * 0x%04x: 0x%04x, want 0x%04x", all[i * stride], other[i],
                         out[i], want);
        }
    }
    /* the streaming variant: the same values, whatever the alignment */
    void bcg_mk_add_f16_nt(uint16_t *, const uint16_t *, long, const uint16_t *, long, long);
    for (long shift = 0; shift < 3; shift++) {
        bcg_mk_add_f16_nt(out + shift, all, 1, other, 1, N - 8);
        for (long i = 0; i < N - 8; i++) {
            uint16_t want = bcg_f16_from_f32(bcg_f16_to_f32(all[i]) + bcg_f16_to_f32(other[i]));
            uint16_t got = out[i + shift];
            if (got != want && !((got & 0x7fff) > 0x7c00 && (want & 0x7fff) > 0x7c00))
                fail_msg("f16_nt 0x%04x + 0x%04x: 0x%04x, want 0x%04x", all[i], other[i], got,
                         want);
        }
    }
    bcg_mk_sqrt_f16(out, all, 1, N);
    for (long i = 0; i < N; i++)
        assert_int_equal(out[i], bcg_f16_from_f32(sqrtf(bcg_f16_to_f32(all[i]))));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbol_table),
        cmocka_unit_test(test_rows_gathers),
        cmocka_unit_test(test_half_conversions),
        cmocka_unit_test(test_rows_streamed_aligned),
        cmocka_unit_test(test_accadd_rows),
        cmocka_unit_test(test_accadd_op_rows),
        cmocka_unit_test(test_sum16_f64),
        cmocka_unit_test(test_sum16_f32),
        cmocka_unit_test(test_sum16_rows_f32),
        cmocka_unit_test(test_transcendental_accuracy),
        cmocka_unit_test(test_signed_zeros),
        cmocka_unit_test(test_exp_f64_accuracy),
        cmocka_unit_test(test_f64_clones_agree),
        cmocka_unit_test(test_log_f64_accuracy),
        cmocka_unit_test(test_plain_forms),
        cmocka_unit_test(test_every_row),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_periodic_rows),
        cmocka_unit_test(test_short_runs),
        cmocka_unit_test(test_short_runs_threads),
        cmocka_unit_test(test_transposed_long_runs),
        cmocka_unit_test(test_transposed_row_calls),
        cmocka_unit_test(test_narrow_tiles),
        cmocka_unit_test(test_narrow_tails),
        cmocka_unit_test(test_strided),
        cmocka_unit_test(test_inplace),
        cmocka_unit_test(test_rows_streamed),
        cmocka_unit_test(test_strided_streamed),
        cmocka_unit_test(test_inplace_streamed),
        cmocka_unit_test(test_stream_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
