/* test_eval.c - unit tests of the reference evaluator (gen/eval.c).
 *
 * Trees and plans are built by hand with explicit dtypes, so these tests do
 * not depend on the parser, the typer or the planner.  Expected values come
 * from NumPy 1.24 (computed with /usr/bin/python3 while writing the tests)
 * or, where NumPy's answer is undefined or raises, from the bcgen choices
 * in docs/semantics.md.  Floats are compared bit for bit (so the sign of
 * zero counts) except the transcendental functions, which get 4 ulp.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* before cmocka.h, whose fail() macro would clash with util.c's fail() */
#include "internal.h"

#include <cmocka.h>

/* The operation type rule of docs/semantics.md for typed trees: comparisons
 * compute in the promotion of their arguments, a cast in its argument's
 * type, the logical operators in bool, everything else in its own result
 * type (`/` on integers already has f64 as its result type).  Weak, so the
 * real one in type.c wins when it is linked in. */
__attribute__((weak)) bcg_dtype expr_operation_type(const expr_node *n)
{
    switch (n->op) {
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
        return dtype_promote(n->args[0]->dtype, n->args[1]->dtype);
    case OP_CAST:
        return n->args[0]->dtype;
    case OP_NOT: case OP_AND: case OP_OR:
        return BCG_BOOL;
    default:
        return n->dtype;
    }
}

/* ---- harness ----------------------------------------------------------------- */

typedef struct harness {
    arena *arena;
    compile c;
    plan plan;
    compile_operand operands[BCG_MAX_OPERANDS];
    bcg_error err;
} harness;

static void harness_init(harness *h, int input_count, const bcg_dtype *dtypes)
{
    memset(h, 0, sizeof *h);
    h->arena = arena_new();
    assert_non_null(h->arena);
    for (int k = 0; k < input_count; k++)
        h->operands[k].dtype = dtypes[k];
    h->c.arena = h->arena;
    h->c.err = &h->err;
    h->c.operand_count = input_count;
    h->c.operands = h->operands;
    h->c.plan = &h->plan;
    h->plan.operand_count = input_count + 1;
    h->plan.stride = arena_alloc(h->arena, sizeof *h->plan.stride * (size_t)(input_count + 1));
    assert_non_null(h->plan.stride);
    error_clear(&h->err);
}

static void harness_free(harness *h) { arena_free(h->arena); }

static expr_node *new_node(harness *h, expr_op op, bcg_dtype dtype)
{
    expr_node *n = arena_alloc(h->arena, sizeof *n);
    assert_non_null(n);
    n->op = op;
    n->dtype = dtype;
    n->column = 1;
    return n;
}

static expr_node *operand(harness *h, int k)
{
    expr_node *n = new_node(h, OP_OPERAND, h->operands[k].dtype);
    n->operand = k;
    return n;
}

static expr_node *literal_int(harness *h, bcg_dtype dtype, int64_t v)
{
    expr_node *n = new_node(h, OP_LITERAL, dtype);
    n->value.i = v;
    return n;
}

static expr_node *literal_uint(harness *h, bcg_dtype dtype, uint64_t v)
{
    expr_node *n = new_node(h, OP_LITERAL, dtype);
    n->value.u = v;
    return n;
}

static expr_node *literal_float(harness *h, bcg_dtype dtype, double v)
{
    expr_node *n = new_node(h, OP_LITERAL, dtype);
    n->literal_is_float = true;
    n->value.f = v;
    return n;
}

static expr_node *unary(harness *h, expr_op op, bcg_dtype dtype, expr_node *a)
{
    expr_node *n = new_node(h, op, dtype);
    n->arg_count = 1;
    n->args[0] = a;
    if (op == OP_CAST)
        n->cast_to = dtype;
    return n;
}

static expr_node *binary(harness *h, expr_op op, bcg_dtype dtype, expr_node *a, expr_node *b)
{
    expr_node *n = new_node(h, op, dtype);
    n->arg_count = 2;
    n->args[0] = a;
    n->args[1] = b;
    return n;
}

static expr_node *ternary(harness *h, expr_op op, bcg_dtype dtype, expr_node *a,
                          expr_node *b, expr_node *c)
{
    expr_node *n = new_node(h, op, dtype);
    n->arg_count = 3;
    n->args[0] = a;
    n->args[1] = b;
    n->args[2] = c;
    return n;
}

/* One loop of N elements, every operand contiguous. */
static void plan_linear(harness *h, int64_t n)
{
    h->plan.loop_count = 1;
    h->plan.extent[0] = n;
    h->plan.elements = n;
    h->plan.empty = n == 0;
    for (int k = 0; k < h->plan.operand_count; k++)
        h->plan.stride[k][0] = 1;
}

/* LOOP_COUNT loops; STRIDES holds operand_count rows of LOOP_COUNT strides. */
static void plan_set(harness *h, int loop_count, const int64_t *extent, const int64_t *strides)
{
    h->plan.loop_count = loop_count;
    h->plan.elements = 1;
    for (int l = 0; l < loop_count; l++) {
        h->plan.extent[l] = extent[l];
        h->plan.elements *= extent[l];
    }
    h->plan.empty = h->plan.elements == 0;
    for (int k = 0; k < h->plan.operand_count; k++)
        for (int l = 0; l < loop_count; l++)
            h->plan.stride[k][l] = strides[k * loop_count + l];
}

static void run_ok(harness *h, void *out, const void *const *in)
{
    bcg_status status = eval_run(&h->c, out, in, &h->err);
    if (status != BCG_OK)
        fail_msg("eval_run failed (%d): %s", (int)status, h->err.message);
}

/* ---- comparing results -------------------------------------------------------- */

static double float_at(bcg_dtype t, const void *p, int k)
{
    return t == BCG_F32 ? (double)((const float *)p)[k] : ((const double *)p)[k];
}

/* Integers and bools must match exactly; floats bit for bit, any NaN
 * matching any NaN. */
static void expect_values(bcg_dtype t, const void *got, const void *want, int n)
{
    size_t size = bcg_dtype_size(t);
    for (int k = 0; k < n; k++) {
        const unsigned char *g = (const unsigned char *)got + (size_t)k * size;
        const unsigned char *w = (const unsigned char *)want + (size_t)k * size;
        if (dtype_kind_of(t) == KIND_FLOAT) {
            double gv = float_at(t, got, k), wv = float_at(t, want, k);
            if (isnan(gv) && isnan(wv))
                continue;
            if (memcmp(g, w, size) != 0)
                fail_msg("%s element %d: got %.17g, want %.17g", bcg_dtype_name(t), k, gv, wv);
        } else if (memcmp(g, w, size) != 0) {
            uint64_t gu = 0, wu = 0;
            memcpy(&gu, g, size); /* little-endian: the low bytes */
            memcpy(&wu, w, size);
            fail_msg("%s element %d: got bits 0x%llx, want 0x%llx", bcg_dtype_name(t), k,
                     (unsigned long long)gu, (unsigned long long)wu);
        }
    }
}

/* The distance in units in the last place between two finite floats of
 * type T of the same sign class, via their ordered bit patterns. */
static int64_t ordered_bits(bcg_dtype t, double v)
{
    if (t == BCG_F32) {
        float f = (float)v;
        int32_t b;
        memcpy(&b, &f, sizeof b);
        return b < 0 ? (int64_t)INT32_MIN - b : b;
    }
    int64_t b;
    memcpy(&b, &v, sizeof b);
    return b < 0 ? INT64_MIN - b : b;
}

static void expect_close(bcg_dtype t, const void *got, const void *want, int n, int ulps)
{
    for (int k = 0; k < n; k++) {
        double gv = float_at(t, got, k), wv = float_at(t, want, k);
        if (isnan(gv) && isnan(wv))
            continue;
        if (isnan(gv) || isnan(wv) || isinf(gv) || isinf(wv)) {
            if (gv != wv)
                fail_msg("%s element %d: got %.17g, want %.17g", bcg_dtype_name(t), k, gv, wv);
            continue;
        }
        int64_t distance = ordered_bits(t, gv) - ordered_bits(t, wv);
        if (distance < -ulps || distance > ulps)
            fail_msg("%s element %d: got %.17g, want %.17g (%lld ulp)", bcg_dtype_name(t), k,
                     gv, wv, (long long)distance);
    }
}

/* Evaluates `a OP b` elementwise over N elements and compares with WANT. */
static void check_binary(expr_op op, bcg_dtype ta, const void *a, bcg_dtype tb, const void *b,
                         bcg_dtype result, const void *want, int n)
{
    harness h;
    bcg_dtype dtypes[2] = {ta, tb};
    harness_init(&h, 2, dtypes);
    h.c.root = binary(&h, op, result, operand(&h, 0), operand(&h, 1));
    plan_linear(&h, n);
    unsigned char out[64 * 8];
    assert_true((size_t)n * bcg_dtype_size(result) <= sizeof out);
    const void *in[2] = {a, b};
    run_ok(&h, out, in);
    expect_values(result, out, want, n);
    harness_free(&h);
}

/* Evaluates OP(a) (OP_CAST included) and compares with WANT within ULPS
 * (-1: exactly). */
static void check_unary(expr_op op, bcg_dtype ta, const void *a, bcg_dtype result,
                        const void *want, int n, int ulps)
{
    harness h;
    harness_init(&h, 1, &ta);
    h.c.root = unary(&h, op, result, operand(&h, 0));
    plan_linear(&h, n);
    unsigned char out[64 * 8];
    assert_true((size_t)n * bcg_dtype_size(result) <= sizeof out);
    const void *in[1] = {a};
    run_ok(&h, out, in);
    if (ulps < 0)
        expect_values(result, out, want, n);
    else
        expect_close(result, out, want, n, ulps);
    harness_free(&h);
}

#define COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))

/* ---- arithmetic ----------------------------------------------------------------- */

static void test_i8_arithmetic_wraps(void **state)
{
    (void)state;
    static const int8_t a[] = {127, -128, 100, -1, 0, 50};
    static const int8_t b[] = {1, -1, 100, -1, -128, -3};
    static const int8_t add[] = {-128, 127, -56, -2, -128, 47};
    static const int8_t sub[] = {126, -127, 0, 0, -128, 53};
    static const int8_t mul[] = {127, -128, 16, 1, 0, 106};
    check_binary(OP_ADD, BCG_I8, a, BCG_I8, b, BCG_I8, add, COUNT(a));
    check_binary(OP_SUB, BCG_I8, a, BCG_I8, b, BCG_I8, sub, COUNT(a));
    check_binary(OP_MUL, BCG_I8, a, BCG_I8, b, BCG_I8, mul, COUNT(a));
}

static void test_u8_arithmetic_wraps(void **state)
{
    (void)state;
    static const uint8_t a[] = {255, 0, 200, 7};
    static const uint8_t b[] = {1, 1, 200, 3};
    static const uint8_t add[] = {0, 1, 144, 10};
    static const uint8_t sub[] = {254, 255, 0, 4};
    static const uint8_t mul[] = {255, 0, 64, 21};
    check_binary(OP_ADD, BCG_U8, a, BCG_U8, b, BCG_U8, add, COUNT(a));
    check_binary(OP_SUB, BCG_U8, a, BCG_U8, b, BCG_U8, sub, COUNT(a));
    check_binary(OP_MUL, BCG_U8, a, BCG_U8, b, BCG_U8, mul, COUNT(a));
}

static void test_i64_arithmetic_wraps(void **state)
{
    (void)state;
    static const int64_t a[] = {INT64_MAX, INT64_MIN, INT64_MIN, 3037000500, 5};
    static const int64_t b[] = {1, -1, 1, 3037000500, -7};
    static const int64_t add[] = {INT64_MIN, INT64_MAX, -9223372036854775807, 6074001000, -2};
    static const int64_t sub[] = {9223372036854775806, -9223372036854775807, INT64_MAX, 0, 12};
    static const int64_t mul[] = {INT64_MAX, INT64_MIN, INT64_MIN, -9223372036709301616, -35};
    check_binary(OP_ADD, BCG_I64, a, BCG_I64, b, BCG_I64, add, COUNT(a));
    check_binary(OP_SUB, BCG_I64, a, BCG_I64, b, BCG_I64, sub, COUNT(a));
    check_binary(OP_MUL, BCG_I64, a, BCG_I64, b, BCG_I64, mul, COUNT(a));
}

static void test_u64_and_i32_wrap(void **state)
{
    (void)state;
    static const uint64_t a[] = {0, UINT64_MAX, 1};
    static const uint64_t b[] = {1, UINT64_MAX, UINT64_MAX};
    static const uint64_t sub[] = {UINT64_MAX, 0, 2};
    static const uint64_t mul[] = {0, 1, UINT64_MAX};
    check_binary(OP_SUB, BCG_U64, a, BCG_U64, b, BCG_U64, sub, COUNT(a));
    check_binary(OP_MUL, BCG_U64, a, BCG_U64, b, BCG_U64, mul, COUNT(a));
    static const int32_t c[] = {INT32_MAX, INT32_MIN, 65536};
    static const int32_t d[] = {1, 1, 65536};
    static const int32_t add[] = {INT32_MIN, -2147483647, 131072};
    static const int32_t product[] = {INT32_MAX, INT32_MIN, 0};
    check_binary(OP_ADD, BCG_I32, c, BCG_I32, d, BCG_I32, add, COUNT(c));
    check_binary(OP_MUL, BCG_I32, c, BCG_I32, d, BCG_I32, product, COUNT(c));
}

static void test_f32_arithmetic_rounds_as_float(void **state)
{
    (void)state;
    static const float a[] = {16777216.0f, 0.1f, 1.0f / 3.0f, 1e38f};
    static const float b[] = {1.0f, 3.0f, 3.0f, 10.0f};
    static const float add[] = {16777216.0, 3.0999999046325684, 3.3333332538604736, 9.999999680285692e+37};
    static const float sub[] = {16777215.0, -2.9000000953674316, -2.6666667461395264, 9.999999680285692e+37};
    static const float mul[] = {16777216.0, 0.30000001192092896, 1.0, INFINITY};
    static const float div[] = {16777216.0, 0.03333333507180214, 0.1111111119389534, 9.999999933815813e+36};
    check_binary(OP_ADD, BCG_F32, a, BCG_F32, b, BCG_F32, add, COUNT(a));
    check_binary(OP_SUB, BCG_F32, a, BCG_F32, b, BCG_F32, sub, COUNT(a));
    check_binary(OP_MUL, BCG_F32, a, BCG_F32, b, BCG_F32, mul, COUNT(a));
    check_binary(OP_DIV, BCG_F32, a, BCG_F32, b, BCG_F32, div, COUNT(a));
}

static void test_f64_arithmetic(void **state)
{
    (void)state;
    static const double a[] = {0.1, 1e308, -0.0, INFINITY};
    static const double b[] = {0.2, 1e308, 0.0, INFINITY};
    static const double add[] = {0.30000000000000004, INFINITY, 0.0, INFINITY};
    static const double sub[] = {-0.1, 0.0, -0.0, NAN};
    static const double div[] = {0.5, 1.0, NAN, NAN};
    check_binary(OP_ADD, BCG_F64, a, BCG_F64, b, BCG_F64, add, COUNT(a));
    check_binary(OP_SUB, BCG_F64, a, BCG_F64, b, BCG_F64, sub, COUNT(a));
    check_binary(OP_DIV, BCG_F64, a, BCG_F64, b, BCG_F64, div, COUNT(a));
}

static void test_true_division_of_integers_is_f64(void **state)
{
    (void)state;
    static const int32_t a[] = {1, -7, 0, 5, -5};
    static const int32_t b[] = {3, 2, 0, 0, 0};
    static const double want[] = {0.3333333333333333, -3.5, NAN, INFINITY, -INFINITY};
    check_binary(OP_DIV, BCG_I32, a, BCG_I32, b, BCG_F64, want, COUNT(a));
    /* i8 / i8 is f64 too, as in NumPy */
    static const int8_t c[] = {1, -128};
    static const int8_t d[] = {3, 3};
    static const double want8[] = {0.3333333333333333, -42.666666666666664};
    check_binary(OP_DIV, BCG_I8, c, BCG_I8, d, BCG_F64, want8, COUNT(c));
}

static void test_mixed_types_compute_in_operation_type(void **state)
{
    (void)state;
    /* i32 + f32 computes in f64: 16777217 survives (in f32 it would not) */
    static const int32_t a[] = {16777217, -3};
    static const float b[] = {0.0f, 0.5f};
    static const double want[] = {16777217.0, -2.5};
    check_binary(OP_ADD, BCG_I32, a, BCG_F32, b, BCG_F64, want, COUNT(a));
    /* i8 * u8 computes in i16 */
    static const int8_t c[] = {-128, 100};
    static const uint8_t d[] = {255, 200};
    static const int16_t product[] = {-32640, 20000};
    check_binary(OP_MUL, BCG_I8, c, BCG_U8, d, BCG_I16, product, COUNT(c));
}

/* ---- floor division and remainder ---------------------------------------------- */

static void test_floordiv_mod_i32(void **state)
{
    (void)state;
    static const int32_t a[] = {7, -7, 7, -7, 0, 5, INT32_MIN, INT32_MIN, 3, -3};
    static const int32_t b[] = {2, 2, -2, -2, 3, 0, -1, 1, 0, 0};
    static const int32_t quotient[] = {3, -4, -4, 3, 0, 0, INT32_MIN, INT32_MIN, 0, 0};
    static const int32_t remainder[] = {1, 1, -1, -1, 0, 0, 0, 0, 0, 0};
    check_binary(OP_FLOORDIV, BCG_I32, a, BCG_I32, b, BCG_I32, quotient, COUNT(a));
    check_binary(OP_MOD, BCG_I32, a, BCG_I32, b, BCG_I32, remainder, COUNT(a));
}

static void test_floordiv_mod_i8_and_i64_minimum(void **state)
{
    (void)state;
    static const int8_t a[] = {-128, -128, -7, 100};
    static const int8_t b[] = {-1, 0, 3, -3};
    static const int8_t quotient[] = {-128, 0, -3, -34};
    static const int8_t remainder[] = {0, 0, 2, -2};
    check_binary(OP_FLOORDIV, BCG_I8, a, BCG_I8, b, BCG_I8, quotient, COUNT(a));
    check_binary(OP_MOD, BCG_I8, a, BCG_I8, b, BCG_I8, remainder, COUNT(a));
    static const int64_t c[] = {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MAX};
    static const int64_t d[] = {-1, 0, 2, -2};
    static const int64_t quotient64[] = {INT64_MIN, 0, INT64_MIN / 2, -4611686018427387904};
    static const int64_t remainder64[] = {0, 0, 0, -1};
    check_binary(OP_FLOORDIV, BCG_I64, c, BCG_I64, d, BCG_I64, quotient64, COUNT(c));
    check_binary(OP_MOD, BCG_I64, c, BCG_I64, d, BCG_I64, remainder64, COUNT(c));
}

static void test_floordiv_mod_u32(void **state)
{
    (void)state;
    static const uint32_t a[] = {7, 4294967295u, 0, 9};
    static const uint32_t b[] = {2, 0, 5, 4294967295u};
    static const uint32_t quotient[] = {3, 0, 0, 0};
    static const uint32_t remainder[] = {1, 0, 0, 9};
    check_binary(OP_FLOORDIV, BCG_U32, a, BCG_U32, b, BCG_U32, quotient, COUNT(a));
    check_binary(OP_MOD, BCG_U32, a, BCG_U32, b, BCG_U32, remainder, COUNT(a));
}

static void test_floordiv_mod_f64(void **state)
{
    (void)state;
    static const double a[] = {7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 5.0, INFINITY, 1.0, NAN, -1.0, 0.0, 6.0};
    static const double b[] = {2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0, 2.0, INFINITY, 1.0, INFINITY, -3.0, 0.1};
    static const double quotient[] = {3.0, -4.0, -4.0, 3.0, 0.0, -0.0, INFINITY, NAN, 0.0, NAN, -1.0, -0.0, 59.0};
    static const double remainder[] = {1.5, 0.5, -0.5, -1.5, 0.0, 0.0, NAN, NAN, 1.0, NAN, INFINITY, -0.0, 0.09999999999999967};
    check_binary(OP_FLOORDIV, BCG_F64, a, BCG_F64, b, BCG_F64, quotient, COUNT(a));
    check_binary(OP_MOD, BCG_F64, a, BCG_F64, b, BCG_F64, remainder, COUNT(a));
}

static void test_floordiv_mod_f32(void **state)
{
    (void)state;
    static const float a[] = {7.5f, -7.5f, 7.5f, -7.5f, 0.0f, -0.0f, 5.0f, INFINITY, 1.0f, NAN, -1.0f, 0.0f, 6.0f, -5.0f};
    static const float b[] = {2.0f, 2.0f, -2.0f, -2.0f, 3.0f, 3.0f, 0.0f, 2.0f, INFINITY, 1.0f, INFINITY, -3.0f, 0.1f, 0.0f};
    static const float quotient[] = {3.0, -4.0, -4.0, 3.0, 0.0, -0.0, INFINITY, NAN, 0.0, NAN, -1.0, -0.0, 59.0, -INFINITY};
    static const float remainder[] = {1.5, 0.5, -0.5, -1.5, 0.0, 0.0, NAN, NAN, 1.0, NAN, INFINITY, -0.0, 0.09999991208314896, NAN};
    check_binary(OP_FLOORDIV, BCG_F32, a, BCG_F32, b, BCG_F32, quotient, COUNT(a));
    check_binary(OP_MOD, BCG_F32, a, BCG_F32, b, BCG_F32, remainder, COUNT(a));
}

/* ---- powers --------------------------------------------------------------------- */

static void test_integer_pow_wraps(void **state)
{
    (void)state;
    static const int32_t a[] = {2, 3, -2, 7, 2, 3, 0, 5, -3};
    static const int32_t b[] = {10, 3, 3, 0, 31, 40, 5, 1, 21};
    static const int32_t want[] = {1024, 27, -8, 1, INT32_MIN, 689956897, 0, 5, -1870418611};
    check_binary(OP_POW, BCG_I32, a, BCG_I32, b, BCG_I32, want, COUNT(a));
    static const uint8_t c[] = {2, 3, 0, 255};
    static const uint8_t d[] = {9, 5, 0, 2};
    static const uint8_t want8[] = {0, 243, 1, 1};
    check_binary(OP_POW, BCG_U8, c, BCG_U8, d, BCG_U8, want8, COUNT(c));
}

static void test_integer_pow_negative_exponent(void **state)
{
    (void)state;
    /* bcgen: 1 for x == 1, +-1 by parity for x == -1, 0 otherwise */
    static const int64_t a[] = {1, -1, -1, 0, 2, -2, 1, INT64_MIN};
    static const int64_t b[] = {-5, -3, -4, -1, -1, -1, INT64_MIN, -2};
    static const int64_t want[] = {1, -1, 1, 0, 0, 0, 1, 0};
    check_binary(OP_POW, BCG_I64, a, BCG_I64, b, BCG_I64, want, COUNT(a));
    static const int8_t c[] = {-1, -1, 5};
    static const int8_t d[] = {-128, -127, -128};
    static const int8_t want8[] = {1, -1, 0};
    check_binary(OP_POW, BCG_I8, c, BCG_I8, d, BCG_I8, want8, COUNT(c));
}

static void test_float_pow(void **state)
{
    (void)state;
    /* f32 goes through double pow and rounds once: the last case is
     * 2676845.5 with powf (and NumPy), one ulp away */
    static const float a[] = {2.0f, 1.1f, -8.0f, 0.5f, 10.0f, 5.514429092407227f};
    static const float b[] = {0.5f, 30.0f, 1.0f / 3.0f, -3.0f, 38.0f, 8.668399810791016f};
    static const float want[] = {1.4142135381698608, 17.449413299560547, NAN, 8.0, 9.999999680285692e+37, 2676845.25};
    check_binary(OP_POW, BCG_F32, a, BCG_F32, b, BCG_F32, want, COUNT(a));
    static const double c[] = {2, -8, 0, -1.5};
    static const double d[] = {0.5, 1.0 / 3.0, -1, 3};
    static const double want64[] = {1.4142135623730951, NAN, INFINITY, -3.375};
    check_binary(OP_POW, BCG_F64, c, BCG_F64, d, BCG_F64, want64, COUNT(c));
}

/* ---- bitwise and shifts ------------------------------------------------------------ */

static void test_shifts_i8(void **state)
{
    (void)state;
    static const int8_t a[] = {1, 1, 1, 1, -8, -8, -8, -8, 5, -1, 3};
    static const int8_t b[] = {7, 8, -1, 100, 1, 8, -1, 2, 0, 7, 6};
    static const int8_t left[] = {-128, 0, 0, 0, -16, 0, 0, -32, 5, -128, -64};
    static const int8_t right[] = {0, 0, 0, 0, -4, -1, -1, -2, 5, -1, 0};
    check_binary(OP_SHL, BCG_I8, a, BCG_I8, b, BCG_I8, left, COUNT(a));
    check_binary(OP_SHR, BCG_I8, a, BCG_I8, b, BCG_I8, right, COUNT(a));
}

static void test_shifts_u16_and_i64(void **state)
{
    (void)state;
    static const uint16_t a[] = {1, 1, 65535, 65535, 40000};
    static const uint16_t b[] = {15, 16, 16, 3, 200};
    static const uint16_t left[] = {32768, 0, 0, 65528, 0};
    static const uint16_t right[] = {0, 0, 0, 8191, 0};
    check_binary(OP_SHL, BCG_U16, a, BCG_U16, b, BCG_U16, left, COUNT(a));
    check_binary(OP_SHR, BCG_U16, a, BCG_U16, b, BCG_U16, right, COUNT(a));
    static const int64_t c[] = {1, -1, INT64_MIN, 5, -5};
    static const int64_t d[] = {63, 64, 63, -3, 2};
    static const int64_t left64[] = {INT64_MIN, 0, 0, 0, -20};
    static const int64_t right64[] = {0, -1, -1, 0, -2};
    check_binary(OP_SHL, BCG_I64, c, BCG_I64, d, BCG_I64, left64, COUNT(c));
    check_binary(OP_SHR, BCG_I64, c, BCG_I64, d, BCG_I64, right64, COUNT(c));
    static const uint64_t e[] = {UINT64_MAX, 1, 3};
    static const uint64_t f[] = {63, 64, UINT64_MAX};
    static const uint64_t right_u64[] = {1, 0, 0};
    check_binary(OP_SHR, BCG_U64, e, BCG_U64, f, BCG_U64, right_u64, COUNT(e));
}

static void test_bitwise_integers(void **state)
{
    (void)state;
    static const int16_t a[] = {-1, 0x0f0f, -32768, 12345};
    static const int16_t b[] = {0x00ff, 0x00ff, -1, -12346};
    static const int16_t and_[] = {0x00ff, 0x000f, -32768, 0};
    static const int16_t or_[] = {-1, 0x0fff, -1, -1};
    static const int16_t xor_[] = {-256, 0x0ff0, 32767, -1};
    check_binary(OP_BITAND, BCG_I16, a, BCG_I16, b, BCG_I16, and_, COUNT(a));
    check_binary(OP_BITOR, BCG_I16, a, BCG_I16, b, BCG_I16, or_, COUNT(a));
    check_binary(OP_BITXOR, BCG_I16, a, BCG_I16, b, BCG_I16, xor_, COUNT(a));
    static const int16_t not_[] = {0, -3856, 32767, -12346};
    check_unary(OP_BITNOT, BCG_I16, a, BCG_I16, not_, COUNT(a), -1);
    static const uint16_t c[] = {0, 65535, 0x1234};
    static const uint16_t notu[] = {65535, 0, 0xedcb};
    check_unary(OP_BITNOT, BCG_U16, c, BCG_U16, notu, COUNT(c), -1);
}

static void test_bitwise_on_bool_is_logical(void **state)
{
    (void)state;
    /* stored bytes 2 and 255 read as true; results are exactly 0 or 1 */
    static const uint8_t a[] = {0, 0, 2, 255};
    static const uint8_t b[] = {0, 1, 0, 4};
    static const uint8_t and_[] = {0, 0, 0, 1};
    static const uint8_t or_[] = {0, 1, 1, 1};
    static const uint8_t xor_[] = {0, 1, 1, 0};
    static const uint8_t not_[] = {1, 1, 0, 0};
    check_binary(OP_BITAND, BCG_BOOL, a, BCG_BOOL, b, BCG_BOOL, and_, COUNT(a));
    check_binary(OP_BITOR, BCG_BOOL, a, BCG_BOOL, b, BCG_BOOL, or_, COUNT(a));
    check_binary(OP_BITXOR, BCG_BOOL, a, BCG_BOOL, b, BCG_BOOL, xor_, COUNT(a));
    check_unary(OP_BITNOT, BCG_BOOL, a, BCG_BOOL, not_, COUNT(a), -1);
}

static void test_bool_arithmetic(void **state)
{
    (void)state;
    static const uint8_t a[] = {0, 0, 1, 2};
    static const uint8_t b[] = {0, 7, 0, 3};
    static const uint8_t add[] = {0, 1, 1, 1}; /* logical or */
    static const uint8_t mul[] = {0, 0, 0, 1}; /* logical and */
    check_binary(OP_ADD, BCG_BOOL, a, BCG_BOOL, b, BCG_BOOL, add, COUNT(a));
    check_binary(OP_MUL, BCG_BOOL, a, BCG_BOOL, b, BCG_BOOL, mul, COUNT(a));
    /* bool // bool and bool << bool compute in i8 */
    static const int8_t quotient[] = {0, 0, 0, 1};
    static const int8_t shifted[] = {0, 0, 1, 2};
    check_binary(OP_FLOORDIV, BCG_BOOL, a, BCG_BOOL, b, BCG_I8, quotient, COUNT(a));
    check_binary(OP_SHL, BCG_BOOL, a, BCG_BOOL, b, BCG_I8, shifted, COUNT(a));
}

/* ---- unary ------------------------------------------------------------------------- */

static void test_negation(void **state)
{
    (void)state;
    static const int8_t a[] = {-128, 127, 0, -5};
    static const int8_t neg[] = {-128, -127, 0, 5};
    check_unary(OP_NEG, BCG_I8, a, BCG_I8, neg, COUNT(a), -1);
    check_unary(OP_POS, BCG_I8, a, BCG_I8, a, COUNT(a), -1);
    static const uint32_t b[] = {1, 0, 4294967295u};
    static const uint32_t negu[] = {4294967295u, 0, 1};
    check_unary(OP_NEG, BCG_U32, b, BCG_U32, negu, COUNT(b), -1);
    static const double c[] = {0.0, -0.0, 1.5, -INFINITY};
    static const double negf[] = {-0.0, 0.0, -1.5, INFINITY};
    check_unary(OP_NEG, BCG_F64, c, BCG_F64, negf, COUNT(c), -1);
}

static void test_abs(void **state)
{
    (void)state;
    static const int8_t a[] = {-128, -127, 0, 5};
    static const int8_t want[] = {-128, 127, 0, 5};
    check_unary(OP_ABS, BCG_I8, a, BCG_I8, want, COUNT(a), -1);
    static const int32_t b[] = {INT32_MIN, -1};
    static const int32_t want32[] = {INT32_MIN, 1};
    check_unary(OP_ABS, BCG_I32, b, BCG_I32, want32, COUNT(b), -1);
    static const int64_t c[] = {INT64_MIN, -7};
    static const int64_t want64[] = {INT64_MIN, 7};
    check_unary(OP_ABS, BCG_I64, c, BCG_I64, want64, COUNT(c), -1);
    static const double d[] = {-0.0, NAN, -INFINITY, -2.5};
    static const double wantf[] = {0.0, NAN, INFINITY, 2.5};
    check_unary(OP_ABS, BCG_F64, d, BCG_F64, wantf, COUNT(d), -1);
    static const float e[] = {-0.0f, -3.5f};
    static const float wantf32[] = {0.0f, 3.5f};
    check_unary(OP_ABS, BCG_F32, e, BCG_F32, wantf32, COUNT(e), -1);
    static const uint8_t f[] = {0, 1, 9};
    static const uint8_t wantb[] = {0, 1, 1};
    check_unary(OP_ABS, BCG_BOOL, f, BCG_BOOL, wantb, COUNT(f), -1);
}

/* ---- comparisons and logic ---------------------------------------------------------- */

static void test_comparisons_with_nan(void **state)
{
    (void)state;
    static const double a[] = {NAN, 1.0, NAN, 1.0, -0.0};
    static const double b[] = {1.0, NAN, NAN, 1.0, 0.0};
    static const uint8_t eq[] = {0, 0, 0, 1, 1};
    static const uint8_t ne[] = {1, 1, 1, 0, 0};
    static const uint8_t lt[] = {0, 0, 0, 0, 0};
    static const uint8_t le[] = {0, 0, 0, 1, 1};
    static const uint8_t gt[] = {0, 0, 0, 0, 0};
    static const uint8_t ge[] = {0, 0, 0, 1, 1};
    check_binary(OP_EQ, BCG_F64, a, BCG_F64, b, BCG_BOOL, eq, COUNT(a));
    check_binary(OP_NE, BCG_F64, a, BCG_F64, b, BCG_BOOL, ne, COUNT(a));
    check_binary(OP_LT, BCG_F64, a, BCG_F64, b, BCG_BOOL, lt, COUNT(a));
    check_binary(OP_LE, BCG_F64, a, BCG_F64, b, BCG_BOOL, le, COUNT(a));
    check_binary(OP_GT, BCG_F64, a, BCG_F64, b, BCG_BOOL, gt, COUNT(a));
    check_binary(OP_GE, BCG_F64, a, BCG_F64, b, BCG_BOOL, ge, COUNT(a));
}

static void test_comparisons_in_promoted_type(void **state)
{
    (void)state;
    /* i8 against u8 compares in i16: -1 < 255 */
    static const int8_t a[] = {-1, 5, -128};
    static const uint8_t b[] = {255, 5, 128};
    static const uint8_t lt[] = {1, 0, 1};
    static const uint8_t ge[] = {0, 1, 0};
    check_binary(OP_LT, BCG_I8, a, BCG_U8, b, BCG_BOOL, lt, COUNT(a));
    check_binary(OP_GE, BCG_I8, a, BCG_U8, b, BCG_BOOL, ge, COUNT(a));
    /* i64 against f64 compares in f64: 2^53 + 1 rounds to 2^53 */
    static const int64_t c[] = {9007199254740993, 3};
    static const double d[] = {9007199254740992.0, 3.5};
    static const uint8_t eq[] = {1, 0};
    static const uint8_t lt2[] = {0, 1};
    check_binary(OP_EQ, BCG_I64, c, BCG_F64, d, BCG_BOOL, eq, COUNT(c));
    check_binary(OP_LT, BCG_I64, c, BCG_F64, d, BCG_BOOL, lt2, COUNT(c));
    /* u64 against i64 compares in f64 */
    static const uint64_t e[] = {UINT64_MAX, 0};
    static const int64_t f[] = {-1, -1};
    static const uint8_t gt[] = {1, 1};
    check_binary(OP_GT, BCG_U64, e, BCG_I64, f, BCG_BOOL, gt, COUNT(e));
    /* i8 against f32 compares in f32 */
    static const int8_t g[] = {1, 2};
    static const float h[] = {1.0f, 1.5f};
    static const uint8_t eqf[] = {1, 0};
    check_binary(OP_EQ, BCG_I8, g, BCG_F32, h, BCG_BOOL, eqf, COUNT(g));
}

static void test_logical_operators(void **state)
{
    (void)state;
    static const double a[] = {0.0, NAN, -0.0, 2.0, 0.0};
    static const double b[] = {0.0, 1.0, 5.0, 3.0, NAN};
    static const uint8_t and_[] = {0, 1, 0, 1, 0};
    static const uint8_t or_[] = {0, 1, 1, 1, 1};
    static const uint8_t not_[] = {1, 0, 1, 0, 1};
    check_binary(OP_AND, BCG_F64, a, BCG_F64, b, BCG_BOOL, and_, COUNT(a));
    check_binary(OP_OR, BCG_F64, a, BCG_F64, b, BCG_BOOL, or_, COUNT(a));
    check_unary(OP_NOT, BCG_F64, a, BCG_BOOL, not_, COUNT(a), -1);
    static const int32_t c[] = {0, -1, 256, 0};
    static const uint8_t d[] = {0, 0, 2, 1};
    static const uint8_t and2[] = {0, 0, 1, 0};
    static const uint8_t or2[] = {0, 1, 1, 1};
    check_binary(OP_AND, BCG_I32, c, BCG_BOOL, d, BCG_BOOL, and2, COUNT(c));
    check_binary(OP_OR, BCG_I32, c, BCG_BOOL, d, BCG_BOOL, or2, COUNT(c));
    static const uint8_t notb[] = {1, 1, 0, 0};
    check_unary(OP_NOT, BCG_BOOL, d, BCG_BOOL, notb, COUNT(d), -1);
}

/* ---- functions --------------------------------------------------------------------------- */

static void test_transcendental_f64(void **state)
{
    (void)state;
    static const double x[] = {0.5, 2.0, 10.0, -1.0, 0.0, 1e-300};
    static const double sqrt_[] = {0.7071067811865476, 1.4142135623730951, 3.1622776601683795, NAN, 0.0, 1e-150};
    static const double exp_[] = {1.6487212707001282, 7.38905609893065, 22026.465794806718, 0.3678794411714424, 1.0, 1.0};
    static const double log_[] = {-0.6931471805599453, 0.6931471805599453, 2.3025850929940455, NAN, -INFINITY, -690.7755278982137};
    static const double sin_[] = {0.47942553860420295, 0.9092974268256816, -0.5440211108893698, -0.8414709848078965, 0.0, 1e-300};
    static const double cos_[] = {0.8775825618903725, -0.4161468365471424, -0.8390715290764524, 0.5403023058681397, 1.0, 1.0};
    static const double tanh_[] = {0.46211715726000974, 0.9640275800758169, 0.9999999958776927, -0.7615941559557649, 0.0, 1e-300};
    check_unary(OP_SQRT, BCG_F64, x, BCG_F64, sqrt_, COUNT(x), 1);
    check_unary(OP_EXP, BCG_F64, x, BCG_F64, exp_, COUNT(x), 4);
    check_unary(OP_LOG, BCG_F64, x, BCG_F64, log_, COUNT(x), 4);
    check_unary(OP_SIN, BCG_F64, x, BCG_F64, sin_, COUNT(x), 4);
    check_unary(OP_COS, BCG_F64, x, BCG_F64, cos_, COUNT(x), 4);
    check_unary(OP_TANH, BCG_F64, x, BCG_F64, tanh_, COUNT(x), 4);
}

static void test_transcendental_f32(void **state)
{
    (void)state;
    /* 1e-300 rounds to 0 in f32 */
    static const float x[] = {0.5f, 2.0f, 10.0f, -1.0f, 0.0f, 0.0f};
    static const float sqrt_[] = {0.7071067690849304, 1.4142135381698608, 3.1622776985168457, NAN, 0.0, 0.0};
    static const float exp_[] = {1.6487212181091309, 7.3890557289123535, 22026.466796875, 0.3678794205188751, 1.0, 1.0};
    static const float log_[] = {-0.6931471824645996, 0.6931471824645996, 2.3025851249694824, NAN, -INFINITY, -INFINITY};
    static const float sin_[] = {0.4794255495071411, 0.9092974066734314, -0.5440210700035095, -0.8414710164070129, 0.0, 0.0};
    static const float cos_[] = {0.8775825500488281, -0.41614681482315063, -0.83907151222229, 0.5403022766113281, 1.0, 1.0};
    static const float tanh_[] = {0.46211719512939453, 0.9640275835990906, 1.0, -0.7615941762924194, 0.0, 0.0};
    check_unary(OP_SQRT, BCG_F32, x, BCG_F32, sqrt_, COUNT(x), 1);
    check_unary(OP_EXP, BCG_F32, x, BCG_F32, exp_, COUNT(x), 4);
    check_unary(OP_LOG, BCG_F32, x, BCG_F32, log_, COUNT(x), 4);
    check_unary(OP_SIN, BCG_F32, x, BCG_F32, sin_, COUNT(x), 4);
    check_unary(OP_COS, BCG_F32, x, BCG_F32, cos_, COUNT(x), 4);
    check_unary(OP_TANH, BCG_F32, x, BCG_F32, tanh_, COUNT(x), 4);
}

static void test_floor_ceil(void **state)
{
    (void)state;
    static const double x[] = {0.5, -0.5, 2.0, -1.5, NAN, -INFINITY};
    static const double floor_[] = {0.0, -1.0, 2.0, -2.0, NAN, -INFINITY};
    static const double ceil_[] = {1.0, -0.0, 2.0, -1.0, NAN, -INFINITY};
    check_unary(OP_FLOOR, BCG_F64, x, BCG_F64, floor_, COUNT(x), -1);
    check_unary(OP_CEIL, BCG_F64, x, BCG_F64, ceil_, COUNT(x), -1);
    static const float y[] = {8388607.5f, -0.25f};
    static const float floor32[] = {8388607.0f, -1.0f};
    static const float ceil32[] = {8388608.0f, -0.0f};
    check_unary(OP_FLOOR, BCG_F32, y, BCG_F32, floor32, COUNT(y), -1);
    check_unary(OP_CEIL, BCG_F32, y, BCG_F32, ceil32, COUNT(y), -1);
}

static void test_functions_on_integers_convert_first(void **state)
{
    (void)state;
    /* i16 -> f32 (bcgen), i32 -> f64 */
    static const int16_t a[] = {-7, 0, 3, 100};
    static const float sqrt_[] = {NAN, 0.0, 1.7320507764816284, 10.0};
    check_unary(OP_SQRT, BCG_I16, a, BCG_F32, sqrt_, COUNT(a), 1);
    static const int32_t b[] = {-7, 5};
    static const double floor_[] = {-7.0, 5.0};
    check_unary(OP_FLOOR, BCG_I32, b, BCG_F64, floor_, COUNT(b), -1);
    static const uint8_t c[] = {0, 1, 5};
    static const float exp_[] = {1.0, 2.7182817459106445, 148.41316223144531};
    check_unary(OP_EXP, BCG_BOOL, c, BCG_F32, exp_, 2, 4);
    check_unary(OP_EXP, BCG_U8, c, BCG_F32, exp_, COUNT(c), 4);
}

static void test_minimum_maximum(void **state)
{
    (void)state;
    static const double a[] = {1, NAN, 2, NAN, -0.0, 0.0, -INFINITY};
    static const double b[] = {NAN, 1, 3, NAN, 0.0, -0.0, 5};
    /* equal values give the second argument, as NumPy's loops do */
    static const double minimum[] = {NAN, NAN, 2, NAN, 0.0, -0.0, -INFINITY};
    static const double maximum[] = {NAN, NAN, 3, NAN, 0.0, -0.0, 5};
    check_binary(OP_MINIMUM, BCG_F64, a, BCG_F64, b, BCG_F64, minimum, COUNT(a));
    check_binary(OP_MAXIMUM, BCG_F64, a, BCG_F64, b, BCG_F64, maximum, COUNT(a));
    static const float c[] = {NAN, 1.5f};
    static const float d[] = {0.0f, -2.0f};
    static const float minimum32[] = {NAN, -2.0f};
    static const float maximum32[] = {NAN, 1.5f};
    check_binary(OP_MINIMUM, BCG_F32, c, BCG_F32, d, BCG_F32, minimum32, COUNT(c));
    check_binary(OP_MAXIMUM, BCG_F32, c, BCG_F32, d, BCG_F32, maximum32, COUNT(c));
    /* u64 against i64 promotes to f64; i8 against u8 to i16 */
    static const int8_t e[] = {-1, 100};
    static const uint8_t f[] = {200, 3};
    static const int16_t minimum16[] = {-1, 3};
    static const int16_t maximum16[] = {200, 100};
    check_binary(OP_MINIMUM, BCG_I8, e, BCG_U8, f, BCG_I16, minimum16, COUNT(e));
    check_binary(OP_MAXIMUM, BCG_I8, e, BCG_U8, f, BCG_I16, maximum16, COUNT(e));
    static const uint64_t g[] = {UINT64_MAX, 0};
    static const uint64_t h[] = {1, 1};
    static const uint64_t minimum64[] = {1, 0};
    check_binary(OP_MINIMUM, BCG_U64, g, BCG_U64, h, BCG_U64, minimum64, COUNT(g));
}

static void test_where(void **state)
{
    (void)state;
    harness h;
    bcg_dtype dtypes[] = {BCG_BOOL, BCG_I32, BCG_F32, BCG_F64};
    harness_init(&h, 4, dtypes);
    /* where(c, x, y) with x i32, y f32: result f64 */
    h.c.root = ternary(&h, OP_WHERE, BCG_F64, operand(&h, 0), operand(&h, 1), operand(&h, 2));
    plan_linear(&h, 4);
    static const uint8_t cond[] = {0, 1, 2, 255};
    static const int32_t x[] = {16777217, 16777217, -5, 7};
    static const float y[] = {0.5f, 0.25f, 1.5f, 2.5f};
    static const double unused[] = {0, 0, 0, 0};
    const void *in[] = {cond, x, y, unused};
    double out[4];
    run_ok(&h, out, in);
    static const double want[] = {0.5, 16777217.0, -5.0, 7.0};
    expect_values(BCG_F64, out, want, 4);

    /* a float condition: NaN is true, -0.0 false */
    static const double fcond[] = {NAN, -0.0, 3.0, 0.0};
    h.c.root = ternary(&h, OP_WHERE, BCG_F64, operand(&h, 3), operand(&h, 1), operand(&h, 2));
    const void *in2[] = {cond, x, y, fcond};
    run_ok(&h, out, in2);
    static const double want2[] = {16777217.0, 0.25, -5.0, 2.5};
    expect_values(BCG_F64, out, want2, 4);

    /* a bool result stores 0/1 even when the chosen input byte is 255 */
    h.c.root = ternary(&h, OP_WHERE, BCG_BOOL, operand(&h, 0), operand(&h, 0),
                       literal_int(&h, BCG_BOOL, 1));
    uint8_t bools[4];
    run_ok(&h, bools, in);
    static const uint8_t want3[] = {1, 1, 1, 1};
    expect_values(BCG_BOOL, bools, want3, 4);
    harness_free(&h);
}

static void test_clip(void **state)
{
    (void)state;
    harness h;
    bcg_dtype dtypes[] = {BCG_I32, BCG_F64};
    harness_init(&h, 2, dtypes);
    h.c.root = ternary(&h, OP_CLIP, BCG_I32, operand(&h, 0), literal_int(&h, BCG_I32, -3),
                       literal_int(&h, BCG_I32, 10));
    plan_linear(&h, 5);
    static const int32_t x[] = {INT32_MIN, -3, 0, 11, INT32_MAX};
    static const double f[] = {NAN, -5.0, 0.5, 20.0, -0.0};
    const void *in[] = {x, f};
    int32_t out[5];
    run_ok(&h, out, in);
    static const int32_t want[] = {-3, -3, 0, 10, 10};
    expect_values(BCG_I32, out, want, 5);

    /* lo > hi gives hi; NaN propagates */
    h.c.root = ternary(&h, OP_CLIP, BCG_F64, operand(&h, 1), literal_float(&h, BCG_F64, 5.0),
                       literal_float(&h, BCG_F64, 1.0));
    double fout[5];
    run_ok(&h, fout, in);
    static const double fwant[] = {NAN, 1.0, 1.0, 1.0, 1.0};
    expect_values(BCG_F64, fout, fwant, 5);

    /* clip of an i32 with f64 bounds computes in f64 */
    h.c.root = ternary(&h, OP_CLIP, BCG_F64, operand(&h, 0), literal_float(&h, BCG_F64, -0.5),
                       operand(&h, 1));
    run_ok(&h, fout, in);
    static const double mixed[] = {NAN, -5.0, 0.0, 11.0, -0.0};
    expect_values(BCG_F64, fout, mixed, 5);
    harness_free(&h);
}

/* ---- casts --------------------------------------------------------------------------------- */

static const double cast_inputs[] = {
    NAN, INFINITY, -INFINITY, 1e20, -1e20, 3.9, -3.9, 127.5, -128.9, 255.9, -0.5,
    9223372036854775808.0, 18446744073709551616.0, -9223372036854775808.0, 2147483648.0,
    -2147483648.5, 65535.5, -1.0,
};

static void test_cast_float_to_signed_saturates(void **state)
{
    (void)state;
    static const int8_t i8[] = {0, 127, -128, 127, -128, 3, -3, 127, -128, 127, 0, 127, 127, -128, 127, -128, 127, -1};
    static const int16_t i16[] = {0, 32767, -32768, 32767, -32768, 3, -3, 127, -128, 255, 0, 32767, 32767, -32768, 32767, -32768, 32767, -1};
    static const int32_t i32[] = {0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 3, -3, 127, -128, 255, 0, INT32_MAX, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 65535, -1};
    static const int64_t i64[] = {0, INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN, 3, -3, 127, -128, 255, 0, INT64_MAX, INT64_MAX, INT64_MIN, 2147483648, -2147483648, 65535, -1};
    int n = COUNT(cast_inputs);
    check_unary(OP_CAST, BCG_F64, cast_inputs, BCG_I8, i8, n, -1);
    check_unary(OP_CAST, BCG_F64, cast_inputs, BCG_I16, i16, n, -1);
    check_unary(OP_CAST, BCG_F64, cast_inputs, BCG_I32, i32, n, -1);
    check_unary(OP_CAST, BCG_F64, cast_inputs, BCG_I64, i64, n, -1);
}

static void test_cast_float_to_unsigned_saturates(void **state)
{
    (void)state;
    static const uint8_t u8[] = {0, 255, 0, 255, 0, 3, 0, 127, 0, 255, 0, 255, 255, 0, 255, 0, 255, 0};
    static const uint16_t u16[] = {0, 65535, 0, 65535, 0, 3, 0, 127, 0, 255, 0, 65535, 65535, 0, 65535, 0, 65535, 0};
    static const uint32_t u32[] = {0, UINT32_MAX, 0, UINT32_MAX, 0, 3, 0, 127, 0, 255, 0, UINT32_MAX, UINT32_MAX, 0, 2147483648u, 0, 65535, 0};
    static const uint64_t u64[] = {0, UINT64_MAX, 0, UINT64_MAX, 0, 3, 0, 127, 0, 255, 0, 9223372036854775808u, UINT64_MAX, 0, 2147483648u, 0, 65535, 0};
    int n = COUNT(cast_inputs);
    check_unary(OP_CAST, BCG_F64, cast_inputs, BCG_U8, u8, n, -1);
    check_unary(OP_CAST, BCG_F64, cast_inputs, BCG_U16, u16, n, -1);
    check_unary(OP_CAST, BCG_F64, cast_inputs, BCG_U32, u32, n, -1);
    check_unary(OP_CAST, BCG_F64, cast_inputs, BCG_U64, u64, n, -1);
}

static void test_cast_f32_to_integers(void **state)
{
    (void)state;
    static const float a[] = {NAN, 3.4e38f, -2.5f, 4294967296.0f, 2147483520.0f};
    static const int32_t i32[] = {0, INT32_MAX, -2, INT32_MAX, 2147483520};
    static const uint32_t u32[] = {0, UINT32_MAX, 0, UINT32_MAX, 2147483520u};
    check_unary(OP_CAST, BCG_F32, a, BCG_I32, i32, COUNT(a), -1);
    check_unary(OP_CAST, BCG_F32, a, BCG_U32, u32, COUNT(a), -1);
}

static void test_cast_to_bool(void **state)
{
    (void)state;
    static const double a[] = {NAN, -0.0, 0.0, 0.5, -INFINITY, 5e-324};
    static const uint8_t want[] = {1, 0, 0, 1, 1, 1};
    check_unary(OP_CAST, BCG_F64, a, BCG_BOOL, want, COUNT(a), -1);
    static const int32_t b[] = {0, 256, -1};
    static const uint8_t wantb[] = {0, 1, 1};
    check_unary(OP_CAST, BCG_I32, b, BCG_BOOL, wantb, COUNT(b), -1);
    static const uint64_t c[] = {0, UINT64_C(1) << 63};
    static const uint8_t wantc[] = {0, 1};
    check_unary(OP_CAST, BCG_U64, c, BCG_BOOL, wantc, COUNT(c), -1);
}

static void test_cast_integer_to_float_rounds_once(void **state)
{
    (void)state;
    /* 2^62 + 2^38 + 1 would round to 2^62 through double; straight to
     * float it rounds up */
    static const int64_t a[] = {9007199254740993, 16777217, 4611686293305294849, -1152921573326323713, 33554433};
    static const float want32[] = {9007199254740992.0, 16777216.0, 4.611686568183202e+18, -1.1529216420458004e+18, 33554432.0};
    static const double want64[] = {9007199254740992.0, 16777217.0, 4.611686293305295e+18, -1.1529215733263237e+18, 33554433.0};
    check_unary(OP_CAST, BCG_I64, a, BCG_F32, want32, COUNT(a), -1);
    check_unary(OP_CAST, BCG_I64, a, BCG_F64, want64, COUNT(a), -1);
    static const uint64_t b[] = {UINT64_MAX, 9223372586610589697u, 9007199254740993};
    static const float wantu32[] = {1.8446744073709552e+19, 9.223373136366404e+18, 9007199254740992.0};
    static const double wantu64[] = {1.8446744073709552e+19, 9.22337258661059e+18, 9007199254740992.0};
    check_unary(OP_CAST, BCG_U64, b, BCG_F32, wantu32, COUNT(b), -1);
    check_unary(OP_CAST, BCG_U64, b, BCG_F64, wantu64, COUNT(b), -1);
    static const uint8_t c[] = {0, 1, 200};
    static const double wantb[] = {0.0, 1.0, 1.0};
    check_unary(OP_CAST, BCG_BOOL, c, BCG_F64, wantb, COUNT(c), -1);
}

static void test_cast_integer_narrowing_wraps(void **state)
{
    (void)state;
    static const int32_t a[] = {300, -129, 128, 255, -1};
    static const int8_t want[] = {44, 127, -128, -1, -1};
    check_unary(OP_CAST, BCG_I32, a, BCG_I8, want, COUNT(a), -1);
    static const uint64_t b[] = {UINT64_MAX, 128, 0x1234};
    static const int8_t wantb[] = {-1, -128, 52};
    check_unary(OP_CAST, BCG_U64, b, BCG_I8, wantb, COUNT(b), -1);
    static const int8_t c[] = {-1, -128, 5};
    static const uint64_t wantc[] = {UINT64_MAX, 18446744073709551488u, 5};
    check_unary(OP_CAST, BCG_I8, c, BCG_U64, wantc, COUNT(c), -1);
    static const int16_t d[] = {-1, 256, 300};
    static const uint8_t wantd[] = {255, 0, 44};
    check_unary(OP_CAST, BCG_I16, d, BCG_U8, wantd, COUNT(d), -1);
    static const uint64_t e[] = {UINT64_MAX, UINT64_C(1) << 63};
    static const int64_t wante[] = {-1, INT64_MIN};
    check_unary(OP_CAST, BCG_U64, e, BCG_I64, wante, COUNT(e), -1);
}

static void test_cast_f64_to_f32(void **state)
{
    (void)state;
    static const double a[] = {0.1, 1e40, -1e-50, 3.4028235677973366e38, NAN, -INFINITY};
    static const float want[] = {0.10000000149011612, INFINITY, -0.0, INFINITY, NAN, -INFINITY};
    check_unary(OP_CAST, BCG_F64, a, BCG_F32, want, COUNT(a), -1);
    static const float b[] = {0.1f, -0.0f};
    static const double wantd[] = {0.10000000149011612, -0.0};
    check_unary(OP_CAST, BCG_F32, b, BCG_F64, wantd, COUNT(b), -1);
}

static void test_bool_input_reads_nonzero_as_true(void **state)
{
    (void)state;
    static const uint8_t a[] = {0, 1, 2, 128, 255};
    static const int32_t want[] = {0, 1, 1, 1, 1};
    check_unary(OP_CAST, BCG_BOOL, a, BCG_I32, want, COUNT(a), -1);
    /* copying a bool operand to a bool output normalises to 0/1 */
    static const uint8_t normal[] = {0, 1, 1, 1, 1};
    check_unary(OP_POS, BCG_BOOL, a, BCG_BOOL, normal, COUNT(a), -1);
    /* bool + i8 computes in i8 with the true as 1 */
    static const int8_t b[] = {10, 10, 127, -1, 0};
    static const int8_t sum[] = {10, 11, -128, 0, 1};
    check_binary(OP_ADD, BCG_BOOL, a, BCG_I8, b, BCG_I8, sum, COUNT(a));
}

/* ---- literals ------------------------------------------------------------------------------ */

static void test_literals(void **state)
{
    (void)state;
    harness h;
    bcg_dtype dtypes[] = {BCG_F32, BCG_U64, BCG_I8};
    harness_init(&h, 3, dtypes);
    plan_linear(&h, 2);
    static const float f[] = {0.0f, 1.0f};
    static const uint64_t u[] = {1, 2};
    static const int8_t s[] = {1, -2};
    const void *in[] = {f, u, s};

    /* an f32 literal kept as the double 0.1 is rounded to float */
    h.c.root = binary(&h, OP_ADD, BCG_F32, operand(&h, 0), literal_float(&h, BCG_F32, 0.1));
    float fout[2];
    run_ok(&h, fout, in);
    static const float fwant[] = {0.1f, 1.1f};
    expect_values(BCG_F32, fout, fwant, 2);

    h.c.root = binary(&h, OP_ADD, BCG_U64, operand(&h, 1), literal_uint(&h, BCG_U64, UINT64_MAX));
    uint64_t uout[2];
    run_ok(&h, uout, in);
    static const uint64_t uwant[] = {0, 1};
    expect_values(BCG_U64, uout, uwant, 2);

    h.c.root = binary(&h, OP_MUL, BCG_I8, operand(&h, 2), literal_int(&h, BCG_I8, -128));
    int8_t sout[2];
    run_ok(&h, sout, in);
    static const int8_t swant[] = {-128, 0};
    expect_values(BCG_I8, sout, swant, 2);

    /* a literal-only tree (folded in practice) still evaluates */
    h.c.root = literal_float(&h, BCG_F64, 2.5);
    double dout[2];
    run_ok(&h, dout, in);
    static const double dwant[] = {2.5, 2.5};
    expect_values(BCG_F64, dout, dwant, 2);
    harness_free(&h);
}

/* ---- plans --------------------------------------------------------------------------------- */

static void test_broadcast_strides(void **state)
{
    (void)state;
    /* out[3][4] = a[3][4] + b[4] (b's outer stride 0) + c[] (all 0) */
    harness h;
    bcg_dtype dtypes[] = {BCG_I32, BCG_I32, BCG_I32};
    harness_init(&h, 3, dtypes);
    h.c.root = binary(&h, OP_ADD, BCG_I32,
                      binary(&h, OP_ADD, BCG_I32, operand(&h, 0), operand(&h, 1)), operand(&h, 2));
    static const int64_t extent[] = {3, 4};
    static const int64_t strides[] = {4, 1, 4, 1, 0, 1, 0, 0};
    plan_set(&h, 2, extent, strides);
    static const int32_t a[] = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
    static const int32_t b[] = {100, 200, 300, 400};
    static const int32_t c[] = {1000};
    const void *in[] = {a, b, c};
    int32_t out[12];
    run_ok(&h, out, in);
    static const int32_t want[] = {1100, 1201, 1302, 1403, 1110, 1211, 1312, 1413, 1120, 1221, 1322, 1423};
    expect_values(BCG_I32, out, want, 12);
    harness_free(&h);
}

static void test_negative_strides(void **state)
{
    (void)state;
    /* the input walks backwards: its pointer is at element [0] = the last
     * element of the buffer */
    harness h;
    bcg_dtype dtype = BCG_F64;
    harness_init(&h, 1, &dtype);
    h.c.root = binary(&h, OP_MUL, BCG_F64, operand(&h, 0), literal_float(&h, BCG_F64, 2.0));
    static const int64_t extent[] = {2, 3};
    static const int64_t strides[] = {3, 1, -3, -1};
    plan_set(&h, 2, extent, strides);
    static const double buffer[] = {1, 2, 3, 4, 5, 6};
    const void *in[] = {&buffer[5]};
    double out[6];
    run_ok(&h, out, in);
    static const double want[] = {12, 10, 8, 6, 4, 2};
    expect_values(BCG_F64, out, want, 6);
    harness_free(&h);
}

static void test_transposed_output_and_three_loops(void **state)
{
    (void)state;
    /* out (strides 1, 2, 4 over a 4x2x2 result) = a contiguous: the output
     * is written in transposed order */
    harness h;
    bcg_dtype dtype = BCG_I16;
    harness_init(&h, 1, &dtype);
    h.c.root = operand(&h, 0);
    static const int64_t extent[] = {4, 2, 2};
    static const int64_t strides[] = {1, 4, 8, 4, 2, 1};
    plan_set(&h, 3, extent, strides);
    int16_t a[16];
    for (int k = 0; k < 16; k++)
        a[k] = (int16_t)k;
    const void *in[] = {a};
    int16_t out[16];
    memset(out, 0x55, sizeof out);
    run_ok(&h, out, in);
    int16_t want[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 2; k++)
                want[i + 4 * j + 8 * k] = (int16_t)(4 * i + 2 * j + k);
    expect_values(BCG_I16, out, want, 16);
    harness_free(&h);
}

static void test_in_place(void **state)
{
    (void)state;
    /* out is a's own memory: a = a * a + b, each element read before written */
    harness h;
    bcg_dtype dtypes[] = {BCG_U16, BCG_U16};
    harness_init(&h, 2, dtypes);
    h.c.root = binary(&h, OP_ADD, BCG_U16,
                      binary(&h, OP_MUL, BCG_U16, operand(&h, 0), operand(&h, 0)), operand(&h, 1));
    static const int64_t extent[] = {2, 3};
    static const int64_t strides[] = {3, 1, 3, 1, 0, 1};
    plan_set(&h, 2, extent, strides);
    uint16_t a[] = {1, 2, 3, 4, 5, 300};
    static const uint16_t b[] = {10, 20, 30};
    const void *in[] = {a, b};
    run_ok(&h, a, in);
    static const uint16_t want[] = {11, 24, 39, 26, 45, 24494};
    expect_values(BCG_U16, a, want, 6);
    harness_free(&h);
}

static void test_empty_plan_writes_nothing(void **state)
{
    (void)state;
    harness h;
    bcg_dtype dtype = BCG_I32;
    harness_init(&h, 1, &dtype);
    h.c.root = unary(&h, OP_NEG, BCG_I32, operand(&h, 0));
    static const int64_t extent[] = {3, 0};
    static const int64_t strides[] = {0, 1, 0, 1};
    plan_set(&h, 2, extent, strides);
    assert_true(h.plan.empty);
    int32_t out[2] = {77, 88};
    const void *in[] = {NULL};
    assert_int_equal(eval_run(&h.c, out, in, &h.err), BCG_OK);
    assert_int_equal(out[0], 77);
    assert_int_equal(out[1], 88);
    /* a zero extent without `empty` set is treated the same way */
    h.plan.empty = false;
    assert_int_equal(eval_run(&h.c, out, in, &h.err), BCG_OK);
    assert_int_equal(out[0], 77);
    harness_free(&h);
}

static void test_rank0_plan_is_one_element(void **state)
{
    (void)state;
    harness h;
    bcg_dtype dtypes[] = {BCG_F32, BCG_I8};
    harness_init(&h, 2, dtypes);
    h.c.root = binary(&h, OP_SUB, BCG_F32, operand(&h, 0), operand(&h, 1));
    h.plan.loop_count = 0;
    h.plan.elements = 1;
    static const float a = 1.5f;
    static const int8_t b = -128;
    const void *in[] = {&a, &b};
    float out[2] = {0.0f, -7.0f};
    run_ok(&h, out, in);
    assert_true(out[0] == 129.5f);
    assert_true(out[1] == -7.0f); /* only one element written */
    harness_free(&h);
}

static void test_unused_operand_is_not_read(void **state)
{
    (void)state;
    harness h;
    bcg_dtype dtypes[] = {BCG_I8, BCG_I8};
    harness_init(&h, 2, dtypes);
    h.c.root = unary(&h, OP_NEG, BCG_I8, operand(&h, 1));
    plan_linear(&h, 2);
    static const int8_t b[] = {3, -4};
    const void *in[] = {NULL, b};
    int8_t out[2];
    run_ok(&h, out, in);
    static const int8_t want[] = {-3, 4};
    expect_values(BCG_I8, out, want, 2);
    harness_free(&h);
}

static void test_deep_tree(void **state)
{
    (void)state;
    harness h;
    bcg_dtype dtype = BCG_I64;
    harness_init(&h, 1, &dtype);
    /* x -> -x + 1, nested 199 times: a tree about 400 nodes deep */
    expr_node *n = operand(&h, 0);
    for (int k = 0; k < BCG_MAX_DEPTH - 1; k++)
        n = binary(&h, OP_ADD, BCG_I64, unary(&h, OP_NEG, BCG_I64, n), literal_int(&h, BCG_I64, 1));
    h.c.root = n;
    plan_linear(&h, 3);
    static const int64_t a[] = {0, 10, INT64_MIN};
    const void *in[] = {a};
    int64_t out[3];
    run_ok(&h, out, in);
    /* x -> 1 - x, applied 199 (odd) times, is 1 - x */
    static const int64_t want[] = {1, -9, INT64_MIN + 1};
    expect_values(BCG_I64, out, want, 3);
    harness_free(&h);
}

/* ---- errors ---------------------------------------------------------------------------------- */

static void test_allocation_failure_is_nomem(void **state)
{
    (void)state;
    harness h;
    bcg_dtype dtype = BCG_I32;
    harness_init(&h, 1, &dtype);
    h.c.root = unary(&h, OP_NEG, BCG_I32, operand(&h, 0));
    plan_linear(&h, 2);
    static const int32_t a[] = {1, 2};
    const void *in[] = {a};
    int32_t out[2] = {5, 6};
    mem_fail_after(1);
    bcg_status status = eval_run(&h.c, out, in, &h.err);
    mem_fail_after(0);
    assert_int_equal(status, BCG_ERR_NOMEM);
    assert_int_equal(h.err.status, BCG_ERR_NOMEM);
    assert_int_equal(out[0], 5);
    /* and with memory back it works, allocating once per call */
    error_clear(&h.err);
    mem_fail_after(0);
    run_ok(&h, out, in);
    assert_int_equal(mem_fail_after(0), 1);
    static const int32_t want[] = {-1, -2};
    expect_values(BCG_I32, out, want, 2);
    harness_free(&h);
}

static void test_missing_tree_or_plan_is_usage_error(void **state)
{
    (void)state;
    harness h;
    bcg_dtype dtype = BCG_I32;
    harness_init(&h, 1, &dtype);
    plan_linear(&h, 1);
    int32_t out[1];
    const void *in[] = {out};
    assert_int_equal(eval_run(&h.c, out, in, &h.err), BCG_ERR_USAGE);
    assert_int_equal(h.err.status, BCG_ERR_USAGE);
    h.c.root = operand(&h, 0);
    h.c.plan = NULL;
    assert_int_equal(eval_run(&h.c, out, in, NULL), BCG_ERR_USAGE);
    harness_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_i8_arithmetic_wraps),
        cmocka_unit_test(test_u8_arithmetic_wraps),
        cmocka_unit_test(test_i64_arithmetic_wraps),
        cmocka_unit_test(test_u64_and_i32_wrap),
        cmocka_unit_test(test_f32_arithmetic_rounds_as_float),
        cmocka_unit_test(test_f64_arithmetic),
        cmocka_unit_test(test_true_division_of_integers_is_f64),
        cmocka_unit_test(test_mixed_types_compute_in_operation_type),
        cmocka_unit_test(test_floordiv_mod_i32),
        cmocka_unit_test(test_floordiv_mod_i8_and_i64_minimum),
        cmocka_unit_test(test_floordiv_mod_u32),
        cmocka_unit_test(test_floordiv_mod_f64),
        cmocka_unit_test(test_floordiv_mod_f32),
        cmocka_unit_test(test_integer_pow_wraps),
        cmocka_unit_test(test_integer_pow_negative_exponent),
        cmocka_unit_test(test_float_pow),
        cmocka_unit_test(test_shifts_i8),
        cmocka_unit_test(test_shifts_u16_and_i64),
        cmocka_unit_test(test_bitwise_integers),
        cmocka_unit_test(test_bitwise_on_bool_is_logical),
        cmocka_unit_test(test_bool_arithmetic),
        cmocka_unit_test(test_negation),
        cmocka_unit_test(test_abs),
        cmocka_unit_test(test_comparisons_with_nan),
        cmocka_unit_test(test_comparisons_in_promoted_type),
        cmocka_unit_test(test_logical_operators),
        cmocka_unit_test(test_transcendental_f64),
        cmocka_unit_test(test_transcendental_f32),
        cmocka_unit_test(test_floor_ceil),
        cmocka_unit_test(test_functions_on_integers_convert_first),
        cmocka_unit_test(test_minimum_maximum),
        cmocka_unit_test(test_where),
        cmocka_unit_test(test_clip),
        cmocka_unit_test(test_cast_float_to_signed_saturates),
        cmocka_unit_test(test_cast_float_to_unsigned_saturates),
        cmocka_unit_test(test_cast_f32_to_integers),
        cmocka_unit_test(test_cast_to_bool),
        cmocka_unit_test(test_cast_integer_to_float_rounds_once),
        cmocka_unit_test(test_cast_integer_narrowing_wraps),
        cmocka_unit_test(test_cast_f64_to_f32),
        cmocka_unit_test(test_bool_input_reads_nonzero_as_true),
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_broadcast_strides),
        cmocka_unit_test(test_negative_strides),
        cmocka_unit_test(test_transposed_output_and_three_loops),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_empty_plan_writes_nothing),
        cmocka_unit_test(test_rank0_plan_is_one_element),
        cmocka_unit_test(test_unused_operand_is_not_read),
        cmocka_unit_test(test_deep_tree),
        cmocka_unit_test(test_allocation_failure_is_nomem),
        cmocka_unit_test(test_missing_tree_or_plan_is_usage_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
