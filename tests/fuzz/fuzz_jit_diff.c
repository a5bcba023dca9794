/* fuzz_jit_diff.c - the differential fuzzer of the JIT (issue 9, finding 1):
 * the input bytes drive a generator of well-typed expressions and of the
 * operands and options they run on; every kernel that compiles is run
 * through bcg_run (libtcc's code) and through the reference evaluator
 * (eval.c over compile_front of the same arguments), and the two results
 * must agree bit for bit, NaN matching any NaN as in every bcgen test
 * (tests/unit/compare.h; docs/semantics.md promises no NaN payload).  A
 * mismatch prints the expression, the operands, the options, the first
 * differing elements and the inputs, then traps.
 *
 * fuzz_compile.c reads its expression as text, so the fuzzer has to invent
 * well-typed text byte by byte, and it never produced what broke the JIT:
 * an integer self-comparison folded to 0 inside a where() condition.  Here
 * every byte is a choice of a structured generator (0 always the simplest
 * choice, and an exhausted input reads as zeros), which reaches:
 *   - every operator and function of the grammar, every cast (both names);
 *   - literals: small, edge (each integer type's min and max, 2**64-1, hex),
 *     floats (-0.0, subnormal, huge, 1., .5, 2.5E+4), nan and inf made by
 *     expressions (1e308 * 10, sqrt(-1.0), log(0.0)), typed literals i8(3);
 *   - constant subtrees: literal-only arithmetic, functions and where of
 *     literals, operations on typed literals (i8(3) + 2, u8(200) * u8(2));
 *   - self-comparisons of identical subtrees (a < a, (a + 1) != (a + 1),
 *     f(x) == f(x)), earlier subtrees repeated anywhere, where(c, x, x);
 *   - conditions: comparisons, constants, bool(arithmetic), abs(x), X && m,
 *     !X, where() nested in the condition;
 * with a type tracker (NumPy promotion with weak literals) so that most
 * expressions type-check: bitwise operands are cast to integers, literals
 * next to an integer are chosen in its range.  Operands: 1-4, every dtype,
 * shapes that broadcast (rank 0-4, size-1 and size-0 dimensions, inner runs
 * of 67 and 1024 for the microkernels), strides negative, zero, doubled or
 * transposed, in-place targets, and from the bytes left over a second run
 * of the same kernel with operands that are the output's own memory (exact
 * aliases bcg_run allows: a + b with a and b the output, in place or not,
 * f32 memory read as i32); options: unroll_limit 0/1/16/64/4096,
 * unroll_factor 1-8, microkernel_run 0/1/8/16/64, stream_stores auto/off/on,
 * one or two threads.  Data are edge-rich: 0, +-1, min, max, NaN, +-inf,
 * -0.0, subnormals, 2**24 + 1, random bits (NaN payloads, signaling NaNs
 * unless BCG_DIFF_SNAN=0), and for bool any non-zero byte.
 *
 * As in fuzz_compile, f32 exp/log/sin/cos/tanh in the microkernels may be
 * 2 ulp from libm (docs/semantics.md): such a kernel is compared within
 * 2 ulp when the call is the root, and otherwise run for memory safety only
 * while the same kernel without microkernels is compared bit for bit.
 *
 * Built two ways (mk/safety.mk):
 *   build-fuzz/fuzz/fuzz_jit_diff   libFuzzer + ASan/UBSan (make fuzz,
 *                                   tests/safety/test_fuzz.py)
 *   build/fuzz/diff_jit             -DFUZZ_DIFF_MAIN: a plain program over
 *                                   the optimised library, for long runs
 *                                   (make fuzz-diff): random inputs from a
 *                                   seed for N kernels or T seconds, replay
 *                                   and minimisation of saved inputs.
 * Both take the same input files: tests/fuzz/regress/jit_diff/ holds the
 * minimised inputs of fixed bugs (replayed by test_fuzz.py), open/jit_diff/
 * those of bugs still open.  An input means what the generator makes of
 * it: a change to the choices below changes every saved input, so after
 * one, check that the regress inputs still mismatch on the code before
 * their fixes (or minimise new ones, `diff_jit -minimize FILE`).  BCG_DIFF_DUMP=DIR makes a mismatch also write
 * the operands as DIR/NAME.npy and print the `bcgen run` command. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "vex.h"

#define MAX_INPUTS 4
#define MAX_ELEMENTS ((int64_t)1 << 16) /* per result and per operand span */
#define MAX_ELEMENTS_WIDE ((int64_t)1 << 20) /* the same for a wide input's large sizes */
#define MAX_FUZZ_RANK 6 /* ranks 0-4; 0-5 in a wide input */
#define TEXT_CAP 8192
#define TEXT_SOFT_LIMIT 3000            /* past it, only leaves are generated */
#define MAX_DEPTH 6
#define POOL_SIZE 16
#define TRANSCENDENTAL_ULP 2            /* TRANSCENDENTAL_F32_MAX_ULP, docs/semantics.md */

/* ---- the choice stream ------------------------------------------------------ */

typedef struct choices {
    const uint8_t *data;
    size_t size, at;
} choices;

static bool exhausted(const choices *in) { return in->at >= in->size; }

/* A choice in [0, n): one byte, 0 once the input is used up. */
static unsigned take(choices *in, unsigned n)
{
    if (n <= 1 || exhausted(in))
        return 0;
    return in->data[in->at++] % n;
}

/* A choice among N weighted alternatives: byte 0 is alternative 0. */
static int pick(choices *in, const unsigned char *weights, int n)
{
    unsigned total = 0;
    for (int i = 0; i < n; i++)
        total += weights[i];
    unsigned r = take(in, total);
    for (int i = 0; i < n; i++) {
        if (r < weights[i])
            return i;
        r -= weights[i];
    }
    return 0;
}

/* Inputs that begin with WIDE_MAGIC draw from the wide generator: the
 * choices of the plain one plus new ones (no saved input begins with the
 * magic, so each keeps its meaning; a plain input reads the same bytes as
 * before the wide generator existed): every function row of
 * gen/ops.h inside the tree (not only at its root), where() with a literal
 * branch, ranks to 5, sizes to 2^20 elements, strides of +-2, +-3 and 5,
 * Paddle's axis, 1 to 4 threads, and (half of them) the ymm code of a CPU without AVX-512.  The standalone driver makes every
 * other input wide. */
#define WIDE_MAGIC "wide"
static bool wide;
/* BCG_DIFF_BIG=1: every wide input of rank 1 or more is one of the large
 * ones (2^16 to 2^20 elements) and runs on threads; the same bytes are read
 * (replay a saved input with the same setting). */
static bool big;

/* ---- types, as expr.c gives them (README "Expressions", docs/semantics.md) -- */

/* A subtree's type: a strong dtype, or a weak literal whose kind is
 * BCG_BOOL, BCG_I64 (int) or BCG_F64 (float). */
typedef struct ty {
    bool weak;
    bcg_dtype dtype;
} ty;

static const ty WEAK_INT = {true, BCG_I64}, WEAK_FLOAT = {true, BCG_F64};

static bool is_float(ty t) { return dtype_kind_of(t.dtype) == KIND_FLOAT; }
static bool is_bool(ty t) { return t.dtype == BCG_BOOL; }
static ty strong(bcg_dtype d) { return (ty){false, d}; }
static ty boolean(ty a, ty b) { return (ty){a.weak && b.weak, BCG_BOOL}; }

static int weak_rank(bcg_dtype d) { return d == BCG_BOOL ? 0 : d == BCG_I64 ? 1 : 2; }

/* NEP 50: strong with strong is NumPy's result_type; a weak int takes its
 * partner's type (i64 next to bool), a weak float a float partner's (f64
 * otherwise), a weak bool its partner's. */
static ty promote(ty a, ty b)
{
    if (a.weak && b.weak)
        return weak_rank(a.dtype) >= weak_rank(b.dtype) ? a : b;
    if (!a.weak && !b.weak)
        return strong(dtype_promote(a.dtype, b.dtype));
    ty s = a.weak ? b : a, w = a.weak ? a : b;
    if (w.dtype == BCG_BOOL)
        return s;
    if (w.dtype == BCG_I64)
        return is_bool(s) ? strong(BCG_I64) : s;
    return is_float(s) ? s : strong(BCG_F64);
}

/* bool with bool in // % ** << >> and pow computes in i8. */
static ty promote_i8(ty a, ty b)
{
    ty t = promote(a, b);
    return is_bool(t) ? (ty){t.weak, t.weak ? BCG_I64 : BCG_I8} : t;
}

static ty float_for(ty t)
{
    return t.weak ? WEAK_FLOAT : strong(dtype_float_for(t.dtype));
}

/* ---- the generator ---------------------------------------------------------- */

typedef struct subtree {
    size_t start, length;
    ty type;
} subtree;

typedef struct generator {
    choices *in;
    char text[TEXT_CAP];
    size_t length;
    bool overflow;
    int operand_count;
    bcg_dtype dtypes[MAX_INPUTS];
    int constant;                 /* > 0: inside a literal-only subtree */
    subtree pool[POOL_SIZE];      /* recent finished subtrees, for repeats */
    int pool_count, pool_next;
} generator;

static const char *const OPERAND_NAMES[MAX_INPUTS] = {"a", "b", "c", "d"};

static void put(generator *g, const char *s)
{
    size_t n = strlen(s);
    if (g->length + n >= TEXT_CAP) {
        g->overflow = true;
        return;
    }
    memcpy(g->text + g->length, s, n);
    g->length += n;
    g->text[g->length] = 0;
}

/* Appends a copy of text[start, start + length). */
static void put_copy(generator *g, size_t start, size_t length)
{
    if (g->length + length >= TEXT_CAP) {
        g->overflow = true;
        return;
    }
    memmove(g->text + g->length, g->text + start, length);
    g->length += length;
    g->text[g->length] = 0;
}

/* Wraps text[start, end) as PREFIX ... ")" (a cast added after the fact). */
static void wrap(generator *g, size_t start, const char *prefix)
{
    size_t n = strlen(prefix);
    if (g->length + n + 1 >= TEXT_CAP) {
        g->overflow = true;
        return;
    }
    memmove(g->text + start + n, g->text + start, g->length - start);
    memcpy(g->text + start, prefix, n);
    g->length += n;
    g->text[g->length] = 0;
    for (int i = 0; i < g->pool_count; i++)
        if (g->pool[i].start >= start)
            g->pool[i].start += n;
    put(g, ")");
}

static bool too_long(const generator *g) { return g->length > TEXT_SOFT_LIMIT || g->overflow; }

static void remember(generator *g, size_t start, ty t)
{
    if (g->constant || g->overflow)
        return;
    g->pool[g->pool_next] = (subtree){start, g->length - start, t};
    g->pool_next = (g->pool_next + 1) % POOL_SIZE;
    if (g->pool_count < POOL_SIZE)
        g->pool_count++;
}

/* Casts, both spellings.  ORDER DTYPE. */
static const char *const CAST_NAMES[2][BCG_DTYPE_COUNT] = {
    {"bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "f16", "bf16"},
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
     "float64", "float16", "bfloat16"},
};

static bcg_dtype random_dtype(generator *g) { return (bcg_dtype)take(g->in, BCG_DTYPE_COUNT); }

static void put_cast_open(generator *g, bcg_dtype t)
{
    put(g, CAST_NAMES[take(g->in, 4) == 3][t]);
    put(g, "(");
}

#define COUNT_OF(a) ((unsigned)(sizeof(a) / sizeof((a)[0])))

static const bcg_dtype INTEGER_CASTS[] = {BCG_I32, BCG_I8, BCG_U8, BCG_I64, BCG_U64, BCG_I16,
                                          BCG_U16, BCG_U32, BCG_BOOL};

/* A float subtree where an integer is needed (bitwise operators, shifts):
 * cast it to an integer type after the fact. */
static ty need_integer(generator *g, size_t start, ty t)
{
    if (!is_float(t))
        return t;
    bcg_dtype to = INTEGER_CASTS[take(g->in, COUNT_OF(INTEGER_CASTS))];
    char prefix[16];
    snprintf(prefix, sizeof prefix, "%s(", CAST_NAMES[0][to]);
    wrap(g, start, prefix);
    return strong(to);
}

/* Y (at START) beside integer X where both must stay integers: a signed
 * type with u64 promotes to f64, so Y is cast to X's signedness. */
static ty integer_partner(generator *g, size_t start, ty x, ty y)
{
    if (!is_float(promote(x, y)))
        return y;
    wrap(g, start, y.dtype == BCG_U64 ? "i64(" : "u64(");
    return strong(y.dtype == BCG_U64 ? BCG_I64 : BCG_U64);
}

/* A bool subtree under unary minus (a type error): cast it to a signed type. */
static ty need_signed(generator *g, size_t start, ty t)
{
    if (!is_bool(t))
        return t;
    bcg_dtype to = (bcg_dtype)(BCG_I8 + take(g->in, 4));
    char prefix[16];
    snprintf(prefix, sizeof prefix, "%s(", CAST_NAMES[0][to]);
    wrap(g, start, prefix);
    return strong(to);
}

/* Integer literals that fit each integer dtype (ORDER DTYPE; bool: any). */
static const char *const INT_EDGES[BCG_DTYPE_COUNT][8] = {
    {"0", "1", "2", "-1", "7", "100", "9223372036854775807", "-9223372036854775808"},
    {"0", "1", "-1", "127", "-128", "0x7f", "100", "-100"},
    {"0", "1", "-1", "32767", "-32768", "255", "256", "-129"},
    {"0", "1", "-1", "2147483647", "-2147483648", "65536", "0xffff", "-65537"},
    {"0", "1", "-1", "9223372036854775807", "-9223372036854775808", "4294967296",
     "0x7fffffffffffffff", "-2147483649"},
    {"0", "1", "2", "255", "254", "128", "0xff", "127"},
    {"0", "1", "2", "65535", "32768", "256", "0xffff", "255"},
    {"0", "1", "2", "4294967295", "2147483648", "65536", "0xffffffff", "2147483647"},
    {"0", "1", "2", "18446744073709551615", "9223372036854775808", "4294967296",
     "0xffffffffffffffff", "9223372036854775807"},
    {NULL}, {NULL}, {NULL}, {NULL},
};
static const char *const SMALL_INTS[] = {"1", "0", "2", "3", "7", "-1", "-2", "10", "5", "64"};
static const char *const BIG_INTS[] = {"127", "255", "-128", "32767", "65535", "2147483647",
                                       "-2147483648", "4294967295", "9223372036854775807",
                                       "-9223372036854775808", "18446744073709551615", "0x80",
                                       "0xffffffff", "4294967296"};
static const char *const FLOATS[] = {
    "0.5", "0.0", "-0.0", "1.5", "-2.5", "1e308", "5e-324", "3.4028235e38", "1e39", "2.5E+4",
    ".5", "1.", "1e-3", "16777217.0", "9007199254740993.0", "0.1", "1e-45", "255.5", "-128.5",
    "2147483648.0", "-2147483649.5", "9.3e18", "1.8446744073709552e19", "1e-310", "-1e30",
    "0.49999999999999994", "2.0", "-1.0"};
/* nan and inf, made of literals (the grammar has no nan or inf). */
static const char *const SPECIALS[] = {"(1e308 * 10)",          "(-1e308 * 10)", "sqrt(-1.0)",
                                       "log(0.0)",              "(1e308 * 10 - 1e308 * 10)",
                                       "f32(1e39)",             "f32(sqrt(-1.0))",
                                       "-(1e308 * 10 - 1e308 * 10)", "f32(-1e39)", "f64(log(0.0))",
                                       "True", "False"};

/* A literal; next to a strong integer PARTNER one in its range. */
static ty literal(generator *g, const ty *partner)
{
    if (partner && !partner->weak && dtype_kind_of(partner->dtype) != KIND_FLOAT &&
        partner->dtype != BCG_BOOL && take(g->in, 4) != 3) {
        put(g, INT_EDGES[partner->dtype][take(g->in, 8)]);
        return WEAK_INT;
    }
    switch (take(g->in, 8)) {
    case 0: case 1: case 2:
        put(g, SMALL_INTS[take(g->in, COUNT_OF(SMALL_INTS))]);
        return WEAK_INT;
    case 3:
        put(g, BIG_INTS[take(g->in, COUNT_OF(BIG_INTS))]);
        return WEAK_INT;
    case 4: case 5:
        put(g, FLOATS[take(g->in, COUNT_OF(FLOATS))]);
        return WEAK_FLOAT;
    case 6: {
        const char *s = SPECIALS[take(g->in, COUNT_OF(SPECIALS))];
        put(g, s);
        if (s[0] == 'T' || s[0] == 'F') /* Python's bools: weak too */
            return (ty){true, BCG_BOOL};
        return s[0] == 'f' ? strong(s[1] == '3' ? BCG_F32 : BCG_F64) : WEAK_FLOAT;
    }
    default: { /* a typed literal: T(literal) */
        bcg_dtype t = random_dtype(g);
        put_cast_open(g, t);
        if (take(g->in, 2))
            put(g, SMALL_INTS[take(g->in, COUNT_OF(SMALL_INTS))]);
        else if (INT_EDGES[t][0] && take(g->in, 2))
            put(g, INT_EDGES[t][take(g->in, 8)]);
        else
            put(g, FLOATS[take(g->in, COUNT_OF(FLOATS))]);
        put(g, ")");
        return strong(t);
    }
    }
}

static ty leaf(generator *g, const ty *partner)
{
    if (g->constant || take(g->in, 6) == 5)
        return literal(g, partner);
    int i = (int)take(g->in, (unsigned)g->operand_count);
    put(g, OPERAND_NAMES[i]);
    return strong(g->dtypes[i]);
}

static ty expression(generator *g, int depth, const ty *partner);
static ty condition(generator *g, int depth);

static const char *const COMPARISONS[] = {"<", "==", "!=", "<=", ">", ">="};

/* An integer self-comparison folds (issue 9's trigger); float ones must
 * still see NaN.  Forms: (S op S), (f(S) op f(S)), ((S + 1) op (S + 1)),
 * (S op S) && x, with S new or repeated from the pool. */
static ty self_comparison(generator *g, int depth)
{
    static const char *const functions[] = {"abs(", "-(", "floor(", "sqrt(", "i8(", "f32(",
                                            "exp(", "bool(", "~(", "u16("};
    const char *op = COMPARISONS[take(g->in, COUNT_OF(COMPARISONS))];
    int form = (int)take(g->in, 4);
    const char *function = functions[take(g->in, COUNT_OF(functions))];
    put(g, form == 3 ? "((" : "(");
    if (form == 1)
        put(g, function);
    else if (form == 2)
        put(g, "(");
    size_t start = g->length;
    ty s;
    if (g->pool_count && !g->constant && take(g->in, 3) == 0) {
        subtree *p = &g->pool[take(g->in, (unsigned)g->pool_count)];
        put_copy(g, p->start, p->length);
        s = p->type;
    } else {
        s = expression(g, depth - 1, NULL);
    }
    if (form == 1 && function[0] == '~' && is_float(s))
        s = need_integer(g, start, s);
    else if (form == 1 && function[0] == '-')
        s = need_signed(g, start, s);
    size_t length = g->length - start;
    const char *close = form == 1 ? ")" : form == 2 ? " + 1)" : "";
    put(g, close);
    put(g, " ");
    put(g, op);
    put(g, " ");
    if (form == 1)
        put(g, function);
    else if (form == 2)
        put(g, "(");
    put_copy(g, start, length);
    put(g, close);
    put(g, ")");
    ty t = boolean(s, s);
    if (form == 3) {
        put(g, take(g->in, 2) ? " && " : " || ");
        t = boolean(t, condition(g, depth - 1));
        put(g, ")");
    }
    return t;
}

/* A literal-only subtree: literals, typed literals and what they compute. */
static ty constant(generator *g, int depth)
{
    g->constant++;
    ty t = expression(g, depth, NULL);
    g->constant--;
    return t;
}

enum {
    C_COMPARE, C_SELF, C_CONSTANT, C_BOOL_CAST, C_ABS, C_LOGIC, C_NOT, C_WHERE, C_EXPRESSION,
    C_COUNT
};
static const unsigned char CONDITION_WEIGHTS[C_COUNT] = {3, 4, 3, 2, 2, 3, 1, 2, 2};

/* A where() condition or logical operand: anything, truth-tested, with
 * the forms libtcc was seen to miscompile made likely. */
static ty condition(generator *g, int depth)
{
    if (depth <= 0 || too_long(g) || exhausted(g->in))
        return leaf(g, NULL);
    size_t start = g->length;
    ty t;
    switch (pick(g->in, CONDITION_WEIGHTS, C_COUNT)) {
    case C_COMPARE: {
        put(g, "(");
        ty x = expression(g, depth - 1, NULL);
        put(g, " ");
        put(g, COMPARISONS[take(g->in, COUNT_OF(COMPARISONS))]);
        put(g, " ");
        t = boolean(x, expression(g, depth - 1, &x));
        put(g, ")");
        break;
    }
    case C_SELF: t = self_comparison(g, depth); break;
    case C_CONSTANT: t = constant(g, depth - 1); break;
    case C_BOOL_CAST: {
        bool twice = take(g->in, 3) == 2;
        put(g, twice ? "bool(bool(" : "bool(");
        expression(g, depth - 1, NULL);
        put(g, twice ? "))" : ")");
        t = strong(BCG_BOOL);
        break;
    }
    case C_ABS:
        put(g, "abs(");
        t = expression(g, depth - 1, NULL);
        put(g, ")");
        break;
    case C_LOGIC: { /* X && m, m || X ... with X a folded or constant condition */
        bool first = take(g->in, 2);
        const char *op = take(g->in, 2) ? " && " : " || ";
        put(g, "(");
        ty x = first ? condition(g, depth - 1) : self_comparison(g, depth - 1);
        put(g, op);
        ty y = first ? self_comparison(g, depth - 1) : condition(g, depth - 1);
        put(g, ")");
        t = boolean(x, y);
        break;
    }
    case C_NOT:
        put(g, "!");
        t = condition(g, depth - 1);
        t.dtype = BCG_BOOL;
        break;
    case C_WHERE: {
        put(g, "where(");
        condition(g, depth - 1);
        put(g, ", ");
        ty x = condition(g, depth - 1);
        put(g, ", ");
        t = promote(x, condition(g, depth - 1));
        put(g, ")");
        break;
    }
    default: t = expression(g, depth - 1, NULL); break;
    }
    remember(g, start, t);
    return t;
}

/* Wraps text[START, end) in CAST(...) and returns the cast's type. */
static ty cast_to(generator *g, size_t start, bcg_dtype to)
{
    char prefix[16];
    snprintf(prefix, sizeof prefix, "%s(", CAST_NAMES[0][to]);
    wrap(g, start, prefix);
    return strong(to);
}

/* A wide input's function call: any row of gen/ops.h with a call name and
 * ARITY arguments (not where and clip, which have their own productions),
 * typed as type.c types its rule; arguments a rule rejects are cast first:
 * sign of a bool to i8, both sides of the saturating rows to one integer
 * type, of the fixed-point ones to their type. */
static ty wide_function(generator *g, int depth, bool binary)
{
    int rows[OP_COUNT], count = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        const op_info *row = &op_table[op];
        if (row->call && row->arity == (binary ? 2 : 1) && op != OP_WHERE && op != OP_CLIP)
            rows[count++] = op;
    }
    int row = rows[take(g->in, (unsigned)count)];
    const op_info *info = &op_table[row];
    put(g, info->call);
    put(g, "(");
    size_t at = g->length;
    ty x = expression(g, depth - 1, NULL);
    bool saturating = info->rule == RULE_SATURATE || info->rule == RULE_FIXED;
    bcg_dtype to = BCG_I16;
    if (info->rule == RULE_FIXED)
        to = op_fixed_dtype((expr_op)row);
    else if (saturating && !x.weak && !is_float(x) && !is_bool(x))
        to = x.dtype;
    else if (saturating)
        to = INTEGER_CASTS[take(g->in, COUNT_OF(INTEGER_CASTS) - 1)]; /* not bool */
    if (saturating && (x.weak || x.dtype != to))
        x = cast_to(g, at, to);
    if (row == OP_SIGN && is_bool(x))
        x = cast_to(g, at, BCG_I8);
    ty y = x;
    if (binary) {
        put(g, ", ");
        at = g->length;
        y = expression(g, depth - 1, &x);
        if (saturating && (y.weak || y.dtype != to))
            y = cast_to(g, at, to);
    }
    put(g, ")");
    switch (info->rule) {
    case RULE_FLOAT: return float_for(promote(x, y));
    case RULE_FLOAT_TEST: case RULE_NOT: case RULE_LOGICAL: return boolean(x, y);
    case RULE_INTEGRAL: return promote_i8(x, y);
    case RULE_ROUND: return is_bool(x) || is_float(x) ? float_for(x) : x;
    case RULE_SATURATE: case RULE_FIXED: return strong(to);
    case RULE_PROMOTE: return promote(x, y);
    default: return x; /* RULE_SAME: abs, sign */
    }
}

enum {
    E_LEAF, E_LITERAL, E_UNARY, E_ARITHMETIC, E_BITWISE, E_COMPARE, E_LOGIC, E_MATH,
    E_BINARY_FUNCTION, E_WHERE, E_CLIP, E_CAST, E_SELF, E_CONSTANT, E_REPEAT, E_TYPED,
    E_PARENTHESES, E_COUNT
};
static const unsigned char EXPRESSION_WEIGHTS[E_COUNT] = {6, 2, 3, 8, 3, 3, 2, 4, 3, 5, 2, 3,
                                                          3, 3, 2, 2, 1};

static ty expression(generator *g, int depth, const ty *partner)
{
    if (depth <= 0 || too_long(g) || exhausted(g->in))
        return leaf(g, partner);
    size_t start = g->length;
    ty t;
    int production = pick(g->in, EXPRESSION_WEIGHTS, E_COUNT);
    if (g->constant && (production == E_REPEAT || production == E_SELF))
        production = E_ARITHMETIC;
    switch (production) {
    case E_LEAF: t = leaf(g, partner); break;
    case E_LITERAL: t = literal(g, partner); break;
    case E_UNARY: {
        static const char *const ops[] = {"-", "~", "!", "+"};
        const char *op = ops[take(g->in, 4)];
        put(g, op);
        size_t at = g->length;
        t = expression(g, depth - 1, NULL);
        if (op[0] == '~')
            t = need_integer(g, at, t);
        else if (op[0] == '-')
            t = need_signed(g, at, t);
        else if (op[0] == '!')
            t.dtype = BCG_BOOL;
        break;
    }
    case E_ARITHMETIC: {
        static const char *const ops[] = {" + ", " * ", " - ", " / ", " // ", " % ", " ** "};
        int op = (int)take(g->in, COUNT_OF(ops));
        put(g, "(");
        ty x = expression(g, depth - 1, NULL);
        put(g, ops[op]);
        size_t at = g->length;
        ty y = expression(g, depth - 1, &x);
        if (op == 2 && is_bool(x) && is_bool(y)) { /* bool - bool is a type error */
            wrap(g, at, "i8(");
            y = strong(BCG_I8);
        }
        put(g, ")");
        t = op >= 4 ? promote_i8(x, y) : promote(x, y);
        if (op == 3 && !is_float(t)) /* true division of integers: f64 */
            t = t.weak ? WEAK_FLOAT : strong(BCG_F64);
        break;
    }
    case E_BITWISE: {
        static const char *const ops[] = {" & ", " | ", " ^ ", " << ", " >> "};
        int op = (int)take(g->in, COUNT_OF(ops));
        put(g, "(");
        size_t at = g->length;
        ty x = need_integer(g, at, expression(g, depth - 1, NULL));
        put(g, ops[op]);
        at = g->length;
        ty y = need_integer(g, at, expression(g, depth - 1, &x));
        y = integer_partner(g, at, x, y);
        put(g, ")");
        t = op >= 3 ? promote_i8(x, y) : promote(x, y);
        break;
    }
    case E_COMPARE: {
        put(g, "(");
        ty x = expression(g, depth - 1, NULL);
        put(g, " ");
        put(g, COMPARISONS[take(g->in, COUNT_OF(COMPARISONS))]);
        put(g, " ");
        t = boolean(x, expression(g, depth - 1, &x));
        put(g, ")");
        break;
    }
    case E_LOGIC: {
        put(g, "(");
        ty x = condition(g, depth - 1);
        put(g, take(g->in, 2) ? " || " : " && ");
        t = boolean(x, condition(g, depth - 1));
        put(g, ")");
        break;
    }
    case E_MATH:
        if (wide && take(g->in, 2)) {
            t = wide_function(g, depth, false);
            break;
        }
        {
        static const char *const functions[] = {"abs(", "sqrt(", "exp(", "log(", "sin(",
                                                "cos(", "tanh(", "floor(", "ceil("};
        int f = (int)take(g->in, COUNT_OF(functions));
        put(g, functions[f]);
        ty x = expression(g, depth - 1, NULL);
        put(g, ")");
        t = f == 0 ? x : float_for(x);
        }
        break;
    case E_BINARY_FUNCTION:
        if (wide && take(g->in, 2)) {
            t = wide_function(g, depth, true);
            break;
        }
        {
        static const char *const functions[] = {"minimum(", "maximum(", "pow("};
        int f = (int)take(g->in, COUNT_OF(functions));
        put(g, functions[f]);
        ty x = expression(g, depth - 1, NULL);
        put(g, ", ");
        ty y = expression(g, depth - 1, &x);
        put(g, ")");
        t = f == 2 ? promote_i8(x, y) : promote(x, y);
        }
        break;
    case E_WHERE: {
        put(g, "where(");
        condition(g, depth - 1);
        put(g, ", ");
        size_t at = g->length;
        int literals = wide ? (int)take(g->in, 4) : 0; /* 1: x, 2: y a literal */
        ty x = literals == 1 ? literal(g, partner) : expression(g, depth - 1, partner);
        size_t length = g->length - at;
        put(g, ", ");
        ty y;
        if (literals == 2) {
            y = literal(g, &x);
        } else if (take(g->in, 6) == 5) { /* where(c, x, x) */
            put_copy(g, at, length);
            y = x;
        } else {
            y = expression(g, depth - 1, &x);
        }
        put(g, ")");
        t = promote(x, y);
        break;
    }
    case E_CLIP: {
        put(g, "clip(");
        ty x = expression(g, depth - 1, NULL);
        put(g, ", ");
        ty lo = expression(g, depth - 1, &x);
        put(g, ", ");
        ty hi = expression(g, depth - 1, &x);
        put(g, ")");
        t = promote(promote(x, lo), hi);
        break;
    }
    case E_CAST: {
        bcg_dtype to = random_dtype(g);
        put_cast_open(g, to);
        expression(g, depth - 1, NULL);
        put(g, ")");
        t = strong(to);
        break;
    }
    case E_SELF: t = self_comparison(g, depth); break;
    case E_CONSTANT: t = constant(g, depth - 1); break;
    case E_REPEAT:
        if (g->pool_count) {
            subtree *p = &g->pool[take(g->in, (unsigned)g->pool_count)];
            put_copy(g, p->start, p->length);
            t = p->type;
        } else {
            t = leaf(g, partner);
        }
        break;
    case E_TYPED: { /* T(literal) op x, the typed-literal arithmetic expr_type leaves alone */
        static const char *const ops[] = {" + ", " * ", " - ", " // ", " % ", " & ", " < ",
                                          " == "};
        int op = (int)take(g->in, COUNT_OF(ops));
        put(g, "(");
        size_t at = g->length;
        g->constant++;
        ty x = literal(g, NULL);
        g->constant--;
        if (op == 5)
            x = need_integer(g, at, x);
        put(g, ops[op]);
        at = g->length;
        ty y = take(g->in, 2) ? constant(g, 1) : expression(g, depth - 1, &x);
        if (op == 5)
            y = integer_partner(g, at, x, need_integer(g, at, y));
        if (op == 2 && is_bool(x) && is_bool(y)) {
            wrap(g, at, "i8(");
            y = strong(BCG_I8);
        }
        put(g, ")");
        t = op >= 6 ? boolean(x, y) : op == 3 || op == 4 ? promote_i8(x, y) : promote(x, y);
        break;
    }
    default:
        put(g, "(");
        t = expression(g, depth - 1, partner);
        put(g, ")");
        break;
    }
    remember(g, start, t);
    return t;
}

/* ---- operands, options and data --------------------------------------------- */

typedef struct setup {
    int count;
    bcg_operand ops[MAX_INPUTS];
    int64_t shapes[MAX_INPUTS][MAX_FUZZ_RANK], strides[MAX_INPUTS][MAX_FUZZ_RANK];
    bcg_options options;
    bcg_output output;      /* options.output points here when a view or dtype was drawn */
    int64_t out_shape[MAX_FUZZ_RANK], out_strides[MAX_FUZZ_RANK], reduce_shape[MAX_FUZZ_RANK];
    int rank;               /* the drawn result's rank and shape */
    int64_t result[MAX_FUZZ_RANK];
    int64_t max_elements;   /* MAX_ELEMENTS, or MAX_ELEMENTS_WIDE for a wide input's large sizes */
    bool threads;
    int thread_count;       /* with threads: 2, or 2-4 in a wide input */
    int data_mode;          /* 0 mixed, 1 small integers, 2 random bits, 3 special values */
    bool odd_bools;         /* bool bytes other than 0 and 1 */
    unsigned alias_mask;    /* operands whose memory is the output's (choose_aliases) */
} setup;

static int64_t contiguous_span(const int64_t *shape, int rank)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= shape[d];
    return n;
}

static void choose_setup(choices *in, setup *s)
{
    static const unsigned char rank_weights[] = {2, 4, 4, 3, 1, 1};
    static const int64_t short_sizes[] = {2, 3, 1, 4, 5, 7, 8, 16};
    static const int64_t long_sizes[] = {67, 3, 1, 1024, 130, 4};
    /* wide: around vector widths, tiles, unroll and small-kernel limits */
    static const int64_t wide_sizes[] = {9,  15,  17,  31,   33,   63,   65,   127,
                                         129, 255, 257, 1023, 1025, 4095, 4097, 6};
    static const int64_t huge_sizes[] = {65537, 100003, 262147, 1000003, 1 << 20};
    static const int64_t stride_factors[] = {-1, 0, 2, 1, -2, 3, -3, 5};
    s->count = 1 + (int)take(in, MAX_INPUTS);
    int rank = pick(in, rank_weights, wide ? 6 : 5);
    bool long_runs = take(in, 5) == 4;
    bool huge = wide && rank > 0 && (take(in, 64) == 63 || big); /* (a 1M kernel: ~80 ms) */
#ifndef FUZZ_DIFF_MAIN
    huge = false; /* (under libFuzzer and ASan: make test's short run keeps its time) */
#endif
    s->max_elements = huge ? MAX_ELEMENTS_WIDE : MAX_ELEMENTS;
    int64_t result[MAX_FUZZ_RANK], elements = 1;
    for (int d = 0; d < rank; d++) {
        result[d] = long_runs ? long_sizes[take(in, 6)] : short_sizes[take(in, 8)];
        if (wide && take(in, 3) == 2)
            result[d] = wide_sizes[take(in, COUNT_OF(wide_sizes))];
        if (take(in, 24) == 23)
            result[d] = 0;
    }
    if (huge && result[rank - 1])
        result[rank - 1] = huge_sizes[take(in, COUNT_OF(huge_sizes))];
    for (int d = 0; d < rank; d++) /* bounded: the outer dimensions shrink first */
        elements *= result[d] ? result[d] : 1;
    for (int d = 0; d < rank && elements > (huge ? s->max_elements : s->max_elements / 4); d++) {
        elements /= result[d] ? result[d] : 1;
        result[d] = result[d] ? 1 : 0;
    }
    /* wide: Paddle's axis, b of lower rank placed into a at dimension axis */
    int axis = BCG_AXIS_NONE, axis_rank = 0;
    if (wide && s->count == 2 && rank >= 2 && take(in, 4) == 3) {
        axis_rank = 1 + (int)take(in, (unsigned)rank - 1);
        axis = (int)take(in, (unsigned)(rank - axis_rank + 1));
    }
    for (int i = 0; i < s->count; i++) {
        bcg_operand *op = &s->ops[i];
        op->name = OPERAND_NAMES[i];
        op->dtype = (bcg_dtype)take(in, BCG_DTYPE_COUNT);
        op->rank = take(in, 3) == 2 ? rank - (int)take(in, (unsigned)rank + 1) : rank;
        if (axis != BCG_AXIS_NONE)
            op->rank = i == 0 ? rank : axis_rank;
        op->shape = s->shapes[i];
        op->strides = NULL;
        for (int d = 0; d < op->rank; d++) {
            s->shapes[i][d] = result[axis != BCG_AXIS_NONE && i == 1 ? axis + d
                                                                     : rank - op->rank + d];
            if (take(in, 4) == 3)
                s->shapes[i][d] = 1;
        }
        int mode = (int)take(in, 8);
        if (mode >= 4 && op->rank > 0) { /* 6, 7: transposed (Fortran order) */
            int64_t contiguous = 1;
            for (int k = 0; k < op->rank; k++) {
                int d = mode >= 6 ? k : op->rank - 1 - k;
                s->strides[i][d] = contiguous * (mode == 5 || mode == 7
                                                     ? stride_factors[take(in, wide ? 8 : 4)]
                                                     : 1);
                contiguous *= s->shapes[i][d] ? s->shapes[i][d] : 1;
            }
            op->strides = s->strides[i];
        }
    }
    static const int unroll_limits[] = {16, 0, 1, 64, 4096};
    static const int unroll_factors[] = {4, 1, 2, 3, 8};
    static const int microkernel_runs[] = {64, 0, 1, 8, 16};
    static const int streams[] = {BCG_STREAM_AUTO, 0, 1};
    bcg_options_init(&s->options);
    s->options.unroll_limit = unroll_limits[take(in, 5)];
    s->options.unroll_factor = unroll_factors[take(in, 5)];
    s->options.microkernel_run = microkernel_runs[take(in, 5)];
    s->options.stream_stores = streams[take(in, 3)];
    s->options.inplace = take(in, 5) == 4 ? (int)take(in, (unsigned)s->count) : -1;
    s->options.axis = axis;
    if (axis != BCG_AXIS_NONE && s->options.inplace == 1) /* b keeps its lower rank */
        s->options.inplace = -1;
    if (s->options.inplace >= 0) { /* the target holds the result: its shape, no 0 strides */
        int i = s->options.inplace;
        int64_t *strides = s->strides[i];
        s->ops[i].rank = rank;
        memcpy(s->shapes[i], result, sizeof result);
        if (s->ops[i].strides) { /* C or Fortran order, directions kept */
            bool fortran = take(in, 2);
            int64_t contiguous = 1;
            for (int k = 0; k < rank; k++) {
                int d = fortran ? k : rank - 1 - k;
                strides[d] = strides[d] < 0 ? -contiguous : contiguous;
                contiguous *= result[d] ? result[d] : 1;
            }
        }
    }
    s->rank = rank;
    memcpy(s->result, result, sizeof s->result);
    s->threads = take(in, 6) == 5 || (wide && big);
    s->thread_count = s->threads && wide ? 2 + (int)take(in, 3) : 2;
    s->data_mode = (int)take(in, 4);
    s->odd_bools = take(in, 8) == 7;
}

/* The output (issue 12), drawn from the bytes left after the expression,
 * so that every input from before output views and reductions existed
 * (tests/fuzz/regress) still makes the same kernel: a view (a permutation
 * of the result's dimensions, some reversed, some with gaps) and an output
 * dtype, which the compile may reject (not a same-kind cast); or a
 * reduction to a shape that broadcasts to the result (each dimension kept
 * or 1, leading ones sometimes dropped). */
static void choose_output(choices *in, setup *s)
{
    int rank = s->rank;
    const int64_t *result = s->result;
    if (s->options.inplace < 0 && take(in, 4) == 3) {
        s->output.dtype = take(in, 2) ? BCG_DTYPE_AUTO : (int)take(in, BCG_DTYPE_COUNT);
        if (take(in, 3)) {
            int order[MAX_FUZZ_RANK] = {0, 1, 2, 3, 4, 5};
            for (int k = rank - 1; k > 0; k--) {
                int j = (int)take(in, (unsigned)k + 1), t = order[k];
                order[k] = order[j];
                order[j] = t;
            }
            int64_t step = 1;
            for (int k = rank - 1; k >= 0; k--) {
                int d = order[k];
                int64_t gap = 1 + (int64_t)take(in, 2);
                s->out_strides[d] = take(in, 3) == 2 ? -step * gap : step * gap;
                step *= (result[d] ? result[d] : 1) * gap;
            }
            s->output.rank = rank;
            s->output.strides = s->out_strides;
            memcpy(s->out_shape, result, sizeof s->out_shape);
        }
        s->options.output = &s->output;
    }
    if (s->options.inplace < 0 && !s->options.output && take(in, 5) == 4) {
        s->output.dtype = BCG_DTYPE_AUTO;
        s->output.reduce = 1 + (int)take(in, 7);
        int drop = take(in, 3) == 2 ? (int)take(in, (unsigned)rank + 1) : 0;
        s->output.rank = rank - drop;
        for (int d = drop; d < rank; d++)
            s->reduce_shape[d - drop] = take(in, 2) ? result[d] : 1;
        s->output.shape = s->reduce_shape;
        s->options.output = &s->output;
    }
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Signaling NaN inputs once made the JIT and the reference differ in
 * value, not only in payload: floor and ceil quieted them on one path only
 * and pow(sNaN, 0) is NaN where pow(qNaN, 0) is 1 (`floor(a) ** 0.0` over
 * a = 0x7ff4000000000001 gave 1 in the JIT and nan in the reference until
 * the ops.h rework).  docs/semantics.md says nothing of them; the data
 * keep them (BCG_DIFF_SNAN=0 quiets them, to look past such a difference). */
static bool signaling_nans;

/* Edge-rich values: integers from each type's edges, floats from the
 * special values, random bits, small integers. */
static void fill(void *buffer, bcg_dtype t, int64_t count, uint64_t seed, int mode, bool odd_bools)
{
    static const double specials[] = {
        0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, NAN, -NAN, INFINITY, -INFINITY,
        3.4028234663852886e38, 1.7976931348623157e308, 4.9e-324, 1e-40, 1.401298464324817e-45,
        16777217.0, 2147483648.0, -2147483649.0, 9223372036854775808.0, 18446744073709551616.0,
        1e30, -1e30, 0.1, 255.5, -128.5, 127.0, 65535.0, -0.49999999999999994, 1e-310, 7.0};
    int bits = dtype_bits(t);
    for (int64_t i = 0; i < count; i++) {
        uint64_t r = mix(seed ^ mix((uint64_t)i));
        int how = mode == 0 ? (int)(r & 3) : mode;
        uint64_t u; /* integer bits */
        double v;   /* float value */
        switch (how) {
        case 1: /* small integers, so that equal values meet */
            u = (uint64_t)((int64_t)((r >> 8) % 7) - 3);
            v = (double)(int64_t)u;
            break;
        case 2: /* random bits */
            u = r >> 3 ^ r << 61;
            v = (r & 0x100) ? (double)(int64_t)(r >> 11) / (double)(1ull << (r & 31)) : 0;
            break;
        default: { /* each type's edges, the special floats */
            static const uint64_t edges[] = {0, 1, ~0ull, 2, 0x7f, 0x80, 0xff, 0x7fff, 0x8000,
                                             0xffff, 0x7fffffff, 0x80000000u, 0xffffffffu,
                                             0x7fffffffffffffffull, 0x8000000000000000ull, 100};
            u = edges[(r >> 8) % 16];
            if ((r >> 12) & 1) /* min and max of this width */
                u = ((r >> 13) & 1) ? (bits == 64 ? ~0ull >> 1 : (1ull << (bits - 1)) - 1)
                                    : (bits == 64 ? 1ull << 63 : ~0ull << (bits - 1));
            v = specials[(r >> 16) % COUNT_OF(specials)];
            break;
        }
        }
        if (how == 2 && (t == BCG_F16 || t == BCG_BF16)) {
            /* every 16-bit pattern: NaNs, infinities, subnormals */
            uint16_t b = (uint16_t)(r >> 24);
            memcpy((uint16_t *)buffer + i, &b, 2);
            continue;
        }
        if (how == 2 && (t == BCG_F32 || t == BCG_F64) && ((r >> 20) & 1)) {
            /* raw bit patterns: NaN payloads, subnormals, huge values;
             * signaling NaNs quieted unless asked for (see signaling_nans) */
            if (t == BCG_F32) {
                uint32_t b = (uint32_t)(r >> 24);
                if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu) && !signaling_nans)
                    b |= 0x400000u;
                memcpy((float *)buffer + i, &b, 4);
            } else {
                uint64_t b = r;
                if ((b >> 52 & 0x7ff) == 0x7ff && (b << 12) && !signaling_nans)
                    b |= 1ull << 51;
                memcpy((double *)buffer + i, &b, 8);
            }
            continue;
        }
        switch (t) {
        case BCG_BOOL:
            ((uint8_t *)buffer)[i] = odd_bools && (r & 0x30) == 0x30
                                         ? (uint8_t)(r >> 40) : (uint8_t)((r >> 40) & 1);
            break;
        case BCG_I8: case BCG_U8: ((uint8_t *)buffer)[i] = (uint8_t)u; break;
        case BCG_I16: case BCG_U16: ((uint16_t *)buffer)[i] = (uint16_t)u; break;
        case BCG_I32: case BCG_U32: ((uint32_t *)buffer)[i] = (uint32_t)u; break;
        case BCG_I64: case BCG_U64: ((uint64_t *)buffer)[i] = u; break;
        case BCG_F32: ((float *)buffer)[i] = (float)v; break;
        case BCG_F64: ((double *)buffer)[i] = v; break;
        case BCG_F16: ((uint16_t *)buffer)[i] = bcg_f16_from_f64(v); break;
        case BCG_BF16: ((uint16_t *)buffer)[i] = bcg_bf16_from_f32((float)v); break;
        default: break;
        }
    }
}

/* ---- running and comparing ---------------------------------------------------- */

/* An f32 function whose microkernel is a polynomial (ops.h: a tile family
 * and transcendental; sqrt's is correctly rounded): exp, log, sin, cos,
 * tanh, and issue 13's log1p ... erf, expit; and f64 exp and log, vectorised
 * polynomials too (within 1 ulp). */
static bool is_transcendental_f32(const expr_node *n)
{
    return (n->dtype == BCG_F32 && n->op != OP_SQRT && op_table[n->op].tile &&
            op_table[n->op].transcendental) ||
           (n->dtype == BCG_F64 && (n->op == OP_EXP || n->op == OP_LOG)); /* vectorised too,
                                                                           within 1 ulp */
}

/* How far the microkernel may be from the straight-line code: the
 * polynomial's bound plus libm's (docs/semantics.md, accuracy table). */
static uint64_t approximate_ulp(const expr_node *n)
{
    return n->op == OP_EXP || n->op == OP_LOG || n->op == OP_SIN || n->op == OP_COS ||
                   n->op == OP_TANH
               ? TRANSCENDENTAL_ULP
               : 5;
}

static bool transcendental_below(const expr_node *n)
{
    for (int i = 0; i < n->arg_count; i++)
        if (is_transcendental_f32(n->args[i]) || transcendental_below(n->args[i]))
            return true;
    return false;
}

static uint64_t float_ulps(float x, float y)
{
    if (isnan(x) || isnan(y))
        return isnan(x) && isnan(y) ? 0 : UINT64_MAX;
    if (x == y)
        return 0;
    int32_t ia, ib;
    memcpy(&ia, &x, 4);
    memcpy(&ib, &y, 4);
    int64_t a = ia < 0 ? INT32_MIN - (int64_t)ia : ia;
    int64_t b = ib < 0 ? INT32_MIN - (int64_t)ib : ib;
    return a > b ? (uint64_t)(a - b) : (uint64_t)(b - a);
}

/* Whether element I differs: bits, NaN matching any NaN, f32 within ULP. */
static bool element_differs(const unsigned char *x, const unsigned char *y, bcg_dtype t, uint64_t ulp)
{
    if (t == BCG_F32) {
        float fx, fy;
        memcpy(&fx, x, 4);
        memcpy(&fy, y, 4);
        if (isnan(fx) && isnan(fy))
            return false;
        return ulp ? float_ulps(fx, fy) > ulp : memcmp(x, y, 4) != 0;
    }
    if (t == BCG_F64) {
        double dx, dy;
        memcpy(&dx, x, 8);
        memcpy(&dy, y, 8);
        if (isnan(dx) && isnan(dy))
            return false;
        if (!ulp || isnan(dx) || isnan(dy) || memcmp(x, y, 8) == 0)
            return memcmp(x, y, 8) != 0;
        int64_t ia, ib; /* f64 exp and log: within ULP f64 ulps (docs/semantics.md) */
        memcpy(&ia, &dx, 8);
        memcpy(&ib, &dy, 8);
        if ((ia < 0) != (ib < 0))
            return true;
        return (ia > ib ? (uint64_t)ia - (uint64_t)ib : (uint64_t)ib - (uint64_t)ia) > ulp;
    }
    if (t == BCG_F16 || t == BCG_BF16) {
        uint16_t hx, hy;
        memcpy(&hx, x, 2);
        memcpy(&hy, y, 2);
        float fx = t == BCG_F16 ? bcg_f16_to_f32(hx) : bcg_bf16_to_f32(hx);
        float fy = t == BCG_F16 ? bcg_f16_to_f32(hy) : bcg_bf16_to_f32(hy);
        if (isnan(fx) && isnan(fy))
            return false;
        /* ULP counts f32 ulps; an f16 one is 2^13 of them, a bf16 one 2^16 */
        return ulp ? float_ulps(fx, fy) > (t == BCG_F16 ? ulp << 13 : ulp << 16) : hx != hy;
    }
    return memcmp(x, y, bcg_dtype_size(t)) != 0;
}

static void print_value(FILE *f, const unsigned char *p, bcg_dtype t)
{
    uint64_t bits = 0;
    memcpy(&bits, p, bcg_dtype_size(t));
    switch (t) {
    case BCG_BOOL: fprintf(f, "%u", p[0]); return;
    case BCG_I8: fprintf(f, "%d", (int8_t)bits); return;
    case BCG_I16: fprintf(f, "%d", (int16_t)bits); return;
    case BCG_I32: fprintf(f, "%d", (int32_t)bits); return;
    case BCG_I64: fprintf(f, "%lld", (long long)(int64_t)bits); return;
    case BCG_F32: {
        float x;
        memcpy(&x, p, 4);
        fprintf(f, "%.9g (0x%08llx)", x, (unsigned long long)bits);
        return;
    }
    case BCG_F64: {
        double x;
        memcpy(&x, p, 8);
        fprintf(f, "%.17g (0x%016llx)", x, (unsigned long long)bits);
        return;
    }
    default: fprintf(f, "%llu", (unsigned long long)bits); return;
    }
}

typedef struct operand_memory {
    unsigned char *jit, *reference; /* `span` elements each */
    int64_t span, offset;           /* element [0,...,0] is at `offset` */
} operand_memory;

static void operand_span(const bcg_operand *op, int64_t *span, int64_t *offset)
{
    int64_t low = 0, high = 0;
    for (int d = 0; d < op->rank; d++) {
        if (op->shape[d] == 0) {
            *span = *offset = 0;
            return;
        }
        int64_t step = (op->shape[d] - 1) * (op->strides ? op->strides[d] : 0);
        if (step < 0)
            low += step;
        else
            high += step;
    }
    if (!op->strides) {
        low = 0;
        high = contiguous_span(op->shape, op->rank) - 1;
    }
    *span = high - low + 1;
    *offset = -low;
}

/* Operand I's logical element number E (C order over its own shape). */
static const unsigned char *logical_element(const setup *s, const operand_memory *m, int i, int64_t e)
{
    const bcg_operand *op = &s->ops[i];
    int64_t at = m->offset, contiguous = 1;
    for (int d = op->rank - 1; d >= 0; d--) {
        int64_t index = e % op->shape[d];
        e /= op->shape[d];
        at += index * (op->strides ? op->strides[d] : contiguous);
        contiguous *= op->shape[d];
    }
    return m->jit + (size_t)at * bcg_dtype_size(op->dtype);
}

/* Writes operand I's logical values as DIR/NAME.npy (C order). */
static bool write_npy(const char *dir, const setup *s, const operand_memory *m, int i)
{
    static const char *const descr[BCG_DTYPE_COUNT] = {"|b1", "|i1", "<i2", "<i4", "<i8", "|u1",
                                                       "<u2", "<u4", "<u8", "<f4", "<f8", "<f2", "|V2"};
    const bcg_operand *op = &s->ops[i];
    char path[4096], shape[256] = "", header[512];
    snprintf(path, sizeof path, "%s/%s.npy", dir, op->name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    for (int d = 0; d < op->rank; d++)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%lld,%s",
                 (long long)op->shape[d], d + 1 < op->rank ? " " : "");
    int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                     descr[op->dtype], shape);
    int total = 10 + n + 1, pad = (64 - total % 64) % 64;
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    uint16_t header_length = (uint16_t)(n + pad + 1);
    fputc(header_length & 0xff, f);
    fputc(header_length >> 8, f);
    fwrite(header, 1, (size_t)n, f);
    for (int k = 0; k < pad; k++)
        fputc(' ', f);
    fputc('\n', f);
    int64_t count = contiguous_span(op->shape, op->rank);
    for (int64_t e = 0; e < count; e++) {
        const unsigned char *p = logical_element(s, m, i, e);
        if (op->dtype == BCG_BOOL)
            fputc(p[0] != 0, f); /* .npy bools are 0/1 */
        else
            fwrite(p, 1, bcg_dtype_size(op->dtype), f);
    }
    return fclose(f) == 0;
}

static void report(const char *text, const setup *s, const operand_memory *memory,
                   const unsigned char *jit, const unsigned char *reference, int64_t count,
                   bcg_dtype t, uint64_t ulp, const char *what)
{
    FILE *f = stderr;
    fprintf(f, "\nfuzz_jit_diff: JIT and reference evaluator differ (%s)\n", what);
    fprintf(f, "  expression: %s\n", text);
    for (int i = 0; i < s->count; i++) {
        const bcg_operand *op = &s->ops[i];
        fprintf(f, "  operand %s: %s[", op->name, CAST_NAMES[0][op->dtype]);
        for (int d = 0; d < op->rank; d++)
            fprintf(f, "%s%lld", d ? "," : "", (long long)op->shape[d]);
        fprintf(f, "]");
        if (op->strides) {
            fprintf(f, "@[");
            for (int d = 0; d < op->rank; d++)
                fprintf(f, "%s%lld", d ? "," : "", (long long)op->strides[d]);
            fprintf(f, "]");
        }
        int64_t n = contiguous_span(op->shape, op->rank);
        fprintf(f, " =");
        for (int64_t e = 0; e < n && e < 24; e++) {
            fprintf(f, " ");
            print_value(f, logical_element(s, &memory[i], i, e), op->dtype);
        }
        fprintf(f, "%s\n", n > 24 ? " ..." : "");
    }
    const bcg_options *o = &s->options;
    fprintf(f, "  options: unroll_limit %d, unroll_factor %d, microkernel_run %d, "
               "stream_stores %d, inplace %d, %d thread(s)\n",
            o->unroll_limit, o->unroll_factor, o->microkernel_run, o->stream_stores, o->inplace,
            s->threads ? s->thread_count : 1);
    for (int i = 0; i < s->count; i++)
        if (s->alias_mask >> i & 1)
            fprintf(f, "  operand %s is the output's own memory (an exact alias)\n", s->ops[i].name);
    if (o->output) {
        fprintf(f, "  output: dtype %s",
                o->output->dtype == BCG_DTYPE_AUTO ? "auto" : CAST_NAMES[0][o->output->dtype]);
        if (o->output->strides) {
            fprintf(f, ", strides [");
            for (int d = 0; d < o->output->rank; d++)
                fprintf(f, "%s%lld", d ? "," : "", (long long)o->output->strides[d]);
            fprintf(f, "] (elements below are over the view's whole span)");
        }
        fprintf(f, "\n");
    }
    int shown = 0;
    size_t size = bcg_dtype_size(t);
    for (int64_t e = 0; e < count && shown < 8; e++) {
        if (!element_differs(jit + e * size, reference + e * size, t, ulp))
            continue;
        fprintf(f, "  element %lld: jit ", (long long)e);
        print_value(f, jit + e * size, t);
        fprintf(f, ", reference ");
        print_value(f, reference + e * size, t);
        fprintf(f, "\n");
        shown++;
    }
    const char *dir = getenv("BCG_DIFF_DUMP");
    if (dir && *dir) {
        fprintf(f, "  bcgen run '%s'", text);
        for (int i = 0; i < s->count; i++) {
            const bcg_operand *op = &s->ops[i];
            write_npy(dir, s, &memory[i], i);
            fprintf(f, " -i %s=%s[", op->name, CAST_NAMES[0][op->dtype]);
            for (int d = 0; d < op->rank; d++)
                fprintf(f, "%s%lld", d ? "," : "", (long long)op->shape[d]);
            fprintf(f, "]");
            if (op->strides) {
                fprintf(f, "@[");
                for (int d = 0; d < op->rank; d++)
                    fprintf(f, "%s%lld", d ? "," : "", (long long)op->strides[d]);
                fprintf(f, "]");
            }
            fprintf(f, "=%s/%s.npy", dir, op->name);
        }
        if (o->inplace >= 0)
            fprintf(f, " --inplace %s", s->ops[o->inplace].name);
        if (o->output && o->output->dtype != BCG_DTYPE_AUTO)
            fprintf(f, " --out-dtype %s", CAST_NAMES[0][o->output->dtype]);
        if (o->output && o->output->reduce) {
            fprintf(f, " --reduce %s --out-shape [", reduce_name(o->output->reduce));
            for (int d = 0; d < o->output->rank; d++)
                fprintf(f, "%s%lld", d ? "," : "", (long long)o->output->shape[d]);
            fprintf(f, "]");
        }
        if (o->output && o->output->strides) {
            fprintf(f, " --out-strides [");
            for (int d = 0; d < o->output->rank; d++)
                fprintf(f, "%s%lld", d ? "," : "", (long long)o->output->strides[d]);
            fprintf(f, "]");
        }
        if (o->unroll_limit != 16 || o->unroll_factor != 4)
            fprintf(f, " (unroll_limit %d, unroll_factor %d: --unroll full|none|N)",
                    o->unroll_limit, o->unroll_factor);
        if (s->threads)
            fprintf(f, " --threads %d", s->thread_count);
        if (o->axis != BCG_AXIS_NONE)
            fprintf(f, " --axis %d", o->axis);
        if (o->stream_stores >= 0)
            fprintf(f, " --stream %s", o->stream_stores ? "on" : "off");
        fprintf(f, "\n");
    }
}

/* Counters, for the standalone driver's statistics. */
static struct {
    long inputs, compiled, compared, fallbacks, mismatches, memory_only, programs, fused;
    long several, several_fused; /* programs of two reductions, and fused */
    long aliased;                /* second runs with operands aliasing the output */
} stats;

/* The JIT's operand and output buffers end (or begin) at a page that
 * faults, as tests/unit/guarded.h's: a read or write past an operand's
 * elements crashes (ASan does not see libtcc's or vex.c's code, and malloc's
 * neighbours take a stray read silently).  One mapping a slot, kept. */
static struct {
    char *map;
    size_t size;
} guard_maps[MAX_INPUTS + 1];

static unsigned char *guarded_buffer(int slot, size_t bytes, bool at_end)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!guard_maps[slot].map || guard_maps[slot].size - 2 * page < bytes) {
        if (guard_maps[slot].map)
            munmap(guard_maps[slot].map, guard_maps[slot].size);
        size_t pages = (bytes + page - 1) / page + 2;
        guard_maps[slot].size = (pages < 16 ? 16 : pages) * page;
        char *map = mmap(NULL, guard_maps[slot].size, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        FUZZ_CHECK(map != MAP_FAILED);
        FUZZ_CHECK(mprotect(map, page, PROT_NONE) == 0);
        FUZZ_CHECK(mprotect(map + guard_maps[slot].size - page, page, PROT_NONE) == 0);
        guard_maps[slot].map = map;
    }
    char *map = guard_maps[slot].map;
    return (unsigned char *)(at_end ? map + guard_maps[slot].size - page - bytes : map + page);
}

/* Whether operand I may be given the output's own memory (bcg_run allows
 * an exact alias: the same element size and the same strides over the
 * result's shape, README "bcg_run checks its pointers"): its shape is the
 * kernel's and it walks the output's elements in step, the output being a
 * new C-contiguous array, a view (out_strides) or the in-place target. */
static bool may_alias_output(const setup *s, const bcg_kernel *k, int i)
{
    const bcg_operand *op = &s->ops[i];
    int rank = bcg_kernel_rank(k);
    const int64_t *shape = bcg_kernel_shape(k);
    int target = s->options.inplace;
    if (i == target || op->rank != rank || bcg_kernel_elements(k) == 0 ||
        bcg_dtype_size(op->dtype) != bcg_dtype_size(target >= 0 ? s->ops[target].dtype : bcg_kernel_dtype(k)) ||
        (s->options.output && s->options.output->reduce))
        return false;
    const int64_t *out_strides = target >= 0 ? s->ops[target].strides
                                 : s->options.output && s->options.output->strides ? s->out_strides : NULL;
    int64_t contiguous = 1;
    for (int d = rank - 1; d >= 0; d--) {
        if (op->shape[d] != shape[d])
            return false;
        int64_t mine = op->strides ? op->strides[d] : contiguous;
        int64_t theirs = out_strides ? out_strides[d] : contiguous;
        if (shape[d] > 1 && mine != theirs)
            return false;
        contiguous *= shape[d];
    }
    return true;
}

/* Which operands alias the output in a second run (from the bytes left
 * over, so older inputs keep their meaning): a + b with a and b the output
 * itself, in place or not, of other dtypes of the same size (f32 read as
 * i32), the result written over elements the kernel still reads unless
 * every form reads an element before it writes it.  0: none. */
static unsigned choose_aliases(choices *in, const setup *s, const bcg_kernel *k)
{
    unsigned mask = 0;
    for (int i = 0; i < s->count; i++)
        if (may_alias_output(s, k, i) && take(in, 3) != 2)
            mask |= 1u << i;
    return mask;
}

/* Runs kernel K and the reference evaluator on the same inputs; returns
 * true when they agree (or CHECK_VALUES is false: memory safety only). */
static bool run_and_compare(bcg_kernel *k, const compile *c, const setup *s, const char *text,
                            bool check_values, uint64_t ulp, uint64_t seed)
{
    operand_memory memory[MAX_INPUTS];
    const void *jit_in[MAX_INPUTS], *reference_in[MAX_INPUTS];
    int inplace = s->options.inplace;
    for (int i = 0; i < s->count; i++) {
        operand_memory *m = &memory[i];
        operand_span(&s->ops[i], &m->span, &m->offset);
        size_t bytes = (size_t)(m->span ? m->span : 1) * bcg_dtype_size(s->ops[i].dtype);
        m->jit = guarded_buffer(i, bytes, (seed >> i) & 1);
        m->reference = malloc(bytes);
        FUZZ_CHECK(m->jit && m->reference);
        fill(m->jit, s->ops[i].dtype, m->span, seed * 1000003u + (uint64_t)i, s->data_mode,
             s->odd_bools);
        memcpy(m->reference, m->jit, bytes);
        size_t at = (size_t)m->offset * bcg_dtype_size(s->ops[i].dtype);
        jit_in[i] = m->jit + at;
        reference_in[i] = (i == inplace || (s->alias_mask >> i & 1) ? m->reference : m->jit) + at;
    }
    int64_t elements = bcg_kernel_elements(k);
    bcg_dtype result_type = bcg_kernel_dtype(k);
    size_t out_bytes = (size_t)(elements ? elements : 1) * bcg_dtype_size(result_type);
    unsigned char *jit_out = NULL, *reference_out = NULL;
    int64_t out_span = elements, out_offset = 0;
    if (inplace < 0 && s->options.output && s->options.output->strides) {
        /* the kernel's result shape: the drawn one may differ (an operand
         * the expression does not read takes no part in the broadcast) */
        bcg_operand view = {"out", result_type, bcg_kernel_rank(k), bcg_kernel_shape(k),
                            s->out_strides};
        operand_span(&view, &out_span, &out_offset);
        out_bytes = (size_t)(out_span ? out_span : 1) * bcg_dtype_size(result_type);
    }
    if (inplace < 0) {
        jit_out = guarded_buffer(MAX_INPUTS, out_bytes, (seed >> MAX_INPUTS) & 1);
        reference_out = malloc(out_bytes);
        FUZZ_CHECK(jit_out && reference_out);
        memset(jit_out, 0xa5, out_bytes); /* a dropped store cannot match */
        memset(reference_out, 0xa5, out_bytes); /* nor a stray one outside the view */
    }
    size_t out_at = (size_t)out_offset * bcg_dtype_size(result_type);
    if (s->alias_mask) {
        /* the aliased operands read the output's memory (the target's in
         * place), holding the first one's data; the reference reads copies
         * of it.  Same layout and element size: the same span and offset. */
        int first = __builtin_ctz(s->alias_mask);
        unsigned char *shared = inplace >= 0 ? memory[inplace].jit : jit_out;
        size_t bytes = (size_t)memory[first].span * bcg_dtype_size(s->ops[first].dtype);
        if (inplace < 0) {
            memcpy(shared, memory[first].jit, bytes);
            memcpy(reference_out, shared, bytes); /* (gaps of a view: the same bytes) */
        }
        for (int i = 0; i < s->count; i++)
            if (s->alias_mask >> i & 1) {
                memcpy(memory[i].reference, shared, bytes);
                jit_in[i] = shared + (size_t)memory[i].offset * bcg_dtype_size(s->ops[i].dtype);
            }
    }
    /* the inputs as given, before an in-place run writes one */
    operand_memory shown[MAX_INPUTS];
    for (int i = 0; i < s->count; i++) {
        shown[i] = memory[i];
        shown[i].jit = i == inplace || (s->alias_mask >> i & 1) ? memory[i].reference : memory[i].jit;
    }
    bool same = true;
    bcg_error err;
    if (s->threads)
        FUZZ_CHECK(bcg_run_threads(k, jit_out ? jit_out + out_at : NULL, jit_in,
                                   s->thread_count, &err) == BCG_OK);
    else
        FUZZ_CHECK(bcg_run(k, jit_out ? jit_out + out_at : NULL, jit_in, &err) == BCG_OK);
    if (check_values) {
        unsigned char *inplace_copy = NULL;
        if (inplace >= 0) { /* report the inputs as they were */
            size_t bytes = (size_t)(memory[inplace].span ? memory[inplace].span : 1) *
                           bcg_dtype_size(s->ops[inplace].dtype);
            inplace_copy = malloc(bytes);
            FUZZ_CHECK(inplace_copy);
            memcpy(inplace_copy, memory[inplace].reference, bytes);
            shown[inplace].jit = inplace_copy;
        }
        bcg_error reference_err;
        error_clear(&reference_err);
        void *target = inplace >= 0 ? (void *)reference_in[inplace] : reference_out + out_at;
        FUZZ_CHECK(eval_run(c, target, reference_in, &reference_err) == BCG_OK);
        const unsigned char *x = jit_out, *y = reference_out;
        int64_t count = out_span; /* the view's whole span: outside it untouched too */
        bcg_dtype t = result_type;
        if (inplace >= 0) { /* the whole buffer: outside the view must be untouched too */
            x = memory[inplace].jit;
            y = memory[inplace].reference;
            count = memory[inplace].span;
            t = s->ops[inplace].dtype;
        }
        size_t size = bcg_dtype_size(t);
        for (int64_t e = 0; e < count && same; e++)
            same = !element_differs(x + e * size, y + e * size, t, ulp);
        if (!same)
            report(text, s, shown, x, y, count, t, ulp,
                   s->options.microkernel_run ? "microkernels allowed" : "no microkernels");
        stats.compared++;
        free(inplace_copy);
    } else {
        stats.memory_only++;
    }
    for (int i = 0; i < s->count; i++)
        free(memory[i].reference); /* (the jit buffers are guard_maps') */
    free(reference_out);
    return same;
}

/* ---- programs of several outputs (issue 12 part 3) ------------------------------------
 *
 * From the bytes left after the single kernel (exhausted inputs read 0, so
 * older inputs mean what they meant): a program "x0 = TEXT; x1 = SECOND;
 * x2 = x0 * 1 ..." with a second generated expression and statements that
 * use x0 and x1 by name, x0 keeping the drawn output description.  It runs
 * through bcg_compile_program and bcg_run_outputs (1 or 3 threads, no
 * microkernels, so every value is bit for bit), and each output must equal
 * the reference evaluator's result of its statement's expanded expression. */
static bool check_program(choices *in, generator *g, const char *text, const setup *s,
                          uint64_t seed)
{
    char *first = malloc(strlen(text) + 1);
    FUZZ_CHECK(first != NULL);
    strcpy(first, text);
    g->length = 0;
    g->text[0] = 0;
    g->pool_count = g->pool_next = 0;
    g->overflow = false;
    expression(g, 1 + (int)take(in, 3), NULL);
    if (g->overflow) {
        free(first);
        return true;
    }
    bool reduced = s->options.output && s->options.output->reduce;
    int uses = (int)take(in, 3); /* statements using x0 and x1 by name */
    static const char *const users[] = {"x2 = x1", "x2 = x1 == x1",
                                        "x2 = where(x1 == x1, x1, x1)"};
    static const char *const users0[] = {"x3 = x0", "x3 = -x0 + x0"};
    size_t cap = strlen(first) + strlen(g->text) + 128;
    char *program_text = malloc(cap);
    FUZZ_CHECK(program_text != NULL);
    snprintf(program_text, cap, "x0 = %s; x1 = %s%s%s%s%s", first, g->text, uses ? "; " : "",
             uses ? users[uses - 1] : "", !reduced && uses > 1 ? "; " : "",
             !reduced && uses > 1 ? users0[uses - 2] : "");
    bcg_options o = s->options;
    o.output = NULL;
    o.outputs = s->options.output;
    o.output_count = s->options.output ? 1 : 0;
    o.microkernel_run = 0;
    /* a second reduction to x0's target (the last statement, which no
     * other uses), of a drawn op: several reductions in one fused kernel */
    bcg_output two[2];
    const char *two_names[2] = {"x0", uses ? "x2" : "x1"};
    bool several = reduced && take(in, 2) != 0;
    if (several) {
        two[0] = *s->options.output;
        two[1] = *s->options.output;
        two[1].reduce = 1 + (int)take(in, 7);
        two[1].dtype = BCG_DTYPE_AUTO;
        two[1].strides = NULL;
        o.outputs = two;
        o.output_count = 2;
        o.output_names = two_names;
    }
    bcg_context *ctx = bcg_context_new();
    FUZZ_CHECK(ctx != NULL);
    bcg_program *prog = NULL;
    bcg_error err;
    bool same = true;
    if (bcg_compile_program(ctx, program_text, s->ops, s->count, &o, &prog, &err) != BCG_OK) {
        FUZZ_CHECK(prog == NULL && err.message[0]);
        if (getenv("BCG_DIFF_VERBOSE"))
            fprintf(stderr, "program rejected: %s\n  %s\n", program_text, err.message);
        goto done;
    }
    stats.programs++;
    stats.fused += bcg_program_fused(prog) != NULL; /* one kernel for every output */
    stats.several += several;
    stats.several_fused += several && bcg_program_fused(prog) != NULL;
    arena *a = arena_new();
    program parsed;
    FUZZ_CHECK(a && program_resolve(a, program_text, s->ops, s->count, &o, &parsed, &err) == BCG_OK);
    operand_memory memory[MAX_INPUTS];
    const void *inputs[MAX_INPUTS];
    for (int i = 0; i < s->count; i++) {
        operand_memory *m = &memory[i];
        operand_span(&s->ops[i], &m->span, &m->offset);
        size_t bytes = (size_t)(m->span ? m->span : 1) * bcg_dtype_size(s->ops[i].dtype);
        m->jit = malloc(bytes);
        m->reference = NULL;
        FUZZ_CHECK(m->jit != NULL);
        fill(m->jit, s->ops[i].dtype, m->span, seed * 1000003u + (uint64_t)i, s->data_mode,
             s->odd_bools);
        inputs[i] = m->jit + (size_t)m->offset * bcg_dtype_size(s->ops[i].dtype);
    }
    int count = bcg_program_output_count(prog);
    void *outs[8];
    unsigned char *buffers[8], *wants[8];
    int64_t spans[8];
    uint64_t ulps[8]; /* a vectorised function at the root: its bound; below it: not compared */
    bool compared[8];
    FUZZ_CHECK(count <= 8 && count == parsed.count);
    for (int j = 0; j < count; j++) {
        const bcg_kernel *k = bcg_program_kernel(prog, j);
        int64_t span = bcg_kernel_elements(k), offset = 0;
        if (j == 0 && s->options.output && s->options.output->strides) {
            bcg_operand view = {"out", bcg_kernel_dtype(k), bcg_kernel_rank(k),
                                bcg_kernel_shape(k), s->out_strides};
            operand_span(&view, &span, &offset);
        }
        size_t bytes = (size_t)(span ? span : 1) * bcg_dtype_size(bcg_kernel_dtype(k));
        buffers[j] = malloc(bytes);
        wants[j] = malloc(bytes);
        FUZZ_CHECK(buffers[j] && wants[j]);
        memset(buffers[j], 0xa5, bytes);
        memset(wants[j], 0xa5, bytes);
        spans[j] = span;
        outs[j] = buffers[j] + (size_t)offset * bcg_dtype_size(bcg_kernel_dtype(k));
        compile *c = arena_alloc(a, sizeof *c);
        FUZZ_CHECK(c != NULL);
        c->arena = a;
        c->err = &err;
        FUZZ_CHECK(compile_front(c, parsed.statements[j].expanded, s->ops, s->count,
                                 &parsed.statements[j].options) == BCG_OK);
        FUZZ_CHECK(eval_run(c, wants[j] + (size_t)offset * bcg_dtype_size(bcg_kernel_dtype(k)),
                            inputs, &err) == BCG_OK);
        bool reduced_j = parsed.statements[j].options.output &&
                         parsed.statements[j].options.output->reduce;
        ulps[j] = is_transcendental_f32(c->root) ? approximate_ulp(c->root) : 0;
        compared[j] = !transcendental_below(c->root) && !(reduced_j && ulps[j]);
    }
    FUZZ_CHECK(bcg_run_outputs(prog, outs, inputs, s->threads ? 3 : 1, &err) == BCG_OK);
    for (int j = 0; j < count && same; j++) {
        bcg_dtype t = bcg_kernel_dtype(bcg_program_kernel(prog, j));
        size_t size = bcg_dtype_size(t);
        for (int64_t e = 0; e < spans[j] && same && compared[j]; e++)
            same = !element_differs(buffers[j] + e * size, wants[j] + e * size, t, ulps[j]);
        if (!same)
            fprintf(stderr, "program output %s differs from the reference evaluator at "
                    "element %lld: %s\n", bcg_program_output_name(prog, j),
                    (long long)(spans[j] ? spans[j] : 0), program_text);
    }
    for (int j = 0; j < count; j++) {
        free(buffers[j]);
        free(wants[j]);
    }
    for (int i = 0; i < s->count; i++)
        free(memory[i].jit);
    arena_free(a);
    bcg_program_free(prog);
done:
    bcg_context_free(ctx);
    free(program_text);
    free(first);
    return same;
}

/* ---- one input ------------------------------------------------------------------ */

/* Generates, compiles, runs and compares the kernel of DATA.  Returns false
 * on a mismatch (after printing it); failures of any other promise trap. */
static bool check_input(const uint8_t *data, size_t size)
{
    stats.inputs++;
    const char *snan = getenv("BCG_DIFF_SNAN");
    signaling_nans = !(snan && snan[0] == '0');
    wide = size >= 4 && memcmp(data, WIDE_MAGIC, 4) == 0;
    const char *text_big = getenv("BCG_DIFF_BIG");
    big = text_big && text_big[0] == '1';
    choices in = {data, size, wide ? 4 : 0};
    setup s;
    memset(&s, 0, sizeof s);
    choose_setup(&in, &s);
    generator *g = calloc(1, sizeof *g);
    FUZZ_CHECK(g != NULL);
    g->in = &in;
    g->operand_count = s.count;
    for (int i = 0; i < s.count; i++)
        g->dtypes[i] = s.ops[i].dtype;
    ty t = expression(g, 1 + (int)take(&in, MAX_DEPTH), NULL);
    /* the root wrapped in one of the table's functions, from the bytes left
     * over, so older inputs keep their expression: every function row of
     * gen/ops.h of one argument (f(ROOT)) or two (f(ROOT, (ROOT) * 0.5):
     * logaddexp, arctan2, logical_xor ...) is reached this way */
    if (take(&in, 4) == 3) {
        int rows[OP_COUNT], count = 0;
        for (int op = 0; op < OP_COUNT; op++) {
            const op_info *row = &op_table[op];
            if (row->call && (row->arity == 1 ||
                              (row->arity == 2 && strcmp(row->call, row->symbol) == 0)))
                rows[count++] = op;
        }
        int row = rows[take(&in, (unsigned)count)];
        const op_info *info = &op_table[row];
        size_t root_length = g->length;
        /* (ROOT) * 0.5: a float partner that differs from the root */
        ty half = is_float(t) ? t : t.weak ? WEAK_FLOAT : strong(BCG_F64);
        ty both = promote(t, half);
        char prefix[32];
        snprintf(prefix, sizeof prefix, "%s(", info->call);
        bool saturating = info->rule == RULE_SATURATE || info->rule == RULE_FIXED;
        if (saturating) {
            /* add_sat(ROOT, (ROOT) * 3), sub_sat ...: integers as they are,
             * others through i16; mul_q15(i16(ROOT), i16((ROOT) * 3)) */
            bool integer = !t.weak && !is_float(t) && !is_bool(t);
            bcg_dtype to = info->rule == RULE_FIXED ? op_fixed_dtype((expr_op)row) : BCG_I16;
            const char *cast = info->rule == RULE_FIXED || !integer ? CAST_NAMES[0][to] : "";
            snprintf(prefix, sizeof prefix, "%s(%s(", info->call, cast);
            wrap(g, 0, prefix);
            if (!g->overflow) {
                put(g, ", ");
                put(g, cast);
                put(g, "((");
                put_copy(g, strlen(prefix), root_length);
                put(g, ") * 3))");
            }
            t = strong(cast[0] ? to : t.dtype);
        } else if (!(row == OP_SIGN && is_bool(t))) { /* np.sign has no bool loop */
            wrap(g, 0, prefix);
            if (info->arity == 2 && !g->overflow) {
                g->length--; /* the ')' of wrap */
                put(g, ", (");
                put_copy(g, strlen(prefix), root_length);
                put(g, ") * 0.5)");
            }
            switch (info->rule) {
            case RULE_FLOAT: t = float_for(info->arity == 2 ? both : t); break;
            case RULE_FLOAT_TEST: case RULE_NOT: t = strong(BCG_BOOL); break;
            case RULE_LOGICAL: t = strong(BCG_BOOL); break;
            case RULE_INTEGRAL: t = promote_i8(t, t); break;
            case RULE_ROUND: t = is_bool(t) || is_float(t) ? float_for(t) : t; break;
            case RULE_PROMOTE: t = both; break;
            default: break; /* RULE_SAME: abs, sign */
            }
        }
    }
    choose_output(&in, &s);
    int target = s.options.inplace;
    /* an in-place result keeps the target's dtype: cast to it, or (a wide
     * input, half the time) leave the same-kind cast on store to the compile */
    if (target >= 0 && (t.dtype != s.ops[target].dtype || t.weak) && !(wide && take(&in, 2))) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "%s(", CAST_NAMES[0][s.ops[target].dtype]);
        wrap(g, 0, prefix);
    }
    for (int i = 0; i < s.count; i++) { /* keep spans small, as the result is */
        int64_t span, offset;
        operand_span(&s.ops[i], &span, &offset);
        if (span > (s.max_elements == MAX_ELEMENTS ? 4 : 2) * s.max_elements)
            g->overflow = true;
    }
    if (g->overflow) {
        free(g);
        return true;
    }
    const char *text = g->text;
    uint64_t seed = 14695981039346656037ull; /* FNV-1a of the input: the data's seed */
    for (size_t i = 0; i < size; i++)
        seed = (seed ^ data[i]) * 1099511628211ull;
    /* wide: half the time (from the data's seed, no choice read) the vector
     * code a CPU without AVX-512 gets (the ymm bodies; vex.h's test
     * switches), which an AVX-512 machine otherwise never runs (the flat
     * form's hoisted values read past an operand there only:
     * test_flat_hoisted_short_bodies) */
    bool ymm = wide && (seed >> 17 & 1);
    vex_zmm = ymm ? 0 : -1;
    vex_wide = ymm ? 0 : -1;

    bool same = true;
    bcg_context *ctx = bcg_context_new();
    FUZZ_CHECK(ctx != NULL);
    bcg_kernel *k = NULL;
    bcg_error err;
    bcg_options o = s.options;
    bcg_status status = bcg_compile(ctx, text, s.ops, s.count, &o, &k, &err);
    if (status != BCG_OK) {
        FUZZ_CHECK(k == NULL && err.status == status && err.message[0]);
        if (getenv("BCG_DIFF_VERBOSE"))
            fprintf(stderr, "rejected: %s\n  %s\n", text, err.message);
        goto done;
    }
    stats.compiled++;
    if (bcg_kernel_note(k)[0])
        stats.fallbacks++;
    if (getenv("BCG_DIFF_VERBOSE")) {
        fprintf(stderr, "kernel: %s", text);
        for (int i = 0; i < s.count; i++) {
            fprintf(stderr, " %s=%s[", s.ops[i].name, CAST_NAMES[0][s.ops[i].dtype]);
            for (int d = 0; d < s.ops[i].rank; d++)
                fprintf(stderr, "%s%lld", d ? "," : "", (long long)s.ops[i].shape[d]);
            fprintf(stderr, "]");
        }
        if (o.output && o.output->reduce) {
            fprintf(stderr, " reduce %d to [", o.output->reduce);
            for (int d = 0; d < o.output->rank; d++)
                fprintf(stderr, "%s%lld", d ? "," : "", (long long)o.output->shape[d]);
            fprintf(stderr, "]");
        }
        if (o.output && o.output->strides) {
            fprintf(stderr, " out-strides [");
            for (int d = 0; d < o.output->rank; d++)
                fprintf(stderr, "%s%lld", d ? "," : "", (long long)o.output->strides[d]);
            fprintf(stderr, "] over [");
            for (int d = 0; d < o.output->rank; d++)
                fprintf(stderr, "%s%lld", d ? "," : "", (long long)s.out_shape[d]);
            fprintf(stderr, "]");
        }
        if (o.axis != BCG_AXIS_NONE)
            fprintf(stderr, " axis %d", o.axis);
        if (o.inplace >= 0)
            fprintf(stderr, " inplace %s", s.ops[o.inplace].name);
        fprintf(stderr, "\n");
    }

    arena *a = arena_new();
    compile *c = a ? arena_alloc(a, sizeof *c) : NULL;
    FUZZ_CHECK(c != NULL);
    bcg_error reference_err;
    error_clear(&reference_err);
    c->arena = a;
    c->err = &reference_err;
    c->function_name = "bcg_kernel";
    FUZZ_CHECK(compile_front(c, text, s.ops, s.count, &o) == BCG_OK);
    bool root_approximate = o.microkernel_run > 0 && is_transcendental_f32(c->root);
    /* A reduced output sums the approximations: their ulps add up and a sum
     * that cancels magnifies them (cos of an i16 summed over 3 rows came
     * 6 ulp from the reference), so it is compared through the plain kernel. */
    bool reduced = o.output && o.output->reduce;
    bool deep = o.microkernel_run > 0 &&
                (transcendental_below(c->root) ||
                 (root_approximate && (reduced || (o.inplace >= 0 &&
                                                   s.ops[o.inplace].dtype != c->root->dtype))));
    int microkernel_run = o.microkernel_run;
    same = run_and_compare(k, c, &s, text, !deep, root_approximate ? approximate_ulp(c->root) : 0, seed);
    if (deep && same) {
        o.microkernel_run = 0;
        bcg_kernel *plain = NULL;
        FUZZ_CHECK(bcg_compile(ctx, text, s.ops, s.count, &o, &plain, &err) == BCG_OK);
        s.options.microkernel_run = 0;
        same = run_and_compare(plain, c, &s, text, true, 0, seed);
    }
    /* a program of several outputs from the bytes left (0 when none are);
     * it writes its own text into g's: the kernel's is kept for the run below */
    char *kernel_text = strdup(text);
    FUZZ_CHECK(kernel_text != NULL);
    if (same && o.inplace < 0 && take(&in, 3) != 0)
        same = check_program(&in, g, text, &s, seed);
    text = kernel_text;
    /* then the same kernel again with operands that are the output's own
     * memory (choose_aliases), compared as the first run was */
    if (same && take(&in, 2) == 1 && (s.alias_mask = choose_aliases(&in, &s, k)) != 0) {
        stats.aliased++;
        s.options.microkernel_run = o.microkernel_run = microkernel_run;
        same = run_and_compare(k, c, &s, text, !deep, root_approximate ? approximate_ulp(c->root) : 0,
                               seed);
        if (deep && same) {
            o.microkernel_run = 0;
            bcg_kernel *plain = NULL;
            FUZZ_CHECK(bcg_compile(ctx, text, s.ops, s.count, &o, &plain, &err) == BCG_OK);
            s.options.microkernel_run = 0;
            same = run_and_compare(plain, c, &s, text, true, 0, seed);
        }
    }
    arena_free(a);
    free(kernel_text);
    if (!same)
        stats.mismatches++;
done:
    bcg_context_free(ctx);
    free(g);
    return same;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    FUZZ_CHECK(check_input(data, size)); /* a wrong result: keep the input */
    return 0;
}

#ifdef FUZZ_DIFF_MAIN
/* ---- the standalone driver (make fuzz-diff) ---------------------------------------- */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char USAGE[] =
    "usage: diff_jit [-seed=N] [-runs=N] [-seconds=T] [-keep-going] [-crashes=DIR] [-quiet]\n"
    "       diff_jit [-minimize] FILE...\n"
    "Random inputs from the seed (each a choice stream for the generator of\n"
    "fuzz_jit_diff.c) until -runs kernels or -seconds pass; a mismatch is saved in\n"
    "DIR (default .) as diff-SEED-N and ends the run unless -keep-going.  With\n"
    "FILEs: replays them (exit 1 if any mismatches); -minimize also writes\n"
    "FILE.min, the shortest and simplest input found that still mismatches.\n";

static const uint8_t *current_input;
static size_t current_size;
static char crash_path[4096];

/* A crash inside the JIT or a trap: keep the input that did it. */
static void on_crash(int sig)
{
    int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        ssize_t ignored = write(fd, current_input, current_size);
        (void)ignored;
        close(fd);
    }
    static const char message[] = "diff_jit: crashed; the input is in the crash file\n";
    ssize_t ignored = write(2, message, sizeof message - 1);
    (void)ignored;
    signal(sig, SIG_DFL);
    raise(sig);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *data = malloc(65536);
    *size = data ? fread(data, 1, 65536, f) : 0;
    fclose(f);
    return data;
}

static bool write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    fwrite(data, 1, size, f);
    return fclose(f) == 0;
}

/* Without printing: does DATA still mismatch? */
static bool mismatches_quietly(const uint8_t *data, size_t size)
{
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    bool bad = !check_input(data, size);
    dup2(saved, 2);
    close(saved);
    close(null);
    return bad;
}

/* Shortens DATA (cutting chunks) and simplifies it (bytes to 0, the first
 * alternative of each choice; bytes halved) while it still mismatches. */
static size_t minimize(uint8_t *data, size_t size)
{
    for (bool progress = true; progress;) {
        progress = false;
        for (size_t chunk = size / 2; chunk >= 1; chunk /= 2)
            for (size_t at = 0; at + chunk <= size;) {
                uint8_t saved[4096];
                memcpy(saved, data + at, chunk);
                memmove(data + at, data + at + chunk, size - at - chunk);
                if (mismatches_quietly(data, size - chunk)) {
                    size -= chunk;
                    progress = true;
                } else {
                    memmove(data + at + chunk, data + at, size - at - chunk);
                    memcpy(data + at, saved, chunk);
                    at += chunk;
                }
            }
        for (size_t at = 0; at < size; at++)
            while (data[at]) {
                uint8_t saved = data[at];
                data[at] = saved / 2;
                if (!mismatches_quietly(data, size)) {
                    data[at] = 0;
                    if (!mismatches_quietly(data, size)) {
                        data[at] = saved;
                        break;
                    }
                }
                progress = true;
            }
        while (size > 0 && data[size - 1] == 0 && mismatches_quietly(data, size - 1))
            size--; /* trailing zeros are what an exhausted input reads */
    }
    return size;
}

static void print_stats(const char *when, double elapsed)
{
    fprintf(stderr,
            "diff_jit %s: %.0f s, %ld inputs, %ld compiled (%ld on the reference evaluator), "
            "%ld compared, %ld memory-only, %ld programs of several outputs (%ld fused; "
            "%ld of two reductions, %ld fused), %ld with operands aliasing the output, %ld mismatches\n",
            when, elapsed, stats.inputs, stats.compiled, stats.fallbacks, stats.compared,
            stats.memory_only, stats.programs, stats.fused, stats.several, stats.several_fused,
            stats.aliased, stats.mismatches);
}

int main(int argc, char **argv)
{
    uint64_t seed = 1;
    long runs = -1;
    double seconds = -1;
    bool keep_going = false, do_minimize = false, quiet = false;
    const char *crashes = ".";
    int files = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "-seed=", 6) == 0)
            seed = strtoull(arg + 6, NULL, 10);
        else if (strncmp(arg, "-runs=", 6) == 0)
            runs = strtol(arg + 6, NULL, 10);
        else if (strncmp(arg, "-seconds=", 9) == 0)
            seconds = strtod(arg + 9, NULL);
        else if (strcmp(arg, "-keep-going") == 0)
            keep_going = true;
        else if (strcmp(arg, "-minimize") == 0)
            do_minimize = true;
        else if (strcmp(arg, "-quiet") == 0)
            quiet = true;
        else if (strncmp(arg, "-crashes=", 9) == 0)
            crashes = arg + 9;
        else if (arg[0] == '-') {
            fputs(USAGE, stderr);
            return 2;
        } else
            files++;
    }
    snprintf(crash_path, sizeof crash_path, "%s/diff-crash-%llu", crashes, (unsigned long long)seed);
    signal(SIGILL, on_crash);
    signal(SIGSEGV, on_crash);
    signal(SIGBUS, on_crash);
    signal(SIGFPE, on_crash);
    signal(SIGABRT, on_crash);

    if (files) {
        int bad = 0;
        for (int i = 1; i < argc; i++) {
            if (argv[i][0] == '-')
                continue;
            size_t size;
            uint8_t *data = read_file(argv[i], &size);
            if (!data) {
                fprintf(stderr, "diff_jit: cannot read %s: %s\n", argv[i], strerror(errno));
                return 2;
            }
            current_input = data;
            current_size = size;
            if (!check_input(data, size)) {
                bad++;
                if (do_minimize) {
                    size = minimize(data, size);
                    char path[4096];
                    snprintf(path, sizeof path, "%s.min", argv[i]);
                    write_file(path, data, size);
                    fprintf(stderr, "diff_jit: %s minimised to %zu bytes in %s:\n", argv[i],
                            size, path);
                    check_input(data, size);
                }
            }
            free(data);
        }
        fprintf(stderr, "diff_jit: %d of %d inputs mismatch\n", bad, files);
        return bad ? 1 : 0;
    }

    if (runs < 0 && seconds < 0)
        runs = 10000;
    double start = now(), last = start;
    uint64_t state = mix(seed);
    long first = -1;
    double first_time = 0;
    static uint8_t data[4096];
    for (long n = 0; runs < 0 || n < runs; n++) {
        double t = now();
        if (seconds >= 0 && t - start >= seconds)
            break;
        if (!quiet && t - last >= 30) {
            print_stats("progress", t - start);
            last = t;
        }
        state = mix(state);
        size_t size = 24 + state % 400;
        for (size_t i = 0; i < size; i += 8) {
            uint64_t r = mix(state + i);
            memcpy(data + i, &r, size - i < 8 ? size - i : 8);
        }
        if (n % 2) /* every other input from the wide generator */
            memcpy(data, WIDE_MAGIC, 4);
        current_input = data;
        current_size = size;
        if (!check_input(data, size)) {
            char path[4096];
            snprintf(path, sizeof path, "%s/diff-%llu-%ld", crashes, (unsigned long long)seed, n);
            write_file(path, data, size);
            fprintf(stderr, "diff_jit: mismatch at kernel %ld (input %ld) after %.1f s, saved as %s\n",
                    stats.compiled, n, now() - start, path);
            if (first < 0) {
                first = n;
                first_time = now() - start;
            }
            if (!keep_going)
                break;
        }
    }
    print_stats("done", now() - start);
    if (first >= 0)
        fprintf(stderr, "diff_jit: first mismatch at input %ld after %.1f s\n", first, first_time);
    return stats.mismatches ? 1 : 0;
}
#endif
