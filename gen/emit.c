/* emit.c - turns the typed expression tree and the iteration plan into one
 * hermetic C99 translation unit (templates/kernel.c.tmpl, with the helper
 * functions of templates/ops.c.tmpl) defining
 *
 *     void NAME(void *output, const void *const *inputs);
 *
 * This file computes values (offsets, trip counts, the text of each
 * statement); the templates hold the fixed C around them.
 *
 *   tree + plan
 *     -> number nodes     pre-order ids, subtree sizes
 *     -> levels           the loop level each subtree is invariant from
 *     -> hoisting         which subtrees become locals, and where
 *     -> steps            loop opens/closes, locals, stores, position bumps
 *     -> render           ops.c.tmpl into `helpers`, then kernel.c.tmpl
 *
 * Glossary: "level" l of a value = it only changes with loops 0..l-1, so it
 * can be computed once just before loop l (level 0: at the top of the
 * function; level loop_count: per element).  "position" = a running element
 * offset (out_pos, in0_pos) that follows one operand through the loop nest;
 * at the end of each trip of loop l it moves by stride[l] minus what the
 * loops inside moved it (NumPy's back-strides), so every access is the
 * position plus a literal.  "group" = the innermost loop's body unrolled
 * unroll_factor times; the trips left over (extent % factor) follow the
 * group loop as straight-line statements, so no runtime remainder branch.
 * "fully unrolled" = no loops at all: one statement per output element, each
 * offset a literal.
 *
 * Values: every emitted C expression holds a value in range for the dtype
 * of its node; bool values are ints that are exactly 0 or 1 (read from
 * memory as `!= 0`).  Integer arithmetic wraps in an unsigned type and is
 * converted back; everything that could be undefined in C (division,
 * remainder, shifts, float to integer, pow) goes through the total helpers
 * in ops.c.tmpl.  Integer literals compared against something are bound to
 * const locals so that compilers do not warn about comparisons they can
 * decide (-Wtype-limits, -Wbool-compare, -Wtautological-compare); integer
 * comparisons of a value with itself are folded for the same reason.
 *
 * In-place kernels (the output is input k, same pointer and strides): each
 * statement reads element e of the aliased input and writes element e of
 * the output, so statements in any order, unrolled or not, see the values
 * the reference evaluator sees.  A hoisted load could go stale, so the
 * aliased input and every subtree containing it are never hoisted.
 *
 * Operand names from the user never reach the source: operands are out,
 * in0, in1, ... and the header comment shows the expression regenerated
 * from the tree.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Full unrolling is skipped (loops are used) when elements x tree nodes
 * exceeds this, to keep the source of a large expression reasonable. */
#define MAX_UNROLLED_NODES ((int64_t)1 << 20)

/* ---- helper families and libm functions --------------------------------- */

/* ORDER HELPER: the lists of ops.c.tmpl, in the order they are emitted. */
typedef enum helper {
    HELPER_FROM_BITS, HELPER_TO_INT, HELPER_TO_INT_F32, HELPER_ABS, HELPER_FLOORDIV_INT,
    HELPER_MOD_INT,
    HELPER_FLOORDIV_FLOAT, HELPER_MOD_FLOAT, HELPER_POW_INT, HELPER_SHL, HELPER_SHR,
    HELPER_MINIMUM, HELPER_MAXIMUM, HELPER_COUNT
} helper;

static const char *const helper_lists[HELPER_COUNT] = {
    "from_bits", "to_int", "to_int_f32", "abs_int", "floordiv_int", "mod_int", "floordiv_float",
    "mod_float", "pow_int", "shl", "shr", "minimum", "maximum",
};

/* The C library functions a kernel may call: the float functions of
 * ops.h, numbered by their expr_op (so in the table's order), then the
 * ones the emitter uses itself.  This is also the order of their
 * declarations in emitted code. */
typedef int math_function;
enum { MATH_FABS = OP_COUNT, MATH_FMOD, MATH_POW, MATH_COPYSIGN, MATH_COUNT };

static const struct {
    const char *name;
    int arity;
} own_math_functions[MATH_COUNT - OP_COUNT] = {
    {"fabs", 1}, {"fmod", 2}, {"pow", 2}, {"copysign", 2},
};

/* libm's name for F (double; the float one adds "f"), or NULL. */
static const char *math_name(math_function f)
{
    return f < OP_COUNT ? op_table[f].math : own_math_functions[f - OP_COUNT].name;
}

static int math_arity(math_function f)
{
    return f < OP_COUNT ? op_table[f].arity : own_math_functions[f - OP_COUNT].arity;
}

/* How the header comment and messages write operator OP: its ops.h symbol;
 * NULL for the rows that are not operators. */
static const char *op_symbol(expr_op op)
{
    if ((unsigned)op >= OP_COUNT || op == OP_OPERAND || op == OP_LITERAL || op == OP_CAST)
        return NULL;
    return op_table[op].symbol;
}

/* ---- the emitter's state ------------------------------------------------- */

typedef struct node_info {
    int level;          /* see the glossary */
    int size;           /* nodes in the subtree, this one included */
    const char *local;  /* the local holding this node's value, or NULL */
    bool declares;      /* this occurrence declares `local` */
    signed char folded; /* -1, or the known 0/1 of an integer self-comparison */
} node_info;

typedef struct emitter {
    compile *c;
    const plan *p;
    arena *arena;
    bcg_error *err;
    bcg_status status;           /* first failure; sticky */
    int input_count;
    bcg_dtype out_dtype;

    int node_count;
    const expr_node **nodes;     /* pre-order */
    int *post_order;             /* the same ids in post-order */
    node_info *info;
    int per_element;             /* the level of a value read per element */
    int input_level[BCG_MAX_OPERANDS];
    bool input_used[BCG_MAX_OPERANDS];
    bool input_loaded[BCG_MAX_OPERANDS]; /* its in<k>_value local is declared */
    int shared_count, literal_count;

    bool unrolled;               /* no loops at all */
    int64_t factor;              /* innermost unroll factor */
    int64_t groups, rest;        /* innermost extent = groups * factor + rest */
    bool group_loop;             /* the groups run in a runtime loop */
    bool tiled;                  /* the innermost run calls microkernels (see below) */
    bool stream;                 /* ... and the root's call has streaming stores */
    bool rows;                   /* ... and one rows call does the two innermost loops */
    int64_t block, block_inner;  /* > 0: the two innermost loops run in blocks (outer x inner trips) */
    bool has_position[BCG_MAX_OPERANDS + 1]; /* plan operand index */

    /* The statement being written: plan operand k sits at
     * (has_position[k] && use_position ? <k>_pos : 0) + offset[k]. */
    bool use_position;
    int64_t offset[BCG_MAX_OPERANDS + 1];

    bool need[HELPER_COUNT][BCG_DTYPE_COUNT];
    bool need_math[MATH_COUNT][2];   /* [function][0: double, 1: float] */

    tmpl_scope *scope;
    strbuf line;                     /* scratch for one statement */
} emitter;

static const char *op_label(expr_op op)
{
    return op_symbol(op) ? op_symbol(op) : "this operator";
}

static void fail_nomem(emitter *e)
{
    if (e->status == BCG_OK)
        e->status = fail(e->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
}

static void fail_internal(emitter *e, const char *what, const expr_node *n)
{
    if (e->status == BCG_OK)
        e->status = fail_at(e->err, BCG_ERR_TYPE, n ? n->column : 0, -1, -1,
                            "cannot emit %s for %s operands", what,
                            n ? bcg_dtype_name(expr_operation_type(n)) : "these");
}

static const char *copy_text(emitter *e, const char *text)
{
    const char *copy = arena_strndup(e->arena, text ? text : "", text ? strlen(text) : 0);
    if (!copy)
        fail_nomem(e);
    return copy;
}

/* ---- small text helpers ----------------------------------------------------- */

static bool is_float(bcg_dtype t) { return dtype_kind_of(t) == KIND_FLOAT; }
static bool is_signed(bcg_dtype t) { return dtype_kind_of(t) == KIND_INT; }

/* The C type of a value of dtype T in an expression (bool values are ints). */
static const char *value_ctype(bcg_dtype t) { return t == BCG_BOOL ? "int" : dtype_ctype(t); }

/* The unsigned type the arithmetic of T wraps in (after C's promotions). */
static const char *wide_unsigned(bcg_dtype t)
{
    return dtype_bits(t) > 32 ? "unsigned long long" : "unsigned int";
}

/* The C type's own arithmetic already wraps in T: no casts needed. */
static bool wraps_natively(bcg_dtype t) { return t == BCG_U32 || t == BCG_U64; }

/* Shortest decimal text that reads back as V (as a float when SINGLE), with
 * a '.' or an exponent so that C reads it as floating.  Subnormals are
 * written in hex, which is exact: a decimal subnormal is inexact and clang
 * warns about it (-Wliteral-range). */
static void format_float(char *buf, size_t cap, double v, bool single)
{
    double magnitude = fabs(v);
    if (magnitude != 0 && magnitude < (single ? 1.17549435e-38 : 2.2250738585072014e-308)) {
        snprintf(buf, cap, "%a", v);
        return;
    }
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(buf, cap, "%.*g", precision, v);
        if (single ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v)
            break;
    }
    for (char *s = buf; *s; s++)
        if (*s == ',') /* a locale's decimal comma */
            *s = '.';
    if (!strpbrk(buf, ".e"))
        strncat(buf, ".0", cap - strlen(buf) - 1);
}

/* A literal's value as the header comment shows it. */
static void format_literal_plain(char *buf, size_t cap, const expr_node *n)
{
    switch (dtype_kind_of(n->dtype)) {
    case KIND_BOOL: snprintf(buf, cap, "%s", n->value.i ? "true" : "false"); break;
    case KIND_INT: snprintf(buf, cap, "%lld", (long long)n->value.i); break;
    case KIND_UINT: snprintf(buf, cap, "%llu", (unsigned long long)n->value.u); break;
    case KIND_FLOAT:
        if (isnan(n->value.f))
            snprintf(buf, cap, "nan");
        else if (isinf(n->value.f))
            snprintf(buf, cap, "%sinf", n->value.f < 0 ? "-" : "");
        else
            format_float(buf, cap, n->value.f, n->dtype == BCG_F32);
        break;
    }
}

/* The canonical form of the tree for the header comment: fully
 * parenthesised, operands as in0, in1, ..., literals as numbers. */
static void format_expression(strbuf *sb, const expr_node *n)
{
    char buf[64];
    switch (n->op) {
    case OP_OPERAND:
        sb_printf(sb, "in%d", n->operand);
        return;
    case OP_LITERAL:
        format_literal_plain(buf, sizeof buf, n);
        sb_puts(sb, buf);
        return;
    case OP_CAST:
        sb_printf(sb, "%s(", bcg_dtype_name(n->cast_to));
        format_expression(sb, n->args[0]);
        sb_putc(sb, ')');
        return;
    default:
        break;
    }
    const char *symbol = op_symbol(n->op) ? op_symbol(n->op) : "?";
    if (op_table[n->op].call && strcmp(op_table[n->op].call, symbol) == 0) {
        sb_printf(sb, "%s(", symbol);
        for (int k = 0; k < n->arg_count; k++) {
            if (k)
                sb_puts(sb, ", ");
            format_expression(sb, n->args[k]);
        }
        sb_putc(sb, ')');
    } else if (n->arg_count == 1) {
        sb_printf(sb, "(%s", symbol);
        format_expression(sb, n->args[0]);
        sb_putc(sb, ')');
    } else {
        sb_putc(sb, '(');
        format_expression(sb, n->args[0]);
        sb_printf(sb, " %s ", symbol);
        format_expression(sb, n->args[1]);
        sb_putc(sb, ')');
    }
}

static void format_dims(char *buf, size_t cap, int rank, const int64_t *dims)
{
    size_t used = 0;
    used += (size_t)snprintf(buf, cap, "(");
    for (int d = 0; d < rank && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", d ? "," : "",
                                 (long long)dims[d]);
    if (used < cap)
        snprintf(buf + used, cap - used, ")");
}

/* ---- numbering and levels ---------------------------------------------------- */

static int count_nodes(const expr_node *n)
{
    int count = 1;
    for (int k = 0; k < n->arg_count; k++)
        count += count_nodes(n->args[k]);
    return count;
}

static int number_nodes(emitter *e, const expr_node *n, int id)
{
    e->nodes[id] = n;
    e->info[id].folded = -1;
    int next = id + 1;
    for (int k = 0; k < n->arg_count; k++)
        next = number_nodes(e, n->args[k], next);
    e->info[id].size = next - id;
    return next;
}

static int order_post(emitter *e, int id, int visit)
{
    for (int k = 0, child = id + 1; k < e->nodes[id]->arg_count; k++) {
        visit = order_post(e, child, visit);
        child += e->info[child].size;
    }
    e->post_order[visit] = id;
    return visit + 1;
}

static int child_id(const emitter *e, int id, int k)
{
    int child = id + 1;
    for (int j = 0; j < k; j++)
        child += e->info[child].size;
    return child;
}

static bool is_comparison(expr_op op) { return op >= OP_EQ && op <= OP_GE; }

/* An integer compared with itself has a known result, and compilers warn
 * about writing such a comparison; NaN keeps float ones honest. */
static int folded_comparison(const expr_node *n)
{
    if (!is_comparison(n->op) || is_float(expr_operation_type(n)) ||
        !fold_same_tree(n->args[0], n->args[1]))
        return -1;
    return n->op == OP_EQ || n->op == OP_LE || n->op == OP_GE;
}

/* Levels bottom-up; a folded comparison is a constant whose operands are
 * never read. */
static void assign_levels(emitter *e, int id)
{
    const expr_node *n = e->nodes[id];
    int level = 0;
    e->info[id].folded = (signed char)folded_comparison(n);
    if (e->info[id].folded >= 0) {
        e->info[id].level = 0;
        return;
    }
    if (n->op == OP_OPERAND) {
        level = e->input_level[n->operand];
        e->input_used[n->operand] = true;
    }
    for (int k = 0; k < n->arg_count; k++) {
        int child = child_id(e, id, k);
        assign_levels(e, child);
        if (e->info[child].level > level)
            level = e->info[child].level;
    }
    e->info[id].level = level;
}

/* Chooses the locals: an input invariant along more loops than its parent
 * is loaded once (in<k>_value, declared by its first such occurrence); a subtree invariant along more loops than its parent
 * is computed once (shared<n>); an integer literal compared against is
 * bound to a const local (literal<n>).  Post-order, so a local is always
 * declared before the locals that use it. */
static void choose_locals(emitter *e, int id, int parent_level, bool parent_compares)
{
    const expr_node *n = e->nodes[id];
    node_info *info = &e->info[id];
    if (info->folded >= 0)
        return;
    for (int k = 0; k < n->arg_count; k++)
        choose_locals(e, child_id(e, id, k), info->level, is_comparison(n->op));
    char name[32];
    if (n->op == OP_LITERAL) {
        if (!parent_compares || is_float(n->dtype))
            return;
        snprintf(name, sizeof name, "literal%d", e->literal_count++);
        info->declares = true;
    } else if (n->op == OP_OPERAND) {
        if (info->level >= e->per_element || info->level >= parent_level)
            return;
        snprintf(name, sizeof name, "in%d_value", n->operand);
        info->declares = !e->input_loaded[n->operand];
        e->input_loaded[n->operand] = true;
    } else {
        if (info->level >= e->per_element || info->level >= parent_level)
            return;
        snprintf(name, sizeof name, "shared%d", e->shared_count++);
        info->declares = true;
    }
    info->local = copy_text(e, name);
}

/* ---- expressions --------------------------------------------------------------- */

static void put_node(emitter *e, strbuf *sb, int id);

static void put_offset(emitter *e, strbuf *sb, int k)
{
    long long constant = (long long)e->offset[k];
    if (e->use_position && e->has_position[k]) {
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
static void convert_open(emitter *e, strbuf *sb, bcg_dtype from, bcg_dtype to)
{
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

static void convert_close(strbuf *sb, bcg_dtype from, bcg_dtype to)
{
    if (from == to)
        return;
    if (to == BCG_BOOL)
        sb_puts(sb, " != 0)");
    else if (narrow_unsigned_from_signed(from, to))
        sb_puts(sb, to == BCG_U8 ? ") & 0xFFu)" : ") & 0xFFFFu)");
    else if (is_float(from) && !is_float(to))
        sb_putc(sb, ')');
}

/* The value of node ID as a value of dtype WANT. */
static void put_as(emitter *e, strbuf *sb, int id, bcg_dtype want)
{
    const expr_node *n = e->nodes[id];
    convert_open(e, sb, n->dtype, want);
    if (e->info[id].local)
        sb_puts(sb, e->info[id].local);
    else
        put_node(e, sb, id);
    convert_close(sb, n->dtype, want);
}

static void put_literal(emitter *e, strbuf *sb, const expr_node *n)
{
    char buf[64];
    bcg_dtype t = n->dtype;
    switch (dtype_kind_of(t)) {
    case KIND_BOOL:
        sb_puts(sb, n->value.i ? "1" : "0");
        return;
    case KIND_INT: {
        long long v = (long long)n->value.i;
        const char *suffix = t == BCG_I64 ? "LL" : "";
        if (t == BCG_I64 && v == LLONG_MIN)
            sb_puts(sb, "(-9223372036854775807LL - 1)");
        else if (t == BCG_I32 && v == INT_MIN)
            sb_puts(sb, "(-2147483647 - 1)");
        else if (v < 0)
            sb_printf(sb, "(%lld%s)", v, suffix);
        else
            sb_printf(sb, "%lld%s", v, suffix);
        return;
    }
    case KIND_UINT:
        sb_printf(sb, "%llu%s", (unsigned long long)n->value.u,
                  t == BCG_U64 ? "ULL" : t == BCG_U32 ? "U" : "");
        return;
    case KIND_FLOAT:
        break;
    }
    bool single = t == BCG_F32;
    double v = single ? (double)(float)n->value.f : n->value.f;
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
    format_float(buf, sizeof buf, v, single);
    sb_printf(sb, signbit(v) ? "(%s%s)" : "%s%s", buf, single ? "f" : "");
}

static void put_call1(emitter *e, strbuf *sb, const char *function, int a, bcg_dtype t)
{
    sb_printf(sb, "%s(", function);
    put_as(e, sb, a, t);
    sb_putc(sb, ')');
}

static void put_call2(emitter *e, strbuf *sb, const char *function, int a, int b, bcg_dtype t)
{
    sb_printf(sb, "%s(", function);
    put_as(e, sb, a, t);
    sb_puts(sb, ", ");
    put_as(e, sb, b, t);
    sb_putc(sb, ')');
}

/* A call of helper family H instantiated for T: "bcg_<name>_<dtype>". */
static const char *helper_name(emitter *e, helper h, const char *name, bcg_dtype t, char *buf,
                               size_t cap)
{
    e->need[h][t] = true;
    snprintf(buf, cap, "bcg_%s_%s", name, bcg_dtype_name(t));
    return buf;
}

static void put_infix(emitter *e, strbuf *sb, int a, const char *symbol, int b, bcg_dtype t)
{
    sb_putc(sb, '(');
    /* clang's -Wbitwise-instead-of-logical flags `x != 0 & f(y) != 0`; an
     * explicit int on the left says the bitwise operator is meant. */
    if (t == BCG_BOOL && (symbol[0] == '&' || symbol[0] == '|') && symbol[1] == 0)
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
static bool wraps_inline(const emitter *e, int id, bcg_dtype t)
{
    const expr_node *n = e->nodes[id];
    return !e->info[id].local && n->dtype == t &&
           (n->op == OP_ADD || n->op == OP_SUB || n->op == OP_MUL || n->op == OP_NEG) &&
           expr_operation_type(n) == t;
}

static void put_wide_operand(emitter *e, strbuf *sb, int id, bcg_dtype t);

/* The wide unsigned value "(W)a op (W)b" of a wrapping node, unparenthesised. */
static void put_wide_expression(emitter *e, strbuf *sb, int id, bcg_dtype t)
{
    const expr_node *n = e->nodes[id];
    int a = child_id(e, id, 0);
    if (n->op == OP_NEG) {
        sb_puts(sb, "0U - ");
        put_wide_operand(e, sb, a, t);
        return;
    }
    put_wide_operand(e, sb, a, t);
    sb_printf(sb, " %s ", op_symbol(n->op));
    put_wide_operand(e, sb, child_id(e, id, 1), t);
}

static void put_wide_operand(emitter *e, strbuf *sb, int id, bcg_dtype t)
{
    if (wraps_inline(e, id, t)) {
        sb_putc(sb, '(');
        put_wide_expression(e, sb, id, t);
        sb_putc(sb, ')');
        return;
    }
    sb_printf(sb, "(%s)", wide_unsigned(t));
    put_as(e, sb, id, t);
}

/* Integer + - * and unary - wrapping in T: "(T)((W)a op (W)b)". */
static void put_wrapping(emitter *e, strbuf *sb, int id, bcg_dtype t)
{
    const expr_node *n = e->nodes[id];
    if (wraps_natively(t)) {
        if (n->op == OP_NEG) {
            sb_puts(sb, "(0U - ");
            put_as(e, sb, child_id(e, id, 0), t);
            sb_putc(sb, ')');
        } else {
            put_infix(e, sb, child_id(e, id, 0), op_symbol(n->op), child_id(e, id, 1), t);
        }
        return;
    }
    sb_printf(sb, "(%s)(", dtype_ctype(t));
    put_wide_expression(e, sb, id, t);
    sb_putc(sb, ')');
}

static void put_float_function(emitter *e, strbuf *sb, math_function f, int a, bcg_dtype t)
{
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

/* minimum / maximum / clip in T; bool uses & and |. */
static void put_extreme(emitter *e, strbuf *sb, expr_op op, int a, int b, bcg_dtype t)
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
static void put_computed(emitter *e, strbuf *sb, int id, bcg_dtype t)
{
    const expr_node *n = e->nodes[id];
    int a = n->arg_count > 0 ? child_id(e, id, 0) : -1;
    int b = n->arg_count > 1 ? child_id(e, id, 1) : -1;
    char name[40];

    if (t == BCG_BOOL) {
        /* bool arithmetic is the u8 arithmetic's result tested for non-zero
         * (as eval.c's from_bits), with the usual spellings where they exist */
        switch (n->op) {
        case OP_POS: case OP_ABS: put_as(e, sb, a, t); return;
        case OP_BITNOT: sb_putc(sb, '('); put_as(e, sb, a, t); sb_puts(sb, " ^ 1)"); return;
        case OP_ADD: case OP_BITOR: put_infix(e, sb, a, "|", b, t); return;
        case OP_MUL: case OP_BITAND: put_infix(e, sb, a, "&", b, t); return;
        case OP_SUB: case OP_BITXOR: put_infix(e, sb, a, "^", b, t); return;
        case OP_MINIMUM: case OP_MAXIMUM: put_extreme(e, sb, n->op, a, b, t); return;
        case OP_CLIP:
            sb_puts(sb, "((");
            put_as(e, sb, a, t);
            sb_puts(sb, " | ");
            put_as(e, sb, b, t);
            sb_puts(sb, ") & ");
            put_as(e, sb, child_id(e, id, 2), t);
            sb_putc(sb, ')');
            return;
        default:
            if (op_table[n->op].math)
                break;
            sb_putc(sb, '(');
            put_computed(e, sb, id, BCG_U8);
            sb_puts(sb, " != 0)");
            return;
        }
    }

    switch (n->op) {
    case OP_POS:
        put_as(e, sb, a, t);
        return;
    case OP_NEG:
        if (is_float(t)) {
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
        if (wraps_natively(t)) {
            sb_puts(sb, "(~");
        } else {
            sb_printf(sb, "((%s)~(%s)", dtype_ctype(t), wide_unsigned(t));
        }
        put_as(e, sb, a, t);
        sb_putc(sb, ')');
        return;
    case OP_ADD: case OP_SUB: case OP_MUL: {
        const char *symbol = op_symbol(n->op);
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
            convert_close(sb, BCG_F64, t);
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
            put_infix(e, sb, a, op_symbol(n->op), b, t);
        } else {
            sb_printf(sb, "(%s)", dtype_ctype(t));
            put_infix(e, sb, a, op_symbol(n->op), b, t);
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
    case OP_MINIMUM: case OP_MAXIMUM:
        put_extreme(e, sb, n->op, a, b, t);
        return;
    case OP_CLIP: {
        char outer[40];
        helper_name(e, HELPER_MINIMUM, "minimum", t, outer, sizeof outer);
        helper_name(e, HELPER_MAXIMUM, "maximum", t, name, sizeof name);
        sb_printf(sb, "%s(", outer);
        put_call2(e, sb, name, a, b, t);
        sb_puts(sb, ", ");
        put_as(e, sb, child_id(e, id, 2), t);
        sb_putc(sb, ')');
        return;
    }
    default:
        if (op_table[n->op].math) { /* a float function of ops.h */
            if (is_float(t)) {
                put_float_function(e, sb, (math_function)n->op, a, t);
            } else { /* typing keeps these on floats; be defined anyway, as eval.c */
                bcg_dtype f = dtype_float_for(t);
                convert_open(e, sb, f, t);
                put_float_function(e, sb, (math_function)n->op, a, f);
                convert_close(sb, f, t);
            }
            return;
        }
        break;
    }
    fail_internal(e, op_label(n->op), n);
}

/* Comparisons give bool, comparing in the promoted operation type. */
static void put_comparison(emitter *e, strbuf *sb, int id)
{
    const expr_node *n = e->nodes[id];
    if (e->info[id].folded >= 0) {
        sb_puts(sb, e->info[id].folded ? "1" : "0");
        return;
    }
    put_infix(e, sb, child_id(e, id, 0), op_symbol(n->op), child_id(e, id, 1),
              expr_operation_type(n));
}

/* The value of node ID as a value of its own dtype, ignoring its local. */
static void put_node(emitter *e, strbuf *sb, int id)
{
    const expr_node *n = e->nodes[id];
    switch (n->op) {
    case OP_OPERAND:
        sb_printf(sb, n->dtype == BCG_BOOL ? "(in%d[" : "in%d[", n->operand);
        put_offset(e, sb, n->operand + 1);
        sb_puts(sb, n->dtype == BCG_BOOL ? "] != 0)" : "]");
        return;
    case OP_LITERAL:
        put_literal(e, sb, n);
        return;
    case OP_CAST:
        put_as(e, sb, child_id(e, id, 0), n->dtype);
        return;
    case OP_NOT: {
        int a = child_id(e, id, 0);
        convert_open(e, sb, BCG_BOOL, n->dtype);
        sb_putc(sb, '(');
        put_as(e, sb, a, e->nodes[a]->dtype);
        sb_puts(sb, e->nodes[a]->dtype == BCG_BOOL ? " ^ 1)" : " == 0)");
        convert_close(sb, BCG_BOOL, n->dtype);
        return;
    }
    case OP_AND: case OP_OR:
        /* Both sides are bool values, ints that are exactly 0 or 1, and
         * kernels have no side effects, so & and | give what && and || give,
         * without branches.  And libtcc 0.9.27 mistypes the result of && and
         * || (a jump value) once cast to unsigned int: ~(unsigned)(x && y)
         * came out as a signed int (issue 9, found by fuzz_jit_diff). */
        convert_open(e, sb, BCG_BOOL, n->dtype);
        put_infix(e, sb, child_id(e, id, 0), n->op == OP_AND ? "&" : "|", child_id(e, id, 1),
                  BCG_BOOL);
        convert_close(sb, BCG_BOOL, n->dtype);
        return;
    case OP_WHERE: {
        /* (fold.c never leaves c ? 1 : 0 or c ? 0 : 1 here: see there.)  A
         * condition that is not a comparison or a load is compared with 0:
         * libtcc 0.9.27 drops the whole store when a condition it folds to a
         * constant itself (c ? 0 : 0, m && 0, x & 0 ...) is used bare, and
         * `!= 0` keeps it right whatever it folds (tested on libtcc) */
        int c = child_id(e, id, 0);
        expr_op cop = e->nodes[c]->op;
        bool guard = !e->info[c].local && cop != OP_OPERAND && !is_comparison(cop);
        sb_puts(sb, guard ? "((" : "(");
        put_as(e, sb, c, BCG_BOOL);
        sb_puts(sb, guard ? ") != 0 ? " : " ? ");
        put_as(e, sb, child_id(e, id, 1), n->dtype);
        sb_puts(sb, " : ");
        put_as(e, sb, child_id(e, id, 2), n->dtype);
        sb_putc(sb, ')');
        return;
    }
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
        convert_open(e, sb, BCG_BOOL, n->dtype);
        put_comparison(e, sb, id);
        convert_close(sb, BCG_BOOL, n->dtype);
        return;
    default: {
        bcg_dtype t = expr_operation_type(n);
        convert_open(e, sb, t, n->dtype);
        put_computed(e, sb, id, t);
        convert_close(sb, t, n->dtype);
        return;
    }
    }
}

/* ---- steps: the body of the function ------------------------------------------ */

static tmpl_scope *new_step(emitter *e, int depth, const char *kind)
{
    tmpl_scope *step = tmpl_list_add(e->scope, "steps");
    char indent[2 * BCG_MAX_RANK * 4 + 8];
    int width = 4 * depth;
    if (width >= (int)sizeof indent)
        width = (int)sizeof indent - 1;
    memset(indent, ' ', (size_t)width);
    indent[width] = 0;
    tmpl_set_str(step, "indent", indent);
    if (kind)
        tmpl_set_bool(step, kind, true);
    return step;
}

static void step_open(emitter *e, int depth, int loop, int64_t trips)
{
    tmpl_scope *step = new_step(e, depth, "is_open");
    char counter[16];
    snprintf(counter, sizeof counter, "i%d", loop);
    tmpl_set_str(step, "counter", counter);
    tmpl_set_int(step, "trips", trips);
}

static void step_close(emitter *e, int depth) { new_step(e, depth, "is_close"); }

static void step_advance(emitter *e, int depth, int k, int64_t amount)
{
    if (amount == 0)
        return;
    tmpl_scope *step = new_step(e, depth, "is_advance");
    char name[24];
    if (k == 0)
        snprintf(name, sizeof name, "out_pos");
    else
        snprintf(name, sizeof name, "in%d_pos", k - 1);
    tmpl_set_str(step, "name", name);
    tmpl_set_str(step, "operator", amount < 0 ? "-=" : "+=");
    char magnitude[24];
    snprintf(magnitude, sizeof magnitude, "%llu",
             amount < 0 ? 0ULL - (unsigned long long)amount : (unsigned long long)amount);
    tmpl_set_str(step, "amount", magnitude);
}

/* The statement for the element at the current offsets. */
static void step_store(emitter *e, int depth)
{
    strbuf *line = &e->line;
    line->len = 0;
    put_offset(e, line, 0);
    sb_putc(line, 0); /* keeps data non-NULL */
    if (line->failed) {
        fail_nomem(e);
        return;
    }
    size_t value_at = line->len;
    put_as(e, line, 0, e->out_dtype);
    if (line->failed) {
        fail_nomem(e);
        return;
    }
    tmpl_scope *step = new_step(e, depth, NULL);
    tmpl_set_str(step, "offset", line->data);
    tmpl_set_str(step, "value", line->data + value_at);
}

/* Declares the locals of LEVEL in post-order, so every local comes after
 * the locals its value uses. */
static void step_locals(emitter *e, int level, int depth)
{
    for (int k = 0; k <= e->input_count; k++)
        e->offset[k] = 0;
    for (int visit = 0; visit < e->node_count; visit++) {
        int id = e->post_order[visit];
        const node_info *info = &e->info[id];
        if (!info->declares || info->level != level)
            continue;
        strbuf *line = &e->line;
        line->len = 0;
        put_node(e, line, id);
        if (line->failed) {
            fail_nomem(e);
            return;
        }
        tmpl_scope *step = new_step(e, depth, "is_local");
        tmpl_set_str(step, "ctype", value_ctype(e->nodes[id]->dtype));
        tmpl_set_str(step, "name", info->local);
        tmpl_set_str(step, "value", line->data);
    }
}

/* ---- microkernel tiles (the JIT form only) ------------------------------------------ */

/* When c->microkernels is set (bcg_compile; never bcg_emit or the AOT form)
 * and the innermost run is long, the run is not written out element by
 * element: it is cut into tiles of at most TILE_ELEMENTS, and each operation
 * of the tree becomes one call per tile of a vectorised library microkernel
 * (runtime/microkernels.c, ABI at its top) writing into a stack temporary;
 * the root's call writes the output.  So `a * b + c` reads each input once
 * and writes the output once, at vector speed, while tcc still compiles
 * only the outer structure.  A tile of 1024 elements keeps the temporaries
 * of a small tree within L1.  Trees with an operation no microkernel
 * computes (casts, integer division, mixed dtypes, bool arithmetic, ...)
 * keep the straight-line form; results are the same bit for bit either way.
 *
 * Each microkernel called is declared at block scope just before the tile
 * loop, so the unit still needs no header. */

#define TILE_ELEMENTS 1024
#define MAX_TILE_TEMPORARIES 12
#define MAX_TILE_STRIDE 8

typedef enum tile_shape { TILE_BINARY, TILE_COMPARE, TILE_WHERE, TILE_UNARY } tile_shape;

/* The microkernel family that computes node ID ("add", "gt", "exp"), or NULL. */
static const char *tile_family(const emitter *e, int id, tile_shape *kind)
{
    const expr_node *n = e->nodes[id];
    if ((unsigned)n->op >= OP_COUNT || !op_table[n->op].tile || e->info[id].folded >= 0)
        return NULL;
    if (n->op == OP_WHERE)
        *kind = TILE_WHERE;
    else if (is_comparison(n->op))
        *kind = TILE_COMPARE;
    else
        *kind = n->arg_count == 1 ? TILE_UNARY : TILE_BINARY;
    return op_table[n->op].tile;
}

/* The dtype a microkernel for node ID computes in (its name's suffix). */
static bcg_dtype tile_dtype(const emitter *e, int id)
{
    const expr_node *n = e->nodes[id];
    return n->op == OP_WHERE ? n->dtype : expr_operation_type(n);
}

/* Whether the subtree ID gives a value of dtype WANT through microkernels
 * alone; counts its operations into *operations. */
static bool tile_supported(const emitter *e, int id, bcg_dtype want, int *operations)
{
    const expr_node *n = e->nodes[id];
    if (n->dtype != want)
        return false;
    if (n->op == OP_OPERAND || n->op == OP_LITERAL)
        return true;
    tile_shape kind;
    const char *family = tile_family(e, id, &kind);
    bcg_dtype t = tile_dtype(e, id);
    if (!family || t == BCG_BOOL || (kind == TILE_COMPARE ? want != BCG_BOOL : want != t))
        return false;
    char name[48];
    snprintf(name, sizeof name, "bcg_mk_%s_%s", family, bcg_dtype_name(t));
    if (!microkernel_exists(name) || ++*operations > MAX_TILE_TEMPORARIES)
        return false;
    for (int k = 0; k < n->arg_count; k++)
        if (!tile_supported(e, child_id(e, id, k),
                            kind == TILE_WHERE && k == 0 ? BCG_BOOL : t, operations))
            return false;
    return true;
}

/* Whether this kernel's innermost run goes through microkernels. */
static bool tiles_chosen(const emitter *e)
{
    const compile *c = e->c;
    const plan *p = e->p;
    int operations = 0;
    if (!c->microkernels || c->options.microkernel_run <= 0 || e->unrolled || p->empty ||
        p->loop_count == 0)
        return false;
    int inner = p->loop_count - 1;
    if (p->extent[inner] < c->options.microkernel_run || p->stride[0][inner] != 1)
        return false;
    /* A run that reads an input with a long stride (a transposed view) is
     * bound by cache and TLB misses, not arithmetic; measured (make bench,
     * `transposed`), the per-element code is faster there than tiles. */
    for (int k = 1; k < p->operand_count; k++)
        if (p->stride[k][inner] > MAX_TILE_STRIDE || p->stride[k][inner] < -MAX_TILE_STRIDE)
            return false;
    const expr_node *root = e->nodes[0];
    return root->op != OP_OPERAND && root->op != OP_LITERAL &&
           tile_supported(e, 0, e->out_dtype, &operations);
}

/* Whether the root's arguments are all operands and literals (no
 * temporaries): the trees that stream and that take the rows form. */
static bool root_reads_leaves(const emitter *e)
{
    for (int k = 0; k < e->nodes[0]->arg_count; k++) {
        const expr_node *child = e->nodes[child_id(e, 0, k)];
        if (child->op != OP_OPERAND && child->op != OP_LITERAL)
            return false;
    }
    return true;
}

/* "const T tile_literalID = VALUE;" into LINE: literal ID as the variable
 * whose address a microkernel call takes (stride 0). */
static void put_tile_literal(emitter *e, strbuf *line, int id)
{
    const expr_node *n = e->nodes[id];
    sb_printf(line, "const %s tile_literal%d = ", dtype_ctype(n->dtype), id);
    put_literal(e, line, n);
    sb_putc(line, ';');
}

/* Whether the root's call writes the output with streaming stores
 * (bcg_options.stream_stores, decided in bcg_compile as c->stream): binary
 * operations, comparisons and `where` have a streaming (_nt) variant, which
 * computes a block of results in registers and stores it past the caches.
 * Only when the root reads operands and literals alone: measured with
 * temporaries (a*b+c, where(a > 0, a, 0.1 * a) over (4096,4096)), the
 * streaming root was as often slower as faster (5.3-5.9 ms plain against
 * 6.2-7.4 ms streaming for the select), while single operations gain
 * 25-50% (README, Performance, round 4). */
static bool stream_chosen(const emitter *e)
{
    tile_shape kind;
    const char *family = tile_family(e, 0, &kind);
    char name[48];
    if (!family || kind == TILE_UNARY || !root_reads_leaves(e))
        return false;
    snprintf(name, sizeof name, "bcg_mk_%s_%s_nt", family, bcg_dtype_name(tile_dtype(e, 0)));
    return microkernel_exists(name);
}

static void step_code(emitter *e, int depth, const char *code)
{
    if (!code) /* copy_text ran out of memory and said so */
        return;
    tmpl_scope *step = new_step(e, depth, "is_code");
    tmpl_set_str(step, "code", code);
}

/* The argument pair "pointer, stride" of child ID in the tile loop. */
static void put_tile_argument(emitter *e, strbuf *sb, int id, const char *const *temporaries,
                              const char *const *literals)
{
    const expr_node *n = e->nodes[id];
    if (temporaries[id]) {
        sb_printf(sb, "%s, 1", temporaries[id]);
        return;
    }
    if (n->op == OP_LITERAL) {
        sb_printf(sb, "&%s, 0", literals[id]);
        return;
    }
    int k = n->operand + 1;
    long long stride = (long long)e->p->stride[k][e->p->loop_count - 1];
    sb_printf(sb, "in%d", n->operand);
    if (e->has_position[k])
        sb_printf(sb, " + in%d_pos", n->operand);
    if (stride == 1)
        sb_puts(sb, " + tile_start");
    else if (stride > 0)
        sb_printf(sb, " + tile_start * %lld", stride);
    else if (stride < 0)
        sb_printf(sb, " - tile_start * %llu", 0ULL - (unsigned long long)stride);
    sb_printf(sb, stride < 0 ? ", (%lld)" : ", %lld", stride);
}

/* The innermost run as tiles of microkernel calls, at DEPTH. */
static void emit_tiles(emitter *e, int depth)
{
    const plan *p = e->p;
    int64_t extent = p->extent[p->loop_count - 1];
    int64_t tile = extent < TILE_ELEMENTS ? extent : TILE_ELEMENTS;
    const char **temporaries = arena_alloc(e->arena, sizeof *temporaries * (size_t)e->node_count);
    const char **literals = arena_alloc(e->arena, sizeof *literals * (size_t)e->node_count);
    bool *declared = arena_alloc(e->arena, sizeof *declared * (size_t)e->node_count);
    if (!temporaries || !literals || !declared) {
        fail_nomem(e);
        return;
    }
    strbuf *line = &e->line;
    char name[48];

    /* declarations: each microkernel once, then the literals */
    for (int visit = 0; visit < e->node_count; visit++) {
        int id = e->post_order[visit];
        const expr_node *n = e->nodes[id];
        tile_shape kind;
        const char *family = n->op == OP_LITERAL || n->op == OP_OPERAND
                                 ? NULL : tile_family(e, id, &kind);
        line->len = 0;
        if (n->op == OP_LITERAL) {
            snprintf(name, sizeof name, "tile_literal%d", id);
            literals[id] = copy_text(e, name);
            put_tile_literal(e, line, id);
        } else if (family) {
            bool seen = false;
            const char *type = dtype_ctype(tile_dtype(e, id));
            snprintf(name, sizeof name, "bcg_mk_%s_%s", family, bcg_dtype_name(tile_dtype(e, id)));
            for (int other = 0; other < visit && !seen; other++) {
                int before = e->post_order[other];
                tile_shape other_kind;
                const char *other_family = e->nodes[before]->op == OP_LITERAL ||
                                                   e->nodes[before]->op == OP_OPERAND
                                               ? NULL : tile_family(e, before, &other_kind);
                seen = declared[before] && other_family == family &&
                       tile_dtype(e, before) == tile_dtype(e, id);
            }
            declared[id] = true;
            if (seen && !(id == 0 && e->stream))
                continue;
            if (id == 0 && e->stream) /* the root, last in post order: see stream_chosen */
                snprintf(name, sizeof name, "bcg_mk_%s_%s_nt", family,
                         bcg_dtype_name(tile_dtype(e, id)));
            if (kind == TILE_WHERE)
                sb_printf(line, "void %s(%s *, const bcg_u8 *, long, const %s *, long, "
                          "const %s *, long, long);", name, type, type, type);
            else if (kind == TILE_UNARY)
                sb_printf(line, "void %s(%s *, const %s *, long, long);", name, type, type);
            else
                sb_printf(line, "void %s(%s *, const %s *, long, const %s *, long, long);", name,
                          kind == TILE_COMPARE ? "bcg_u8" : type, type, type);
        } else {
            continue;
        }
        if (line->failed) {
            fail_nomem(e);
            return;
        }
        step_code(e, depth, line->data);
    }

    line->len = 0;
    sb_printf(line, "for (long tile_start = 0; tile_start < %lld; tile_start += %lld) {",
              (long long)extent, (long long)tile);
    step_code(e, depth, line->data);
    line->len = 0;
    sb_printf(line, "const long tile_count = %lld - tile_start < %lld ? %lld - tile_start : %lld;",
              (long long)extent, (long long)tile, (long long)extent, (long long)tile);
    step_code(e, depth + 1, line->data);
    for (int visit = 0; visit < e->node_count; visit++) {
        int id = e->post_order[visit];
        const expr_node *n = e->nodes[id];
        tile_shape kind;
        if (n->op == OP_LITERAL || n->op == OP_OPERAND)
            continue;
        const char *family = tile_family(e, id, &kind);
        line->len = 0;
        if (id != 0) {
            snprintf(name, sizeof name, "tile%d", id);
            temporaries[id] = copy_text(e, name);
            sb_printf(line, "%s %s[%lld];", dtype_ctype(n->dtype), name, (long long)tile);
            step_code(e, depth + 1, line->data);
            line->len = 0;
        }
        sb_printf(line, "bcg_mk_%s_%s%s(", family, bcg_dtype_name(tile_dtype(e, id)),
                  id == 0 && e->stream ? "_nt" : "");
        if (id == 0)
            sb_puts(line, e->has_position[0] ? "out + out_pos + tile_start" : "out + tile_start");
        else
            sb_puts(line, temporaries[id]);
        for (int k = 0; k < n->arg_count; k++) {
            sb_puts(line, ", ");
            put_tile_argument(e, line, child_id(e, id, k), temporaries, literals);
        }
        sb_puts(line, ", tile_count);");
        if (line->failed) {
            fail_nomem(e);
            return;
        }
        step_code(e, depth + 1, line->data);
    }
    step_code(e, depth, "}");
}

/* ---- rows of short runs ----------------------------------------------------------------
 *
 * A tiled kernel whose inner runs are short (the 64-element runs of
 * (64,1,64,64) * (1,64,1,64), where a broadcast keeps the loops from
 * merging) would make one call per run, and the call and tcc's loop around
 * it cost as much as the run.  When the tree is one binary operation or
 * comparison on operands and literals (no temporaries), the two innermost
 * loops become one call of the microkernel's _rows form (runtime/
 * microkernels.c): EXTENT[inner - 1] runs, each operand moved by its
 * stride in that loop from run to run. */
static bool rows_chosen(const emitter *e)
{
    const plan *p = e->p;
    if (!e->tiled || p->loop_count < 2 || e->block > 0 ||
        p->extent[p->loop_count - 1] >= TILE_ELEMENTS)
        return false;
    tile_shape kind;
    const char *family = tile_family(e, 0, &kind);
    if (!family || (kind != TILE_BINARY && kind != TILE_COMPARE) || !root_reads_leaves(e))
        return false;
    char name[48];
    snprintf(name, sizeof name, "bcg_mk_%s_%s_rows", family, bcg_dtype_name(tile_dtype(e, 0)));
    return microkernel_exists(name);
}

/* The two innermost loops as one _rows call, at DEPTH. */
static void emit_rows(emitter *e, int depth)
{
    const plan *p = e->p;
    int inner = p->loop_count - 1;
    tile_shape kind;
    const char *family = tile_family(e, 0, &kind);
    const char *type = dtype_ctype(tile_dtype(e, 0));
    const char *out_type = kind == TILE_COMPARE ? "bcg_u8" : type;
    char name[48];
    snprintf(name, sizeof name, "bcg_mk_%s_%s_rows", family, bcg_dtype_name(tile_dtype(e, 0)));
    strbuf *line = &e->line;
    line->len = 0;
    sb_printf(line, "void %s(%s *, long, const %s *, long, long, const %s *, long, long, long, "
              "long, long);", name, out_type, type, type);
    step_code(e, depth, line->data);
    const char *arguments[2];
    for (int k = 0; k < 2; k++) {
        int id = child_id(e, 0, k);
        const expr_node *n = e->nodes[id];
        line->len = 0;
        if (n->op == OP_LITERAL) {
            put_tile_literal(e, line, id);
            if (line->failed) {
                fail_nomem(e);
                return;
            }
            step_code(e, depth, line->data);
            line->len = 0;
            sb_printf(line, "&tile_literal%d, 0, 0", id);
        } else {
            int o = n->operand + 1;
            sb_printf(line, "in%d", n->operand);
            if (e->has_position[o])
                sb_printf(line, " + in%d_pos", n->operand);
            sb_printf(line, p->stride[o][inner] < 0 ? ", (%lld)" : ", %lld",
                      (long long)p->stride[o][inner]);
            sb_printf(line, p->stride[o][inner - 1] < 0 ? ", (%lld)" : ", %lld",
                      (long long)p->stride[o][inner - 1]);
        }
        if (line->failed) {
            fail_nomem(e);
            return;
        }
        if (!(arguments[k] = copy_text(e, line->data)))
            return;
    }
    line->len = 0;
    sb_printf(line, "%s(%s, %lld, %s, %s, %lld, %lld, %d);", name,
              e->has_position[0] ? "out + out_pos" : "out", (long long)p->stride[0][inner - 1],
              arguments[0], arguments[1], (long long)p->extent[inner],
              (long long)p->extent[inner - 1], e->stream ? 1 : 0);
    if (line->failed) {
        fail_nomem(e);
        return;
    }
    step_code(e, depth, line->data);
}

/* ---- the loop nest ----------------------------------------------------------------- */

/* How far loop level LEVEL (and everything inside it) moves operand K's
 * position over one full run. */
static int64_t run_advance(const emitter *e, int k, int level)
{
    const plan *p = e->p;
    int inner = p->loop_count - 1;
    /* spans of real memory: they fit in int64; unsigned keeps it defined */
    if ((e->block > 0 || e->rows) && level == inner - 1)
        return 0; /* emit_blocked puts every position back; emit_rows moves none */
    if (level == inner)
        return e->group_loop
                   ? (int64_t)((uint64_t)e->groups * (uint64_t)e->factor * (uint64_t)p->stride[k][inner])
                   : 0;
    return (int64_t)((uint64_t)p->extent[level] * (uint64_t)p->stride[k][level]);
}

static bool operand_present(const emitter *e, int k)
{
    return k == 0 || e->input_used[k - 1];
}

static void emit_statements_at(emitter *e, int depth, int64_t element)
{
    int inner = e->p->loop_count - 1;
    for (int k = 0; k <= e->input_count; k++)
        e->offset[k] = (int64_t)((uint64_t)element * (uint64_t)e->p->stride[k][inner]);
    step_store(e, depth);
}

static void emit_innermost(emitter *e, int depth)
{
    const plan *p = e->p;
    int inner = p->loop_count - 1;
    if (e->tiled) {
        emit_tiles(e, depth);
    } else if (e->group_loop) {
        step_open(e, depth, inner, e->groups);
        for (int64_t j = 0; j < e->factor; j++)
            emit_statements_at(e, depth + 1, j);
        for (int k = 0; k <= e->input_count; k++)
            if (e->has_position[k])
                step_advance(e, depth + 1, k,
                             (int64_t)((uint64_t)e->factor * (uint64_t)p->stride[k][inner]));
        step_close(e, depth);
        for (int64_t j = 0; j < e->rest; j++)
            emit_statements_at(e, depth, j);
    } else {
        for (int64_t j = 0; j < p->extent[inner]; j++)
            emit_statements_at(e, depth, j);
    }
}

/* ---- cache blocking ------------------------------------------------------------------
 *
 * An input read with a long stride in the innermost loop and a short one in
 * the loop outside it (a transposed view) touches a new cache line, often a
 * new page, per element, and by the time the next outer trip comes back for
 * the neighbouring elements of those lines they have been evicted.  Such a
 * pair of loops runs in blocks of BLOCK_OUTER x BLOCK_INNER trips instead,
 * so the few lines a block reads from the strided input are reused for
 * BLOCK_OUTER trips while still in cache.  The block is narrow across the
 * strided direction because power-of-two strides (a 2048-wide transposed
 * f32 matrix: 8 KB) map every line of a block column to the same L1 set,
 * and more lines than the cache has ways evict each other: measured on the
 * bench's `transposed` (AMD EPYC, 8-way L1), 128 x 4 ran in 13 ms where
 * the plain nest took 23 ms and square 32 x 32 blocks 24 ms (f64, i8 and
 * a 2000-wide matrix likewise).  Each element is still computed once from
 * the same inputs, so the result is the same bit for bit; an in-place
 * target reads each element only where it writes it, so the order is free
 * there too.  The AOT form keeps the plain nest. */

#define BLOCK_OUTER 128
#define BLOCK_INNER 4
/* Blocking pays only when the strided input's column over the inner loop
 * does not stay in L1 anyway. */
#define BLOCK_MIN_SPAN_BYTES (32 * 1024)
#define BLOCK_LINE_BYTES 64

/* Whether this kernel's two innermost loops run in blocks. */
static bool blocking_chosen(const emitter *e)
{
    const compile *c = e->c;
    const plan *p = e->p;
    if (c->aot || e->unrolled || e->tiled || p->empty || p->loop_count < 2)
        return false;
    int inner = p->loop_count - 1, outer = inner - 1;
    if (p->extent[inner] < 2 * BLOCK_INNER || p->extent[outer] < 2 * BLOCK_INNER)
        return false;
    for (int i = 0; i < e->input_count; i++) {
        if (!e->input_used[i])
            continue;
        uint64_t size = bcg_dtype_size(c->operands[i].dtype);
        uint64_t across = p->stride[i + 1][inner] < 0 ? 0 - (uint64_t)p->stride[i + 1][inner]
                                                      : (uint64_t)p->stride[i + 1][inner];
        uint64_t along = p->stride[i + 1][outer] < 0 ? 0 - (uint64_t)p->stride[i + 1][outer]
                                                     : (uint64_t)p->stride[i + 1][outer];
        /* spans of real memory: the product fits */
        if (across * size >= BLOCK_LINE_BYTES && along < across &&
            across * size * (uint64_t)p->extent[inner] > BLOCK_MIN_SPAN_BYTES)
            return true;
    }
    return false;
}

/* "NAME += COUNT * STRIDE;" (or -=), nothing when STRIDE is 0.  COUNT is
 * an expression of the block counters. */
static void step_move(emitter *e, int depth, int k, const char *operator, const char *count,
                      int64_t stride)
{
    if (stride == 0)
        return;
    bool negative = stride < 0;
    if (operator[0] == '-')
        negative = !negative;
    unsigned long long amount =
        stride < 0 ? 0ULL - (unsigned long long)stride : (unsigned long long)stride;
    char name[24], factor[32] = "", code[160];
    if (k == 0)
        snprintf(name, sizeof name, "out_pos");
    else
        snprintf(name, sizeof name, "in%d_pos", k - 1);
    if (amount != 1)
        snprintf(factor, sizeof factor, " * %llu", amount);
    snprintf(code, sizeof code, "%s %s %s%s;", name, negative ? "-=" : "+=", count, factor);
    step_code(e, depth, copy_text(e, code));
}

/* The loops LEVEL (outer) and LEVEL + 1 (innermost) in blocks, at DEPTH.
 * Every position is back where it started when the blocks are done. */
static void emit_blocked(emitter *e, int level, int depth)
{
    const plan *p = e->p;
    int inner = level + 1;
    char code[200], outer_count[24], inner_count[24], outer_start[24], inner_start[24];
    snprintf(outer_start, sizeof outer_start, "i%d_block", level);
    snprintf(inner_start, sizeof inner_start, "i%d_block", inner);
    snprintf(outer_count, sizeof outer_count, "i%d_count", level);
    snprintf(inner_count, sizeof inner_count, "i%d_count", inner);
    const char *start[2] = {outer_start, inner_start}, *count[2] = {outer_count, inner_count};
    for (int side_index = 0; side_index < 2; side_index++) {
        int64_t extent = p->extent[level + side_index];
        int64_t side = side_index ? e->block_inner : e->block;
        int at = depth + side_index;
        snprintf(code, sizeof code, "for (long %s = 0; %s < %lld; %s += %lld) {",
                 start[side_index], start[side_index], (long long)extent, start[side_index],
                 (long long)side);
        step_code(e, at, copy_text(e, code));
        snprintf(code, sizeof code, "const long %s = %lld - %s < %lld ? %lld - %s : %lld;",
                 count[side_index], (long long)extent, start[side_index], (long long)side,
                 (long long)extent, start[side_index], (long long)side);
        step_code(e, at + 1, copy_text(e, code));
    }
    depth += 2;
    /* to the block's first element */
    for (int k = 0; k <= e->input_count; k++)
        if (e->has_position[k]) {
            step_move(e, depth, k, "+", outer_start, p->stride[k][level]);
            step_move(e, depth, k, "+", inner_start, p->stride[k][inner]);
        }
    snprintf(code, sizeof code, "for (long i%d = 0; i%d < %s; i%d++) {", level, level,
             outer_count, level);
    step_code(e, depth, copy_text(e, code));
    step_locals(e, inner, depth + 1);
    snprintf(code, sizeof code, "for (long i%d = 0; i%d < %s; i%d++) {", inner, inner,
             inner_count, inner);
    step_code(e, depth + 1, copy_text(e, code));
    emit_statements_at(e, depth + 2, 0);
    for (int k = 0; k <= e->input_count; k++)
        if (e->has_position[k])
            step_advance(e, depth + 2, k, p->stride[k][inner]);
    step_code(e, depth + 1, "}");
    for (int k = 0; k <= e->input_count; k++)
        if (e->has_position[k]) {
            step_advance(e, depth + 1, k, p->stride[k][level]);
            step_move(e, depth + 1, k, "-", inner_count, p->stride[k][inner]);
        }
    step_code(e, depth, "}");
    /* back to where the blocks started: the rows walked, then the corner */
    for (int k = 0; k <= e->input_count; k++)
        if (e->has_position[k]) {
            step_move(e, depth, k, "-", outer_count, p->stride[k][level]);
            step_move(e, depth, k, "-", outer_start, p->stride[k][level]);
            step_move(e, depth, k, "-", inner_start, p->stride[k][inner]);
        }
    step_code(e, depth - 1, "}");
    step_code(e, depth - 2, "}");
}

static void emit_loop(emitter *e, int level, int depth)
{
    const plan *p = e->p;
    if (level == p->loop_count - 1) {
        emit_innermost(e, depth);
        return;
    }
    if (e->block > 0 && level == p->loop_count - 2) {
        emit_blocked(e, level, depth);
        return;
    }
    if (e->rows && level == p->loop_count - 2) {
        emit_rows(e, depth);
        return;
    }
    step_open(e, depth, level, p->extent[level]);
    step_locals(e, level + 1, depth + 1);
    emit_loop(e, level + 1, depth + 1);
    for (int k = 0; k <= e->input_count; k++)
        if (e->has_position[k])
            step_advance(e, depth + 1, k,
                         (int64_t)((uint64_t)p->stride[k][level] - (uint64_t)run_advance(e, k, level + 1)));
    step_close(e, depth);
}

static void emit_loop_nest(emitter *e)
{
    const plan *p = e->p;
    int inner = p->loop_count - 1;
    e->groups = p->extent[inner] / e->factor;
    e->rest = p->extent[inner] % e->factor;
    /* tiles and blocks address the innermost run themselves */
    e->group_loop = e->groups >= 2 && !e->tiled && e->block == 0;
    /* a position is needed when a runtime loop moves the operand (a rows
     * call does the two innermost loops itself) */
    int moving = e->rows ? inner - 1 : inner;
    for (int k = 0; k <= e->input_count; k++) {
        e->has_position[k] = false;
        if (!operand_present(e, k))
            continue;
        for (int l = 0; l < p->loop_count; l++)
            if (p->stride[k][l] != 0 && (l < moving || e->group_loop || e->block > 0))
                e->has_position[k] = true;
    }
    e->use_position = true;
    step_locals(e, 0, 1);
    emit_loop(e, 0, 1);
}

/* One statement per element, every offset a literal. */
static void emit_unrolled(emitter *e)
{
    const plan *p = e->p;
    int64_t index[BCG_MAX_RANK] = {0};
    e->use_position = false;
    step_locals(e, 0, 1);
    for (int64_t element = 0; element < p->elements && e->status == BCG_OK; element++) {
        for (int k = 0; k <= e->input_count; k++) {
            uint64_t offset = 0;
            for (int l = 0; l < p->loop_count; l++)
                offset += (uint64_t)index[l] * (uint64_t)p->stride[k][l];
            e->offset[k] = (int64_t)offset;
        }
        step_store(e, 1);
        for (int l = p->loop_count - 1; l >= 0; l--) {
            if (++index[l] < p->extent[l])
                break;
            index[l] = 0;
        }
    }
}

/* ---- levels of the inputs ------------------------------------------------------------ */

static void choose_levels(emitter *e)
{
    const plan *p = e->p;
    int inplace = e->c->options.inplace;
    if (e->unrolled) {
        e->per_element = p->elements > 1 ? 1 : 0;
        for (int i = 0; i < e->input_count; i++) {
            bool broadcast = i != inplace;
            for (int l = 0; l < p->loop_count; l++)
                if (p->stride[i + 1][l] != 0)
                    broadcast = false;
            e->input_level[i] = broadcast ? 0 : e->per_element;
        }
        return;
    }
    e->per_element = p->loop_count;
    for (int i = 0; i < e->input_count; i++) {
        int level = p->loop_count;
        if (i != inplace)
            while (level > 0 && p->stride[i + 1][level - 1] == 0)
                level--;
        e->input_level[i] = level;
    }
}

/* ---- the form ------------------------------------------------------------------ */

/* What the flags set above decided, as data (see kernel_form). */
static kernel_form form_of(const emitter *e)
{
    const plan *p = e->p;
    kernel_form f = {.kind = FORM_INNER_UNROLLED, .stream = e->stream};
    int64_t inner = p->loop_count ? p->extent[p->loop_count - 1] : 1;
    if (p->empty) {
        f.kind = FORM_EMPTY;
    } else if (e->unrolled) {
        f.kind = FORM_UNROLLED;
    } else if (e->rows) {
        f.kind = FORM_ROWS;
        f.runs = p->extent[p->loop_count - 2];
        f.run_length = inner;
    } else if (e->tiled) {
        f.kind = FORM_TILES;
        f.run_length = inner;
        f.tile_elements = TILE_ELEMENTS;
    } else if (e->block > 0) {
        f.kind = FORM_BLOCKS;
        f.block_outer = e->block;
        f.block_inner = e->block_inner;
    } else if (e->group_loop) {
        f.kind = FORM_GROUPS;
        f.groups = e->groups;
        f.group_size = e->factor;
        f.rest = e->rest;
    } else {
        f.run_length = inner;
    }
    if (f.kind != FORM_ROWS && f.kind != FORM_TILES)
        f.stream = false;
    return f;
}

const char *form_kind_name(form_kind kind)
{
    static const char *const names[] = {"empty", "unrolled", "rows", "tiles", "blocks",
                                        "groups", "inner unrolled"};
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

void form_describe(const kernel_form *f, char *buf, size_t cap)
{
    const char *streaming = f->stream ? "; the output is written with streaming stores" : "";
    switch (f->kind) {
    case FORM_EMPTY:
        snprintf(buf, cap, "nothing to do: the result is empty");
        break;
    case FORM_UNROLLED:
        snprintf(buf, cap, "fully unrolled, one statement per element");
        break;
    case FORM_ROWS:
        snprintf(buf, cap, "loop nest; the two innermost loops (%lld runs of %lld "
                 "elements) are one call of the library's vectorised microkernel%s",
                 (long long)f->runs, (long long)f->run_length, streaming);
        break;
    case FORM_TILES:
        snprintf(buf, cap, "loop nest; the innermost run (%lld elements) calls the "
                 "library's vectorised microkernels, %d elements a tile%s",
                 (long long)f->run_length, f->tile_elements, streaming);
        break;
    case FORM_BLOCKS:
        snprintf(buf, cap, "loop nest; the two innermost loops run in blocks of "
                 "%lld x %lld trips (an input is read with a long stride)",
                 (long long)f->block_outer, (long long)f->block_inner);
        break;
    case FORM_GROUPS:
        if (f->rest > 0)
            snprintf(buf, cap,
                     "loop nest; the innermost loop runs %lld groups of %lld statements, then %lld more",
                     (long long)f->groups, (long long)f->group_size, (long long)f->rest);
        else
            snprintf(buf, cap, "loop nest; the innermost loop runs %lld groups of %lld statements",
                     (long long)f->groups, (long long)f->group_size);
        break;
    case FORM_INNER_UNROLLED:
        snprintf(buf, cap, "loop nest; the innermost loop (%lld trips) is fully unrolled",
                 (long long)f->run_length);
        break;
    }
}

/* ---- the template variables -------------------------------------------------------- */

static bool set_header(emitter *e, const char *function_name)
{
    compile *c = e->c;
    tmpl_scope *s = e->scope;
    char buf[BCG_MAX_RANK * 24 + 8];
    strbuf sb;

    tmpl_set_str(s, "function_name", function_name);
    tmpl_set_str(s, "version", BCG_VERSION);
    sb_init(&sb);
    format_expression(&sb, c->root);
    if (sb.failed)
        return false;
    tmpl_set_str(s, "expression", sb.data ? sb.data : "");
    sb_free(&sb);

    const shape *result = &c->broadcast->result;
    tmpl_set_str(s, "result_dtype", bcg_dtype_name(e->out_dtype));
    format_dims(buf, sizeof buf, result->rank, result->dims);
    tmpl_set_str(s, "result_shape", buf);
    tmpl_set_int(s, "elements", e->p->elements);
    if (c->options.inplace >= 0) {
        snprintf(buf, sizeof buf, "in place: the output is in%d", c->options.inplace);
    } else {
        snprintf(buf, sizeof buf, "C-contiguous");
    }
    tmpl_set_str(s, "out_layout", buf);

    tmpl_list_declare(s, "inputs");
    for (int i = 0; i < e->input_count; i++) {
        const compile_operand *op = &c->operands[i];
        tmpl_scope *item = tmpl_list_add(s, "inputs");
        tmpl_set_int(item, "index", i);
        tmpl_set_str(item, "dtype", bcg_dtype_name(op->dtype));
        format_dims(buf, sizeof buf, op->shape.rank, op->shape.dims);
        tmpl_set_str(item, "shape", buf);
        format_dims(buf, sizeof buf, op->shape.rank, op->strides);
        tmpl_set_str(item, "strides", buf);
        tmpl_set_str(item, "note", !e->input_used[i] ? " (not used by the expression)"
                                   : i == c->options.inplace ? " (also the output)" : "");
    }

    /* the plan as plan.c prints it, one comment line per line */
    const char *names[BCG_MAX_OPERANDS + 1];
    char name_text[BCG_MAX_OPERANDS + 1][16];
    names[0] = "out";
    for (int i = 0; i < e->input_count; i++) {
        snprintf(name_text[i + 1], sizeof name_text[i + 1], "in%d", i);
        names[i + 1] = name_text[i + 1];
    }
    sb_init(&sb);
    plan_dump(&sb, e->p, names);
    if (sb.failed)
        return false;
    tmpl_list_declare(s, "plan_lines");
    for (char *line = sb.data; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = 0;
        /* a comment must not end early */
        for (char *star = strstr(line, "*/"); star; star = strstr(star, "*/"))
            star[1] = '|';
        tmpl_set_str(tmpl_list_add(s, "plan_lines"), "text", line);
        line = end ? end + 1 : line + strlen(line);
    }
    sb_free(&sb);

    form_describe(&e->c->form, buf, sizeof buf);
    tmpl_set_str(s, "strategy", buf);
    return true;
}

static void set_body_variables(emitter *e)
{
    tmpl_scope *s = e->scope;
    /* defaults for the step kinds; each step sets its own to true */
    tmpl_set_bool(s, "is_open", false);
    tmpl_set_bool(s, "is_close", false);
    tmpl_set_bool(s, "is_local", false);
    tmpl_set_bool(s, "is_advance", false);
    tmpl_set_bool(s, "is_code", false);
    tmpl_list_declare(s, "steps");
    tmpl_list_declare(s, "used_inputs");
    tmpl_list_declare(s, "positions");
    tmpl_set_bool(s, "empty", e->p->empty);
    tmpl_set_str(s, "out_ctype", dtype_ctype(e->out_dtype));
    bool any_input = false;
    for (int i = 0; i < e->input_count; i++) {
        if (!e->input_used[i] || e->p->empty)
            continue;
        tmpl_scope *item = tmpl_list_add(s, "used_inputs");
        tmpl_set_int(item, "index", i);
        tmpl_set_str(item, "ctype", dtype_ctype(e->c->operands[i].dtype));
        any_input = true;
    }
    tmpl_set_bool(s, "any_input", any_input);
    for (int k = 0; k <= e->input_count; k++) {
        if (!e->has_position[k])
            continue;
        char name[24];
        if (k == 0)
            snprintf(name, sizeof name, "out_pos");
        else
            snprintf(name, sizeof name, "in%d_pos", k - 1);
        tmpl_set_str(tmpl_list_add(s, "positions"), "name", name);
    }
}

/* Fills the helper lists of ops.c.tmpl from e->need. */
static void set_helper_variables(emitter *e, tmpl_scope *s)
{
    static const char *const upper[BCG_DTYPE_COUNT] = {
        [BCG_I8] = "128.0", [BCG_I16] = "32768.0", [BCG_I32] = "2147483648.0",
        [BCG_I64] = "9223372036854775808.0", [BCG_U8] = "256.0", [BCG_U16] = "65536.0",
        [BCG_U32] = "4294967296.0", [BCG_U64] = "18446744073709551616.0",
    };
    static const char *const lower[BCG_DTYPE_COUNT] = {
        [BCG_I8] = "-128.0", [BCG_I16] = "-32768.0", [BCG_I32] = "-2147483648.0",
        [BCG_I64] = "-9223372036854775808.0", [BCG_U8] = "-1.0", [BCG_U16] = "-1.0",
        [BCG_U32] = "-1.0", [BCG_U64] = "-1.0",
    };
    static const char *const maximum[BCG_DTYPE_COUNT] = {
        [BCG_I8] = "127", [BCG_I16] = "32767", [BCG_I32] = "2147483647",
        [BCG_I64] = "9223372036854775807LL", [BCG_U8] = "255", [BCG_U16] = "65535",
        [BCG_U32] = "4294967295U", [BCG_U64] = "18446744073709551615ULL",
    };
    static const char *const minimum[BCG_DTYPE_COUNT] = {
        [BCG_I8] = "(-128)", [BCG_I16] = "(-32768)", [BCG_I32] = "(-2147483647 - 1)",
        [BCG_I64] = "(-9223372036854775807LL - 1)", [BCG_U8] = "0", [BCG_U16] = "0",
        [BCG_U32] = "0U", [BCG_U64] = "0ULL",
    };
    for (int h = 0; h < HELPER_COUNT; h++) {
        tmpl_list_declare(s, helper_lists[h]);
        for (int t = 0; t < BCG_DTYPE_COUNT; t++) {
            if (!e->need[h][t])
                continue;
            tmpl_scope *item = tmpl_list_add(s, helper_lists[h]);
            bcg_dtype d = (bcg_dtype)t;
            tmpl_set_str(item, "type", dtype_ctype(d));
            tmpl_set_str(item, "suffix", bcg_dtype_name(d));
            tmpl_set_str(item, "wide", wide_unsigned(d));
            tmpl_set_int(item, "bits", dtype_bits(d));
            tmpl_set_bool(item, "is_signed", is_signed(d));
            tmpl_set_bool(item, "is_float", is_float(d));
            tmpl_set_str(item, "f", d == BCG_F32 ? "f" : "");
            tmpl_set_str(item, "bits_type", d == BCG_F32 ? "unsigned int" : "unsigned long long");
            if (h == HELPER_TO_INT || h == HELPER_TO_INT_F32) {
                tmpl_set_str(item, "upper", upper[t]);
                tmpl_set_str(item, "lower", lower[t]);
                tmpl_set_str(item, "max", maximum[t]);
                tmpl_set_str(item, "min", minimum[t]);
            }
        }
    }
    tmpl_list_declare(e->scope, "math");
    for (int f = 0; f < MATH_COUNT; f++) {
        for (int single = 0; single < 2; single++) {
            if (!e->need_math[f][single])
                continue;
            tmpl_scope *item = tmpl_list_add(e->scope, "math");
            char name[24];
            snprintf(name, sizeof name, "%s%s", math_name(f), single ? "f" : "");
            const char *type = single ? "float" : "double";
            tmpl_set_str(item, "type", type);
            tmpl_set_str(item, "name", name);
            tmpl_set_str(item, "params", math_arity(f) == 2
                                             ? (single ? "float, float" : "double, double")
                                             : type);
        }
    }
}

/* ---- the function name -------------------------------------------------------------- */

/* Why NAME cannot name the kernel's function (a phrase finishing "'NAME'
 * is ..."), or NULL: it must be an identifier that nothing in the unit, or
 * in a project that compiles it next to the standard headers, already
 * means: not a keyword or a name of the C headers (cnames_reserved; that
 * covers the libm functions the unit declares and tcc's "__" helpers), a
 * typedef or one of our helpers or locals. */
static const char *function_name_problem(const char *name)
{
    static const char *const taken[] = {
        "bcg_i8", "bcg_i16", "bcg_i32", "bcg_i64", "bcg_u8", "bcg_u16", "bcg_u32", "bcg_u64",
        "bcg_check_type_sizes", "bcg_check_index_size",
        /* the kernel's locals */
        "output", "inputs", "out", "out_pos",
    };
    if (!name_is_valid(name, strlen(name)))
        return "not a C identifier";
    const char *reserved = cnames_reserved(name);
    if (reserved)
        return reserved;
    if (strcmp(name, "main") == 0)
        return "the program's entry point, which has a signature of its own";
    /* locals the kernel declares: in<k>, in<k>_pos, in<k>_value, i<k>, literal<k>, ... */
    static const char *const local_prefixes[] = {"in", "i", "literal", "shared"};
    for (size_t i = 0; i < sizeof local_prefixes / sizeof local_prefixes[0]; i++) {
        size_t m = strlen(local_prefixes[i]);
        if (strncmp(name, local_prefixes[i], m) == 0 && name[m] >= '0' && name[m] <= '9')
            return "a name the kernel uses itself (out, in0, in0_pos, i0, literal0, ...)";
    }
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++)
        if (strcmp(name, taken[i]) == 0)
            return "a name the kernel uses itself (out, in0, in0_pos, i0, literal0, ...)";
    /* every helper is bcg_<family>_<dtype> or bcg_<dtype>_from_bits */
    static const char *const helper_prefixes[] = {
        "bcg_to_", "bcg_abs_", "bcg_floordiv_", "bcg_mod_", "bcg_pow_", "bcg_shl_",
        "bcg_shr_", "bcg_minimum_", "bcg_maximum_", "bcg_f32_", "bcg_f64_",
    };
    for (size_t i = 0; i < sizeof helper_prefixes / sizeof helper_prefixes[0]; i++)
        if (strncmp(name, helper_prefixes[i], strlen(helper_prefixes[i])) == 0)
            return "a name of the kernel's helpers (bcg_abs_i32, bcg_pow_f64, ...)";
    return NULL;
}

/* ---- the ahead-of-time form (gen/aot.c) ------------------------------------------------ */

/* Everything the AOT form changes in the emitter is here, apart from the
 * --math double branch of put_float_function: the body (steps) is the
 * JIT's, only the outer shape differs (see kernel.c.tmpl). */

_Static_assert(HELPER_COUNT == EMIT_HELPER_FAMILIES && MATH_COUNT == EMIT_MATH_FUNCTIONS,
               "emit_needs must match the helper and math tables");

const char *emit_stdint_ctype(bcg_dtype t)
{
    static const char *const names[BCG_DTYPE_COUNT] = {
        "uint8_t", "int8_t", "int16_t", "int32_t", "int64_t",
        "uint8_t", "uint16_t", "uint32_t", "uint64_t", "float", "double",
    };
    return (unsigned)t < BCG_DTYPE_COUNT ? names[t] : "void";
}

/* NAME is PREFIX followed by one or more digits, then SUFFIX. */
static bool numbered(const char *name, const char *prefix, const char *suffix)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0 || name[n] < '0' || name[n] > '9')
        return false;
    const char *rest = name + n;
    while (*rest >= '0' && *rest <= '9')
        rest++;
    return strcmp(rest, suffix) == 0;
}

const char *emit_aot_name_problem(const char *name, bool is_parameter)
{
    /* the C and C++ keywords and the headers' names are cnames_reserved's
     * (through function_name_problem); these are the forms of macros that
     * common headers define beyond C99 and a parameter name would be
     * replaced by, and bcgen's own prefixes (BCGEN_ for the include guards
     * and BCGEN_RESTRICT of every pair, which one project may include) */
    static const struct {
        const char *text, *why;
    } prefixes[] = {
        {"bcg_", "in the bcg_ namespace bcgen reserves for its own names"},
        {"BCG_", "in the BCG_ namespace bcgen reserves for its own names"},
        {"BCGEN_", "in the BCGEN_ namespace bcgen reserves for its include guards and macros"},
        {"M_", "the form of a <math.h> constant (M_PI, M_E, ...)"},
        {"MATH_ERR", "the form of a <math.h> macro (MATH_ERRNO, ...)"},
    }, suffixes[] = {
        {"_t", "the form of a type name (POSIX reserves names ending in _t)"},
        {"_MAX", "the form of a limit macro (ending in _MAX, as in <limits.h>)"},
        {"_MIN", "the form of a limit macro (ending in _MIN, as in <limits.h>)"},
        {"_WIDTH", "the form of a limit macro (ending in _WIDTH, as in <stdint.h>)"},
        {"_C", "the form of a constant macro (ending in _C, as in <stdint.h>)"},
    };
    const char *problem = function_name_problem(name);
    if (problem)
        return problem;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i].text, strlen(prefixes[i].text)) == 0)
            return prefixes[i].why;
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t m = strlen(suffixes[i].text);
        if (n > m && strcmp(name + n - m, suffixes[i].text) == 0)
            return suffixes[i].why;
    }
    if (!is_parameter)
        return NULL;
    /* the body's own names (a parameter shares the body's outermost scope) */
    bool local = strcmp(name, "out") == 0 || strcmp(name, "out_pos") == 0 ||
                 numbered(name, "in", "") || numbered(name, "in", "_pos") ||
                 numbered(name, "in", "_value") || numbered(name, "i", "") ||
                 numbered(name, "shared", "") || numbered(name, "literal", "");
    return local ? "a name the kernel uses itself (out, in0, in0_pos, i0, literal0, ...)" : NULL;
}

/* The variables only the AOT branches of kernel.c.tmpl read, and the
 * index type both forms use; ors the body's needs into c->aot. */
static bcg_status set_aot_variables(emitter *e)
{
    compile *c = e->c;
    tmpl_scope *s = e->scope;
    tmpl_set_bool(s, "aot", c->aot != NULL);
    /* 32-bit firmware: long is 32 bits there too, but ptrdiff_t says what
     * it is; aot.c checks at generation time that every position fits. */
    tmpl_set_str(s, "index_type", c->aot ? "ptrdiff_t" : "long");
    if (!c->aot)
        return BCG_OK;

    emit_aot *aot = c->aot;
    int inplace = c->options.inplace;
    /* the header defines BCGEN_RESTRICT: restrict in C, __restrict in C++,
     * so the .c compiles as either */
    const char *qualifier = aot->restrict_pointers ? "BCGEN_RESTRICT " : "";
    strbuf parameters, names;
    sb_init(&parameters);
    sb_init(&names);
    tmpl_list_declare(s, "aot_inputs");
    tmpl_list_declare(s, "aot_unused");
    if (inplace < 0) {
        sb_printf(&parameters, "%s *%sout", emit_stdint_ctype(e->out_dtype), qualifier);
        sb_puts(&names, "out");
        if (e->p->empty)
            tmpl_set_str(tmpl_list_add(s, "aot_unused"), "name", "out");
    }
    for (int i = 0; i < e->input_count; i++) {
        const compile_operand *op = &c->operands[i];
        const char *problem = emit_aot_name_problem(op->name, true);
        if (problem) {
            sb_free(&parameters);
            sb_free(&names);
            return fail_at(c->err, BCG_ERR_USAGE, 0, i, -1,
                           "'%s' is %s; pick another operand name (it becomes a parameter "
                           "of the generated C)",
                           op->name, problem);
        }
        const char *separator = parameters.len ? ", " : "";
        sb_printf(&parameters, "%s%s%s *%s%s", separator, i == inplace ? "" : "const ",
                  emit_stdint_ctype(op->dtype), qualifier, op->name);
        sb_printf(&names, "%s%s%s", separator, op->name,
                  i == inplace ? " (the output: out and in" : " (in");
        sb_printf(&names, "%d)", i);
        bool used = e->input_used[i] && !e->p->empty;
        if (used) {
            tmpl_scope *item = tmpl_list_add(s, "aot_inputs");
            tmpl_set_int(item, "index", i);
            tmpl_set_str(item, "ctype", dtype_ctype(op->dtype));
            tmpl_set_str(item, "param", op->name);
        } else if (i != inplace || e->p->empty) {
            tmpl_set_str(tmpl_list_add(s, "aot_unused"), "name", op->name);
        }
    }
    bool ok = !parameters.failed && !names.failed;
    if (ok) {
        aot->parameters = copy_text(e, parameters.data);
        ok = aot->parameters != NULL;
        tmpl_set_str(s, "aot_parameters", parameters.data);
        tmpl_set_str(s, "aot_names", names.data);
        tmpl_set_str(s, "aot_out_alias", inplace >= 0 ? c->operands[inplace].name : "");
    }
    sb_free(&parameters);
    sb_free(&names);
    if (!ok)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    for (int h = 0; h < HELPER_COUNT; h++)
        for (int t = 0; t < BCG_DTYPE_COUNT; t++)
            aot->needs.helper[h][t] |= e->need[h][t];
    for (int f = 0; f < MATH_COUNT; f++)
        for (int single = 0; single < 2; single++)
            aot->needs.math[f][single] |= e->need_math[f][single];
    return BCG_OK;
}

bcg_status emit_helpers(arena *a, const emit_needs *needs, strbuf *out, bcg_error *err)
{
    const char *ops_text = tmpl_builtin("ops.c.tmpl");
    if (!ops_text)
        return fail(err, BCG_ERR_USAGE, "the kernel templates are not built into the library");
    /* set_helper_variables reads only `need`, `need_math` and `scope` */
    emitter *e = arena_alloc(a, sizeof *e);
    tmpl_scope *ops = tmpl_scope_new(a, NULL);
    if (!e || !ops || !(e->scope = tmpl_scope_new(a, NULL)))
        return fail(err, BCG_ERR_NOMEM, "out of memory while emitting the helpers");
    memcpy(e->need, needs->helper, sizeof e->need);
    memcpy(e->need_math, needs->math, sizeof e->need_math);
    set_helper_variables(e, ops);
    bcg_status s = tmpl_render(out, "ops.c.tmpl", ops_text, ops, err);
    if (s == BCG_OK && out->failed)
        s = fail(err, BCG_ERR_NOMEM, "out of memory while emitting the helpers");
    return s;
}

void emit_math_names(const emit_needs *needs, strbuf *out)
{
    bool first = true;
    for (int f = 0; f < MATH_COUNT; f++)
        for (int single = 0; single < 2; single++)
            if (needs->math[f][single]) {
                sb_printf(out, "%s%s%s", first ? "" : ", ", math_name(f),
                          single ? "f" : "");
                first = false;
            }
}

/* ---- the entry point ---------------------------------------------------------------- */

static bcg_status render(emitter *e, const char *function_name)
{
    compile *c = e->c;
    const char *kernel_text = tmpl_builtin("kernel.c.tmpl");
    const char *ops_text = tmpl_builtin("ops.c.tmpl");
    if (!kernel_text || !ops_text)
        return fail(c->err, BCG_ERR_USAGE, "the kernel templates are not built into the library");

    tmpl_scope *ops = tmpl_scope_new(e->arena, NULL);
    if (!ops)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    set_helper_variables(e, ops);
    strbuf helpers;
    sb_init(&helpers);
    bcg_status s = tmpl_render(&helpers, "ops.c.tmpl", ops_text, ops, c->err);
    if (s == BCG_OK && helpers.failed)
        s = fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    if (s == BCG_OK) {
        tmpl_set_str(e->scope, "helpers", helpers.data ? helpers.data : "");
        if (!set_header(e, function_name))
            s = fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    }
    sb_free(&helpers);
    if (s != BCG_OK)
        return s;
    set_body_variables(e);
    if ((s = set_aot_variables(e)) != BCG_OK)
        return s;

    strbuf source;
    sb_init(&source);
    s = tmpl_render(&source, "kernel.c.tmpl", kernel_text, e->scope, c->err);
    if (s == BCG_OK && (source.failed || source.len == 0))
        s = fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    if (s == BCG_OK) {
        c->source = arena_strndup(c->arena, source.data, source.len);
        if (!c->source)
            s = fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    }
    sb_free(&source);
    return s;
}

bcg_status emit_kernel(compile *c)
{
    if (!c || !c->arena || !c->root || !c->plan || !c->broadcast || !c->operands)
        return fail(c ? c->err : NULL, BCG_ERR_USAGE,
                    "emit_kernel needs a typed tree, a plan and the broadcast result");
    const char *function_name = c->function_name ? c->function_name : "bcg_kernel";
    const char *problem = function_name_problem(function_name);
    if (problem)
        return fail(c->err, BCG_ERR_USAGE, "'%s' is %s; pick another function name",
                    function_name, problem);

    emitter *e = arena_alloc(c->arena, sizeof *e);
    if (!e)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    e->c = c;
    e->p = c->plan;
    e->arena = c->arena;
    e->err = c->err;
    e->input_count = c->operand_count;
    e->out_dtype = c->options.inplace >= 0 ? c->operands[c->options.inplace].dtype
                                           : c->root->dtype;
    e->factor = c->options.unroll_factor < 1 ? 1 : c->options.unroll_factor;
    sb_init(&e->line);

    /* the tree as emitted: constants folded (fold.c says why); the header
     * comment keeps the expression as written */
    expr_node *root;
    if (fold_tree(c->arena, c->root, &root, c->err))
        return BCG_ERR_NOMEM;
    e->node_count = count_nodes(root);
    e->nodes = arena_alloc(c->arena, sizeof *e->nodes * (size_t)e->node_count);
    e->info = arena_alloc(c->arena, sizeof *e->info * (size_t)e->node_count);
    e->post_order = arena_alloc(c->arena, sizeof *e->post_order * (size_t)e->node_count);
    e->scope = tmpl_scope_new(c->arena, NULL);
    if (!e->nodes || !e->info || !e->post_order || !e->scope)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    number_nodes(e, root, 0);
    order_post(e, 0, 0);

    const plan *p = e->p;
    e->unrolled = p->loop_count == 0 ||
                  (p->elements <= c->options.unroll_limit &&
                   p->elements <= MAX_UNROLLED_NODES / e->node_count);
    choose_levels(e);
    assign_levels(e, 0);
    e->tiled = tiles_chosen(e);
    e->stream = e->tiled && c->stream && stream_chosen(e);
    if (!e->tiled) /* tiles read operands and literals themselves */
        choose_locals(e, 0, INT_MAX, false);

    if (blocking_chosen(e)) {
        e->block = BLOCK_OUTER;
        e->block_inner = BLOCK_INNER;
    }
    e->rows = rows_chosen(e);
    if (!p->empty && e->status == BCG_OK) {
        if (e->unrolled)
            emit_unrolled(e);
        else
            emit_loop_nest(e);
        if (e->stream) { /* runtime/microkernels.c: why the fence */
            step_code(e, 1, "void bcg_mk_fence(void);");
            step_code(e, 1, "bcg_mk_fence();");
        }
    }
    sb_free(&e->line);
    if (e->status != BCG_OK)
        return e->status;
    c->form = form_of(e); /* after the loop nest, which sets the groups */
    bcg_status s = render(e, function_name);
    /* Full unrolling made more C than bcg_compile hands to tcc: loops
     * instead (with unroll_limit 0 the second pass cannot unroll). */
    if (s == BCG_OK && e->unrolled && !p->empty && p->loop_count > 0 && c->max_source > 0 &&
        strlen(c->source) > c->max_source) {
        c->options.unroll_limit = 0;
        return emit_kernel(c);
    }
    return s;
}
