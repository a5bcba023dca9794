/* test_narrow.c - narrow.c: computing in the narrowest exact type.
 *
 * A differential test over thousands of seeded random typed trees rich in
 * casts to and from the float types, comparisons with literals (integer
 * valued, fractional, out of range, negative, NaN and infinite), where,
 * minimum, maximum and abs, over operands of every dtype filled with edge
 * values (the extremes of every type, 0, -0.0, NaN, infinities, 2^24+1,
 * 2^53+1, halves): the reference evaluator on the tree as written against
 * the evaluator on the narrowed tree (narrow_tree alone, and fold_tree, the
 * pipeline's folding and narrowing) must give the same bits, and a share of
 * them goes through the JIT too.  Each rule must fire in a stated share. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* before cmocka.h, whose fail() macro would otherwise rewrite util.c's fail */
#include "internal.h"
#include "../runtime/half.h"

#include <setjmp.h>
#include <cmocka.h>

enum { LENGTH = 96, OPERANDS = 3, TREES = 5000, JIT_EVERY = 12 };

static uint64_t rng_state;

static uint64_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int below(int n) { return (int)(next_random() % (uint64_t)n); }

typedef struct text {
    char s[2048];
    size_t length;
} text;

static void put(text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->length + n < sizeof t->s) {
        memcpy(t->s + t->length, s, n + 1);
        t->length += n;
    }
}

static const char *const float_casts[] = {"f64", "f32", "f16", "bf16"};
static const char *const integer_casts[] = {"i8", "i16", "i32", "i64", "u8",
                                            "u16", "u32", "u64", "bool"};
static const char *const literals[] = {
    "2.0", "2.5", "-2.5", "0.0", "-0.0", "3", "0", "1", "-1", "127.5", "128.0", "-128.0",
    "-129.0", "255.0", "255.5", "256.0", "300.0", "-300.0", "65535.5", "1e10", "-1e10",
    "16777217.0", "9007199254740993.0", "sqrt(-1.0)", "exp(1000.0)", "-exp(1000.0)", "f32(sqrt(-1.0))",
    "f32(2.5)", "f16(3.0)", "i8(5)", "u8(200)", "u8(0)", "i16(-7)", "i32(16777217)", "bool(1)", "0.5", "-0.5", "2147483648.0"};
static const char *const comparisons[] = {" > ", " >= ", " < ", " <= ", " == ", " != "};

static void value_tree(text *t, int depth);

static void literal(text *t) { put(t, literals[below(sizeof literals / sizeof literals[0])]); }

static void condition_tree(text *t, int depth)
{
    int pick = below(10);
    put(t, "(");
    if (pick < 7 || depth <= 0) {
        value_tree(t, depth - 1);
        put(t, comparisons[below(6)]);
        if (below(2))
            literal(t);
        else
            value_tree(t, depth - 1);
    } else if (pick == 7) {
        put(t, "!");
        value_tree(t, depth - 1);
    } else if (pick == 8) {
        condition_tree(t, depth - 1);
        put(t, below(2) ? " && " : " || ");
        value_tree(t, depth - 1);
    } else {
        value_tree(t, depth - 1);
    }
    put(t, ")");
}

static void value_or_literal(text *t, int depth)
{
    if (below(3) == 0)
        literal(t);
    else
        value_tree(t, depth);
}

static void value_tree(text *t, int depth)
{
    int pick = depth <= 0 ? 0 : below(16);
    switch (pick) {
    case 0: case 1: {
        char name[2] = {(char)('a' + below(OPERANDS)), 0};
        put(t, name);
        break;
    }
    case 2: case 3: case 4: case 5:
        put(t, float_casts[below(pick == 5 ? 4 : 2)]);
        put(t, "(");
        value_tree(t, depth - 1);
        put(t, ")");
        break;
    case 6: case 7:
        put(t, integer_casts[below(9)]);
        put(t, "(");
        value_tree(t, depth - 1);
        put(t, ")");
        break;
    case 8: case 9: case 10:
        put(t, "where(");
        condition_tree(t, depth - 1);
        put(t, ", ");
        value_or_literal(t, depth - 1);
        put(t, ", ");
        value_or_literal(t, depth - 1);
        put(t, ")");
        break;
    case 11: case 12:
        put(t, below(2) ? "minimum(" : "maximum(");
        value_tree(t, depth - 1);
        put(t, ", ");
        value_or_literal(t, depth - 1);
        put(t, ")");
        break;
    case 13:
        put(t, below(3) ? "abs(" : "-(");
        value_tree(t, depth - 1);
        put(t, ")");
        break;
    case 14:
        put(t, "(");
        value_tree(t, depth - 1);
        put(t, below(2) ? " + " : " * ");
        value_or_literal(t, depth - 1);
        put(t, ")");
        break;
    default:
        put(t, "where(");
        condition_tree(t, depth - 1);
        put(t, ", ");
        literal(t);
        put(t, ", ");
        value_tree(t, depth - 1);
        put(t, ")");
        break;
    }
}

/* ---- operands: every dtype, edge values ----------------------------------- */

static const int64_t integer_edges[] = {
    0, 1, -1, 2, 3, -2, -3, 5, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769,
    65535, 65536, 2147483647, -2147483647 - 1, 4294967295, 16777217, -16777217,
    9007199254740993, -9007199254740993, INT64_MIN, INT64_MAX, -1 /* UINT64_MAX as u64 */};

static double float_edge(int k)
{
    static const double edges[] = {0.0, -0.0, 2.0, 2.5, -2.5, -3.0, 127.5, 128.0, -128.5,
                                   255.5, 1e30, -1e30, 16777217.0, 9007199254740993.0,
                                   1e-40, 3.0, -1.0, 65504.0, 300.0, -0.5};
    if (k == 0)
        return NAN;
    if (k == 1)
        return INFINITY;
    if (k == 2)
        return -INFINITY;
    k -= 3;
    if (k < (int)(sizeof edges / sizeof edges[0]))
        return edges[k];
    /* integers, mostly small, and fractions */
    double v = (double)(below(600) - 300);
    return below(3) ? v : v + (double)below(8) / 8.0;
}

static void fill(void *data, bcg_dtype t)
{
    size_t edge_count = sizeof integer_edges / sizeof integer_edges[0];
    for (int i = 0; i < LENGTH; i++) {
        int64_t v = i < (int)edge_count ? integer_edges[i]
                    : below(2) ? (int64_t)below(600) - 300 : (int64_t)next_random();
        if (t == BCG_U64 && i == (int)edge_count - 1)
            v = -1;
        double f = float_edge(i < 30 ? i : 30 + below(40));
        switch (t) {
        case BCG_BOOL: ((uint8_t *)data)[i] = (uint8_t)(v & 1); break;
        case BCG_I8: ((int8_t *)data)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
        case BCG_U8: ((uint8_t *)data)[i] = (uint8_t)(uint64_t)v; break;
        case BCG_I16: ((int16_t *)data)[i] = (int16_t)(uint16_t)(uint64_t)v; break;
        case BCG_U16: ((uint16_t *)data)[i] = (uint16_t)(uint64_t)v; break;
        case BCG_I32: ((int32_t *)data)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
        case BCG_U32: ((uint32_t *)data)[i] = (uint32_t)(uint64_t)v; break;
        case BCG_I64: ((int64_t *)data)[i] = v; break;
        case BCG_U64: ((uint64_t *)data)[i] = (uint64_t)v; break;
        case BCG_F32: ((float *)data)[i] = (float)f; break;
        case BCG_F64: ((double *)data)[i] = f; break;
        case BCG_F16: ((uint16_t *)data)[i] = half_from_double(f); break;
        case BCG_BF16: ((uint16_t *)data)[i] = bfloat_from_float((float)f); break;
        default: break;
        }
    }
}

/* Whether dtype T's results X and Y agree: the same bits; for the JIT,
 * NaN of any payload equals NaN. */
static bool same_results(bcg_dtype t, const void *x, const void *y, bool any_nan)
{
    size_t size = bcg_dtype_size(t);
    for (int i = 0; i < LENGTH; i++) {
        const char *p = (const char *)x + (size_t)i * size, *q = (const char *)y + (size_t)i * size;
        if (memcmp(p, q, size) == 0)
            continue;
        if (any_nan && t == BCG_F64 && isnan(*(const double *)p) && isnan(*(const double *)q))
            continue;
        if (any_nan && t == BCG_F32 && isnan(*(const float *)p) && isnan(*(const float *)q))
            continue;
        if (any_nan && (t == BCG_F16 || t == BCG_BF16)) {
            uint16_t a, b;
            memcpy(&a, p, 2);
            memcpy(&b, q, 2);
            float fa = t == BCG_F16 ? half_to_float(a) : bfloat_to_float(a);
            float fb = t == BCG_F16 ? half_to_float(b) : bfloat_to_float(b);
            if (isnan(fa) && isnan(fb))
                continue;
        }
        return false;
    }
    return true;
}

/* Whether any node of N computes in a float type. */
static bool has_float(const expr_node *n)
{
    if (dtype_kind_of(n->dtype) == KIND_FLOAT && n->op != OP_LITERAL)
        return true;
    for (int k = 0; k < n->arg_count; k++)
        if (has_float(n->args[k]))
            return true;
    return false;
}

static void test_narrow_differential(void **state)
{
    (void)state;
    rng_state = 0x6e6172726f77ULL;
    long fired[NARROW_RULE_COUNT] = {0};
    int cases = 0, narrowed = 0, jit_cases = 0, float_free = 0;
    static const bcg_dtype dtypes[] = {BCG_BOOL, BCG_I8, BCG_I16, BCG_I32, BCG_I64,
                                       BCG_U8, BCG_U16, BCG_U32, BCG_U64, BCG_F32,
                                       BCG_F64, BCG_F16, BCG_BF16, BCG_I8, BCG_U8, BCG_I16};
    static char inputs[OPERANDS][LENGTH * 8], outputs[4][LENGTH * 8];
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    for (int tree = 0; tree < TREES; tree++) {
        text t = {{0}, 0};
        value_tree(&t, 2 + below(3));
        int64_t shape[] = {LENGTH};
        bcg_operand ops[OPERANDS];
        for (int k = 0; k < OPERANDS; k++) {
            bcg_dtype d = dtypes[below(sizeof dtypes / sizeof dtypes[0])];
            ops[k] = (bcg_operand){k == 0 ? "a" : k == 1 ? "b" : "c", d, 1, shape, NULL};
            fill(inputs[k], d);
        }
        arena *a = arena_new();
        assert_non_null(a);
        compile *c = arena_alloc(a, sizeof *c);
        assert_non_null(c);
        memset(c, 0, sizeof *c);
        bcg_error err;
        error_clear(&err);
        c->arena = a;
        c->err = &err;
        bcg_options options;
        bcg_options_init(&options);
        bcg_status front = compile_front(c, t.s, ops, OPERANDS, &options);
        if (front != BCG_OK) { /* type errors only (front.c folds and narrows too) */
            if (front != BCG_ERR_TYPE) {
                print_error("%s: %s\n", t.s, err.message);
                fail();
            }
            arena_free(a);
            continue;
        }
        cases++;
        const void *in[OPERANDS] = {inputs[0], inputs[1], inputs[2]};
        bcg_dtype out_dtype = c->root->dtype;
        expr_node *written = c->root, *alone, *folded;
        long before[NARROW_RULE_COUNT];
        memcpy(before, fired, sizeof before);
        assert_int_equal(narrow_tree(a, written, &alone, fired, &err), BCG_OK);
        assert_int_equal(fold_tree(a, written, &folded, &err), BCG_OK);
        assert_int_equal(alone->dtype, out_dtype);
        assert_int_equal(folded->dtype, out_dtype);
        narrowed += memcmp(before, fired, sizeof before) != 0;
        float_free += has_float(written) && !has_float(folded);
        assert_int_equal(eval_run(c, outputs[0], in, &err), BCG_OK);
        c->root = alone;
        assert_int_equal(eval_run(c, outputs[1], in, &err), BCG_OK);
        c->root = folded;
        assert_int_equal(eval_run(c, outputs[2], in, &err), BCG_OK);
        c->root = written;
        for (int r = 1; r < 3; r++)
            if (!same_results(out_dtype, outputs[0], outputs[r], false)) {
                print_error("%s: the %s tree differs from the tree as written\n", t.s,
                            r == 1 ? "narrowed" : "folded");
                fail();
            }
        if (tree % JIT_EVERY == 0) {
            bcg_kernel *kernel = NULL;
            if (bcg_compile(ctx, t.s, ops, OPERANDS, NULL, &kernel, &err) != BCG_OK) {
                print_error("%s: %s\n", t.s, err.message);
                fail();
            }
            assert_int_equal(bcg_run(kernel, outputs[3], in, &err), BCG_OK);
            if (!same_results(out_dtype, outputs[0], outputs[3], true)) {
                print_error("%s: the JIT differs from the reference evaluator\n", t.s);
                fail();
            }
            bcg_kernel_free(kernel);
            jit_cases++;
        }
        arena_free(a);
    }
    bcg_context_free(ctx);
    print_message("# %d trees (%d through the JIT), %d narrowed, %d computed in no float type "
                  "after; rules fired: compare-literal %ld, compare-views %ld, decided %ld, "
                  "integer-op %ld, cast %ld, saturate %ld, float-cast %ld, truth %ld\n",
                  cases, jit_cases, narrowed, float_free, fired[NARROW_RULE_COMPARE_LITERAL],
                  fired[NARROW_RULE_COMPARE_VIEWS], fired[NARROW_RULE_DECIDED],
                  fired[NARROW_RULE_INTEGER_OP], fired[NARROW_RULE_CAST],
                  fired[NARROW_RULE_SATURATE], fired[NARROW_RULE_FLOAT_CAST],
                  fired[NARROW_RULE_TRUTH]);
    /* the shares the test is worth something at */
    assert_true(cases >= TREES / 2);
    assert_true(narrowed * 5 >= cases);
    assert_true(float_free * 20 >= cases);
    for (int r = 0; r < NARROW_RULE_COUNT; r++)
        assert_true(fired[r] * 200 >= cases);
}

/* The listed sweep cases: the narrowed tree computes in no float type. */
static void test_narrow_examples(void **state)
{
    (void)state;
    static const struct {
        const char *expr;
        bcg_dtype a, b;
        bool float_left;
    } examples[] = {
        {"maximum((b) * (i8(where(f64(a) > 2.0, 0, f64(a)))), b)", BCG_I8, BCG_I8, false},
        {"i8(maximum(a, f64(a)))", BCG_I32, BCG_I8, false},
        {"u8(where(f32(a) <= -0.5, 7.0, abs(f32(a))))", BCG_I16, BCG_I8, false},
        {"f64(a) > 1e300", BCG_U32, BCG_I8, false},
        {"where(f64(a) != sqrt(-1.0), b, 3)", BCG_I16, BCG_I8, false},
        /* not narrowed: i64 is not exact in f64, -(0) is -0.0, 2.5 no integer */
        {"i32(f64(a) > 2.0)", BCG_I64, BCG_I8, true},
        {"i8(-f64(a))", BCG_I8, BCG_I8, true},
        {"i8(maximum(f64(a), 2.5))", BCG_I8, BCG_I8, true},
    };
    for (size_t e = 0; e < sizeof examples / sizeof examples[0]; e++) {
        int64_t shape[] = {8};
        bcg_operand ops[] = {{"a", examples[e].a, 1, shape, NULL},
                             {"b", examples[e].b, 1, shape, NULL}};
        arena *a = arena_new();
        compile *c = a ? arena_alloc(a, sizeof *c) : NULL;
        assert_non_null(c);
        memset(c, 0, sizeof *c);
        bcg_error err;
        c->arena = a;
        c->err = &err;
        assert_int_equal(compile_front(c, examples[e].expr, ops, 2, NULL), BCG_OK);
        expr_node *folded;
        assert_int_equal(fold_tree(a, c->root, &folded, &err), BCG_OK);
        if (has_float(folded) != examples[e].float_left) {
            print_error("%s: %s float type left\n", examples[e].expr,
                        examples[e].float_left ? "no" : "a");
            fail();
        }
        assert_true(has_float(c->root)); /* the tree as written is kept */
        arena_free(a);
    }
}

/* A comparison narrow.c decides from its range (a bool literal) under float
 * casts: as_type turns the literal back into a float literal, whose value
 * is value.f (it was value.i, read as the double with bits 1:
 * clip(0, f16(0.0 <= (a < a)), a) gave 0 for 1, fuzz-diff seed 7101).
 * Each tree as written, narrowed, folded and through the JIT agree. */
static void test_narrow_decided_floats(void **state)
{
    (void)state;
    static const char *const exprs[] = {
        "clip(0, f16(0.0 <= (a < a)), b)",
        "clip(0, f16((a < a) >= 0.0), b)",
        "f32(f16(0.0 <= (a < a)))",
        "f64(bf16(1.0 > (b < b))) + b",
        "maximum(f32(f16((a < a) < 2.0)), b)",
        "where(a > 0, f64(f32(u8(a) >= 0.0)), 3.5)",
        "clip((i32(b) & i32(b + b)), f16((1 % 0.5) <= (b < b)), b)",
    };
    static const bcg_dtype dtypes[] = {BCG_F32, BCG_F64, BCG_F16, BCG_BF16, BCG_I8, BCG_U16};
    static char inputs[2][LENGTH * 8], outputs[4][LENGTH * 8];
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    rng_state = 0x64656369646564ULL;
    int checked = 0;
    for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
        for (size_t da = 0; da < sizeof dtypes / sizeof dtypes[0]; da++)
            for (size_t db = 0; db < sizeof dtypes / sizeof dtypes[0]; db++) {
                int64_t shape[] = {LENGTH};
                bcg_operand ops[] = {{"a", dtypes[da], 1, shape, NULL},
                                     {"b", dtypes[db], 1, shape, NULL}};
                fill(inputs[0], dtypes[da]);
                fill(inputs[1], dtypes[db]);
                arena *a = arena_new();
                compile *c = a ? arena_alloc(a, sizeof *c) : NULL;
                assert_non_null(c);
                memset(c, 0, sizeof *c);
                bcg_error err;
                error_clear(&err);
                c->arena = a;
                c->err = &err;
                if (compile_front(c, exprs[e], ops, 2, NULL) != BCG_OK) {
                    arena_free(a);
                    continue;
                }
                const void *in[] = {inputs[0], inputs[1]};
                bcg_dtype out_dtype = c->root->dtype;
                expr_node *written = c->root, *alone, *folded;
                assert_int_equal(narrow_tree(a, written, &alone, NULL, &err), BCG_OK);
                assert_int_equal(fold_tree(a, written, &folded, &err), BCG_OK);
                assert_int_equal(eval_run(c, outputs[0], in, &err), BCG_OK);
                c->root = alone;
                assert_int_equal(eval_run(c, outputs[1], in, &err), BCG_OK);
                c->root = folded;
                assert_int_equal(eval_run(c, outputs[2], in, &err), BCG_OK);
                c->root = written;
                bcg_kernel *kernel = NULL;
                assert_int_equal(bcg_compile(ctx, exprs[e], ops, 2, NULL, &kernel, &err), BCG_OK);
                assert_int_equal(bcg_run(kernel, outputs[3], in, &err), BCG_OK);
                bcg_kernel_free(kernel);
                for (int r = 1; r < 4; r++)
                    if (!same_results(out_dtype, outputs[0], outputs[r], r == 3)) {
                        print_error("%s (a %s, b %s): the %s differs from the tree as written\n",
                                    exprs[e], bcg_dtype_name(dtypes[da]),
                                    bcg_dtype_name(dtypes[db]),
                                    r == 1 ? "narrowed tree" : r == 2 ? "folded tree" : "JIT");
                        fail();
                    }
                checked++;
                arena_free(a);
            }
    bcg_context_free(ctx);
    assert_true(checked >= 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_narrow_examples),
        cmocka_unit_test(test_narrow_differential),
        cmocka_unit_test(test_narrow_decided_floats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
