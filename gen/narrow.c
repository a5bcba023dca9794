/* narrow.c - computing in the narrowest exact type, after constant folding.
 *
 * Random and real trees are full of integers that pass through a float
 * type and back: `i8(where(f64(a) > 2.0, 0, f64(a)))` with a i8 is
 * `where(a > 2, 0, a)` in i8 (32 lanes a vector), but written as it reads
 * it converts to f64 (4 lanes), selects there and saturates back.  gcc -O3
 * sees through such chains; this pass does it on the typed tree, for
 * tcc's per-element code and the microkernels alike.
 *
 * The key notion is an integer VIEW of a float-valued node N at a float
 * type F: an integer-typed node X such that converting X to F gives the
 * same bits as converting N to F, for every input, and every value X can
 * take (its range, range_of) is an integer F holds exactly (|x| <= 2^p,
 * p = 53, 24, 11, 8 for f64, f32, f16, bf16).  Exactly converted integers
 * are never -0.0 nor NaN, so the order, equality and extremes of the views
 * are those of the floats:
 *
 *   X integer typed, range exact in F        view X
 *   G(m), G a float type                     view(m, G), if exact in F too
 *   literal v of float type                  v, if an integer, not -0.0,
 *                                            and exact in F
 *   minimum/maximum/where(c, x, y) in G      the same operator over the
 *                                            views of x and y at G, in an
 *                                            integer type holding both
 *                                            (ties give the second argument
 *                                            in both, an equal value)
 *   abs(x) in G                              abs of x's view, in a signed
 *                                            type holding -|x| .. |x| (no
 *                                            wrap); |0| is +0.0 in floats too
 *
 * (not neg: -(0) is +0 in integers and -0.0 in floats; nor + - *: their
 * zeros may be -0.0 and their sums need their own range analysis).  The
 * rewrites, each giving the node's dtype and bits unchanged:
 *
 *   x CMP y computed in float type F, both with views X, Y at F
 *                                            -> X CMP Y (integers promote
 *                                               without rounding)
 *   x CMP v, v a float literal, x's view X   -> X CMP' k, or the constant:
 *       v NaN: false (!= true); with k = floor(v) or ceil(v) as below,
 *       out of X's range or at its end (X >= min): decided by the range
 *       X > v  == X > floor(v)     X <= v == X <= floor(v)
 *       X < v  == X < ceil(v)      X >= v == X >= ceil(v)
 *       X == v == X == v, false when v is no integer (!= likewise, true)
 *   v CMP x                                  -> the mirrored comparison
 *   minimum, maximum, where, abs of float dtype F with a view X at F
 *                                            -> F(X) (when X's type is no
 *                                               wider than F's nor 64-bit)
 *   T(x), T an integer type, x a float with view X:
 *       X's range inside T's                 -> T(X) (no wrap, no rounding)
 *       else (float -> integer saturates)    -> T(minimum(maximum(X, Tmin),
 *                                               Tmax)) in X's type, only the
 *                                               bounds X's range passes
 *   bool(x), where(x, ..), !x, x && y, x || y, logical_xor with a float
 *   x of view X at its own dtype             -> X in its place (x != 0 iff
 *                                               X != 0; no NaN)
 *   G(x), G a float type, x a float with view X exact in G -> G(X)
 *
 * fold_tree runs it between two folding passes (fold.c), which remove the
 * casts to the same type and the operators over equal arguments it leaves.
 * As in fold.c the input tree is not changed: changed nodes are copies in
 * the arena.  tests/unit/test_narrow.c checks every rule against the
 * reference evaluator over random trees and edge values.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

typedef struct narrower {
    arena *arena;
    bool failed;                      /* an allocation failed */
    long *fired;                      /* per NARROW_RULE_*, or NULL */
} narrower;

/* An inclusive range of integer values; KNOWN false for u64 beyond i64. */
typedef struct range {
    bool known;
    int64_t lo, hi;
} range;

static void count(narrower *w, int rule)
{
    if (w->fired)
        w->fired[rule]++;
}

static bool is_float(bcg_dtype t) { return dtype_kind_of(t) == KIND_FLOAT; }

static range dtype_range(bcg_dtype t)
{
    int bits = dtype_bits(t);
    switch (dtype_kind_of(t)) {
    case KIND_BOOL: return (range){true, 0, 1};
    case KIND_INT:
        return (range){true, bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1)),
                       bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1};
    case KIND_UINT:
        if (bits == 64)
            return (range){false, 0, 0};
        return (range){true, 0, (int64_t)(((uint64_t)1 << bits) - 1)};
    default: return (range){false, 0, 0};
    }
}

static bool range_inside(range inner, range outer)
{
    return inner.known && outer.known && inner.lo >= outer.lo && inner.hi <= outer.hi;
}

static range hull(range a, range b)
{
    if (!a.known || !b.known)
        return (range){false, 0, 0};
    return (range){true, a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
}

/* The significand bits of float type T: its integers up to 2^p are exact. */
static int precision(bcg_dtype t)
{
    switch (t) {
    case BCG_F64: return 53;
    case BCG_F32: return 24;
    case BCG_F16: return 11;
    case BCG_BF16: return 8;
    default: return 0;
    }
}

static bool exact_in(range r, bcg_dtype f)
{
    if (!r.known)
        return false;
    int64_t limit = (int64_t)1 << precision(f);
    return r.lo >= -limit && r.hi <= limit;
}

/* The values integer or bool node N can take. */
static range range_of(const expr_node *n)
{
    bcg_dtype t = n->dtype;
    range own = dtype_range(t);
    switch (n->op) {
    case OP_LITERAL:
        if (dtype_kind_of(t) == KIND_UINT)
            return n->value.u <= INT64_MAX ? (range){true, (int64_t)n->value.u, (int64_t)n->value.u}
                                           : (range){false, 0, 0};
        return (range){true, n->value.i, n->value.i};
    case OP_MINIMUM: case OP_MAXIMUM: case OP_WHERE: {
        int first = n->op == OP_WHERE ? 1 : 0;
        range r = {false, 0, 0};
        for (int k = first; k < n->arg_count; k++) {
            if (is_float(n->args[k]->dtype))
                return own;
            range a = range_of(n->args[k]);
            if (!range_inside(a, own))
                return own;
            r = k == first ? a : hull(r, a);
        }
        return r;
    }
    case OP_ABS: { /* no wrap when the dtype's minimum is not a value */
        if (dtype_kind_of(t) != KIND_INT)
            return own;
        range a = range_of(n->args[0]);
        if (!range_inside(a, own) || a.lo == own.lo)
            return own;
        int64_t lo = a.lo >= 0 ? a.lo : a.hi <= 0 ? -a.hi : 0;
        return (range){true, lo, a.hi > -a.lo ? a.hi : -a.lo};
    }
    case OP_CAST: {
        if (is_float(n->args[0]->dtype))
            return own;
        range a = range_of(n->args[0]);
        return range_inside(a, own) ? a : own;
    }
    default:
        return own;
    }
}

/* The narrowest integer type holding R, PREFERRED when it does. */
static bool type_holding(range r, bcg_dtype preferred, bcg_dtype *out)
{
    if (!is_float(preferred) && range_inside(r, dtype_range(preferred))) {
        *out = preferred;
        return true;
    }
    static const bcg_dtype order[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32, BCG_I64};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        if (range_inside(r, dtype_range(order[k]))) {
            *out = order[k];
            return true;
        }
    return false;
}

static expr_node *new_node(narrower *w, expr_op op, bcg_dtype t, int column)
{
    expr_node *n = arena_alloc(w->arena, sizeof *n);
    if (!n) {
        w->failed = true;
        return NULL;
    }
    memset(n, 0, sizeof *n);
    n->op = op;
    n->dtype = t;
    n->column = column;
    return n;
}

static expr_node *integer_literal(narrower *w, bcg_dtype t, int64_t v, int column)
{
    expr_node *n = new_node(w, OP_LITERAL, t, column);
    if (!n)
        return NULL;
    /* a float literal holds its value in value.f: as_type turns the view of
     * a decided comparison (a bool literal) back into the float it was
     * (f32(f16(0.0 <= (a < a))) is 1.0, not the double with bits 1) */
    if (is_float(t))
        n->value.f = (double)v;
    else if (dtype_kind_of(t) == KIND_UINT)
        n->value.u = (uint64_t)v;
    else
        n->value.i = t == BCG_BOOL ? v != 0 : v;
    return n;
}

/* X as dtype T: X itself, a literal of T (its value fits: callers check the
 * range), or a cast. */
static expr_node *as_type(narrower *w, expr_node *x, bcg_dtype t)
{
    if (!x || x->dtype == t)
        return x;
    if (x->op == OP_LITERAL && !is_float(x->dtype)) {
        range r = range_of(x);
        return integer_literal(w, t, r.lo, x->column);
    }
    expr_node *cast = new_node(w, OP_CAST, t, x->column);
    if (!cast)
        return NULL;
    cast->cast_to = t;
    cast->arg_count = 1;
    cast->args[0] = x;
    return cast;
}

/* The value of float literal N as its own dtype holds it. */
static double literal_float(const expr_node *n)
{
    return dtype_round_float(n->dtype, n->value.f);
}

/* An integer view of N at float type F (the header), or NULL. */
static expr_node *view(narrower *w, expr_node *n, bcg_dtype f)
{
    if (w->failed)
        return NULL;
    if (!is_float(n->dtype))
        return exact_in(range_of(n), f) ? n : NULL;
    bcg_dtype g = n->dtype;
    switch (n->op) {
    case OP_LITERAL: {
        double v = literal_float(n);
        if (!isfinite(v) || v != trunc(v) || (v == 0 && signbit(v)) || fabs(v) > 9007199254740992.0)
            return NULL;
        expr_node *x = integer_literal(w, BCG_I64, (int64_t)v, n->column);
        return x && exact_in(range_of(x), f) ? x : NULL;
    }
    case OP_CAST: {
        expr_node *x = view(w, n->args[0], g);
        return x && exact_in(range_of(x), f) ? x : NULL;
    }
    case OP_MINIMUM: case OP_MAXIMUM: case OP_WHERE: {
        int first = n->op == OP_WHERE ? 1 : 0;
        expr_node *x[2];
        range r = {false, 0, 0};
        bcg_dtype common = BCG_DTYPE_COUNT;
        for (int k = 0; k < 2; k++) {
            if (!(x[k] = view(w, n->args[first + k], g)))
                return NULL;
            range a = range_of(x[k]);
            r = k == 0 ? a : hull(r, a);
            if (x[k]->op != OP_LITERAL)
                common = common == BCG_DTYPE_COUNT ? x[k]->dtype : dtype_promote(common, x[k]->dtype);
        }
        if (common == BCG_DTYPE_COUNT || !exact_in(r, f) || !type_holding(r, common, &common))
            return NULL;
        expr_node *out = new_node(w, n->op, common, n->column);
        if (!out)
            return NULL;
        out->arg_count = n->arg_count;
        if (first)
            out->args[0] = n->args[0];
        for (int k = 0; k < 2; k++)
            if (!(out->args[first + k] = as_type(w, x[k], common)))
                return NULL;
        return out;
    }
    case OP_ABS: {
        expr_node *x = view(w, n->args[0], g);
        if (!x)
            return NULL;
        range a = range_of(x);
        int64_t most = a.hi > -a.lo ? a.hi : -a.lo; /* a.lo >= -2^53: no overflow */
        bcg_dtype t;
        if (!exact_in((range){true, 0, most}, f) ||
            !type_holding((range){true, -most, most},
                          dtype_kind_of(x->dtype) == KIND_INT ? x->dtype : BCG_I8, &t))
            return NULL;
        expr_node *out = new_node(w, OP_ABS, t, n->column);
        if (!out)
            return NULL;
        out->arg_count = 1;
        out->args[0] = as_type(w, x, t);
        return out->args[0] ? out : NULL;
    }
    default:
        return NULL;
    }
}

static bool is_comparison(expr_op op) { return op >= OP_EQ && op <= OP_GE; }

static expr_op mirrored(expr_op op)
{
    switch (op) {
    case OP_LT: return OP_GT;
    case OP_LE: return OP_GE;
    case OP_GT: return OP_LT;
    case OP_GE: return OP_LE;
    default: return op;
    }
}

static expr_node *truth_literal(narrower *w, const expr_node *n, bool v)
{
    return as_type(w, integer_literal(w, BCG_BOOL, v, n->column), n->dtype);
}

/* X OP v for integer node X and float value V (N the comparison). */
static expr_node *compare_with_value(narrower *w, const expr_node *n, expr_op op, expr_node *x,
                                     double v)
{
    if (isnan(v))
        return truth_literal(w, n, op == OP_NE);
    if (op == OP_EQ || op == OP_NE) {
        if (v != trunc(v))
            return truth_literal(w, n, op == OP_NE);
    } else {
        v = op == OP_GT || op == OP_LE ? floor(v) : ceil(v);
    }
    range r = range_of(x);
    /* a bound beyond X's values, or at their end, decides the comparison
     * (and C compilers warn about `u8 >= 0`, -Wtype-limits); X's range is
     * within +-2^53, so its ends and V compare exactly as doubles */
    double lo = (double)r.lo, hi = (double)r.hi;
    int decided = -1; /* or the comparison's value */
    switch (op) {
    case OP_EQ: case OP_NE:
        if (v < lo || v > hi)
            decided = op == OP_NE;
        break;
    case OP_GT: decided = hi <= v ? 0 : lo > v ? 1 : -1; break;
    case OP_GE: decided = hi < v ? 0 : lo >= v ? 1 : -1; break;
    case OP_LT: decided = lo >= v ? 0 : hi < v ? 1 : -1; break;
    case OP_LE: decided = lo > v ? 0 : hi <= v ? 1 : -1; break;
    default: break;
    }
    if (decided >= 0) {
        count(w, NARROW_RULE_DECIDED);
        return truth_literal(w, n, decided);
    }
    /* r.lo <= v <= r.hi, an integer: exact as an int64 */
    expr_node *k = integer_literal(w, x->dtype, (int64_t)v, n->column);
    expr_node *out = new_node(w, op, BCG_BOOL, n->column);
    if (!k || !out)
        return NULL;
    out->arg_count = 2;
    out->args[0] = x;
    out->args[1] = k;
    count(w, NARROW_RULE_COMPARE_LITERAL);
    return as_type(w, out, n->dtype);
}

/* Comparison N over ARGS, computed in a float type, in integers; or NULL. */
static expr_node *narrow_comparison(narrower *w, const expr_node *n, expr_node *const *args)
{
    bcg_dtype f = dtype_promote(args[0]->dtype, args[1]->dtype);
    if (!is_float(f))
        return NULL;
    for (int k = 0; k < 2; k++) {
        const expr_node *literal = args[k];
        if (literal->op != OP_LITERAL)
            continue;
        double v;
        if (is_float(literal->dtype)) {
            v = dtype_round_float(f, literal_float(literal));
        } else { /* an integer literal up to 2^24: exact in float, then rounded to F */
            range r = range_of(literal);
            if (!r.known || r.lo < -(1 << 24) || r.lo > (1 << 24))
                break;
            v = dtype_round_float(f, (double)r.lo);
        }
        expr_node *x = view(w, args[1 - k], f);
        if (!x || args[1 - k]->op == OP_LITERAL)
            return NULL;
        return compare_with_value(w, n, k == 1 ? n->op : mirrored(n->op), x, v);
    }
    expr_node *x = view(w, args[0], f), *y = view(w, args[1], f);
    if (!x || !y || is_float(dtype_promote(x->dtype, y->dtype)))
        return NULL;
    if (x->op == OP_LITERAL && y->op == OP_LITERAL)
        return NULL;
    /* a literal view is an i64 literal: give it the other side's type when
     * it fits, so the comparison is in that type */
    if (x->op == OP_LITERAL && range_inside(range_of(x), dtype_range(y->dtype)))
        x = as_type(w, x, y->dtype);
    if (y->op == OP_LITERAL && x && range_inside(range_of(y), dtype_range(x->dtype)))
        y = as_type(w, y, x->dtype);
    expr_node *out = new_node(w, n->op, BCG_BOOL, n->column);
    if (!out || !x || !y)
        return NULL;
    out->arg_count = 2;
    out->args[0] = x;
    out->args[1] = y;
    count(w, NARROW_RULE_COMPARE_VIEWS);
    return as_type(w, out, n->dtype);
}

/* OP (maximum or minimum) of X and the integer BOUND in dtype D: one side
 * of a saturating clamp; NULL when out of memory. */
static expr_node *bounded(narrower *w, expr_op op, expr_node *x, int64_t bound, bcg_dtype d,
                          int column)
{
    expr_node *m = new_node(w, op, d, column);
    if (!m)
        return NULL;
    m->arg_count = 2;
    m->args[0] = x;
    m->args[1] = integer_literal(w, d, bound, column);
    return m;
}

/* T(x), T an integer or bool type, x's view X: saturated as float ->
 * integer conversions are. */
static expr_node *narrow_cast(narrower *w, const expr_node *n, expr_node *x)
{
    bcg_dtype t = n->dtype;
    range r = range_of(x), target = dtype_range(t);
    if (!target.known) /* u64: beyond int64, but X's values are below 2^53 */
        target = (range){true, 0, INT64_MAX};
    if (t == BCG_BOOL || range_inside(r, target)) {
        count(w, NARROW_RULE_CAST);
        return as_type(w, x, t);
    }
    bcg_dtype d = x->dtype;
    if (r.lo < target.lo && !(x = bounded(w, OP_MAXIMUM, x, target.lo, d, n->column)))
        return NULL;
    if (r.hi > target.hi && !(x = bounded(w, OP_MINIMUM, x, target.hi, d, n->column)))
        return NULL;
    count(w, NARROW_RULE_SATURATE);
    return w->failed ? NULL : as_type(w, x, t);
}

static bool is_truth_tested(expr_op op)
{
    return op == OP_NOT || op == OP_AND || op == OP_OR || op == OP_LOGICAL_XOR;
}

static expr_node *narrow(narrower *w, expr_node *n)
{
    if (n->op == OP_OPERAND || n->op == OP_LITERAL)
        return n;
    expr_node *args[3] = {NULL, NULL, NULL};
    bool changed = false;
    for (int k = 0; k < n->arg_count; k++) {
        if (!(args[k] = narrow(w, n->args[k])))
            return NULL;
        changed |= args[k] != n->args[k];
    }

    /* arguments tested for truth: a float with a view is non-zero when
     * its view is */
    for (int k = 0; k < n->arg_count; k++) {
        if (!(is_truth_tested(n->op) || (n->op == OP_WHERE && k == 0)) ||
            !is_float(args[k]->dtype) || args[k]->op == OP_LITERAL)
            continue;
        expr_node *x = view(w, args[k], args[k]->dtype);
        if (x) {
            args[k] = x;
            changed = true;
            count(w, NARROW_RULE_TRUTH);
        }
    }

    if (is_comparison(n->op)) {
        expr_node *out = narrow_comparison(w, n, args);
        if (out || w->failed)
            return out;
    }

    if (n->op == OP_CAST && is_float(args[0]->dtype) && args[0]->op != OP_LITERAL) {
        bcg_dtype t = n->dtype;
        expr_node *x = view(w, args[0], args[0]->dtype);
        if (x && !is_float(t))
            return narrow_cast(w, n, x);
        if (x && exact_in(range_of(x), t)) {
            count(w, NARROW_RULE_FLOAT_CAST);
            return as_type(w, x, t);
        }
    }

    if (is_float(n->dtype) && (n->op == OP_MINIMUM || n->op == OP_MAXIMUM ||
                               n->op == OP_WHERE || n->op == OP_ABS)) {
        expr_node probe = *n;
        memcpy(probe.args, args, sizeof args);
        expr_node *x = view(w, &probe, n->dtype);
        /* not in 64-bit integers: AVX2 has no i64 -> f64 conversion, and
         * abs(f64(i32)) is a float and, not an i64 abs */
        int width = dtype_is_half(n->dtype) ? 32 : dtype_bits(n->dtype);
        if (x && dtype_bits(x->dtype) <= width && dtype_bits(x->dtype) <= 32) {
            count(w, NARROW_RULE_INTEGER_OP);
            return as_type(w, x, n->dtype);
        }
    }

    if (w->failed)
        return NULL;
    if (!changed)
        return n;
    expr_node *copy = new_node(w, n->op, n->dtype, n->column);
    if (!copy)
        return NULL;
    *copy = *n;
    memcpy(copy->args, args, sizeof args);
    return copy;
}

bcg_status narrow_tree(arena *a, expr_node *root, expr_node **out, long *fired, bcg_error *err)
{
    narrower w = {.arena = a, .fired = fired};
    *out = narrow(&w, root);
    if (!*out || w.failed)
        return fail(err, BCG_ERR_NOMEM, "out of memory while narrowing the tree");
    return BCG_OK;
}
