/* eval.c - the reference evaluator: computes a typed expression tree over an
 * iteration plan with a plain strided loop and no code generation.  It is
 * the oracle the emitted kernels are tested against and the fallback when
 * the JIT fails, so it follows docs/semantics.md literally and favours
 * obviously-defined C over speed: every value is a small tagged union,
 * integer arithmetic is done on uint64_t bit patterns and then narrowed, and
 * nothing here relies on undefined or implementation-defined behaviour
 * (signed overflow, out-of-range float->int conversion, shifts of negative
 * numbers or by the width).
 *
 * Shape of one element's evaluation: the tree is flattened once per call
 * into post-order; each element then runs that program on a value stack.
 * eval_node() computes one operator node from its argument values; it knows
 * nothing of operands, literals or memory.
 */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "internal.h"
#include "../runtime/half.h"

/* One value: signed integers and bool in i (bool as 0/1), unsigned in u,
 * floats in f (an f32 value is held as the double equal to that float). */
typedef struct value {
    bcg_dtype dtype;
    union { int64_t i; uint64_t u; double f; } as;
} value;

/* ---- integers as bit patterns ----------------------------------------- */

/* The two's complement bit pattern of an integer or bool value. */
static uint64_t bits_of(value v)
{
    return dtype_kind_of(v.dtype) == KIND_UINT ? v.as.u : (uint64_t)v.as.i;
}

/* The value of type T (bool or integer) whose low bits are BITS: narrowing
 * keeps the low bits (wraps), bool keeps "non-zero".  The sign extension is
 * spelled out because converting an out-of-range uint64_t to int64_t is
 * implementation-defined. */
static value from_bits(bcg_dtype t, uint64_t bits)
{
    value v = {.dtype = t};
    int width = dtype_bits(t);
    uint64_t mask = width >= 64 ? UINT64_MAX : (UINT64_C(1) << width) - 1;
    switch (dtype_kind_of(t)) {
    case KIND_BOOL:
        v.as.i = bits != 0;
        break;
    case KIND_UINT:
        v.as.u = bits & mask;
        break;
    case KIND_INT: {
        uint64_t low = bits & mask;
        uint64_t sign = UINT64_C(1) << (width - 1);
        v.as.i = (low & sign) ? -(int64_t)(~low & mask) - 1 : (int64_t)low;
        break;
    }
    case KIND_FLOAT:
        assert(!"from_bits on a float type");
        break;
    }
    return v;
}

static int64_t int_min_of(bcg_dtype t)
{
    return -(int64_t)((UINT64_C(1) << (dtype_bits(t) - 1)) - 1) - 1;
}

static int64_t int_max_of(bcg_dtype t)
{
    return (int64_t)((UINT64_C(1) << (dtype_bits(t) - 1)) - 1);
}

static uint64_t uint_max_of(bcg_dtype t)
{
    return dtype_bits(t) >= 64 ? UINT64_MAX : (UINT64_C(1) << dtype_bits(t)) - 1;
}

/* ---- conversions --------------------------------------------------------- */

static value make_float(bcg_dtype t, double f)
{
    value v = {.dtype = t};
    v.as.f = dtype_round_float(t, f);
    return v;
}

/* Float to integer, per semantics.md: truncate toward zero, NaN gives 0 and
 * values beyond the range saturate.  Every bound compared against is exactly
 * representable as a double (2^63, 2^64 and the <= 32-bit limits). */
static value float_to_integer(bcg_dtype t, double f)
{
    value v = {.dtype = t};
    if (isnan(f))
        return from_bits(t, 0);
    double whole = trunc(f);
    if (dtype_kind_of(t) == KIND_UINT) {
        double limit = dtype_bits(t) >= 64 ? 18446744073709551616.0 : (double)uint_max_of(t) + 1.0;
        if (whole <= 0)
            v.as.u = 0;
        else if (whole >= limit)
            v.as.u = uint_max_of(t);
        else
            v.as.u = (uint64_t)whole;
    } else {
        double above = -(double)int_min_of(t); /* 2^(width-1), exact */
        if (whole < (double)int_min_of(t))
            v.as.i = int_min_of(t);
        else if (whole >= above)
            v.as.i = int_max_of(t);
        else
            v.as.i = (int64_t)whole;
    }
    return v;
}

/* V as type T: C's conversion where it is defined, wrapping for integer
 * narrowing, the saturating rule above for float to integer, "non-zero"
 * (NaN included) for anything to bool. */
static value convert(value v, bcg_dtype t)
{
    if (v.dtype == t)
        return v;
    dtype_kind from = dtype_kind_of(v.dtype), to = dtype_kind_of(t);
    if (to == KIND_BOOL) {
        value b = {.dtype = t};
        b.as.i = from == KIND_FLOAT ? v.as.f != 0 : bits_of(v) != 0;
        return b;
    }
    if (to == KIND_FLOAT) {
        /* Integers round straight to the target type: going through double
         * first could round twice for i64/u64 -> f32. */
        if (from == KIND_FLOAT)
            return make_float(t, v.as.f);
        value f = {.dtype = t};
        /* f16 and bf16 from integers round through float, as NumPy's
         * casts do (exact below 2^24, and larger values overflow f16) */
        bool single = t != BCG_F64;
        if (from == KIND_UINT)
            f.as.f = single ? (double)(float)v.as.u : (double)v.as.u;
        else
            f.as.f = single ? (double)(float)v.as.i : (double)v.as.i;
        f.as.f = dtype_round_float(t, f.as.f);
        return f;
    }
    if (from == KIND_FLOAT)
        return float_to_integer(t, v.as.f);
    return from_bits(t, bits_of(v));
}

static bool truth(value v)
{
    return dtype_kind_of(v.dtype) == KIND_FLOAT ? v.as.f != 0 : bits_of(v) != 0;
}

static value make_bool(bool b)
{
    value v = {.dtype = BCG_BOOL};
    v.as.i = b;
    return v;
}

/* ---- float operations ------------------------------------------------------ */

/* f32 arithmetic is done in float so it rounds as C float arithmetic does
 * (and as the emitted kernels do); f64 in double. */
static double float_binary(expr_op op, bool single, double a, double b)
{
    float x = (float)a, y = (float)b;
    switch (op) {
    case OP_ADD: return single ? (double)(x + y) : a + b;
    case OP_SUB: return single ? (double)(x - y) : a - b;
    case OP_MUL: return single ? (double)(x * y) : a * b;
    case OP_DIV: return single ? (double)(x / y) : a / b;
    default: assert(!"not a float arithmetic operator"); return 0;
    }
}

/* NumPy's npy_divmod: the floor quotient and the remainder with the sign of
 * the divisor.  Written once for double and once for float so f32 rounds
 * at every step exactly as npy_divmodf does. */
static void divmod_double(double a, double b, double *quotient, double *remainder)
{
    double mod = fmod(a, b);
    if (b == 0) {
        *quotient = a / b;
        *remainder = mod;
        return;
    }
    double div = (a - mod) / b;
    if (mod != 0) {
        if ((b < 0) != (mod < 0)) {
            mod += b;
            div -= 1.0;
        }
    } else {
        mod = copysign(0, b);
    }
    double floordiv;
    if (div != 0) {
        floordiv = floor(div);
        if (div - floordiv > 0.5)
            floordiv += 1.0;
    } else {
        floordiv = copysign(0, a / b);
    }
    *quotient = floordiv;
    *remainder = mod;
}

static void divmod_float(float a, float b, float *quotient, float *remainder)
{
    float mod = fmodf(a, b);
    if (b == 0) {
        *quotient = a / b;
        *remainder = mod;
        return;
    }
    float div = (a - mod) / b;
    if (mod != 0) {
        if ((b < 0) != (mod < 0)) {
            mod += b;
            div -= 1.0f;
        }
    } else {
        mod = copysignf(0, b);
    }
    float floordiv;
    if (div != 0) {
        floordiv = floorf(div);
        if (div - floordiv > 0.5f)
            floordiv += 1.0f;
    } else {
        floordiv = copysignf(0, a / b);
    }
    *quotient = floordiv;
    *remainder = mod;
}

static double float_floor_divide_or_mod(expr_op op, bool single, double a, double b)
{
    if (single) {
        float quotient, remainder;
        divmod_float((float)a, (float)b, &quotient, &remainder);
        return op == OP_FLOORDIV ? quotient : remainder;
    }
    double quotient, remainder;
    divmod_double(a, b, &quotient, &remainder);
    return op == OP_FLOORDIV ? quotient : remainder;
}

/* A float function of ops.h (its libm column), or abs, on A in double or,
 * when SINGLE, in float. */
static double float_function(expr_op op, bool single, double a)
{
    if (op == OP_ABS)
        return single ? fabsf((float)a) : fabs(a);
    assert(op_table[op].math_f64);
    return single ? op_table[op].math_f32((float)a) : op_table[op].math_f64(a);
}

/* bcgen's own float functions (OWN rows of ops.h) on A (and B), in float
 * when SINGLE, else in double: the same operations in the same order as
 * their helpers in templates/ops.c.tmpl, so that kernels and the evaluator
 * agree bit for bit (the C library's exp, log1p and exp2 included).
 * deg2rad and rad2deg multiply by NumPy's constants (npy_deg2rad{f},
 * npy_rad2deg{f}); logaddexp and logaddexp2 are NumPy's npy_logaddexp{f}
 * and npy_logaddexp2{f}; expit is SciPy's logistic function, written so
 * that neither branch overflows (docs/semantics.md). */
double eval_own_function(expr_op op, bool single, double a, double b)
{
    if (single) {
        float x = (float)a, y = (float)b, e, d;
        switch (op) {
        case OP_DEG2RAD: return x * 0.0174532924f;
        case OP_RAD2DEG: return x * 57.2957764f;
        case OP_EXPIT:
            if (x < 0) {
                e = expf(x);
                return e / (1 + e);
            }
            return 1 / (1 + expf(-x));
        case OP_LOGADDEXP:
            if (x == y)
                return x + 0.693147182f;
            d = x - y;
            if (d > 0)
                return x + log1pf(expf(-d));
            if (d <= 0)
                return y + log1pf(expf(d));
            return d;
        case OP_LOGADDEXP2:
            if (x == y)
                return x + 1;
            d = x - y;
            if (d > 0)
                return x + 1.44269502f * log1pf(exp2f(-d));
            if (d <= 0)
                return y + 1.44269502f * log1pf(exp2f(d));
            return d;
        default: assert(!"not an own float function"); return 0;
        }
    }
    double x = a, y = b, e, d;
    switch (op) {
    case OP_DEG2RAD: return x * 0.017453292519943295;
    case OP_RAD2DEG: return x * 57.29577951308232;
    case OP_EXPIT:
        if (x < 0) {
            e = exp(x);
            return e / (1 + e);
        }
        return 1 / (1 + exp(-x));
    case OP_LOGADDEXP:
        if (x == y)
            return x + 0.6931471805599453;
        d = x - y;
        if (d > 0)
            return x + log1p(exp(-d));
        if (d <= 0)
            return y + log1p(exp(d));
        return d;
    case OP_LOGADDEXP2:
        if (x == y)
            return x + 1;
        d = x - y;
        if (d > 0)
            return x + 1.4426950408889634 * log1p(exp2(-d));
        if (d <= 0)
            return y + 1.4426950408889634 * log1p(exp2(d));
        return d;
    default: assert(!"not an own float function"); return 0;
    }
}

/* np.reciprocal on an integer type T: 1 / x truncated, so 0 for |x| > 1;
 * NumPy computes 1.0 / x in double and converts it, so 1 / 0 is the
 * x86-64 conversion of inf: the minimum for i32 and i64, 0 for the
 * narrower types and the unsigned ones (docs/semantics.md). */
static value integer_reciprocal(bcg_dtype t, value a)
{
    if (dtype_kind_of(t) == KIND_INT) {
        if (a.as.i == 1 || a.as.i == -1)
            return a;
        if (a.as.i == 0 && dtype_bits(t) >= 32)
            return from_bits(t, (uint64_t)int_min_of(t));
        return from_bits(t, 0);
    }
    return from_bits(t, bits_of(a) == 1);
}

/* ---- integer operations ---------------------------------------------------- */

/* Exponentiation by squaring on bit patterns, so it wraps like the other
 * integer arithmetic. */
static uint64_t power_bits(uint64_t base, uint64_t exponent)
{
    uint64_t result = 1;
    while (exponent) {
        if (exponent & 1)
            result *= base;
        base *= base;
        exponent >>= 1;
    }
    return result;
}

/* Integer (or bool) binary arithmetic in type T; A and B are already T. */
static value integer_binary(expr_op op, bcg_dtype t, value a, value b)
{
    bool is_signed = dtype_kind_of(t) == KIND_INT;
    uint64_t x = bits_of(a), y = bits_of(b);
    int width = dtype_bits(t);
    switch (op) {
    case OP_ADD: return from_bits(t, x + y);
    case OP_SUB: return from_bits(t, x - y);
    case OP_MUL: return from_bits(t, x * y);
    case OP_BITAND: return from_bits(t, x & y);
    case OP_BITOR: return from_bits(t, x | y);
    case OP_BITXOR: return from_bits(t, x ^ y);
    case OP_FLOORDIV:
    case OP_MOD:
        if (y == 0)
            return from_bits(t, 0);
        if (is_signed) {
            int64_t p = a.as.i, q = b.as.i;
            /* p / -1 overflows only for the minimum; the wrapped quotient
             * is -p and the remainder 0 for every p. */
            if (q == -1)
                return from_bits(t, op == OP_FLOORDIV ? 0 - (uint64_t)p : 0);
            int64_t quotient = p / q, remainder = p % q;
            if (remainder != 0 && ((remainder < 0) != (q < 0))) {
                quotient -= 1;
                remainder += q;
            }
            return from_bits(t, (uint64_t)(op == OP_FLOORDIV ? quotient : remainder));
        }
        return from_bits(t, op == OP_FLOORDIV ? x / y : x % y);
    case OP_POW:
        if (is_signed && b.as.i < 0) {
            /* bcgen: the truncated real result (NumPy raises). */
            if (a.as.i == 1)
                return from_bits(t, 1);
            if (a.as.i == -1)
                return from_bits(t, (b.as.i & 1) ? UINT64_MAX : 1);
            return from_bits(t, 0);
        }
        return from_bits(t, power_bits(x, y));
    case OP_SHL: {
        /* npy_lshift: 0 for a negative count or one of at least the width */
        bool in_range = is_signed ? b.as.i >= 0 && b.as.i < width : y < (uint64_t)width;
        return from_bits(t, in_range ? x << y : 0);
    }
    case OP_SHR: {
        bool negative = is_signed && a.as.i < 0;
        bool in_range = is_signed ? b.as.i >= 0 && b.as.i < width : y < (uint64_t)width;
        if (!in_range)
            return from_bits(t, negative ? UINT64_MAX : 0);
        /* an arithmetic shift of a negative number without shifting one */
        return from_bits(t, negative ? ~(~x >> y) : x >> y);
    }
    default:
        assert(!"not an integer operator");
        return from_bits(t, 0);
    }
}

/* add_sat and sub_sat on integer type T: the exact sum or difference,
 * clamped to T's range (docs/semantics.md, "Saturating arithmetic"). */
static value saturating(expr_op op, bcg_dtype t, value a, value b)
{
    bool add = op == OP_ADD_SAT;
    if (dtype_kind_of(t) == KIND_UINT) {
        uint64_t x = a.as.u, y = b.as.u, max = uint_max_of(t);
        if (add)
            return from_bits(t, x > max - y ? max : x + y);
        return from_bits(t, x < y ? 0 : x - y);
    }
    int64_t x = a.as.i, y = b.as.i, min = int_min_of(t), max = int_max_of(t);
    if (add ? (y > 0 && x > max - y) : (y < 0 && x > max + y))
        return from_bits(t, (uint64_t)max);
    if (add ? (y < 0 && x < min - y) : (y > 0 && x < min + y))
        return from_bits(t, (uint64_t)min);
    return from_bits(t, add ? (uint64_t)x + (uint64_t)y : (uint64_t)x - (uint64_t)y);
}

/* mul_q7, mul_q15, mul_q31 on A and B of the row's type (i8, i16, i32,
 * with F = 7, 15, 31 fraction bits): floor(a * b / 2**F), which only
 * -1 * -1 (the minimum squared) takes past the maximum, and that saturates. */
static value fixed_product(expr_op op, value a, value b)
{
    bcg_dtype t = op_fixed_dtype(op);
    int64_t product = a.as.i * b.as.i; /* |product| <= 2**62 */
    int64_t shifted = product >= 0 ? product >> op_fixed_fraction_bits(op)
                                   : ~(~product >> op_fixed_fraction_bits(op));
    return from_bits(t, (uint64_t)(shifted > int_max_of(t) ? int_max_of(t) : shifted));
}

static int compare(value a, value b) /* -1, 0, 1; floats here are not NaN */
{
    switch (dtype_kind_of(a.dtype)) {
    case KIND_FLOAT: return (a.as.f > b.as.f) - (a.as.f < b.as.f);
    case KIND_UINT: return (a.as.u > b.as.u) - (a.as.u < b.as.u);
    default: return (a.as.i > b.as.i) - (a.as.i < b.as.i);
    }
}

/* np.minimum / np.maximum: NaN wins; otherwise the strictly smaller
 * (larger) one, and B when they are equal, which is what NumPy returns for
 * -0.0 against 0.0. */
static value extreme(expr_op op, value a, value b)
{
    if (dtype_kind_of(a.dtype) == KIND_FLOAT) {
        if (isnan(a.as.f))
            return a;
        if (isnan(b.as.f))
            return b;
    }
    int order = compare(a, b);
    if (op == OP_MINIMUM)
        return order < 0 ? a : b;
    return order > 0 ? a : b;
}

static bool comparison_holds(expr_op op, value a, value b)
{
    if (dtype_kind_of(a.dtype) == KIND_FLOAT && (isnan(a.as.f) || isnan(b.as.f)))
        return op == OP_NE;
    int order = compare(a, b);
    switch (op) {
    case OP_EQ: return order == 0;
    case OP_NE: return order != 0;
    case OP_LT: return order < 0;
    case OP_LE: return order <= 0;
    case OP_GT: return order > 0;
    case OP_GE: return order >= 0;
    default: assert(!"not a comparison"); return false;
    }
}

/* ---- one node ---------------------------------------------------------------- */

/* Computes operator node N (not an operand or literal) from the values of
 * its arguments ARGS[0 .. n->arg_count).  Arguments are converted to the
 * node's operation type, the operator is applied there, and the result is
 * converted to n->dtype. */
static value eval_node(const expr_node *n, const value *args)
{
    switch (n->op) {
    case OP_CAST:
        return convert(args[0], n->dtype);
    case OP_NOT:
        return convert(make_bool(!truth(args[0])), n->dtype);
    case OP_AND:
        return convert(make_bool(truth(args[0]) && truth(args[1])), n->dtype);
    case OP_OR:
        return convert(make_bool(truth(args[0]) || truth(args[1])), n->dtype);
    case OP_LOGICAL_XOR:
        return convert(make_bool(truth(args[0]) != truth(args[1])), n->dtype);
    case OP_WHERE:
        return convert(truth(args[0]) ? args[1] : args[2], n->dtype);
    case OP_ISNAN: case OP_ISINF: case OP_ISFINITE: case OP_SIGNBIT: {
        double x = convert(args[0], expr_operation_type(n)).as.f;
        bool r = n->op == OP_ISNAN ? isnan(x) : n->op == OP_ISINF ? isinf(x)
                 : n->op == OP_ISFINITE ? isfinite(x) : signbit(x) != 0;
        return convert(make_bool(r), n->dtype);
    }
    default:
        break;
    }

    bcg_dtype t = expr_operation_type(n);
    dtype_kind kind = dtype_kind_of(t);
    /* f16 and bf16 compute in float and round the result (make_float) */
    bool single = dtype_compute(t) == BCG_F32;
    value a = {.dtype = t}, b = {.dtype = t}, result = {.dtype = t};
    if (n->arg_count > 0)
        a = convert(args[0], t);
    if (n->arg_count > 1)
        b = convert(args[1], t);

    switch (n->op) {
    case OP_POS:
        result = a;
        break;
    case OP_NEG:
        if (kind == KIND_FLOAT)
            result = make_float(t, -a.as.f);
        else
            result = from_bits(t, 0 - bits_of(a));
        break;
    case OP_BITNOT:
        /* on bool, ~ is logical not */
        result = kind == KIND_BOOL ? make_bool(!a.as.i) : from_bits(t, ~bits_of(a));
        break;
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
        result = make_bool(comparison_holds(n->op, a, b));
        break;
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV:
        if (kind == KIND_FLOAT)
            result = make_float(t, float_binary(n->op, single, a.as.f, b.as.f));
        else if (n->op == OP_DIV) /* only reached if the typing gave no float */
            result = convert(make_float(BCG_F64, convert(a, BCG_F64).as.f / convert(b, BCG_F64).as.f), t);
        else
            result = integer_binary(n->op, t, a, b);
        break;
    case OP_FLOORDIV: case OP_MOD:
        if (kind == KIND_FLOAT)
            result = make_float(t, float_floor_divide_or_mod(n->op, single, a.as.f, b.as.f));
        else
            result = integer_binary(n->op, t, a, b);
        break;
    case OP_POW:
        /* f32 too goes through double pow and rounds once (semantics.md) */
        if (kind == KIND_FLOAT)
            result = make_float(t, single ? (double)(float)pow(a.as.f, b.as.f)
                                          : pow(a.as.f, b.as.f));
        else
            result = integer_binary(n->op, t, a, b);
        break;
    case OP_BITAND: case OP_BITOR: case OP_BITXOR: case OP_SHL: case OP_SHR:
        assert(kind != KIND_FLOAT);
        result = integer_binary(n->op, t, a, b);
        break;
    case OP_ABS:
        if (kind == KIND_FLOAT)
            result = make_float(t, float_function(n->op, single, a.as.f));
        else if (kind == KIND_INT && a.as.i < 0)
            result = from_bits(t, 0 - bits_of(a)); /* abs(INT_MIN) wraps to INT_MIN */
        else
            result = a;
        break;
    case OP_SIGN: /* NumPy's: NaN as it is, -0.0 gives +0.0 */
        if (kind == KIND_FLOAT)
            result = make_float(t, a.as.f > 0 ? 1.0 : a.as.f < 0 ? -1.0 : a.as.f == 0 ? 0.0 : a.as.f);
        else if (kind == KIND_INT)
            result = from_bits(t, a.as.i > 0 ? 1 : a.as.i < 0 ? UINT64_MAX : 0);
        else
            result = from_bits(t, bits_of(a) != 0);
        break;
    case OP_SQUARE:
        if (kind == KIND_FLOAT)
            result = make_float(t, float_binary(OP_MUL, single, a.as.f, a.as.f));
        else
            result = integer_binary(OP_MUL, t, a, a);
        break;
    case OP_RECIPROCAL:
        if (kind == KIND_FLOAT)
            result = make_float(t, float_binary(OP_DIV, single, 1.0, a.as.f));
        else
            result = integer_reciprocal(t, a);
        break;
    case OP_ROUND: /* rint: half to even; integers as they are */
        result = kind == KIND_FLOAT ? make_float(t, float_function(OP_RINT, single, a.as.f)) : a;
        break;
    case OP_MINIMUM: case OP_MAXIMUM:
        result = extreme(n->op, a, b);
        break;
    case OP_ADD_SAT: case OP_SUB_SAT: /* typing keeps these on integers */
        assert(kind == KIND_INT || kind == KIND_UINT);
        result = saturating(n->op, t, a, b);
        break;
    case OP_MUL_Q7: case OP_MUL_Q15: case OP_MUL_Q31:
        assert(t == op_fixed_dtype(n->op));
        result = fixed_product(n->op, a, b);
        break;
    case OP_CLIP:
        result = extreme(OP_MINIMUM, extreme(OP_MAXIMUM, a, b), convert(args[2], t));
        break;
    default:
        if (op_table[n->op].math2_f64) { /* a float function of two arguments */
            const op_info *row = &op_table[n->op];
            assert(kind == KIND_FLOAT);
            result = make_float(t, single ? (double)row->math2_f32((float)a.as.f, (float)b.as.f)
                                          : row->math2_f64(a.as.f, b.as.f));
            break;
        }
        if (op_table[n->op].own) { /* bcgen's own float functions */
            assert(kind == KIND_FLOAT);
            result = make_float(t, eval_own_function(n->op, single, a.as.f, b.as.f));
            break;
        }
        if (op_table[n->op].rule == RULE_FLOAT) { /* a float function of ops.h */
            if (kind != KIND_FLOAT) { /* typing keeps these on floats; be defined anyway */
                value f = convert(a, dtype_float_for(t));
                result = convert(make_float(f.dtype, float_function(n->op, f.dtype != BCG_F64,
                                                                    f.as.f)), t);
            } else {
                result = make_float(t, float_function(n->op, single, a.as.f));
            }
            break;
        }
        assert(!"eval_node: unexpected operator");
        break;
    }
    return convert(result, n->dtype);
}

/* ---- memory ---------------------------------------------------------------------- */

static value load(const void *base, bcg_dtype t, int64_t index)
{
    value v = {.dtype = t};
    switch (t) {
    case BCG_BOOL: v.as.i = ((const uint8_t *)base)[index] != 0; break;
    case BCG_I8: v.as.i = ((const int8_t *)base)[index]; break;
    case BCG_I16: v.as.i = ((const int16_t *)base)[index]; break;
    case BCG_I32: v.as.i = ((const int32_t *)base)[index]; break;
    case BCG_I64: v.as.i = ((const int64_t *)base)[index]; break;
    case BCG_U8: v.as.u = ((const uint8_t *)base)[index]; break;
    case BCG_U16: v.as.u = ((const uint16_t *)base)[index]; break;
    case BCG_U32: v.as.u = ((const uint32_t *)base)[index]; break;
    case BCG_U64: v.as.u = ((const uint64_t *)base)[index]; break;
    case BCG_F32: v.as.f = ((const float *)base)[index]; break;
    case BCG_F64: v.as.f = ((const double *)base)[index]; break;
    case BCG_F16: v.as.f = half_to_float(((const uint16_t *)base)[index]); break;
    case BCG_BF16: v.as.f = bfloat_to_float(((const uint16_t *)base)[index]); break;
    default: assert(!"load: bad dtype"); break;
    }
    return v;
}

/* V is already of type T, so every narrowing below is in range. */
static void store(void *base, bcg_dtype t, int64_t index, value v)
{
    assert(v.dtype == t);
    switch (t) {
    case BCG_BOOL: ((uint8_t *)base)[index] = v.as.i != 0; break;
    case BCG_I8: ((int8_t *)base)[index] = (int8_t)v.as.i; break;
    case BCG_I16: ((int16_t *)base)[index] = (int16_t)v.as.i; break;
    case BCG_I32: ((int32_t *)base)[index] = (int32_t)v.as.i; break;
    case BCG_I64: ((int64_t *)base)[index] = v.as.i; break;
    case BCG_U8: ((uint8_t *)base)[index] = (uint8_t)v.as.u; break;
    case BCG_U16: ((uint16_t *)base)[index] = (uint16_t)v.as.u; break;
    case BCG_U32: ((uint32_t *)base)[index] = (uint32_t)v.as.u; break;
    case BCG_U64: ((uint64_t *)base)[index] = v.as.u; break;
    case BCG_F32: ((float *)base)[index] = (float)v.as.f; break;
    case BCG_F64: ((double *)base)[index] = v.as.f; break;
    case BCG_F16: ((uint16_t *)base)[index] = half_from_double(v.as.f); break;
    case BCG_BF16: ((uint16_t *)base)[index] = bfloat_from_float((float)v.as.f); break;
    default: assert(!"store: bad dtype"); break;
    }
}

/* The literal as a value of its node's type (expr_type leaves it in i, u
 * or f by that type; an f32 literal is rounded here in case it was kept as
 * the double that was written). */
static value literal_value(const expr_node *n)
{
    value v = {.dtype = n->dtype};
    switch (dtype_kind_of(n->dtype)) {
    case KIND_BOOL: v.as.i = n->value.i != 0; break;
    case KIND_INT: v = from_bits(n->dtype, (uint64_t)n->value.i); break;
    case KIND_UINT: v = from_bits(n->dtype, n->value.u); break;
    case KIND_FLOAT: v = make_float(n->dtype, n->value.f); break;
    }
    return v;
}

/* Folds operator node N over the literal nodes ARGS into the literal OUT,
 * which has N's dtype: what a kernel computes for N, for fold.c. */
void eval_fold(const expr_node *n, const expr_node *const *args, expr_node *out)
{
    value values[3];
    for (int k = 0; k < n->arg_count; k++)
        values[k] = literal_value(args[k]);
    value v = eval_node(n, values);
    out->op = OP_LITERAL;
    out->dtype = n->dtype;
    out->arg_count = 0;
    memset(out->args, 0, sizeof out->args);
    memset(&out->value, 0, sizeof out->value);
    out->literal_is_float = dtype_kind_of(n->dtype) == KIND_FLOAT;
    switch (dtype_kind_of(n->dtype)) {
    case KIND_BOOL: case KIND_INT: out->value.i = v.as.i; break;
    case KIND_UINT: out->value.u = v.as.u; break;
    case KIND_FLOAT: out->value.f = v.as.f; break;
    }
}

/* ---- the program and the loop ------------------------------------------------------ */

static int count_nodes(const expr_node *n)
{
    int count = 1;
    for (int k = 0; k < n->arg_count; k++)
        count += count_nodes(n->args[k]);
    return count;
}

/* Post-order: every node comes after its arguments, so one pass over the
 * array with a stack evaluates the tree.  Depth is bounded by the parser. */
static void flatten(const expr_node *n, const expr_node **program, int *length)
{
    for (int k = 0; k < n->arg_count; k++)
        flatten(n->args[k], program, length);
    program[(*length)++] = n;
}

typedef struct evaluator {
    const compile *c;
    const void *const *in;
    const expr_node **program;
    int length;
    value *stack;
    value *literals; /* per program position, precomputed */
} evaluator;

/* OFFSET[k] is plan operand k's element offset; inputs start at 1. */
static value evaluate_element(const evaluator *e, const int64_t *offset)
{
    value *top = e->stack;
    for (int pc = 0; pc < e->length; pc++) {
        const expr_node *n = e->program[pc];
        if (n->op == OP_OPERAND) {
            *top++ = load(e->in[n->operand], e->c->operands[n->operand].dtype,
                          offset[n->operand + 1]);
        } else if (n->op == OP_LITERAL) {
            *top++ = e->literals[pc];
        } else {
            top -= n->arg_count;
            *top = eval_node(n, top);
            top++;
        }
    }
    assert(top == e->stack + 1);
    return e->stack[0];
}

/* ---- reductions (the emitted accumulators' arithmetic, step for step:
 * emit.c's print_acc_*; cprint.h's acc_kind) ---------------------------------- */

typedef struct accumulator {
    uint64_t wrap;                   /* ACC_WRAP */
    double sum[REDUCE_LANES];        /* ACC_DOUBLE, ACC_COMPENSATED: per lane */
    double comp[REDUCE_LANES];       /* ACC_COMPENSATED */
    value extreme;                   /* ACC_EXTREME */
    bool logical;                    /* ACC_LOGICAL */
} accumulator;

typedef enum { WRAP, DOUBLE, COMPENSATED, EXTREME, LOGICAL } accumulation;

/* ORDER: reduce_acc_kind in emit.c */
static accumulation accumulation_of(int reduce, bcg_dtype t)
{
    bool is_float = dtype_kind_of(t) == KIND_FLOAT;
    switch (reduce) {
    case BCG_REDUCE_SUM: return !is_float ? WRAP : t == BCG_F64 ? COMPENSATED : DOUBLE;
    case BCG_REDUCE_PROD: return is_float ? DOUBLE : WRAP;
    case BCG_REDUCE_MEAN: return is_float && t != BCG_F64 ? DOUBLE : COMPENSATED;
    case BCG_REDUCE_MIN: case BCG_REDUCE_MAX: return EXTREME;
    default: return LOGICAL;
    }
}

static void accumulator_init(accumulator *a, int reduce, bcg_dtype t)
{
    bool product = reduce == BCG_REDUCE_PROD, maximum = reduce == BCG_REDUCE_MAX;
    memset(a, 0, sizeof *a);
    a->wrap = product ? 1 : 0;
    a->sum[0] = product ? 1.0 : 0.0;
    a->logical = reduce == BCG_REDUCE_ALL;
    a->extreme.dtype = t;
    switch (dtype_kind_of(t)) {
    case KIND_BOOL: a->extreme.as.i = maximum ? 0 : 1; break;
    case KIND_INT: a->extreme.as.i = maximum ? int_min_of(t) : int_max_of(t); break;
    case KIND_UINT: a->extreme.as.u = maximum ? 0 : uint_max_of(t); break;
    case KIND_FLOAT: a->extreme.as.f = maximum ? -INFINITY : INFINITY; break;
    }
}

static double as_double(value v)
{
    switch (dtype_kind_of(v.dtype)) {
    case KIND_FLOAT: return v.as.f;
    case KIND_UINT: return (double)v.as.u;
    default: return (double)v.as.i;
    }
}

/* Neumaier's step: X into the sum *S with compensation *C. */
static void neumaier(double *s, double *c, double x)
{
    double t = *s + x;
    if (fabs(*s) >= fabs(x))
        *c += (*s - t) + x;
    else
        *c += (x - t) + *s;
    *s = t;
}

/* V into partial LANE (0 unless reduce_lanes; see there). */
static void accumulate(accumulator *a, int reduce, value v, int lane)
{
    bool product = reduce == BCG_REDUCE_PROD;
    switch (accumulation_of(reduce, v.dtype)) {
    case WRAP: {
        uint64_t x = dtype_kind_of(v.dtype) == KIND_UINT ? v.as.u : (uint64_t)v.as.i;
        a->wrap = product ? a->wrap * x : a->wrap + x;
        break;
    }
    case DOUBLE:
        a->sum[lane] = product ? a->sum[lane] * v.as.f : a->sum[lane] + v.as.f;
        break;
    case COMPENSATED:
        neumaier(&a->sum[lane], &a->comp[lane], as_double(v));
        break;
    case EXTREME:
        if (v.dtype == BCG_BOOL)
            a->extreme.as.i = reduce == BCG_REDUCE_MAX ? (a->extreme.as.i | v.as.i)
                                                       : (a->extreme.as.i & v.as.i);
        else
            a->extreme = extreme(reduce == BCG_REDUCE_MAX ? OP_MAXIMUM : OP_MINIMUM,
                                 a->extreme, v);
        break;
    case LOGICAL: {
        bool truth = dtype_kind_of(v.dtype) == KIND_FLOAT ? v.as.f != 0 : bits_of(v) != 0;
        a->logical = reduce == BCG_REDUCE_ANY ? (a->logical || truth) : (a->logical && truth);
        break;
    }
    }
}

/* The partials of a laned reduction into lane 0, as emit.c's lanes
 * helpers combine them: double sums pairwise ((0+1)+(2+3))+...; compensated
 * ones by Neumaier's step over the sums in lane order, then the
 * compensations added in lane order. */
static void lanes_finish(accumulator *a, accumulation kind)
{
    if (kind == DOUBLE) {
        for (int width = REDUCE_LANES; width > 1; width /= 2)
            for (int i = 0; i < width / 2; i++)
                a->sum[i] = a->sum[2 * i] + a->sum[2 * i + 1];
        return;
    }
    double s = 0.0, c = 0.0;
    for (int i = 0; i < REDUCE_LANES; i++)
        neumaier(&s, &c, a->sum[i]);
    for (int i = 0; i < REDUCE_LANES; i++)
        c += a->comp[i];
    a->sum[0] = s;
    a->comp[0] = c;
}

/* The reduced value, of dtype R (c->reduced_dtype). */
static value accumulator_finish(accumulator *a, int reduce, bcg_dtype t, bcg_dtype r,
                                int64_t count, int lanes)
{
    value v = {.dtype = r};
    if (reduce == BCG_REDUCE_MEAN && count == 0)
        return make_float(r, NAN);
    accumulation kind = accumulation_of(reduce, t);
    if (lanes > 1 && (kind == DOUBLE || kind == COMPENSATED))
        lanes_finish(a, kind);
    switch (kind) {
    case WRAP:
        if (r == BCG_U64)
            v.as.u = a->wrap;
        else
            v = from_bits(BCG_I64, a->wrap);
        return v;
    case DOUBLE:
        return make_float(r, reduce == BCG_REDUCE_MEAN ? a->sum[0] / (double)count : a->sum[0]);
    case COMPENSATED: {
        double sum = a->sum[0] - a->sum[0] == 0.0 ? a->sum[0] + a->comp[0] : a->sum[0];
        return make_float(r, reduce == BCG_REDUCE_MEAN ? sum / (double)count : sum);
    }
    case EXTREME:
        return a->extreme;
    case LOGICAL:
        v.as.i = a->logical;
        return v;
    }
    return v;
}

/* C's reduction: the plan's innermost loops from REDUCE_FROM on are
 * reduced (their output stride is 0), so the odometer finishes one output
 * element each time those loops wrap around. */
static void eval_reduce(const compile *c, const evaluator *e, void *out)
{
    const plan *p = c->fill_plan ? c->fill_plan : c->plan;
    bcg_dtype t = c->root->dtype, r = c->reduced_dtype;
    int from = p->loop_count;
    while (!c->fill_plan && from > 0 && p->stride[0][from - 1] == 0)
        from--;
    int64_t index[BCG_MAX_RANK] = {0};
    int64_t offset[BCG_MAX_OPERANDS + 1] = {0};
    int lanes = reduce_lanes(c), inner = p->loop_count - 1;
    accumulator a;
    for (;;) {
        bool first = true, last = true;
        for (int l = from; l < p->loop_count; l++) {
            first = first && index[l] == 0;
            last = last && index[l] == p->extent[l] - 1;
        }
        if (first)
            accumulator_init(&a, c->reduce, t);
        if (!c->fill_plan)
            accumulate(&a, c->reduce, evaluate_element(e, offset),
                       lanes > 1 ? (int)(index[inner] % lanes) : 0);
        if (last)
            store(out, c->out_dtype, offset[0],
                  convert(accumulator_finish(&a, c->reduce, t, r, c->reduce_count, lanes),
                          c->out_dtype));
        int l = p->loop_count - 1;
        for (; l >= 0; l--) {
            if (index[l] + 1 < p->extent[l]) {
                index[l]++;
                for (int k = 0; k < p->operand_count; k++)
                    offset[k] += p->stride[k][l];
                break;
            }
            for (int k = 0; k < p->operand_count; k++)
                offset[k] -= p->stride[k][l] * (p->extent[l] - 1);
            index[l] = 0;
        }
        if (l < 0)
            break;
    }
}

bcg_status eval_run(const compile *c, void *out, const void *const *in, bcg_error *err)
{
    if (!c || !c->root || !c->plan)
        return fail(err, BCG_ERR_USAGE, "eval_run: the compile has no typed tree or plan");
    const plan *p = c->plan;
    if (c->fill_plan && !c->fill_plan->empty) { /* a reduction of nothing: the identity */
        evaluator none = {.c = c, .in = in};
        eval_reduce(c, &none, out);
        return BCG_OK;
    }
    if (p->empty)
        return BCG_OK;
    for (int l = 0; l < p->loop_count; l++)
        if (p->extent[l] <= 0)
            return BCG_OK;

    evaluator e = {.c = c, .in = in};
    int node_count = count_nodes(c->root);
    size_t per_node = sizeof *e.program + 2 * sizeof(value);
    char *scratch = mem_alloc((size_t)node_count * per_node);
    if (!scratch)
        return fail(err, BCG_ERR_NOMEM, "out of memory in the reference evaluator");
    /* values first: they need the stricter alignment */
    e.stack = (value *)scratch;
    e.literals = e.stack + node_count;
    e.program = (const expr_node **)(e.literals + node_count);
    flatten(c->root, e.program, &e.length);
    for (int pc = 0; pc < e.length; pc++)
        if (e.program[pc]->op == OP_LITERAL)
            e.literals[pc] = literal_value(e.program[pc]);

    /* The odometer: index[l] counts steps of loop l and offset[k] follows
     * every operand.  Wrapping a loop steps back by stride * (extent - 1),
     * which is the span of real memory along it, so it cannot overflow. */
    if (c->reduce) {
        eval_reduce(c, &e, out);
        mem_free(scratch);
        return BCG_OK;
    }
    int64_t index[BCG_MAX_RANK] = {0};
    int64_t offset[BCG_MAX_OPERANDS + 1] = {0};
    bcg_dtype out_dtype = c->root->dtype;
    for (;;) {
        store(out, out_dtype, offset[0], evaluate_element(&e, offset));
        int l = p->loop_count - 1;
        for (; l >= 0; l--) {
            if (index[l] + 1 < p->extent[l]) {
                index[l]++;
                for (int k = 0; k < p->operand_count; k++)
                    offset[k] += p->stride[k][l];
                break;
            }
            for (int k = 0; k < p->operand_count; k++)
                offset[k] -= p->stride[k][l] * (p->extent[l] - 1);
            index[l] = 0;
        }
        if (l < 0)
            break;
    }
    mem_free(scratch);
    return BCG_OK;
}
