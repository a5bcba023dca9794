/* test_ops.c - every row of gen/ops.h has an implementation on every path
 * (issue 10): the parser knows it, the typer types it, literals of it fold,
 * the reference evaluator computes it, the emitter writes C for it that gcc
 * accepts strictly, the JIT links and runs it with the evaluator's result,
 * the AOT form compiles in both --math modes, its microkernel family (if
 * any) exists, and docs/semantics.md describes it.  A row added without one
 * of these fails here, naming the row and the path. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aot.h"
#include "internal.h"
#include "kir.h"

#include <cmocka.h>

#define FAIL_ROW(op, path, ...)                                                           \
    fail_msg("ops.h row %s (%s): " path, op_table[op].word, op_table[op].symbol,          \
             ##__VA_ARGS__)

/* The expression that uses row OP over operands a, b (or literals 2, 3). */
static bool expression_of(int op, bool literals, char *out, size_t cap)
{
    const op_info *row = &op_table[op];
    const char *x = literals ? "2" : "a", *y = literals ? "3" : "b";
    if (op == OP_OPERAND || op == OP_LITERAL)
        return false;
    if (op == OP_CAST)
        snprintf(out, cap, "f64(%s)", x);
    else if (row->call && strcmp(row->call, row->symbol) == 0)
        snprintf(out, cap, "%s(%s%s%s%s%s)", row->call, x, row->arity > 1 ? ", " : "",
                 row->arity > 1 ? y : "", row->arity > 2 ? ", " : "", row->arity > 2 ? y : "");
    else if (row->arity == 1)
        snprintf(out, cap, "%s%s", row->symbol, x);
    else
        snprintf(out, cap, "%s %s %s", x, row->symbol, y);
    return true;
}

typedef struct front {
    arena *arena;
    compile *c;
    bcg_error err;
} front;

static bcg_status front_of(front *f, const char *expr, const bcg_operand *ops, int count)
{
    f->arena = arena_new();
    assert_non_null(f->arena);
    f->c = arena_alloc(f->arena, sizeof *f->c);
    assert_non_null(f->c);
    error_clear(&f->err);
    f->c->arena = f->arena;
    f->c->err = &f->err;
    f->c->function_name = "bcg_kernel";
    return compile_front(f->c, expr, ops, count, NULL);
}

/* i16 and i8 for the fixed-point products (mul_q15, mul_q7) */
static const bcg_dtype dtypes[] = {BCG_I32, BCG_F32, BCG_F64, BCG_I16, BCG_I8};
#define N 8

static void fill(void *data, bcg_dtype t, int salt)
{
    static const double values[N] = {0.5, 2.0, -1.0, 3.0, 0.0, 7.25, -0.0, 1e-3};
    for (int i = 0; i < N; i++) {
        double v = values[(i + salt) % N];
        if (t == BCG_I32)
            ((int32_t *)data)[i] = (int32_t)(v * 3) + salt;
        else if (t == BCG_I16) /* Q15 values near +-1 and small ones (wrapped: 7.25 is out of range) */
            ((int16_t *)data)[i] = (int16_t)(uint16_t)(uint32_t)(int32_t)(v * 16384 + salt);
        else if (t == BCG_I8)
            ((int8_t *)data)[i] = (int8_t)(uint8_t)(uint32_t)(int32_t)(v * 17 + salt);
        else if (t == BCG_F32)
            ((float *)data)[i] = (float)v;
        else
            ((double *)data)[i] = v;
    }
}

static bool same_bits(const void *x, const void *y, bcg_dtype t)
{
    if (t == BCG_F32) {
        float a, b;
        memcpy(&a, x, 4);
        memcpy(&b, y, 4);
        return (isnan(a) && isnan(b)) || memcmp(&a, &b, 4) == 0;
    }
    if (t == BCG_F64) {
        double a, b;
        memcpy(&a, x, 8);
        memcpy(&b, y, 8);
        return (isnan(a) && isnan(b)) || memcmp(&a, &b, 8) == 0;
    }
    return memcmp(x, y, bcg_dtype_size(t)) == 0;
}

/* Parsed as its own op, typed, folded from literals, evaluated, JIT-compiled
 * and linked, with the evaluator's result. */
static void test_every_row_parses_types_folds_evaluates_and_runs(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    int checked = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        char expr[64];
        if (!expression_of(op, false, expr, sizeof expr))
            continue;
        int typed = 0;
        for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
            int64_t shape[] = {N};
            bcg_operand ops[] = {{"a", dtypes[d], 1, shape, NULL}, {"b", dtypes[d], 1, shape, NULL}};
            front f;
            bcg_status s = front_of(&f, expr, ops, 2);
            if (s == BCG_ERR_TYPE) { /* ~ on floats, say */
                arena_free(f.arena);
                continue;
            }
            if (s)
                FAIL_ROW(op, "'%s' over %s does not compile: %s", expr,
                         bcg_dtype_name(dtypes[d]), f.err.message);
            if (f.c->root->op != (expr_op)op)
                FAIL_ROW(op, "'%s' parses to %s", expr, op_table[f.c->root->op].word);
            typed++;
            uint64_t a[N], b[N], expected[N], actual[N];
            fill(a, dtypes[d], 0);
            fill(b, dtypes[d], 3);
            const void *in[] = {a, b};
            assert_int_equal(eval_run(f.c, expected, in, &f.err), BCG_OK);
            bcg_kernel *k;
            bcg_error err;
            if (bcg_compile(ctx, expr, ops, 2, NULL, &k, &err) != BCG_OK)
                FAIL_ROW(op, "bcg_compile('%s'): %s", expr, err.message);
            if (bcg_kernel_note(k)[0]) /* e.g. a libm symbol the JIT does not hand over */
                FAIL_ROW(op, "the JIT did not compile '%s' over %s: %s", expr,
                         bcg_dtype_name(dtypes[d]), bcg_kernel_note(k));
            assert_int_equal(bcg_run(k, actual, in, &err), BCG_OK);
            bcg_dtype out = bcg_kernel_dtype(k);
            for (int i = 0; i < N; i++)
                if (!same_bits((char *)expected + i * bcg_dtype_size(out),
                               (char *)actual + i * bcg_dtype_size(out), out))
                    FAIL_ROW(op, "'%s' over %s: element %d of the JIT differs from the "
                             "reference evaluator", expr, bcg_dtype_name(dtypes[d]), i);
            arena_free(f.arena);
        }
        if (!typed)
            FAIL_ROW(op, "'%s' types over none of i32, f32, f64", expr);
        /* literals only: folded by the typer into one literal */
        expression_of(op, true, expr, sizeof expr);
        int64_t shape[] = {N};
        bcg_operand a = {"a", BCG_I32, 1, shape, NULL};
        front f;
        if (front_of(&f, expr, &a, 1) != BCG_OK)
            FAIL_ROW(op, "'%s' does not fold: %s", expr, f.err.message);
        if (f.c->root->op != OP_LITERAL)
            FAIL_ROW(op, "'%s' is not folded to a literal", expr);
        arena_free(f.arena);
        checked++;
    }
    print_message("# %d rows parsed, typed, folded, evaluated and run through the JIT\n",
                  checked);
    assert_int_equal(checked, OP_COUNT - 2);
    bcg_context_free(ctx);
}

/* A value of T from the f64 V, or one of T's NaNs: QNAN, SNAN (quiet bit
 * clear, payload 1 below it) or -SNAN. */
enum { VALUE_PLAIN, VALUE_QNAN, VALUE_SNAN, VALUE_NEG_SNAN };

static void put_value(void *p, bcg_dtype t, double v, int kind)
{
    static const uint64_t nan_bits[4][4] = { /* f32, f64, f16, bf16 */
        {0}, {0x7fc00000u, 0x7ff8000000000000ull, 0x7e00u, 0x7fc0u},
        {0x7fa00001u, 0x7ff4000000000001ull, 0x7d01u, 0x7fa1u},
        {0xffa00001u, 0xfff4000000000001ull, 0xfd01u, 0xffa1u}};
    int column = t == BCG_F32 ? 0 : t == BCG_F64 ? 1 : t == BCG_F16 ? 2 : 3;
    uint64_t bits = nan_bits[kind][column];
    if (kind == VALUE_PLAIN) {
        float f = (float)v;
        if (t == BCG_F32)
            memcpy(&bits, &f, 4);
        else if (t == BCG_F64)
            memcpy(&bits, &v, 8);
        else
            bits = t == BCG_F16 ? bcg_f16_from_f64(v) : bcg_bf16_from_f32(f);
    }
    memcpy(p, &bits, bcg_dtype_size(t));
}

/* Every float function of two arguments the C library computes (the MATH2
 * rows: fmin, fmax, hypot ...) sees a signaling NaN as a quiet one, on
 * every path: the evaluator's f32, f16 and bf16 values came quiet (widened
 * to double) and the JIT's raw, and glibc's fminf(0, sNaN) is NaN where
 * fminf(0, qNaN) is 0 (fmin(c, b), b a bf16 sNaN and c a bool 0: NaN
 * against 0, fuzz-diff's wide generator; hypot(inf, sNaN) likewise).  Each
 * row over f32, f64, f16 and bf16, either argument a signaling or quiet
 * NaN beside numbers, zeros and infinities (and a zero beside the other
 * zero: glibc's choice of sign, which gcc's inline fmin does not make), in
 * straight-line code (16
 * and 200 elements), the microkernels (3000) and loops (unroll none): the
 * JIT bit for bit the evaluator's (NaN for NaN), and fmin, fmax ignoring
 * the NaN, hypot giving inf beside it. */
static void test_two_argument_functions_see_quiet_nans(void **state)
{
    (void)state;
    static const bcg_dtype floats[] = {BCG_F32, BCG_F64, BCG_F16, BCG_BF16};
    static const double partners[] = {0.0, -0.0, 1.0, -2.5, INFINITY, -INFINITY, 3.0};
    enum { PARTNERS = 7, KINDS = 4 }; /* coprime: every pair within 28 elements */
    static const int64_t sizes[] = {16, 200, 3000, 3000};
    bcg_context *ctx = bcg_context_new();
    int cases = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        if (!op_table[op].math2_f64)
            continue;
        for (int swap = 0; swap < 2; swap++) {
            char expr[64];
            snprintf(expr, sizeof expr, "%s(%s)", op_table[op].call, swap ? "b, a" : "a, b");
            for (size_t d = 0; d < sizeof floats / sizeof floats[0]; d++)
                for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
                    bcg_dtype t = floats[d];
                    int64_t n = sizes[z], shape[] = {n};
                    size_t size = bcg_dtype_size(t);
                    char *a = malloc((size_t)n * size), *b = malloc((size_t)n * size);
                    char *want = malloc((size_t)n * size), *got = malloc((size_t)n * size);
                    assert_true(a && b && want && got);
                    for (int64_t i = 0; i < n; i++) { /* a number beside each kind of b */
                        put_value(a + i * size, t, partners[i % PARTNERS], VALUE_PLAIN);
                        double partner = partners[i % PARTNERS]; /* beside a zero the other one */
                        put_value(b + i * size, t, partner == 0 ? -copysign(0.0, partner) : 0.5,
                                  (int)(i % KINDS));
                    }
                    bcg_operand ops[] = {{"a", t, 1, shape, NULL}, {"b", t, 1, shape, NULL}};
                    front f;
                    assert_int_equal(front_of(&f, expr, ops, 2), BCG_OK);
                    const void *in[] = {a, b};
                    assert_int_equal(eval_run(f.c, want, in, &f.err), BCG_OK);
                    bcg_options o;
                    bcg_options_init(&o);
                    if (z == 3) { /* loops of libtcc's code, no microkernels */
                        o.unroll_limit = 0;
                        o.microkernel_run = 0;
                    }
                    bcg_kernel *k;
                    bcg_error err;
                    assert_int_equal(bcg_compile(ctx, expr, ops, 2, &o, &k, &err), BCG_OK);
                    memset(got, 0x5a, (size_t)n * size);
                    assert_int_equal(bcg_run(k, got, in, &err), BCG_OK);
                    for (int64_t i = 0; i < n; i++) {
                        float x, y; /* both as f32 (an f64 rounded: only NaN-ness is read) */
                        if (t == BCG_F32) {
                            memcpy(&x, want + i * size, 4);
                            memcpy(&y, got + i * size, 4);
                        } else if (t == BCG_F64) {
                            double wx, gy;
                            memcpy(&wx, want + i * size, 8);
                            memcpy(&gy, got + i * size, 8);
                            x = (float)wx;
                            y = (float)gy;
                        } else {
                            uint16_t hx, hy;
                            memcpy(&hx, want + i * size, 2);
                            memcpy(&hy, got + i * size, 2);
                            x = t == BCG_F16 ? bcg_f16_to_f32(hx) : bcg_bf16_to_f32(hx);
                            y = t == BCG_F16 ? bcg_f16_to_f32(hy) : bcg_bf16_to_f32(hy);
                        }
                        bool same = (isnan(x) && isnan(y)) ||
                                    memcmp(want + i * size, got + i * size, size) == 0;
                        if (!same)
                            fail_msg("%s over %s, %lld elements%s: element %lld (a %g, b %s): "
                                     "JIT %g, evaluator %g", expr, bcg_dtype_name(t),
                                     (long long)n, z == 3 ? " (loops)" : "", (long long)i,
                                     partners[i % PARTNERS],
                                     (const char *[]){"0.5 or a zero", "qNaN", "sNaN", "-sNaN"}[i % KINDS],
                                     (double)y, (double)x);
                        int kind = (int)(i % KINDS);
                        double partner = partners[i % PARTNERS];
                        bool ignores = op == OP_FMIN || op == OP_FMAX ||
                                       (op == OP_HYPOT && isinf(partner));
                        if (kind != VALUE_PLAIN && ignores && isnan(x))
                            fail_msg("%s over %s: element %lld (a %g, b a NaN) is NaN, not "
                                     "what a quiet NaN gives", expr, bcg_dtype_name(t),
                                     (long long)i, partner);
                    }
                    cases++;
                    bcg_kernel_free(k);
                    arena_free(f.arena);
                    free(a);
                    free(b);
                    free(want);
                    free(got);
                }
        }
    }
    print_message("# two-argument functions beside signaling NaNs: %d kernels\n", cases);
    assert_true(cases >= 7 * 2 * 4 * 4);
    bcg_context_free(ctx);
}

static int compile_with_gcc(const char *source, const char *header, const char *header_name)
{
    char dir[] = "/tmp/bcg_ops_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], command[640];
    snprintf(path, sizeof path, "%s/%s", dir, header_name);
    FILE *h = fopen(path, "w");
    assert_non_null(h);
    fputs(header, h);
    fclose(h);
    snprintf(path, sizeof path, "%s/k.c", dir);
    FILE *c = fopen(path, "w");
    assert_non_null(c);
    fputs(source, c);
    fclose(c);
    snprintf(command, sizeof command,
             "gcc -std=c99 -Wall -Wextra -Werror -pedantic -c %s -o %s/k.o 2>&1; s=$?; "
             "rm -rf %s; exit $s", path, dir, dir);
    return system(command);
}

/* The plain C (bcg_emit) and the AOT form in both math modes, every row
 * in one pair, compiled by gcc in strict C99. */
static void test_every_row_emits_strict_c_in_every_form(void **state)
{
    (void)state;
    static aot_kernel kernels[OP_COUNT * 2];
    static char names[OP_COUNT * 2][16], exprs[OP_COUNT * 2][64];
    int64_t shape[] = {N};
    static bcg_operand ops_f32[] = {{"a", BCG_F32, 1, NULL, NULL}, {"b", BCG_F32, 1, NULL, NULL}};
    static bcg_operand ops_i32[] = {{"a", BCG_I32, 1, NULL, NULL}, {"b", BCG_I32, 1, NULL, NULL}};
    static bcg_operand ops_i16[] = {{"a", BCG_I16, 1, NULL, NULL}, {"b", BCG_I16, 1, NULL, NULL}};
    static bcg_operand ops_i8[] = {{"a", BCG_I8, 1, NULL, NULL}, {"b", BCG_I8, 1, NULL, NULL}};
    for (int i = 0; i < 2; i++)
        ops_f32[i].shape = ops_i32[i].shape = ops_i16[i].shape = ops_i8[i].shape = shape;
    for (int math_double = 0; math_double < 2; math_double++) {
        int count = 0;
        for (int op = 0; op < OP_COUNT; op++) {
            if (!expression_of(op, false, exprs[count], sizeof exprs[count]))
                continue;
            /* f32 for the functions, i32 for the integer operators */
            front f;
            bcg_operand *ops = ops_f32;
            bcg_status s = front_of(&f, exprs[count], ops, 2);
            arena_free(f.arena);
            /* then i32 for the integer operators, i16 and i8 for mul_q15 and mul_q7 */
            bcg_operand *const others[] = {ops_i32, ops_i16, ops_i8};
            for (size_t k = 0; k < 3 && s == BCG_ERR_TYPE; k++) {
                ops = others[k];
                s = front_of(&f, exprs[count], ops, 2);
                arena_free(f.arena);
            }
            assert_int_equal(s, BCG_OK);
            char *plain;
            bcg_error err;
            if (bcg_emit(exprs[count], ops, 2, NULL, "k", &plain, &err) != BCG_OK)
                FAIL_ROW(op, "bcg_emit: %s", err.message);
            bcg_free(plain);
            snprintf(names[count], sizeof names[count], "k%d", op);
            kernels[count] = (aot_kernel){names[count], exprs[count], ops, 2, {0}, math_double,
                                          NULL, NULL};
            bcg_options_init(&kernels[count].options);
            count++;
        }
        aot_request request = {count, kernels, false, 64, "test_ops", "k.c", "k.h"};
        char *source, *header;
        bcg_error err;
        if (aot_generate(&request, &source, &header, &err) != BCG_OK)
            fail_msg("aot_generate (math %s): %s", math_double ? "double" : "float",
                     err.message);
        if (compile_with_gcc(source, header, "k.h") != 0)
            fail_msg("gcc rejected the AOT pair of every row (math %s)",
                     math_double ? "double" : "float");
        mem_free(source);
        mem_free(header);
    }
}

/* A tile family names microkernels that exist; a libm name is linkable. */
static void test_every_family_and_libm_function_exists(void **state)
{
    (void)state;
    for (int op = 0; op < OP_COUNT; op++) {
        const op_info *row = &op_table[op];
        if (row->tile) {
            bool found = false;
            for (int t = 0; t < BCG_DTYPE_COUNT; t++) {
                char name[64];
                snprintf(name, sizeof name, "bcg_mk_%s_%s", row->tile,
                         bcg_dtype_name((bcg_dtype)t));
                found |= microkernel_exists(name);
            }
            if (!found)
                FAIL_ROW(op, "no microkernel bcg_mk_%s_<dtype> exists", row->tile);
        }
        if (row->math && row->math2_f64) {
            if (!row->math2_f32 || row->math_f64 || row->rule != RULE_FLOAT || row->arity != 2)
                FAIL_ROW(op, "a MATH2 row needs both functions, RULE_FLOAT and two arguments");
            if (row->math2_f64(0.5, 0.25) != row->math2_f64(0.5, 0.25))
                FAIL_ROW(op, "libm %s gives NaN at (0.5, 0.25)", row->math);
        } else if (row->math) {
            if (!row->math_f64 || !row->math_f32 || row->rule != RULE_FLOAT || row->arity != 1)
                FAIL_ROW(op, "a libm row needs both functions, RULE_FLOAT and one argument");
            /* callable, and a number at 0.5 (acosh's domain starts at 1) */
            double at = op == OP_ARCCOSH ? 1.5 : 0.5;
            if (row->math_f64(at) != row->math_f64(at))
                FAIL_ROW(op, "libm %s gives NaN at %g", row->math, at);
        }
        if (row->rule == RULE_FLOAT && !row->math && !row->own)
            FAIL_ROW(op, "RULE_FLOAT without a libm function or OWN: eval.c cannot compute it");
        if (row->own && (row->math || row->rule != RULE_FLOAT))
            FAIL_ROW(op, "an OWN row is a RULE_FLOAT row without a libm function");
    }
}

/* Every row that types on a dtype reaches the microkernels there (issue
 * 11): one operation without a microkernel sends its whole tree to tcc's
 * per-element code.  tile_coverage (gen/coverage.c, `bcgen functions
 * --tiles`) compiles each row on operands of each dtype, with no
 * exception (clip tiles as gen/fold.c writes it: minimum(maximum())). */
static void test_every_row_and_dtype_has_a_microkernel(void **state)
{
    (void)state;
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    int tiled = 0, untyped = 0, missing = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        if (op == OP_OPERAND || op == OP_LITERAL || op == OP_CAST)
            continue;
        for (int t = 0; t < BCG_DTYPE_COUNT; t++) {
            char expr[64];
            tile_cover cover = tile_coverage(ctx, (expr_op)op, (bcg_dtype)t, expr, sizeof expr);
            if (cover == COVER_TILED) {
                tiled++;
            } else if (cover == COVER_UNTYPED) {
                untyped++;
            } else {
                print_error("%s on %s: %s\n", expr, bcg_dtype_name((bcg_dtype)t),
                            cover == COVER_SCALAR ? "per-element code, no microkernel"
                                                  : "did not compile");
                missing++;
            }
        }
    }
    /* and the conversions between them: a cast kernel for every pair */
    for (int from = 0; from < BCG_DTYPE_COUNT; from++)
        for (int to = 0; to < BCG_DTYPE_COUNT; to++) {
            char name[48];
            kir_cast_name((bcg_dtype)from, (bcg_dtype)to, name, sizeof name);
            if (!microkernel_exists(name)) {
                print_error("no cast kernel %s\n", name);
                missing++;
            }
        }
    print_message("# %d row and dtype pairs through microkernels, %d not typed\n", tiled, untyped);
    assert_int_equal(missing, 0);
    /* the table is really exercised: most pairs type */
    assert_true(tiled > 2 * untyped);
    bcg_context_free(ctx);
}

/* docs/semantics.md names every function and operator. */
static void test_every_row_is_documented(void **state)
{
    (void)state;
    FILE *f = fopen("docs/semantics.md", "r");
    if (!f)
        f = fopen("../docs/semantics.md", "r");
    assert_non_null(f);
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        const char *name = op_table[op].call ? op_table[op].call : op_table[op].symbol;
        if (op == OP_OPERAND || op == OP_LITERAL || op == OP_CAST)
            continue;
        bool found = false;
        for (const char *p = strstr(text, name); p && !found; p = strstr(p + 1, name)) {
            /* a whole word: not "log" inside "log1p" */
            char before = p > text ? p[-1] : ' ', after = p[strlen(name)];
            bool word = op_table[op].call != NULL;
            found = !word || (!(before == '_' || (before >= 'a' && before <= 'z') ||
                                (before >= '0' && before <= '9')) &&
                              !(after == '_' || (after >= 'a' && after <= 'z') ||
                                (after >= '0' && after <= '9')));
        }
        if (!found)
            FAIL_ROW(op, "docs/semantics.md does not mention %s", name);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* first: a row without an implementation is named here before the
         * evaluator's assertion stops the others */
        cmocka_unit_test(test_every_family_and_libm_function_exists),
        cmocka_unit_test(test_every_row_parses_types_folds_evaluates_and_runs),
        cmocka_unit_test(test_every_row_emits_strict_c_in_every_form),
        cmocka_unit_test(test_every_row_is_documented),
        cmocka_unit_test(test_every_row_and_dtype_has_a_microkernel),
        cmocka_unit_test(test_two_argument_functions_see_quiet_nans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
