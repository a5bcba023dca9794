/* fold.c - constant folding of the typed tree, between typing and emitting.
 *
 * The emitter never writes a C expression whose value a compiler can decide
 * from constants alone where a condition, a selection or a logical operator
 * is concerned.  Such expressions are valid C, but Debian's libtcc 0.9.27
 * miscompiles some of them: `((m) ? 0 : 0) ? x : y` and `(0 && m) ? x : y`
 * made it drop the whole store (issue 9, finding 1), a silent wrong result.
 * Rather than avoid each form tcc gets wrong, this pass removes the class:
 * every subtree that reads no operand becomes one literal, computed with
 * the reference evaluator's own semantics (eval_fold), and the operators
 * whose result one constant argument decides are simplified away:
 *
 *   a OP a, integer operation type    -> 0 or 1 (NaN keeps float ones)
 *   all arguments literals            -> the literal eval_fold computes
 *   where(K, x, y)                    -> x or y, converted to where's dtype
 *   where(c, x, x)                    -> x (kernels have no side effects)
 *   K && x, x && K, K || x, x || K    -> K, or bool(x)
 *   where(c, 1, 0), where(c, 0, 1)    -> bool(c), !c (integer types)
 *   where(p == q, p, q), where(p != q, q, p) -> q (integer types whose
 *                                        values the comparison keeps)
 *   where(p > q, p, q), where(p <= q, q, p) ... -> maximum(p, q); < and >=
 *                                        likewise minimum (the same types)
 *   x & 0, x * 0 (integer types)      -> 0
 *   x & ~0 -> x, x | ~0 -> ~0 (integer types, every bit set)
 *   x - x, x ^ x, sub_sat(x, x) (integer types) -> 0
 *   T(x) with x of dtype T            -> x
 *   x + 0, x - 0, x * 1, x | 0, x ^ 0, x << 0, x >> 0 (integer types),
 *   x * 1, x - 0.0, x / 1 (float types)  -> x, converted to the dtype
 *   minimum(x, x), maximum(x, x), abs(x) (unsigned, bool), +x -> x
 *   clip(x, lo, hi)                   -> minimum(maximum(x, lo), hi), each
 *                                        argument converted to clip's dtype
 *   a literal argument of another dtype -> the literal in the dtype the
 *                                        operator converts it to
 *
 * so after it a literal is never the condition of where, nor an argument of
 * && or ||, nor any argument of an operator whose other arguments are
 * literals too.  The last rule is for the same libtcc: it compiles c ? 1 : 0
 * as the condition's own jump value and then loses its type, so that
 * ~(unsigned)(c ? 1U : 0U) came out as a negative int (fuzz_jit_diff).  The input tree is not changed (the reference evaluator and
 * the header comment keep the expression as written): changed nodes are
 * copies in the arena.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

bool fold_same_tree(const expr_node *a, const expr_node *b)
{
    if (a->op != b->op || a->dtype != b->dtype || a->arg_count != b->arg_count)
        return false;
    if (a->op == OP_OPERAND && a->operand != b->operand)
        return false;
    if (a->op == OP_CAST && a->cast_to != b->cast_to)
        return false;
    if (a->op == OP_LITERAL && memcmp(&a->value, &b->value, sizeof a->value) != 0)
        return false;
    for (int k = 0; k < a->arg_count; k++)
        if (!fold_same_tree(a->args[k], b->args[k]))
            return false;
    return true;
}

static bool is_literal(const expr_node *n) { return n->op == OP_LITERAL; }

static expr_node *copy_node(arena *a, const expr_node *n)
{
    expr_node *copy = arena_alloc(a, sizeof *copy);
    if (copy)
        *copy = *n;
    return copy;
}

/* N (an operator node) computed over its literal arguments ARGS. */
static expr_node *literal_of(arena *a, const expr_node *n, expr_node *const *args)
{
    expr_node *out = copy_node(a, n);
    if (!out)
        return NULL;
    eval_fold(n, (const expr_node *const *)args, out);
    return out;
}

/* X converted to dtype T, as where() and the logical operators convert
 * their arguments (the same conversion as a cast). */
static expr_node *as_dtype(arena *a, expr_node *x, bcg_dtype t)
{
    if (x->dtype == t)
        return x;
    expr_node *cast = arena_alloc(a, sizeof *cast);
    if (!cast)
        return NULL;
    cast->op = OP_CAST;
    cast->column = x->column;
    cast->dtype = cast->cast_to = t;
    cast->arg_count = 1;
    cast->args[0] = x;
    if (is_literal(x))
        return literal_of(a, cast, cast->args);
    return cast;
}

/* The bool literal V, as a value of N's dtype. */
static expr_node *known_truth(arena *a, const expr_node *n, bool v)
{
    expr_node *literal = arena_alloc(a, sizeof *literal);
    if (!literal)
        return NULL;
    literal->op = OP_LITERAL;
    literal->column = n->column;
    literal->dtype = BCG_BOOL;
    literal->value.i = v;
    return as_dtype(a, literal, n->dtype);
}

static bool literal_truth(const expr_node *n)
{
    switch (dtype_kind_of(n->dtype)) {
    case KIND_FLOAT: return n->value.f != 0; /* NaN is true, as in C */
    case KIND_UINT: return n->value.u != 0;
    default: return n->value.i != 0;
    }
}

static bool is_comparison(expr_op op) { return op >= OP_EQ && op <= OP_GE; }

/* Whether N is the integer or bool literal V. */
static bool is_integer_literal(const expr_node *n, uint64_t v)
{
    if (!is_literal(n) || dtype_kind_of(n->dtype) == KIND_FLOAT)
        return false;
    return dtype_kind_of(n->dtype) == KIND_UINT ? n->value.u == v : (uint64_t)n->value.i == v;
}

/* !X, as a bool. */
static expr_node *negation(arena *a, expr_node *x)
{
    expr_node *not = arena_alloc(a, sizeof *not);
    if (!not)
        return NULL;
    not->op = OP_NOT;
    not->column = x->column;
    not->dtype = BCG_BOOL;
    not->arg_count = 1;
    not->args[0] = x;
    return not;
}

/* minimum or maximum (OP) of X and Y in dtype T, both converted to T first:
 * clip's definition, with no conversion left implicit (clip promotes its
 * three arguments together, a pair may promote to a narrower type). */
static expr_node *extreme_of(arena *a, expr_op op, expr_node *x, expr_node *y, bcg_dtype t,
                             int column)
{
    expr_node *n = arena_alloc(a, sizeof *n);
    if (!n || !(x = as_dtype(a, x, t)) || !(y = as_dtype(a, y, t)))
        return NULL;
    memset(n, 0, sizeof *n);
    n->op = op;
    n->column = column;
    n->dtype = t;
    n->arg_count = 2;
    n->args[0] = x;
    n->args[1] = y;
    return is_literal(x) && is_literal(y) ? literal_of(a, n, n->args) : n;
}

/* Whether float literal N is V (not -0.0 for 0: x + -0.0 is x, x + 0.0 is not). */
static bool is_float_literal(const expr_node *n, double v)
{
    return is_literal(n) && dtype_kind_of(n->dtype) == KIND_FLOAT && n->value.f == v &&
           !signbit(n->value.f);
}

/* Which argument of binary N (its arguments ARGS) is N's value because the
 * other is the operation's identity, or -1: integer x + 0, 0 + x, x - 0,
 * x * 1, 1 * x, x | 0, 0 | x, x ^ 0, 0 ^ x, x << 0, x >> 0; float x * 1,
 * 1 * x, x - 0.0, x / 1 (exact in IEEE arithmetic, NaN payloads aside). */
static int identity_argument(const expr_node *n, expr_node *const *args)
{
    bcg_dtype t = expr_operation_type(n);
    switch (dtype_kind_of(t)) {
    case KIND_INT: case KIND_UINT:
        switch (n->op) {
        case OP_ADD: case OP_BITOR: case OP_BITXOR:
            return is_integer_literal(args[1], 0) ? 0 : is_integer_literal(args[0], 0) ? 1 : -1;
        case OP_SUB: case OP_SHL: case OP_SHR:
            return is_integer_literal(args[1], 0) ? 0 : -1;
        case OP_MUL:
            return is_integer_literal(args[1], 1) ? 0 : is_integer_literal(args[0], 1) ? 1 : -1;
        default:
            return -1;
        }
    case KIND_FLOAT:
        switch (n->op) {
        case OP_MUL:
            return is_float_literal(args[1], 1) ? 0 : is_float_literal(args[0], 1) ? 1 : -1;
        case OP_SUB:
            return is_float_literal(args[1], 0) ? 0 : -1;
        case OP_DIV:
            return is_float_literal(args[1], 1) ? 0 : -1;
        default:
            return -1;
        }
    default:
        return -1;
    }
}

/* Whether N is a literal of integer dtype T with every bit set (-1, or
 * the unsigned maximum): x & N is x, x | N is N. */
static bool is_all_ones(const expr_node *n, bcg_dtype t)
{
    dtype_kind kind = dtype_kind_of(t);
    if (!is_literal(n) || n->dtype != t || (kind != KIND_INT && kind != KIND_UINT))
        return false;
    int bits = dtype_bits(t);
    return kind == KIND_INT ? n->value.i == -1
                            : n->value.u == (bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1);
}

/* Whether dtype T (an integer or bool type) holds integer N's value: a
 * literal's own value, else every value of N's dtype. */
static bool integer_fits(const expr_node *n, bcg_dtype t)
{
    dtype_kind from = dtype_kind_of(n->dtype), to = dtype_kind_of(t);
    if (from == KIND_FLOAT || to == KIND_FLOAT)
        return false;
    int bits = dtype_bits(t);
    if (is_literal(n)) {
        if (from == KIND_UINT || n->value.i >= 0) {
            uint64_t v = from == KIND_UINT ? n->value.u : (uint64_t)n->value.i;
            uint64_t most = to == KIND_BOOL ? 1 : to == KIND_UINT ? UINT64_MAX >> (64 - bits)
                                                                  : UINT64_MAX >> (65 - bits);
            return v <= most;
        }
        return to == KIND_INT && (bits == 64 || n->value.i >= -((int64_t)1 << (bits - 1)));
    }
    if (from == KIND_BOOL)
        return true;
    if (to == KIND_BOOL)
        return false;
    if (from == KIND_UINT)
        return to == KIND_UINT ? bits >= dtype_bits(n->dtype) : bits > dtype_bits(n->dtype);
    return to == KIND_INT && bits >= dtype_bits(n->dtype);
}

/* Whether X and Y are the same value: the same tree, or integer literals of
 * the same value in any dtypes (a == 3 types its 3 as a's dtype, where()
 * as the other branch's). */
static bool same_value(const expr_node *x, const expr_node *y)
{
    if (fold_same_tree(x, y))
        return true;
    if (!is_literal(x) || !is_literal(y) || dtype_kind_of(x->dtype) == KIND_FLOAT ||
        dtype_kind_of(y->dtype) == KIND_FLOAT)
        return false;
    bool x_negative = dtype_kind_of(x->dtype) != KIND_UINT && x->value.i < 0;
    bool y_negative = dtype_kind_of(y->dtype) != KIND_UINT && y->value.i < 0;
    uint64_t xv = dtype_kind_of(x->dtype) == KIND_UINT ? x->value.u : (uint64_t)x->value.i;
    uint64_t yv = dtype_kind_of(y->dtype) == KIND_UINT ? y->value.u : (uint64_t)y->value.i;
    return x_negative == y_negative && xv == yv;
}

/* where(p CMP q, x, y) with {x, y} the same values as {p, q} (N, its
 * folded arguments ARGS), on integers: the select gcc folds.  When p and q
 * reach the comparison's operation type unchanged (it holds all their
 * values), the comparison is the one of their mathematical values, so
 *
 *   where(p == q, x, y) -> y      where(p != q, x, y) -> x
 *
 * (when the select would take the other branch, the two are the same
 * value, and an integer conversion of a value does not depend on the
 * dtype it comes from), and when where's dtype holds them too, so that
 * its order is theirs (ties are equal values):
 *
 *   where(p > q, p, q), where(p >= q, p, q), where(p < q, q, p) ... -> maximum
 *   where(p < q, p, q), where(p <= q, p, q), where(p > q, q, p) ... -> minimum
 *
 * Not on floats: -0.0 == 0.0 picks a sign, NaN compares false and
 * minimum/maximum propagate it (eval.c, extreme); nor into a float where
 * (an integer's conversion to it rounds, and the branches are not the same
 * dtype).  Returns NULL for no fold, FAILED on no memory. */
static expr_node *select_of_compared(arena *a, const expr_node *n, expr_node *const *args,
                                     bool *failed)
{
    const expr_node *test = args[0];
    if (!is_comparison(test->op) || dtype_kind_of(n->dtype) == KIND_FLOAT)
        return NULL;
    bcg_dtype t = expr_operation_type(test);
    expr_node *p = test->args[0], *q = test->args[1];
    if (dtype_kind_of(t) == KIND_FLOAT || !integer_fits(p, t) || !integer_fits(q, t))
        return NULL;
    bool straight = same_value(args[1], p) && same_value(args[2], q);
    bool crossed = same_value(args[1], q) && same_value(args[2], p);
    if (!straight && !crossed)
        return NULL;
    expr_node *out;
    if (test->op == OP_EQ || test->op == OP_NE) {
        out = as_dtype(a, args[test->op == OP_EQ ? 2 : 1], n->dtype);
    } else {
        if (!integer_fits(args[1], n->dtype) || !integer_fits(args[2], n->dtype))
            return NULL;
        bool greater = test->op == OP_GT || test->op == OP_GE;
        out = extreme_of(a, greater == straight ? OP_MAXIMUM : OP_MINIMUM, args[1], args[2],
                         n->dtype, n->column);
    }
    *failed = out == NULL;
    return out;
}

/* A literal argument of another dtype than the one N converts it to
 * (eval.c, eval_node: every argument of an arithmetic, bitwise, extreme or
 * comparing operator goes to the operation type first; where's branches
 * to where's dtype) becomes the converted literal: the same value, and the
 * tiles then pass it as one element instead of converting a whole tile of
 * it each tile (c / 0 over f64 with the 0 an i16 of a folded x - x: a
 * bcg_mk_cast_i16_f64 of 1024 elements before each division, 0.65-0.75x
 * the cc backend on 884448 elements; 0.96-0.98 with it f64).  Not into
 * f16 or bf16 (their literals print through float), nor where a
 * comparison's operation type would change.  False on no memory. */
static bool convert_literals(arena *a, const expr_node *n, expr_node **args, bool *changed)
{
    int first = 0;
    switch (n->op) {
    case OP_CAST: case OP_NOT: case OP_AND: case OP_OR: case OP_LOGICAL_XOR:
    case OP_ISNAN: case OP_ISINF: case OP_ISFINITE: case OP_SIGNBIT:
        return true;
    case OP_WHERE:
        first = 1; /* (the condition is read as a truth value) */
        break;
    default:
        break;
    }
    bcg_dtype t = n->op == OP_WHERE ? n->dtype : expr_operation_type(n);
    if (dtype_is_half(t))
        return true;
    for (int k = first; k < n->arg_count; k++) {
        if (!is_literal(args[k]) || args[k]->dtype == t)
            continue;
        if (is_comparison(n->op) && dtype_promote(args[1 - k]->dtype, t) != t)
            continue;
        expr_node *converted = as_dtype(a, args[k], t);
        if (!converted)
            return false;
        args[k] = converted;
        *changed = true;
    }
    return true;
}

static expr_node *fold(arena *a, expr_node *n)
{
    if (n->op == OP_OPERAND || n->op == OP_LITERAL)
        return n;
    expr_node *args[3] = {NULL, NULL, NULL};
    bool changed = false, all_literal = true;
    for (int k = 0; k < n->arg_count; k++) {
        if (!(args[k] = fold(a, n->args[k])))
            return NULL;
        changed |= args[k] != n->args[k];
        all_literal &= is_literal(args[k]);
    }
    if (all_literal)
        return literal_of(a, n, args);

    if (is_comparison(n->op) && dtype_kind_of(expr_operation_type(n)) != KIND_FLOAT &&
        fold_same_tree(args[0], args[1]))
        return known_truth(a, n, n->op == OP_EQ || n->op == OP_LE || n->op == OP_GE);

    /* x & 0 and x * 0 on integers: libtcc folds these to the constant 0
     * itself, and a constant that reaches a condition is what it
     * miscompiles (a fuzz_jit_diff find: `c ? 0 : (b & (0 & a))` as a
     * where condition), so they are folded here first */
    if ((n->op == OP_BITAND || n->op == OP_MUL) &&
        dtype_kind_of(expr_operation_type(n)) != KIND_FLOAT &&
        (is_integer_literal(args[0], 0) || is_integer_literal(args[1], 0)))
        return known_truth(a, n, false);

    /* x & ~0 is x, x | ~0 is ~0 (every bit set, in the operation's
     * integer dtype; gcc decides both): the other operand is then read no
     * more (front.c, mark_unread) */
    if (n->op == OP_BITAND || n->op == OP_BITOR) {
        bcg_dtype t = expr_operation_type(n);
        for (int k = 0; k < 2; k++)
            if (is_all_ones(args[k], t))
                return as_dtype(a, args[n->op == OP_BITAND ? 1 - k : k], n->dtype);
    }

    /* x - x, x ^ x and sub_sat(x, x) on integers are 0: gcc decides them
     * too, and then warns about a comparison of the result with a
     * constant (-Wtype-limits on `(u16)(x - x) <= 4`, an emit_strict find) */
    if ((n->op == OP_SUB || n->op == OP_BITXOR || n->op == OP_SUB_SAT) &&
        dtype_kind_of(n->dtype) != KIND_FLOAT && n->dtype != BCG_BOOL &&
        fold_same_tree(args[0], args[1]))
        return known_truth(a, n, false);

    if (n->op == OP_WHERE) {
        if (is_literal(args[0]))
            return as_dtype(a, literal_truth(args[0]) ? args[1] : args[2], n->dtype);
        if (fold_same_tree(args[1], args[2]))
            return as_dtype(a, args[1], n->dtype);
        bool failed = false;
        expr_node *select = select_of_compared(a, n, args, &failed);
        if (select || failed)
            return select;
        bool one_zero = is_integer_literal(args[1], 1) && is_integer_literal(args[2], 0);
        bool zero_one = is_integer_literal(args[1], 0) && is_integer_literal(args[2], 1);
        if (one_zero || zero_one) {
            expr_node *c = as_dtype(a, args[0], BCG_BOOL);
            if (c && zero_one)
                c = negation(a, c);
            return c ? as_dtype(a, c, n->dtype) : NULL;
        }
    }

    /* identities: x + 0, x * 1, ... are x (gcc removes them; as tiles they
     * were a pass over memory: `a + 0` over i8 ran at 0.39x the cc
     * backend in the bench sweep) */
    if (n->arg_count == 2 && !(is_literal(args[0]) && is_literal(args[1]))) {
        int k = identity_argument(n, args);
        if (k >= 0)
            return as_dtype(a, args[k], n->dtype);
    }

    if ((n->op == OP_MINIMUM || n->op == OP_MAXIMUM) && fold_same_tree(args[0], args[1]))
        return as_dtype(a, args[0], n->dtype);
    /* absorption: maximum(x, minimum(x, y)) and minimum(x, maximum(x, y)),
     * either order, are x where both are on integers or bool (a NaN y
     * makes them NaN over floats).  gcc folds them: the sweep's seed 71
     * case 46, maximum(a, minimum(a, b)) over i32 with b at stride 3, ran
     * at 0.08x the cc backend, reading b for nothing. */
    if ((n->op == OP_MINIMUM || n->op == OP_MAXIMUM) && dtype_kind_of(n->dtype) != KIND_FLOAT) {
        expr_op inner = n->op == OP_MINIMUM ? OP_MAXIMUM : OP_MINIMUM;
        for (int k = 0; k < 2; k++) {
            const expr_node *x = args[k], *m = args[1 - k];
            if (m->op == inner && dtype_kind_of(m->dtype) != KIND_FLOAT &&
                dtype_kind_of(x->dtype) != KIND_FLOAT &&
                (fold_same_tree(m->args[0], x) || fold_same_tree(m->args[1], x)))
                return as_dtype(a, args[k], n->dtype);
        }
    }
    if (n->op == OP_POS ||
        (n->op == OP_ABS && (dtype_kind_of(n->dtype) == KIND_UINT || n->dtype == BCG_BOOL)))
        return as_dtype(a, args[0], n->dtype);

    /* a cast to the dtype its argument has is that argument (i32(minimum(a,
     * b)) over i32: the tiles made it one more copy pass) */
    if (n->op == OP_CAST && args[0]->dtype == n->dtype)
        return args[0];

    /* clip is minimum(maximum(x, lo), hi) (eval.c computes it so, as NumPy
     * 1.24 does, NaN and lo > hi included): written so, it takes the
     * minimum and maximum microkernels, where a three-argument row had
     * none and a tree with clip ran as per-element code (bench clip_norm,
     * 0.02x the hand loop) */
    if (n->op == OP_CLIP) {
        expr_node *low = extreme_of(a, OP_MAXIMUM, args[0], args[1], n->dtype, n->column);
        return low ? extreme_of(a, OP_MINIMUM, low, args[2], n->dtype, n->column) : NULL;
    }

    if (n->op == OP_AND || n->op == OP_OR) {
        for (int k = 0; k < 2; k++) {
            if (!is_literal(args[k]))
                continue;
            bool v = literal_truth(args[k]);
            /* false && x and true || x are decided; true && x and false || x are x */
            if (v == (n->op == OP_OR))
                return known_truth(a, n, v);
            expr_node *other = as_dtype(a, args[1 - k], BCG_BOOL);
            return other ? as_dtype(a, other, n->dtype) : NULL;
        }
    }

    if (!convert_literals(a, n, args, &changed))
        return NULL;
    if (!changed)
        return n;
    expr_node *copy = copy_node(a, n);
    if (copy)
        memcpy(copy->args, args, sizeof args);
    return copy;
}

bcg_status fold_tree(arena *a, expr_node *root, expr_node **out, bcg_error *err)
{
    *out = fold(a, root);
    if (!*out)
        return fail(err, BCG_ERR_NOMEM, "out of memory while folding constants");
    /* then in the narrowest exact types (narrow.c), folding what that
     * leaves: casts to the same type, extremes of equal arguments */
    expr_node *narrowed;
    if (narrow_tree(a, *out, &narrowed, NULL, err))
        return BCG_ERR_NOMEM;
    if (narrowed != *out && !(*out = fold(a, narrowed)))
        return fail(err, BCG_ERR_NOMEM, "out of memory while folding constants");
    return BCG_OK;
}
