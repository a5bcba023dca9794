/* type.c - the expression front end's second stage: expr_type, NumPy's
 * promotion with weak literals (NEP 50) over the tree parse.c built, and the
 * folding of literal-only subtrees with exact integers.
 *
 * Typing (expr_type; docs/semantics.md "Types" and each operator's section).
 * During typing a subtree is either strong (it has a dtype: operands, and
 * anything computed from them) or a weak literal: a Python bool, int or
 * float.  Weak ints are kept exact in [-2**63, 2**64-1].  A node whose
 * children are all weak is folded into one weak OP_LITERAL with Python's
 * arithmetic (ints exact, an overflow beyond that range is an error; floats
 * in double; int / int gives a float; // and % floor as Python does; ** with
 * a negative int exponent gives a float; 0 ** -1, x // 0, x % 0, x / 0, a
 * negative base to a fractional power and a float ** that overflows are
 * errors, as Python raises).  Where Python and NumPy disagree on bools, the
 * NumPy rules of docs/semantics.md win, so a folded constant means what the
 * same expression over bool arrays means: True + True is True, True - True
 * and -True are errors, ~True is False.  sqrt, exp, log, sin, cos, tanh,
 * floor and ceil of a literal fold in double with the C library (sqrt(-1)
 * is nan, as in NumPy; Python's math module would raise) and give a weak
 * float.  Comparisons mixing an int and a float literal compare in double,
 * and int / int divides the two converted doubles: beyond 2**53 either may
 * differ from Python's exact result by an ulp.
 * A cast of a literal (weak, or already cast) folds into a strong literal
 * of the cast's type, converted as the runtime converts (wrap, truncate,
 * saturate, NaN -> 0).  Operations on such typed literals are not folded:
 * they follow the typed rules and are left to the emitter.
 *
 * When a weak literal meets a strong subtree, the promotion of the node
 * (promote_all) decides its type: an int literal takes an integer or float
 * partner's type (and must fit an integer one), is i64 next to bool; a
 * float literal takes a float partner's type and is f64 otherwise; a bool
 * literal takes the partner's type.  The literal is then stored in that
 * type (`concretize`).  A literal that is only truth-tested (an operand of
 * && or || beside a strong one, where's condition) becomes a bool literal
 * holding its truth, never a range error, as NumPy's logical functions
 * accept any Python number.  A literal-only root takes the literal's own
 * type: bool, i64 or f64; an int must fit in i64.
 *
 * Operation types.  No implicit cast nodes are inserted: each child keeps
 * its own dtype and the emitter/evaluator converts child values to the
 * node's operation type, given by expr_operation_type():
 *
 *   op                       operation type           node dtype
 *   operand, literal         dtype                    dtype
 *   - + ~ abs                the child's              same
 *   sqrt exp log sin cos     dtype_float_for(child)   same
 *     tanh floor ceil
 *   cast T(x)                the child's: a cast      T
 *                            computes nothing; converting to T is the cast
 *   ! && ||                  bool: each child is      bool
 *                            truth-tested (non-zero, NaN is true) in its own type
 *   == != < <= > >=          promote(left, right)     bool
 *                            e.g. i8 < f32 compares in f32
 *   & | ^                    promote(children)        same (floats rejected)
 *   << >>                    promote; bool,bool: i8   same (floats rejected)
 *   + * minimum maximum      promote(children)        same (bool+bool: or,
 *                                                     bool*bool: and)
 *   -                        promote (bool - bool rejected)
 *   /                        promote if a float,      same
 *                            else f64 (i8 / i8 is f64)
 *   // % ** pow              promote; bool,bool: i8   same
 *   where(c, x, y)           promote(x, y); c is      same
 *                            truth-tested in its own type
 *   clip(x, lo, hi)          promote(x, lo, hi)       same
 *
 * After expr_type every node has a concrete dtype, every literal's value is
 * stored in it (value.i for signed and bool, value.u for unsigned, value.f
 * for floats; an f32 literal holds the double of the rounded float), and for
 * every node except comparisons, !, &&, || and casts, the operation type is
 * the node's dtype.
 */

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- exact integers for folding --------------------------------------------- */

/* A Python int within [-2**63, 2**64-1], as sign and magnitude; zero is
 * never negative.  Operations return false when the exact result leaves
 * that range. */
typedef struct exact {
    bool negative;
    uint64_t magnitude;
} exact;

static const uint64_t SIGN_BIT = (uint64_t)1 << 63;

static bool exact_normalize(exact *v)
{
    if (v->magnitude == 0)
        v->negative = false;
    return !v->negative || v->magnitude <= SIGN_BIT;
}

static exact exact_of(bool negative, uint64_t magnitude)
{
    exact v = {negative, magnitude};
    exact_normalize(&v);
    return v;
}

static exact exact_from_i64(int64_t v)
{
    return exact_of(v < 0, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

/* Two's complement reinterpretation without implementation-defined casts. */
static int64_t to_signed(uint64_t u)
{
    return u <= INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

static double exact_to_double(exact v)
{
    return v.negative ? -(double)v.magnitude : (double)v.magnitude;
}

static bool exact_add(exact a, exact b, exact *out)
{
    if (a.negative == b.negative) {
        if (a.magnitude > UINT64_MAX - b.magnitude)
            return false;
        *out = (exact){a.negative, a.magnitude + b.magnitude};
    } else if (a.magnitude >= b.magnitude) {
        *out = (exact){a.negative, a.magnitude - b.magnitude};
    } else {
        *out = (exact){b.negative, b.magnitude - a.magnitude};
    }
    return exact_normalize(out);
}

static exact exact_negate(exact a) { return exact_of(!a.negative, a.magnitude); }

static bool exact_mul(exact a, exact b, exact *out)
{
    if (a.magnitude != 0 && b.magnitude > UINT64_MAX / a.magnitude)
        return false;
    *out = exact_of(a.negative != b.negative, a.magnitude * b.magnitude);
    return exact_normalize(out);
}

static int exact_compare(exact a, exact b)
{
    if (a.negative != b.negative)
        return a.negative ? -1 : 1;
    int sign = a.negative ? -1 : 1;
    return a.magnitude < b.magnitude ? -sign : a.magnitude > b.magnitude ? sign : 0;
}

/* Python's floor division and modulo; b is not zero. */
static bool exact_floordiv(exact a, exact b, exact *out)
{
    uint64_t q = a.magnitude / b.magnitude, r = a.magnitude % b.magnitude;
    if (a.negative == b.negative)
        *out = exact_of(false, q);
    else
        *out = exact_of(true, q + (r != 0));   /* b.magnitude >= 2 when r != 0: no overflow */
    return exact_normalize(out);
}

static exact exact_mod(exact a, exact b)
{
    uint64_t r = a.magnitude % b.magnitude;
    if (r != 0 && a.negative != b.negative)
        r = b.magnitude - r;
    return exact_of(b.negative, r);
}

/* exponent >= 0; 0 ** 0 == 1 */
static bool exact_pow(exact base, uint64_t exponent, exact *out)
{
    bool negative = base.negative && (exponent & 1);
    if (base.magnitude == 0) {
        *out = exact_of(false, exponent == 0);
        return true;
    }
    uint64_t result = 1, square = base.magnitude;
    while (exponent) {
        if (exponent & 1) {
            if (result > UINT64_MAX / square)
                return false;
            result *= square;
        }
        exponent >>= 1;
        if (exponent) {
            if (square > UINT64_MAX / square)
                return false;
            square *= square;
        }
    }
    *out = exact_of(negative, result);
    return exact_normalize(out);
}

/* Bitwise operations as Python does them on unbounded two's complement:
 * a value in range is 65 bits, the low 64 and a sign that repeats above. */
static void to_bits(exact v, uint64_t *low, bool *sign)
{
    *low = v.negative ? (uint64_t)0 - v.magnitude : v.magnitude;
    *sign = v.negative;
}

static bool from_bits(uint64_t low, bool sign, exact *out)
{
    if (!sign) {
        *out = exact_of(false, low);
        return true;
    }
    if (low == 0)
        return false;   /* -2**64 */
    *out = exact_of(true, (uint64_t)0 - low);
    return exact_normalize(out);
}

static bool exact_bitwise(expr_op op, exact a, exact b, exact *out)
{
    uint64_t la, lb;
    bool sa, sb;
    to_bits(a, &la, &sa);
    to_bits(b, &lb, &sb);
    switch (op) {
    case OP_BITAND: return from_bits(la & lb, sa && sb, out);
    case OP_BITOR: return from_bits(la | lb, sa || sb, out);
    default: return from_bits(la ^ lb, sa != sb, out);
    }
}

static bool exact_bitnot(exact a, exact *out)
{
    uint64_t low;
    bool sign;
    to_bits(a, &low, &sign);
    return from_bits(~low, !sign, out);
}

/* count >= 0 */
static bool exact_shift(expr_op op, exact a, uint64_t count, exact *out)
{
    if (op == OP_SHL) {
        if (a.magnitude == 0) {
            *out = a;
            return true;
        }
        if (count >= 64 || (a.magnitude >> (63 - count)) >> 1 != 0)
            return false;
        *out = exact_of(a.negative, a.magnitude << count);
        return exact_normalize(out);
    }
    if (!a.negative) {
        *out = exact_of(false, count >= 64 ? 0 : a.magnitude >> count);
        return true;
    }
    /* floor(-m / 2**count) == -ceil(m / 2**count) */
    if (count >= 64) {
        *out = exact_of(true, 1);
        return true;
    }
    uint64_t q = a.magnitude >> count;
    if (a.magnitude & ((((uint64_t)1) << count) - 1))
        q++;
    *out = exact_of(true, q);
    return true;
}

static void exact_format(exact v, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%" PRIu64, v.negative ? "-" : "", v.magnitude);
}

/* ---- typing ------------------------------------------------------------------- */

/* A subtree during typing: strong (it has a dtype) or a weak literal.  The
 * order matters: promotion takes the highest weak kind. */
typedef enum weak_kind { STRONG, WEAK_BOOL, WEAK_INT, WEAK_FLOAT } weak_kind;

typedef struct typed {
    weak_kind weak;
    bcg_dtype dtype;   /* strong: its type; weak: the literal's own type (bool, i64, f64) */
    exact i;           /* WEAK_BOOL (0 or 1) and WEAK_INT */
    double f;          /* WEAK_FLOAT */
} typed;

typedef struct typer {
    const bcg_dtype *operand_dtypes;
    int operand_count;
    bcg_error *err;
} typer;

static bcg_dtype weak_default(weak_kind k)
{
    return k == WEAK_FLOAT ? BCG_F64 : k == WEAK_INT ? BCG_I64 : BCG_BOOL;
}

static typed make_weak_bool(bool b)
{
    typed r = {WEAK_BOOL, BCG_BOOL, exact_of(false, b), 0.0};
    return r;
}

static typed make_weak_int(exact v)
{
    typed r = {WEAK_INT, BCG_I64, v, 0.0};
    return r;
}

static typed make_weak_float(double f)
{
    typed r = {WEAK_FLOAT, BCG_F64, {false, 0}, f};
    return r;
}

static double weak_double(const typed *v)
{
    return v->weak == WEAK_FLOAT ? v->f : exact_to_double(v->i);
}

static bool weak_truth(const typed *v)
{
    return v->weak == WEAK_FLOAT ? v->f != 0 : v->i.magnitude != 0;   /* NaN != 0 */
}

/* "f32", "int literal", ... for messages */
static const char *typed_name(const typed *v)
{
    switch (v->weak) {
    case WEAK_BOOL: return "a bool constant";
    case WEAK_INT: return "an int literal";
    case WEAK_FLOAT: return "a float literal";
    default: return bcg_dtype_name(v->dtype);
    }
}

/* NumPy's result_type over COUNT subtrees with NEP 50 weak literals.  With
 * no strong one the result is weak, of the highest kind. */
static typed promote_all(const typed *v, int count)
{
    bool any_strong = false;
    bcg_dtype strong = BCG_BOOL;
    weak_kind weak = STRONG;
    for (int i = 0; i < count; i++) {
        if (v[i].weak == STRONG) {
            strong = any_strong ? dtype_promote(strong, v[i].dtype) : v[i].dtype;
            any_strong = true;
        } else if (v[i].weak > weak) {
            weak = v[i].weak;
        }
    }
    typed r = {STRONG, strong, {false, 0}, 0.0};
    if (!any_strong) {
        r.weak = weak;
        r.dtype = weak_default(weak);
        return r;
    }
    dtype_kind kind = dtype_kind_of(strong);
    if (weak == WEAK_INT && kind == KIND_BOOL)
        r.dtype = BCG_I64;
    if (weak == WEAK_FLOAT && kind != KIND_FLOAT)
        r.dtype = BCG_F64;
    return r;
}

static void int_range(bcg_dtype t, exact *min, exact *max)
{
    int bits = dtype_bits(t);
    if (dtype_kind_of(t) == KIND_UINT) {
        *min = exact_of(false, 0);
        *max = exact_of(false, bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1);
    } else {
        *min = exact_of(true, (uint64_t)1 << (bits - 1));
        *max = exact_of(false, ((uint64_t)1 << (bits - 1)) - 1);
    }
}

/* Stores a number (an exact int, or a double when IS_FLOAT) into literal N
 * as type TO, converting as the runtime's casts do: integers wrap to the
 * low bits, floats truncate toward zero and saturate (NaN -> 0), bool is
 * != 0, floats round to nearest. */
static void store_converted(expr_node *n, bcg_dtype to, bool is_float, exact i, double f)
{
    n->dtype = to;
    dtype_kind kind = dtype_kind_of(to);
    int bits = dtype_bits(to);
    if (kind == KIND_BOOL) {
        n->value.i = is_float ? f != 0 : i.magnitude != 0;
    } else if (kind == KIND_FLOAT) {
        double d;
        /* integers reach f16 and bf16 through float, as NumPy's casts */
        bool single = to != BCG_F64;
        if (!is_float)
            d = single ? (double)(i.negative ? (float)to_signed((uint64_t)0 - i.magnitude)
                                             : (float)i.magnitude)
                       : (i.negative ? (double)to_signed((uint64_t)0 - i.magnitude)
                                     : (double)i.magnitude);
        else
            d = f;
        n->value.f = dtype_round_float(to, d);
    } else if (!is_float) {
        uint64_t low = i.negative ? (uint64_t)0 - i.magnitude : i.magnitude;
        if (bits < 64) {
            uint64_t mask = ((uint64_t)1 << bits) - 1;
            low &= mask;
            if (kind == KIND_INT && (low >> (bits - 1)))
                low |= ~mask;   /* sign-extend */
        }
        if (kind == KIND_UINT)
            n->value.u = low;
        else
            n->value.i = to_signed(low);
    } else {
        /* float to integer: truncate, NaN -> 0, saturate outside [min, max];
         * both bounds below are powers of two (or 0), so exact in double */
        exact min, max;
        int_range(to, &min, &max);
        double t = trunc(f), low = exact_to_double(min);
        double high = ldexp(1.0, kind == KIND_UINT ? bits : bits - 1);   /* max + 1 */
        if (isnan(f))
            n->value.u = 0;
        else if (t < low)
            store_converted(n, to, false, min, 0.0);
        else if (t >= high)
            store_converted(n, to, false, max, 0.0);
        else if (kind == KIND_UINT)
            n->value.u = (uint64_t)t;
        else
            n->value.i = (int64_t)t;
    }
}

/* Gives weak literal N (described by V) the type TO: an int literal must
 * fit an integer type. */
static bcg_status concretize(typer *t, expr_node *n, const typed *v, bcg_dtype to)
{
    if (v->weak == STRONG)
        return BCG_OK;
    assert(n->op == OP_LITERAL);
    dtype_kind kind = dtype_kind_of(to);
    if (v->weak == WEAK_FLOAT) {
        assert(kind == KIND_FLOAT || kind == KIND_BOOL);
        store_converted(n, to, true, v->i, v->f);
        return BCG_OK;
    }
    if (v->weak == WEAK_INT && (kind == KIND_INT || kind == KIND_UINT)) {
        exact min, max;
        int_range(to, &min, &max);
        if (exact_compare(v->i, min) < 0 || exact_compare(v->i, max) > 0) {
            char text[32];
            exact_format(v->i, text, sizeof text);
            return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                           "literal %s at column %d does not fit in %s", text, n->column,
                           bcg_dtype_name(to));
        }
    }
    store_converted(n, to, false, v->i, 0.0);
    return BCG_OK;
}

static bcg_status concretize_all(typer *t, expr_node *n, const typed *c, int first, int count,
                                 bcg_dtype to)
{
    for (int k = first; k < first + count; k++) {
        bcg_status status = concretize(t, n->args[k], &c[k], to);
        if (status != BCG_OK)
            return status;
    }
    return BCG_OK;
}

/* The rules NumPy enforces, for folded and typed nodes alike.  P is the
 * promotion of the children that take part (for unary ops, the child). */
static bcg_status check_rules(typer *t, const expr_node *n, const typed *c, const typed *p)
{
    dtype_kind kind = dtype_kind_of(p->dtype);
    switch (n->op) {
    case OP_NEG:
        if (kind == KIND_BOOL)
            return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                           "unary '-' at column %d is not defined for bool "
                           "(use '!' or '~' for logical not)", n->column);
        break;
    case OP_SUB:
        if (kind == KIND_BOOL)
            return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                           "'-' at column %d is not defined for two bools "
                           "(use '^' or '!=' for logical xor)", n->column);
        break;
    case OP_BITNOT:
        if (kind == KIND_FLOAT)
            return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                           "'~' at column %d needs an integer or bool operand, not %s",
                           n->column, typed_name(&c[0]));
        break;
    case OP_SIGN:
        if (kind == KIND_BOOL)
            return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                           "sign at column %d is not defined for bool (NumPy has no bool loop)",
                           n->column);
        break;
    case OP_BITAND: case OP_BITOR: case OP_BITXOR: case OP_SHL: case OP_SHR:
        if (kind == KIND_FLOAT)
            return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                           "'%s' at column %d needs integer or bool operands, not %s and %s",
                           expr_op_name(n->op), n->column, typed_name(&c[0]),
                           typed_name(&c[1]));
        break;
    default:
        break;
    }
    return BCG_OK;
}

static bcg_status constant_error(typer *t, const expr_node *n, const char *what)
{
    return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                   "constant expression at column %d: %s", n->column, what);
}

static bcg_status overflow(typer *t, const expr_node *n)
{
    return constant_error(t, n, "integer overflow (the result is outside [-2**63, 2**64-1])");
}

/* Python's float floor division and modulo (Objects/floatobject.c); b != 0. */
static void python_divmod(double a, double b, double *floordiv, double *mod)
{
    double m = fmod(a, b), div = (a - m) / b;
    if (m != 0) {
        if ((b < 0) != (m < 0)) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = copysign(0.0, b);
    }
    double q;
    if (div != 0) {
        q = floor(div);
        if (div - q > 0.5)
            q += 1.0;
    } else {
        q = copysign(0.0, a / b);
    }
    *floordiv = q;
    *mod = m;
}

static bcg_status python_float_pow(typer *t, const expr_node *n, double x, double y, typed *out)
{
    if (x == 0 && y < 0)
        return constant_error(t, n, "zero cannot be raised to a negative power");
    if (x < 0 && isfinite(x) && isfinite(y) && y != floor(y))
        return constant_error(t, n, "a negative number to a fractional power is complex");
    double r = pow(x, y);
    if (isinf(r) && isfinite(x) && isfinite(y))
        return constant_error(t, n, "float overflow in '**'");
    *out = make_weak_float(r);
    return BCG_OK;
}

/* minimum/maximum of two weak values of kind K, NaN propagating */
static typed weak_extreme(const typed *a, const typed *b, weak_kind k, bool maximum)
{
    if (k == WEAK_FLOAT) {
        double x = weak_double(a), y = weak_double(b);
        if (isnan(x) || isnan(y))
            return make_weak_float(isnan(x) ? x : y);
        return make_weak_float(maximum ? (x < y ? y : x) : (y < x ? y : x));
    }
    int cmp = exact_compare(a->i, b->i);
    const typed *pick = (maximum ? cmp < 0 : cmp > 0) ? b : a;
    typed r = *pick;
    r.weak = k;
    r.dtype = weak_default(k);
    return r;
}

/* Folds node N whose children C are all weak literals into a weak value. */
static bcg_status fold(typer *t, expr_node *n, const typed *c, typed *out)
{
    int first = n->op == OP_WHERE ? 1 : 0;
    typed p = promote_all(c + first, n->arg_count - first);
    bcg_status status = check_rules(t, n, c, &p);
    if (status != BCG_OK)
        return status;
    weak_kind k = p.weak;
    exact r;
    switch (n->op) {
    case OP_NEG:
        *out = k == WEAK_FLOAT ? make_weak_float(-c[0].f) : make_weak_int(exact_negate(c[0].i));
        if (k == WEAK_INT && !exact_normalize(&out->i))
            return overflow(t, n);
        break;
    case OP_POS:
        *out = c[0];
        break;
    case OP_BITNOT:
        if (k == WEAK_BOOL) {
            *out = make_weak_bool(!weak_truth(&c[0]));
        } else {
            if (!exact_bitnot(c[0].i, &r))
                return overflow(t, n);
            *out = make_weak_int(r);
        }
        break;
    case OP_NOT: *out = make_weak_bool(!weak_truth(&c[0])); break;
    case OP_ISNAN: *out = make_weak_bool(isnan(weak_double(&c[0]))); break;
    case OP_ISINF: *out = make_weak_bool(isinf(weak_double(&c[0]))); break;
    case OP_ISFINITE: *out = make_weak_bool(isfinite(weak_double(&c[0]))); break;
    case OP_SIGNBIT: *out = make_weak_bool(signbit(weak_double(&c[0])) != 0); break;
    case OP_LOGICAL_XOR: *out = make_weak_bool(weak_truth(&c[0]) != weak_truth(&c[1])); break;
    case OP_SIGN:
        if (k == WEAK_FLOAT) {
            double x = weak_double(&c[0]);
            *out = make_weak_float(x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x);
        } else {
            *out = make_weak_int(exact_of(c[0].i.negative, c[0].i.magnitude != 0));
        }
        break;
    case OP_SQUARE:
        if (k == WEAK_FLOAT) {
            *out = make_weak_float(weak_double(&c[0]) * weak_double(&c[0]));
        } else {
            if (!exact_mul(c[0].i, c[0].i, &r))
                return overflow(t, n);
            *out = make_weak_int(r);
        }
        break;
    case OP_RECIPROCAL:
        if (k == WEAK_FLOAT) {
            *out = make_weak_float(1.0 / weak_double(&c[0]));
        } else if (c[0].i.magnitude == 1) {
            *out = make_weak_int(c[0].i);
        } else {
            /* NumPy's 1 / 0 for a Python int is i64's: the minimum (see
             * docs/semantics.md); False is i8's, 0 */
            bool minimum = k == WEAK_INT && c[0].i.magnitude == 0;
            *out = make_weak_int(exact_of(minimum, minimum ? SIGN_BIT : 0));
        }
        break;
    case OP_ROUND:
        if (k == WEAK_INT)
            *out = c[0];
        else
            *out = make_weak_float(rint(weak_double(&c[0])));
        break;
    case OP_AND: *out = make_weak_bool(weak_truth(&c[0]) && weak_truth(&c[1])); break;
    case OP_OR: *out = make_weak_bool(weak_truth(&c[0]) || weak_truth(&c[1])); break;
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE: {
        bool lt, eq, gt;
        if (k == WEAK_FLOAT) {
            double x = weak_double(&c[0]), y = weak_double(&c[1]);
            lt = x < y, eq = x == y, gt = x > y;
        } else {
            int cmp = exact_compare(c[0].i, c[1].i);
            lt = cmp < 0, eq = cmp == 0, gt = cmp > 0;
        }
        bool v = n->op == OP_EQ ? eq : n->op == OP_NE ? !eq : n->op == OP_LT ? lt
               : n->op == OP_LE ? lt || eq : n->op == OP_GT ? gt : gt || eq;
        *out = make_weak_bool(v);
        break;
    }
    case OP_BITAND: case OP_BITOR: case OP_BITXOR:
        if (!exact_bitwise(n->op, c[0].i, c[1].i, &r))
            return overflow(t, n);
        *out = k == WEAK_BOOL ? make_weak_bool(r.magnitude != 0) : make_weak_int(r);
        break;
    case OP_SHL: case OP_SHR:
        if (c[1].i.negative)
            return constant_error(t, n, "negative shift count");
        if (!exact_shift(n->op, c[0].i, c[1].i.magnitude, &r))
            return overflow(t, n);
        *out = make_weak_int(r);
        break;
    case OP_ADD: case OP_SUB: case OP_MUL:
        if (k == WEAK_BOOL) {
            bool x = weak_truth(&c[0]), y = weak_truth(&c[1]);
            *out = make_weak_bool(n->op == OP_ADD ? x || y : x && y);
        } else if (k == WEAK_FLOAT) {
            double x = weak_double(&c[0]), y = weak_double(&c[1]);
            *out = make_weak_float(n->op == OP_ADD ? x + y : n->op == OP_SUB ? x - y : x * y);
        } else {
            bool ok = n->op == OP_ADD ? exact_add(c[0].i, c[1].i, &r)
                    : n->op == OP_SUB ? exact_add(c[0].i, exact_negate(c[1].i), &r)
                                      : exact_mul(c[0].i, c[1].i, &r);
            if (!ok)
                return overflow(t, n);
            *out = make_weak_int(r);
        }
        break;
    case OP_DIV: case OP_FLOORDIV: case OP_MOD:
        if (k == WEAK_FLOAT ? weak_double(&c[1]) == 0 : c[1].i.magnitude == 0)
            return constant_error(t, n, "division by zero");
        if (n->op == OP_DIV) {
            *out = make_weak_float(weak_double(&c[0]) / weak_double(&c[1]));
        } else if (k == WEAK_FLOAT) {
            double q, m;
            python_divmod(weak_double(&c[0]), weak_double(&c[1]), &q, &m);
            *out = make_weak_float(n->op == OP_FLOORDIV ? q : m);
        } else if (n->op == OP_FLOORDIV) {
            if (!exact_floordiv(c[0].i, c[1].i, &r))
                return overflow(t, n);
            *out = make_weak_int(r);
        } else {
            *out = make_weak_int(exact_mod(c[0].i, c[1].i));
        }
        break;
    case OP_POW:
        if (k == WEAK_FLOAT || c[1].i.negative) {
            status = python_float_pow(t, n, weak_double(&c[0]), weak_double(&c[1]), out);
            if (status != BCG_OK)
                return status;
            break;
        }
        if (!exact_pow(c[0].i, c[1].i.magnitude, &r))
            return overflow(t, n);
        *out = make_weak_int(r);
        break;
    case OP_ABS:
        *out = c[0];
        if (k == WEAK_FLOAT)
            out->f = fabs(c[0].f);
        else
            out->i.negative = false;
        break;

    case OP_MINIMUM: case OP_MAXIMUM:
        *out = weak_extreme(&c[0], &c[1], k, n->op == OP_MAXIMUM);
        break;
    case OP_CLIP: {
        typed low = weak_extreme(&c[0], &c[1], k, true);
        *out = weak_extreme(&low, &c[2], k, false);
        break;
    }
    case OP_WHERE:
        *out = weak_truth(&c[0]) ? c[1] : c[2];
        if (k == WEAK_FLOAT && out->weak != WEAK_FLOAT)
            *out = make_weak_float(weak_double(out));
        else if (k == WEAK_INT)
            out->weak = WEAK_INT;
        out->dtype = weak_default(k);
        break;
    default:
        if (op_table[n->op].math_f64) {
            /* the float functions of ops.h, in double like Python's math module */
            *out = make_weak_float(op_table[n->op].math_f64(weak_double(&c[0])));
            break;
        }
        if (op_table[n->op].math2_f64) {
            *out = make_weak_float(op_table[n->op].math2_f64(weak_double(&c[0]),
                                                             weak_double(&c[1])));
            break;
        }
        if (op_table[n->op].own) { /* bcgen's own, as the evaluator computes f64 */
            *out = make_weak_float(eval_own_function(n->op, false, weak_double(&c[0]),
                                                     n->arg_count > 1 ? weak_double(&c[1]) : 0));
            break;
        }
        assert(!"fold: unexpected op");
        return fail(t->err, BCG_ERR_USAGE, "internal error: cannot fold '%s'",
                    expr_op_name(n->op));
    }
    /* The node becomes a literal; concretize gives it its type and value. */
    n->op = OP_LITERAL;
    n->arg_count = 0;
    n->args[0] = n->args[1] = n->args[2] = NULL;
    n->literal_is_float = out->weak == WEAK_FLOAT;
    n->dtype = out->dtype;
    return BCG_OK;
}

/* A cast of a literal folds into a strong literal; otherwise it is typed. */
static bcg_status type_cast(expr_node *n, const typed *c, typed *out)
{
    expr_node *child = n->args[0];
    if (child->op == OP_LITERAL) {
        bool is_float;
        exact i = {false, 0};
        double f = 0.0;
        if (c[0].weak != STRONG) {
            is_float = c[0].weak == WEAK_FLOAT;
            i = c[0].i;
            f = c[0].f;
        } else {
            dtype_kind kind = dtype_kind_of(child->dtype);
            is_float = kind == KIND_FLOAT;
            if (is_float)
                f = child->value.f;
            else if (kind == KIND_UINT)
                i = exact_of(false, child->value.u);
            else
                i = exact_from_i64(child->value.i);
        }
        n->op = OP_LITERAL;
        n->arg_count = 0;
        n->args[0] = NULL;
        n->literal_is_float = is_float;
        store_converted(n, n->cast_to, is_float, i, f);
    } else {
        n->dtype = n->cast_to;
    }
    *out = (typed){STRONG, n->dtype, {false, 0}, 0.0};
    return BCG_OK;
}

/* add_sat, sub_sat (RULE_SATURATE): the promotion of the arguments, which
 * must be an integer type; mul_q7, mul_q15, mul_q31 (RULE_FIXED): the
 * arguments' promotion must be the row's type (i8, i16, i32), or they are
 * all integer literals, made that type.  Literal arguments are given the
 * type as for any operator (one that does not fit is an error). */
static bcg_status type_saturating(typer *t, expr_node *n, const typed *c)
{
    typed p = promote_all(c, 2);
    const char *name = op_table[n->op].call;
    bcg_dtype to = p.dtype;
    dtype_kind kind = dtype_kind_of(p.dtype);
    bool integers = p.weak == STRONG ? kind == KIND_INT || kind == KIND_UINT : p.weak == WEAK_INT;
    if (op_table[n->op].rule == RULE_FIXED) {
        to = op_fixed_dtype(n->op);
        if (!integers || (p.weak == STRONG && p.dtype != to))
            return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                           "%s at column %d takes %s arguments (Q%d fixed point), not %s and %s",
                           name, n->column, bcg_dtype_name(to), op_fixed_fraction_bits(n->op),
                           typed_name(&c[0]), typed_name(&c[1]));
    } else if (!integers) {
        return fail_at(t->err, BCG_ERR_TYPE, n->column, -1, -1,
                       "%s at column %d needs integer arguments, not %s and %s "
                       "(their promotion is %s)", name, n->column, typed_name(&c[0]),
                       typed_name(&c[1]), p.weak == STRONG ? bcg_dtype_name(p.dtype)
                                                           : typed_name(&p));
    }
    bcg_status status = concretize_all(t, n, c, 0, 2, to);
    if (status != BCG_OK)
        return status;
    n->dtype = to;
    return BCG_OK;
}

/* Types node N whose children C are not all weak. */
static bcg_status type_strong(typer *t, expr_node *n, const typed *c, typed *out)
{
    bcg_status status;
    typed p;
    switch (op_table[n->op].rule) {
    case RULE_SAME:
        if ((status = check_rules(t, n, c, &c[0])) != BCG_OK)
            return status;
        n->dtype = c[0].dtype;
        break;
    case RULE_ROUND: /* round(i8) is i8, as np.round; round(bool) a float */
        n->dtype = dtype_kind_of(c[0].dtype) == KIND_INT || dtype_kind_of(c[0].dtype) == KIND_UINT
                       ? c[0].dtype : dtype_float_for(c[0].dtype);
        break;
    case RULE_NOT:
    case RULE_FLOAT_TEST: /* computes in dtype_float_for(x): expr_operation_type */
        n->dtype = BCG_BOOL;
        break;
    case RULE_FLOAT:
        if (n->arg_count == 2) { /* both arguments in the float type of their promotion */
            typed both = promote_all(c, 2);
            bcg_dtype f = dtype_float_for(both.dtype);
            for (int k = 0; k < 2; k++)
                if ((status = concretize(t, n->args[k], &c[k], f)) != BCG_OK)
                    return status;
            n->dtype = f;
            break;
        }
        n->dtype = dtype_float_for(c[0].dtype);
        break;
    case RULE_LOGICAL:
        for (int k = 0; k < 2; k++)
            if ((status = concretize(t, n->args[k], &c[k], BCG_BOOL)) != BCG_OK)
                return status;
        n->dtype = BCG_BOOL;
        break;
    case RULE_SATURATE: case RULE_FIXED:
        if ((status = type_saturating(t, n, c)) != BCG_OK)
            return status;
        break;
    case RULE_WHERE:
        if ((status = concretize(t, n->args[0], &c[0], BCG_BOOL)) != BCG_OK)
            return status;
        p = promote_all(c + 1, 2);
        if ((status = concretize_all(t, n, c, 1, 2, p.dtype)) != BCG_OK)
            return status;
        n->dtype = p.dtype;
        break;
    default:
        /* binary operators, minimum, maximum, pow, clip */
        if (n->op == OP_CLIP) {
            /* minimum(maximum(x, lo), hi), its definition (NumPy 1.24's
             * clip): promoted pair by pair, so clip(bool, 300, i8) is i64 */
            typed pair[2] = {promote_all(c, 2), c[2]};
            p = promote_all(pair, 2);
        } else {
            p = promote_all(c, n->arg_count);
        }
        if ((status = check_rules(t, n, c, &p)) != BCG_OK ||
            (status = concretize_all(t, n, c, 0, n->arg_count, p.dtype)) != BCG_OK)
            return status;
        switch (op_table[n->op].rule) {
        case RULE_COMPARE:
            n->dtype = BCG_BOOL;
            break;
        case RULE_DIVIDE:
            n->dtype = dtype_kind_of(p.dtype) == KIND_FLOAT ? p.dtype : BCG_F64;
            break;
        case RULE_INTEGRAL:
            n->dtype = p.dtype == BCG_BOOL ? BCG_I8 : p.dtype;
            break;
        default:
            n->dtype = p.dtype;
            break;
        }
        break;
    }
    *out = (typed){STRONG, n->dtype, {false, 0}, 0.0};
    return BCG_OK;
}

static bcg_status type_node(typer *t, expr_node *n, int depth, typed *out)
{
    /* DEPTH counts nodes from the root (1): a leaf under BCG_MAX_DEPTH levels */
    if (depth > BCG_MAX_DEPTH + 1)
        return fail_at(t->err, BCG_ERR_LIMIT, n->column, -1, -1,
                       "expression nests deeper than BCG_MAX_DEPTH (%d levels) at column %d",
                       BCG_MAX_DEPTH, n->column);
    if (n->op == OP_OPERAND) {
        if (n->operand < 0 || n->operand >= t->operand_count ||
            (unsigned)t->operand_dtypes[n->operand] >= BCG_DTYPE_COUNT)
            return fail_at(t->err, BCG_ERR_USAGE, n->column, n->operand, -1,
                           "operand %d at column %d has no valid dtype", n->operand, n->column);
        n->dtype = t->operand_dtypes[n->operand];
        *out = (typed){STRONG, n->dtype, {false, 0}, 0.0};
        return BCG_OK;
    }
    if (n->op == OP_LITERAL) {
        /* As expr_parse made it: weak, read from its provisional bool (True,
         * False), i64, u64 or f64 */
        if (n->dtype == BCG_BOOL && !n->literal_is_float)
            *out = make_weak_bool(n->value.i != 0);
        else if (n->literal_is_float)
            *out = make_weak_float(n->value.f);
        else if (n->dtype == BCG_U64)
            *out = make_weak_int(exact_of(false, n->value.u));
        else
            *out = make_weak_int(exact_from_i64(n->value.i));
        return BCG_OK;
    }
    if ((unsigned)n->op >= OP_COUNT || n->arg_count < 1 || n->arg_count > 3)
        return fail(t->err, BCG_ERR_USAGE, "expr_type: malformed node at column %d", n->column);
    typed c[3];
    bool all_weak = true;
    for (int k = 0; k < n->arg_count; k++) {
        bcg_status status = type_node(t, n->args[k], depth + 1, &c[k]);
        if (status != BCG_OK)
            return status;
        all_weak = all_weak && c[k].weak != STRONG;
    }
    if (n->op == OP_CAST)
        return type_cast(n, c, out);
    if (all_weak && (op_table[n->op].rule == RULE_SATURATE || op_table[n->op].rule == RULE_FIXED)) {
        /* literals only: typed as above (add_sat in i64, mul_q15 in i16)
         * and computed by the evaluator, a strong literal of that type */
        bcg_status status = type_saturating(t, n, c);
        if (status != BCG_OK)
            return status;
        expr_node folded = *n;
        eval_fold(n, (const expr_node *const *)n->args, &folded);
        *n = folded;
        *out = (typed){STRONG, n->dtype, {false, 0}, 0.0};
        return BCG_OK;
    }
    if (all_weak)
        return fold(t, n, c, out);
    return type_strong(t, n, c, out);
}

bcg_status expr_type(arena *a, expr_node *root, const bcg_dtype *operand_dtypes,
                     int operand_count, bcg_error *err)
{
    (void)a;   /* typing rewrites nodes in place and allocates nothing */
    if (!root || operand_count < 0 || (operand_count > 0 && !operand_dtypes))
        return fail(err, BCG_ERR_USAGE, "expr_type: missing tree or operand dtypes");
    typer t = {operand_dtypes, operand_count, err};
    typed result;
    bcg_status status = type_node(&t, root, 1, &result);
    if (status != BCG_OK)
        return status;
    return concretize(&t, root, &result, result.dtype);
}

bcg_dtype expr_operation_type(const expr_node *n)
{
    switch (n->op) {
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
        return dtype_promote(n->args[0]->dtype, n->args[1]->dtype);
    case OP_NOT: case OP_AND: case OP_OR: case OP_LOGICAL_XOR:
        return BCG_BOOL;
    case OP_CAST:
        return n->args[0]->dtype;
    case OP_ISNAN: case OP_ISINF: case OP_ISFINITE: case OP_SIGNBIT:
        return dtype_float_for(n->args[0]->dtype);
    default:
        return n->dtype;
    }
}
