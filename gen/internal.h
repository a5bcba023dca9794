/* internal.h - bcgen's internal types and prototypes, grouped by the file
 * that defines them.  Only gen/ and tests include this; applications use
 * runtime/bcgen.h.
 *
 * The pipeline (gen/compile.c, compile_front and compile_kernel):
 *
 *   text, operands
 *     -> shape_broadcast   (shape.c)  result shape, operands aligned to it
 *     -> expr_parse        (parse.c)  tree of expr_node, names -> indices
 *     -> expr_type         (type.c)   dtypes per node, literals folded
 *     -> plan_build        (plan.c)   loops, extents, per-operand strides
 *     -> fold_tree         (fold.c)   operand-free subtrees as literals
 *                                  and in the narrowest exact types (narrow.c)
 *     -> lower_kernel      (lower.c)  the kernel IR (kir.h): form, hoisted
 *                                     values, loops, microkernel calls
 *     -> emit_kernel       (emit.c)   the IR printed as C (cexpr.c for values,
 *                                     emit_aot.c for the AOT signature),
 *                                     through templates (tmpl.c)
 *     -> jit_compile       (jit.c)    machine code through libtcc
 *
 * eval.c is a reference evaluator of the same plan and tree (no codegen):
 * the test oracle and the fallback when the JIT fails.
 *
 * Glossary: "aligned shape" = an operand's shape padded with 1s to the rank
 * of the result (right alignment, or Paddle's axis); "broadcast stride" = 0
 * along a dimension where the operand has size 1; "coalescing" = merging two
 * adjacent loops into one when every operand steps through them jointly
 * contiguously.
 */
#ifndef BCGEN_INTERNAL_H
#define BCGEN_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include "../runtime/bcgen.h"
#include "../runtime/runtime.h"

/* ---- util.c: memory, arena, string buffer, errors ---------------------- */

/* All heap memory goes through these two, so tests can make the Nth
 * allocation fail (mem_fail_after) and count what is live. */
void *mem_alloc(size_t size);            /* NULL on failure or injected failure */
void *mem_realloc(void *p, size_t size); /* NULL on failure; p is left intact */
void mem_free(void *p);
/* Test hook: the Nth allocation from now fails (1 = the next); 0 turns it off.
 * Returns how many allocations were made since the last call. */
long mem_fail_after(long n);
/* Test hook: blocks from mem_alloc/mem_realloc(NULL, ..) not yet given to
 * mem_free, over all threads (the allocation-failure test's leak check). */
long mem_live(void);

/* An arena: everything one compile makes, freed in one call. */
typedef struct arena arena;
arena *arena_new(void);
void arena_free(arena *a);                 /* NULL allowed */
void *arena_alloc(arena *a, size_t size);  /* zeroed, 16-byte aligned; NULL on failure */
char *arena_strndup(arena *a, const char *s, size_t n);
char *arena_printf(arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A growable string on the heap.  After an allocation failure `failed` is
 * set and further appends do nothing; check it once at the end. */
typedef struct strbuf {
    char *data;    /* NUL-terminated when len > 0 or after sb_finish */
    size_t len, cap;
    bool failed;
} strbuf;
void sb_init(strbuf *sb);
void sb_free(strbuf *sb);
void sb_put(strbuf *sb, const char *s, size_t n);
void sb_puts(strbuf *sb, const char *s);
void sb_putc(strbuf *sb, char c);
void sb_printf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(strbuf *sb, const char *fmt, va_list ap);
/* Hands the string to the caller (free with mem_free); NULL if failed. */
char *sb_finish(strbuf *sb);

/* Sets *err if it holds no error yet (the first error wins) and returns
 * STATUS, so callers can write `return fail(err, BCG_ERR_SHAPE, ...)`.
 * err may be NULL.  column/operand/dimension are set to 0/-1/-1; use
 * fail_at to give them. */
bcg_status fail(bcg_error *err, bcg_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bcg_status fail_at(bcg_error *err, bcg_status status, int column, int operand,
                   int dimension, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
void error_clear(bcg_error *err);   /* status BCG_OK, operand/dimension -1 */
/* true when s[0..n) is a valid operand name */
bool name_is_valid(const char *s, size_t n);

/* ---- dtype.c: element types and NumPy's promotion ---------------------- */

typedef enum { KIND_BOOL, KIND_INT, KIND_UINT, KIND_FLOAT } dtype_kind;
dtype_kind dtype_kind_of(bcg_dtype t);
int dtype_bits(bcg_dtype t);
/* The C type emitted kernels use for memory: "float", "bcg_i32"; bool is
 * "bcg_u8"; f16 and bf16 are "bcg_f16" and "bcg_bf16", their 16 bits (their
 * values in expressions are floats: cexpr_value_ctype).
 * Kernels define bcg_i8 .. bcg_u64 themselves (no <stdint.h>), under names
 * that cannot clash with a firmware build's own <stdint.h>. */
const char *dtype_ctype(bcg_dtype t);
/* NumPy's result_type for two arrays (np.result_type(i8, u8) == i16, i64+u64 -> f64, ...) */
bcg_dtype dtype_promote(bcg_dtype a, bcg_dtype b);
/* The float type NumPy's math functions give for an input type:
 * bool/i8/u8 -> f16, i16/u16 -> f32, other ints -> f64, floats keep. */
bcg_dtype dtype_float_for(bcg_dtype t);
/* f16 and bf16: stored as 16 bits, computed in f32 and rounded after each
 * operation (NumPy's float16 rule). */
bool dtype_is_half(bcg_dtype t);
/* The type T's arithmetic is carried out in: f32 for f16 and bf16, else T. */
bcg_dtype dtype_compute(bcg_dtype t);
/* X rounded to float type T (f32, f16, bf16: to nearest even; f64: X). */
double dtype_round_float(bcg_dtype t, double x);
/* Parse a dtype name of length n (n may be (size_t)-1 for NUL-terminated). */
bool dtype_from_text(const char *s, size_t n, bcg_dtype *out);

/* ---- shape.c: shapes, shape text and the broadcast rules --------------- */

typedef struct shape {
    int rank;
    int64_t dims[BCG_MAX_RANK];
} shape;

/* Parses "5,3,4,1", "[5,3,4,1]", "(5,3,4,1)", "5x3x4x1", "(5,)", "[]", "()",
 * "scalar".  Spaces are allowed around numbers.  Errors: malformed text,
 * negative sizes, rank above BCG_MAX_RANK, sizes above INT64_MAX. */
bcg_status shape_parse(const char *text, size_t len, shape *out, bcg_error *err);
/* "(5, 3, 4, 1)", "(5,)", "()"  - as NumPy prints shapes */
void shape_format(const shape *s, char *buf, size_t cap);
/* "(5,3,4,1)", "(5,)", "()"     - compact, for error messages */
void shape_format_compact(const shape *s, char *buf, size_t cap);
/* Product of the sizes; false when it overflows int64. */
bool shape_elements(const shape *s, int64_t *out);

typedef struct broadcast_rules {
    int axis;          /* BCG_AXIS_NONE or Paddle's axis (two operands only) */
    int inplace;       /* -1 or the operand that receives the result */
    bool strict_rank;  /* rank-0 operands are an error */
    bool warn_legacy;  /* fill `warning` in the legacy case */
} broadcast_rules;

typedef struct broadcast_result {
    shape result;                    /* the broadcast shape */
    shape aligned[BCG_MAX_OPERANDS]; /* each operand padded with 1s to result.rank */
    char warning[256];               /* legacy warning or "" */
} broadcast_result;

/* Broadcasts COUNT (1..BCG_MAX_OPERANDS) shapes.  names[i] may be NULL (then
 * "operand i" is used in messages); names itself may be NULL.  ELEMENT_SIZE
 * (bytes per result element, 0 to skip) is used to reject results whose byte
 * size overflows int64.  Errors name both operands, their shapes, the
 * dimension index in the aligned result and both sizes, e.g.
 * "cannot broadcast b (3,1,1) against a (5,2,4,1): dimension 1 has size 3 in b and 2 in a". */
bcg_status shape_broadcast(int count, const shape *shapes, const char *const *names,
                           const broadcast_rules *rules, size_t element_size,
                           broadcast_result *out, bcg_error *err);

/* ---- parse.c, type.c, expr.c: the expression tree ---------------------------- */

/* Every operator and function, in the order of the rows of ops.h. */
typedef enum expr_op {
#define OP(id, ...) OP_##id,
#include "ops.h"
#undef OP
    OP_COUNT
} expr_op;

/* The Ith other spelling the parser accepts for a function ("asin") and
 * the function it names ("arcsin"); NULL past the last (parse.c). */
const char *expr_function_alias(size_t i, const char **function);

/* How type.c types an operator (the rule column of ops.h). */
typedef enum op_rule {
    RULE_LEAF,      /* an operand or literal: typed by what it is */
    RULE_SAME,      /* the argument's type (-, +, ~, abs) */
    RULE_NOT,       /* bool */
    RULE_LOGICAL,   /* both arguments made bool; bool */
    RULE_COMPARE,   /* computes in the promotion of its arguments; bool */
    RULE_PROMOTE,   /* the promotion of its arguments */
    RULE_DIVIDE,    /* the promotion, f64 for integers (true division) */
    RULE_INTEGRAL,  /* the promotion, i8 for bool (//, %, <<, >>, **) */
    RULE_FLOAT,     /* the float type for its argument (dtype_float_for) */
    RULE_FLOAT_TEST, /* bool: a test of the argument as a float (isnan ...) */
    RULE_ROUND,     /* integers keep their type; bool and floats: dtype_float_for */
    RULE_WHERE,     /* the condition made bool; the promotion of the others */
    RULE_SATURATE,  /* the promotion, which must be an integer type (add_sat) */
    RULE_FIXED,     /* a fixed-point product: the arguments' promotion must be
                     * op_fixed_dtype(op), which it has (mul_q15: i16) */
    RULE_CAST       /* the type it names */
} op_rule;

/* One row of ops.h (ops.c); see there for the columns. */
typedef struct op_info {
    const char *symbol, *word, *call, *params;
    int arity;
    op_rule rule;
    const char *math;                  /* the libm name (double), or NULL */
    double (*math_f64)(double);
    float (*math_f32)(float);
    bool transcendental;
    double (*math2_f64)(double, double); /* a function of two arguments (MATH2) */
    float (*math2_f32)(float, float);
    bool own;                          /* OWN: a float function of bcgen's own */
    const char *tile;
} op_info;
extern const op_info op_table[OP_COUNT];
/* The type of a RULE_FIXED row's arguments and result (mul_q7: i8, mul_q15:
 * i16, mul_q31: i32) and its fraction bits (7, 15, 31); BCG_DTYPE_COUNT and
 * 0 for other rows (ops.c). */
bcg_dtype op_fixed_dtype(expr_op op);
int op_fixed_fraction_bits(expr_op op);
/* Whether row OP of the operator table, written on operands of dtype T
 * (its call, "hypot(a, b)", or its operator, "a << b"), is computed by
 * microkernels in a kernel bcg_compile makes with CTX (COVER_TILED), by
 * tcc's per-element code (COVER_SCALAR), is not typed (COVER_UNTYPED:
 * shifts of floats ...) or failed otherwise; the expression into EXPR
 * (CAP bytes) unless NULL (coverage.c). */
typedef enum tile_cover { COVER_TILED, COVER_SCALAR, COVER_UNTYPED, COVER_FAILED } tile_cover;
tile_cover tile_coverage(bcg_context *ctx, expr_op op, bcg_dtype t, char *expr, size_t cap);

typedef struct expr_node expr_node;
struct expr_node {
    expr_op op;
    int column;          /* 1-based column of the token that made the node */
    bcg_dtype dtype;     /* result type, set by expr_type */
    int operand;         /* OP_OPERAND: index into the operand list */
    bcg_dtype cast_to;   /* OP_CAST: target type */
    /* OP_LITERAL: the value, in the literal's final dtype after expr_type
     * (i for signed/bool, u for unsigned, f for floats). */
    bool literal_is_float;   /* as written: 1.5, 1e3 are float; 7 is int */
    union { int64_t i; uint64_t u; double f; } value;
    int arg_count;
    expr_node *args[3];
};

/* Name table: what identifiers mean.  names[i] is operand i. */
typedef struct expr_names {
    int count;
    const char *const *names;
} expr_names;

/* Parses TEXT into a tree allocated in A.  Unknown names, unknown functions,
 * wrong argument counts, bad tokens (including any byte outside printable
 * ASCII), depth over BCG_MAX_DEPTH and length over BCG_MAX_EXPR are errors
 * with a column.  Identifiers are resolved to operand indices here: no name
 * text survives into the tree. */
bcg_status expr_parse(arena *a, const char *text, const expr_names *names,
                      expr_node **root, bcg_error *err);
/* Assigns dtypes bottom-up from the operand dtypes, applying NumPy's
 * promotion with weak literals (NEP 50), folds literal-only subtrees, and
 * rejects what NumPy rejects (bitwise ops on floats, a literal that does not
 * fit the other side's type, ...) with the column of the offending node. */
bcg_status expr_type(arena *a, expr_node *root, const bcg_dtype *operand_dtypes,
                     int operand_count, bcg_error *err);
const char *expr_op_name(expr_op op);   /* "+", "sqrt", "where" ... */
/* The type in which node N computes (its children are converted to it):
 * `a < b` with i8 and f32 compares in f32 while n->dtype is bool; `/` on
 * integers computes in f64.  See expr_operation_type in type.c. */
bcg_dtype expr_operation_type(const expr_node *n);
/* Writes the typed tree, one node a line, indented:  "add f32", "  operand a f32" */
void expr_dump(strbuf *sb, const expr_node *root, const expr_names *names);
/* Fully parenthesised one-line form: "((a * b) + c)" */
void expr_format(strbuf *sb, const expr_node *root, const expr_names *names);

/* ---- plan.c: the iteration plan ------------------------------------------ */

/* Operand 0 of a plan is the output; plan operand i+1 is input i. */
typedef struct plan {
    int operand_count;              /* inputs + 1 */
    int loop_count;                 /* 0: a single element (or the output is empty, see `empty`) */
    int64_t elements;               /* product of the result shape */
    bool empty;                     /* elements == 0: nothing to do */
    int64_t extent[BCG_MAX_RANK];   /* loop trip counts, outermost first */
    /* stride[k][l]: elements operand k advances per step of loop l (0 = broadcast) */
    int64_t (*stride)[BCG_MAX_RANK];
    /* How loops map back to result dimensions, for explain: loop l covers
     * result dimensions dim_first[l] .. dim_first[l] + dim_count[l] - 1 after
     * reordering by `order`. */
    int order[BCG_MAX_RANK];        /* result dimension at loop position, before merging */
    int dim_first[BCG_MAX_RANK];
    int dim_count[BCG_MAX_RANK];
} plan;

typedef struct plan_input {
    const shape *aligned;     /* shape aligned to the result rank */
    const int64_t *strides;   /* strides in elements for the ORIGINAL shape, or NULL = contiguous */
    int original_rank;        /* rank of the original shape */
    const shape *original;    /* the original shape (strides index into it) */
    int axis_offset;          /* where original dim 0 sits in the aligned shape */
} plan_input;

/* Builds the plan: broadcast strides (0 where size 1), drops size-1 loops,
 * orders loops so the output's (then the inputs') smallest strides are
 * innermost, and merges adjacent loops that every operand traverses jointly
 * contiguously.  OUTPUT_STRIDES gives the output's strides over the result
 * shape (NULL: C-contiguous).  Fails only on allocation failure. */
bcg_status plan_build(arena *a, const shape *result, const int64_t *output_strides,
                      int input_count, const plan_input *inputs, plan **out,
                      bcg_error *err);
/* For the JIT's 2-D tiles of long runs (innermost extent >= MIN_RUN, the
 * output contiguous along it): an input read with a stride beyond
 * LONG_STRIDE there and contiguous along an outer loop of MIN_ROWS or more
 * gets that loop moved just outside the innermost (plan.c says why). */
void plan_order_transposed(plan *p, int64_t long_stride, int64_t min_run, int64_t min_rows);
/* The same for an input read with a short stride, not 1, along an outer
 * loop and contiguously along none (plan.c says which loop moves). */
void plan_order_spaced(plan *p, const size_t *size, int64_t long_stride, int64_t min_run,
                       int64_t min_rows, int64_t max_along, int64_t line_bytes,
                       int64_t reuse_bytes);
/* Text form, one loop a line, outermost first. */
void plan_dump(strbuf *sb, const plan *p, const char *const *operand_names);
/* The byte range [*LOW, *HIGH) that plan operand K (0: the output) reaches
 * from its element [0, ..., 0], for elements of SIZE bytes; 0, 0 when the
 * plan is empty. */
void plan_span(const plan *p, int k, size_t size, int64_t *low, int64_t *high);

/* ---- tmpl.c: the template engine ----------------------------------------- */

/* See the comment at the top of tmpl.c for the mini-language.  Variables are
 * looked up in a tmpl_scope: strings, integers, booleans and lists of
 * scopes (for loops). */
typedef struct tmpl_scope tmpl_scope;
tmpl_scope *tmpl_scope_new(arena *a, const tmpl_scope *parent);
void tmpl_set_str(tmpl_scope *s, const char *name, const char *value);
void tmpl_set_int(tmpl_scope *s, const char *name, int64_t value);
void tmpl_set_bool(tmpl_scope *s, const char *name, bool value);
/* Appends a new item scope to the list NAME (created on first use) and returns it. */
tmpl_scope *tmpl_list_add(tmpl_scope *s, const char *name);
/* Declares NAME as an empty list (so a loop over it renders nothing). */
void tmpl_list_declare(tmpl_scope *s, const char *name);
/* Renders template TEXT (FILE names it in errors) into SB.  Unknown
 * variables, unclosed or mismatched blocks, and unknown directives are
 * errors naming file, line and variable. */
bcg_status tmpl_render(strbuf *sb, const char *file, const char *text,
                       const tmpl_scope *scope, bcg_error *err);
/* Templates compiled into the library (each templates/NAME.tmpl, embedded at build time):
 * NULL when there is no such template. */
const char *tmpl_builtin(const char *file);

/* ---- front.c and compile.c: the pipeline --------------------------------- */

typedef struct compile_operand {
    const char *name;
    bcg_dtype dtype;
    shape shape;          /* as given */
    int64_t strides[BCG_MAX_RANK]; /* as given, or C-contiguous filled in */
    bool strides_given;
    /* the operand view compile_front builds once for plan, explain, aot and
     * run: elements [low, high] its strides reach from element [0,...,0]
     * (both 0 when empty), and the result dimension its first one sits at */
    int64_t low, high;
    bool empty;
    int axis_offset;
} compile_operand;

/* What the emitter decided about a kernel's code: its form and the sizes
 * that shaped it.  emit_kernel fills compile.form; the kernel's header
 * comment and `bcgen explain` print it (form_describe, kir.c); the whole
 * decision is the kernel IR (kir.h), which compile.ir points at. */
typedef enum form_kind {
    FORM_EMPTY,          /* the result is empty: no code */
    FORM_UNROLLED,       /* one statement per element, no loops */
    FORM_ROWS,           /* the two innermost loops are one microkernel call */
    FORM_TILES,          /* the innermost run calls microkernels, a tile at a time */
    FORM_BLOCKS,         /* the two innermost loops run in cache blocks */
    FORM_GROUPS,         /* the innermost loop runs groups of statements (+ a rest) */
    FORM_INNER_UNROLLED, /* loops, the innermost fully unrolled */
    FORM_REDUCE,         /* loops, the reduced ones innermost, into accumulators */
    FORM_SMALL           /* no loops: one function of straight-line vector code */
} form_kind;

typedef struct kernel_form {
    form_kind kind;
    bool stream;                 /* ROWS, TILES: streaming stores of the output */
    int64_t runs, run_length;    /* ROWS, 2-D TILES (runs > 0): runs of run_length; TILES,
                                    INNER_UNROLLED: run_length */
    int tile_elements;           /* TILES */
    bool fused;                  /* 1-D TILES: the tile's tree is one function of fused
                                    vector code (gen/vex.c); tile_elements 0: a call
                                    takes the whole run */
    int64_t block_outer, block_inner; /* BLOCKS: trips per block */
    int64_t groups, group_size, rest; /* GROUPS */
    int reduce;                  /* REDUCE: BCG_REDUCE_*; reduce_count elements an output element */
    int64_t reduce_count;
} kernel_form;

/* One compile: inputs, every stage's result, the arena they live in. */
typedef struct compile {
    arena *arena;
    bcg_error *err;
    const char *text;
    bcg_options options;
    int operand_count;
    compile_operand *operands;   /* operand_count of them, in the arena */
    broadcast_result *broadcast; /* after shape_broadcast */
    expr_node *root;             /* after expr_parse / expr_type */
    bool *used;                  /* per operand: the expression reads it (or it is the target) */
    bool *unread;                /* per operand: used, but the folded tree reads it no more
                                    (a * 0 on integers): zero strides in the plan (front.c) */
    plan *plan;                  /* after plan_build */
    char *source;                /* after emit (arena) */
    kernel_form form;            /* after emit: the code form chosen */
    struct kernel_ir *ir;        /* after emit: the kernel IR (kir.h; arena) */
    /* after compile_front: the output's dtype (the root is cast to it when
     * the expression's differs) and its strides when a view was asked for
     * (NULL: C-contiguous, or the in-place target's) */
    bcg_dtype out_dtype;
    const int64_t *out_strides;  /* over the result's dimensions (0 where reduced) */
    bool out_cast;               /* the root is the cast on store compile_front added */
    /* the output array: its shape (the result's, or a reduction's target)
     * and its own strides (NULL: C-contiguous), as the caller describes it */
    shape out_shape;
    const int64_t *view_strides;
    /* a reduction (BCG_REDUCE_*, 0 none): which result dimensions it
     * reduces, the dtype of the reduced value (before the cast to
     * out_dtype), how many elements each output element reduces, and when
     * the result is empty but the output is not, the plan over the output
     * that stores the reduction's identity */
    int reduce;
    bool reduced[BCG_MAX_RANK];
    bcg_dtype reduced_dtype;
    int64_t reduce_count;
    plan *fill_plan;
    const char *function_name;   /* default "bcg_kernel" */
    struct emit_aot *aot;        /* NULL: the JIT form; else the AOT form (aot.c) */
    /* bcg_compile sets this: long inner runs may call the library's
     * microkernels (runtime/microkernels.c), which only the JIT links.
     * bcg_emit and the AOT form leave it false and get plain C. */
    bool microkernels;
    /* bcg_compile sets this (bcg_options.stream_stores): where the
     * innermost run goes through microkernels, the output is written with
     * streaming stores (bcg_mk_stream) and the kernel ends with a store
     * fence (bcg_mk_fence).  Only with microkernels. */
    bool stream;
    /* bcg_compile sets this to its context's source budget (BCG_MAX_SOURCE):
     * emit_kernel then makes loops where full unrolling would exceed it.
     * 0 (bcg_emit, the AOT form): no budget. */
    size_t max_source;
    /* bcg_emit_program (program.c), plain form only: NEEDS_OUT (when set)
     * gets every helper and math function this kernel's C uses or-ed in;
     * PROGRAM_NEEDS (when set) is or-ed into what the prelude renders, so
     * the first statement's prelude serves every statement; NO_PRELUDE
     * renders the header comment and the function only. */
    struct emit_needs *needs_out;
    const struct emit_needs *program_needs;
    bool no_prelude;
    /* A fused program (program.c, "fusion"): the last fuse_count operands
     * are the program's other outputs (element-wise, the result's shape,
     * written, never read); fuse_root[j] is the typed tree of the one
     * written into operand operand_count - fuse_count + j, cast to its
     * dtype.  emit_kernel folds them into fuse_folded; lowering stores each
     * in the same loop nest as the root (kir.h, "roots"). */
    int fuse_count;
    expr_node **fuse_root;
    const expr_node **fuse_folded;
    /* fuse_reduce[j]: how other root j reduces (reduce 0: element-wise, its
     * output of the result's shape); NULL when none does.  A reducing
     * root's output operand has the target's shape, broadcast (stride 0)
     * along the reduced dimensions, which are the kernel's own. */
    struct fuse_reduction *fuse_reduce;
} compile;

/* A fused program's other output that is a reduction (as compile.reduce,
 * reduced_dtype, out_dtype and reduce_count are for the kernel's own). */
typedef struct fuse_reduction {
    int reduce;
    bcg_dtype reduced_dtype, out_dtype;
    int64_t count;
    int lanes; /* lowering's: reduce_lanes_of over the fused kernel's plan */
} fuse_reduction;

/* How many times contexts ran libtcc (for the cache tests). */
long compile_tcc_count(const bcg_context *ctx);
/* Test hook: the source budget of CTX's later compiles (BCG_MAX_SOURCE by
 * default), so tests can reach it with small kernels. */
void compile_set_max_source(bcg_context *ctx, size_t bytes);
/* How many bcg_run_threads calls ran on more than one thread, and how many
 * workers the context's pool has started (for the thread tests). */
long compile_threaded_run_count(const bcg_context *ctx);
int compile_pool_workers(bcg_context *ctx);

/* The choices bcg_compile makes for a compiled kernel, on C after
 * compile_front: microkernels (unless the cc backend), streaming stores by
 * options.stream_stores, and MAX_SOURCE.  `bcgen explain` shows the form
 * they lead to. */
void compile_choose_jit(compile *c, size_t max_source);
/* The bytes a kernel touches (output and inputs) from which BCG_STREAM_AUTO
 * streams: the last-level cache's size, read once (compile.c says how), or
 * BCG_STREAM_AUTO_BYTES where it is unknown. */
size_t compile_stream_bytes(void);

/* What a caller of the pipeline wants made. */
typedef enum compile_goal {
    COMPILE_FRONT, /* checks, the broadcast, the typed tree, the plan */
    COMPILE_PLAIN, /* ... and plain C (bcg_emit) */
    COMPILE_JIT,   /* ... bcg_compile's choices (compile_choose_jit) and the JIT form's C */
    COMPILE_AOT    /* ... and the AOT form's C (c->aot set by the caller) */
} compile_goal;

typedef struct compile_request {
    const char *text;
    const bcg_operand *operands;
    int operand_count;
    const bcg_options *options;
    compile_goal goal;
    size_t max_source;   /* COMPILE_JIT: the context's source budget */
    int64_t outer_trips; /* > 0: the outermost loop cut to this many trips */
    /* called after the front end, before emitting; an error stops the compile */
    bcg_status (*check)(compile *c, void *arg);
    void *check_arg;
} compile_request;

/* The pipeline (compile.c), the one path every caller takes:
 * compile_front -> [compile_choose_jit] -> [cut] -> [check] -> emit_kernel.
 * C has its arena and err set (and function_name, aot) by the caller. */
bcg_status compile_pipeline(compile *c, const compile_request *r);
/* Cuts C's outermost loop to TRIPS trips (a thread's piece): loops only. */
bcg_status compile_cut_outer(compile *c, int64_t trips);

/* The name of reduction R ("sum"), NULL when out of range; and R's dtype
 * over values of dtype T, as NumPy's (front.c). */
const char *reduce_name(int r);
bcg_dtype reduce_dtype(int r, bcg_dtype t);
/* How many partial sums C's reduction keeps (front.c): REDUCE_LANES for a
 * float sum or mean (a double or compensated accumulation) whose innermost
 * plan loop is reduced and read contiguously (every input's stride there
 * is 0 or 1): element j of that loop goes to partial j % REDUCE_LANES, and
 * the partials are combined in a fixed order when the element is stored
 * (emit.c's lanes helper, eval.c's lanes_finish), so the vectorised
 * microkernels, plain C and the reference evaluator all add in the same
 * order.  Else 1: one accumulator, the elements in the plan's order. */
#define REDUCE_LANES 16
int reduce_lanes(const compile *c);
/* The same for a reduction REDUCE of values of dtype VALUE into plan
 * operand OUT of C's plan (a fused program's other output; 0: C's own). */
int reduce_lanes_of(const compile *c, int reduce, bcg_dtype value, int out);

/* NumPy's can_cast(FROM, TO, casting='same_kind') (front.c). */
bool dtype_same_kind(bcg_dtype from, bcg_dtype to);

/* Validates the operands and runs shape_broadcast, expr_parse, expr_type and
 * plan_build.  c->arena must be set; errors go to c->err. */
bcg_status compile_front(compile *c, const char *text, const bcg_operand *operands,
                         int operand_count, const bcg_options *options);

/* ---- cache.c: contexts, kernels and the kernel cache ------------------------- */

typedef struct kernel_split kernel_split;  /* compile.c: a kernel cut for threads */
typedef struct jit_code jit_code;
typedef struct cc_code cc_code;
typedef void (*kernel_fn)(void *out, const void *const *in); /* the kernel ABI (emit.c) */
/* A kernel with bcg_run's checks in its own code (vex_small_checks): 0
 * after running it, 1 without running it when a check fails. */
typedef int (*kernel_check_fn)(void *out, const void *const *in);

/* What bcg_run checks of one operand. */
typedef struct run_operand {
    int64_t low, high;    /* [low, high) bytes from its pointer; low == high: no memory read */
    size_t size;          /* bytes per element */
    bool may_alias;       /* an exact alias of the output is allowed (same layout) */
    const char *name;     /* for error messages */
} run_operand;

/* bcg_run's fast path (run.c): an operand check_run checks (it reads
 * memory), precomputed at compile time. */
typedef struct run_check {
    int64_t low, high;    /* as run_operand's */
    uint32_t index;       /* the operand */
    uint32_t mask;        /* size - 1: the alignment bits */
    bool may_alias;
} run_check;

/* A compiled kernel.  Small on purpose (issue 9): the tree, the plan and the
 * source are not kept; kernel_recompile rebuilds them from the key when a
 * threaded split or bcg_kernel_source needs them.  Only a kernel that runs
 * on the reference evaluator (fn NULL) keeps its front end. */
struct bcg_kernel {
    /* cache.c's, under the context's lock */
    bcg_kernel *hash_next;             /* the bucket's chain */
    bcg_kernel *newer, *older;         /* use order of cached kernels */
    bcg_kernel *live_prev, *live_next; /* every kernel of the context not yet freed */
    bool cached;
    bool retired;                      /* atomic: unreferenced, freed once no run holds it */
    long callers;                      /* bcg_compile returns not yet released */
    int refs;                          /* atomic: cached + callers (+ runs without a slot) */
    size_t bytes;                      /* memory it holds, for the byte capacity */
    uint64_t hash;                     /* of the key */
    unsigned char *key;                /* the cache key (cache.c), key_length bytes */
    size_t key_length;
    bcg_context *ctx;

    kernel_fn fn;                      /* NULL: the reference evaluator runs it */
    kernel_check_fn checked;           /* fn with check_run's checks first, or NULL */
    jit_code *code;                    /* libtcc's code, or */
    cc_code *cc;                       /* the cc backend's object */
    struct arena *arena;               /* only with fn NULL: holds front */
    struct compile *front;
    char *note;                        /* why the JIT was not used; NULL: none */
    char *warning;                     /* the legacy broadcast warning; NULL: none */
    bool stream;                       /* compiled with streaming stores */
    size_t max_source;                 /* the source budget it was compiled under */

    bcg_dtype dtype;                   /* the result */
    int rank;
    int64_t *shape;
    int64_t elements;

    int operand_count;                 /* bcg_run's checks */
    int inplace;
    size_t output_size;
    int64_t output_low, output_high;
    run_operand *run;
    int check_count;                   /* the operands that read memory, compact */
    run_check *checks;                 /* (in run's block) */

    int loop_count;                    /* threaded runs cut the outermost loop */
    int64_t outer_extent;
    int64_t *outer_stride;             /* per plan operand (0: output) */

    pthread_mutex_t lazy_lock;         /* guards source and splits */
    bool lazy_lock_ready;
    char *source;                      /* made on first bcg_kernel_source */
    kernel_split *splits;
};

/* Looks up the kernel of these arguments; on a hit it is returned with a
 * reference for the caller and becomes the most recently used.  *PROBE
 * gets the key's hash and length for cache_key_new.  Arguments must be
 * keyable (compile.c checks names and ranks first). */
typedef struct key_probe {
    uint64_t hash;
    size_t length;
} key_probe;
bcg_kernel *cache_lookup(bcg_context *ctx, const char *expr, size_t expr_length,
                         const bcg_operand *ops, int count, const bcg_options *options,
                         key_probe *probe);
/* The key bytes of the arguments (mem_alloc'd, PROBE->length bytes); NULL
 * when memory runs out. */
unsigned char *cache_key_new(const key_probe *probe, const char *expr, size_t expr_length,
                             const bcg_operand *ops, int count, const bcg_options *options);
/* The arguments a key was made from, rebuilt in A (names and text
 * NUL-terminated).  False when memory runs out. */
bool cache_key_decode(arena *a, const unsigned char *key, size_t length, const char **expr,
                      bcg_operand **ops, int *count, bcg_options *options);
/* Adds new kernel K (no references yet) to its context's cache and returns
 * it with a reference for the caller, or, when another thread cached the
 * same key first, frees K and returns that one.  Evicts least recently
 * used kernels past the capacity. */
bcg_kernel *cache_insert(bcg_kernel *k);
/* A run of K in progress keeps it allocated from run_begin to run_end,
 * whatever other threads release or evict meanwhile (cache.c: a slot per
 * thread, or a reference). */
typedef void *run_token;
/* (hidden: not interposable, so cache.c inlines them into run_function
 * and run_checked; measured with the inline begin(): bcg_run of a
 * 16-element kernel 7.3 ns -> 5.0) */
#define RUN_HIDDEN __attribute__((visibility("hidden")))
RUN_HIDDEN run_token run_begin(const bcg_kernel *k);
RUN_HIDDEN void run_end(const bcg_kernel *k, run_token token);
/* run_begin, K's function on OUTPUT and INPUTS, run_end: one call (bcg_run's
 * fast path). */
RUN_HIDDEN void run_function(const bcg_kernel *k, void *output, const void *const *inputs);
/* The same through K's checked entry: its result (1: a check failed,
 * nothing ran). */
RUN_HIDDEN int run_checked(const bcg_kernel *k, void *output, const void *const *inputs);
/* Drops a reference; the last one retires the kernel (freed once no run
 * of it is in progress). */
void kernel_drop(const bcg_kernel *k);
/* Frees a kernel no one refers to (compile.c defines it: the code, the
 * splits, the arrays). */
void kernel_destroy(bcg_kernel *k);
/* The context's source budget and its compile counters (compile.c). */
size_t cache_max_source(bcg_context *ctx);
void cache_count_compile(bcg_context *ctx);
long cache_key_compares(const bcg_context *ctx); /* for tests: keys compared by lookups */
/* The pool of bcg_run_threads (made on first use; NULL when memory runs
 * out), counting a threaded run. */
struct pool *cache_pool(bcg_context *ctx);

/* ---- compile.c: kernels --------------------------------------------------- */

/* Compiles SOURCE with the backend C's options ask for (libtcc, or the cc
 * backend falling back to libtcc with a sentence in NOTE). */
bcg_status compile_code(const compile *c, const char *source, jit_code **code, cc_code **cc,
                        kernel_fn *fn, char *note, size_t note_size, bcg_error *err);
/* K compiled again in A, from its key (or its kept front end): the same
 * tree, plan, choices and source, the outermost loop cut to OUTER_TRIPS
 * when > 0 (run.c's threaded pieces; bcg_kernel_source passes 0). */
bcg_status kernel_recompile(const bcg_kernel *k, arena *a, bcg_error *err, int64_t outer_trips,
                            compile **out);

/* A fused program's kernel from C (its fuse fields set) and request R,
 * keyed by KEY_TEXT; takes arena A (the kernel keeps it, or it is freed).
 * program.c. */
bcg_status compile_fused(bcg_context *ctx, arena *a, compile *c, const char *key_text,
                         const compile_request *r, bcg_kernel **kernel);

/* ---- run.c: running kernels ----------------------------------------------- */

/* Frees K's threaded pieces (kernel_destroy calls it). */
void run_splits_free(bcg_kernel *k);

/* ---- program.c: programs of several statements, one output each ---------- */

typedef struct program_statement {
    const char *name;      /* "" for a plain expression */
    const char *text;      /* its expression as written */
    int column;            /* 1-based column of text[0] in the program */
    int name_column;
    const char *expanded;  /* text with earlier statements' names written out */
    bool expanded_differs; /* expanded is not text: columns do not map */
    bool *uses;            /* [BCG_MAX_OUTPUTS]: the earlier statements it uses */
    bcg_options options;   /* the program's, with this statement's output */
} program_statement;

typedef struct program {
    int count;
    bool plain;            /* one expression without NAME = */
    program_statement *statements;
} program;

/* Whether TEXT is in statement form (holds ';' or an assignment '='). */
bool program_is_statements(const char *text);
/* Splits TEXT into statements (names and texts only; in A). */
bcg_status program_split(arena *a, const char *text, program *out, bcg_error *err);
/* program_split, then names checked against OPERANDS, expressions
 * expanded and each statement's options made from OPTIONS (outputs
 * matched by name or index). */
bcg_status program_resolve(arena *a, const char *text, const bcg_operand *operands,
                           int operand_count, const bcg_options *options, program *p,
                           bcg_error *err);
/* Fusion: whether a program's statements compile into one kernel, and
 * what that kernel is compiled from (program.c, "fusion"). */
typedef struct program_fusion {
    bool fused;
    char why[320];          /* when not fused: the statement and the reason */
    int primary;            /* the statement whose output is the kernel's own */
    int order[BCG_MAX_OUTPUTS]; /* root j's statement: order[0] = primary, then
                                   the others in statement order */
    bcg_operand *operands;  /* the program's, then one per other output */
    int operand_count;
    int64_t (*strides)[BCG_MAX_RANK]; /* the other outputs' strides */
    int64_t (*shapes)[BCG_MAX_RANK];  /* a reducing other output's shape (its target's) */
    int64_t *dims;          /* the result's shape (every output's) */
    char *key_text;         /* the fused kernel's cache key text */
    compile **fronts;       /* each statement's front end (its typed, cast tree) */
} program_fusion;

/* Decides whether P (resolved) fuses, in A; a statement that does not
 * compile leaves it unfused (the per-statement path reports the error). */
bcg_status program_fuse_check(arena *a, const program *p, const bcg_operand *operands,
                              int operand_count, const char *text, program_fusion *f);
/* A new compile in A (zeroed, owned by A) whose stages report into ERR:
 * the front ends and kernels of a program's statements and of its fused
 * kernel; NULL when out of memory. */
compile *program_compile_new(arena *a, bcg_error *err);
/* C (in A, from program_compile_new) set up as the fused
 * kernel of F's program and R as its request (goal to be set). */
bcg_status program_fuse_setup(arena *a, const program *p, const program_fusion *f, compile *c,
                              compile_request *r);
/* Whether C, a fused kernel compiled for the JIT, would run slower than the
 * statements' own kernels (several reductions in per-element code over long
 * runs); WHY (CAP bytes) then says why. */
bool program_fused_slower(const compile *c, char *why, size_t cap);
/* Statement I's kernel if it is made (a fused program makes them when
 * bcg_program_kernel asks), else NULL; its output's dtype, shape and
 * warnings ("; "-separated, "" when none), made or not. */
const bcg_kernel *program_kernel_made(const bcg_program *prog, int i);
bcg_dtype program_output_dtype(const bcg_program *prog, int i, int *rank,
                               const int64_t **shape, const char **warning);

/* compile.c: whether C (after compile_front) has warnings, and their text
 * ("; "-separated, mem_alloc'd; NULL when none or out of memory). */
bool compile_warnings_exist(const compile *c);
char *compile_warnings(const compile *c);

/* Puts "statement NAME: " before ERR's message and maps its column into
 * the program text (0 when the statement was expanded). */
void program_statement_error(const program *p, int index, bcg_error *err);

/* ---- cnames.c: names C already means -------------------------------------- */

/* Why NAME cannot name a function or parameter of generated C, as a phrase
 * finishing "'NAME' is ..." ("a name from <math.h>", "a C++ keyword"), or
 * NULL when C does not reserve it: C99/C11/C23 and C++ keywords, every
 * name the C99 standard headers declare, the f/l forms of the math
 * functions, and C99's reserved patterns (_X, __x, E..., INT..._MAX, ...). */
const char *cnames_reserved(const char *name);
/* The table's INDEXth name in its (strcmp) order, NULL past the end: for tests. */
const char *cnames_entry(size_t index);

/* ---- emit.c, kir.c, emit_aot.c: the kernel IR printed as C ----------------- */

/* Kernel ABI (what jit.c calls and the AOT header declares):
 *   void NAME(void *out, const void *const *in);
 * out/in point at element [0,...,0] of each operand (kernel_fn, in the
 * cache.c section). */
/* Emits the kernel for c (after compile_front) into c->source, and its
 * form into c->form. */
bcg_status emit_kernel(compile *c);
/* FORM as a sentence ("fully unrolled, one statement per element"), and
 * its kind as a word for JSON ("unrolled"). */
void form_describe(const kernel_form *form, char *buf, size_t cap);
const char *form_kind_name(form_kind kind);

/* The ahead-of-time form (aot.c writes firmware .c/.h pairs).  With c->aot
 * set, emit_kernel puts only the function into c->source: no prelude, no
 * helpers, and a typed entry point instead of the void ** ABI:
 *
 *     void NAME(T *out, const T0 *name0, const T1 *name1, ...);
 *
 * (for an in-place kernel the in-place operand is the non-const output and
 * there is no `out`).  It ors what the body calls into aot->needs, so one
 * file holding several kernels renders the helpers once (emit_helpers).
 * Positions and loop counters are ptrdiff_t. */
#define EMIT_HELPER_FAMILIES 42
#define EMIT_MATH_FUNCTIONS (OP_COUNT + 4) /* cexpr.c: ops.h's, then fabs fmod pow copysign */
typedef struct emit_needs {
    bool helper[EMIT_HELPER_FAMILIES][BCG_DTYPE_COUNT];
    bool math[EMIT_MATH_FUNCTIONS][2];   /* [function][0: double, 1: float] */
    bool half_types;                     /* bcg_f16 / bcg_bf16 are named */
} emit_needs;
typedef struct emit_aot {
    bool restrict_pointers;  /* parameters are restrict-qualified */
    bool math_double;        /* f32 sqrt/exp/log/sin/cos/tanh/pow computed in double;
                                false: sqrtf ... powf (the JIT's f32 pow is always double) */
    emit_needs needs;        /* out: or-ed over every kernel emitted with it */
    const char *parameters;  /* out: the last kernel's parameter list (its compile's arena) */
} emit_aot;
/* The stdint.h spelling of a dtype's C type: "int8_t", "float"; bool is "uint8_t". */
const char *emit_stdint_ctype(bcg_dtype t);
/* Why NAME cannot name an AOT function (IS_PARAMETER false) or one of its
 * parameters, as a phrase finishing "'NAME' is ..." ("a name from
 * <math.h>"), or NULL when it can: not a C or C++ keyword or a name of the
 * standard headers (cnames_reserved), no bcg_/BCG_/BCGEN_ prefix, no _t
 * suffix, no macro-like form (M_PI, ..._MAX); a parameter also not a name
 * the body uses (out, in0, in0_pos, i0, shared0, literal0). */
const char *emit_aot_name_problem(const char *name, bool is_parameter);
/* Whether operand OPERAND of an AOT kernel is a parameter by value: rank 0
 * and not the in-place target (which is written). */
bool emit_aot_by_value(const compile *c, int operand);
/* Renders the helpers NEEDS asks for (ops.c.tmpl) into OUT. */
bcg_status emit_helpers(arena *a, const emit_needs *needs, strbuf *out, bcg_error *err);
/* The libm functions NEEDS asks for, comma separated ("expf, sqrtf"), or "". */
void emit_math_names(const emit_needs *needs, strbuf *out);

/* ---- cc.c: the system compiler backend ------------------------------------ */

/* Compiles SOURCE with the system's C compiler (-O3, -march=native when
 * NATIVE) into a shared object cached on disk, loads it and returns
 * FUNCTION_NAME.  Errors: BCG_ERR_IO (no usable cache directory or
 * compiler), BCG_ERR_LIMIT (source too large, compiler past its time
 * limit), BCG_ERR_USAGE (a bad BCGEN_* setting), BCG_ERR_JIT (the
 * compiler or dlopen failed), BCG_ERR_NOMEM. */
bcg_status cc_compile(const char *source, const char *function_name, bool native,
                      cc_code **code, kernel_fn *fn, bcg_error *err);
void cc_free(cc_code *code);  /* NULL allowed */
/* How many times this process ran the compiler (for the disk-cache tests). */
long cc_compiler_runs(void);
/* Test hook: -march=native objects are keyed by IDENTITY instead of this
 * CPU's identity (NULL: the CPU's again).  IDENTITY must outlive its use. */
void cc_set_cpu_identity(const char *identity);
/* Every cached object is its ELF bytes followed by this trailer: "BCGOBJ01",
 * the 32-byte key (the object's name in hex), the SHA-256 of the ELF bytes
 * and their length (64-bit little endian).  Tests forge objects with it. */
#define CC_TRAILER_BYTES 80
void cc_object_trailer(const void *elf, size_t size, const unsigned char key[32],
                       unsigned char trailer[CC_TRAILER_BYTES]);
/* The disk cache as `bcgen cache` shows it. */
typedef struct cc_cache_info {
    char directory[4096]; /* $XDG_CACHE_HOME/bcgen or ~/.cache/bcgen */
    bool exists;          /* false: nothing was ever cached (nothing else is set) */
    long entries;         /* objects (cleared: removed) */
    uint64_t bytes;       /* their total size (cleared: removed) */
    long temporary;       /* tmp- files: compiles under way or left by killed ones */
    uint64_t limit;       /* BCGEN_CACHE_MAX or the default (stats only) */
} cc_cache_info;
/* Counts the cache without creating it; refuses a directory the cc backend
 * would refuse, saying why. */
bcg_status cc_cache_stats(cc_cache_info *info, bcg_error *err);
/* Removes every cached object and tmp- file (nothing else in the directory). */
bcg_status cc_cache_clear(cc_cache_info *info, bcg_error *err);

/* ---- eval.c: the reference evaluator ------------------------------------- */

/* Computes the result of the typed tree over the plan with a generic strided
 * loop, no code generation.  out/in as for kernel_fn.  Returns BCG_ERR_NOMEM
 * only if its scratch allocation fails. */
bcg_status eval_run(const compile *c, void *out, const void *const *in, bcg_error *err);

/* Folds operator node N over the literal nodes ARGS into the literal OUT
 * (N's dtype, the evaluator's semantics); fold.c uses it. */
void eval_fold(const expr_node *n, const expr_node *const *args, expr_node *out);
/* An OWN float function of ops.h (deg2rad, expit, logaddexp ...) of A
 * (and B) in float when SINGLE, else in double: the arithmetic of its
 * helper in templates/ops.c.tmpl. */
double eval_own_function(expr_op op, bool single, double a, double b);

/* ---- fold.c: constant folding before emitting ------------------------------ */

/* *OUT is ROOT with every operand-free subtree one literal and where/&&/||
 * with a constant deciding argument simplified (see fold.c for why), then
 * narrowed (narrow_tree) and folded again.  ROOT
 * is not changed; new nodes live in A.  Fails only when memory runs out. */
bcg_status fold_tree(arena *a, expr_node *root, expr_node **out, bcg_error *err);
/* Whether two typed subtrees are the same computation. */
bool fold_same_tree(const expr_node *a, const expr_node *b);

/* ---- narrow.c: computing in the narrowest exact type ------------------------ */

/* The rules of narrow.c, for counting how often each fires (tests). */
enum {
    NARROW_RULE_COMPARE_LITERAL, /* f64(a) > 2.5 -> a > 2 */
    NARROW_RULE_COMPARE_VIEWS,   /* f64(a) < f64(b) -> a < b */
    NARROW_RULE_DECIDED,         /* f64(a) > 300.0 with a i8 -> false */
    NARROW_RULE_INTEGER_OP,      /* maximum(f64(a), f64(b)) -> f64(maximum(a, b)) */
    NARROW_RULE_CAST,            /* i16(f64(a)) with a i8 -> i16(a) */
    NARROW_RULE_SATURATE,        /* i8(f64(a)) with a i32 -> i8(clamped a) */
    NARROW_RULE_FLOAT_CAST,      /* f32(f64(a)) with a i16 -> f32(a) */
    NARROW_RULE_TRUTH,           /* where(f64(a), x, y) -> where(a, x, y) */
    NARROW_RULE_COUNT
};
/* ROOT (a folded typed tree) with integers that pass through float types
 * computed in integer types, every bit of the result the same (narrow.c
 * lists the rules); FIRED (NULL, or NARROW_RULE_COUNT counters) counts the
 * rules applied.  ROOT is not changed: changed nodes are new, in A. */
bcg_status narrow_tree(arena *a, expr_node *root, expr_node **out, long *fired, bcg_error *err);

/* ---- jit.c: libtcc -------------------------------------------------------- */

/* Compiles SOURCE and returns the function FUNCTION_NAME.  VEX (NULL:
 * none), VEX_SIZE bytes of machine code (vex.c), is mapped with the
 * kernel's code and bound to the name VEX_SYMBOL that SOURCE calls. */
bcg_status jit_compile(const char *source, const char *function_name,
                       const unsigned char *vex, size_t vex_size,
                       jit_code **code, kernel_fn *fn, bcg_error *err);
/* MACHINE (SIZE bytes of position-independent code whose kernel_fn is at
 * offset ENTRY: vex_build_small) mapped as a kernel's whole code, no
 * libtcc; jit_free frees it. */
bcg_status jit_bind(const unsigned char *machine, size_t size, size_t entry, jit_code **code,
                    kernel_fn *fn, bcg_error *err);
/* The entry jit_bind's code has before its function (ENTRY > 0: the
 * checks of vex_small_checks), or NULL. */
kernel_check_fn jit_checked_entry(const jit_code *code);
void jit_free(jit_code *code);
/* The memory CODE holds: its pages and its record (0 for NULL). */
size_t jit_code_size(const jit_code *code);
/* Test hook: what the latest compile cost libtcc's side (test_compile_cost). */
typedef struct jit_cost_info {
    int symbols_handed;     /* names given to tcc_add_symbol by the latest compile */
    int callables;          /* names a kernel may call, in all */
    long scratch_live;      /* libtcc's scratch allocations not freed (0 between compiles) */
    bool scratch_reused;    /* false once libtcc kept memory past a compile */
    size_t scratch_kept;    /* scratch bytes kept for the next compile */
} jit_cost_info;
void jit_costs(jit_cost_info *info);

/* runtime/microkernels.c and runtime/pool.c: see runtime/runtime.h */

#endif
