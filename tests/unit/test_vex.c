/* test_vex.c - the fused vector code of tiles (gen/vex.c).
 *
 * test_random_trees: seeded random trees of the operations vex.c writes
 * (and integer operands e of i8, u8, i16, u16 or i32, converted)
 * (+ - * / unary -, abs, sqrt, square, reciprocal, minimum, maximum,
 * comparisons, !, &&, ||, where, literals) in f32 and f64, over operands
 * laid out contiguously, broadcast along the run or per row, reversed or
 * strided (gathered), and in place, with run lengths around the vector
 * width and the tile, on data full of NaN, signed zeros, infinities and
 * subnormals.  Each case is compiled twice, with the fused code and with
 * bcg_options.disable_vector_code (the microkernel calls), and both
 * outputs are compared bit for bit with the reference evaluator.  The test
 * counts the kernels whose source calls bcg_vex and fails when too few
 * do, so it cannot pass without the fused path.
 *
 * test_disassembly: the machine code of one function, disassembled by
 * objdump, against tests/unit/vex_disassembly.txt (BCGEN_UPDATE_VEX=1
 * rewrites it), and the encoder's instructions checked by mnemonic. */
/* internal.h comes before cmocka.h: cmocka defines a fail() macro. */
#include "internal.h"
#include "kir.h"
#include "vex.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compare.h"
#include "guarded.h"

static uint64_t random_state = 0x9e3779b97f4a7c15ull;

static uint64_t next(void) { return xorshift64(&random_state); }
static int below(int n) { return (int)(next() % (uint64_t)n); }

/* ---- random trees ---- */

typedef struct text {
    char s[1024];
    size_t n;
} text;

static void put(text *t, const char *s)
{
    size_t len = strlen(s);
    if (t->n + len < sizeof t->s) {
        memcpy(t->s + t->n, s, len + 1);
        t->n += len;
    }
}

static const char *const literals[] = {"0.5", "-2", "3", "1e-5", "0", "-0.0", "2.5e3", "7"};

static void value_tree(text *t, int depth);

/* the trees of this case read e, an integer operand, too */
static bool mixed;

/* test_exp_trees: the trees draw exp too (of arguments scaled into its
 * hard range at times), and check_case compares the fused code with the
 * microkernels bit for bit, with eval.c within the ulp bound at the root */
static bool with_exp;

/* exp(x), exp(x * 40) (overflow, subnormal results), log(x) or log(abs(x)) */
static void exp_call(text *t, void (*tree)(text *, int), int depth)
{
    static const char *const open[] = {"exp(", "exp((", "log(", "log(abs("};
    static const char *const close[] = {")", ") * 40)", ")", "))"};
    int pick = below(4);
    put(t, open[pick]);
    tree(t, depth - 1);
    put(t, close[pick]);
}

/* A condition: a comparison, a bool operand, or logic of them. */
static void condition_tree(text *t, int depth)
{
    static const char *const compares[] = {" < ", " <= ", " > ", " >= ", " == ", " != "};
    int pick = depth <= 0 ? below(2) : below(6);
    if (pick == 0) {
        put(t, "d");
        return;
    }
    if (pick <= 2) {
        put(t, "(");
        value_tree(t, depth - 1);
        put(t, compares[below(6)]);
        value_tree(t, depth - 1);
        put(t, ")");
        return;
    }
    if (pick == 3) {
        put(t, "!(");
        condition_tree(t, depth - 1);
        put(t, ")");
        return;
    }
    if (pick == 4) { /* a float as a condition: != 0 */
        put(t, "logical_xor(");
        condition_tree(t, depth - 1);
        put(t, ", ");
        value_tree(t, depth - 1);
        put(t, ")");
        return;
    }
    put(t, "(");
    condition_tree(t, depth - 1);
    put(t, below(2) ? " && " : " || ");
    condition_tree(t, depth - 1);
    put(t, ")");
}

static void value_tree(text *t, int depth)
{
    static const char *const leaves[] = {"a", "b", "c", "a", "b", "e", "f32(e)", "f64(e)"};
    static const char *const binary[] = {" + ", " - ", " * ", " / "};
    static const char *const unary[] = {"-", "abs", "sqrt", "square", "reciprocal"};
    int pick = depth <= 0 ? below(2) : t->n == 0 ? 2 + below(8) : below(10); /* (the root: an operation) */
    if (pick == 0) {
        put(t, leaves[below(mixed ? 8 : 5)]);
        return;
    }
    if (pick == 1) {
        put(t, below(4) ? leaves[below(mixed ? 8 : 5)] : literals[below(8)]);
        return;
    }
    if (pick <= 4) {
        put(t, "(");
        value_tree(t, depth - 1);
        put(t, binary[below(4)]);
        value_tree(t, depth - 1);
        put(t, ")");
        return;
    }
    if (with_exp && pick <= 6 && below(2)) {
        exp_call(t, value_tree, depth);
        return;
    }
    if (pick <= 6) {
        put(t, unary[below(5)]);
        put(t, "(");
        value_tree(t, depth - 1);
        put(t, ")");
        return;
    }
    if (pick <= 8) {
        put(t, below(2) ? "minimum(" : "maximum(");
        value_tree(t, depth - 1);
        put(t, ", ");
        value_tree(t, depth - 1);
        put(t, ")");
        return;
    }
    if (below(2)) { /* where(x > y, x, z): x computed once, kept (vex.c's shared) */
        static const char *const compares[] = {" < ", " <= ", " > ", " >= ", " == ", " != "};
        text x = {{0}, 0}; /* (empty: an operation, as a root) */
        value_tree(&x, depth - 1);
        put(t, "where((");
        put(t, x.s);
        put(t, compares[below(6)]);
        value_tree(t, depth - 1);
        put(t, "), ");
        put(t, x.s);
        put(t, ", ");
        value_tree(t, depth - 1);
        put(t, ")");
        return;
    }
    put(t, "where(");
    condition_tree(t, depth - 1);
    put(t, ", ");
    value_tree(t, depth - 1);
    put(t, ", ");
    value_tree(t, depth - 1);
    put(t, ")");
}

/* ---- random integer and mixed trees ---- */

/* The operands' dtypes of a typed case (test_typed_trees): a, b, c, d, e;
 * BCG_BOOL for a: test_random_trees' own. */
static bcg_dtype typed_dtypes[5];

static const bcg_dtype all_dtypes[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                       BCG_I64, BCG_U64, BCG_F32, BCG_F64};

static void typed_tree(text *t, int depth);

/* typed_tree's leaves: these 6 names (test_where_branch: one value along
 * the run only) */
static const char *const all_leaves[] = {"a", "b", "c", "e", "a", "b"};
static const char *const *tree_leaves = all_leaves;

/* test_nested_shared: a bool subtree, a value that holds it and a
 * condition that holds both, which typed_tree and typed_condition put at
 * some of their leaves (NULL: none) */
static const char *nested_value, *nested_conditions[2];

/* A numeric cast's name (no bool: a cast of a bool to a number). */
static const char *number_cast(void)
{
    static const char *const casts[] = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64",
                                        "f32", "f64"};
    return casts[below(10)];
}

/* One of the nested snippets at a leaf of a value: the value, or a
 * condition cast to a number. */
static void put_nested(text *t)
{
    int pick = below(4);
    if (pick == 0 || pick == 3) {
        put(t, nested_value);
    } else {
        put(t, number_cast());
        put(t, "(");
        put(t, nested_conditions[pick - 1]);
        put(t, ")");
    }
}

static void typed_condition(text *t, int depth)
{
    static const char *const compares[] = {" < ", " <= ", " > ", " >= ", " == ", " != "};
    int pick = depth <= 0 ? 0 : below(6);
    if (pick == 0 && nested_value && below(3)) {
        put(t, nested_conditions[below(2)]);
    } else if (pick == 0 && tree_leaves != all_leaves) { /* (test_where_branch) */
        put(t, below(2) ? "bool(b)" : "bool(e)");
    } else if (pick == 0) {
        put(t, below(3) ? "d" : "bool(a)");
    } else if (pick <= 2) {
        put(t, "(");
        typed_tree(t, depth - 1);
        put(t, compares[below(6)]);
        typed_tree(t, depth - 1);
        put(t, ")");
    } else if (pick == 3) {
        put(t, "!(");
        typed_condition(t, depth - 1);
        put(t, ")");
    } else {
        static const char *const logic[] = {" && ", " || "};
        bool call = below(3) == 0;
        put(t, call ? "logical_xor(" : "(");
        typed_condition(t, depth - 1);
        put(t, call ? ", " : logic[below(2)]);
        if (below(2))
            typed_condition(t, depth - 1);
        else
            typed_tree(t, depth - 1); /* a number as a condition: != 0 */
        put(t, ")");
    }
}

static void typed_tree(text *t, int depth)
{
    const char *const *leaves = tree_leaves;
    static const char *const numbers[] = {"0", "1", "-1", "5", "7", "2", "127", "-128", "255",
                                          "300", "65535", "-32768", "2147483647", "0.5", "-2.5",
                                          "3e9", "1e-3", "100000"};
    static const char *const binary[] = {" + ", " - ", " * ", " & ", " | ", " ^ ", " + ", " - "};
    static const char *const unary[] = {"-", "abs", "~", "square", "+"};
    static const char *const casts[] = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64",
                                        "f32", "f64", "bool"};
    static const char *const counts[] = {"0", "1", "3", "7", "8", "15", "31", "33", "63", "-1"};
    int pick = depth <= 0 ? below(2) : t->n == 0 ? 2 + below(10) : below(12);
    if (pick <= 1 && nested_value && below(3) < 2) {
        put_nested(t);
    } else if (pick == 0) {
        put(t, leaves[below(6)]);
    } else if (pick == 1) {
        put(t, below(2) ? leaves[below(6)] : numbers[below(18)]);
    } else if (pick <= 3) {
        put(t, "(");
        typed_tree(t, depth - 1);
        put(t, binary[below(8)]);
        typed_tree(t, depth - 1);
        put(t, ")");
    } else if (pick == 4 && with_exp && below(2)) { /* (f32: the fused code's) */
        put(t, "f32(");
        exp_call(t, typed_tree, depth);
        put(t, ")");
    } else if (pick == 4) {
        put(t, unary[below(5)]);
        put(t, "(");
        typed_tree(t, depth - 1);
        put(t, ")");
    } else if (pick == 5) {
        put(t, below(2) ? "minimum(" : "maximum(");
        typed_tree(t, depth - 1);
        put(t, ", ");
        typed_tree(t, depth - 1);
        put(t, ")");
    } else if (pick <= 7) {
        put(t, casts[below(11)]);
        put(t, "(");
        typed_tree(t, depth - 1);
        put(t, ")");
    } else if (pick == 8) {
        put(t, "(");
        typed_tree(t, depth - 1);
        put(t, below(2) ? " << " : " >> ");
        put(t, counts[below(10)]);
        put(t, ")");
    } else if (pick == 9) {
        typed_condition(t, depth);
    } else if (below(2)) { /* where(x > y, x, z): x computed once, kept (vex.c's shared) */
        static const char *const compares[] = {" < ", " <= ", " > ", " >= ", " == ", " != "};
        text x = {{0}, 0};
        typed_tree(&x, depth - 1);
        put(t, "where((");
        put(t, x.s);
        put(t, compares[below(6)]);
        typed_tree(t, depth - 1);
        put(t, "), ");
        put(t, x.s);
        put(t, ", ");
        typed_tree(t, depth - 1);
        put(t, ")");
    } else {
        put(t, "where(");
        typed_condition(t, depth - 1);
        put(t, ", ");
        typed_tree(t, depth - 1);
        put(t, ", ");
        typed_tree(t, depth - 1);
        put(t, ")");
    }
}

/* ---- data ---- */

static void fill(void *buffer, bcg_dtype t, int64_t count)
{
    static const double specials[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, -NAN,
                                      0.5, 1e-310, -4e-320, 1e-40, 3.0, 1e300};
    for (int64_t i = 0; i < count; i++) {
        uint64_t r = next();
        if (t == BCG_BOOL) {
            ((uint8_t *)buffer)[i] = (uint8_t)(r % 3); /* 2 is a true byte too */
            continue;
        }
        if (dtype_kind_of(t) != KIND_FLOAT) { /* the extremes of the dtype too */
            if ((r & 7) == 0)
                r = (r & 8) ? ~0ull >> 1 : 1ull << 63;
            if ((r & 7) == 1 && dtype_kind_of(t) == KIND_INT)
                r = ~0ull << (8 * bcg_dtype_size(t) - 1);
            memcpy((char *)buffer + (size_t)i * bcg_dtype_size(t),
                   &(uint64_t){(r & 7) == 2 ? ~0ull >> (64 - 8 * bcg_dtype_size(t) + 1) : r},
                   bcg_dtype_size(t));
            continue;
        }
        static const double limits[] = {2147483648.0, -2147483649.0, 2147483520.0, 300.5,
                                        -129.7, 65535.9, 4294967296.0, -32768.5, 127.5,
                                        1e10, -0.9, 255.9};
        double v = (r & 3) == 0 ? specials[(r >> 2) % 14]
                   : (r & 3) == 1 && typed_dtypes[0] != BCG_BOOL ? limits[(r >> 2) % 12]
                   : ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 8.0;
        if (t == BCG_F32) {
            float f = (float)v;
            if ((r >> 60) == 0) { /* an f32 subnormal */
                uint32_t bits = (uint32_t)(r >> 20) & 0x807fffffu;
                memcpy(&f, &bits, 4);
            }
            ((float *)buffer)[i] = f;
        } else {
            ((double *)buffer)[i] = v;
        }
    }
}

typedef enum layout {
    LAYOUT_ROWS,     /* a (m,n), b (n,), c (m,1) */
    LAYOUT_SCALARS,  /* a (m,n), b (1,), c (m,n) */
    LAYOUT_REVERSED, /* a (m,n) stride 2 in the run, b (n,) backwards */
    LAYOUT_INPLACE,  /* the output is a */
    LAYOUT_STRIDED,  /* a, b, d and e read with strides of -1, 2, -2 or 3 (random), rows
                        apart by more than a run, from the end of their memory too */
    LAYOUT_COUNT
} layout;

typedef struct tally {
    int cases, vex, tiled, skipped;
    int in_place; /* fused, a strided operand read in place (no gather) */
    int streamed; /* fused, the root stored past the caches */
    int rows;     /* fused in the rows form (2-D tiles read in place row by row) */
    int exp;      /* fused, with an exp in the tree */
    int f64_exp, f64_exp_fused; /* f64 results with an exp in the tree; fused */
    int paired;   /* fused as the paired loop (counted when count_paired) */
    int zmm;      /* ... as one zmm body (vex_zmm) */
    int stream_paired; /* ... with a streaming root (write_stream_pairs) */
    int branched; /* ... with a where() on one side (vex_function.branches: count_paired) */
    int shared;   /* ... with a value computed once for several uses (count_paired) */
    int widened;  /* f32 exp/log results stored in f64 in place, within the f32 bound only */
    int ahead;    /* ... a zmm body reading a stride +-2 leaf by loads a register apart */
    int byte_literals; /* ... products of bytes by a literal (vex.c's byte_times_literal) */
    int plain_extremes; /* ... a float minimum or maximum without the NaN test */
    int libm_off; /* fused, with exp/log, the kernel without vector code calling the C
                     library's (not the microkernels': not compared bit for bit) */
} tally;

/* check_case also asks the pipeline's fused function whether it is the
 * paired loop (tally.paired: test_paired_mixed) */
static bool count_paired;

/* this case's strides along the run (LAYOUT_STRIDED) and streaming stores */
static int64_t case_stride[5];
static bool case_stream;
/* the output this many elements past the first (test_stream_pairs: every
 * offset from the 64-byte line) */
static int case_out_offset;

static guarded operand_memory[5];

typedef struct operand_layout {
    int rank;
    int64_t shape[2], strides[2];
    bool strided;
} operand_layout;

/* Whether kernel SOURCE computes an exp or a log with the C library
 * (expf(x), not bcg_mk_exp_f32: a call, not the declaration; past the
 * header comment, which shows the expression). */
static bool calls_libm(const char *source)
{
    static const char *const names[] = {"expf(", "logf(", "exp(", "log("};
    const char *code = strstr(source, "*/");
    source = code ? code : source;
    for (int k = 0; k < 4; k++)
        for (const char *at = strstr(source, names[k]); at; at = strstr(at + 1, names[k])) {
            char before = at > source ? at[-1] : ' ';
            if (before != '_' && !(before >= 'a' && before <= 'z') &&
                strncmp(at + strlen(names[k]), "float)", 6) != 0 &&
                strncmp(at + strlen(names[k]), "double)", 7) != 0)
                return true;
        }
    return false;
}

/* the last kernel run_one ran: calls_libm */
static bool ran_libm;

/* Runs the kernel of C (vex on or off) into OUT; false when it did not
 * compile.  *USED_VEX: its source calls the fused function. */
static bool run_one(const char *expr, const bcg_operand *ops, const bcg_options *options,
                    void *out, const void *const *inputs, bool *used_vex, bool *tiled,
                    bool *in_place, bool *streamed, bool *rows)
{
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_kernel *kernel = NULL;
    bcg_error err;
    bool ok = bcg_compile(ctx, expr, ops, 5, options, &kernel, &err) == BCG_OK;
    if (ok) {
        if (bcg_kernel_note(kernel)[0]) {
            print_error("%s: the JIT failed: %s\n", expr, bcg_kernel_note(kernel));
            fail();
        }
        *used_vex = strstr(bcg_kernel_source(kernel), VEX_SYMBOL "(") != NULL;
        ran_libm = calls_libm(bcg_kernel_source(kernel));
        *in_place = *used_vex && !strstr(bcg_kernel_source(kernel), "bcg_mk_gather");
        *streamed = *used_vex && strstr(bcg_kernel_source(kernel), "bcg_mk_fence");
        *rows = *used_vex && strstr(bcg_kernel_source(kernel), ", row_count);");
        /* tiled, with two operations or more (one stays a microkernel call) */
        const char *calls = strstr(bcg_kernel_source(kernel), "tile_count);");
        *tiled = *used_vex || (calls && strstr(calls + 1, "tile_count);"));
        if (getenv("BCGEN_VEX_SHOW") && *tiled && !*used_vex && !options->disable_vector_code)
            print_message("# not fused: %s (%s %s %s %s)\n", expr, bcg_dtype_name(ops[0].dtype),
                          bcg_dtype_name(ops[1].dtype), bcg_dtype_name(ops[2].dtype),
                          bcg_dtype_name(ops[4].dtype));
        assert_int_equal(bcg_run(kernel, out, inputs, &err), BCG_OK);
    }
    bcg_context_free(ctx);
    return ok;
}

static const vex_function *function_of_streaming(arena *a, const char *expr,
                                                 const bcg_operand *ops, int count, int stream);

/* the rows of check_case's 2-D operands (test_strided_rows: 1 to 40) */
static int64_t case_rows = 3;
/* LAYOUT_INPLACE with b, d and e read with strides (LAYOUT_STRIDED's):
 * test_strided_rows */
static bool case_inplace_strided;

static bool check_case(const char *expr, bcg_dtype t, bcg_dtype int_dtype, int64_t n, layout lay,
                       tally *tally)
{
    const int64_t m = case_rows;
    operand_layout lays[5] = {
        {2, {m, n}, {n, 1}, false},
        {1, {n, 0}, {1, 0}, false},
        {2, {m, 1}, {1, 1}, false},
        {2, {m, n}, {n, 1}, false},
        {2, {m, n}, {n, 1}, false},
    };
    if (lay == LAYOUT_SCALARS) {
        lays[1] = (operand_layout){1, {1, 0}, {1, 0}, false};
        lays[2] = (operand_layout){2, {m, n}, {n, 1}, false};
    } else if (lay == LAYOUT_REVERSED) {
        lays[0] = (operand_layout){2, {m, n}, {2 * n + 1, 2}, true};
        lays[1] = (operand_layout){1, {n, 0}, {-1, 0}, true};
    }
    if (lay == LAYOUT_SCALARS)
        lays[4] = (operand_layout){2, {m, 1}, {1, 1}, false};
    if (lay == LAYOUT_STRIDED || (lay == LAYOUT_INPLACE && case_inplace_strided)) {
        int64_t s = case_stride[0], reach = (s < 0 ? -s : s) * n + 5;
        if (lay == LAYOUT_STRIDED)
            lays[0] = (operand_layout){2, {m, n}, {below(2) ? reach : -reach, s}, true};
        lays[1] = (operand_layout){1, {n, 0}, {case_stride[1], 0}, true};
        s = case_stride[3];
        lays[3] = (operand_layout){2, {m, n}, {(s < 0 ? -s : s) * n + 1, s}, true};
        s = case_stride[4];
        lays[4] = (operand_layout){2, {m, n}, {-(s < 0 ? -s : s) * n - 2, s}, true};
    }
    const char *names[5] = {"a", "b", "c", "d", "e"};
    bcg_operand ops[5];
    const void *inputs[5];
    for (int i = 0; i < 5; i++) {
        const operand_layout *o = &lays[i];
        bcg_dtype dt = i == 3 ? BCG_BOOL : i == 4 ? int_dtype : t;
        if (typed_dtypes[0] != BCG_BOOL)
            dt = typed_dtypes[i];
        ops[i] = (bcg_operand){names[i], dt, o->rank, o->shape, o->strided ? o->strides : NULL};
        int64_t low = 0, high = 0;
        for (int d = 0; d < o->rank; d++) {
            int64_t reach = o->strides[d] * (o->shape[d] > 0 ? o->shape[d] - 1 : 0);
            if (reach < 0)
                low += reach;
            else
                high += reach;
        }
        size_t size = bcg_dtype_size(dt);
        int64_t count = high - low + 1;
        /* element-aligned, not vector-aligned; the first or the last
         * element against a page that faults */
        char *data = guarded_alloc(&operand_memory[i], (size_t)count * size, below(2));
        fill(data, dt, count);
        inputs[i] = data + (size_t)(-low) * size;
    }
    bcg_options options;
    bcg_options_init(&options);
    options.microkernel_run = 1;
    options.unroll_limit = 0; /* small outputs too in loops, so in tiles */
    if (lay == LAYOUT_INPLACE)
        options.inplace = 0;
    options.stream_stores = case_stream ? 1 : 0;

    bool ok = true;
    bcg_dtype computed = t; /* the expression's dtype (f32 stored in an f64 a in place) */
    size_t out_size = 8; /* (f32 or f64: the tree's promotion decides) */
    int64_t elements = 0; /* (the operands the tree reads make the result's shape) */
    size_t bytes = (size_t)(m * (n + 1) + 1 + 16) * out_size; /* (a result of c alone is (m,1)) */
    char *want = malloc(bytes), *on = malloc(bytes), *off = malloc(bytes);
    assert_true(want && on && off);

    /* the reference: the same front end, evaluated by eval.c */
    arena *a = arena_new();
    compile *front = a ? arena_alloc(a, sizeof *front) : NULL;
    assert_non_null(front);
    bcg_error err;
    front->arena = a;
    front->err = &err;
    if (compile_front(front, expr, ops, 5, &options) != BCG_OK ||
        (typed_dtypes[0] == BCG_BOOL && /* (comparisons only: bool) */
         dtype_kind_of(front->out_dtype) != KIND_FLOAT) ||
        (lay == LAYOUT_INPLACE && front->out_dtype != t)) {
        tally->skipped++;
        goto done;
    }
    out_size = bcg_dtype_size(front->out_dtype);
    t = front->out_dtype;
    computed = front->out_cast ? front->root->args[0]->dtype : front->root->dtype;
    front->err = NULL;
    elements = front->plan->elements;
    bool used_on = false, used_off = false, tiled_on = false, tiled_off = false;
    bool in_place = false, streamed = false, rows = false, unused, off_libm = false;
    if (lay == LAYOUT_INPLACE) { /* each writes into its own copy of a */
        char *copies[3] = {want, on, off};
        for (int i = 0; i < 3; i++)
            memcpy(copies[i], inputs[0], (size_t)elements * out_size);
        const void *in[5] = {want, inputs[1], inputs[2], inputs[3], inputs[4]};
        assert_int_equal(eval_run(front, want, in, NULL), BCG_OK);
        in[0] = on;
        assert_true(run_one(expr, ops, &options, on, in, &used_on, &tiled_on, &in_place,
                            &streamed, &rows));
        options.disable_vector_code = 1;
        in[0] = off;
        assert_true(run_one(expr, ops, &options, off, in, &used_off, &tiled_off, &unused,
                            &unused, &unused));
        off_libm = ran_libm;
    } else {
        assert_int_equal(eval_run(front, want, inputs, NULL), BCG_OK);
        /* the output only element-aligned */
        size_t at = out_size * (size_t)(1 + case_out_offset);
        assert_true(run_one(expr, ops, &options, on + at, inputs, &used_on, &tiled_on,
                            &in_place, &streamed, &rows));
        memmove(on, on + at, (size_t)elements * out_size);
        options.disable_vector_code = 1;
        assert_true(run_one(expr, ops, &options, off, inputs, &used_off, &tiled_off, &unused,
                            &unused, &unused));
        off_libm = ran_libm;
    }
    tally->cases++;
    tally->vex += used_on;
    if (count_paired && used_on) {
        const vex_function *f = function_of_streaming(a, expr, ops, 5, case_stream ? 1 : 0);
        tally->paired += f && f->paired;
        tally->zmm += f && f->zmm;
        tally->stream_paired += f && f->stream && f->paired && streamed;
        tally->branched += f && f->branches > 0;
        tally->ahead += f && f->zmm_ahead;
        tally->byte_literals += f && f->byte_literals > 0;
        tally->plain_extremes += f && f->plain_extremes > 0;
        tally->shared += f && f->shared;
    }
    tally->exp += used_on && (strstr(expr, "exp(") || strstr(expr, "log("));
    tally->f64_exp += computed == BCG_F64 && strstr(expr, "exp(") != NULL;
    tally->f64_exp_fused += used_on && computed == BCG_F64 && strstr(expr, "exp(") != NULL;
    tally->in_place += lay == LAYOUT_STRIDED && in_place;
    tally->streamed += streamed;
    tally->rows += rows;
    tally->tiled += tiled_off;
    if (used_off) {
        print_error("%s: disable_vector_code still calls the fused function\n", expr);
        ok = false;
    }
    /* bit for bit, but for which NaN (compare.h: NumPy promises a NaN, not
     * its sign or payload, and the microkernels' gcc code orders operands
     * as it likes) */
    const char *outputs[2] = {on, off};
    /* a tree past lower.c's MAX_TILE_TEMPORARIES is fused (fused_only)
     * but, without vector code, per-element C calling the C library's
     * exp and log, not the microkernels: the polynomials' bits there only
     * within the ulp bound (maximum(((b + a) * where((c <= b), c, b)),
     * (log(abs(a)) / (e + f64(e)))), n 9: logf(3.1456010f) 1 ulp apart) */
    bool libm_off = with_exp && used_on && off_libm;
    tally->libm_off += libm_off;
    if (with_exp) { /* the fused code is the microkernels' bit for bit; those are
                       within the ulp bound of eval.c's libm at an exp root */
        int64_t at = libm_off ? -1 : first_difference(on, off, t, elements, false);
        if (at >= 0) {
            float x = 0, y = 0;
            double dx = 0, dy = 0;
            if (t == BCG_F32) {
                memcpy(&x, on + at * 4, 4);
                memcpy(&y, off + at * 4, 4);
                dx = x;
                dy = y;
            } else if (t == BCG_F64) {
                memcpy(&dx, on + at * 8, 8);
                memcpy(&dy, off + at * 8, 8);
            }
            print_error("%s %s n=%lld layout %d: element %lld fused %a, microkernels %a (a..e %s "
                        "%s %s %s %s)\n", expr, bcg_dtype_name(t), (long long)n, (int)lay,
                        (long long)at, dx, dy, bcg_dtype_name(ops[0].dtype),
                        bcg_dtype_name(ops[1].dtype), bcg_dtype_name(ops[2].dtype),
                        bcg_dtype_name(ops[3].dtype), bcg_dtype_name(ops[4].dtype));
            ok = false;
        }
        const char *root = strncmp(expr, "f32(", 4) == 0 ? expr + 4 : expr;
        if ((t != BCG_F32 && (t != BCG_F64 || strncmp(root, "exp(", 4) != 0)) ||
            (strncmp(root, "exp(", 4) != 0 && strncmp(root, "log(", 4) != 0) ||
            strstr(root + 4, "exp(") || strstr(root + 4, "log(")) /* (an argument's error
            grows through an outer exp times 40) */
            outputs[0] = outputs[1] = NULL;
    }
    for (int i = 0; i < 2 && ok && outputs[i]; i++) {
        int64_t at = first_difference_in(outputs[i], want, t, elements, with_exp,
                                         with_exp && strstr(expr, "exp(") != NULL);
        if (at >= 0 && with_exp && t == BCG_F64 && computed == BCG_F32) { /* (in place) */
            at = first_difference_widened(outputs[i], want, elements);
            tally->widened += at < 0;
        }
        if (at >= 0) {
            uint64_t got_bits = 0, want_bits = 0;
            memcpy(&got_bits, outputs[i] + at * (int64_t)out_size, out_size);
            memcpy(&want_bits, want + at * (int64_t)out_size, out_size);
            print_error("%s %s n=%lld layout %d, %s: element %lld is 0x%llx, the reference "
                        "evaluator's 0x%llx (a..e %s %s %s %s %s)\n", expr, bcg_dtype_name(t),
                        (long long)n, (int)lay,
                        i == 0 ? (used_on ? "fused" : "fused path not taken") : "microkernels",
                        (long long)at, (unsigned long long)got_bits,
                        (unsigned long long)want_bits, bcg_dtype_name(ops[0].dtype),
                        bcg_dtype_name(ops[1].dtype), bcg_dtype_name(ops[2].dtype),
                        bcg_dtype_name(ops[3].dtype), bcg_dtype_name(ops[4].dtype));
            ok = false;
        }
    }
done:
    arena_free(a);
    free(want);
    free(on);
    free(off);
    return ok;
}

static void test_random_trees(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = text_count ? atoi(text_count) : 3000;
    tally tally = {0};
    int strided_cases = 0;
    int failures = 0;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        mixed = below(3) == 0;
        value_tree(&t, 1 + below(4));
        bcg_dtype dt = below(2) ? BCG_F32 : BCG_F64;
        static const bcg_dtype ints[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32};
        bcg_dtype int_dtype = ints[below(5)];
        int lanes = dt == BCG_F32 ? 8 : 4;
        int64_t runs[] = {0, 1, lanes - 1, lanes, lanes + 1, 2 * lanes + 3, 1023, 1025,
                          1 + below(3000)};
        int64_t n = runs[below(9)];
        /* (3 or more either way: spaced_load) */
        static const int64_t strides[] = {-1, 2, -2, 3, -1, 2, 5, -3, 7, -8, 12, -33};
        for (int k = 0; k < 5; k++)
            case_stride[k] = strides[below(12)];
        case_stream = below(2) == 0;
        /* the paired loop, its divisions in zmm where the CPU has them
         * (or ymm), or the single loop */
        int pairing = below(6);
        vex_wide = pairing == 0 ? 0 : -1;
        vex_pairing = pairing == 1 ? 0 : -1;
        vex_zmm = pairing == 2 ? 0 : -1; /* (the ymm pairs where the CPU has zmm) */
        layout lay = (layout)below(LAYOUT_COUNT);
        strided_cases += lay == LAYOUT_STRIDED;
        if (!check_case(t.s, dt, int_dtype, n, lay, &tally))
            failures++;
    }
    print_message("# random trees: %d cases, %d with 2+ tile calls, %d through the fused "
                  "vector code (%d of %d strided layouts reading in place, %d streaming, %d "
                  "row by row), %d skipped\n", tally.cases, tally.tiled, tally.vex,
                  tally.in_place, strided_cases, tally.streamed, tally.rows, tally.skipped);
    vex_wide = -1;
    vex_pairing = -1;
    vex_zmm = -1;
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count > 0) { /* most trees are the fused function's, or this tests nothing */
        assert_true(tally.vex * 20 > tally.tiled * 17 && tally.vex * 2 > tally.cases);
        assert_true(tally.in_place * 4 > strided_cases && tally.streamed * 200 > count &&
                    tally.rows * 100 > count);
    }
}

/* Operands read in place with strides of +-2, +-3 and -1 over 2-D
 * layouts of 1 to 40 rows of runs of 1 to 200 (tails of every length), a
 * per-row operand (c, (m,1)) and a column-broadcast one (b, (n,)), every
 * dtype, float trees (their tail the last whole vector again: vex.c
 * strided_overlap; runs over 64 with a per-row operand in the rows form:
 * lower.c medium_strided_rows) and typed ones, and strided copies
 * (minimum(a, a) folded: vex.c strided_copy); the zmm body on and off,
 * the first or last element against a faulting page, the output over a
 * (in place) with the others strided; bit for bit against eval.c and the
 * microkernels (check_case).  Asserts the share of cases
 * fused in place row by row and of the copies fused. */
static void test_strided_rows(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = text_count ? atoi(text_count) / 6 : 500;
    tally tally = {0};
    int failures = 0, medium = 0, medium_rows = 0, copies = 0, copies_fused = 0;
    /* (a stream of its own: the tests after it draw the cases they drew
     * before it was added) */
    uint64_t saved_state = random_state;
    random_state = seeded_stream(0x5851f42d4c957f2dull);
    case_stream = false;
    case_inplace_strided = true;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        bool copy = i % 5 == 4, typed = i % 2 == 1;
        bcg_dtype dt = below(2) ? BCG_F32 : BCG_F64;
        static const bcg_dtype ints[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32};
        bcg_dtype int_dtype = ints[below(5)];
        typed_dtypes[0] = BCG_BOOL;
        if (copy) {
            put(&t, "minimum(a, a)");
            dt = all_dtypes[below(10)];
            if (below(2)) {
                for (int k = 0; k < 5; k++)
                    typed_dtypes[k] = k == 3 ? BCG_BOOL : dt;
                typed_dtypes[4] = int_dtype;
            }
        } else if (typed) {
            typed_tree(&t, 1 + below(3));
            bcg_dtype first = all_dtypes[below(10)];
            for (int k = 0; k < 3; k++)
                typed_dtypes[k] = below(2) ? first : all_dtypes[below(10)];
            typed_dtypes[3] = BCG_BOOL;
            typed_dtypes[4] = int_dtype;
            dt = typed_dtypes[0];
        } else {
            mixed = below(3) == 0;
            value_tree(&t, 1 + below(3));
        }
        static const int64_t strides[] = {2, -2, 3, -3, -1, 2, -2};
        for (int k = 0; k < 5; k++)
            case_stride[k] = strides[below(7)];
        case_rows = 1 + below(40);
        int64_t n = below(3) ? 65 + below(136) : 1 + below(200);
        vex_zmm = below(3) == 0 ? 0 : -1;
        int rows_before = tally.rows, vex_before = tally.vex, cases_before = tally.cases;
        int draw = below(6);
        layout lay = draw < 4 ? LAYOUT_STRIDED : draw == 4 ? LAYOUT_REVERSED : LAYOUT_INPLACE;
        if (!check_case(t.s, dt, int_dtype, n, lay, &tally))
            failures++;
        if (tally.cases == cases_before)
            continue;
        if (copy) {
            copies += n >= 64 && lay == LAYOUT_STRIDED && case_stride[0] != -1;
            copies_fused += n >= 64 && lay == LAYOUT_STRIDED && case_stride[0] != -1 &&
                            tally.vex > vex_before;
        } else if (!typed && n > 64 && case_rows > 1 && lay == LAYOUT_STRIDED) {
            medium++;
            medium_rows += tally.rows > rows_before;
        }
    }
    typed_dtypes[0] = BCG_BOOL;
    case_rows = 3;
    case_inplace_strided = false;
    vex_zmm = -1;
    random_state = saved_state;
    print_message("# strided rows: %d cases, %d fused (%d reading in place, %d row by row), "
                  "%d of %d float trees of runs over 64 in the rows form, %d of %d strided "
                  "copies fused, %d skipped\n", tally.cases, tally.vex, tally.in_place,
                  tally.rows, medium_rows, medium, copies_fused, copies, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count > 0) {
        assert_true(tally.in_place * 3 > tally.cases && medium_rows * 4 > medium);
        assert_true(copies_fused * 10 > copies * 9);
    }
}

/* The lowest and highest element offsets (LOW <= 0 <= HIGH) a view of
 * RANK dimensions SHAPE at strides ST reaches from its first element. */
static void view_reach(int rank, const int64_t *shape, const int64_t *st, int64_t *low,
                       int64_t *high)
{
    for (int d = 0; d < rank; d++) {
        int64_t reach = (shape[d] - 1) * st[d];
        *low += reach < 0 ? reach : 0;
        *high += reach > 0 ? reach : 0;
    }
}

/* WANT: EXPR over OPS (COUNT) with OPTIONS (NULL: the defaults) on the
 * inputs IN, by the reference evaluator (gen/eval.c). */
static void evaluate(const char *expr, const bcg_operand *ops, int count,
                     const bcg_options *options, void *want, const void *const *in)
{
    bcg_error err;
    arena *ar = arena_new();
    assert_non_null(ar);
    compile *front = arena_alloc(ar, sizeof *front);
    assert_non_null(front);
    memset(front, 0, sizeof *front);
    front->arena = ar;
    front->err = &err;
    assert_int_equal(compile_front(front, expr, ops, count, options), BCG_OK);
    assert_int_equal(eval_run(front, want, in, NULL), BCG_OK);
    arena_free(ar);
}

/* Copies read at a stride of +-2 or +-3 (a - 0, minimum(a, a): folded to
 * the leaf) with streaming stores, as kernels past compile_stream_bytes
 * take them: the fused code (vex.c strided_copy), where they had taken
 * the cast microkernel's scalar loop (i32 (16992, 287) at stride 2, sweep
 * seed 43: 0.16 of the gcc loop; f32 stride -2 5M: 0.12).  Every dtype,
 * runs of 1024 to 4000 under 1 to 3 rows, the first or last element
 * against a faulting page, the output at every offset within a vector;
 * bit for bit against eval.c, and every case fused. */
static void test_strided_copy_streaming(void **state)
{
    (void)state;
    static guarded memory[2];
    int fused = 0, count = 60;
    for (int i = 0; i < count; i++) {
        bcg_dtype t = all_dtypes[below(10)];
        static const int64_t strides[] = {2, -2, 3, -3};
        int64_t stride = strides[below(4)], run = 1024 + below(3000), rows = 1 + below(3);
        int64_t shape[2] = {rows, run}, st[2] = {run * (stride < 0 ? -stride : stride) + below(3), stride};
        if (below(2))
            st[0] = -st[0];
        int64_t low = 0, high = 0;
        view_reach(2, shape, st, &low, &high);
        size_t size = bcg_dtype_size(t);
        char *base = guarded_alloc(&memory[0], (size_t)(high - low + 1) * size, below(2));
        fill(base, t, high - low + 1);
        const void *in[1] = {base - low * (int64_t)size};
        bcg_operand ops[1] = {{"a", t, 2, shape, st}};
        const char *expr = below(2) ? "minimum(a, a)" : "a * 1";
        bcg_options options;
        bcg_options_init(&options);
        options.stream_stores = 1;
        bcg_context *ctx = bcg_context_new();
        assert_non_null(ctx);
        bcg_kernel *k = NULL;
        bcg_error err;
        assert_int_equal(bcg_compile(ctx, expr, ops, 1, &options, &k, &err), BCG_OK);
        fused += strstr(bcg_kernel_source(k), VEX_SYMBOL "(") != NULL;
        int64_t n = rows * run, shift = below(8);
        size_t out_size = bcg_dtype_size(bcg_kernel_dtype(k));
        char *out = guarded_alloc(&memory[1], (size_t)(n + shift) * out_size, true);
        char *want = malloc((size_t)n * out_size);
        assert_non_null(want);
        evaluate(expr, ops, 1, &options, want, in);
        assert_int_equal(bcg_run(k, out + shift * (int64_t)out_size, in, &err), BCG_OK);
        if (memcmp(out + shift * (int64_t)out_size, want, (size_t)n * out_size) != 0)
            print_error("%s %s (%lld, %lld) strides [%lld, %lld], output at +%lld: differs from eval.c\n",
                        expr, bcg_dtype_name(t), (long long)rows, (long long)run, (long long)st[0],
                        (long long)st[1], (long long)shift);
        assert_memory_equal(out + shift * (int64_t)out_size, want, (size_t)n * out_size);
        free(want);
        bcg_kernel_free(k);
        bcg_context_free(ctx);
    }
    guarded_free(&memory[0]);
    guarded_free(&memory[1]);
    print_message("# streaming strided copies: %d of %d fused\n", fused, count);
    if (vex_cpu_ok())
        assert_int_equal(fused, count);
}

/* Whether the folded tree under N has a literal argument of another dtype
 * than its operator converts it to (fold.c, convert_literals). */
static bool literal_unconverted(const expr_node *n)
{
    bool operation = n->op != OP_CAST && n->op != OP_NOT && n->op != OP_AND &&
                     n->op != OP_OR && n->op != OP_LOGICAL_XOR && n->op != OP_ISNAN &&
                     n->op != OP_ISINF && n->op != OP_ISFINITE && n->op != OP_SIGNBIT;
    bcg_dtype t = n->op == OP_WHERE ? n->dtype : expr_operation_type(n);
    for (int k = 0; k < n->arg_count; k++) {
        const expr_node *x = n->args[k];
        if (operation && !(n->op == OP_WHERE && k == 0) && !dtype_is_half(t) &&
            x->op == OP_LITERAL && x->dtype != t &&
            !(n->op >= OP_EQ && n->op <= OP_GE && dtype_promote(n->args[1 - k]->dtype, t) != t))
            return true;
        if (literal_unconverted(x))
            return true;
    }
    return false;
}

/* Literals of another dtype than their operator computes in (a typed
 * literal, T(v), or one folding leaves, as x - x over integers is 0 of
 * x's dtype) are converted once by fold.c (convert_literals) instead of a
 * tile of them converted before every call: every dtype of operand and
 * literal, values at the edges of the narrow types and past 2^24, the
 * literal either side of arithmetic, extremes, comparisons, bitwise and
 * shift operators, where's branches and clip's bounds; bit for bit against
 * eval.c, which converts it as it computes, and the share of trees whose
 * literals fold.c converted. */
static void test_literals_converted(void **state)
{
    (void)state;
    static const char *const ops2[] = {"+", "-", "*", "/", "<", "==", ">=", "&", "|", "<<",
                                       ">>", "//", "%"};
    static const char *const values[] = {"0", "1", "-1", "3", "127", "255", "300", "65535",
                                         "16777217", "-2.5", "0.5", "1e10", "-0.0"};
    static const char *const names[] = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64",
                                        "f32", "f64", "bool"};
    static guarded memory[2];
    int count = 400, compiled = 0, converted = 0;
    for (int i = 0; i < count; i++) {
        bcg_dtype t = all_dtypes[below(10)];
        char lit[48], expr[160];
        snprintf(lit, sizeof lit, below(5) ? "%s(%s)" : "(x - x + %s(%s))",
                 names[below(11)], values[below(13)]);
        if (strncmp(lit, "(x", 2) == 0) /* (x - x: 0 of an integer x's dtype, folded) */
            snprintf(lit, sizeof lit, "(x - x + %s(%s))", names[below(8)], values[below(13)]);
        switch (below(5)) {
        case 0: case 1: {
            const char *op = ops2[below(13)];
            if (below(2))
                snprintf(expr, sizeof expr, "x %s %s", op, lit);
            else
                snprintf(expr, sizeof expr, "%s %s x", lit, op);
            break;
        }
        case 2:
            snprintf(expr, sizeof expr, "%s(x, %s)", below(2) ? "minimum" : "maximum", lit);
            break;
        case 3:
            snprintf(expr, sizeof expr, below(2) ? "where(x > 1, x, %s)" : "where(x > 1, %s, x)",
                     lit);
            break;
        default:
            snprintf(expr, sizeof expr, "clip(x, %s, 100)", lit);
            break;
        }
        int64_t shape[2] = {3, 1 + below(80)}, n = shape[0] * shape[1];
        bcg_operand ops[1] = {{"x", t, 2, shape, NULL}};
        bcg_options options;
        bcg_options_init(&options);
        bcg_context *ctx = bcg_context_new();
        assert_non_null(ctx);
        bcg_kernel *k = NULL;
        bcg_error err;
        if (bcg_compile(ctx, expr, ops, 1, &options, &k, &err) != BCG_OK) { /* (bitwise
            on floats, shifts by a float: refused as typing errors) */
            bcg_context_free(ctx);
            continue;
        }
        compiled++;
        /* the tree before and after folding */
        arena *ar = arena_new();
        assert_non_null(ar);
        compile *front = arena_alloc(ar, sizeof *front);
        assert_non_null(front);
        memset(front, 0, sizeof *front);
        front->arena = ar;
        front->err = &err;
        assert_int_equal(compile_front(front, expr, ops, 1, &options), BCG_OK);
        expr_node *folded = NULL;
        assert_int_equal(fold_tree(ar, front->root, &folded, &err), BCG_OK);
        if (literal_unconverted(folded))
            print_error("%s over %s: a literal left unconverted\n", expr, bcg_dtype_name(t));
        assert_false(literal_unconverted(folded));
        converted += literal_unconverted(front->root);
        arena_free(ar);
        size_t size = bcg_dtype_size(t), out_size = bcg_dtype_size(bcg_kernel_dtype(k));
        char *x = guarded_alloc(&memory[0], (size_t)n * size, below(2));
        fill(x, t, n);
        const void *in[1] = {x};
        char *out = guarded_alloc(&memory[1], (size_t)n * out_size, below(2));
        char *want = malloc((size_t)n * out_size);
        assert_non_null(want);
        evaluate(expr, ops, 1, &options, want, in);
        assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
        int64_t at = first_difference_in(out, want, bcg_kernel_dtype(k), n, false, false);
        if (at >= 0)
            print_error("%s over %s (3, %lld): element %lld differs from eval.c\n", expr,
                        bcg_dtype_name(t), (long long)shape[1], (long long)at);
        assert_true(at < 0);
        free(want);
        bcg_kernel_free(k);
        bcg_context_free(ctx);
    }
    guarded_free(&memory[0]);
    guarded_free(&memory[1]);
    print_message("# literals of other dtypes: %d compiled of %d, %d with one converted\n",
                  compiled, count, converted);
    assert_true(compiled * 2 > count && converted * 3 > compiled);
}

/* A copy whose gather writes the output's rows (lower.c
 * gather_into_output) under a loop along which the copied operand does not
 * move (stride 0: a broadcast outer dimension): the gather stays inside
 * that loop, each trip's rows stored (hoisted out of it by
 * hoist_tile_gathers it had filled one tile once and the output never:
 * b i8 (4, 4, 130) at strides [0, -4, 16], the fuzzer's seed 104).  Every
 * dtype, rows reversed or not, 1 to 4 elements apart, the run at strides
 * of 8 to 20 (transposed), the operand against a faulting page; bit for bit
 * against eval.c and the share of cases gathered into the output. */
static void test_gathered_output_broadcast(void **state)
{
    (void)state;
    static guarded memory[2];
    int count = 60, into_output = 0;
    for (int i = 0; i < count; i++) {
        bcg_dtype t = all_dtypes[below(10)];
        int64_t g = 2 + below(4), rows = 2 + below(6), run = 17 + below(200);
        static const int64_t steps[] = {16, 12, 8, 20, -16, 9};
        int64_t along = steps[below(6)], across = (1 + below(4)) * (below(2) ? -1 : 1);
        int64_t shape[3] = {g, rows, run}, st[3] = {0, across, along};
        int64_t low = 0, high = 0;
        view_reach(3, shape, st, &low, &high);
        size_t size = bcg_dtype_size(t);
        char *base = guarded_alloc(&memory[0], (size_t)(high - low + 1) * size, below(2));
        fill(base, t, high - low + 1);
        const void *in[1] = {base - low * (int64_t)size};
        bcg_operand ops[1] = {{"b", t, 3, shape, st}};
        bcg_options options;
        bcg_options_init(&options);
        options.stream_stores = 0;
        options.unroll_limit = 1;
        bcg_context *ctx = bcg_context_new();
        assert_non_null(ctx);
        bcg_kernel *k = NULL;
        bcg_error err;
        assert_int_equal(bcg_compile(ctx, "b", ops, 1, &options, &k, &err), BCG_OK);
        const char *source = bcg_kernel_source(k);
        into_output += strstr(source, "_gather_rows_") && strstr(source, "(out + ") != NULL;
        int64_t n = g * rows * run;
        char *out = guarded_alloc(&memory[1], (size_t)n * size, true);
        memset(out, 0xa5, (size_t)n * size);
        char *want = malloc((size_t)n * size);
        assert_non_null(want);
        evaluate("b", ops, 1, &options, want, in);
        assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
        if (memcmp(out, want, (size_t)n * size) != 0)
            print_error("b %s (%lld, %lld, %lld) strides [0, %lld, %lld]: differs from eval.c\n",
                        bcg_dtype_name(t), (long long)g, (long long)rows, (long long)run,
                        (long long)across, (long long)along);
        assert_memory_equal(out, want, (size_t)n * size);
        free(want);
        bcg_kernel_free(k);
        bcg_context_free(ctx);
    }
    guarded_free(&memory[0]);
    guarded_free(&memory[1]);
    print_message("# copies under a broadcast loop: %d of %d gathered into the output\n",
                  into_output, count);
    if (vex_cpu_ok())
        assert_true(into_output * 2 > count);
}

/* One case of test_inplace_rows: EXPR over a (its shape and strides SHAPE_A,
 * ST_A, RANK dimensions) and c (G, 1, 1) when C_DTYPE is not BCG_BOOL,
 * every operand against a faulting page at its first or last element, the
 * output at an element offset; bit for bit against eval.c.  *ROWS: the
 * fused function ran row by row; *STREAMED: and streamed. */
static void inplace_rows_case(const char *expr, bcg_dtype t, bcg_dtype c_dtype, int rank,
                              int64_t *shape_a, int64_t *st_a, bool stream, bool *rows,
                              bool *streamed)
{
    static guarded memory[3];
    int64_t low = 0, high = 0;
    view_reach(rank, shape_a, st_a, &low, &high);
    size_t size = bcg_dtype_size(t);
    char *base = guarded_alloc(&memory[0], (size_t)(high - low + 1) * size, below(2));
    fill(base, t, high - low + 1);
    int64_t shape_c[3] = {shape_a[0], 1, 1}, st_c[3] = {1, 1, 1};
    char *c_base = NULL;
    int count = 1;
    if (c_dtype != BCG_BOOL) {
        c_base = guarded_alloc(&memory[1], (size_t)shape_c[0] * bcg_dtype_size(c_dtype), below(2));
        fill(c_base, c_dtype, shape_c[0]);
        count = 2;
    }
    const void *in[2] = {base - low * (int64_t)size, c_base};
    bcg_operand ops[2] = {{"a", t, rank, shape_a, st_a}, {"c", c_dtype, rank, shape_c, st_c}};
    bcg_options options;
    bcg_options_init(&options);
    options.stream_stores = stream ? 1 : 0;
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_kernel *k = NULL;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, expr, ops, count, &options, &k, &err), BCG_OK);
    const char *source = bcg_kernel_source(k);
    *rows = strstr(source, VEX_SYMBOL "(") && strstr(source, ", row_count);") &&
            !strstr(source, "bcg_mk_gather");
    *streamed = *rows && strstr(source, "bcg_mk_fence");
    if (!*rows) /* (a copy's gather into the output's rows: lower.c gather_into_output) */
        *streamed = strstr(source, "_gather_rows_") && strstr(source, "(out + row_start") &&
                    !strstr(source, "_scatter_rows_");
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= shape_a[d];
    int64_t shift = below(8);
    size_t out_size = bcg_dtype_size(bcg_kernel_dtype(k));
    char *out = guarded_alloc(&memory[2], (size_t)(n + shift) * out_size, true);
    char *want = malloc((size_t)n * out_size);
    assert_non_null(want);
    evaluate(expr, ops, count, &options, want, in);
    assert_int_equal(bcg_run(k, out + shift * (int64_t)out_size, in, &err), BCG_OK);
    if (memcmp(out + shift * (int64_t)out_size, want, (size_t)n * out_size) != 0)
        print_error("%s %s shape (%lld, %lld, %lld) strides [%lld, %lld, %lld], output at "
                    "+%lld, %s: differs from eval.c\n", expr, bcg_dtype_name(t),
                    (long long)shape_a[0], (long long)shape_a[rank - 2],
                    (long long)shape_a[rank - 1], (long long)st_a[0],
                    (long long)st_a[rank - 2], (long long)st_a[rank - 1], (long long)shift,
                    stream ? "streaming" : "plain stores");
    assert_memory_equal(out + shift * (int64_t)out_size, want, (size_t)n * out_size);
    free(want);
    bcg_kernel_free(k);
    bcg_context_free(ctx);
}

/* Runs read in place by the fused function's rows form where they had
 * been gathered into 2-D tiles first (lower.c choose_vex_groups, vex.c
 * vex_build): (1) streaming outputs of runs a whole number of lines
 * long, one operation or two over a leaf reversed or of stride +-2 along
 * the run, its rows apart (a + a, f64 rows of 160 reversed: the _nt
 * microkernel over a gathered tile); (2) one operation over a leaf
 * contiguous along the run whose rows lie otherwise than the output's
 * (reversed rows, rows apart), beside a hoisted subtree of c (G, 1, 1) or
 * a literal (b * (a + a)).  Every dtype, the operands against faulting
 * pages, the output at every element offset; bit for bit against eval.c,
 * and the share of cases fused row by row (streaming for (1)). */
static void test_inplace_rows(void **state)
{
    (void)state;
    uint64_t saved_state = random_state;
    random_state = 0x2545f4914f6cdd1dull;
    int count = 160, streams = 0, streamed = 0, reversed = 0, reversed_rows = 0;
    for (int i = 0; i < count; i++) {
        bool stream = i % 2 == 0;
        bcg_dtype t = all_dtypes[below(10)];
        int64_t size = (int64_t)bcg_dtype_size(t);
        bool rows = false, streaming = false;
        if (stream) {
            static const char *const exprs[] = {"a + a", "a * 3", "a - 1", "maximum(a, 2) - a",
                                                "where(a > 3, a, 1)"};
            static const int64_t strides[] = {-1, 2, -2, -1};
            int64_t s = strides[below(4)], run = (64 / size) * (1 + below(6));
            int64_t shape[2] = {2 + below(30), run};
            int64_t st[2] = {run * (s < 0 ? -s : s) + below(3) * below(2) * 64, s};
            if (below(3) == 0)
                st[0] = -st[0];
            inplace_rows_case(exprs[below(5)], t, BCG_BOOL, 2, shape, st, true, &rows,
                              &streaming);
            streams++;
            streamed += streaming;
        } else {
            static const char *const exprs[] = {"a * (c + c)", "a + 1", "a - c", "(c * 2) - a",
                                                "minimum(a, c + 1)"};
            int e = below(5);
            int64_t run = 65 + below(400), inner_rows = 2 + below(30);
            int64_t shape[3] = {1 + below(5), inner_rows, run};
            int64_t pad = below(3) ? 0 : 1 + below(40);
            int64_t st[3] = {inner_rows * (run + pad), -(run + pad), 1};
            if (below(3) == 0) {
                st[1] = run + pad + (pad == 0); /* (rows apart) */
                st[0] = inner_rows * st[1];
            }
            if (below(2))
                st[0] = -st[0];
            bcg_dtype c_dtype = e == 1 ? BCG_BOOL : below(2) ? t : all_dtypes[below(10)];
            inplace_rows_case(exprs[e], t, c_dtype, 3, shape, st, below(4) == 0, &rows,
                              &streaming);
            reversed++;
            reversed_rows += rows;
        }
    }
    /* (3) copies of a transposed or spaced input (rows 1 to 4 elements
     * apart, runs across lines), gathered straight into the output's rows */
    int copies = 60, into_out = 0;
    for (int i = 0; i < copies; i++) {
        bcg_dtype t = all_dtypes[below(10)];
        int64_t size = (int64_t)bcg_dtype_size(t);
        int64_t along = 1 + below(4), rows_n = 8 + below(120), run = 20 + below(300);
        int64_t across = rows_n * along + below(3);
        if (across * size < 64)
            across = 64 / size + 1;
        int64_t shape[2] = {rows_n, run}, st[2] = {below(4) ? along : -along, below(4) ? across : -across};
        static const char *const exprs[] = {"maximum(a, a)", "minimum(a, a)", "a"};
        bool rows = false, gathered_out = false;
        inplace_rows_case(exprs[below(3)], t, BCG_BOOL, 2, shape, st, false, &rows, &gathered_out);
        into_out += gathered_out;
    }
    random_state = saved_state;
    print_message("# in-place rows: %d of %d streaming cases fused row by row and streamed, "
                  "%d of %d one operation over rows apart fused row by row, %d of %d transposed "
                  "copies gathered into the output\n", streamed, streams, reversed_rows, reversed,
                  into_out, copies);
    assert_true(into_out * 2 > copies);
    if (vex_cpu_ok()) {
        assert_true(streamed * 3 > streams);
        assert_true(reversed_rows * 3 > reversed);
    }
}

/* One 8- or 16-bit operation over runs of 41 to 512 of an operand whose
 * rows are not one block (reversed, permuted, apart), the output
 * contiguous: the 2-D tiles' fused rows form reading each row in place
 * (lower.c narrow_scattered_rows), where the _rows microkernel had taken
 * them.  i8/u8/i16/u16 (b sometimes of another of them; a fifth of the
 * cases any dtype compared into bool), b contiguous, one value a row or a
 * literal, rank 2 or 3, a against a faulting page at its first or last
 * byte, the output at an element offset or in place of
 * b; bit for bit against eval.c, and the share fused row by row. */
static void test_narrow_scattered_rows(void **state)
{
    (void)state;
    static guarded memory[3];
    uint64_t saved_state = random_state;
    random_state = seeded_stream(0x5b1d3e7a9c2f4168ull);
    static const bcg_dtype narrow[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16};
    static const char *const exprs[] = {"a + b", "a - b", "b * a", "maximum(a, b)",
                                        "a & b", "b > a", "a - 3", "minimum(a, 7)"};
    int count = 120, fused = 0;
    for (int i = 0; i < count; i++) {
        bcg_dtype t = narrow[below(4)], bt = below(3) ? t : narrow[below(4)];
        bool wide_compare = below(5) == 0; /* (any dtype compared into bool) */
        if (wide_compare)
            t = bt = all_dtypes[below(10)];
        int64_t size = (int64_t)bcg_dtype_size(t), bsize = (int64_t)bcg_dtype_size(bt);
        int64_t run = below(2) ? 41 + below(88) : 129 + below(384);
        int64_t pad = below(3) ? 0 : 1 + below(20);
        int rank = 2 + (int)below(2);
        int64_t shape[3], st[3];
        if (rank == 2) {
            shape[0] = 8 + below(300);
            shape[1] = run;
            st[0] = -(run + pad);
            st[1] = 1;
        } else { /* the two outer loops' rows swapped */
            shape[0] = 2 + below(6);
            shape[1] = 2 + below(8);
            shape[2] = run;
            st[1] = shape[0] * (run + pad);
            st[0] = run + pad;
            st[2] = 1;
            if (below(2))
                st[1] = -st[1];
        }
        int64_t rows = rank == 2 ? shape[0] : shape[0] * shape[1], n = rows * run;
        int64_t low = 0, high = 0;
        view_reach(rank, shape, st, &low, &high);
        char *base = guarded_alloc(&memory[0], (size_t)((high - low + 1) * size), below(2));
        fill(base, t, high - low + 1);
        int b_kind = (int)below(4); /* 0: one value a row, else contiguous */
        int64_t shape_b[3], st_b[3], b_count = b_kind == 0 ? rows : n;
        for (int d = 0; d < rank; d++)
            shape_b[d] = shape[d];
        if (b_kind == 0)
            shape_b[rank - 1] = 1;
        st_b[rank - 1] = 1;
        for (int d = rank - 2; d >= 0; d--)
            st_b[d] = st_b[d + 1] * shape_b[d + 1];
        if (b_kind == 0)
            st_b[rank - 1] = 1;
        char *b_base = guarded_alloc(&memory[1], (size_t)(b_count * bsize), below(2));
        fill(b_base, bt, b_count);
        const void *in[2] = {base - low * size, b_base};
        bcg_operand ops[2] = {{"a", t, rank, shape, st}, {"b", bt, rank, shape_b, st_b}};
        const char *expr = wide_compare ? (below(2) ? "b > a" : "a == b") : exprs[below(8)];
        int op_count = strchr(expr, 'b') && strcmp(expr, "minimum(a, 7)") ? 2 : 1;
        bcg_context *ctx = bcg_context_new();
        assert_non_null(ctx);
        bcg_kernel *k = NULL;
        bcg_error err;
        assert_int_equal(bcg_compile(ctx, expr, ops, op_count, NULL, &k, &err), BCG_OK);
        const char *source = bcg_kernel_source(k);
        bool row_by_row = strstr(source, VEX_SYMBOL "(") && !strstr(source, "_rows(");
        fused += row_by_row;
        size_t out_size = bcg_dtype_size(bcg_kernel_dtype(k));
        int64_t shift = below(8);
        char *want = malloc((size_t)n * out_size);
        assert_non_null(want);
        evaluate(expr, ops, op_count, NULL, want, in);
        /* (in place of b: b contiguous and of the output's dtype) */
        bool in_place = op_count == 2 && b_kind != 0 && bcg_kernel_dtype(k) == bt && below(3) == 0;
        char *out = in_place ? b_base
                             : guarded_alloc(&memory[2], (size_t)(n + shift) * out_size, true) +
                                   shift * (int64_t)out_size;
        assert_int_equal(bcg_run(k, out, in, &err), BCG_OK);
        if (memcmp(out, want, (size_t)n * out_size) != 0)
            print_error("%s a %s rank %d run %lld strides [%lld, %lld, %lld], b %s kind %d, "
                        "in place %d: differs from eval.c\n", expr, bcg_dtype_name(t), rank,
                        (long long)run, (long long)st[0], (long long)st[1],
                        (long long)(rank == 3 ? st[2] : 0), bcg_dtype_name(bt), b_kind,
                        (int)in_place);
        assert_memory_equal(out, want, (size_t)n * out_size);
        free(want);
        bcg_kernel_free(k);
        bcg_context_free(ctx);
    }
    guarded_free(&memory[0]);
    guarded_free(&memory[1]);
    guarded_free(&memory[2]);
    random_state = saved_state;
    print_message("# one 8/16-bit operation over scattered rows of 41-512: %d of %d fused "
                  "row by row\n", fused, count);
    if (vex_cpu_ok())
        assert_true(fused * 2 > count);
}

/* One operation of a transposed (or spaced) input a and a per-row operand
 * b (R, 1) over 2-D tiles (vex.c vex_build: the rows form holds b's value
 * in a register a row, where the tiles gathered a whole tile of copies of
 * it every tile and the microkernel read that tile again: minimum(b, a),
 * a f64 (1000, 82) transposed, 0.80 -> 1.25 of the cc backend).  Every
 * dtype, b of a or of another dtype, runs of 17 to 300, rows 2 to 4
 * elements apart or 1, reversed or not, a and b against faulting pages at
 * their first or last element, the output at an element offset; bit for
 * bit against eval.c, and the share of cases that read b in place (no
 * tile of it) through the fused function. */
static void test_per_row_one_operation(void **state)
{
    (void)state;
    static guarded memory[3];
    uint64_t saved_state = random_state;
    random_state = seeded_stream(0x7c3a9e1b5d2f4861ull);
    static const char *const exprs[] = {"a + b", "minimum(b, a)", "a * b", "b - a",
                                        "maximum(a, b)", "a / b", "b < a"};
    int count = 120, in_place = 0, float_cases = 0, float_in_place = 0;
    for (int i = 0; i < count; i++) {
        bcg_dtype t = all_dtypes[below(10)];
        bcg_dtype bt = below(3) ? t : all_dtypes[below(10)];
        size_t size = bcg_dtype_size(t), bsize = bcg_dtype_size(bt);
        int64_t rows = 8 + below(200), run = 17 + below(284);
        int64_t along = below(3) ? 1 : 2 + below(3);
        int64_t across = rows * along + below(3);
        if (across * (int64_t)size < 64)
            across = 64 / (int64_t)size + 1;
        int64_t shape[2] = {rows, run}, st[2] = {below(4) ? along : -along, across};
        if (below(4) == 0)
            st[1] = -st[1];
        int64_t low = 0, high = 0;
        view_reach(2, shape, st, &low, &high);
        char *base = guarded_alloc(&memory[0], (size_t)(high - low + 1) * size, below(2));
        fill(base, t, high - low + 1);
        int64_t shape_b[2] = {rows, 1}, st_b[2] = {below(2) ? 1 : -1, 1};
        char *b_base = guarded_alloc(&memory[1], (size_t)rows * bsize, below(2));
        fill(b_base, bt, rows);
        const void *in[2] = {base - low * (int64_t)size,
                             b_base + (st_b[0] < 0 ? (rows - 1) * (int64_t)bsize : 0)};
        bcg_operand ops[2] = {{"a", t, 2, shape, st}, {"b", bt, 2, shape_b, st_b}};
        const char *expr = exprs[below(7)];
        bcg_context *ctx = bcg_context_new();
        assert_non_null(ctx);
        bcg_kernel *k = NULL;
        bcg_error err;
        assert_int_equal(bcg_compile(ctx, expr, ops, 2, NULL, &k, &err), BCG_OK);
        const char *source = bcg_kernel_source(k);
        bool read_in_place = strstr(source, VEX_SYMBOL "(") && strstr(source, ", row_count);") &&
                             !strstr(source, "in1_tile");
        in_place += read_in_place;
        if (t == bt && dtype_kind_of(t) == KIND_FLOAT && strcmp(expr, "b < a") != 0) {
            float_cases++;
            float_in_place += read_in_place;
        }
        int64_t n = rows * run, shift = below(8);
        size_t out_size = bcg_dtype_size(bcg_kernel_dtype(k));
        char *out = guarded_alloc(&memory[2], (size_t)(n + shift) * out_size, true);
        char *want = malloc((size_t)n * out_size);
        assert_non_null(want);
        evaluate(expr, ops, 2, NULL, want, in);
        assert_int_equal(bcg_run(k, out + shift * (int64_t)out_size, in, &err), BCG_OK);
        /* which NaN an operation on two NaNs gives is not specified
         * (docs/semantics.md): the fused code's operand order may take b's */
        for (int64_t e = 0; e < n && dtype_kind_of(bcg_kernel_dtype(k)) == KIND_FLOAT; e++) {
            char *g = out + (shift + e) * (int64_t)out_size, *w = want + e * (int64_t)out_size;
            if (out_size == 4 ? isnan(*(float *)g) && isnan(*(float *)w)
                              : isnan(*(double *)g) && isnan(*(double *)w))
                memcpy(g, w, out_size);
        }
        if (memcmp(out + shift * (int64_t)out_size, want, (size_t)n * out_size) != 0)
            print_error("%s a %s (%lld, %lld) strides [%lld, %lld], b %s strides [%lld, 1], "
                        "output at +%lld: differs from eval.c\n", expr, bcg_dtype_name(t),
                        (long long)rows, (long long)run, (long long)st[0], (long long)st[1],
                        bcg_dtype_name(bt), (long long)st_b[0], (long long)shift);
        assert_memory_equal(out + shift * (int64_t)out_size, want, (size_t)n * out_size);
        free(want);
        bcg_kernel_free(k);
        bcg_context_free(ctx);
    }
    guarded_free(&memory[0]);
    guarded_free(&memory[1]);
    guarded_free(&memory[2]);
    random_state = saved_state;
    print_message("# one operation over a transposed input and a per-row operand: %d of %d "
                  "read it in place (float trees of one dtype: %d of %d)\n", in_place, count,
                  float_in_place, float_cases);
    /* (46 of 120 before: mixed dtypes' conversions made two operations) */
    if (vex_cpu_ok())
        assert_true(in_place * 3 > count * 2);
}

/* A streaming root in the paired loop (vex.c write_stream_pairs): float
 * and typed trees over runs just past VEX_STREAM_MIN_RUN (the single
 * vectors up to the output's 64-byte line, the pairs, the last single
 * vector, the tail), the output at every element offset from a line,
 * leaves strided and reversed, the ymm pairs, the zmm body and the single
 * loop; bit for bit against eval.c and the microkernels. */
/* where(c, x, y) whose condition is one value along the run (over b, a
 * scalar, and e, one value a row, LAYOUT_SCALARS; so true in some rows,
 * false in others): vex.c's where_branch computes one side.  Random
 * conditions and sides over every dtype, inside random trees, runs past
 * the vectors and to 3000 (single, paired and zmm loops, streaming or
 * not, the output at offsets of 0 to 15 elements, the operands against
 * a faulting page): bit for bit the reference evaluator's and the
 * microkernels'; most of them take the branch. */
static void test_where_branch(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = text_count ? atoi(text_count) / 10 : 300;
    static const char *const invariant_leaves[] = {"b", "e", "b", "e", "b", "e"};
    tally tally = {0};
    int failures = 0;
    count_paired = true;
    for (int i = 0; i < count && failures < 10; i++) {
        text condition = {{0}, 0}, t = {{0}, 0};
        tree_leaves = invariant_leaves;
        typed_condition(&condition, 1 + below(2));
        tree_leaves = all_leaves;
        bool outer = below(2) == 0;
        if (outer) { /* inside an operation: u8(where(...)) + a */
            put(&t, below(2) ? "(a + " : "i32(");
        }
        put(&t, "where(");
        put(&t, condition.s);
        put(&t, ", ");
        typed_tree(&t, below(3));
        put(&t, ", ");
        typed_tree(&t, below(3));
        put(&t, ")");
        if (outer)
            put(&t, ")");
        bcg_dtype first = all_dtypes[below(10)];
        for (int k = 0; k < 3; k++)
            typed_dtypes[k] = below(2) ? first : all_dtypes[below(10)];
        typed_dtypes[3] = BCG_BOOL;
        typed_dtypes[4] = all_dtypes[below(10)];
        static const int64_t runs[] = {1, 7, 31, 33, 63, 64, 65, 127, 129, 1025, 3000};
        int64_t n = runs[below(11)];
        vex_pairing = below(4) == 0 ? 0 : -1;
        vex_zmm = below(3) == 0 ? 0 : -1;
        case_stream = below(2) == 0;
        case_out_offset = below(16);
        if (getenv("BCGEN_VEX_SHOW_ALL"))
            print_message("# %s n %d\n", t.s, (int)n);
        if (!check_case(t.s, typed_dtypes[0], typed_dtypes[4], n, LAYOUT_SCALARS, &tally))
            failures++;
    }
    /* Then a third as many with a, b, d and e read at strides -1, +-2, +-3
     * (LAYOUT_STRIDED: 1 to 6 rows), the condition over the per-row c: the
     * sides read strided leaves (where(c > 5, b + a, c), a reversed: cc /
     * JIT 0.42 -> 0.99).  A stream of its own (the tests after this one
     * draw what they drew before). */
    uint64_t saved_state = random_state;
    random_state = seeded_stream(0x9e3779b97f4a7c15ull);
    int strided = 0, strided_branched = 0;
    for (int i = 0; i < count / 3 && failures < 10; i++) {
        text t = {{0}, 0};
        static const char *const conditions[] = {"c > 3", "(c <= 100) && (c != 0)", "!(c == 1)",
                                                 "bool(c)", "(c < -2.5) || (c >= 40)",
                                                 "logical_xor(c > 0, bool(c))"};
        bool outer = below(2) == 0;
        if (outer)
            put(&t, below(2) ? "(a + " : "i32(");
        put(&t, "where(");
        put(&t, conditions[below(6)]);
        put(&t, ", ");
        typed_tree(&t, below(3));
        put(&t, ", ");
        typed_tree(&t, below(3));
        put(&t, ")");
        if (outer)
            put(&t, ")");
        bcg_dtype first = all_dtypes[below(10)];
        for (int k = 0; k < 3; k++)
            typed_dtypes[k] = below(2) ? first : all_dtypes[below(10)];
        typed_dtypes[3] = BCG_BOOL;
        typed_dtypes[4] = all_dtypes[below(10)];
        static const int64_t runs[] = {33, 63, 64, 65, 127, 129, 1025, 3000};
        int64_t n = runs[below(8)];
        static const int64_t strides[] = {2, -2, 3, -1, -3};
        for (int k = 0; k < 5; k++)
            case_stride[k] = strides[below(5)];
        case_rows = 1 + below(6);
        vex_pairing = below(4) == 0 ? 0 : -1;
        vex_zmm = below(3) == 0 ? 0 : -1;
        case_stream = below(2) == 0;
        case_out_offset = below(16);
        int branched_before = tally.branched;
        if (!check_case(t.s, typed_dtypes[0], typed_dtypes[4], n, LAYOUT_STRIDED, &tally))
            failures++;
        strided++;
        strided_branched += tally.branched > branched_before;
    }
    random_state = saved_state;
    case_rows = 3;
    count_paired = false;
    case_out_offset = 0;
    case_stream = false;
    typed_dtypes[0] = BCG_BOOL;
    vex_pairing = -1;
    vex_zmm = -1;
    print_message("# where on one side: %d cases, %d fused, %d branched (%d paired, %d zmm; %d of "
                  "%d with strided leaves), %d skipped\n", tally.cases, tally.vex, tally.branched,
                  tally.paired, tally.zmm, strided_branched, strided, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count > 0)
        assert_true(tally.branched * 3 > tally.vex && strided_branched * 2 > strided);
}

/* where(N, x, y) with N a number, one value along the run (b, e and
 * sums, products, casts of them): where_branch tested the first byte of
 * N's slot, the whole truth only of a mask or a one-byte value; an f64
 * 3.0, 0.5 or 1.0, an i16 -32768 have a zero first byte (where(f64(b) +
 * a, 7.0, 5.0), a f64 and b bool one value a row, gave 5.0 for 3.0:
 * fuzz-diff seed 7101).  Random numeric conditions over every dtype, the
 * values' specials and extremes (fill), random sides, the paired, zmm and
 * ymm loops; bit for bit eval.c's and the microkernels' (check_case); the
 * one-byte conditions still branch.  A stream of its own. */
static void test_where_branch_numbers(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = (text_count ? atoi(text_count) : 3000) / 5;
    static const char *const numbers[] = {"b", "e", "(b + e)", "(e * b)", "f64(b)", "f32(e)",
                                          "(b - e)", "i16(b)", "u8(e)", "abs(b)", "-e",
                                          "(f64(e) + b)"};
    static const bcg_dtype one_byte[] = {BCG_I8, BCG_U8, BCG_BOOL};
    uint64_t saved_state = random_state;
    random_state = seeded_stream(0x77686572656e756dull);
    tally tally = {0};
    int failures = 0;
    count_paired = true;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        bool outer = below(2) == 0;
        if (outer)
            put(&t, below(2) ? "(a + " : "i32(");
        put(&t, "where(");
        put(&t, numbers[below(sizeof numbers / sizeof numbers[0])]);
        put(&t, ", ");
        typed_tree(&t, below(3));
        put(&t, ", ");
        typed_tree(&t, below(3));
        put(&t, ")");
        if (outer)
            put(&t, ")");
        bcg_dtype first = all_dtypes[below(10)];
        for (int k = 0; k < 3; k++)
            typed_dtypes[k] = below(2) ? first : all_dtypes[below(10)];
        if (below(4) == 0) /* b a one-byte number: its first byte is its value */
            typed_dtypes[1] = one_byte[below(3)];
        typed_dtypes[3] = BCG_BOOL;
        typed_dtypes[4] = below(4) == 0 ? one_byte[below(3)] : all_dtypes[below(10)];
        static const int64_t runs[] = {1, 7, 33, 64, 65, 129, 1025, 3000};
        int64_t n = runs[below(8)];
        vex_pairing = below(4) == 0 ? 0 : -1;
        vex_zmm = below(3) == 0 ? 0 : -1;
        case_stream = below(2) == 0;
        case_out_offset = below(16);
        if (getenv("BCGEN_VEX_SHOW_ALL"))
            print_message("# %s n %d\n", t.s, (int)n);
        if (!check_case(t.s, typed_dtypes[0], typed_dtypes[4], n, LAYOUT_SCALARS, &tally))
            failures++;
    }
    random_state = saved_state;
    count_paired = false;
    case_out_offset = 0;
    case_stream = false;
    typed_dtypes[0] = BCG_BOOL;
    vex_pairing = -1;
    vex_zmm = -1;
    print_message("# where on a number: %d cases, %d fused, %d branched, %d skipped\n",
                  tally.cases, tally.vex, tally.branched, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count > 0)
        assert_true(tally.branched * 40 > tally.vex && tally.vex * 2 > tally.cases);
}

/* Values computed once a run (write_hoisted) that share a subtree with
 * another hoisted value or with the loop's body: where(C, a, where(C, e,
 * 2)), C and the inner where both one value a run.  Each hoisted value is
 * computed with the registers all free again, so a shared value (vex.c
 * shared) kept in a register by one was garbage to the next: the inner
 * where blended by e itself (a i64 [220,17], e i32 [220,1]: every row's
 * result e, not 2).  Random trees of that shape, every dtype, runs 1 to
 * 3000, the paired, zmm and ymm loops; bit for bit eval.c's and the
 * microkernels' (check_case); a stream of its own, as test_strided_rows. */
static void test_hoisted_shared(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = text_count ? atoi(text_count) / 10 : 300;
    static const char *const invariant_leaves[] = {"b", "e", "b", "e", "b", "e"};
    uint64_t saved_state = random_state;
    random_state = seeded_stream(0x2545f4914f6cdd1dull);
    tally tally = {0};
    int failures = 0;
    for (int i = 0; i < count && failures < 10; i++) {
        text c = {{0}, 0}, v = {{0}, 0}, x = {{0}, 0}, y = {{0}, 0}, t = {{0}, 0};
        tree_leaves = invariant_leaves;
        typed_condition(&c, 1 + below(2));
        typed_tree(&v, 1 + below(2));
        tree_leaves = all_leaves;
        typed_tree(&x, below(3));
        typed_tree(&y, below(3));
        const char *parts[4][11] = {
            {"where(", c.s, ", ", x.s, ", where(", c.s, ", ", v.s, ", ", y.s, "))"},
            {"where(", c.s, ", ", x.s, ", ", y.s, ") + u8(", c.s, ")", "", ""},
            {"(", v.s, " + ", x.s, ") * where(", c.s, ", ", v.s, ", ", y.s, ")"},
            {"where(", c.s, ", ", x.s, ", ", v.s, ") - where(", c.s, ", ", y.s, ", 3)"}};
        int form = below(4);
        for (int k = 0; k < 11; k++)
            put(&t, parts[form][k]);
        bcg_dtype first = all_dtypes[below(10)];
        for (int k = 0; k < 3; k++)
            typed_dtypes[k] = below(2) ? first : all_dtypes[below(10)];
        typed_dtypes[3] = BCG_BOOL;
        typed_dtypes[4] = all_dtypes[below(10)];
        static const int64_t runs[] = {1, 7, 17, 31, 33, 64, 65, 127, 1025, 3000};
        int64_t n = runs[below(10)];
        vex_pairing = below(4) == 0 ? 0 : -1;
        vex_zmm = below(3) == 0 ? 0 : -1;
        case_rows = below(2) ? 3 : 40;
        if (!check_case(t.s, typed_dtypes[0], typed_dtypes[4], n, LAYOUT_SCALARS, &tally))
            failures++;
    }
    case_rows = 3;
    typed_dtypes[0] = BCG_BOOL;
    vex_pairing = -1;
    vex_zmm = -1;
    random_state = saved_state;
    print_message("# hoisted and shared: %d cases, %d fused, %d skipped\n", tally.cases,
                  tally.vex, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count > 0)
        assert_true(tally.vex * 3 > tally.cases);
}

static void test_stream_pairs(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = (text_count ? atoi(text_count) : 3000) / 8;
    tally tally = {0};
    int failures = 0;
    count_paired = true;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        bool typed = i % 2 == 1;
        bcg_dtype dt = below(2) ? BCG_F32 : BCG_F64, int_dtype = all_dtypes[below(8)];
        if (typed) {
            typed_tree(&t, 1 + below(4));
            bcg_dtype first = all_dtypes[below(10)];
            for (int k = 0; k < 3; k++)
                typed_dtypes[k] = below(2) ? first : all_dtypes[below(10)];
            typed_dtypes[3] = BCG_BOOL;
            typed_dtypes[4] = int_dtype;
            dt = typed_dtypes[0];
        } else {
            typed_dtypes[0] = BCG_BOOL;
            mixed = below(3) == 0;
            value_tree(&t, 1 + below(4));
            static const bcg_dtype ints[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32};
            int_dtype = ints[below(5)];
        }
        /* (runs of whole lines stream row by row: runs_whole_lines) */
        int64_t n = below(4) ? 1024 + 64 * below(3) : 1024 + below(200);
        static const int64_t strides[] = {-1, 2, -2, -1, 2, 3, -3};
        for (int k = 0; k < 5; k++)
            case_stride[k] = strides[below(7)];
        case_stream = true;
        case_out_offset = below(16);
        int pairing = below(8);
        vex_pairing = pairing == 0 ? 0 : -1;
        vex_zmm = pairing == 1 ? 0 : -1;
        vex_stream_pairs = pairing == 2 ? 0 : -1;
        static const layout lays[] = {LAYOUT_ROWS, LAYOUT_SCALARS, LAYOUT_REVERSED, LAYOUT_STRIDED};
        layout lay = lays[below(4)];
        if (getenv("BCGEN_VEX_SHOW_ALL"))
            print_message("# %s %s %s %s %s %s n %d layout %d offset %d pairing %d\n", t.s,
                          bcg_dtype_name(dt), bcg_dtype_name(typed_dtypes[0]),
                          bcg_dtype_name(typed_dtypes[1]), bcg_dtype_name(typed_dtypes[2]),
                          bcg_dtype_name(int_dtype), (int)n, (int)lay, case_out_offset, pairing);
        if (!check_case(t.s, dt, int_dtype, n, lay, &tally))
            failures++;
    }
    typed_dtypes[0] = BCG_BOOL;
    mixed = false;
    case_stream = false;
    case_out_offset = 0;
    count_paired = false;
    vex_pairing = -1;
    vex_zmm = -1;
    vex_stream_pairs = -1;
    print_message("# streaming pairs: %d cases, %d through the fused vector code, %d "
                  "streaming, %d of them paired (%d zmm), %d skipped\n",
                  tally.cases, tally.vex, tally.streamed, tally.stream_paired, tally.zmm,
                  tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count > 0) /* the paired streaming loop, or this tests nothing */
        assert_true(tally.stream_paired * 4 > tally.cases && tally.streamed * 3 > tally.cases);
}

/* Integer and mixed trees: operands of every dtype (a, b, c; e an
 * integer, d bool), + - * & | ^, unary -, abs, ~, square, minimum,
 * maximum, shifts by literal counts (in range and not), comparisons,
 * where, !, &&, ||, logical_xor, casts to every dtype and literals of many
 * sizes, over runs around every lane count (4, 8, 16, 32), data with
 * each dtype's extremes and floats at the limits of the integer ranges,
 * NaN and infinities; each compared with eval.c bit for bit, fused and
 * with disable_vector_code, as test_random_trees does. */
static void test_typed_trees(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = text_count ? atoi(text_count) : 3000;
    tally tally = {0};
    int failures = 0, strided_cases = 0;
    case_stream = false;
    /* every conversion between floats and integers over data with the
     * limits (the random trees reach a given one rarely) */
    static const bcg_dtype floats[] = {BCG_F32, BCG_F64};
    static const bcg_dtype wide[] = {BCG_I32, BCG_U32, BCG_I64, BCG_U64};
    for (int f = 0; f < 2 && count > 0; f++)
        for (int k = 0; k < 12; k++) {
            /* floats into each integer; i32, u32, i64 and u64 into floats */
            bcg_dtype from = k < 8 ? floats[f] : wide[k - 8];
            const char *name = bcg_dtype_name(k < 8 ? all_dtypes[k] : floats[f]);
            char expr[64];
            snprintf(expr, sizeof expr, "%s(a) - %s(b)", name, name);
            for (int i = 0; i < 5; i++)
                typed_dtypes[i] = i == 3 ? BCG_BOOL : i == 4 ? BCG_I32 : from;
            if (!check_case(expr, from, BCG_I32, 1025, LAYOUT_SCALARS, &tally))
                failures++;
        }
    /* every leaf dtype read in place with a stride of -1, 2 and -2 at
     * every lane count (4, 8, 16, 32: the partner b's size), runs around
     * the vector (3 rows: 2-D tiles, the rows form where runs are whole
     * vectors) */
    static const bcg_dtype partners[] = {BCG_U8, BCG_I16, BCG_F32, BCG_I64};
    int directed = 0, directed_in_place = 0;
    for (int k = 0; k < 10 * 4 * 3 && count > 0 && failures < 10; k++) {
        bcg_dtype leaf = all_dtypes[k % 10], partner = partners[k / 10 % 4];
        static const int64_t strides[] = {-1, 2, -2};
        for (int j = 0; j < 5; j++)
            case_stride[j] = strides[k / 40];
        typed_dtypes[0] = leaf;
        typed_dtypes[1] = typed_dtypes[2] = partner;
        typed_dtypes[3] = BCG_BOOL;
        typed_dtypes[4] = BCG_I8;
        int size = (int)bcg_dtype_size(leaf), widest = (int)bcg_dtype_size(partner);
        int lanes = 32 / (size > widest ? size : widest);
        int64_t n = (int64_t[]){lanes - 1, lanes + 1, 2 * lanes + 3, 100}[below(4)];
        int before = tally.in_place;
        case_stream = below(2) == 0;
        if (!check_case(k % 2 ? "where(d, a, b) - b" : "(a + b) - b", leaf, BCG_I8, n,
                        LAYOUT_STRIDED, &tally))
            failures++;
        directed++;
        directed_in_place += tally.in_place > before;
        if (getenv("BCGEN_VEX_SHOW_DIRECTED"))
            print_message("# %s %s stride %d n %d: %s\n", bcg_dtype_name(leaf),
                          bcg_dtype_name(partner), (int)case_stride[0], (int)n,
                          tally.in_place > before ? "in place" : "gathered or not fused");
    }
    /* every leaf dtype read in place with strides of 3 or more either way
     * (spaced_load: several elements a load, or one, vpinsr; 12 and -33
     * past lower.c's MAX_TILE_STRIDE), at every lane count, against every
     * partner size */
    int spaced = 0, spaced_in_place = 0;
    for (int k = 0; k < 10 * 4 * 3 && count > 0 && failures < 10; k++) {
        bcg_dtype leaf = all_dtypes[k % 10], partner = partners[k / 10 % 4];
        static const int64_t strides[] = {3, -3, 5, 7, -5, 12, -7, 8, -33, 4};
        for (int j = 0; j < 5; j++)
            case_stride[j] = strides[j == 0 ? k / 40 : below(10)];
        if (k >= 40)
            case_stride[0] = strides[1 + below(9)];
        typed_dtypes[0] = leaf;
        typed_dtypes[1] = typed_dtypes[2] = partner;
        typed_dtypes[3] = BCG_BOOL;
        typed_dtypes[4] = BCG_I8;
        int size = (int)bcg_dtype_size(leaf), widest = (int)bcg_dtype_size(partner);
        int lanes = 32 / (size > widest ? size : widest);
        int64_t n = (int64_t[]){lanes - 1, lanes + 1, 2 * lanes + 3, 100}[below(4)];
        int before = tally.in_place;
        case_stream = below(2) == 0;
        vex_pairing = below(4) == 0 ? 0 : -1;
        vex_other_strides = k % 4 == 3 ? 2 : -1; /* (4- and 8-byte leaves gathered) */
        if (!check_case(k % 2 ? "where(d, a, b) - b" : "(a + b) - b", leaf, BCG_I8, n,
                        LAYOUT_STRIDED, &tally))
            failures++;
        vex_other_strides = -1;
        spaced++;
        spaced_in_place += tally.in_place > before;
        if (getenv("BCGEN_VEX_SHOW_DIRECTED"))
            print_message("# %s %s stride %d n %d: %s\n", bcg_dtype_name(leaf),
                          bcg_dtype_name(partner), (int)case_stride[0], (int)n,
                          tally.in_place > before ? "in place" : "gathered or not fused");
    }
    directed += spaced;
    directed_in_place += spaced_in_place;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        typed_tree(&t, 1 + below(4));
        bcg_dtype first = all_dtypes[below(10)];
        for (int k = 0; k < 3; k++) /* often all one dtype: integer trees */
            typed_dtypes[k] = below(2) ? first : all_dtypes[below(10)];
        typed_dtypes[3] = BCG_BOOL;
        typed_dtypes[4] = all_dtypes[below(8)];
        static const int64_t runs[] = {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 65,
                                       1023, 1025};
        int64_t n = below(5) ? runs[below(18)] : 1 + below(3000);
        vex_pairing = below(4) == 0 ? 0 : -1; /* the single loop, or the paired one */
        vex_zmm = below(3) == 0 ? 0 : -1;     /* (ymm pairs, or zmm where the CPU has it) */
        /* strides read in place: -1, +-2, and 3 or more either way (12,
         * -33: past MAX_TILE_STRIDE, tiles for the fused code all the same) */
        static const int64_t strides[] = {-1, 2, -2, -1, 2, -2, 3, 5, -3, 7, -8, 12, -33};
        for (int k = 0; k < 5; k++)
            case_stride[k] = strides[below(13)];
        layout lay = (layout)below(LAYOUT_COUNT);
        strided_cases += lay == LAYOUT_STRIDED;
        case_stream = below(2) == 0;
        if (getenv("BCGEN_VEX_SHOW_ALL"))
            print_message("# %s %s %s %s %s\n", t.s, bcg_dtype_name(typed_dtypes[0]),
                          bcg_dtype_name(typed_dtypes[1]), bcg_dtype_name(typed_dtypes[2]),
                          bcg_dtype_name(typed_dtypes[4]));
        if (!check_case(t.s, typed_dtypes[0], typed_dtypes[4], n, lay, &tally))
            failures++;
    }
    typed_dtypes[0] = BCG_BOOL;
    vex_pairing = -1;
    vex_zmm = -1;
    print_message("# typed trees: %d cases, %d with 2+ tile calls, %d through the fused "
                  "vector code (%d of %d random strided layouts and %d of %d directed ones, "
                  "%d of %d of strides 3 or more, reading in place, %d row by row, %d "
                  "streaming), %d skipped\n",
                  tally.cases, tally.tiled, tally.vex, tally.in_place - directed_in_place,
                  strided_cases, directed_in_place, directed, spaced_in_place, spaced,
                  tally.rows, tally.streamed, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count > 0) { /* most tiled trees are the fused function's */
        assert_true(tally.vex * 10 > tally.tiled * 7);
        assert_true((tally.in_place - directed_in_place) * 5 > strided_cases);
        /* (2-D tiles whose runs end short of a vector gather: the rows
         * form's tail would go through the slots row by row) */
        assert_true(directed_in_place * 2 > directed && tally.rows * 100 > count &&
                    tally.streamed * 200 > count);
        assert_true(spaced_in_place * 3 > spaced * 2);
    }
}

/* How often NEEDLE occurs in HAYSTACK. */
static int occurrences(const char *haystack, const char *needle)
{
    int count = 0;
    for (const char *at = strstr(haystack, needle); at; at = strstr(at + 1, needle))
        count++;
    return count;
}

/* Trees with shared values nested in shared values (vex.c shared(): a
 * value computed once, kept in its register, each use but the last given
 * a copy), a bool among them (a mask, maybe inverted), in where()s,
 * comparisons and casts, every dtype: where(i32(e <= !d) < c, i32(e <=
 * !d), i32(!d)) computed i32(e <= !d) twice (typed_as converts a bool's
 * mask straight into the dtype a use needs, the cast never computed as a
 * node) where count_uses had counted it once, so !d's last counted use
 * consumed its register and the third read the words it had become.
 * Against eval.c bit for bit; on a stream of its own. */
static void test_nested_shared(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = text_count ? atoi(text_count) / 5 : 600;
    uint64_t saved_state = random_state;
    random_state = seeded_stream(0x7c1f5a3e9d2b4c61ull);
    tally tally = {0};
    count_paired = true;
    int failures = 0, nested = 0;
    static const char *const compares[] = {" < ", " <= ", " > ", " >= ", " == ", " != "};
    static const char *const binary[] = {" + ", " - ", " * ", " & ", " | ", " ^ "};
    for (int i = 0; i < count && failures < 10; i++) {
        text c1 = {{0}, 0}, v1 = {{0}, 0}, c2 = {{0}, 0}, root = {{0}, 0};
        /* the bool: an operation (a leaf is read, not kept) */
        switch (below(4)) {
        case 0: put(&c1, "!("); typed_condition(&c1, 0); put(&c1, ")"); break;
        case 1: put(&c1, "("); typed_condition(&c1, 0); put(&c1, below(2) ? " || " : " && ");
                typed_condition(&c1, 0); put(&c1, ")"); break;
        default: put(&c1, "("); typed_tree(&c1, below(2)); put(&c1, compares[below(6)]);
                 typed_tree(&c1, 0); put(&c1, ")"); break;
        }
        /* the value that holds it */
        switch (below(5)) {
        case 0: case 1: /* i32(e <= !d) */
            put(&v1, number_cast()); put(&v1, "(("); typed_tree(&v1, 0);
            put(&v1, compares[below(6)]); put(&v1, c1.s); put(&v1, "))"); break;
        case 2:
            put(&v1, number_cast()); put(&v1, "("); put(&v1, c1.s); put(&v1, ")"); break;
        case 3:
            put(&v1, "("); typed_tree(&v1, 0); put(&v1, binary[below(6)]);
            put(&v1, number_cast()); put(&v1, "("); put(&v1, c1.s); put(&v1, "))"); break;
        default:
            put(&v1, "where("); put(&v1, c1.s); put(&v1, ", "); typed_tree(&v1, 0);
            put(&v1, ", "); typed_tree(&v1, 0); put(&v1, ")"); break;
        }
        /* a condition that holds both */
        put(&c2, "(");
        if (below(2)) {
            put(&c2, v1.s);
            put(&c2, compares[below(6)]);
            typed_tree(&c2, 0);
        } else {
            put(&c2, c1.s);
            put(&c2, below(2) ? " && (" : " || (");
            put(&c2, v1.s);
            put(&c2, compares[below(6)]);
            typed_tree(&c2, 0);
            put(&c2, ")");
        }
        put(&c2, ")");
        if (below(4) == 0) { /* where(i32(e <= !d) < c, i32(e <= !d), i32(!d)) and kin */
            put(&root, "where(");
            put(&root, c2.s);
            put(&root, ", ");
            put(&root, v1.s);
            put(&root, ", ");
            put(&root, number_cast());
            put(&root, "(");
            put(&root, c1.s);
            put(&root, "))");
        } else { /* random trees with the snippets at their leaves: both nested twice */
            nested_value = v1.s;
            nested_conditions[0] = c1.s;
            nested_conditions[1] = c2.s;
            for (int k = 0; k < 50; k++) {
                root = (text){{0}, 0};
                typed_tree(&root, 1 + below(3));
                int values = occurrences(root.s, v1.s);
                if (values >= 2 && occurrences(root.s, c1.s) > values)
                    break;
            }
            nested_value = NULL;
        }
        int values = occurrences(root.s, v1.s);
        nested += values >= 2 && occurrences(root.s, c1.s) > values;
        for (int k = 0; k < 5; k++)
            typed_dtypes[k] = all_dtypes[below(10)];
        typed_dtypes[3] = BCG_BOOL;
        static const int64_t runs[] = {1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 65, 1025};
        int64_t n = below(4) ? runs[below(15)] : 1 + below(2000);
        vex_pairing = below(4) == 0 ? 0 : -1;
        vex_zmm = below(3) == 0 ? 0 : -1;
        static const int64_t strides[] = {-1, 2, -2, 3, -3};
        for (int k = 0; k < 5; k++)
            case_stride[k] = strides[below(5)];
        layout lay = (layout)below(LAYOUT_COUNT);
        case_stream = below(4) == 0;
        if (getenv("BCGEN_VEX_SHOW_ALL"))
            print_message("# %s %s %s %s %s\n", root.s, bcg_dtype_name(typed_dtypes[0]),
                          bcg_dtype_name(typed_dtypes[1]), bcg_dtype_name(typed_dtypes[2]),
                          bcg_dtype_name(typed_dtypes[4]));
        if (!check_case(root.s, typed_dtypes[0], typed_dtypes[4], n, lay, &tally))
            failures++;
    }
    typed_dtypes[0] = BCG_BOOL;
    vex_pairing = -1;
    vex_zmm = -1;
    case_stream = false;
    count_paired = false;
    random_state = saved_state;
    print_message("# nested shared: %d trees (%d with the value twice and the bool outside it "
                  "too), %d run, %d through the fused vector code, %d with a value computed "
                  "once for several uses, %d skipped\n",
                  count, nested, tally.cases, tally.vex, tally.shared, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count > 0) /* (most fused, most of those sharing) */
        assert_true(nested * 10 > count * 9 && tally.vex * 2 > tally.cases &&
                    tally.shared * 3 > tally.vex);
}

/* Trees with f32 exp (test_random_trees' float trees and
 * test_typed_trees' mixed ones, exp drawn among the unary functions, its
 * argument at times times 40), over data with NaN, infinities, subnormals
 * and large values: the fused code against the microkernels bit for bit
 * (the hard lanes recomputed by expf in both), and against eval.c within
 * the ulp bound when exp is the root. */
static void test_exp_trees(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = (text_count ? atoi(text_count) : 3000) / 10;
    tally tally = {0};
    int failures = 0, with = 0;
    with_exp = true;
    for (int i = 0; i < 2 * count && failures < 10; i++) {
        text t = {{0}, 0};
        bool typed = i >= count;
        int64_t n = (int64_t[]){0, 1, 3, 7, 8, 9, 17, 33, 1025, 1 + below(2000)}[below(10)];
        static const int64_t strides[] = {-1, 2, -2, 3};
        for (int k = 0; k < 5; k++)
            case_stride[k] = strides[below(4)];
        case_stream = below(4) == 0;
        vex_pairing = below(4) == 0 ? 0 : -1;
        layout lay = (layout)below(LAYOUT_COUNT);
        bcg_dtype dt = BCG_F32, int_dtype = BCG_I16;
        if (typed) {
            if (below(2))
                exp_call(&t, typed_tree, 1 + below(3));
            else
                typed_tree(&t, 1 + below(3));
            static const bcg_dtype some[] = {BCG_U8, BCG_I16, BCG_I32, BCG_F32, BCG_F64, BCG_I8};
            for (int k = 0; k < 3; k++)
                typed_dtypes[k] = some[below(6)];
            typed_dtypes[3] = BCG_BOOL;
            typed_dtypes[4] = BCG_I8;
            dt = typed_dtypes[0];
            int_dtype = typed_dtypes[4];
        } else {
            mixed = below(3) == 0;
            if (below(2))
                exp_call(&t, value_tree, 1 + below(3));
            else
                value_tree(&t, 1 + below(3));
        }
        if (!strstr(t.s, "exp(") && !strstr(t.s, "log("))
            continue;
        with++;
        if (!check_case(t.s, dt, int_dtype, n, lay, &tally))
            failures++;
        typed_dtypes[0] = BCG_BOOL;
    }
    with_exp = false;
    vex_pairing = -1;
    print_message("# exp trees: %d cases, %d with 2+ tile calls, %d through the fused vector "
                  "code (%d against C library calls, not bit for bit), %d skipped; f64 with "
                  "exp %d, %d fused\n", tally.cases, tally.tiled, tally.exp, tally.libm_off,
                  tally.skipped, tally.f64_exp, tally.f64_exp_fused);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count > 0) /* most of them fused and against the microkernels */
        assert_true(tally.exp * 2 > tally.tiled && tally.exp * 4 > with &&
                    tally.libm_off * 4 < tally.exp &&
                    tally.f64_exp_fused * 4 > tally.f64_exp && tally.f64_exp > 0);
}

/* An f32 exp stored in place into an f64 operand (issue: test_exp_trees'
 * exp(-(where(b <= c, b, e))), a f64, b and c f32, e i8): the expression
 * is f32 (docs/semantics.md: computed in its dtype, converted on store, as
 * NumPy's out=), so f32 precision is right and the microkernels' and the
 * fused polynomial are within the f32 bound of eval.c's libm, not the f64
 * one; check_case compared them with the f64 bound.  The targeted case:
 * the in-place f64 output is the out-of-place f32 output widened, bit for
 * bit, fused and not; then random f32 exp/log trees in place into f64 (and
 * the same trees out of place) through check_case, some of them 1 f32 ulp
 * from libm (tally.widened: accepted only by the f32 bound). */
static void test_exp_widened(void **state)
{
    (void)state;
    uint64_t saved_state = random_state;
    random_state = seeded_stream(0x2545f4914f6cdd1dull);
    const char *expr = "exp(-(where(b <= c, b, e)))";
    enum { N = 301 };
    static double a[N], wide[N];
    static float b[N], c[N], narrow_out[N];
    static int8_t e[N];
    for (int i = 0; i < N; i++) {
        b[i] = (float)(((double)(next() >> 11) / 9007199254740992.0 - 0.5) * 160.0);
        c[i] = (float)(((double)(next() >> 11) / 9007199254740992.0 - 0.5) * 160.0);
        e[i] = (int8_t)(next() % 200 - 100);
    }
    int64_t shape[1] = {N};
    for (int fused = 0; fused < 2; fused++) {
        bcg_operand ops[4] = {{"a", BCG_F64, 1, shape, NULL}, {"b", BCG_F32, 1, shape, NULL},
                              {"c", BCG_F32, 1, shape, NULL}, {"e", BCG_I8, 1, shape, NULL}};
        bcg_options options;
        bcg_options_init(&options);
        options.microkernel_run = 1;
        options.disable_vector_code = !fused;
        bcg_context *ctx = bcg_context_new();
        assert_non_null(ctx);
        bcg_kernel *kernel = NULL;
        bcg_error err;
        const void *inputs[4] = {a, b, c, e};
        assert_int_equal(bcg_compile(ctx, expr, ops + 1, 3, &options, &kernel, &err), BCG_OK);
        assert_int_equal(bcg_kernel_dtype(kernel), BCG_F32);
        assert_int_equal(bcg_run(kernel, narrow_out, inputs + 1, &err), BCG_OK);
        options.inplace = 0;
        assert_int_equal(bcg_compile(ctx, expr, ops, 4, &options, &kernel, &err), BCG_OK);
        assert_int_equal(bcg_kernel_dtype(kernel), BCG_F64);
        for (int i = 0; i < N; i++)
            a[i] = 12345.678901234567; /* (overwritten) */
        assert_int_equal(bcg_run(kernel, a, inputs, &err), BCG_OK);
        for (int i = 0; i < N; i++) {
            wide[i] = (double)narrow_out[i];
            if (memcmp(&a[i], &wide[i], 8) != 0 && !(isnan(a[i]) && isnan(wide[i]))) {
                print_error("%s in place (fused %d): element %d is %a, widened f32 %a\n", expr,
                            fused, i, a[i], wide[i]);
                fail();
            }
        }
        bcg_context_free(ctx);
    }

    /* random trees, f32 computed, f64 a, in place and not */
    tally tally = {0};
    int failures = 0, inplace_cases = 0;
    with_exp = true;
    for (int i = 0; i < 240 && failures < 10; i++) {
        text t = {{0}, 0};
        if (below(3))
            exp_call(&t, typed_tree, 1 + below(3));
        else
            put(&t, (const char *[]){"exp(b)", "exp((b) * 40)", "exp(-(where(b <= c, b, e)))"}[below(3)]);
        static const bcg_dtype some[] = {BCG_F32, BCG_F32, BCG_I8, BCG_I16, BCG_U8};
        typed_dtypes[0] = BCG_F64;
        typed_dtypes[1] = BCG_F32;
        typed_dtypes[2] = some[below(5)];
        typed_dtypes[3] = BCG_BOOL;
        typed_dtypes[4] = BCG_I8;
        int64_t n = (int64_t[]){1, 3, 7, 8, 9, 17, 33, 1025, 1 + below(2000)}[below(9)];
        static const int64_t strides[] = {-1, 2, -2, 3};
        for (int k = 0; k < 5; k++)
            case_stride[k] = strides[below(4)];
        case_stream = below(4) == 0;
        case_out_offset = 0;
        vex_pairing = -1;
        layout lay = below(3) ? LAYOUT_INPLACE : (layout)below(LAYOUT_COUNT);
        int before = tally.cases;
        if (!check_case(t.s, BCG_F64, BCG_I8, n, lay, &tally))
            failures++;
        inplace_cases += lay == LAYOUT_INPLACE && tally.cases > before;
    }
    with_exp = false;
    typed_dtypes[0] = BCG_BOOL;
    random_state = saved_state;
    print_message("# f32 exp into f64: %d cases (%d in place), %d fused, %d within the f32 bound "
                  "only\n", tally.cases, inplace_cases, tally.vex, tally.widened);
    assert_int_equal(failures, 0);
    /* the class occurs (it failed the f64 bound) and is taken in place */
    assert_true(tally.widened > 0 && inplace_cases * 2 > tally.cases);
}

/* The paired loop (two vectors an iteration) of mixed trees whose leaves
 * are read in place reversed or every other element (rdi's second vector:
 * gpr_multiply) and of trees with f32 exp or log (one test of both
 * vectors' hard lanes: rare_test): random trees of 1- and 2-byte integers
 * converted to f32 and f64, minimum, maximum, where and exp/log, over
 * runs of two vectors or more, operands against faulting pages; each
 * bit for bit eval.c's (exp/log the microkernels', as test_exp_trees) and
 * most of the fused ones paired. */
static void test_paired_mixed(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = (text_count ? atoi(text_count) : 3000) / 8;
    tally tally = {0};
    int failures = 0;
    count_paired = true;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        bool typed = i % 3 != 0;
        with_exp = !typed || below(2) == 0;
        if (!typed) { /* a literal over exp: its register's zmm upper half
                         (the wide division) kept across the call */
            mixed = below(3) == 0;
            put(&t, "(");
            put(&t, literals[below(8)]);
            put(&t, " / ");
            exp_call(&t, value_tree, 1 + below(3));
            put(&t, below(2) ? ") + b" : ")");
        } else if (with_exp) {
            exp_call(&t, typed_tree, 1 + below(3));
        } else {
            typed_tree(&t, 1 + below(3));
        }
        with_exp = strstr(t.s, "exp(") || strstr(t.s, "log(");
        static const bcg_dtype some[] = {BCG_U8, BCG_I8, BCG_I16, BCG_U16, BCG_F32, BCG_F64};
        for (int k = 0; k < 3; k++)
            typed_dtypes[k] = typed ? some[below(6)] : BCG_BOOL;
        typed_dtypes[3] = BCG_BOOL;
        typed_dtypes[4] = some[below(4)];
        static const int64_t strides[] = {-1, 2, -2, -1};
        for (int k = 0; k < 5; k++)
            case_stride[k] = strides[below(4)];
        case_stream = false;
        vex_pairing = -1;
        int64_t n = (int64_t[]){65, 97, 130, 257, 64 + below(900)}[below(5)];
        layout lay = typed || below(2) ? LAYOUT_STRIDED : LAYOUT_ROWS;
        if (!check_case(t.s, typed ? typed_dtypes[0] : BCG_F32, typed_dtypes[4], n, lay, &tally))
            failures++;
    }
    with_exp = false;
    count_paired = false;
    typed_dtypes[0] = BCG_BOOL;
    print_message("# paired mixed trees: %d cases, %d through the fused vector code (%d "
                  "reading in place), %d of them paired, %d skipped\n", tally.cases, tally.vex,
                  tally.in_place, tally.paired, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count > 0) /* most fused trees paired, or this tests nothing */
        assert_true(tally.vex * 5 > tally.cases * 2 && tally.paired * 2 > tally.vex &&
                    tally.in_place * 2 > tally.vex);
}

/* Whether the CPU has what vex_zmm -1 asks for (AVX-512F, BW, DQ, VL). */
static bool zmm_cpu_ok(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

/* Leaves read reversed or every other element either way in the zmm body
 * (vex.c's zmm_strided_load: one vperm or vpermt2 across both vectors,
 * its index in zmm16 + i): random typed trees (a third of them products
 * by a bool cast to an integer: mask_product) over operands of every
 * dtype with strides of -1, 2 and -2, runs of two vectors and more, the
 * operands against faulting pages before or after; each bit for bit
 * eval.c's and the microkernels'.  vex_zmm is off a quarter of the time
 * (the ymm pairs, as an AVX2-only CPU runs them: never a zmm body then);
 * where the CPU has AVX-512F, BW, DQ and VL, at least a third of the
 * paired ones (those drawn with vex_zmm on) must be zmm bodies (none was
 * before: a strided leaf's shuffles kept the ymm pairs). */
static void test_zmm_strided(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = (text_count ? atoi(text_count) : 3000) / 10;
    tally tally = {0};
    int failures = 0, zmm_off = 0, paired_on = 0;
    count_paired = true;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        if (i % 3 == 0) { /* a product by a bool cast to an integer (vex.c's mask_product) */
            static const char *const ints[] = {"u8(", "i8(", "i16(", "u16(", "i32(", "i64("};
            text x = {{0}, 0};
            typed_tree(&x, below(3));
            bool first = below(2);
            if (!first) {
                put(&t, x.s);
                put(&t, " * ");
            }
            put(&t, ints[below(6)]);
            typed_condition(&t, 1 + below(2));
            put(&t, ")");
            if (first) {
                put(&t, " * ");
                put(&t, x.s);
            }
        } else {
            typed_tree(&t, 1 + below(3));
        }
        for (int k = 0; k < 3; k++)
            typed_dtypes[k] = all_dtypes[below(10)];
        typed_dtypes[3] = BCG_BOOL;
        typed_dtypes[4] = all_dtypes[below(10)];
        static const int64_t strides[] = {-1, 2, -2};
        for (int k = 0; k < 5; k++)
            case_stride[k] = strides[below(3)];
        case_stream = false;
        vex_pairing = -1;
        vex_zmm = below(4) == 0 ? 0 : -1;
        zmm_off += vex_zmm == 0;
        int64_t n = (int64_t[]){64, 65, 97, 130, 257, 64 + below(900)}[below(6)];
        struct tally before = tally;
        if (!check_case(t.s, typed_dtypes[0], typed_dtypes[4], n, LAYOUT_STRIDED, &tally))
            failures++;
        if (vex_zmm == 0 && tally.zmm > before.zmm) {
            print_error("%s: a zmm body with vex_zmm 0\n", t.s);
            failures++;
        }
        paired_on += vex_zmm != 0 ? tally.paired - before.paired : 0;
    }
    count_paired = false;
    vex_zmm = -1;
    typed_dtypes[0] = BCG_BOOL;
    print_message("# zmm strided trees: %d cases, %d through the fused vector code (%d reading "
                  "in place), %d of them paired, %d as zmm bodies (%d drawn without), %d "
                  "skipped\n", tally.cases, tally.vex, tally.in_place, tally.paired, tally.zmm,
                  zmm_off, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count > 0)
        assert_true(tally.vex * 2 > tally.cases && tally.in_place * 2 > tally.vex &&
                    (!zmm_cpu_ok() || tally.zmm * 3 > paired_on));
}

/* Leaves of stride +-2 in the zmm body read by two loads a whole register
 * apart (vex.c's zmm_index_load, zmm_ahead: the loop's pairs, each with an
 * element after it; a run that ends with a whole pair reads that one with
 * the loads one element closer and the last pair's index): every run
 * length from 1 to 300 (and 1 to 3 rows), so the loop, the last pair, the
 * single vector and the tail each end runs, random typed trees over
 * operands of every dtype with strides of +-2 mostly, +-1 and +-3 among
 * them, in place a quarter of the time, each operand's first or last
 * element against a faulting page (a load a byte past the pair's last
 * element crashes); each bit for bit eval.c's and the microkernels'.
 * Where the CPU has AVX-512F, BW, DQ and VL a stated share of the fused
 * kernels must read a leaf so. */
static void test_zmm_ahead(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = (text_count ? atoi(text_count) : 3000) / 5;
    tally tally = {0};
    int failures = 0;
    uint64_t saved_state = random_state; /* (the tests after it draw what they drew) */
    random_state = seeded_stream(0x2545f4914f6cdd1dull);
    count_paired = true;
    case_stream = false;
    case_inplace_strided = true;
    vex_pairing = -1;
    vex_zmm = -1;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        typed_tree(&t, 1 + below(3));
        for (int k = 0; k < 3; k++)
            typed_dtypes[k] = all_dtypes[below(10)];
        typed_dtypes[3] = BCG_BOOL;
        typed_dtypes[4] = all_dtypes[below(10)];
        static const int64_t strides[] = {2, -2, 2, -2, 2, -2, 1, -1, 3, -3};
        for (int k = 0; k < 5; k++)
            case_stride[k] = strides[below(10)];
        case_rows = 1 + below(3);
        int64_t n = 1 + i % 300;
        layout lay = below(4) == 0 ? LAYOUT_INPLACE : LAYOUT_STRIDED;
        if (!check_case(t.s, typed_dtypes[0], typed_dtypes[4], n, lay, &tally))
            failures++;
    }
    count_paired = false;
    case_inplace_strided = false;
    case_rows = 3;
    typed_dtypes[0] = BCG_BOOL;
    random_state = saved_state;
    print_message("# zmm loads a register apart: %d cases, %d through the fused vector code, "
                  "%d zmm bodies, %d of them reading a leaf so, %d skipped\n", tally.cases,
                  tally.vex, tally.zmm, tally.ahead, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && zmm_cpu_ok() && count > 0)
        assert_true(tally.vex * 2 > tally.cases && tally.ahead * 4 > tally.vex);
}


/* One typed random case over EXPR of N elements (typed_dtypes[0] the
 * result's, [4] the integer operand's): strides of 1, +-2, -1 or 3 a leaf,
 * 1 to 3 rows, zmm on or off, and its layout drawn of 8: in place below
 * INPLACE, per-row leaves below ROWS, scalars below SCALARS, the rest
 * strided; check_case's verdict. */
static bool typed_layout_case(const char *expr, int64_t n, int inplace, int rows, int scalars,
                              tally *tally)
{
    static const int64_t strides[] = {1, 1, 1, 2, -2, -1, 3};
    for (int k = 0; k < 5; k++)
        case_stride[k] = strides[below(7)];
    case_rows = 1 + below(3);
    vex_zmm = below(4) == 0 ? 0 : -1;
    int draw = below(8);
    layout lay = draw < inplace ? LAYOUT_INPLACE : draw < rows ? LAYOUT_ROWS
                 : draw < scalars ? LAYOUT_SCALARS : LAYOUT_STRIDED;
    return check_case(expr, typed_dtypes[0], typed_dtypes[4], n, lay, tally);
}
/* Products of 8-bit values by a literal (vex.c's byte_times_literal: 0,
 * powers of two as vpaddb or a shift and a mask, others in 16-bit lanes
 * by the constant's words, or byte_product's halves where a vector holds
 * 32 bytes): random typed trees cast to i8 or u8 times a literal of every
 * kind (either side), the product kept in bytes or cast to a wider
 * integer or a float (so 8, 16 and 32 lanes a vector), over operands of
 * every dtype per row, broadcast or strided, every run length from 1
 * to 300, in place a quarter of the time, against faulting pages; each
 * bit for bit eval.c's and the microkernels'.  A stated share of the
 * fused kernels must take the path. */
static void test_byte_literal(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = (text_count ? atoi(text_count) : 3000) / 10;
    tally tally = {0};
    int failures = 0;
    uint64_t saved_state = random_state; /* (the tests after it draw what they drew) */
    random_state = seeded_stream(0x853c49e6748fea9bull);
    count_paired = true;
    case_stream = false;
    case_inplace_strided = true;
    vex_pairing = -1;
    for (int i = 0; i < count && failures < 10; i++) {
        static const char *const literals[] = {"0", "1", "2", "4", "8", "64", "128", "3", "5",
                                               "7", "255", "127", "-1", "-3", "-128", "6"};
        static const char *const roots[] = {"", "", "f32(", "f64(", "i16(", "u16(", "i32("};
        static const char *const bytes[] = {"u8(", "i8("};
        const char *root = roots[below(7)], *literal = literals[below(16)];
        text t = {{0}, 0}, x = {{0}, 0};
        typed_tree(&x, below(3));
        put(&t, root);
        bool left = below(2);
        if (left) {
            put(&t, literal);
            put(&t, " * ");
        }
        put(&t, bytes[below(2)]);
        put(&t, x.s);
        put(&t, ")");
        if (!left) {
            put(&t, " * ");
            put(&t, literal);
        }
        if (below(3) == 0) { /* a second product by a literal after */
            put(&t, " * ");
            put(&t, literals[below(16)]);
        }
        if (root[0])
            put(&t, ")");
        bcg_dtype first = all_dtypes[below(10)];
        for (int k = 0; k < 3; k++)
            typed_dtypes[k] = below(2) ? first : all_dtypes[below(10)];
        typed_dtypes[3] = BCG_BOOL;
        typed_dtypes[4] = all_dtypes[below(10)];
        if (!typed_layout_case(t.s, 1 + i % 300, 2, 4, 5, &tally))
            failures++;
    }
    count_paired = false;
    case_inplace_strided = false;
    case_rows = 3;
    vex_zmm = -1;
    typed_dtypes[0] = BCG_BOOL;
    random_state = saved_state;
    print_message("# products of bytes by a literal: %d cases, %d through the fused vector "
                  "code, %d of them taking byte_times_literal, %d skipped\n", tally.cases,
                  tally.vex, tally.byte_literals, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count > 0)
        assert_true(tally.vex * 2 > tally.cases && tally.byte_literals * 2 > tally.vex);
}

/* Float minimums and maximums of a typed tree whose first operand is
 * never NaN (an integer value, converted: vex.c's typed_never_nan) take
 * one vminps or vmaxps without the NaN test: random integer first
 * operands (leaves, trees, casts to an integer or a float) against float
 * second ones holding NaNs, infinities and zeros of both signs, in f32
 * and f64, at the root or under another operation, over every run
 * length from 1 to 300, per row, broadcast, strided or in place, against
 * faulting pages; each bit for bit eval.c's and the microkernels'.  A
 * stated share of the fused kernels must take the path. */
static void test_plain_extremes(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = (text_count ? atoi(text_count) : 3000) / 5;
    tally tally = {0};
    int failures = 0;
    uint64_t saved_state = random_state; /* (the tests after it draw what they drew) */
    random_state = seeded_stream(0x2545f4914f6cdd1dull);
    count_paired = true;
    case_stream = false;
    case_inplace_strided = true;
    static const bcg_dtype integers[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                         BCG_I64, BCG_U64};
    for (int i = 0; i < count && failures < 10; i++) {
        static const char *const firsts[] = {"a", "e", "(a + e)", "(a * 3)", "abs(a)", "-e",
                                             "7", "f32(a)", "f64(e)", "i16(", "u8(", "i32(",
                                             "f32(i8(",
                                             /* (first operands that may be NaN: the test kept) */
                                             "c", "(a + c)", "f32(b)", "(c * e)"};
        static const char *const seconds[] = {"c", "b", "(c * b)", "(b - c)", "-0.0", "c"};
        text t = {{0}, 0}, x = {{0}, 0};
        const char *first = firsts[below(17)];
        bool around = below(3) == 0;
        if (around)
            put(&t, below(2) ? "c * " : "f64(");
        put(&t, below(2) ? "minimum(" : "maximum(");
        put(&t, first);
        if (first[strlen(first) - 1] == '(') { /* an integer cast of a tree */
            typed_tree(&x, below(3));
            put(&t, x.s);
            put(&t, strncmp(first, "f32(i8(", 7) == 0 ? "))" : ")");
        }
        put(&t, ", ");
        put(&t, seconds[below(6)]);
        put(&t, ")");
        if (around && strncmp(t.s, "f64(", 4) == 0)
            put(&t, ")");
        typed_dtypes[0] = integers[below(8)];
        typed_dtypes[4] = integers[below(8)];
        typed_dtypes[1] = below(2) ? BCG_F32 : BCG_F64;
        typed_dtypes[2] = below(3) ? typed_dtypes[1] : below(2) ? BCG_F32 : BCG_F64;
        typed_dtypes[3] = BCG_BOOL;
        if (!typed_layout_case(t.s, 1 + i % 300, 1, 4, 6, &tally))
            failures++;
    }
    count_paired = false;
    case_inplace_strided = false;
    case_rows = 3;
    vex_zmm = -1;
    typed_dtypes[0] = BCG_BOOL;
    random_state = saved_state;
    print_message("# float extremes of a value never NaN: %d cases, %d through the fused vector "
                  "code, %d of them without the NaN test, %d skipped\n", tally.cases, tally.vex,
                  tally.plain_extremes, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count > 0)
        assert_true(tally.vex * 2 > tally.cases && tally.plain_extremes * 2 > tally.vex);
}

/* Conversions in the paired loop, as one zmm body where the CPU has
 * AVX-512 (vex.c's zmm_paired) or as ymm pairs: for every ordered pair
 * of dtypes F -> T, random trees converting operands of F into T (at the
 * root, at a leaf, through the typed trees' own casts), over runs of two
 * vectors and more laid out contiguously, broadcast or per row (and at
 * times strided), operands against faulting pages; each bit for bit
 * eval.c's and the microkernels'.  Where the CPU has AVX-512F, BW and DQ
 * a stated share of the fused ones must be zmm bodies. */
static void test_conversion_trees(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_VEX_CASES");
    int count = (text_count ? atoi(text_count) : 3000) / 1500; /* trees per dtype pair */
    tally tally = {0};
    int failures = 0, zmm_off = 0;
    count_paired = true;
    for (int i = 0; i < 100 * count && failures < 10; i++) {
        bcg_dtype from = all_dtypes[i % 10], to = all_dtypes[i / 10 % 10];
        const char *name = bcg_dtype_name(to);
        text t = {{0}, 0};
        text x = {{0}, 0};
        typed_tree(&x, below(3));
        switch (below(4)) {
        case 0: /* T(tree) */
            put(&t, name);
            put(&t, "(");
            put(&t, x.s);
            put(&t, ")");
            break;
        case 1: /* T(a) OP c */
            put(&t, name);
            put(&t, below(2) ? "(a) * c" : "(a) - c");
            break;
        case 2: /* minimum(T(a OP b), c) */
            put(&t, below(2) ? "minimum(" : "maximum(");
            put(&t, name);
            put(&t, below(2) ? "(a + b), c)" : "(a * 3), c)");
            break;
        default: /* T(tree) + T(b) */
            put(&t, name);
            put(&t, "(");
            put(&t, x.s);
            put(&t, ") + ");
            put(&t, name);
            put(&t, "(b)");
        }
        typed_dtypes[0] = typed_dtypes[1] = from;
        typed_dtypes[2] = to;
        typed_dtypes[3] = BCG_BOOL;
        typed_dtypes[4] = all_dtypes[below(10)];
        static const int64_t strides[] = {-1, 2, -2, 3};
        for (int k = 0; k < 5; k++)
            case_stride[k] = strides[below(4)];
        case_stream = false;
        vex_zmm = below(4) == 0 ? 0 : -1;
        zmm_off += vex_zmm == 0;
        int64_t n = (int64_t[]){64, 65, 97, 130, 257, 64 + below(2000)}[below(6)];
        static const layout lays[] = {LAYOUT_ROWS, LAYOUT_SCALARS, LAYOUT_ROWS, LAYOUT_SCALARS,
                                      LAYOUT_STRIDED};
        if (!check_case(t.s, from, typed_dtypes[4], n, lays[below(5)], &tally))
            failures++;
    }
    count_paired = false;
    vex_zmm = -1;
    typed_dtypes[0] = BCG_BOOL;
    print_message("# conversion trees: %d cases, %d through the fused vector code, %d of them "
                  "paired, %d as zmm bodies (%d drawn without), %d skipped\n", tally.cases,
                  tally.vex, tally.paired, tally.zmm, zmm_off, tally.skipped);
    assert_int_equal(failures, 0);
    bool zmm_cpu = false;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    zmm_cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512dq");
#endif
    if (vex_cpu_ok() && count > 0) /* fused, paired, and where it can be, zmm */
        assert_true(tally.vex * 2 > tally.cases && tally.paired * 2 > tally.vex &&
                    (!zmm_cpu || tally.zmm * 4 > tally.paired));
}

/* ---- the encoder ---- */

/* The fused function of EXPR over OPS (microkernel tiles), from the
 * pipeline itself. */
static const vex_function *function_of_streaming(arena *a, const char *expr,
                                                 const bcg_operand *ops, int count, int stream)
{
    compile *c = arena_alloc(a, sizeof *c);
    assert_non_null(c);
    static bcg_error err;
    c->arena = a;
    c->err = &err;
    bcg_options options;
    bcg_options_init(&options);
    options.microkernel_run = 1;
    options.stream_stores = stream;
    options.unroll_limit = 0; /* loops: not a small kernel's straight-line code */
    compile_request r = {.text = expr, .operands = ops, .operand_count = count,
                         .options = &options, .goal = COMPILE_JIT, .max_source = 1 << 20};
    assert_int_equal(compile_pipeline(c, &r), BCG_OK);
    assert_non_null(c->ir);
    return c->ir->vex;
}

static const vex_function *function_of(arena *a, const char *expr, const bcg_operand *ops,
                                       int count)
{
    return function_of_streaming(a, expr, ops, count, 0);
}

/* LISTING against the golden file PATH (BCGEN_UPDATE_VEX=1 rewrites it). */
static void compare_golden(const char *listing, const char *golden)
{
    if (getenv("BCGEN_UPDATE_VEX")) {
        FILE *out = fopen(golden, "w");
        assert_non_null(out);
        fputs(listing, out);
        fclose(out);
    }
    FILE *in = fopen(golden, "r");
    assert_non_null(in);
    static char want[1 << 16];
    size_t n = fread(want, 1, sizeof want - 1, in);
    want[n] = 0;
    fclose(in);
    if (strcmp(want, listing) != 0) {
        print_error("the disassembly differs from %s (BCGEN_UPDATE_VEX=1 rewrites it):\n%s\n",
                    golden, listing);
        fail();
    }
}

/* objdump's listing of F: "mnemonic operands" a line, addresses and bytes
 * cut, up to the constant pool. */
static char *disassemble(const vex_function *f)
{
    char path[] = "/tmp/bcgen_vex_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, f->code, f->size), (ssize_t)f->size);
    close(fd);
    char command[256];
    snprintf(command, sizeof command, "objdump -D -b binary -m i386:x86-64 %s", path);
    FILE *p = popen(command, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap), line[512];
    assert_non_null(out);
    out[0] = 0;
    bool code = false;
    while (fgets(line, sizeof line, p)) {
        if (strstr(line, "<.data>:")) {
            code = true;
            continue;
        }
        char *tab1 = strchr(line, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
        if (!code || !tab2)
            continue;
        if (strncmp(tab2 + 1, "int3", 4) == 0)
            break; /* the padding before the constant pool */
        /* collapse the runs of spaces objdump aligns with */
        char clean[512];
        size_t n = 0;
        for (const char *s = tab2 + 1; *s && n + 2 < sizeof clean; s++)
            if (!(*s == ' ' && n > 0 && clean[n - 1] == ' '))
                clean[n++] = *s;
        clean[n] = 0;
        if (strncmp(clean, "movabs $0x", 10) == 0) /* (a C function's address: ASLR) */
            n = (size_t)snprintf(clean, sizeof clean, "movabs $ADDRESS%s", strchr(clean, ','));
        if (len + n + 1 < cap) {
            memcpy(out + len, clean, n + 1);
            len += n;
        }
        if (strncmp(clean, "ret", 3) == 0)
            break; /* (the pool follows at once when the code fills its 32 bytes) */
    }
    pclose(p);
    unlink(path);
    return out;
}

static void need_objdump(void);

/* f32 exp in the fused code: the microkernel's polynomial, the test for
 * lanes outside the easy range (vtestps) and the call that recomputes
 * them with every register saved, in the float path's paired loop (one
 * test of both vectors' lanes, the rare code once for each) and in a
 * mixed tree (i16 data). */
static void test_disassembly_exp(void **state)
{
    (void)state;
    need_objdump();
    arena *a = arena_new();
    assert_non_null(a);
    int64_t shape[2] = {4, 100}, row[1] = {100};
    bcg_operand ops[2] = {{"a", BCG_F32, 2, shape, NULL}, {"b", BCG_F32, 1, row, NULL}};
    const vex_function *f = function_of(a, "exp(a * b) + b", ops, 2);
    assert_non_null(f);
    assert_true(f->paired);
    char *listing = disassemble(f);
    bcg_operand ops16[2] = {{"a", BCG_I16, 2, shape, NULL}, {"b", BCG_I16, 1, row, NULL}};
    f = function_of(a, "exp(f32(a * b)) - 3.0", ops16, 2);
    assert_non_null(f);
    char *typed = disassemble(f);
    static const char *const expected[] = {
        "vmaxps", "vminps", "vcvttps2dq", "vpaddd", "vpslld $0x17", "vcmpltps", "vandnps",
        "vcmpunordps", "vblendvps", "vcmpgt_oqps", "vcmple_oqps", "vtestps",
        "je", "push %r11", "and $0xffffffffffffffe0,%rsp", "vmovups %ymm15,0x1e0(%rsp)",
        "movabs $ADDRESS,%rax", "call *%rax", "mov 0x200(%rsp),%rsp", "pop %r11",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!strstr(listing, expected[i]) || !strstr(typed, expected[i])) {
            print_error("no \"%s\" in:\n%s\n%s\n", expected[i], listing, typed);
            fail();
        }
    assert_null(strstr(listing, "(bad)"));
    assert_null(strstr(typed, "(bad)"));
    compare_golden(listing, "tests/unit/vex_disassembly_exp.txt");
    compare_golden(typed, "tests/unit/vex_disassembly_exp_typed.txt");
    f = function_of(a, "log(a * b) + b", ops, 2); /* (log_polynomial) */
    assert_non_null(f);
    char *log = disassemble(f);
    static const char *const expected_log[] = {
        "vpsrld $0x17", "vpsubd", "vorps", "vcmpltps", "vpaddd", "vblendvps", "vcvtdq2ps",
        "vcmpngeps", "vcmpnleps", "vtestps", "movabs $ADDRESS,%rax", "call *%rax",
    };
    for (size_t i = 0; i < sizeof expected_log / sizeof expected_log[0]; i++)
        if (!strstr(log, expected_log[i])) {
            print_error("no \"%s\" in:\n%s\n", expected_log[i], log);
            fail();
        }
    assert_null(strstr(log, "(bad)"));
    compare_golden(log, "tests/unit/vex_disassembly_log.txt");
    bcg_operand ops64[2] = {{"a", BCG_F64, 2, shape, NULL}, {"b", BCG_F64, 1, row, NULL}};
    f = function_of(a, "exp(a * b) + b", ops64, 2); /* (exp_polynomial_f64) */
    assert_non_null(f);
    char *exp64 = disassemble(f);
    static const char *const expected_f64[] = {
        "vmaxpd", "vminpd", "vcmpltpd", "vandnpd", "vcmpgt_oqpd", "vpaddq", "vpsllq $0x34",
        "vtestps", "vcmpunordpd", "vblendvpd", "vcmple_oqpd", "movabs $ADDRESS,%rax",
        "call *%rax",
    };
    for (size_t i = 0; i < sizeof expected_f64 / sizeof expected_f64[0]; i++)
        if (!strstr(exp64, expected_f64[i])) {
            print_error("no \"%s\" in:\n%s\n", expected_f64[i], exp64);
            fail();
        }
    assert_null(strstr(exp64, "(bad)"));
    compare_golden(exp64, "tests/unit/vex_disassembly_exp_f64.txt");
    free(listing);
    free(typed);
    free(log);
    free(exp64);
    arena_free(a);
}

/* Skips the test on a CPU without AVX2 or a machine without objdump. */
static void need_objdump(void)
{
    vex_wide = 1; /* (the listings alike on every machine; they are not run) */
    vex_zmm = 0;
    if (!vex_cpu_ok() || system("objdump --version > /dev/null 2>&1") != 0) {
        print_message("# no AVX2 or no objdump: skipped\n");
        skip();
    }
}

static void test_disassembly(void **state)
{
    (void)state;
    need_objdump();
    arena *a = arena_new();
    assert_non_null(a);
    int64_t shape[2] = {4, 100}, row[1] = {100}, column[2] = {4, 1};
    bcg_operand ops[4] = {{"a", BCG_F32, 2, shape, NULL},
                          {"b", BCG_F32, 1, row, NULL},
                          {"c", BCG_F32, 2, column, NULL},
                          {"d", BCG_BOOL, 2, shape, NULL}};
    const vex_function *f =
        function_of(a, "where(d || a > 1e-5, minimum(a * b, c), -abs(sqrt(b) / a))", ops, 4);
    assert_non_null(f);
    char *listing = disassemble(f);
    const char *golden = "tests/unit/vex_disassembly.txt";
    if (getenv("BCGEN_UPDATE_VEX")) {
        FILE *out = fopen(golden, "w");
        assert_non_null(out);
        fputs(listing, out);
        fclose(out);
    }
    /* every instruction the generator writes decodes, as what it is */
    static const char *const expected[] = {
        "push", "mov %rdi,%r10", "mov %rsi,%r11", "mov (%rdx),%r8", "and $0xfffffffffffffff8,%rcx",
        "xor %eax,%eax", "test %rcx,%rcx", "je", "vmovups (%r8,%rax,4),%ymm",
        "vbroadcastss (%rbx),%ymm7", "vpmovzxbd", "vpcmpeqd",
        /* the paired loop: two vectors an iteration, a load folded into
         * the operation, the divisions and square roots in zmm */
        "and $0xfffffffffffffff0,%rcx", "vmulps 0x20(%r9,%rax,4),%ymm8,%ymm8", "vcmpltps (%r8,%rax,4),%ymm15,%ymm1",
        "vinsertf64x4 $0x1,%ymm9,%zmm1,%zmm1", "vsqrtps (%r9,%rax,4),%zmm1",
        "vdivps (%r8,%rax,4),%zmm1,%zmm1", "vextractf64x4 $0x1,%zmm1,%ymm9",
        "vmovups %ymm8,0x20(%r11,%rax,4)", "add $0x10,%rax",
        "vminps", "vcmpunordps", "vblendvps", "vsqrtps", "vdivps", "vandps", "vxorps",
        "vmovups %ymm", "add $0x8,%rax", "cmp %rcx,%rax", "jb",
        "cmp %r10,%rax", "jae", "sub $0x", "rep movsb", "shl $0x2,%rcx", "vzeroupper", "ret",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!strstr(listing, expected[i])) {
            print_error("no \"%s\" in:\n%s\n", expected[i], listing);
            fail();
        }
    assert_null(strstr(listing, "(bad)"));
    FILE *in = fopen(golden, "r");
    assert_non_null(in);
    static char want[1 << 16];
    size_t n = fread(want, 1, sizeof want - 1, in);
    want[n] = 0;
    fclose(in);
    if (strcmp(want, listing) != 0) {
        print_error("the disassembly differs from %s (BCGEN_UPDATE_VEX=1 rewrites it):\n%s\n",
                    golden, listing);
        fail();
    }
    free(listing);
    arena_free(a);
}

/* The typed forms (integer and mixed trees): loads of 16, 8 and 4 bytes,
 * broadcasts, widening, wrapping and saturating narrowing, conversions,
 * integer comparisons, blends, shifts, 64-bit minimum. */
/* The zmm body (vex_zmm 1: the listing alike on every machine; it is not
 * run): every doubled form and the conversions of its own, named in the
 * listing, and no ymm pair left in the loop; test_conversion_trees runs
 * them. */
/* The zmm body's where() of integers blends by k1 at the comparison's
 * width (vpblendm{b,w,d,q}), no vpmovb2m; vex_zmm_blend_k1 0 (as before)
 * moves the mask into k1 again. */
static void test_disassembly_zmm_blend(void **state)
{
    (void)state;
    need_objdump();
    vex_zmm = 1;
    arena *a = arena_new();
    assert_non_null(a);
    int64_t shape[1] = {1000}, one[1] = {1};
    static const bcg_dtype dtypes[] = {BCG_I8, BCG_I16, BCG_I32, BCG_I64};
    static const char *const blends[] = {"vpblendmb", "vpblendmw", "vpblendmd", "vpblendmq"};
    for (int k = 0; k < 4; k++)
        for (int old = 0; old < 2; old++) {
            bcg_operand ops[5] = {{"a", dtypes[k], 1, shape, NULL}, {"b", dtypes[k], 1, shape, NULL},
                                  {"c", dtypes[k], 1, one, NULL},   {"d", BCG_BOOL, 1, shape, NULL},
                                  {"e", dtypes[k], 1, shape, NULL}};
            vex_zmm_blend_k1 = old ? 0 : -1;
            const vex_function *f = function_of(a, "where(a > b, a, e) + c", ops, 5);
            vex_zmm_blend_k1 = -1;
            assert_non_null(f);
            assert_true(f->paired && f->zmm);
            char *listing = disassemble(f);
            bool has_blend = strstr(listing, old ? "vpblendmb" : blends[k]) != NULL;
            bool moved = strstr(listing, "vpmovb2m") != NULL;
            if (!has_blend || moved != (old == 1)) {
                print_error("%s, vex_zmm_blend_k1 %d: want %s%s in:\n%s\n",
                            bcg_dtype_name(dtypes[k]), old ? 0 : -1, old ? "vpblendmb" : blends[k],
                            old ? " after vpmovb2m" : " and no vpmovb2m", listing);
                fail();
            }
            free(listing);
        }
    vex_zmm = 0;
    arena_free(a);
}

static void test_disassembly_zmm(void **state)
{
    (void)state;
    need_objdump();
    vex_zmm = 1;
    arena *a = arena_new();
    assert_non_null(a);
    int64_t shape[1] = {1000}, one[1] = {1};
    bcg_operand ops[5] = {{"a", BCG_F32, 1, shape, NULL}, {"b", BCG_I16, 1, shape, NULL},
                          {"c", BCG_F32, 1, one, NULL},   {"d", BCG_I64, 1, shape, NULL},
                          {"e", BCG_I32, 1, shape, NULL}};
    static const char *const trees[] = {
        "where(a > c, a / c, f32(b)) + minimum(f32(b), c)",
        "i16(a * c) - i16(e) + b",
        "f64(d) * f64(e) - f64(u8(a))",
    };
    static const char *const expected[] = {
        "vcmpltps", "%k1", "vpmovm2d", "vblendmps", "vdivps", "vpmovsxwd (%r", "vminps",
        "vpmovsdw", "vpmovdw", "vpaddw", "vcvtqq2pd", "vpmaxsd", "vpmovusdb",
    };
    char *listings[3];
    size_t total = 1;
    for (int i = 0; i < 3; i++) {
        const vex_function *f = function_of(a, trees[i], ops, 5);
        assert_non_null(f);
        assert_true(f->paired && f->zmm);
        listings[i] = disassemble(f);
        total += strlen(listings[i]);
    }
    char *all = malloc(total);
    assert_non_null(all);
    all[0] = 0;
    for (int i = 0; i < 3; i++) {
        strcat(all, listings[i]);
        free(listings[i]);
    }
    vex_zmm = 0;
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!strstr(all, expected[i])) {
            print_error("no \"%s\" in:\n%s\n", expected[i], all);
            fail();
        }
    if (strstr(all, "(bad)")) {
        print_error("an instruction objdump does not know:\n%s\n", all);
        fail();
    }
    compare_golden(all, "tests/unit/vex_disassembly_zmm.txt");
    free(all);
    arena_free(a);
}

/* The zmm body's strided leaves (zmm_strided_load): i16 every other
 * element, f32 reversed, f64 every other one backwards, u16 reversed into
 * f32 (32 bytes: the EVEX.256 forms), each one vperm or vpermt2 on the
 * index held in zmm16 + i; against vex_disassembly_zmm_strided.txt. */
static void test_disassembly_zmm_strided(void **state)
{
    (void)state;
    need_objdump();
    vex_zmm = 1;
    arena *a = arena_new();
    assert_non_null(a);
    int64_t shape[1] = {1000}, two[1] = {2}, back[1] = {-1}, back2[1] = {-2};
    bcg_operand ops[4] = {{"a", BCG_I16, 1, shape, two},
                          {"b", BCG_F32, 1, shape, back},
                          {"c", BCG_F64, 1, shape, back2},
                          {"d", BCG_U16, 1, shape, back}};
    static const char *const trees[] = {
        "i16(a > 3) * a + 1",
        "where(b > 0.5, b * b, 2.0)",
        "c * 3.0 - 1.0",
        "f32(d) * b",
    };
    static const char *const expected[] = {
        "vpermt2w", "vpermd", "vpermt2q", "vpermw", "%zmm16", "%zmm17", "%ymm16",
    };
    char *listings[4];
    size_t total = 1;
    for (int i = 0; i < 4; i++) {
        const vex_function *f = function_of(a, trees[i], ops, 4);
        assert_non_null(f);
        assert_true(f->paired && f->zmm && f->strided);
        listings[i] = disassemble(f);
        total += strlen(listings[i]);
    }
    char *all = malloc(total);
    assert_non_null(all);
    all[0] = 0;
    for (int i = 0; i < 4; i++) {
        strcat(all, listings[i]);
        free(listings[i]);
    }
    vex_zmm = 0;
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!strstr(all, expected[i])) {
            print_error("no \"%s\" in:\n%s\n", expected[i], all);
            fail();
        }
    if (strstr(all, "(bad)") || strstr(all, "{bad}")) {
        print_error("an instruction objdump does not know:\n%s\n", all);
        fail();
    }
    compare_golden(all, "tests/unit/vex_disassembly_zmm_strided.txt");
    free(all);
    arena_free(a);
}

static void test_disassembly_typed(void **state)
{
    (void)state;
    need_objdump();
    arena *a = arena_new();
    assert_non_null(a);
    int64_t shape[2] = {4, 100}, row[1] = {100}, column[2] = {4, 1};
    bcg_operand ops[4] = {{"a", BCG_I16, 2, shape, NULL},
                          {"b", BCG_U8, 1, row, NULL},
                          {"c", BCG_F32, 2, column, NULL},
                          {"d", BCG_BOOL, 2, shape, NULL}};
    const vex_function *f = function_of(
        a, "where(d || a > 3, i16(maximum(u8(a * 3) >> 2, b)), i16(f32(a) * c)) - a",
        ops, 4);
    assert_non_null(f);
    char *listing = disassemble(f);
    int64_t wide[1] = {100};
    bcg_operand ops64[3] = {{"a", BCG_I32, 1, wide, NULL},
                            {"b", BCG_I64, 1, wide, NULL},
                            {"c", BCG_U16, 1, wide, NULL}};
    f = function_of(a, "i32(minimum(i64(a) >> 3, b) + i64(f64(c) * 0.5)) != u16(-c)", ops64, 3);
    assert_non_null(f);
    char *listing64 = disassemble(f);
    static const char *const expected[] = {
        "vmovdqu (%r8,%rax,2),%xmm", "vmovq (%r", "vpbroadcastd 0x0(%rbp)", "vpcmpgtw", "vpcmpeqb",
        "vpmovsxbw", "vpmovzxbw", "vpmullw", "vpsrlw $0x2", "vpmaxub", "vcvtdq2ps",
        "vcvttps2dq", "vcmpordps", "vpackssdw", "vpblendvb", "vpsubw", "vpacksswb", "vpand",
        "vmovdqu %xmm", "vpxor",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!strstr(listing, expected[i])) {
            print_error("no \"%s\" in:\n%s\n", expected[i], listing);
            fail();
        }
    static const char *const expected64[] = {
        "vpmovsxdq", "vpsrlq $0x3", "vpsubq", "vpcmpgtq", "vpblendvb", "vextracti128",
        "vshufps $0x88", "vpcmpeqd", "vmovq (%", "vpsubw", "vpmovzxwd", "vmovd %xmm",
        "vcvtdq2pd", "vmulpd", "vcmpordpd", "vpsrlvq", "vpsllvq", "vcmpgepd",
    };
    for (size_t i = 0; i < sizeof expected64 / sizeof expected64[0]; i++)
        if (!strstr(listing64, expected64[i])) {
            print_error("no \"%s\" in:\n%s\n", expected64[i], listing64);
            fail();
        }
    assert_null(strstr(listing, "(bad)"));
    assert_null(strstr(listing64, "(bad)"));
    compare_golden(listing, "tests/unit/vex_disassembly_typed.txt");
    compare_golden(listing64, "tests/unit/vex_disassembly_i64.txt");
    free(listing);
    free(listing64);
    arena_free(a);
}

/* Trees the generator does not write keep the microkernel calls. */
/* The paired loop is the one float trees get (two vectors an iteration,
 * registers allowing), and VEX_PAIRING 0 gives the single loop; its
 * results are test_random_trees' (which draws both). */
static void test_paired(void **state)
{
    (void)state;
    vex_wide = -1; /* (need_objdump's) */
    vex_zmm = -1;
    if (!vex_cpu_ok())
        skip();
    arena *a = arena_new();
    assert_non_null(a);
    int64_t shape[1] = {1000}, one[1] = {1};
    bcg_operand ops[3] = {{"a", BCG_F32, 1, shape, NULL},
                          {"b", BCG_I16, 1, shape, NULL},
                          {"c", BCG_F32, 1, one, NULL}};
    static const char *const trees[] = {"1.5 / abs(a)", "minimum(b, c) * a",
                                        "sqrt(a * a + c) - f32(b)",
                                        "where(a > c, a / c, f32(b))"};
    for (size_t i = 0; i < sizeof trees / sizeof trees[0]; i++) {
        const vex_function *f = function_of(a, trees[i], ops, 3);
        assert_non_null(f);
        assert_true(f->paired);
        vex_pairing = 0;
        f = function_of(a, trees[i], ops, 3);
        vex_pairing = -1;
        assert_non_null(f);
        assert_false(f->paired);
    }
    /* a subtree used twice is computed once (the random trees draw
     * where(x > y, x, z)) */
    const vex_function *f = function_of(a, "where(a / c > f32(b), a / c, c)", ops, 3);
    assert_non_null(f);
    assert_true(f->shared);
    f = function_of(a, "where(a / c > f32(b), a * c, c)", ops, 3);
    assert_non_null(f);
    assert_false(f->shared);
    arena_free(a);
}

/* test_calls_wide: a tree that calls the C library in exp's or log's rare
 * lanes (emit_hard_call: vzeroupper) before the paired loop (the mixed
 * float tree's last whole vector, write_overlap, the rows, whose previous
 * row's tail may call) while the loop's wide divisions read the zmm upper
 * halves of the registers held through it (a divisor 7): rows of 1 to 3,
 * runs not a multiple of the vector, rare arguments at random places and
 * always in the last vector, within the ulp bound of the reference
 * evaluator.  It failed before write_function put the upper halves back
 * after those calls: exp(a) + (a + b) / 7, a f32 b i16 [1003], a[1002] 100,
 * gave inf from element 8 on (the divisor's upper half zeroed).  Only
 * where the CPU has AVX-512F (vex_wide). */
static void test_calls_wide(void **state)
{
    (void)state;
    vex_wide = -1;
    vex_zmm = -1;
    if (!vex_cpu_ok())
        skip();
    static const char *const trees[] = {"exp(a) + (a + b) / 7", "(b - a) / 7 * log(abs(a))",
                                        "exp(a - b) / 7 + a"};
    static const bcg_dtype f32_others[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16};
    static const bcg_dtype f64_others[] = {BCG_I8, BCG_I16, BCG_I32, BCG_U32, BCG_F32};
    guarded memory[3] = {{0}};
    int fused = 0, cases = 48;
    for (int c = 0; c < cases; c++) {
        bool dbl = c % 2 == 1;
        bcg_dtype ta = dbl ? BCG_F64 : BCG_F32;
        bcg_dtype tb = dbl ? f64_others[below(5)] : f32_others[below(4)];
        const char *expr = trees[below(3)];
        int64_t rows = 1 + below(3), run = 17 + below(300);
        if (run % 8 == 0)
            run++;
        int64_t shape[2] = {rows, run}, n = rows * run;
        bcg_operand ops[2] = {{"a", ta, 2, shape, NULL}, {"b", tb, 2, shape, NULL}};
        size_t sa = bcg_dtype_size(ta), sb = bcg_dtype_size(tb);
        char *a = guarded_alloc(&memory[0], (size_t)n * sa, true);
        char *b = guarded_alloc(&memory[1], (size_t)n * sb, true);
        for (int64_t i = 0; i < n; i++) {
            static const double rare[] = {100.0, -120.0, 720.0, -750.0, -720.0, 0.0, -3.0};
            double x = below(8) == 0 ? rare[below(7)] : (below(400) - 200) / 16.0;
            if (i % run == run - 1 - below(3))
                x = rare[below(5)];
            if (dbl)
                memcpy(a + i * (int64_t)sa, &x, sa);
            else {
                float f = (float)x;
                memcpy(a + i * (int64_t)sa, &f, sa);
            }
            int64_t v = below(100) - 50;
            if (tb == BCG_F32) {
                float f = (float)v;
                memcpy(b + i * (int64_t)sb, &f, sb);
            } else if (tb == BCG_U8 || tb == BCG_U16 || tb == BCG_U32) {
                uint64_t u = (uint64_t)(v + 50);
                memcpy(b + i * (int64_t)sb, &u, sb); /* (little-endian) */
            } else {
                memcpy(b + i * (int64_t)sb, &v, sb);
            }
        }
        bcg_context *ctx = bcg_context_new();
        assert_non_null(ctx);
        bcg_kernel *k = NULL;
        bcg_error err;
        assert_int_equal(bcg_compile(ctx, expr, ops, 2, NULL, &k, &err), BCG_OK);
        fused += strstr(bcg_kernel_source(k), VEX_SYMBOL "(") != NULL;
        bcg_dtype t = bcg_kernel_dtype(k);
        assert_int_equal(t, ta);
        char *got = guarded_alloc(&memory[2], (size_t)n * sa, true);
        char *want = malloc((size_t)n * sa);
        assert_non_null(want);
        const void *in[2] = {a, b};
        evaluate(expr, ops, 2, NULL, want, in);
        assert_int_equal(bcg_run(k, got, in, &err), BCG_OK);
        int64_t at = first_difference_in(got, want, t, n, true, true);
        if (at >= 0)
            print_error("%s a %s b %s (%lld, %lld): element %lld differs\n", expr,
                        bcg_dtype_name(ta), bcg_dtype_name(tb), (long long)rows, (long long)run,
                        (long long)at);
        assert_true(at < 0);
        free(want);
        bcg_context_free(ctx);
    }
    for (int i = 0; i < 3; i++)
        guarded_free(&memory[i]);
    print_message("# calls before wide divisions: %d cases, %d fused\n", cases, fused);
    assert_true(fused >= cases / 3); /* (the fused code, not the microkernels: 24 of 48) */
}

static void test_unsupported(void **state)
{
    (void)state;
    vex_wide = -1;
    arena *a = arena_new();
    assert_non_null(a);
    int64_t shape[1] = {100};
    bcg_operand f32[2] = {{"a", BCG_F32, 1, shape, NULL}, {"b", BCG_F32, 1, shape, NULL}};
    bcg_operand f64[2] = {{"a", BCG_F64, 1, shape, NULL}, {"b", BCG_F64, 1, shape, NULL}};
    bcg_operand i32[2] = {{"a", BCG_I32, 1, shape, NULL}, {"b", BCG_I32, 1, shape, NULL}};
    assert_null(function_of(a, "tan(a) + b", f32, 2));
    assert_null(function_of(a, "log(a) + b", f64, 2)); /* (f64 log: the C library's) */
    if (vex_cpu_ok()) /* (f64 exp: emit_exp_f64) */
        assert_non_null(function_of(a, "exp(a) + b", f64, 2));
    assert_null(function_of(a, "a // b + b", i32, 2)); /* integer division */
    if (vex_cpu_ok())
        assert_non_null(function_of(a, "a + b * 2", i32, 2));
    assert_null(function_of(a, "a < b", f32, 2)); /* a bool root */
    if (vex_cpu_ok())
        assert_non_null(function_of(a, "a * b + 1", f32, 2));
    assert_null(function_of(a, "a * b", f32, 2)); /* one operation: its microkernel */
    arena_free(a);
}

/* lower.c strided_widening: a tree that writes more bytes an element than
 * it reads, a leaf strided or reversed, stores plainly though the output
 * passes the cache; contiguous leaves, or as many bytes read as written,
 * stream. */
static void test_stream_widening(void **state)
{
    (void)state;
    if (!vex_cpu_ok())
        skip();
    arena *a = arena_new();
    assert_non_null(a);
    static int64_t shape[2] = {2, 4096}, reversed[2] = {4096, -1}, even[2] = {8192, 2};
    static const struct {
        const char *expr;
        bcg_dtype dtype;
        int64_t *strides;
        bool stream;
    } cases[] = {
        {"f32(a) * 0.5 + 1.0", BCG_U8, reversed, false},
        {"f32(a) * 0.5 + 1.0", BCG_U8, even, false},
        {"f32(a) * 0.5 + 1.0", BCG_U8, NULL, true},
        {"f64(a) * 2.0 - 1.0", BCG_I16, even, false},
        {"f64(a) * 2.0 - 1.0", BCG_I16, NULL, true},
        {"a * 0.5 + 1.0", BCG_F32, reversed, true},
        {"f64(a) * 2.0 - 1.0", BCG_F32, even, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bcg_operand ops[1] = {{"a", cases[i].dtype, 2, shape, cases[i].strides}};
        const vex_function *f = function_of_streaming(a, cases[i].expr, ops, 1, 1);
        if (!f || f->stream != cases[i].stream) {
            print_error("%s over %s: %s\n", cases[i].expr, bcg_dtype_name(cases[i].dtype),
                        f ? "streaming differs" : "not fused");
            fail();
        }
    }
    arena_free(a);
}

/* Strided leaves read in place and a streaming root: a reversed f32 (vpermd),
 * one of stride -2 (vshufps, vpermd), one of stride 2 (vshufps, vpermq), a
 * reversed i16 (vpshufb, staged in its slot, widened) and the root stored
 * with vmovntps after the peel; the tail copies with movs. */
static void test_disassembly_strided(void **state)
{
    (void)state;
    need_objdump();
    arena *a = arena_new();
    assert_non_null(a);
    int64_t shape[2] = {4, 2000}, reversed[2] = {2000, -1}, back2[2] = {8000, -2},
            even[2] = {4000, 2};
    bcg_operand ops[4] = {{"a", BCG_F32, 2, shape, reversed},
                          {"b", BCG_F32, 2, shape, back2},
                          {"c", BCG_F32, 2, shape, even},
                          {"e", BCG_I16, 2, shape, reversed}};
    const vex_function *f = function_of_streaming(a, "a * b + c", ops, 4, 1);
    assert_true(f && f->stream); /* a tree with temporaries streams too */
    f = function_of_streaming(a, "a + b", ops, 4, 1);
    assert_non_null(f);
    assert_true(f->stream && f->strided);
    char *listing = disassemble(f);
    f = function_of(a, "(a * b + c) / e", ops, 4);
    assert_non_null(f);
    assert_true(!f->stream && f->strided);
    char *second = disassemble(f);
    /* the rows form: a reversed x and a per-row m read in place row by row,
     * the masked tail (vmaskmovps, the reversed mask for x) */
    int64_t short_rows[2] = {50, 20}, short_reversed[2] = {24, -1}, per_row[2] = {50, 1};
    bcg_operand row_ops[2] = {{"x", BCG_F32, 2, short_rows, short_reversed},
                              {"m", BCG_F32, 2, per_row, NULL}};
    f = function_of(a, "(x - m) * x", row_ops, 2);
    assert_non_null(f);
    assert_true(f->rows && f->strided);
    char *third = disassemble(f);
    size_t second_length = strlen(second);
    second = realloc(second, second_length + strlen(third) + 8);
    assert_non_null(second);
    strcpy(second + second_length, "----\n");
    strcat(second, third);
    free(third);
    static const char *const expected[] = {
        "imul $0xfffffffffffffffc,%rax,%rdi", "vpermd", "vshufps $0xd8", "vpermq $0xd8",
        "vmovntps %ymm", "cmova", "vpshufb", "vpmovsxwd", "movsw", "movsl",
        "vmaskmovps -0x1c(%rdi)", "vmaskmovps %ymm", "vpcmpgtd", "vpbroadcastd %xmm0,%ymm0",
        "vbroadcastss (%r9),%ymm",
    };
    size_t length = strlen(listing);
    listing = realloc(listing, length + strlen(second) + 16);
    assert_non_null(listing);
    strcpy(listing + length, "----\n");
    strcat(listing, second);
    free(second);
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!strstr(listing, expected[i])) {
            print_error("no \"%s\" in:\n%s\n", expected[i], listing);
            fail();
        }
    assert_null(strstr(listing, "(bad)"));
    compare_golden(listing, "tests/unit/vex_disassembly_strided.txt");
    free(listing);
    arena_free(a);
}

/* The typed path's strided leaves read in place: 32 bytes of stride 2
 * (two loads, vpand, vpsrlw, vpackuswb, vpermq), 8 of stride 2 (vmovq
 * twice, vshufps, vpshufb), words of stride -2 (vpsrld, vpackusdw,
 * reversed by vpshufb), dwords reversed (vpermd), the f32 path's
 * converted i16 of stride 2 (staged in its slot), a typed tree in the
 * rows form, and a typed root streamed (f64 of f32 leaves, vmovntdq). */
static void test_disassembly_typed_strided(void **state)
{
    (void)state;
    need_objdump();
    arena *a = arena_new();
    assert_non_null(a);
    int64_t shape[1] = {3000}, two[1] = {2}, back2[1] = {-2}, back[1] = {-1};
    int64_t rows[2] = {50, 32}, reversed[2] = {40, -1}, per_row[2] = {50, 1};
    bcg_operand narrow[3] = {{"a", BCG_I8, 1, shape, two},
                             {"b", BCG_I16, 1, shape, back2},
                             {"c", BCG_I32, 1, shape, back}};
    bcg_operand wide[3] = {{"a", BCG_I16, 1, shape, two},
                           {"b", BCG_I64, 1, shape, NULL},
                           {"c", BCG_I32, 1, shape, back}};
    bcg_operand mixed[2] = {{"a", BCG_I16, 1, shape, two}, {"b", BCG_F32, 1, shape, NULL}};
    bcg_operand row_ops[2] = {{"x", BCG_I16, 2, rows, reversed},
                              {"m", BCG_I16, 2, per_row, NULL}};
    bcg_operand cast_out[2] = {{"a", BCG_F32, 1, shape, back}, {"b", BCG_F32, 1, shape, NULL}};
    static const char *const exprs[] = {"u8(a + a) + u8(a)", "i8(a + a) + i8(b > 7) + i8(c)",
                                        "(a + b) * i64(c)", "(f32(a) - b) * b", "(x - m) * x",
                                        "f64(a * b)"};
    const bcg_operand *ops[] = {narrow, narrow, wide, mixed, row_ops, cast_out};
    static const int counts[] = {3, 3, 3, 2, 2, 2};
    static char all[1 << 16];
    size_t length = 0;
    for (int i = 0; i < 6; i++) { /* (the last: a typed root streamed, vmovntdq) */
        const vex_function *f = function_of_streaming(a, exprs[i], ops[i], counts[i], i == 5);
        assert_true(f && f->strided && f->typed == (i != 3) && f->rows == (i == 4) &&
                    f->stream == (i == 5));
        char *listing = disassemble(f);
        length += (size_t)snprintf(all + length, sizeof all - length, "%s%s", i ? "----\n" : "",
                                   listing);
        assert_true(length < sizeof all);
        free(listing);
    }
    static const char *const expected[] = {
        "vpackuswb %ymm", "vpsrlw $0x8", "vpermq $0xd8", "vpsrld $0x10", "vpackusdw", "vpshufb",
        "vpermd", "vshufps $0x44", "vmovq (%rdi)", "vmovq 0x6(%rdi)", "movsw", "vmovntdq %ymm",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!strstr(all, expected[i])) {
            print_error("no \"%s\" in:\n%s\n", expected[i], all);
            fail();
        }
    assert_null(strstr(all, "(bad)"));
    compare_golden(all, "tests/unit/vex_disassembly_typed_strided.txt");
    arena_free(a);
}

/* Leaves of strides of 3 or more read in place (spaced_load): i8 of
 * stride 3 (16-byte loads in pairs, vinserti128 from memory, vpshufb,
 * vpor; not under an 8-bit multiplication: vex_reads_stride), i16 of
 * stride -5 (two words a load), f32 of stride 5 and f64 of
 * stride -3 (one element a load: vmovd/vmovq, vpinsrd/q, vinserti128),
 * u8 of stride 7 in an f64 tree (staged in its slot, widened), a typed
 * tree of stride 3 in the rows form; the tail copies with movs. */
static void test_disassembly_spaced(void **state)
{
    (void)state;
    need_objdump();
    arena *a = arena_new();
    assert_non_null(a);
    int64_t shape[1] = {3000}, three[1] = {3}, back5[1] = {-5}, five[1] = {5}, back3[1] = {-3},
            seven[1] = {7};
    int64_t rows[2] = {50, 40}, row_strides[2] = {200, 3}, per_row[2] = {50, 1};
    bcg_operand bytes[2] = {{"a", BCG_I8, 1, shape, three}, {"b", BCG_I8, 1, shape, NULL}};
    bcg_operand words[2] = {{"a", BCG_I16, 1, shape, back5}, {"b", BCG_I16, 1, shape, NULL}};
    bcg_operand singles[2] = {{"a", BCG_F32, 1, shape, five}, {"b", BCG_F32, 1, shape, NULL}};
    bcg_operand doubles[3] = {{"a", BCG_F64, 1, shape, back3}, {"b", BCG_F64, 1, shape, NULL},
                              {"c", BCG_U8, 1, shape, seven}};
    bcg_operand row_ops[2] = {{"x", BCG_I16, 2, rows, row_strides},
                              {"m", BCG_I16, 2, per_row, NULL}};
    static const char *const exprs[] = {"(a + b) - b", "(a + b) - b", "(a + b) * b",
                                        "(a + b) * c", "(x - m) * x"};
    const bcg_operand *ops[] = {bytes, words, singles, doubles, row_ops};
    static const int counts[] = {2, 2, 2, 3, 2};
    static char all[1 << 16];
    size_t length = 0;
    for (int i = 0; i < 5; i++) {
        const vex_function *f = function_of(a, exprs[i], ops[i], counts[i]);
        assert_true(f && f->strided && f->typed == (i < 2 || i == 4) && f->rows == (i == 4));
        char *listing = disassemble(f);
        length += (size_t)snprintf(all + length, sizeof all - length, "%s%s", i ? "----\n" : "",
                                   listing);
        assert_true(length < sizeof all);
        free(listing);
    }
    static const char *const expected[] = {
        "vinserti128 $0x1,0x", "vpshufb", "vpor %ymm", "vpinsrd $0x1", "vpinsrq $0x1",
        "vinserti128 $0x1,%xmm", "vpmovzxbd", "movsb", "movsw",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!strstr(all, expected[i])) {
            print_error("no \"%s\" in:\n%s\n", expected[i], all);
            fail();
        }
    assert_null(strstr(all, "(bad)"));
    compare_golden(all, "tests/unit/vex_disassembly_spaced.txt");
    arena_free(a);
}

int main(void)
{
    random_state = seeded_stream(random_state);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_trees),
        cmocka_unit_test(test_typed_trees),
        cmocka_unit_test(test_nested_shared),
        cmocka_unit_test(test_where_branch),
        cmocka_unit_test(test_where_branch_numbers),
        cmocka_unit_test(test_strided_rows),
        cmocka_unit_test(test_strided_copy_streaming),
        cmocka_unit_test(test_literals_converted),
        cmocka_unit_test(test_gathered_output_broadcast),
        cmocka_unit_test(test_inplace_rows),
        cmocka_unit_test(test_narrow_scattered_rows),
        cmocka_unit_test(test_per_row_one_operation),
        cmocka_unit_test(test_hoisted_shared),
        cmocka_unit_test(test_stream_pairs),
        cmocka_unit_test(test_stream_widening),
        cmocka_unit_test(test_exp_trees),
        cmocka_unit_test(test_exp_widened),
        cmocka_unit_test(test_disassembly_exp),
        cmocka_unit_test(test_disassembly),
        cmocka_unit_test(test_disassembly_typed),
        cmocka_unit_test(test_disassembly_strided),
        cmocka_unit_test(test_paired),
        cmocka_unit_test(test_paired_mixed),
        cmocka_unit_test(test_zmm_strided),
        cmocka_unit_test(test_zmm_ahead),
        cmocka_unit_test(test_byte_literal),
        cmocka_unit_test(test_plain_extremes),
        cmocka_unit_test(test_conversion_trees),
        cmocka_unit_test(test_disassembly_zmm),
        cmocka_unit_test(test_disassembly_zmm_blend),
        cmocka_unit_test(test_disassembly_zmm_strided),
        cmocka_unit_test(test_disassembly_typed_strided),
        cmocka_unit_test(test_disassembly_spaced),
        cmocka_unit_test(test_calls_wide),
        cmocka_unit_test(test_unsupported),
    };
    if (getenv("BCGEN_VEX_ONLY")) /* one test by name (a pattern: test_nested*) */
        cmocka_set_test_filter(getenv("BCGEN_VEX_ONLY"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
