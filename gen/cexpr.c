/* cexpr.c - the C text of one value of the kernel IR: operators,
 * conversions, literals, helper and libm calls, with the positions and
 * offsets of the statement being written.
 *
 * Values: every emitted C expression holds a value in range for the dtype
 * of its node; bool values are ints that are exactly 0 or 1 (read from
 * memory as `!= 0`) in the JIT form, and C99 bools in the AOT form (see
 * "essential types" below).  Integer arithmetic wraps in an unsigned type and is
 * converted back; everything that could be undefined in C (division,
 * remainder, shifts, float to integer, pow) goes through the total helpers
 * in ops.c.tmpl, whose use is recorded in the printer's `need` so only the
 * helpers used are rendered.  Integer literals compared against something
 * are bound to const locals by lower.c, and integer comparisons of a value
 * with itself are folded there, so that compilers do not warn about
 * comparisons they can decide (-Wtype-limits, -Wbool-compare,
 * -Wtautological-compare).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cprint.h"

/* ORDER HELPER */
const char *const helper_lists[HELPER_COUNT] = {
    "from_bits", "to_int", "to_int_f32", "abs_int", "floordiv_int", "mod_int", "floordiv_float",
    "mod_float", "pow_int", "shl", "shr", "minimum", "maximum", "neg_float", "signbit_float",
    "sign", "square", "reciprocal", "deg2rad", "rad2deg", "expit", "logaddexp", "logaddexp2",
    "add_sat", "sub_sat", "mul_q", "add_sat_pair", "sub_sat_pair",
    "half_load", "half_store", "half_round", "half_round_f64",
    "lanes", "add_wrap", "sub_wrap", "mul_wrap", "neg_wrap", "not_wrap",
    "load_bool", "select", "and_bool", "or_bool",
};

static const struct {
    const char *name;
    int arity;
} own_math_functions[MATH_COUNT - OP_COUNT] = {
    {"fabs", 1}, {"fmod", 2}, {"pow", 2}, {"copysign", 2},
};

const char *math_name(math_function f)
{
    return f < OP_COUNT ? op_table[f].math : own_math_functions[f - OP_COUNT].name;
}

int math_arity(math_function f)
{
    return f < OP_COUNT ? op_table[f].arity : own_math_functions[f - OP_COUNT].arity;
}

void cprint_fail_nomem(cprinter *e)
{
    if (e->status == BCG_OK)
        e->status = fail(e->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
}

const char *cprint_copy(cprinter *e, const char *text)
{
    const char *copy = arena_strndup(e->arena, text ? text : "", text ? strlen(text) : 0);
    if (!copy)
        cprint_fail_nomem(e);
    return copy;
}

static const char *op_label(expr_op op)
{
    return kir_op_symbol(op) ? kir_op_symbol(op) : "this operator";
}

static void fail_internal(cprinter *e, const char *what, const expr_node *n)
{
    if (e->status == BCG_OK)
        e->status = fail_at(e->err, BCG_ERR_TYPE, n ? n->column : 0, -1, -1,
                            "cannot emit %s for %s operands", what,
                            n ? bcg_dtype_name(expr_operation_type(n)) : "these");
}

static bool is_float(bcg_dtype t) { return dtype_kind_of(t) == KIND_FLOAT; }
static bool is_signed(bcg_dtype t) { return dtype_kind_of(t) == KIND_INT; }
static bool is_comparison(expr_op op) { return op >= OP_EQ && op <= OP_GE; } /* ORDER OP */

const char *cexpr_value_ctype(bcg_dtype t)
{
    return t == BCG_BOOL ? "int" : dtype_is_half(t) ? "float" : dtype_ctype(t);
}

/* ---- essential types (the AOT form) -----------------------------------------
 *
 * The AOT form is checked against MISRA C:2012 (tests/aot/test_misra.py),
 * whose essential-type rules (10.1 to 10.8) want every operator to see
 * operands of one essential type category and no composite expression cast
 * to another category.  So there, and only there (the JIT form keeps the
 * spellings libtcc was tested with): bool values are C99's bool, combined
 * with && || != and ! (both sides are free of side effects, so they give
 * what & | ^ give); a literal is spelled in the type of the value it meets
 * (1U, 0.0F, true); a test for non-zero compares with a zero of the value's
 * type; and the wrapping + - * unary - and ~ of signed types go through the
 * bcg_<op>_wrap_<dtype> helpers, whose bodies hold the unsigned result as a
 * value of its own before converting it (rule 10.8). */
static bool essential(const cprinter *e) { return e->c && e->c->aot; }

const char *cexpr_local_ctype(const cprinter *e, bcg_dtype t)
{
    return t == BCG_BOOL && essential(e) ? "bool" : cexpr_value_ctype(t);
}

/* The zero of a value of dtype T (its computed type): "0" in the JIT form. */
static const char *zero_of(const cprinter *e, bcg_dtype t)
{
    if (!essential(e))
        return "0";
    switch (dtype_kind_of(dtype_compute(t))) {
    case KIND_BOOL: return "false";
    case KIND_UINT: return t == BCG_U64 ? "0ULL" : "0U";
    case KIND_FLOAT: return t == BCG_F64 ? "0.0" : "0.0F";
    default: return t == BCG_I64 ? "0LL" : "0";
    }
}

/* The operator that combines two bool values as SYMBOL (& | ^) does. */
static const char *bool_symbol(const cprinter *e, const char *symbol)
{
    if (!essential(e) || symbol[1] != 0)
        return symbol;
    return symbol[0] == '&' ? "&&" : symbol[0] == '|' ? "||" : symbol[0] == '^' ? "!=" : symbol;
}

/* ---- f16 and bf16 ----------------------------------------------------------
 *
 * A value of these types is a float holding a value of the type: loads
 * widen the bits (bcg_load_f16), every operation is computed in float and
 * rounded to the type (bcg_round_f16; NumPy's float16 rule), stores narrow
 * to the bits (bcg_store_f16), exactly since the value is already of the
 * type.  The helpers are portable bit manipulation (templates/ops.c.tmpl):
 * libtcc has no _Float16. */

void cexpr_need_half(cprinter *e, helper h, bcg_dtype t)
{
    e->need[h][t] = true;
    if (h == HELPER_HALF_ROUND) {
        e->need[HELPER_HALF_LOAD][t] = true;
        e->need[HELPER_HALF_STORE][t] = true;
    } else if (h == HELPER_HALF_ROUND_F64) {
        e->need[HELPER_HALF_LOAD][t] = true;
    }
}

void cexpr_store_open(cprinter *e, strbuf *sb, bcg_dtype t)
{
    if (!dtype_is_half(t))
        return;
    cexpr_need_half(e, HELPER_HALF_STORE, t);
    sb_printf(sb, "bcg_store_%s(", bcg_dtype_name(t));
}

void cexpr_store_close(strbuf *sb, bcg_dtype t)
{
    if (dtype_is_half(t))
        sb_putc(sb, ')');
}

/* "bcg_round_f16(" (a float to the nearest f16 value), closed by ")". */
static void round_open(cprinter *e, strbuf *sb, bcg_dtype t)
{
    cexpr_need_half(e, HELPER_HALF_ROUND, t);
    sb_printf(sb, "bcg_round_%s(", bcg_dtype_name(t));
}

const char *cexpr_wide_unsigned(bcg_dtype t)
{
    return dtype_bits(t) > 32 ? "unsigned long long" : "unsigned int";
}

/* The C type's own arithmetic already wraps in T: no casts needed. */
static bool wraps_natively(bcg_dtype t) { return t == BCG_U32 || t == BCG_U64; }

static void put_node(cprinter *e, strbuf *sb, int id);


static void put_offset(cprinter *e, strbuf *sb, int k)
{
    long long constant = (long long)e->offset[k];
    if (e->use_position && e->ir->has_position[k]) {
        if (k == 0)
            sb_puts(sb, "out_pos");
        else
            sb_printf(sb, "in%d_pos", k - 1);
        if (constant > 0)
            sb_printf(sb, " + %lld", constant);
        else if (constant < 0)
            sb_printf(sb, " - %llu", 0ULL - (unsigned long long)constant);
    } else {
        sb_printf(sb, "%lld", constant);
    }
}

/* libtcc 0.9.27 does not zero-extend a signed char converted to unsigned
 * short ((unsigned short)(signed char)-1 reads back as -1 once promoted), so
 * conversions from signed integers to u8 and u16 are masked explicitly. */
static bool narrow_unsigned_from_signed(bcg_dtype from, bcg_dtype to)
{
    return (to == BCG_U8 || to == BCG_U16) && dtype_kind_of(from) == KIND_INT;
}

/* C text around a value of dtype FROM that makes it a value of dtype TO. */
static void convert_open(cprinter *e, strbuf *sb, bcg_dtype from, bcg_dtype to)
{
    if (from == to)
        return;
    if (dtype_is_half(to) && to != BCG_BOOL) {
        /* f64 to f16 rounds once (NumPy's npy_double_to_half); everything
         * else through float, as NumPy's casts to float16 do (integers are
         * exact in float up to 2^24, and larger ones overflow f16) */
        if (from == BCG_F64 && to == BCG_F16) {
            cexpr_need_half(e, HELPER_HALF_ROUND_F64, to);
            sb_puts(sb, "bcg_round_f16_f64(");
        } else {
            round_open(e, sb, to);
            sb_puts(sb, "(float)(");
        }
        return;
    }
    from = dtype_compute(from); /* an f16 or bf16 value is a float */
    if (from == to)
        return;
    if (to == BCG_BOOL) {
        sb_putc(sb, '(');
    } else if (is_float(from) && !is_float(to)) {
        /* f32 converts in float: an f32 kernel does no double arithmetic */
        e->need[from == BCG_F32 ? HELPER_TO_INT_F32 : HELPER_TO_INT][to] = true;
        sb_printf(sb, from == BCG_F32 ? "bcg_to_%s_f32(" : "bcg_to_%s(", bcg_dtype_name(to));
    } else if (narrow_unsigned_from_signed(from, to)) {
        sb_printf(sb, "(%s)((unsigned int)(", dtype_ctype(to));
    } else {
        sb_printf(sb, "(%s)", dtype_ctype(to));
    }
}

static void convert_close_in(const cprinter *e, strbuf *sb, bcg_dtype from, bcg_dtype to);

static void convert_close(strbuf *sb, bcg_dtype from, bcg_dtype to)
{
    convert_close_in(NULL, sb, from, to);
}

/* convert_close, in the printer's form (E NULL: the JIT form). */
static void convert_close_in(const cprinter *e, strbuf *sb, bcg_dtype from, bcg_dtype to)
{
    if (from == to)
        return;
    if (dtype_is_half(to)) {
        sb_puts(sb, from == BCG_F64 && to == BCG_F16 ? ")" : "))");
        return;
    }
    from = dtype_compute(from);
    if (from == to)
        return;
    if (to == BCG_BOOL)
        sb_printf(sb, " != %s)", e ? zero_of(e, from) : "0");
    else if (narrow_unsigned_from_signed(from, to))
        sb_puts(sb, to == BCG_U8 ? ") & 0xFFu)" : ") & 0xFFFFu)");
    else if (is_float(from) && !is_float(to))
        sb_putc(sb, ')');
}

/* The value of node ID as a value of dtype WANT. */
static void put_as(cprinter *e, strbuf *sb, int id, bcg_dtype want)
{
    const expr_node *n = e->ir->nodes[id];
    convert_open(e, sb, n->dtype, want);
    if (e->ir->value[id].local)
        sb_puts(sb, e->ir->value[id].local);
    else
        put_node(e, sb, id);
    convert_close_in(e, sb, n->dtype, want);
}

static void put_literal(cprinter *e, strbuf *sb, const expr_node *n)
{
    char buf[64];
    bcg_dtype t = n->dtype;
    switch (dtype_kind_of(t)) {
    case KIND_BOOL:
        if (essential(e))
            sb_puts(sb, n->value.i ? "true" : "false");
        else
            sb_puts(sb, n->value.i ? "1" : "0");
        return;
    case KIND_INT: {
        long long v = (long long)n->value.i;
        const char *suffix = t == BCG_I64 ? "LL" : "";
        if (t == BCG_I64 && v == LLONG_MIN)
            sb_puts(sb, "((-9223372036854775807LL) - 1)");
        else if (t == BCG_I32 && v == INT_MIN)
            sb_puts(sb, "((-2147483647) - 1)");
        else if (v < 0)
            sb_printf(sb, "(%lld%s)", v, suffix);
        else
            sb_printf(sb, "%lld%s", v, suffix);
        return;
    }
    case KIND_UINT:
        sb_printf(sb, "%llu%s", (unsigned long long)n->value.u,
                  t == BCG_U64 ? "ULL" : t == BCG_U32 || essential(e) ? "U" : "");
        return;
    case KIND_FLOAT:
        break;
    }
    /* an f16 or bf16 literal is the float of its value */
    bool single = t != BCG_F64;
    double v = dtype_round_float(t, n->value.f);
    t = dtype_compute(t);
    if (isnan(v) || isinf(v)) {
        /* no literal spells these; rebuild them from their bits */
        e->need[HELPER_FROM_BITS][t] = true;
        if (single) {
            float f = (float)v;
            uint32_t bits;
            memcpy(&bits, &f, sizeof bits);
            sb_printf(sb, "bcg_f32_from_bits(0x%08xU)", (unsigned)bits);
        } else {
            uint64_t bits;
            memcpy(&bits, &v, sizeof bits);
            sb_printf(sb, "bcg_f64_from_bits(0x%016llxULL)", (unsigned long long)bits);
        }
        return;
    }
    kir_format_float(buf, sizeof buf, v, single);
    sb_printf(sb, signbit(v) ? "(%s%s)" : "%s%s", buf, single ? "f" : "");
}

static void put_call1(cprinter *e, strbuf *sb, const char *function, int a, bcg_dtype t)
{
    sb_printf(sb, "%s(", function);
    put_as(e, sb, a, t);
    sb_putc(sb, ')');
}

static void put_call2(cprinter *e, strbuf *sb, const char *function, int a, int b, bcg_dtype t)
{
    sb_printf(sb, "%s(", function);
    put_as(e, sb, a, t);
    sb_puts(sb, ", ");
    put_as(e, sb, b, t);
    sb_putc(sb, ')');
}

/* A call of helper family H instantiated for T: "bcg_<name>_<dtype>". */
static const char *helper_name(cprinter *e, helper h, const char *name, bcg_dtype t, char *buf,
                               size_t cap)
{
    e->need[h][t] = true;
    snprintf(buf, cap, "bcg_%s_%s", name, bcg_dtype_name(t));
    return buf;
}

static bool loads_beyond(const cprinter *e, int a, int b);

/* The AOT form's && or || of two bools whose right side reads an operand
 * the left does not (loads_beyond): bcg_and_bool(x, y) or
 * bcg_or_bool(x, y), the calls put_select's note asks for (gcc 12.2 -O3
 * -mavx2 also miscompiles `c || y[j]` with c read backwards: the right side
 * is a conditional load).  Both sides are bools free of side effects, so
 * evaluating both is what the operator gives. */
static void put_logic_call(cprinter *e, strbuf *sb, int a, const char *symbol, int b)
{
    char name[40];
    bool and = symbol[0] == '&';
    sb_puts(sb, helper_name(e, and ? HELPER_AND_BOOL : HELPER_OR_BOOL, and ? "and" : "or",
                            BCG_BOOL, name, sizeof name));
    sb_putc(sb, '(');
    put_as(e, sb, a, BCG_BOOL);
    sb_puts(sb, ", ");
    put_as(e, sb, b, BCG_BOOL);
    sb_putc(sb, ')');
}

static void put_infix(cprinter *e, strbuf *sb, int a, const char *symbol, int b, bcg_dtype t)
{
    if (t == BCG_BOOL && essential(e) && (symbol[0] == '&' || symbol[0] == '|') && !symbol[1] &&
        loads_beyond(e, a, b)) {
        put_logic_call(e, sb, a, symbol, b);
        return;
    }
    sb_putc(sb, '(');
    if (t == BCG_BOOL && essential(e))
        symbol = bool_symbol(e, symbol);
    /* clang's -Wbitwise-instead-of-logical flags `x != 0 & f(y) != 0`; an
     * explicit int on the left says the bitwise operator is meant. */
    else if (t == BCG_BOOL && (symbol[0] == '&' || symbol[0] == '|') && symbol[1] == 0)
        sb_puts(sb, "(int)");
    put_as(e, sb, a, t);
    sb_printf(sb, " %s ", symbol);
    put_as(e, sb, b, t);
    sb_putc(sb, ')');
}

/* Whether node ID is a + - * or unary - computed in T (with T as its
 * result) and written out in place, so that a parent wrapping in the same T
 * can take its wide unsigned value: arithmetic modulo 2^n does not need the
 * narrowing in between. */
static bool wraps_inline(const cprinter *e, int id, bcg_dtype t)
{
    const expr_node *n = e->ir->nodes[id];
    if (essential(e) && is_signed(t)) /* each operation its own helper call */
        return false;
    return !e->ir->value[id].local && n->dtype == t &&
           (n->op == OP_ADD || n->op == OP_SUB || n->op == OP_MUL || n->op == OP_NEG) &&
           expr_operation_type(n) == t;
}

static void put_wide_operand(cprinter *e, strbuf *sb, int id, bcg_dtype t);

/* The wide unsigned value "(W)a op (W)b" of a wrapping node, unparenthesised. */
static void put_wide_expression(cprinter *e, strbuf *sb, int id, bcg_dtype t)
{
    const expr_node *n = e->ir->nodes[id];
    int a = kir_child(e->ir, id, 0);
    if (n->op == OP_NEG) {
        sb_puts(sb, "0U - ");
        put_wide_operand(e, sb, a, t);
        return;
    }
    put_wide_operand(e, sb, a, t);
    sb_printf(sb, " %s ", kir_op_symbol(n->op));
    put_wide_operand(e, sb, kir_child(e->ir, id, 1), t);
}

static void put_wide_operand(cprinter *e, strbuf *sb, int id, bcg_dtype t)
{
    if (wraps_inline(e, id, t)) {
        sb_putc(sb, '(');
        put_wide_expression(e, sb, id, t);
        sb_putc(sb, ')');
        return;
    }
    sb_printf(sb, "(%s)", cexpr_wide_unsigned(t));
    put_as(e, sb, id, t);
}

/* Integer + - * and unary - wrapping in T: "(T)((W)a op (W)b)". */
static void put_wrapping(cprinter *e, strbuf *sb, int id, bcg_dtype t)
{
    const expr_node *n = e->ir->nodes[id];
    if (wraps_natively(t)) {
        if (n->op == OP_NEG) {
            sb_puts(sb, "(0U - ");
            put_as(e, sb, kir_child(e->ir, id, 0), t);
            sb_putc(sb, ')');
        } else {
            put_infix(e, sb, kir_child(e->ir, id, 0), kir_op_symbol(n->op), kir_child(e->ir, id, 1), t);
        }
        return;
    }
    if (essential(e) && is_signed(t)) { /* bcg_add_wrap_i8 ...: ops.c.tmpl */
        static const struct {
            expr_op op;
            helper family;
            const char *name;
        } wrap[] = {
            {OP_ADD, HELPER_ADD_WRAP, "add_wrap"},
            {OP_SUB, HELPER_SUB_WRAP, "sub_wrap"},
            {OP_MUL, HELPER_MUL_WRAP, "mul_wrap"},
            {OP_NEG, HELPER_NEG_WRAP, "neg_wrap"},
        };
        char name[40];
        for (size_t k = 0; k < sizeof wrap / sizeof wrap[0]; k++) {
            if (wrap[k].op != n->op)
                continue;
            helper_name(e, wrap[k].family, wrap[k].name, t, name, sizeof name);
            if (n->op == OP_NEG)
                put_call1(e, sb, name, kir_child(e->ir, id, 0), t);
            else
                put_call2(e, sb, name, kir_child(e->ir, id, 0), kir_child(e->ir, id, 1), t);
            return;
        }
    }
    sb_printf(sb, "(%s)(", dtype_ctype(t));
    put_wide_expression(e, sb, id, t);
    sb_putc(sb, ')');
}

static void put_float_function(cprinter *e, strbuf *sb, math_function f, int a, bcg_dtype t)
{
    if (dtype_is_half(t)) { /* in float, rounded */
        round_open(e, sb, t);
        put_float_function(e, sb, f, a, BCG_F32);
        sb_putc(sb, ')');
        return;
    }
    bool single = t == BCG_F32;
    /* AOT --math double: the f32 transcendental functions in double, rounded once */
    if (single && e->c->aot && e->c->aot->math_double && f < OP_COUNT &&
        op_table[f].transcendental) {
        e->need_math[f][0] = true;
        sb_puts(sb, "(float)");
        put_call1(e, sb, math_name(f), a, BCG_F64);
        return;
    }
    e->need_math[f][single] = true;
    char name[24];
    snprintf(name, sizeof name, "%s%s", math_name(f), single ? "f" : "");
    put_call1(e, sb, name, a, t);
}

/* An OWN function of ops.h (deg2rad ... logaddexp2) of node ID in T: its
 * helper in ops.c.tmpl, with the C library functions the helper calls
 * declared.  AOT --math double computes the transcendental ones for f32 in
 * double, rounded once, as put_float_function does. */
static void put_own_function(cprinter *e, strbuf *sb, int id, bcg_dtype t)
{
    static const struct {
        expr_op op;
        helper family;
        const char *name;
        math_function calls[2];
    } own[] = {
        {OP_DEG2RAD, HELPER_DEG2RAD, "deg2rad", {-1, -1}},
        {OP_RAD2DEG, HELPER_RAD2DEG, "rad2deg", {-1, -1}},
        {OP_EXPIT, HELPER_EXPIT, "expit", {OP_EXP, -1}},
        {OP_LOGADDEXP, HELPER_LOGADDEXP, "logaddexp", {OP_EXP, OP_LOG1P}},
        {OP_LOGADDEXP2, HELPER_LOGADDEXP2, "logaddexp2", {OP_EXP2, OP_LOG1P}},
    };
    const expr_node *n = e->ir->nodes[id];
    size_t k = 0;
    while (k < sizeof own / sizeof own[0] && own[k].op != n->op)
        k++;
    if (k == sizeof own / sizeof own[0] || !is_float(t)) {
        fail_internal(e, op_label(n->op), n);
        return;
    }
    bcg_dtype in = t;
    if (t == BCG_F32 && e->c->aot && e->c->aot->math_double && op_table[n->op].transcendental) {
        in = BCG_F64;
        sb_puts(sb, "(float)");
    }
    for (int c = 0; c < 2; c++)
        if (own[k].calls[c] >= 0)
            e->need_math[own[k].calls[c]][in == BCG_F32] = true;
    char name[40];
    helper_name(e, own[k].family, own[k].name, in, name, sizeof name);
    if (n->arg_count == 2)
        put_call2(e, sb, name, kir_child(e->ir, id, 0), kir_child(e->ir, id, 1), in);
    else
        put_call1(e, sb, name, kir_child(e->ir, id, 0), in);
}

/* minimum / maximum in T; bool uses & and |.  (clip never reaches the
 * printer: fold.c writes it as minimum(maximum(x, lo), hi).) */
static void put_extreme(cprinter *e, strbuf *sb, expr_op op, int a, int b, bcg_dtype t)
{
    char name[40];
    if (t == BCG_BOOL) {
        put_infix(e, sb, a, op == OP_MINIMUM ? "&" : "|", b, t);
        return;
    }
    helper_name(e, op == OP_MINIMUM ? HELPER_MINIMUM : HELPER_MAXIMUM,
                op == OP_MINIMUM ? "minimum" : "maximum", t, name, sizeof name);
    put_call2(e, sb, name, a, b, t);
}

/* Node ID computed in its operation type T, giving a value of dtype T. */
static void put_computed(cprinter *e, strbuf *sb, int id, bcg_dtype t)
{
    const expr_node *n = e->ir->nodes[id];
    int a = n->arg_count > 0 ? kir_child(e->ir, id, 0) : -1;
    int b = n->arg_count > 1 ? kir_child(e->ir, id, 1) : -1;
    char name[40];

    if (dtype_is_half(t)) {
        /* f16 and bf16: computed in float (the arguments, values of T, are
         * floats already), then rounded to T, except where the result is
         * one of the arguments or its negation and so already of T */
        bool exact = n->op == OP_POS || n->op == OP_NEG || n->op == OP_ABS ||
                     n->op == OP_MINIMUM || n->op == OP_MAXIMUM;
        if (!exact)
            round_open(e, sb, t);
        put_computed(e, sb, id, BCG_F32);
        if (!exact)
            sb_putc(sb, ')');
        return;
    }

    if (t == BCG_BOOL) {
        /* bool arithmetic is the u8 arithmetic's result tested for non-zero
         * (as eval.c's from_bits), with the usual spellings where they exist */
        switch (n->op) {
        case OP_POS: case OP_ABS: put_as(e, sb, a, t); return;
        case OP_BITNOT:
            sb_puts(sb, essential(e) ? "(!" : "(");
            put_as(e, sb, a, t);
            sb_puts(sb, essential(e) ? ")" : " ^ 1)");
            return;
        case OP_ADD: case OP_BITOR: put_infix(e, sb, a, "|", b, t); return;
        case OP_MUL: case OP_BITAND: put_infix(e, sb, a, "&", b, t); return;
        case OP_SUB: case OP_BITXOR: put_infix(e, sb, a, "^", b, t); return;
        case OP_MINIMUM: case OP_MAXIMUM: put_extreme(e, sb, n->op, a, b, t); return;
        default:
            if (op_table[n->op].math)
                break;
            sb_putc(sb, '(');
            put_computed(e, sb, id, BCG_U8);
            sb_printf(sb, " != %s)", zero_of(e, BCG_U8));
            return;
        }
    }

    switch (n->op) {
    case OP_POS:
        put_as(e, sb, a, t);
        return;
    case OP_NEG:
        if (is_float(t) && e->c->microkernels) {
            /* libtcc computes -x as a multiplication, which quiets a
             * signaling NaN and keeps a NaN's sign (then pow(1, -x) was 1
             * where the reference and NumPy give NaN): IEEE negation, the
             * sign bit flipped, through a helper in the JIT form */
            char name[40];
            put_call1(e, sb, helper_name(e, HELPER_NEG_FLOAT, "neg", t, name, sizeof name), a, t);
        } else if (is_float(t)) {
            sb_puts(sb, "(-");
            put_as(e, sb, a, t);
            sb_putc(sb, ')');
        } else {
            put_wrapping(e, sb, id, t);
        }
        return;
    case OP_BITNOT:
        if (is_float(t))
            break;
        if (essential(e) && is_signed(t)) {
            put_call1(e, sb, helper_name(e, HELPER_NOT_WRAP, "not_wrap", t, name, sizeof name),
                      a, t);
            return;
        }
        if (wraps_natively(t) && !is_signed(t) && e->c->microkernels) {
            /* libtcc converted ~(unsigned)(c ? 1 : x < y) to double as
             * if signed (-2 for 4294967294: fuzz-diff seed 6262): the
             * result cast to its type again in the JIT form */
            sb_printf(sb, "((%s)~", dtype_ctype(t));
        } else if (wraps_natively(t)) {
            sb_puts(sb, "(~");
        } else {
            sb_printf(sb, "((%s)~(%s)", dtype_ctype(t), cexpr_wide_unsigned(t));
        }
        put_as(e, sb, a, t);
        sb_putc(sb, ')');
        return;
    case OP_ADD: case OP_SUB: case OP_MUL: {
        const char *symbol = kir_op_symbol(n->op);
        if (is_float(t))
            put_infix(e, sb, a, symbol, b, t);
        else
            put_wrapping(e, sb, id, t);
        return;
    }
    case OP_DIV:
        if (is_float(t)) {
            put_infix(e, sb, a, "/", b, t);
        } else { /* typing gives `/` a float type; be defined anyway, as eval.c */
            convert_open(e, sb, BCG_F64, t);
            put_infix(e, sb, a, "/", b, BCG_F64);
            convert_close_in(e, sb, BCG_F64, t);
        }
        return;
    case OP_FLOORDIV: case OP_MOD: {
        bool floor_divide = n->op == OP_FLOORDIV;
        if (is_float(t)) {
            bool single = t == BCG_F32;
            e->need_math[MATH_FMOD][single] = true;
            e->need_math[MATH_COPYSIGN][single] = true;
            if (floor_divide)
                e->need_math[OP_FLOOR][single] = true;
            helper_name(e, floor_divide ? HELPER_FLOORDIV_FLOAT : HELPER_MOD_FLOAT,
                        floor_divide ? "floordiv" : "mod", t, name, sizeof name);
        } else {
            helper_name(e, floor_divide ? HELPER_FLOORDIV_INT : HELPER_MOD_INT,
                        floor_divide ? "floordiv" : "mod", t, name, sizeof name);
        }
        put_call2(e, sb, name, a, b, t);
        return;
    }
    case OP_POW:
        if (t == BCG_F32 && e->c->aot && !e->c->aot->math_double) {
            /* AOT --math float: powf, so an f32 kernel pulls in no double
             * (software) arithmetic on a single-precision FPU */
            e->need_math[MATH_POW][1] = true;
            put_call2(e, sb, "powf", a, b, t);
        } else if (is_float(t)) {
            /* f32 too goes through double pow and rounds once */
            e->need_math[MATH_POW][0] = true;
            if (t == BCG_F32)
                sb_puts(sb, "(float)");
            put_call2(e, sb, "pow", a, b, t);
        } else {
            put_call2(e, sb, helper_name(e, HELPER_POW_INT, "pow", t, name, sizeof name), a, b, t);
        }
        return;
    case OP_BITAND: case OP_BITOR: case OP_BITXOR:
        if (is_float(t))
            break;
        if (wraps_natively(t)) {
            put_infix(e, sb, a, kir_op_symbol(n->op), b, t);
        } else {
            sb_printf(sb, "(%s)", dtype_ctype(t));
            put_infix(e, sb, a, kir_op_symbol(n->op), b, t);
        }
        return;
    case OP_SHL: case OP_SHR:
        if (is_float(t))
            break;
        helper_name(e, n->op == OP_SHL ? HELPER_SHL : HELPER_SHR, n->op == OP_SHL ? "shl" : "shr",
                    t, name, sizeof name);
        put_call2(e, sb, name, a, b, t);
        return;
    case OP_ABS:
        if (is_float(t))
            put_float_function(e, sb, MATH_FABS, a, t);
        else if (is_signed(t))
            put_call1(e, sb, helper_name(e, HELPER_ABS, "abs", t, name, sizeof name), a, t);
        else
            put_as(e, sb, a, t);
        return;
    case OP_SIGN:
        if (t == BCG_BOOL)
            break;
        put_call1(e, sb, helper_name(e, HELPER_SIGN, "sign", t, name, sizeof name), a, t);
        return;
    case OP_SQUARE:
        put_call1(e, sb, helper_name(e, HELPER_SQUARE, "square", t, name, sizeof name), a, t);
        return;
    case OP_RECIPROCAL:
        put_call1(e, sb, helper_name(e, HELPER_RECIPROCAL, "reciprocal", t, name, sizeof name),
                  a, t);
        return;
    case OP_ROUND:
        if (is_float(t))
            put_float_function(e, sb, OP_RINT, a, t);
        else
            put_as(e, sb, a, t);
        return;
    case OP_MINIMUM: case OP_MAXIMUM:
        put_extreme(e, sb, n->op, a, b, t);
        return;
    case OP_ADD_SAT: case OP_SUB_SAT: /* bcg_add_sat_i16 ...: ops.c.tmpl */
        if (is_float(t) || t == BCG_BOOL)
            break;
        helper_name(e, n->op == OP_ADD_SAT ? HELPER_ADD_SAT : HELPER_SUB_SAT,
                    n->op == OP_ADD_SAT ? "add_sat" : "sub_sat", t, name, sizeof name);
        put_call2(e, sb, name, a, kir_child(e->ir, id, 1), t);
        return;
    case OP_MUL_Q7: case OP_MUL_Q15: case OP_MUL_Q31: { /* bcg_mul_q15 ... */
        if (t != op_fixed_dtype(n->op))
            break;
        e->need[HELPER_MUL_Q][t] = true;
        snprintf(name, sizeof name, "bcg_%s", op_table[n->op].call);
        put_call2(e, sb, name, a, kir_child(e->ir, id, 1), t);
        return;
    }
    default:
        if (op_table[n->op].math2_f64) { /* of two arguments; typing made both T */
            math_function f = (math_function)n->op;
            bool single = t == BCG_F32;
            char name[24];
            if (single && e->c->aot && e->c->aot->math_double && op_table[f].transcendental) {
                e->need_math[f][0] = true;
                sb_puts(sb, "(float)");
                put_call2(e, sb, math_name(f), a, kir_child(e->ir, id, 1), BCG_F64);
                return;
            }
            e->need_math[f][single] = true;
            snprintf(name, sizeof name, "%s%s", math_name(f), single ? "f" : "");
            put_call2(e, sb, name, a, kir_child(e->ir, id, 1), t);
            return;
        }
        if (op_table[n->op].own) {
            put_own_function(e, sb, id, t);
            return;
        }
        if (op_table[n->op].math) { /* a float function of ops.h */
            if (is_float(t)) {
                put_float_function(e, sb, (math_function)n->op, a, t);
            } else { /* typing keeps these on floats; be defined anyway, as eval.c */
                bcg_dtype f = dtype_float_for(t);
                convert_open(e, sb, f, t);
                put_float_function(e, sb, (math_function)n->op, a, f);
                convert_close_in(e, sb, f, t);
            }
            return;
        }
        break;
    }
    fail_internal(e, op_label(n->op), n);
}

/* Comparisons give bool, comparing in the promoted operation type. */
static void put_comparison(cprinter *e, strbuf *sb, int id)
{
    const expr_node *n = e->ir->nodes[id];
    if (e->ir->value[id].folded >= 0) {
        if (essential(e))
            sb_puts(sb, e->ir->value[id].folded ? "true" : "false");
        else
            sb_puts(sb, e->ir->value[id].folded ? "1" : "0");
        return;
    }
    int a = kir_child(e->ir, id, 0), b = kir_child(e->ir, id, 1);
    if (essential(e) && expr_operation_type(n) == BCG_BOOL && n->op != OP_EQ && n->op != OP_NE) {
        /* bools are not ordered in MISRA C (rule 10.1): a > b is a && !b,
         * a >= b is a || !b, and < and <= the same with the sides swapped */
        bool greater = n->op == OP_GT || n->op == OP_GE;
        sb_putc(sb, '(');
        put_as(e, sb, greater ? a : b, BCG_BOOL);
        sb_puts(sb, n->op == OP_GT || n->op == OP_LT ? " && !" : " || !");
        put_as(e, sb, greater ? b : a, BCG_BOOL);
        sb_putc(sb, ')');
        return;
    }
    put_infix(e, sb, a, kir_op_symbol(n->op), b, expr_operation_type(n));
}

/* The operands whose elements value ID's C reads (a value with a local is
 * not computed where it is used), as bits: 1 << operand (fewer than 64). */
static uint64_t loads_of(const cprinter *e, int id)
{
    uint64_t loads = 0;
    for (int j = id; j < id + e->ir->value[id].size;) {
        if (e->ir->value[j].local) {
            j += e->ir->value[j].size;
            continue;
        }
        const expr_node *n = e->ir->nodes[j];
        if (n->op == OP_OPERAND && n->operand < 64)
            loads |= 1ULL << n->operand;
        j++;
    }
    return loads;
}

/* Whether the C of value B reads an operand that the C of value A does not:
 * written after `A ?` or `A &&`, B would hold a load only made when A says
 * so, which gcc 12.2 may get wrong (put_select). */
static bool loads_beyond(const cprinter *e, int a, int b)
{
    return (loads_of(e, b) & ~loads_of(e, a)) != 0;
}

/* where(c, x, y) as bcg_select_T(c, x, y): the plain form (bcg_emit, the
 * cc backend, the AOT form), which gcc compiles.  gcc 12.2 -O3 with AVX2 or
 * AVX-512 vectorises a loop wrongly when a side of a ?: holds a load and the
 * loop body holds two or more such statements (the unrolled groups): the
 * if-converted side becomes a masked load whose lanes come out permuted
 * (tests/gcc/gcc12_masked_load.c; mostly with the condition read backwards,
 * a negative stride, but not only).  As arguments, both sides are loaded
 * unconditionally, there is no masked load, and gcc still vectorises the
 * inlined select with a blend.  Only where a side reads an operand the
 * condition does not (loads_beyond): otherwise the side's loads are the
 * condition's, made anyway, gcc needs no masked load, and the ?: stays
 * (gcc vectorised where(a < b, a * 2, b - 1) on i32 as ?: but not as a
 * select).  Evaluating both sides is defined: every helper is total
 * (ops.c.tmpl) and every operand's element exists for every output
 * element.  The JIT form keeps the ?: libtcc was tested with. */
static void put_select(cprinter *e, strbuf *sb, int id)
{
    const expr_node *n = e->ir->nodes[id];
    char name[40];
    sb_puts(sb, helper_name(e, HELPER_SELECT, "select", n->dtype, name, sizeof name));
    sb_putc(sb, '(');
    put_as(e, sb, kir_child(e->ir, id, 0), BCG_BOOL);
    sb_puts(sb, ", ");
    put_as(e, sb, kir_child(e->ir, id, 1), n->dtype);
    sb_puts(sb, ", ");
    put_as(e, sb, kir_child(e->ir, id, 2), n->dtype);
    sb_putc(sb, ')');
}

/* The value of node ID as a value of its own dtype, ignoring its local. */
static void put_node(cprinter *e, strbuf *sb, int id)
{
    const expr_node *n = e->ir->nodes[id];
    switch (n->op) {
    case OP_OPERAND:
        if (dtype_is_half(n->dtype)) {
            cexpr_need_half(e, HELPER_HALF_LOAD, n->dtype);
            sb_printf(sb, "bcg_load_%s(", bcg_dtype_name(n->dtype));
        }
        if (n->dtype == BCG_BOOL && essential(e)) { /* a call, not a comparison */
            e->need[HELPER_LOAD_BOOL][BCG_BOOL] = true;
            sb_printf(sb, "bcg_load_bool(in%d[", n->operand);
            put_offset(e, sb, n->operand + 1);
            sb_puts(sb, "])");
            return;
        }
        sb_printf(sb, n->dtype == BCG_BOOL ? "(in%d[" : "in%d[", n->operand);
        put_offset(e, sb, n->operand + 1);
        sb_puts(sb, n->dtype == BCG_BOOL ? "] != 0)" : "]");
        if (dtype_is_half(n->dtype))
            sb_putc(sb, ')');
        return;
    case OP_LITERAL:
        put_literal(e, sb, n);
        return;
    case OP_CAST:
        put_as(e, sb, kir_child(e->ir, id, 0), n->dtype);
        return;
    case OP_NOT: {
        int a = kir_child(e->ir, id, 0);
        bcg_dtype at = e->ir->nodes[a]->dtype;
        convert_open(e, sb, BCG_BOOL, n->dtype);
        if (essential(e)) {
            sb_puts(sb, at == BCG_BOOL ? "(!" : "(");
            put_as(e, sb, a, at);
            if (at == BCG_BOOL)
                sb_putc(sb, ')');
            else
                sb_printf(sb, " == %s)", zero_of(e, at));
            convert_close_in(e, sb, BCG_BOOL, n->dtype);
            return;
        }
        sb_putc(sb, '(');
        put_as(e, sb, a, at);
        sb_puts(sb, at == BCG_BOOL ? " ^ 1)" : " == 0)");
        convert_close_in(e, sb, BCG_BOOL, n->dtype);
        return;
    }
    case OP_ISNAN: case OP_ISINF: case OP_ISFINITE: case OP_SIGNBIT: {
        /* tests of the argument as dtype_float_for(x); V is written more
         * than once (kernels have no side effects); & rather than && (see
         * OP_AND below) */
        int a = kir_child(e->ir, id, 0);
        bcg_dtype f = expr_operation_type(n);
        char name[40];
        convert_open(e, sb, BCG_BOOL, n->dtype);
        if (n->op == OP_SIGNBIT) { /* the bit itself: NaN and -0.0 have one */
            put_call1(e, sb, helper_name(e, HELPER_SIGNBIT_FLOAT, "signbit", dtype_compute(f),
                                         name, sizeof name),
                      a, f);
        } else if (n->op == OP_ISNAN) {
            sb_putc(sb, '(');
            put_as(e, sb, a, f);
            sb_puts(sb, " != ");
            put_as(e, sb, a, f);
            sb_putc(sb, ')');
        } else if (n->op == OP_ISFINITE) { /* inf - inf and NaN - NaN are NaN */
            sb_puts(sb, "((");
            put_as(e, sb, a, f);
            sb_puts(sb, ") - (");
            put_as(e, sb, a, f);
            sb_printf(sb, ") == %s)", zero_of(e, f));
        } else { /* isinf: not NaN, and not finite */
            sb_puts(sb, "(((");
            put_as(e, sb, a, f);
            sb_puts(sb, ") == (");
            put_as(e, sb, a, f);
            sb_printf(sb, ")) %s ((", bool_symbol(e, "&"));
            put_as(e, sb, a, f);
            sb_puts(sb, ") - (");
            put_as(e, sb, a, f);
            sb_printf(sb, ") != %s))", zero_of(e, f));
        }
        convert_close_in(e, sb, BCG_BOOL, n->dtype);
        return;
    }
    case OP_LOGICAL_XOR:
        convert_open(e, sb, BCG_BOOL, n->dtype);
        put_infix(e, sb, kir_child(e->ir, id, 0), "^", kir_child(e->ir, id, 1), BCG_BOOL);
        convert_close_in(e, sb, BCG_BOOL, n->dtype);
        return;
    case OP_AND: case OP_OR:
        /* Both sides are bool values, ints that are exactly 0 or 1, and
         * kernels have no side effects, so & and | give what && and || give,
         * without branches.  And libtcc 0.9.27 mistypes the result of && and
         * || (a jump value) once cast to unsigned int: ~(unsigned)(x && y)
         * came out as a signed int (issue 9, found by fuzz_jit_diff). */
        convert_open(e, sb, BCG_BOOL, n->dtype);
        put_infix(e, sb, kir_child(e->ir, id, 0), n->op == OP_AND ? "&" : "|", kir_child(e->ir, id, 1),
                  BCG_BOOL);
        convert_close_in(e, sb, BCG_BOOL, n->dtype);
        return;
    case OP_WHERE: {
        /* (fold.c never leaves c ? 1 : 0 or c ? 0 : 1 here: see there.)  A
         * condition that is not a comparison or a load is compared with 0:
         * libtcc 0.9.27 drops the whole store when a condition it folds to a
         * constant itself (c ? 0 : 0, m && 0, x & 0 ...) is used bare, and
         * `!= 0` keeps it right whatever it folds (tested on libtcc) */
        int c = kir_child(e->ir, id, 0);
        expr_op cop = e->ir->nodes[c]->op;
        if (e->c && !e->c->microkernels && /* the forms gcc compiles: see put_select */
            (loads_beyond(e, c, kir_child(e->ir, id, 1)) ||
             loads_beyond(e, c, kir_child(e->ir, id, 2)))) {
            put_select(e, sb, id);
            return;
        }
        bool guard = !e->ir->value[c].local && cop != OP_OPERAND && !is_comparison(cop) &&
                     !essential(e); /* the AOT form's bool is tested as it is */
        sb_puts(sb, guard ? "((" : "(");
        put_as(e, sb, c, BCG_BOOL);
        sb_puts(sb, guard ? ") != 0 ? " : " ? ");
        put_as(e, sb, kir_child(e->ir, id, 1), n->dtype);
        sb_puts(sb, " : ");
        put_as(e, sb, kir_child(e->ir, id, 2), n->dtype);
        sb_putc(sb, ')');
        return;
    }
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
        convert_open(e, sb, BCG_BOOL, n->dtype);
        put_comparison(e, sb, id);
        convert_close_in(e, sb, BCG_BOOL, n->dtype);
        return;
    default: {
        bcg_dtype t = expr_operation_type(n);
        convert_open(e, sb, t, n->dtype);
        put_computed(e, sb, id, t);
        convert_close_in(e, sb, t, n->dtype);
        return;
    }
    }
}


void cexpr_put_node(cprinter *e, strbuf *sb, int id) { put_node(e, sb, id); }
void cexpr_put_as(cprinter *e, strbuf *sb, int id, bcg_dtype want) { put_as(e, sb, id, want); }
void cexpr_put_literal(cprinter *e, strbuf *sb, const expr_node *n) { put_literal(e, sb, n); }
void cexpr_put_offset(cprinter *e, strbuf *sb, int k) { put_offset(e, sb, k); }
void cexpr_convert_open(cprinter *e, strbuf *sb, bcg_dtype from, bcg_dtype to)
{
    convert_open(e, sb, from, to);
}
void cexpr_convert_close(strbuf *sb, bcg_dtype from, bcg_dtype to) { convert_close(sb, from, to); }
