/* test_small.c - small kernels as straight-line vector code (vex.c,
 * vex_build_small).
 *
 * test_random_small: 1500 seeded random trees of the operations vex.c writes
 * (+ - * / unary -, abs, sqrt, square, reciprocal, minimum, maximum,
 * comparisons, !, &&, ||, logical_xor, where, literals) in f32 and f64,
 * over integer operands converted on loading and bool conditions, with
 * outputs of 1 to 1024 elements of rank 1 to 5 (sizes around the vector
 * width), operands broadcast along any dimensions, strided, reversed or
 * transposed, written in place or into a strided, reversed or transposed
 * output view.  Every buffer sits against a page that faults when touched
 * (after its end or before its start), so a read or write outside the
 * operands' elements crashes the test.  Each case is run through the small
 * function, through disable_vector_code (tcc's code) and through the
 * reference evaluator, compared bit for bit (any NaN equals any NaN), and
 * the whole output span is compared so that no gap between strided
 * elements is written.  The test counts the kernels whose source calls
 * bcg_vex_small and fails when too few do.
 *
 * test_random_typed_small: the same cases for integer and mixed trees
 * (vex.c's typed path): operands of every integer dtype, bool, f32 and
 * f64, casts between them, bitwise operations, shifts, comparisons, logic
 * and where; it fails when fewer than 80% of them (or none of a rank) take
 * the small function.
 *
 * test_random_transcendental_small: exp, log, sin, cos and tanh of such
 * trees (in f64, their microkernels called on a buffer), f64 bit for bit,
 * f32 within compare.h's tolerance.
 *
 * test_random_hoisted_small: a transcendental of per-row operands (c and e
 * broadcast along the innermost dimensions) in a random tree: computed once
 * per value (vex.c, small_hoist), bit for bit, most cases hoisting.
 *
 * test_small_form: the form and the IR step explain shows, and that
 * disable_vector_code, reductions and unsupported trees keep tcc's code. */
/* internal.h comes before cmocka.h: cmocka defines a fail() macro. */
#include "internal.h"
#include "kir.h"
#include "vex.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compare.h"

static uint64_t random_state = 0x2545f4914f6cdd1dull;

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

static void value_tree(text *t, int depth);

static void condition_tree(text *t, int depth)
{
    static const char *const compares[] = {" < ", " <= ", " > ", " >= ", " == ", " != "};
    int pick = depth <= 0 ? below(2) : below(5);
    if (pick == 0) {
        put(t, "d");
    } else if (pick <= 2) {
        put(t, "(");
        value_tree(t, depth - 1);
        put(t, compares[below(6)]);
        value_tree(t, depth - 1);
        put(t, ")");
    } else if (pick == 3) {
        put(t, below(2) ? "!(" : "logical_xor(d, ");
        condition_tree(t, depth - 1);
        put(t, ")");
    } else {
        put(t, "(");
        condition_tree(t, depth - 1);
        put(t, below(2) ? " && " : " || ");
        condition_tree(t, depth - 1);
        put(t, ")");
    }
}

static void value_tree(text *t, int depth)
{
    static const char *const leaves[] = {"a", "b", "c", "a", "b", "c", "a", "b", "c",
                                         "e", "f32(e)", "f64(e)"};
    static const char *const literals[] = {"0.5", "-2", "3", "1e-5", "0", "-0.0", "7"};
    static const char *const binary[] = {" + ", " - ", " * ", " / "};
    static const char *const unary[] = {"-", "abs", "sqrt", "square", "reciprocal"};
    int pick = depth <= 0 ? below(2) : t->n == 0 ? 2 + below(7) : below(9);
    if (pick == 0) {
        put(t, leaves[below(12)]);
    } else if (pick == 1) {
        put(t, below(4) ? leaves[below(12)] : literals[below(7)]);
    } else if (pick <= 4) {
        put(t, "(");
        value_tree(t, depth - 1);
        put(t, binary[below(4)]);
        value_tree(t, depth - 1);
        put(t, ")");
    } else if (pick == 5) {
        put(t, unary[below(5)]);
        put(t, "(");
        value_tree(t, depth - 1);
        put(t, ")");
    } else if (pick == 6) {
        put(t, below(2) ? "minimum(" : "maximum(");
        value_tree(t, depth - 1);
        put(t, ", ");
        value_tree(t, depth - 1);
        put(t, ")");
    } else {
        put(t, "where(");
        condition_tree(t, depth - 1);
        put(t, ", ");
        value_tree(t, depth - 1);
        put(t, ", ");
        value_tree(t, depth - 1);
        put(t, ")");
    }
}

/* ---- random integer and mixed trees (vex.c's typed path) ---- */

static void typed_tree(text *t, int depth);

static void typed_condition(text *t, int depth)
{
    static const char *const compares[] = {" < ", " <= ", " > ", " >= ", " == ", " != "};
    int pick = depth <= 0 ? 0 : below(6);
    if (pick == 0) {
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
        bool call = below(3) == 0;
        put(t, call ? "logical_xor(" : "(");
        typed_condition(t, depth - 1);
        put(t, call ? ", " : below(2) ? " && " : " || ");
        if (below(2))
            typed_condition(t, depth - 1);
        else
            typed_tree(t, depth - 1); /* a number as a condition: != 0 */
        put(t, ")");
    }
}

static void typed_tree(text *t, int depth)
{
    static const char *const leaves[] = {"a", "b", "c", "e", "a", "b"};
    static const char *const numbers[] = {"0", "1", "-1", "5", "7", "2", "127", "-128", "255",
                                          "300", "65535", "-32768", "2147483647", "0.5", "-2.5",
                                          "3e9", "1e-3", "100000"};
    static const char *const binary[] = {" + ", " - ", " * ", " & ", " | ", " ^ ", " + ", " - "};
    static const char *const unary[] = {"-", "abs", "~", "square", "+"};
    static const char *const casts[] = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64",
                                        "f32", "f64", "bool"};
    static const char *const counts[] = {"0", "1", "3", "7", "8", "15", "31", "33", "63", "-1"};
    int pick = depth <= 0 ? below(2) : t->n == 0 ? 2 + below(10) : below(12);
    if (pick == 0) {
        put(t, leaves[below(6)]);
    } else if (pick == 1) {
        put(t, below(2) ? leaves[below(6)] : numbers[below(18)]);
    } else if (pick <= 3) {
        put(t, "(");
        typed_tree(t, depth - 1);
        put(t, binary[below(8)]);
        typed_tree(t, depth - 1);
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

/* ---- data and guarded buffers ---- */

/* Whether the case being drawn is a typed one (fill draws the limits of
 * float to integer conversions too). */
static bool typed_case;

/* Whether the case being drawn has an f32 transcendental at its root (the
 * microkernels' polynomials: compared within compare.h's tolerance). */
static bool tolerant_case;

/* Whether the case being drawn is the flat form's (vex.c, vex_build_flat):
 * short innermost runs (1 to 15) under more rows than a small kernel takes
 * (1025 to 8192 elements), each operand whole, a row repeated every row
 * (periodic), one value a row (expanded), or drawn as the others are. */
static bool flat_case;

/* Whether the case is the flat form's over four or five dimensions (vex.c,
 * flat_rows_loop: a row of the loops after the split one): the innermost
 * 2 to 15, the next 2 to 10, the others 1 to 40, 1025 to 8192 elements,
 * the operands drawn as flat_case's. */
static bool flat_loops_case;

/* Whether the case is the flat form's under two level loops or more
 * (vex.c, flat_split: the output's rows over the loops after a split at
 * loop 2 or further in): five dimensions, the innermost 2 to 8, the next
 * 2 to 4, the one before 65 to 300 (rows over the three of more than
 * 256), the outer two 2 to 6, 1025 to 16384 elements, the operands
 * broadcast along half their dimensions at random; run_kernel sets
 * last_split to the flat form's split loop (-1: not the flat form). */
static bool flat_levels_case;
static int last_split;

/* Whether the case is the flat form's with transcendentals
 * (test_random_flat_functions): run_kernel counts the cases that take
 * the flat form with them (flat_functions_taken), of those the ones
 * computing fewer results than elements (flat_functions_hoisted: once
 * before the loops) and the others (every body); flat_functions_exact:
 * the flat form's results compared bit for bit (the C library's f32
 * functions and the f64 sin, cos, tanh microkernels). */
static bool flat_functions_case, flat_functions_exact;
static int flat_functions_taken, flat_functions_hoisted;
static int flat_functions_elements; /* (the others left in tcc's per-element code) */
/* the last kernel run_kernel asked about computes an f32 function by the
 * microkernels' polynomial (vex_function.polynomials): not the C library's
 * bits, compared within the tolerance */
static bool last_polynomials;
/* the cases taking the flat form with such functions in place of the tiles */
static int flat_functions_polynomial;
/* operand c one value a row (or a plane) and a, b, e strided at times
 * (test_flat_few_values) */
static bool few_values_case;

/* Whether the case is the flat form's with fewer rows than a whole number
 * of vectors takes (vex.c, flat_plan: all the rows one body, its last
 * vector partial) and runs past 15 (VEX_FLAT_MAX_RUN 40): odd runs of 3
 * to 15 or runs of 16 to 40 (over one or two loops) under 2 to 5 rows
 * under a loop of up to 700, 1025 to 8192 elements, the operands drawn as
 * flat_case's; flat_whole_taken counts the kernels whose flat body is not
 * a whole number of vectors, flat_long_taken the flat ones of runs past
 * 15. */
static bool flat_whole_case;
static int flat_whole_taken, flat_long_taken, flat_hoisted;
static int flat_hoisted_functions; /* ... values once a plane and functions in buffers both */

/* With flat_whole_case: operands b, c and e one value a plane (the first
 * dimension's), d periodic or one value a row (the rows stay a loop of
 * their own), for the values the flat form's typed tree computes once
 * before its innermost level loop (vex.c small_mark_hoisted). */
static bool flat_hoist_case;

/* Whether the case is of medium runs (65 to 512) under rows, integer
 * trees whose per-row operands the fused function's rows form reads in
 * place (lower.c, medium_rows_in_place); what run_kernel looks for in the
 * kernel's source as the form taken. */
static bool medium_case;

/* Whether the case is of short runs (2 to 7) in rows of fewer than 16
 * elements (8 to 15), 1025 to 8192 elements in all: an f32 function that
 * varies along the runs takes 2-D tiles of them (lower.c,
 * vectorised_function_along_run). */
static bool short_case;
static const char *taken_marker = VEX_SMALL_SYMBOL "(";

/* Whether the case is of per-row subtrees (test_random_hoisted_small):
 * c and e broadcast along the innermost dimension or two, the small
 * function compared bit for bit even where tcc's code is within the
 * tolerance; run_kernel then adds the small function's transcendental
 * results computed and per element (vex_function) to these. */
static bool hoist_case;
static int64_t hoist_computed, hoist_per_element;
static int hoist_hoisted, hoist_subtrees;

static void fill(void *buffer, bcg_dtype t, int64_t count)
{
    static const double specials[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN,
                                      0.5, 1e-310, 1e-40, 3.0, 1e300};
    static const double limits[] = {2147483648.0, -2147483649.0, 2147483520.0, 300.5,
                                    -129.7, 65535.9, 4294967296.0, -32768.5, 127.5,
                                    1e10, -0.9, 255.9};
    size_t size = bcg_dtype_size(t);
    for (int64_t i = 0; i < count; i++) {
        uint64_t r = next();
        char *at = (char *)buffer + (size_t)i * size;
        if (t == BCG_BOOL) {
            *at = (char)(r % 3); /* 2 is a true byte too */
        } else if (dtype_kind_of(t) != KIND_FLOAT) {
            if ((r & 7) == 0)
                r = (r & 8) ? ~0ull >> 1 : 1ull << 63;
            if ((r & 7) == 1 && dtype_kind_of(t) == KIND_INT) /* the dtype's minimum */
                r = ~0ull << (8 * size - 1);
            if ((r & 7) == 2) /* the signed maximum */
                r = ~0ull >> (64 - 8 * size + 1);
            memcpy(at, &r, size);
        } else {
            double v = (r & 3) == 0 ? specials[(r >> 2) % 12]
                       : (r & 3) == 1 && typed_case ? limits[(r >> 2) % 12]
                       : ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 8.0;
            if (t == BCG_F32) {
                float f = (float)v;
                memcpy(at, &f, 4);
            } else {
                memcpy(at, &v, 8);
            }
        }
    }
}

/* BYTES of memory with a page that faults right after them (AT_END) or
 * right before them. */
typedef struct guarded {
    char *map;
    size_t map_size;
    char *data;
} guarded;

static char *guarded_alloc(guarded *gd, size_t bytes, bool at_end)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (bytes + page - 1) / page + 2;
    gd->map_size = pages * page;
    gd->map = mmap(NULL, gd->map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    assert_true(gd->map != MAP_FAILED);
    assert_int_equal(mprotect(gd->map, page, PROT_NONE), 0);
    assert_int_equal(mprotect(gd->map + gd->map_size - page, page, PROT_NONE), 0);
    gd->data = at_end ? gd->map + gd->map_size - page - bytes : gd->map + page;
    return gd->data;
}

static void guarded_free(guarded *gd)
{
    if (gd->map)
        munmap(gd->map, gd->map_size);
    gd->map = NULL;
}

/* ---- a case ---- */

#define OPERANDS 5

typedef struct layout {
    int rank;
    int64_t shape[5], strides[5];
    bool strided;
    int64_t low, high; /* the elements the strides reach from element [0, ...] */
} layout;

static void reach(layout *l)
{
    l->low = l->high = 0;
    for (int d = 0; d < l->rank; d++) {
        int64_t span = l->strides[d] * (l->shape[d] - 1);
        if (span < 0)
            l->low += span;
        else
            l->high += span;
    }
}

/* Contiguous strides of SHAPE in a random dimension order, some reversed,
 * some doubled. */
static void random_strides(layout *l, bool gaps)
{
    int order[5];
    for (int d = 0; d < l->rank; d++)
        order[d] = d;
    for (int d = l->rank - 1; d > 0; d--) {
        int j = below(d + 1), x = order[d];
        order[d] = order[j];
        order[j] = x;
    }
    int64_t step = gaps && below(2) ? 2 : 1;
    for (int i = l->rank - 1; i >= 0; i--) {
        int d = order[i];
        l->strides[d] = below(3) == 0 ? -step : step;
        step *= l->shape[d] + (gaps && below(4) == 0 ? 1 : 0);
    }
    l->strided = true;
}

typedef struct tally {
    int cases, small, skipped;
    int pure, pure_small; /* trees of float operands, bool conditions and literals only */
    int small_by_rank[6];
    int loops4, loops4_small; /* cases whose plan has four loops or more */
    int levels2; /* cases that took the flat form split at loop 2 or further in */
} tally;

/* Compiles and runs EXPR (ctx fresh) into OUT; *SMALL: its source calls
 * the small function. */
static void run_kernel(const char *expr, const bcg_operand *ops, const bcg_options *options,
                       void *out, const void *const *inputs, bool *small)
{
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_kernel *kernel = NULL;
    bcg_error err;
    if (bcg_compile(ctx, expr, ops, OPERANDS, options, &kernel, &err) != BCG_OK) {
        print_error("%s: %s\n", expr, err.message);
        fail();
    }
    if (bcg_kernel_note(kernel)[0]) {
        print_error("%s: the JIT failed: %s\n", expr, bcg_kernel_note(kernel));
        fail();
    }
    *small = strstr(bcg_kernel_source(kernel), taken_marker) != NULL;
    assert_int_equal(bcg_run(kernel, out, inputs, &err), BCG_OK);
    bcg_context_free(ctx);
    if (!options->disable_vector_code) {
        last_split = -1;
        last_polynomials = false;
    }
    if ((hoist_case || flat_whole_case || flat_levels_case || flat_functions_case) &&
        (*small || flat_functions_case) && !options->disable_vector_code) {
        /* the IR's small function (or form) */
        arena *a = arena_new();
        compile *c = a ? arena_alloc(a, sizeof *c) : NULL;
        assert_non_null(c);
        memset(c, 0, sizeof *c);
        c->arena = a;
        c->err = &err;
        compile_request r = {.text = expr, .operands = ops, .operand_count = OPERANDS,
                             .options = options, .goal = COMPILE_JIT, .max_source = 0};
        assert_int_equal(compile_pipeline(c, &r), BCG_OK);
        if (flat_functions_case && !*small) {
            /* (an output view's rows are not contiguous) */
            bool left = c->ir->form.kind == FORM_INNER_UNROLLED && !options->output &&
                        c->plan->loop_count >= 2 && c->plan->elements >= 512;
            flat_functions_elements += left;
            if (left && getenv("BCGEN_SMALL_SHOW"))
                print_message("# inner unrolled: %s\n", expr);
            arena_free(a);
            return;
        }
        assert_non_null(c->ir->small);
        last_split = c->ir->small_flat ? c->ir->small->split : -1;
        last_polynomials = c->ir->small->polynomials > 0;
        flat_functions_polynomial += flat_functions_case && c->ir->small_flat &&
                                     c->ir->small->polynomials > 0;
        if (flat_functions_case && c->ir->small_flat && c->ir->small->per_element > 0) {
            flat_functions_taken++;
            flat_functions_hoisted += c->ir->small->computed * 2 < c->ir->small->per_element;
        }
        flat_whole_taken += c->ir->small_flat && c->ir->small->body % c->ir->small->lanes != 0;
        flat_long_taken += c->ir->small_flat && c->ir->p->extent[c->ir->p->loop_count - 1] > 15;
        flat_hoisted += c->ir->small_flat && c->ir->small->hoisted > 0;
        flat_hoisted_functions += c->ir->small_flat && c->ir->small->hoisted > 0 &&
                                  c->ir->small->per_element > 0;
        hoist_computed += c->ir->small->computed;
        hoist_per_element += c->ir->small->per_element;
        hoist_hoisted += c->ir->small->computed < c->ir->small->per_element;
        hoist_subtrees += c->ir->small->subtrees > 0;
        arena_free(a);
    }
}

/* Whether EXPR reads the integer operand e (a word of its own). */
static bool reads_e(const char *expr)
{
    for (const char *p = expr; *p; p++)
        if (*p == 'e' && (p == expr || !isalnum((unsigned char)p[-1])) &&
            !isalnum((unsigned char)p[1]))
            return true;
    return false;
}

/* A case of EXPR over operands a, b, c, d, e of DTYPES (NULL: a float
 * case, a, b and c of one float dtype, d bool, e a small integer). */
static bool check_case(const char *expr, const bcg_dtype *dtypes, tally *tally)
{
    static const int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17, 31, 33, 64, 100};
    static const bcg_dtype ints[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32};
    bcg_dtype t = below(2) ? BCG_F32 : BCG_F64;
    bcg_dtype int_dtype = ints[below(5)];
    bcg_dtype dtype_of[OPERANDS] = {t, t, t, BCG_BOOL, int_dtype};
    if (dtypes) {
        memcpy(dtype_of, dtypes, sizeof dtype_of);
        t = dtype_of[0];
    }
    /* the result's shape: rank 1 to 5, at most 1024 elements */
    int rank = flat_levels_case ? 5
               : flat_whole_case ? 3 + below(2)
               : flat_loops_case ? 4 + below(2)
               : flat_case     ? 2 + below(3)
               : short_case  ? 3 + below(2)
               : medium_case ? 2 + below(2)
               : hoist_case  ? 2 + below(4) /* (256 elements or more: two dimensions) */
                             : 1 + below(5);
    int64_t shape[5], elements;
    do {
        elements = 1;
        if (short_case) { /* (first: the rows' count depends on it) */
            shape[rank - 1] = 2 + below(6);
            elements = shape[rank - 1];
        }
        for (int d = 0; d < rank - short_case; d++) {
            shape[d] = flat_whole_case ? (d == rank - 1 ? (below(2) ? 3 + 2 * below(7) : 16 + below(25))
                                          : d == 1 ? 2 + below(4)
                                          : d == 0 ? 1 + below(700) : 2 + below(19))
                       : flat_loops_case ? (d == rank - 1 ? 2 + below(14) : d == rank - 2 ? 2 + below(9)
                                                                             : 1 + below(40))
                       : flat_levels_case ? (d == rank - 1 ? 2 + below(7) : d == rank - 2 ? 2 + below(3)
                                             : d == rank - 3 ? 65 + below(236) : 2 + below(5))
                       : flat_case     ? (d == rank - 1 ? 1 + below(15) : 1 + below(rank == 2 ? 700 : 40))
                       : short_case  ? (d == rank - 2 ? (7 + shape[rank - 1] + below(15 / shape[rank - 1] * shape[rank - 1] - 7)) / shape[rank - 1]
                                                      : 2 + below(rank == 3 ? 900 : 30))
                       : medium_case ? (d == rank - 1 ? 65 + below(448) : 2 + below(rank == 2 ? 30 : 6))
                                     : sizes[below(d == rank - 1 ? 15 : 10)];
            elements *= shape[d];
        }
    } while (flat_case || flat_loops_case || flat_whole_case || short_case
                 ? elements <= 1024 || elements > 8192
             : medium_case || flat_levels_case ? elements > 16384 || (flat_levels_case && elements <= 1024)
             : hoist_case  ? elements < 256 || elements > 1024 /* (small_subtrees' least) */
                           : elements > 1024);
    int mode = below(6); /* 0: in place into a; 1: an output view; else a new array */
    layout lays[OPERANDS];
    for (int i = 0; i < OPERANDS; i++) {
        layout *l = &lays[i];
        /* leading dimensions dropped, others broadcast (size 1) */
        int drop = i == 0 || below(3) ? 0 : below(rank + 1);
        l->rank = rank - drop;
        /* whole, periodic, expanded, any; flat_whole_case: one value a plane too */
        int pattern = (flat_case || flat_loops_case || flat_whole_case || medium_case) && i > 0
                          ? (flat_hoist_case ? (i == 3 ? 1 + below(2) : 4)
                                             : below(flat_whole_case ? 5 : 4))
                          : 3; /* whole, periodic, expanded, any */
        for (int d = 0; d < l->rank; d++) {
            l->shape[d] = shape[d + drop];
            if (i > 0 && (pattern == 3 ? below(flat_levels_case ? 2 : 4) == 0
                          : pattern == 1 ? d < l->rank - 1
                          : pattern == 4 ? d > 0
                                         : pattern == 2 && d == l->rank - 1))
                l->shape[d] = 1;
            if (hoist_case && (i == 2 || i == 4) && d >= l->rank - 2 &&
                (d == l->rank - 1 || below(2)))
                l->shape[d] = 1; /* per row (or plane) */
            if (few_values_case && i == 2)
                l->shape[d] = d == l->rank - 1 || (d == l->rank - 2 && below(3) == 0)
                                  ? 1 : shape[d + drop]; /* per row (or plane) */
        }
        l->strided = false;
        int64_t step = 1;
        for (int d = l->rank - 1; d >= 0; d--) {
            l->strides[d] = step;
            step *= l->shape[d];
        }
        if (below(few_values_case ? 2 : 3) == 0 && !(i == 0 && mode == 0))
            random_strides(l, true);
        reach(l);
    }
    const char *names[OPERANDS] = {"a", "b", "c", "d", "e"};
    bcg_operand ops[OPERANDS];
    guarded buffers[OPERANDS + 3];
    memset(buffers, 0, sizeof buffers);
    const void *inputs[OPERANDS];
    for (int i = 0; i < OPERANDS; i++) {
        layout *l = &lays[i];
        bcg_dtype dt = dtype_of[i];
        ops[i] = (bcg_operand){names[i], dt, l->rank, l->shape, l->strided ? l->strides : NULL};
        size_t size = bcg_dtype_size(dt);
        int64_t count = l->high - l->low + 1;
        char *data = guarded_alloc(&buffers[i], (size_t)count * size, below(2));
        fill(data, dt, count);
        inputs[i] = data + (size_t)(-l->low) * size;
    }
    bcg_options options;
    bcg_options_init(&options);
    bcg_output view;
    layout out_layout = {rank, {0}, {0}, false, 0, 0};
    memcpy(out_layout.shape, shape, sizeof shape);
    if (mode == 0) {
        options.inplace = 0;
    } else if (mode == 1) {
        random_strides(&out_layout, below(2));
        view = (bcg_output){BCG_DTYPE_AUTO, rank, out_layout.strides, 0, NULL};
        options.output = &view;
    }
    reach(&out_layout);

    bool ok = true;
    arena *a = arena_new();
    compile *front = a ? arena_alloc(a, sizeof *front) : NULL;
    assert_non_null(front);
    bcg_error err;
    memset(front, 0, sizeof *front);
    front->arena = a;
    front->err = &err;
    if (compile_front(front, expr, ops, OPERANDS, &options) != BCG_OK ||
        (!dtypes && dtype_kind_of(front->out_dtype) != KIND_FLOAT) ||
        (mode == 0 && front->out_dtype != t) || front->plan->elements != elements) {
        tally->skipped++; /* a comparison at the root, or the tree reads too few operands */
        goto done;
    }
    front->err = NULL;
    if (mode != 1) { /* C-contiguous over the result's shape (the operands read make it) */
        const struct shape *result = &front->broadcast->result;
        out_layout.rank = result->rank;
        int64_t step = 1;
        for (int d = result->rank - 1; d >= 0; d--) {
            out_layout.shape[d] = result->dims[d];
            out_layout.strides[d] = step;
            step *= result->dims[d];
        }
        reach(&out_layout);
    }
    bcg_dtype out_dtype = front->out_dtype;
    size_t out_size = bcg_dtype_size(out_dtype);
    int64_t span = out_layout.high - out_layout.low + 1;
    size_t bytes = (size_t)span * out_size;
    char *outputs[3];
    bool at_end = below(2);
    for (int r = 0; r < 3; r++) {
        char *data = guarded_alloc(&buffers[OPERANDS + r], bytes, at_end);
        if (mode == 0)
            memcpy(data, inputs[0], bytes);
        else
            memset(data, 0x5a, bytes); /* what no store may change */
        outputs[r] = data + (size_t)(-out_layout.low) * out_size;
    }
    /* 0: the reference, 1: default (small), 2: disable_vector_code */
    const void *in[OPERANDS];
    memcpy(in, inputs, sizeof in);
    if (mode == 0)
        in[0] = outputs[0];
    assert_int_equal(eval_run(front, outputs[0], in, NULL), BCG_OK);
    bool small = false, small_off = false;
    if (getenv("BCGEN_SMALL_TRACE")) { /* each case before it runs (a crash's case last) */
        fprintf(stderr, "case: '%s'", expr);
        for (int i = 0; i < OPERANDS; i++) {
            fprintf(stderr, " -i %s=%s[", names[i], bcg_dtype_name(ops[i].dtype));
            for (int d = 0; d < ops[i].rank; d++)
                fprintf(stderr, "%s%lld", d ? "," : "", (long long)ops[i].shape[d]);
            fprintf(stderr, "]");
            if (ops[i].strides) {
                fprintf(stderr, "@[");
                for (int d = 0; d < ops[i].rank; d++)
                    fprintf(stderr, "%s%lld", d ? "," : "", (long long)ops[i].strides[d]);
                fprintf(stderr, "]");
            }
        }
        if (mode == 0)
            fprintf(stderr, " --inplace a");
        if (mode == 1) {
            fprintf(stderr, " --out-strides [");
            for (int d = 0; d < rank; d++)
                fprintf(stderr, "%s%lld", d ? "," : "", (long long)out_layout.strides[d]);
            fprintf(stderr, "]");
        }
        fprintf(stderr, "\n");
        fflush(stderr);
    }
    if (mode == 0)
        in[0] = outputs[1];
    run_kernel(expr, ops, &options, outputs[1], in, &small);
    options.disable_vector_code = 1;
    if (mode == 0)
        in[0] = outputs[2];
    run_kernel(expr, ops, &options, outputs[2], in, &small_off);
    tally->cases++;
    tally->small += small;
    tally->loops4 += front->plan->loop_count >= 4;
    tally->loops4_small += front->plan->loop_count >= 4 && small;
    tally->levels2 += small && last_split >= 2;
    tally->small_by_rank[rank] += small;
    if (!reads_e(expr)) {
        tally->pure++;
        tally->pure_small += small;
    }
    if (!small && getenv("BCGEN_SMALL_SHOW"))
        print_message("# not small: %s %s, %lld elements\n", expr, bcg_dtype_name(out_dtype),
                      (long long)elements);
    if (small_off && !short_case) { /* (the 2-D tiles stay without the vector code) */
        print_error("%s: disable_vector_code still calls the small function\n", expr);
        ok = false;
    }
    for (int r = 1; r < 3 && ok; r++) {
        const char *got = buffers[OPERANDS + r].data, *want = buffers[OPERANDS].data;
        bool tolerant = tolerant_case && !((hoist_case || flat_functions_exact) && r == 1 &&
                                           small && !last_polynomials);
        int64_t at = first_difference_in(got, want, out_dtype, span, tolerant,
                                         tolerant &&
                                         (strstr(expr, "exp(") || strstr(expr, "log(")));
        while (at >= 0 && tolerant && out_dtype == BCG_F64) { /* an f32 result, widened */
            double x, y;
            memcpy(&x, got + at * 8, 8);
            memcpy(&y, want + at * 8, 8);
            if (!within_tolerance((float)x, (float)y))
                break;
            int64_t next_at = first_difference(got + (at + 1) * 8, want + (at + 1) * 8,
                                               out_dtype, span - at - 1, true);
            at = next_at < 0 ? -1 : at + 1 + next_at;
        }
        if (at >= 0) {
            uint64_t got_bits = 0, want_bits = 0;
            memcpy(&got_bits, got + at * (int64_t)out_size, out_size);
            memcpy(&want_bits, want + at * (int64_t)out_size, out_size);
            print_error("%s %s (a %s, b %s, c %s, e %s) shape rank %d, %lld elements, mode %d, "
                        "%s: element %lld of the span is 0x%llx, the reference evaluator's "
                        "0x%llx\n",
                        expr, bcg_dtype_name(out_dtype), bcg_dtype_name(dtype_of[0]),
                        bcg_dtype_name(dtype_of[1]), bcg_dtype_name(dtype_of[2]),
                        bcg_dtype_name(dtype_of[4]), rank, (long long)elements, mode,
                        r == 1 ? (small ? "small" : "small not taken") : "tcc",
                        (long long)(at + out_layout.low), (unsigned long long)got_bits,
                        (unsigned long long)want_bits);
            ok = false;
        }
    }
done:
    arena_free(a);
    for (int i = 0; i < OPERANDS + 3; i++)
        guarded_free(&buffers[i]);
    return ok;
}

static void test_random_small(void **state)
{
    (void)state;
    const char *text_count = getenv("BCGEN_SMALL_CASES");
    int count = text_count ? atoi(text_count) : 1500;
    tally tally = {0, 0, 0, 0, 0, {0}, 0, 0, 0};
    int failures = 0;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        value_tree(&t, 1 + below(4));
        if (!check_case(t.s, NULL, &tally))
            failures++;
    }
    print_message("# random small kernels: %d cases, %d through the small function (of the "
                  "%d without the integer operand e: %d), %d skipped\n", tally.cases,
                  tally.small, tally.pure, tally.pure_small, tally.skipped);
    assert_int_equal(failures, 0);
    /* the trees vex.c writes are the small function's, or this tests
     * nothing (e's integer operations are beyond it today) */
    if (vex_cpu_ok() && count > 0)
        assert_true(tally.pure_small * 20 >= tally.pure * 19 && tally.small * 2 > tally.cases);
}

/* Integer and mixed trees (vex.c's typed path): every integer dtype, bool,
 * f32 and f64 operands, casts between them, bitwise and shift operations,
 * comparisons, logic and where, through the same cases as above. */
static void test_random_typed_small(void **state)
{
    (void)state;
    static const bcg_dtype all[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                    BCG_I64, BCG_U64, BCG_F32, BCG_F64, BCG_BOOL};
    const char *text_count = getenv("BCGEN_SMALL_TYPED_CASES");
    int count = text_count ? atoi(text_count) : 600;
    tally tally;
    memset(&tally, 0, sizeof tally);
    int failures = 0;
    typed_case = true;
    for (int i = 0; i < count && failures < 10; i++) {
        bcg_dtype dtypes[OPERANDS], first = all[below(11)];
        for (int k = 0; k < 3; k++)
            dtypes[k] = below(2) ? first : all[below(11)];
        dtypes[3] = BCG_BOOL;
        dtypes[4] = all[below(8)];
        text t = {{0}, 0};
        typed_tree(&t, 1 + below(4));
        if (!check_case(t.s, dtypes, &tally))
            failures++;
    }
    typed_case = false;
    print_message("# random typed small kernels: %d cases, %d through the small function "
                  "(ranks 1-5: %d %d %d %d %d), %d skipped\n", tally.cases, tally.small,
                  tally.small_by_rank[1], tally.small_by_rank[2], tally.small_by_rank[3],
                  tally.small_by_rank[4], tally.small_by_rank[5], tally.skipped);
    assert_int_equal(failures, 0);
    /* what the typed path cannot write (64-bit integers into f32, ...)
     * keeps tcc's code: most trees are the small function's */
    if (vex_cpu_ok() && count >= 200) {
        assert_true(tally.small * 10 >= tally.cases * 8);
        for (int r = 1; r <= 5; r++)
            assert_true(tally.small_by_rank[r] > 0);
    }
}

/* exp, log, sin, cos and tanh at the root of a random integer, mixed or
 * float tree: in f64 the small function calls their microkernels (the C
 * library's, bit for bit; exp's and log's polynomials within 1 ulp:
 * compare.h's tolerance) on a buffer of the argument; f32's keep the tile code
 * (polynomials: within compare.h's tolerance). */
static void test_random_transcendental_small(void **state)
{
    (void)state;
    static const char *const functions[] = {"exp(", "log(", "sin(", "cos(", "tanh("};
    static const bcg_dtype all[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                    BCG_F32, BCG_F64, BCG_F32, BCG_F64};
    const char *text_count = getenv("BCGEN_SMALL_TRANSCENDENTAL_CASES");
    int count = text_count ? atoi(text_count) : 160;
    tally tally;
    memset(&tally, 0, sizeof tally);
    int failures = 0;
    typed_case = true;
    tolerant_case = true;
    for (int i = 0; i < count && failures < 10; i++) {
        bcg_dtype dtypes[OPERANDS], first = all[below(10)];
        for (int k = 0; k < 3; k++)
            dtypes[k] = below(2) ? first : all[below(10)];
        dtypes[3] = BCG_BOOL;
        dtypes[4] = all[below(6)];
        text t = {{0}, 0};
        put(&t, functions[below(5)]);
        if (below(2))
            typed_tree(&t, below(3));
        else
            value_tree(&t, below(3));
        put(&t, ")");
        if (!check_case(t.s, dtypes, &tally))
            failures++;
    }
    typed_case = false;
    tolerant_case = false;
    print_message("# random transcendental small kernels: %d cases, %d through the small "
                  "function, %d skipped\n", tally.cases, tally.small, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count >= 100) /* (the rest: f32, or the tile code hoists them) */
        assert_true(tally.small * 4 >= tally.cases);
}

/* Per-row subtrees (vex.c, small_hoist): a transcendental of a typed tree
 * of c and e only (broadcast along the innermost dimension or two), in a
 * random tree of every operand: the small function computes it once per
 * value of the loops c and e vary along.  f32 exp, log, sin, cos and
 * tanh (the C library's, small_libm_f32) and f64 sin, cos and tanh (the
 * microkernels: the C library's), so the small function is compared bit
 * for bit (tcc's code within the tolerance: its tiles' polynomials).
 * Every buffer against a faulting page, as above.  Fails unless a third
 * take the small function, a third of those computing fewer results than
 * elements (fewer than half of them in all), and 1 in 20 cases a subtree
 * of operations once per value. */
static void rename_to_rows(char *s)
{
    for (char *p = s; *p; p++) /* a -> c, b -> e: the operands broadcast per row */
        if ((*p == 'a' || *p == 'b') && (p == s || !isalnum((unsigned char)p[-1])) &&
            !isalnum((unsigned char)p[1]))
            *p = *p == 'a' ? 'c' : 'e';
}

static void test_random_hoisted_small(void **state)
{
    (void)state;
    static const char *const functions[] = {"exp(", "log(", "sin(", "cos(", "tanh("};
    static const char *const joins[] = {" + ", " - ", " * ", ", "};
    static const bcg_dtype all[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                    BCG_I64, BCG_F32, BCG_F64, BCG_BOOL};
    const char *text_count = getenv("BCGEN_SMALL_HOISTED_CASES");
    int count = text_count ? atoi(text_count) : 200;
    tally tally;
    memset(&tally, 0, sizeof tally);
    hoist_computed = hoist_per_element = 0;
    hoist_hoisted = hoist_subtrees = 0;
    int failures = 0;
    typed_case = tolerant_case = hoist_case = true;
    for (int i = 0; i < count && failures < 10; i++) {
        bcg_dtype dtypes[OPERANDS], first = all[below(10)];
        for (int k = 0; k < 3; k++)
            dtypes[k] = below(2) ? first : all[below(10)];
        dtypes[3] = BCG_BOOL;
        dtypes[4] = all[below(6)];
        bool f64 = below(3) == 0, function = below(3) > 0;
        text argument = {{0}, 0}, t = {{0}, 0};
        typed_tree(&argument, function ? below(3) : 2 + below(2));
        rename_to_rows(argument.s);
        int join = below(4);
        put(&t, join == 3 ? (below(2) ? "maximum(" : "where(d, ") : "(");
        typed_tree(&t, below(3));
        put(&t, joins[join]);
        if (function) { /* else a subtree of operations (small_subtrees) */
            put(&t, f64 ? functions[2 + below(3)] : functions[below(5)]);
            put(&t, f64 ? "f64(" : "f32(");
        }
        put(&t, argument.s);
        put(&t, function ? "))" : "");
        put(&t, ")");
        if (!check_case(t.s, dtypes, &tally))
            failures++;
    }
    typed_case = tolerant_case = hoist_case = false;
    print_message("# random per-row subtrees: %d cases, %d through the small function "
                  "(%d hoisting: %lld results for %lld elements; %d subtrees of operations), "
                  "%d skipped\n",
                  tally.cases, tally.small, hoist_hoisted, (long long)hoist_computed,
                  (long long)hoist_per_element, hoist_subtrees, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count >= 100)
        assert_true(tally.small * 3 >= tally.cases && hoist_hoisted * 3 >= tally.small &&
                    hoist_computed * 2 < hoist_per_element && hoist_subtrees * 20 >= tally.cases);
}

/* ---- the form ---- */

/* The flat form (vex_build_flat): random float, integer and mixed trees
 * over short runs under many rows, broadcast periodically or expanded,
 * every buffer against a faulting page, bit for bit against the reference
 * evaluator and tcc's code as above; most of them must take it. */
static void test_random_flat(void **state)
{
    (void)state;
    static const bcg_dtype all[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                    BCG_I64, BCG_U64, BCG_F32, BCG_F64, BCG_BOOL};
    const char *text_count = getenv("BCGEN_FLAT_CASES");
    int count = text_count ? atoi(text_count) : 200;
    tally float_tally, typed_tally;
    memset(&float_tally, 0, sizeof float_tally);
    memset(&typed_tally, 0, sizeof typed_tally);
    int failures = 0;
    flat_case = true;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        if (i % 2 == 0) {
            value_tree(&t, 1 + below(4));
            if (!check_case(t.s, NULL, &float_tally))
                failures++;
            continue;
        }
        bcg_dtype dtypes[OPERANDS], first = all[below(11)];
        for (int k = 0; k < 3; k++)
            dtypes[k] = below(2) ? first : all[below(11)];
        dtypes[3] = BCG_BOOL;
        dtypes[4] = all[below(8)];
        typed_case = true;
        typed_tree(&t, 1 + below(4));
        if (!check_case(t.s, dtypes, &typed_tally))
            failures++;
        typed_case = false;
    }
    flat_case = false;
    print_message("# random flat kernels: %d float cases, %d through the flat form; %d typed, "
                  "%d; %d skipped\n", float_tally.cases, float_tally.small, typed_tally.cases,
                  typed_tally.small, float_tally.skipped + typed_tally.skipped);
    assert_int_equal(failures, 0);
    /* (an output view, a transposed input or a tree it cannot write keeps
     * the tiles: well over a third take it) */
    if (vex_cpu_ok() && count >= 100)
        assert_true(float_tally.small * 3 >= float_tally.cases &&
                    typed_tally.small * 3 >= typed_tally.cases);
}

/* The flat form under two level loops or more (flat_levels_case): runs
 * of 2 to 8 under short loops under 20 to 300 rows under two or three
 * loops, where the flat form took at most one level loop and the loop
 * nest's per-element code (inner unrolled) was left; random float,
 * integer and mixed trees of every dtype, operands whole, periodic,
 * expanded, broadcast, strided, reversed or transposed, in place, into an
 * output view or a new array, every buffer against a faulting page, bit
 * for bit against the reference evaluator and tcc's code; a quarter of
 * the cases must take the flat form split at loop 2 or further in. */
static void test_random_flat_levels(void **state)
{
    (void)state;
    static const bcg_dtype all[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                    BCG_I64, BCG_U64, BCG_F32, BCG_F64, BCG_BOOL};
    const char *text_count = getenv("BCGEN_FLAT_LEVELS_CASES");
    int count = text_count ? atoi(text_count) : 120;
    tally float_tally, typed_tally;
    memset(&float_tally, 0, sizeof float_tally);
    memset(&typed_tally, 0, sizeof typed_tally);
    int failures = 0;
    taken_marker = VEX_SMALL_SYMBOL "("; /* (as the tests before left it, or should have) */
    flat_levels_case = true;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        if (i % 2 == 0) {
            value_tree(&t, 1 + below(4));
            if (!check_case(t.s, NULL, &float_tally))
                failures++;
            continue;
        }
        bcg_dtype dtypes[OPERANDS], first = all[below(11)];
        for (int k = 0; k < 3; k++)
            dtypes[k] = below(2) ? first : all[below(11)];
        dtypes[3] = BCG_BOOL;
        dtypes[4] = all[below(8)];
        typed_case = true;
        typed_tree(&t, 1 + below(4));
        if (!check_case(t.s, dtypes, &typed_tally))
            failures++;
        typed_case = false;
    }
    flat_levels_case = false;
    int cases = float_tally.cases + typed_tally.cases;
    int levels2 = float_tally.levels2 + typed_tally.levels2;
    print_message("# random flat kernels under level loops: %d float cases, %d through the "
                  "flat form; %d typed, %d; %d of all split at loop 2 or further in; %d "
                  "skipped\n", float_tally.cases, float_tally.small, typed_tally.cases,
                  typed_tally.small, levels2, float_tally.skipped + typed_tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count >= 100)
        assert_true(levels2 * 4 >= cases);
}

/* Transcendentals in the flat form (vex.c, small_hoist's per_body): a
 * function of a random typed tree (an f32 one, the C library's, or f64
 * sin, cos, tanh, the microkernels, compared bit for bit; f64 exp and log
 * at the root, within the tolerance) joined to another random tree, over
 * the shapes of test_random_flat_levels and test_random_flat (runs of 1
 * to 15 under 20 to 300 rows under level loops, or under rows), operands
 * broadcast, strided, reversed or transposed, in place or into a view,
 * every buffer against a faulting page, against the reference evaluator
 * (tcc's code within the tolerance).  One case in 25 must take the flat
 * form with its functions (the others: 1-D or 2-D tiles, a tree vex.c
 * cannot write, an output view), two in three of those the other way
 * leaves to tcc's per-element code (outputs not views; the rest:
 * conversions of 64-bit integers to floats, beyond vex.c), some computed
 * once before the loops, some every body. */
static void test_random_flat_functions(void **state)
{
    (void)state;
    static const char *const functions[] = {"exp(", "log(", "sin(", "cos(", "tanh("};
    static const char *const joins[] = {" + ", " - ", " * ", ", "};
    static const bcg_dtype all[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                    BCG_I64, BCG_F32, BCG_F64, BCG_BOOL};
    const char *text_count = getenv("BCGEN_FLAT_FUNCTIONS_CASES");
    int count = text_count ? atoi(text_count) : 300;
    tally tally;
    memset(&tally, 0, sizeof tally);
    flat_functions_taken = flat_functions_hoisted = flat_functions_elements = 0;
    int failures = 0;
    taken_marker = VEX_SMALL_SYMBOL "("; /* (as the tests before left it, or should have) */
    typed_case = tolerant_case = flat_functions_case = true;
    for (int i = 0; i < count && failures < 10; i++) {
        bcg_dtype dtypes[OPERANDS], first = all[below(10)];
        for (int k = 0; k < 3; k++)
            dtypes[k] = below(2) ? first : all[below(10)];
        dtypes[3] = BCG_BOOL;
        dtypes[4] = all[below(6)];
        flat_levels_case = i % 2 == 0;
        flat_case = !flat_levels_case;
        flat_functions_exact = i % 4 != 3;
        text argument = {{0}, 0}, t = {{0}, 0};
        typed_tree(&argument, below(3));
        if (!flat_functions_exact) { /* f64 exp or log at the root */
            put(&t, functions[below(2)]);
            put(&t, "f64(");
            put(&t, argument.s);
            put(&t, "))");
        } else {
            bool f64 = below(3) == 0;
            int join = below(4);
            put(&t, join == 3 ? (below(2) ? "maximum(" : "where(d, ") : "(");
            typed_tree(&t, below(3));
            put(&t, joins[join]);
            put(&t, f64 ? functions[2 + below(3)] : functions[below(5)]);
            put(&t, f64 ? "f64(" : "f32(");
            put(&t, argument.s);
            put(&t, ")))");
        }
        if (!check_case(t.s, dtypes, &tally))
            failures++;
    }
    typed_case = tolerant_case = flat_functions_case = flat_functions_exact = false;
    flat_levels_case = flat_case = false;
    print_message("# random flat kernels with functions: %d cases, %d through the small "
                  "function, %d the flat form with its functions (%d computed once before "
                  "its loops), %d left in tcc's per-element code, %d skipped\n", tally.cases,
                  tally.small, flat_functions_taken, flat_functions_hoisted,
                  flat_functions_elements, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count >= 100)
        assert_true(flat_functions_taken * 25 >= count &&
                    flat_functions_taken * 3 >= (flat_functions_taken + flat_functions_elements) * 2 &&
                    flat_functions_hoisted > 0 && flat_functions_hoisted < flat_functions_taken);
}

/* Functions of an operand that is one value a row (or a plane) in the
 * flat form where the 2-D tiles were the other way (vex.c
 * small_few_values): computed once per value, f32 by the microkernels'
 * polynomials as the tiles compute them (not the C library's, which the
 * flat form calls otherwise), f64 by the C library's: exp, log, sin, cos
 * and tanh of c in f32 or f64 (or of a tree over c) joined to a random typed tree over a, b and e, over the
 * shapes of test_random_flat (runs of 1 to 15), operands strided,
 * reversed or transposed half the time, in place or into a view, every
 * buffer against a faulting page, against the reference evaluator within
 * the functions' tolerance.  A stated share must take the flat form with
 * such a function. */
static void test_flat_few_values(void **state)
{
    (void)state;
    static const char *const functions[] = {"exp(", "log(", "sin(", "cos(", "tanh("};
    static const char *const joins[] = {" + ", " - ", " * ", " / "};
    static const char *const arguments[] = {"c", "c * 0.5", "abs(c)", "c - 1.0", "c"};
    static const bcg_dtype all[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_F32,
                                    BCG_F32, BCG_F64};
    int count = 200;
    tally tally;
    memset(&tally, 0, sizeof tally);
    flat_functions_polynomial = flat_functions_taken = 0;
    int failures = 0;
    taken_marker = VEX_SMALL_SYMBOL "(";
    typed_case = tolerant_case = flat_functions_case = few_values_case = flat_case = true;
    flat_functions_exact = true;
    for (int i = 0; i < count && failures < 10; i++) {
        bcg_dtype dtypes[OPERANDS];
        for (int k = 0; k < 3; k++)
            dtypes[k] = all[below(8)];
        dtypes[2] = below(3) ? BCG_F32 : all[below(8)];
        dtypes[3] = BCG_BOOL;
        dtypes[4] = all[below(5)];
        text t = {{0}, 0};
        put(&t, "(");
        typed_tree(&t, below(3));
        put(&t, joins[below(4)]);
        put(&t, functions[below(5)]);
        put(&t, below(4) ? "f32(" : "f64(");
        put(&t, arguments[below(5)]);
        put(&t, ")))");
        if (!check_case(t.s, dtypes, &tally))
            failures++;
    }
    typed_case = tolerant_case = flat_functions_case = few_values_case = flat_case = false;
    flat_functions_exact = false;
    print_message("# functions of few values: %d cases, %d through the small function, %d "
                  "the flat form with its functions, %d of them by the polynomials, %d "
                  "skipped\n", tally.cases, tally.small, flat_functions_taken,
                  flat_functions_polynomial, tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok()) /* (0 before) */
        assert_true(flat_functions_polynomial * 6 >= tally.cases &&
                    flat_functions_taken > flat_functions_polynomial);
}

/* The flat form over four or five dimensions (flat_loops_case): short
 * runs under a short loop under rows, where the loop nest's per-element
 * code (inner unrolled) or the 2-D tiles of the two innermost loops were
 * before; random float, integer and mixed trees of every dtype, operands
 * whole, periodic, expanded, broadcast, strided, reversed or transposed,
 * in place, into an output view or a new array, every buffer against a
 * faulting page, bit for bit against the reference evaluator and tcc's
 * code; a third of the cases whose plan keeps four loops or more must take
 * it (an output view, a tree vex.c cannot write or code past its limit
 * keep the loop nest). */
static void test_random_flat_loops(void **state)
{
    (void)state;
    static const bcg_dtype all[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                    BCG_I64, BCG_U64, BCG_F32, BCG_F64, BCG_BOOL};
    const char *text_count = getenv("BCGEN_FLAT_LOOPS_CASES");
    int count = text_count ? atoi(text_count) : 160;
    tally float_tally, typed_tally;
    memset(&float_tally, 0, sizeof float_tally);
    memset(&typed_tally, 0, sizeof typed_tally);
    int failures = 0;
    flat_loops_case = true;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        if (i % 2 == 0) {
            value_tree(&t, 1 + below(4));
            if (!check_case(t.s, NULL, &float_tally))
                failures++;
            continue;
        }
        bcg_dtype dtypes[OPERANDS], first = all[below(11)];
        for (int k = 0; k < 3; k++)
            dtypes[k] = below(2) ? first : all[below(11)];
        dtypes[3] = BCG_BOOL;
        dtypes[4] = all[below(8)];
        typed_case = true;
        typed_tree(&t, 1 + below(4));
        if (!check_case(t.s, dtypes, &typed_tally))
            failures++;
        typed_case = false;
    }
    flat_loops_case = false;
    int loops4 = float_tally.loops4 + typed_tally.loops4;
    int loops4_small = float_tally.loops4_small + typed_tally.loops4_small;
    print_message("# random flat kernels of 4 or 5 dimensions: %d float cases, %d through the "
                  "flat form; %d typed, %d; of the %d whose plan has 4 loops or more, %d; %d "
                  "skipped\n", float_tally.cases, float_tally.small, typed_tally.cases,
                  typed_tally.small, loops4, loops4_small,
                  float_tally.skipped + typed_tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count >= 100)
        assert_true(loops4 * 2 >= count / 2 && loops4_small * 3 >= loops4);
}

/* One binary operation over short runs (1 to 15) under a loop of rows and
 * an outer loop, 4096 elements or more, every dtype; a and b contiguous,
 * one value a row, periodic (one run repeated), reversed or strided along
 * the rows, or a literal.  The _rows microkernel keeps only the runs that
 * its long periodic calls write (an operand or literal repeating over a
 * contiguous other, lower.c flat_beats_rows); wherever the flat form can
 * take the rest, it must (minimum(a, 1e-5) with a's pairs reversed: 0.01
 * of the gcc loop through _rows).  Results are the reference evaluator's,
 * bit for bit; fails unless a third of the cases take the flat form. */
static void test_short_rows_flat(void **state)
{
    (void)state;
    static const bcg_dtype all[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                    BCG_I64, BCG_U64, BCG_F32, BCG_F64};
    static const char *const ops[] = {"a + b", "a - b", "a * b", "minimum(a, b)",
                                      "maximum(a, b)", "a < b", "a == b", "minimum(a, 3)",
                                      "maximum(a, 2)", "a - 7", "a > 1"};
    int cases = 0, flat = 0, rows = 0, failures = 0;
    for (int i = 0; i < 120 && failures < 5; i++) {
        bcg_dtype t = all[below(10)];
        const char *expr = ops[below(11)];
        int64_t n = 1 + below(15), k = 1 + below(24);
        int64_t outer = (4096 + n * k - 1) / (n * k) + below(8);
        int64_t shape[3] = {outer, k, n};
        int64_t strides[2][3], span[2], offset[2];
        for (int j = 0; j < 2; j++) {
            int layout = below(6); /* contiguous, per row, periodic, reversed rows, strided, transposed rows */
            int64_t run = layout == 1 ? 0 : layout == 4 ? 2 : 1;
            int64_t row = layout == 2 ? 0 : layout == 1 ? 1 : layout == 3 ? -n * (run ? run : 1)
                        : layout == 5 ? outer * n : n * (run ? run : 1);
            int64_t plane = layout == 5 ? n : layout == 1 ? k : layout == 2 ? 0 : k * n * (run ? run : 1);
            strides[j][0] = plane;
            strides[j][1] = row;
            strides[j][2] = run;
            int64_t low = 0, high = 0;
            for (int d = 0; d < 3; d++) {
                int64_t reach = (shape[d] - 1) * strides[j][d];
                if (reach < 0)
                    low += reach;
                else
                    high += reach;
            }
            offset[j] = -low;
            span[j] = high - low + 1;
        }
        bcg_operand operands[2] = {{"a", t, 3, shape, strides[0]}, {"b", t, 3, shape, strides[1]}};
        int count = strstr(expr, "b") ? 2 : 1;
        size_t size = bcg_dtype_size(t);
        char *buffer[2] = {NULL, NULL};
        const void *inputs[2];
        for (int j = 0; j < count; j++) {
            buffer[j] = malloc((size_t)span[j] * size);
            assert_non_null(buffer[j]);
            fill(buffer[j], t, span[j]);
            inputs[j] = buffer[j] + offset[j] * (int64_t)size;
        }
        bcg_context *ctx = bcg_context_new();
        bcg_options options;
        bcg_options_init(&options);
        bcg_kernel *kernel = NULL;
        bcg_error err;
        assert_non_null(ctx);
        assert_int_equal(bcg_compile(ctx, expr, operands, count, &options, &kernel, &err), BCG_OK);
        int64_t elements = bcg_kernel_elements(kernel);
        size_t out_size = bcg_dtype_size(bcg_kernel_dtype(kernel));
        char *got = malloc((size_t)elements * out_size), *want = malloc((size_t)elements * out_size);
        assert_true(got && want);
        memset(got, 0x5a, (size_t)elements * out_size);
        assert_int_equal(bcg_run(kernel, got, inputs, &err), BCG_OK);
        arena *ar = arena_new();
        compile *front = ar ? arena_alloc(ar, sizeof *front) : NULL;
        assert_non_null(front);
        memset(front, 0, sizeof *front);
        front->arena = ar;
        front->err = &err;
        assert_int_equal(compile_front(front, expr, operands, count, &options), BCG_OK);
        assert_int_equal(eval_run(front, want, inputs, NULL), BCG_OK);
        arena_free(ar);
        const char *source = bcg_kernel_source(kernel);
        bool is_flat = strstr(source, VEX_SMALL_SYMBOL "(") != NULL, is_rows = strstr(source, "_rows(") != NULL;
        cases++;
        flat += is_flat;
        rows += is_rows;
        if (memcmp(got, want, (size_t)elements * out_size) != 0) {
            print_error("short rows %s %s (%lld, %lld, %lld) strides a [%lld, %lld, %lld] b [%lld, %lld, %lld]: "
                        "differs from the evaluator\n", expr, bcg_dtype_name(t), (long long)outer,
                        (long long)k, (long long)n, (long long)strides[0][0], (long long)strides[0][1],
                        (long long)strides[0][2], (long long)strides[1][0], (long long)strides[1][1],
                        (long long)strides[1][2]);
            failures++;
        }
        /* the _rows form only where its periodic calls apply: an operand
         * (or the literal) one run repeated, the other contiguous */
        if (is_rows && vex_cpu_ok()) {
            /* (rows of one run, k == 1: the planes are the rows, the row
             * stride no stride at all; BCGEN_SMALL_CASES=22500 drew a * b
             * i64 (587, 1, 7) taking _rows rightly) */
            int r = k == 1 ? 0 : 1;
            bool repeats = count == 1 || strides[0][r] == 0 || strides[1][r] == 0;
            bool contiguous = (strides[0][2] == 1 && strides[0][r] == n) ||
                              (count == 2 && strides[1][2] == 1 && strides[1][r] == n);
            if (!(repeats && contiguous)) {
                print_error("short rows %s %s (%lld, %lld, %lld): the _rows microkernel for runs it "
                            "writes one at a time\n", expr, bcg_dtype_name(t), (long long)outer,
                            (long long)k, (long long)n);
                failures++;
            }
        }
        free(got);
        free(want);
        for (int j = 0; j < count; j++)
            free(buffer[j]);
        bcg_kernel_free(kernel);
        bcg_context_free(ctx);
    }
    print_message("# short rows of one operation: %d cases, %d through the flat form, %d the _rows "
                  "microkernel\n", cases, flat, rows);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok())
        assert_true(flat * 3 >= cases);
}

/* The flat form's body of all the rows (flat_whole_case): fewer rows than
 * a whole number of vectors takes (i32 rows of 7 under a loop of 5: 8
 * rows make a whole number), where the 2-D tiles gathered the operands
 * not contiguous over a tile into tiles of copies before; random float,
 * integer and mixed trees of every dtype, operands whole, periodic (a
 * row the same every row), expanded (one value a row), broadcast,
 * strided, reversed or transposed, in place, into an output view or a
 * new array, every buffer against a faulting page, bit for bit against
 * the reference evaluator and tcc's code; an eighth of the cases must take
 * a body that is not a whole number of vectors (measured: about a
 * quarter; the others' rows merge into the loop outside, or an output
 * view or a tree vex.c cannot write keeps the tiles), a sixteenth the
 * flat form over runs of 16 to 40 (measured: 12 of 103). */
static void test_random_flat_whole_rows(void **state)
{
    (void)state;
    static const bcg_dtype all[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                    BCG_I64, BCG_U64, BCG_F32, BCG_F64, BCG_BOOL};
    const char *text_count = getenv("BCGEN_FLAT_WHOLE_CASES");
    int count = text_count ? atoi(text_count) : 160;
    tally float_tally, typed_tally;
    memset(&float_tally, 0, sizeof float_tally);
    memset(&typed_tally, 0, sizeof typed_tally);
    int failures = 0;
    random_state = seeded_stream(0x6a09e667f3bcc909ull); /* (its own draws, whatever runs before it) */
    flat_whole_case = true;
    flat_whole_taken = flat_long_taken = flat_hoisted = 0;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        if (i % 2 == 0) {
            value_tree(&t, 1 + below(4));
            if (!check_case(t.s, NULL, &float_tally))
                failures++;
            continue;
        }
        bcg_dtype dtypes[OPERANDS], first = all[below(11)];
        for (int k = 0; k < 3; k++)
            dtypes[k] = below(2) ? first : all[below(11)];
        dtypes[3] = BCG_BOOL;
        dtypes[4] = all[below(8)];
        typed_case = true;
        typed_tree(&t, 1 + below(4));
        if (!check_case(t.s, dtypes, &typed_tally))
            failures++;
        typed_case = false;
    }
    flat_whole_case = false;
    int cases = float_tally.cases + typed_tally.cases;
    print_message("# random flat kernels of few rows: %d float cases, %d through the flat form; "
                  "%d typed, %d; %d of all %d with a body of all the rows (a partial last "
                  "vector), %d with runs of 16 to 40, %d with values computed once before the "
                  "body's loop; %d skipped\n", float_tally.cases,
                  float_tally.small, typed_tally.cases, typed_tally.small, flat_whole_taken,
                  cases, flat_long_taken, flat_hoisted,
                  float_tally.skipped + typed_tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count >= 100)
        assert_true(flat_whole_taken * 8 >= cases && flat_long_taken * 16 >= cases);
}

/* The flat form's values computed once before its innermost level loop
 * (flat_hoist_case): random integer and mixed trees of every dtype over
 * the shapes of test_random_flat_whole_rows beside a subtree of b, c and
 * e, one value a plane (d periodic or one value a row), in place, into an
 * output view or a new array, every buffer against a faulting page, bit
 * for bit against the reference evaluator and tcc's code; a quarter of
 * the cases must hoist a value (see the count printed: the others are
 * float trees, outside the flat form, or their subtree folds). */
static void test_random_flat_hoisted(void **state)
{
    (void)state;
    static const bcg_dtype all[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                    BCG_I64, BCG_U64, BCG_F32, BCG_F64, BCG_BOOL};
    const char *text_count = getenv("BCGEN_FLAT_HOISTED_CASES");
    int count = text_count ? atoi(text_count) : 160;
    tally typed_tally;
    memset(&typed_tally, 0, sizeof typed_tally);
    int failures = 0;
    random_state = seeded_stream(0xbb67ae8584caa73bull); /* (its own draws, whatever runs before it) */
    flat_whole_case = flat_hoist_case = typed_case = true;
    flat_whole_taken = flat_long_taken = flat_hoisted = 0;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        bcg_dtype dtypes[OPERANDS], first = all[below(11)];
        for (int k = 0; k < 3; k++)
            dtypes[k] = below(2) ? first : all[below(11)];
        dtypes[3] = BCG_BOOL;
        dtypes[4] = all[below(8)];
        typed_tree(&t, 1 + below(4));
        /* a subtree of planes' values beside the random tree */
        static const char *const forms[] = {"where(d, %s, b * c)", "where(d, b - e, %s)",
                                            "maximum(%s, i32(c)) + 0 * d",
                                            "(%s) - (c + e) * d"};
        char expr[sizeof t.s + 64];
        snprintf(expr, sizeof expr, forms[below(4)], t.s);
        if (!check_case(expr, dtypes, &typed_tally))
            failures++;
    }
    flat_whole_case = flat_hoist_case = typed_case = false;
    print_message("# random flat kernels with values once a plane: %d typed cases, %d through "
                  "the flat form, %d computing values once before the body's loop; %d "
                  "skipped\n", typed_tally.cases, typed_tally.small, flat_hoisted,
                  typed_tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count >= 100)
        assert_true(flat_hoisted * 4 >= typed_tally.cases);
}

/* The flat form's values once a plane (small_write_hoisted) over bodies
 * shorter than a vector: the hoisted subtree's leaves were read as a whole
 * vector's elements, those of the next planes past the body, so at the last
 * plane past the operand's end, and through the body's tiny_slot copies
 * (b * b + d, u8, b one value a plane (100,1,1), d (7,), in place into a
 * (100,2,7), ymm: 1372 of 1400 elements wrong, or a fault at a guard page;
 * test_random_flat_hoisted at BCGEN_TEST_SEED=2 and 15x its cases).
 * Directed: every integer and float dtype, bodies of 2 to 3 rows of 3 to 7,
 * the hoisted operand against a faulting page after its last element and
 * before its first, ymm and (where the CPU has it) zmm bodies, in place
 * and into a new array; bit for bit against the evaluator; most cases must
 * take the flat form. */
static void test_flat_hoisted_short_bodies(void **state)
{
    (void)state;
    static const bcg_dtype all[] = {BCG_U8, BCG_I8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                    BCG_I64, BCG_F32, BCG_F64};
    static const char *const exprs[] = {"b * b + d", "(b + b) + d", "b * c + d",
                                        "where(d > b * c, d, b - c)"};
    int cases = 0, flat = 0, failures = 0;
    for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
        for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
            for (int variant = 0; variant < 8; variant++) {
                bcg_dtype dt = all[t];
                int64_t rows = 2 + variant % 2, run = variant & 2 ? 7 : 3, planes = 100;
                bool at_end = variant & 4, inplace = (e + t) % 2 == 0;
                /* a: the in-place target, or one value a row added */
                int64_t shape_a[3] = {planes, rows, inplace ? run : 1}, shape_b[3] = {planes, 1, 1},
                        shape_d[1] = {run};
                bcg_operand ops[4] = {{"a", dt, 3, shape_a, NULL}, {"b", dt, 3, shape_b, NULL},
                                      {"c", dt, 3, shape_b, NULL}, {"d", dt, 1, shape_d, NULL}};
                size_t size = bcg_dtype_size(dt);
                int64_t elements = planes * rows * run;
                guarded buffers[6];
                memset(buffers, 0, sizeof buffers);
                char *data[4];
                const int64_t counts[4] = {inplace ? elements : planes * rows, planes, planes, run};
                for (int i = 0; i < 4; i++) {
                    data[i] = guarded_alloc(&buffers[i], (size_t)counts[i] * size, at_end);
                    fill(data[i], dt, counts[i]);
                }
                char *want = guarded_alloc(&buffers[4], (size_t)elements * size, at_end);
                char *got = guarded_alloc(&buffers[5], (size_t)elements * size, at_end);
                if (inplace)
                    memcpy(want, data[0], (size_t)elements * size);
                bcg_options options;
                bcg_options_init(&options);
                options.inplace = inplace ? 0 : -1;
                char expr[96];
                snprintf(expr, sizeof expr, inplace ? "%s" : "(%s) + a", exprs[e]);
                arena *ar = arena_new();
                compile *front = ar ? arena_alloc(ar, sizeof *front) : NULL;
                assert_non_null(front);
                bcg_error err;
                memset(front, 0, sizeof *front);
                front->arena = ar;
                front->err = &err;
                if (compile_front(front, expr, ops, 4, &options) != BCG_OK) {
                    arena_free(ar);
                    for (int i = 0; i < 6; i++)
                        guarded_free(&buffers[i]);
                    continue; /* (a same-kind cast in place, say) */
                }
                const void *in[4] = {inplace ? want : data[0], data[1], data[2], data[3]};
                assert_int_equal(eval_run(front, want, in, NULL), BCG_OK);
                arena_free(ar);
                for (int zmm = 0; zmm < 2; zmm++) {
                    vex_zmm = zmm ? -1 : 0;
                    if (inplace)
                        memcpy(got, data[0], (size_t)elements * size);
                    bcg_context *ctx = bcg_context_new();
                    bcg_kernel *kernel = NULL;
                    assert_int_equal(bcg_compile(ctx, expr, ops, 4, &options, &kernel, &err), BCG_OK);
                    flat += strstr(bcg_kernel_source(kernel), taken_marker) != NULL;
                    const void *jit_in[4] = {inplace ? got : data[0], data[1], data[2], data[3]};
                    assert_int_equal(bcg_run(kernel, got, jit_in, &err), BCG_OK);
                    if (memcmp(got, want, (size_t)elements * size) != 0) {
                        print_error("%s %s (%lld, %lld, %lld)%s%s: differs from the evaluator\n",
                                    expr, bcg_dtype_name(dt), (long long)planes, (long long)rows,
                                    (long long)run, inplace ? " in place" : "",
                                    zmm ? "" : " (ymm)");
                        failures++;
                    }
                    cases++;
                    bcg_kernel_free(kernel);
                    bcg_context_free(ctx);
                }
                vex_zmm = -1;
                for (int i = 0; i < 6; i++)
                    guarded_free(&buffers[i]);
            }
    print_message("# flat form, values once a plane, bodies shorter than a vector: %d cases, "
                  "%d through the flat form\n", cases, flat);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok())
        assert_true(flat * 2 >= cases);
}

/* Values once a plane (small_mark_hoisted) beside functions computed into
 * buffers (small_transcendental): the hoisted values' stack slots were at
 * rsp + 32 * slot, not above the buffers (s->frame) as the patterns', so
 * a function's values overwrote them ((e + 5.0) + b + sin(a), f64 rows of
 * 2 x 4 under 140 under 2, e one value a plane: b + sin(a); a scratch
 * seed of test_random_flat_functions, 4 of 4 seeds).  Random trees of
 * every dtype as test_random_flat_hoisted's with an f64 sin, cos or tanh
 * (the microkernels: bit for bit) of another random tree joined, over
 * its shapes; a share must take the flat form with both. */
static void test_random_flat_hoisted_functions(void **state)
{
    (void)state;
    static const bcg_dtype all[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                    BCG_I64, BCG_F32, BCG_F64, BCG_BOOL};
    static const char *const functions[] = {"sin(", "cos(", "tanh("};
    const char *text_count = getenv("BCGEN_FLAT_HOISTED_CASES");
    int count = text_count ? atoi(text_count) : 120;
    tally typed_tally;
    memset(&typed_tally, 0, sizeof typed_tally);
    int failures = 0;
    uint64_t saved_state = random_state;
    random_state = seeded_stream(0x3c6ef372fe94f82bull); /* (its own draws, whatever runs before it) */
    taken_marker = VEX_SMALL_SYMBOL "(";
    flat_whole_case = flat_hoist_case = typed_case = true;
    tolerant_case = flat_functions_case = flat_functions_exact = true;
    flat_hoisted_functions = 0;
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0}, argument = {{0}, 0};
        bcg_dtype dtypes[OPERANDS], first = all[below(10)];
        for (int k = 0; k < 3; k++)
            dtypes[k] = below(2) ? first : all[below(10)];
        dtypes[3] = BCG_BOOL;
        dtypes[4] = all[below(6)];
        typed_tree(&t, 1 + below(3));
        typed_tree(&argument, below(3));
        static const char *const forms[] = {"where(d, %s, b * c)", "where(d, b - e, %s)",
                                            "(e + 5.0) + b * (%s)", "(%s) - (c + e) * d"};
        char planes[sizeof t.s + 64], expr[2 * sizeof t.s + 128];
        snprintf(planes, sizeof planes, forms[below(4)], t.s);
        snprintf(expr, sizeof expr, "(%s) + %sf64(%s))", planes, functions[below(3)],
                 argument.s);
        if (!check_case(expr, dtypes, &typed_tally))
            failures++;
    }
    flat_whole_case = flat_hoist_case = typed_case = false;
    tolerant_case = flat_functions_case = flat_functions_exact = false;
    random_state = saved_state;
    print_message("# random flat kernels with values once a plane and functions: %d cases, "
                  "%d through the flat form with both; %d skipped\n", typed_tally.cases,
                  flat_hoisted_functions, typed_tally.skipped);
    assert_int_equal(failures, 0);
    if (vex_cpu_ok() && count >= 100)
        assert_true(flat_hoisted_functions * 10 >= typed_tally.cases);
}

/* Two threads running one flat kernel of four loops at once
 * (test_flat_loops_threads): each its own output, a hundred calls. */
typedef struct flat_thread {
    const bcg_kernel *kernel;
    const void *const *inputs;
    int16_t *out;
    int failures;
} flat_thread;

static void *flat_thread_run(void *arg)
{
    flat_thread *t = arg;
    bcg_error err;
    for (int r = 0; r < 100; r++)
        t->failures += bcg_run(t->kernel, t->out, t->inputs, &err) != BCG_OK;
    return NULL;
}

/* The flat form over four loops (the sweep's seed 21 case 115) from two
 * threads at once: the function keeps nothing between calls (its slots
 * on its own stack), so both outputs are the reference evaluator's. */
static void test_flat_loops_threads(void **state)
{
    (void)state;
    static int64_t a_shape[] = {11, 1, 5, 3}, a_strides[] = {66, 66, 6, 2};
    static int64_t b_shape[] = {89, 5, 3}, c_shape[] = {1, 89, 5, 1};
    const bcg_operand ops[3] = {{"a", BCG_I16, 4, a_shape, a_strides},
                                {"b", BCG_I16, 3, b_shape, NULL},
                                {"c", BCG_I16, 4, c_shape, NULL}};
    const char *expr = "(b) * (where(a > c, a, c)) - 5";
    enum { N = 11 * 89 * 5 * 3 };
    static int16_t a[11 * 66], b[89 * 15], c[89 * 5], want[N], got[2][N];
    fill(a, BCG_I16, 11 * 66);
    fill(b, BCG_I16, 89 * 15);
    fill(c, BCG_I16, 89 * 5);
    const void *inputs[3] = {a, b, c};
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_kernel *kernel = NULL;
    bcg_error err;
    bcg_options options;
    bcg_options_init(&options);
    assert_int_equal(bcg_compile(ctx, expr, ops, 3, &options, &kernel, &err), BCG_OK);
    if (vex_cpu_ok()) /* (the form this tests) */
        assert_non_null(strstr(bcg_kernel_source(kernel), VEX_SMALL_SYMBOL "("));
    arena *ar = arena_new();
    compile *front = ar ? arena_alloc(ar, sizeof *front) : NULL;
    assert_non_null(front);
    memset(front, 0, sizeof *front);
    front->arena = ar;
    front->err = &err;
    assert_int_equal(compile_front(front, expr, ops, 3, &options), BCG_OK);
    assert_int_equal(eval_run(front, want, inputs, NULL), BCG_OK);
    arena_free(ar);
    flat_thread threads[2] = {{kernel, inputs, got[0], 0}, {kernel, inputs, got[1], 0}};
    pthread_t id[2];
    for (int t = 0; t < 2; t++)
        assert_int_equal(pthread_create(&id[t], NULL, flat_thread_run, &threads[t]), 0);
    for (int t = 0; t < 2; t++)
        assert_int_equal(pthread_join(id[t], NULL), 0);
    for (int t = 0; t < 2; t++) {
        assert_int_equal(threads[t].failures, 0);
        assert_memory_equal(got[t], want, sizeof want);
    }
    bcg_context_free(ctx);
}

/* Short runs (2 to 7) in rows of 8 to 15 elements, 1025 to 8192 in all,
 * an f32 function (exp, log, tanh, expm1; sin, which keeps tcc's code) of
 * a float tree, sometimes inside another: the 2-D tiles take those whose
 * function varies along the runs (lower.c, vectorised_function_along_run),
 * where tcc's code called the C library per element.  Checked as above (within the
 * polynomials' tolerance; every buffer against a faulting page); fails
 * unless two fifths of the cases take the 2-D tiles. */
static void test_random_short_functions(void **state)
{
    (void)state;
    static const char *const functions[] = {"exp(", "log(", "tanh(", "expm1(", "sin("};
    const bcg_dtype dtypes[OPERANDS] = {BCG_F32, BCG_F32, BCG_F32, BCG_BOOL, BCG_I16};
    const char *text_count = getenv("BCGEN_SHORT_FUNCTION_CASES");
    int count = text_count ? atoi(text_count) : 120;
    tally tally;
    memset(&tally, 0, sizeof tally);
    int failures = 0;
    short_case = tolerant_case = true;
    taken_marker = "row_start"; /* (the 2-D tiles' loop) */
    for (int i = 0; i < count && failures < 10; i++) {
        text t = {{0}, 0};
        bool outer = below(3) == 0;
        if (outer)
            put(&t, "a * 0.5 + ");
        put(&t, functions[below(5)]);
        value_tree(&t, below(3));
        put(&t, ")");
        if (!check_case(t.s, dtypes, &tally))
            failures++;
    }
    short_case = tolerant_case = false;
    taken_marker = VEX_SMALL_SYMBOL "(";
    print_message("# random short runs with functions: %d cases, %d through 2-D tiles, %d "
                  "skipped\n", tally.cases, tally.small, tally.skipped);
    assert_int_equal(failures, 0);
    if (count >= 100) /* (main's rows of 16 or more: 26 of 92; here 47) */
        assert_true(tally.small * 5 >= tally.cases * 2);
}

/* Medium runs (65 to 512) under rows with per-row operands, integer
 * trees: the fused function's rows form, every row of a tile in one call
 * (lower.c, medium_rows_in_place), checked as above; an eighth must take it. */
static void test_random_medium_rows(void **state)
{
    (void)state;
    static const bcg_dtype ints[] = {BCG_I8, BCG_U8, BCG_I16, BCG_U16, BCG_I32, BCG_U32,
                                     BCG_I64, BCG_U64, BCG_BOOL};
    const char *text_count = getenv("BCGEN_MEDIUM_CASES");
    int count = text_count ? atoi(text_count) : 100;
    tally tally;
    memset(&tally, 0, sizeof tally);
    int failures = 0;
    medium_case = typed_case = true;
    taken_marker = "const void *const *, long);"; /* the rows form's declaration */
    for (int i = 0; i < count && failures < 10; i++) {
        bcg_dtype dtypes[OPERANDS], first = ints[below(6)];
        for (int k = 0; k < 3; k++)
            dtypes[k] = below(3) ? first : ints[below(9)];
        dtypes[3] = BCG_BOOL;
        dtypes[4] = ints[below(8)];
        text t = {{0}, 0};
        typed_tree(&t, 1 + below(3));
        if (!check_case(t.s, dtypes, &tally))
            failures++;
    }
    medium_case = typed_case = false;
    taken_marker = VEX_SMALL_SYMBOL "(";
    print_message("# random medium rows: %d cases, %d through the rows form, %d skipped\n",
                  tally.cases, tally.small, tally.skipped);
    assert_int_equal(failures, 0);
    /* (float casts in the trees, strided operands and output views keep
     * the calls per run: about a fifth to a quarter take it) */
    if (vex_cpu_ok() && count >= 100)
        assert_true(tally.small * 8 >= tally.cases && tally.small >= 5);
}

static char *explain_ir(arena *a, const char *expr, const bcg_operand *ops, int count,
                        const bcg_options *options)
{
    compile *c = arena_alloc(a, sizeof *c);
    assert_non_null(c);
    static bcg_error err;
    memset(c, 0, sizeof *c);
    c->arena = a;
    c->err = &err;
    compile_request r = {.text = expr, .operands = ops, .operand_count = count,
                         .options = options, .goal = COMPILE_JIT, .max_source = 0};
    assert_int_equal(compile_pipeline(c, &r), BCG_OK);
    strbuf sb;
    sb_init(&sb);
    kir_dump(&sb, c->ir, 10);
    char *text = arena_strndup(a, sb.data, sb.len);
    sb_free(&sb);
    return text;
}

static void test_small_form(void **state)
{
    (void)state;
    if (!vex_cpu_ok()) {
        skip();
        return;
    }
    int64_t a_shape[2] = {4, 4}, b_shape[1] = {4}, big[1] = {VEX_SMALL_MAX + 1};
    bcg_operand ops[2] = {{"a", BCG_F32, 2, a_shape, NULL}, {"b", BCG_F32, 1, b_shape, NULL}};
    bcg_options options;
    bcg_options_init(&options);
    arena *a = arena_new();
    assert_non_null(a);
    char *ir = explain_ir(a, "a + b", ops, 2, &options);
    assert_non_null(strstr(ir, "form: small"));
    assert_non_null(strstr(ir, "small " VEX_SMALL_SYMBOL " into out from in0, in1: (in0 + in1), "
                                "16 elements in 2 vectors"));
    options.disable_vector_code = 1;
    assert_null(strstr(explain_ir(a, "a + b", ops, 2, &options), "form: small"));
    options.disable_vector_code = 0;
    /* what vex.c does not write: tcc's code */
    assert_null(strstr(explain_ir(a, "arctan2(a, b)", ops, 2, &options), "form: small"));
    /* a transcendental with a microkernel: called on a buffer of its argument */
    assert_non_null(strstr(explain_ir(a, "exp(f64(a)) + b", ops, 2, &options), "form: small"));
    /* f32: the C library's, as tcc's unrolled code (small_libm_f32) */
    assert_non_null(strstr(explain_ir(a, "exp(a) + b", ops, 2, &options), "form: small"));
    ops[0].rank = 1;
    ops[0].shape = big;
    ops[1].rank = 0;
    assert_null(strstr(explain_ir(a, "a + b", ops, 2, &options), "form: small"));
    arena_free(a);
}

/* ---- the encoder's forms ---- */

/* objdump's listing of a kernel's whole code (the checks, the function; the
 * constant pool decodes as garbage and is left in: only mnemonics are
 * looked for). */
static char *disassemble(const void *code, size_t size)
{
    char path[] = "/tmp/bcgen_small_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, code, size), (ssize_t)size);
    close(fd);
    char command[256];
    snprintf(command, sizeof command, "objdump -D -b binary -m i386:x86-64 %s", path);
    FILE *p = popen(command, "r");
    assert_non_null(p);
    size_t cap = 1 << 20, len = 0;
    char *out = malloc(cap), line[512];
    assert_non_null(out);
    out[0] = 0;
    while (fgets(line, sizeof line, p)) { /* the runs of spaces objdump aligns with: one */
        size_t n = 0;
        for (const char *c = line; *c; c++)
            if (!(*c == ' ' && n > 0 && line[n - 1] == ' '))
                line[n++] = *c;
        line[n] = 0;
        if (len + n + 1 < cap) {
            memcpy(out + len, line, n + 1);
            len += n;
        }
    }
    pclose(p);
    unlink(path);
    return out;
}

/* Every load, permute and store form the small code writes decodes as
 * itself (objdump), for kernels that need them. */
static void test_small_disassembly(void **state)
{
    (void)state;
    if (!vex_cpu_ok() || system("objdump --version > /dev/null 2>&1") != 0) {
        print_message("# no AVX2 or no objdump: skipped\n");
        skip();
        return;
    }
    /* rows of 7 (masked windows, two windows), a transposed operand
     * (element by element), a broadcast row of 4 (vbroadcastf128), i8
     * (slot inserts), a reversed output (lane stores) */
    int64_t shape[2] = {6, 7}, row[1] = {7}, t_strides[2] = {1, 6};
    int64_t four[2] = {3, 4}, row4[1] = {4}, out_strides[2] = {-1, 3};
    bcg_operand ops[3] = {{"a", BCG_F64, 2, shape, NULL}, {"b", BCG_F64, 1, row, NULL},
                          {"c", BCG_F64, 2, shape, t_strides}};
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_kernel *k;
    bcg_error err;
    static const char *const wanted[] = {"vmaskmovps (", "vpermps", "vblendvps", "vmovhpd ",
                                         "vmovsd ", "vinsertf128", "vmovups %ymm", "lea ",
                                         "test "};
    bcg_options options;
    bcg_options_init(&options);
    assert_int_equal(bcg_compile(ctx, "a * b + c", ops, 3, &options, &k, &err), BCG_OK);
    assert_non_null(k->checked);
    char *listing = disassemble((const void *)k->checked, 4096);
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        if (!strstr(listing, wanted[i])) {
            print_error("no \"%s\" in:\n%s\n", wanted[i], listing);
            fail();
        }
    free(listing);
    bcg_kernel_release(k);
    bcg_operand ops2[2] = {{"a", BCG_F32, 2, four, NULL}, {"b", BCG_I8, 1, row4, NULL}};
    bcg_output view = {BCG_DTYPE_AUTO, 2, out_strides, 0, NULL};
    options.output = &view;
    ops2[1].dtype = BCG_F32;
    assert_int_equal(bcg_compile(ctx, "a - b", ops2, 2, &options, &k, &err), BCG_OK);
    assert_non_null(k->checked);
    listing = disassemble((const void *)k->checked, 4096);
    static const char *const wanted2[] = {"vbroadcastf128", "vextractps", "vmovss %xmm",
                                          "vextractf128"};
    for (size_t i = 0; i < sizeof wanted2 / sizeof wanted2[0]; i++)
        if (!strstr(listing, wanted2[i])) {
            print_error("no \"%s\" in:\n%s\n", wanted2[i], listing);
            fail();
        }
    free(listing);
    bcg_kernel_release(k);
    ops2[1].dtype = BCG_I8;
    ops2[1].strides = (int64_t[]){-1};
    options.output = NULL;
    assert_int_equal(bcg_compile(ctx, "a - b", ops2, 2, &options, &k, &err), BCG_OK);
    assert_non_null(k->checked);
    listing = disassemble((const void *)k->checked, 4096);
    if (!(strstr(listing, "vpinsrb ") || strstr(listing, "vpshufb ")) ||
        !strstr(listing, "vpmovsxbd ")) {
        print_error("no lane copies of i8 in:\n%s\n", listing);
        fail();
    }
    free(listing);
    bcg_kernel_release(k);
    /* integer trees (the typed path): i16 transposed (element inserts, a
     * 128-bit insert), u8 of stride 2 (blocks: vpshufb, vpor), i64 into a
     * gapped output (element stores), i8 into a reversed one, 5 i32 (a
     * masked load), 7 i16 stored in pieces */
    static const struct {
        const char *expr;
        bcg_dtype dtype;
        int64_t shape[2], strides[2], out_strides[2];
        const char *wanted[3];
    } typed[] = {
        {"a * 3 + a", BCG_I16, {12, 12}, {1, 12}, {0, 0}, {"vpinsrw ", "vinserti128", "vpmullw"}},
        {"a + 1", BCG_U8, {2, 40}, {80, 2}, {0, 0}, {"vpshufb ", "vpor ", "vpaddb"}},
        {"a - 5", BCG_I64, {3, 3}, {3, 1}, {1, 4}, {"vpextrq ", "vmovq %xmm", "vpsubq"}},
        {"a + a", BCG_I8, {2, 20}, {20, 1}, {20, -1}, {"vpextrb ", "vpaddb", "vmovdqu"}},
        {"abs(a)", BCG_I32, {5}, {1}, {0, 0}, {"vmaskmovps (", "vpabsd", "vmovd %xmm"}},
        {"a << 2", BCG_I16, {7}, {1}, {0, 0}, {"vpextrw ", "vmovq %xmm", "vpsllw"}},
    };
    for (size_t c = 0; c < sizeof typed / sizeof typed[0]; c++) {
        bcg_operand op = {"a", typed[c].dtype, typed[c].shape[1] ? 2 : 1, typed[c].shape,
                          typed[c].strides};
        bcg_output out_view = {BCG_DTYPE_AUTO, 2, typed[c].out_strides, 0, NULL};
        options.output = typed[c].out_strides[0] ? &out_view : NULL;
        assert_int_equal(bcg_compile(ctx, typed[c].expr, &op, 1, &options, &k, &err), BCG_OK);
        assert_non_null(k->checked);
        listing = disassemble((const void *)k->checked, 4096);
        for (int w = 0; w < 3; w++)
            if (!strstr(listing, typed[c].wanted[w])) {
                print_error("%s: no \"%s\" in:\n%s\n", typed[c].expr, typed[c].wanted[w],
                            listing);
                fail();
            }
        free(listing);
        bcg_kernel_release(k);
    }
    bcg_context_free(ctx);
}

/* ---- bcg_run's checks in the small function's code ---- */

/* Runs K and K_OFF (disable_vector_code: check_run in C) on the same
 * pointers: the same status and message. */
static void same_verdict(bcg_kernel *k, bcg_kernel *k_off, void *out, const void **in,
                         bool expect_ok)
{
    bcg_error e1, e2;
    bcg_status s1 = bcg_run(k, out, in, &e1), s2 = bcg_run(k_off, out, in, &e2);
    assert_int_equal(s1, s2);
    assert_int_equal(s1 == BCG_OK, expect_ok);
    if (s1 != BCG_OK)
        assert_string_equal(e1.message, e2.message);
}

static void test_small_checks(void **state)
{
    (void)state;
    if (!vex_cpu_ok()) {
        skip();
        return;
    }
    int64_t a_shape[2] = {4, 4}, b_shape[1] = {4};
    bcg_operand ops[2] = {{"a", BCG_F32, 2, a_shape, NULL}, {"b", BCG_F32, 1, b_shape, NULL}};
    bcg_context *ctx = bcg_context_new();
    assert_non_null(ctx);
    bcg_options options;
    bcg_options_init(&options);
    bcg_kernel *k, *k_off, *in_place, *in_place_off;
    bcg_error err;
    assert_int_equal(bcg_compile(ctx, "a * b - 1", ops, 2, &options, &k, &err), BCG_OK);
    assert_non_null(k->checked); /* the path under test */
    options.inplace = 0;
    assert_int_equal(bcg_compile(ctx, "a * b - 1", ops, 2, &options, &in_place, &err), BCG_OK);
    options.disable_vector_code = 1;
    assert_int_equal(bcg_compile(ctx, "a * b - 1", ops, 2, &options, &in_place_off, &err),
                     BCG_OK);
    options.inplace = -1;
    assert_int_equal(bcg_compile(ctx, "a * b - 1", ops, 2, &options, &k_off, &err), BCG_OK);
    assert_null(k_off->checked);
    _Alignas(32) float memory[64];
    for (int i = 0; i < 64; i++)
        memory[i] = (float)i;
    float *a = memory, *b = memory + 16, *out = memory + 32;
    const void *in[2] = {a, b};
    same_verdict(k, k_off, out, in, true);
    for (int i = 0; i < 16; i++) /* it ran */
        assert_true(out[i] == a[i] * b[i % 4] - 1);
    same_verdict(k, k_off, NULL, in, false);                      /* no output */
    same_verdict(k, k_off, (char *)out + 2, in, false);           /* misaligned */
    in[1] = NULL;
    same_verdict(k, k_off, out, in, false);                       /* an operand NULL */
    in[1] = (const char *)b + 1;
    same_verdict(k, k_off, out, in, false);                       /* misaligned */
    in[1] = b;
    same_verdict(k, k_off, NULL, NULL, false);                    /* no input array */
    same_verdict(k, k_off, b + 3, in, false);                     /* overlaps b */
    same_verdict(k, k_off, a + 1, in, false);                     /* overlaps a, shifted */
    same_verdict(k, k_off, b - 15, in, false);                    /* its last element is b[0] */
    same_verdict(k, k_off, b - 16, in, true);                     /* right before b */
    same_verdict(k, k_off, b + 4, in, true);                      /* right after b */
    same_verdict(k, k_off, a, in, true);                          /* a itself: the same elements */
    same_verdict(in_place, in_place_off, NULL, in, true);
    same_verdict(in_place, in_place_off, a, in, true);
    same_verdict(in_place, in_place_off, out, in, false);         /* not the target */
    bcg_kernel_release(k);
    bcg_kernel_release(k_off);
    bcg_kernel_release(in_place);
    bcg_kernel_release(in_place_off);
    bcg_context_free(ctx);
}

int main(void)
{
    random_state = seeded_stream(random_state);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_small),
        cmocka_unit_test(test_random_typed_small),
        cmocka_unit_test(test_random_transcendental_small),
        cmocka_unit_test(test_random_flat),
        cmocka_unit_test(test_random_medium_rows),
        cmocka_unit_test(test_random_short_functions),
        cmocka_unit_test(test_small_form),
        cmocka_unit_test(test_small_checks),
        cmocka_unit_test(test_small_disassembly),
        cmocka_unit_test(test_random_hoisted_small), /* (last: the others' random draws as before) */
        cmocka_unit_test(test_random_flat_loops),
        cmocka_unit_test(test_short_rows_flat),    /* (after: the same) */
        cmocka_unit_test(test_random_flat_levels),
        cmocka_unit_test(test_random_flat_functions),
        cmocka_unit_test(test_flat_few_values),
        cmocka_unit_test(test_flat_loops_threads),
        cmocka_unit_test(test_random_flat_whole_rows), /* (last: the others' draws as before) */
        cmocka_unit_test(test_random_flat_hoisted),
        cmocka_unit_test(test_flat_hoisted_short_bodies),
        cmocka_unit_test(test_random_flat_hoisted_functions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
