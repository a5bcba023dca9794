/* kir.h - the kernel IR: what lowering decides about a kernel's code, as
 * data, between the plan and C text.
 *
 *   folded tree + plan
 *     -> lower_kernel    (lower.c)   values, levels, locals, the code form,
 *                                    the steps of the function body
 *     -> kir_dump        (kir.c)     text for `bcgen explain` and the tests
 *     -> emit_kernel     (emit.c)    the C printer: JIT and plain forms
 *                                    (kernel.c.tmpl), the AOT form's
 *                                    signature (emit_aot.c), expressions
 *                                    (cexpr.c)
 *
 * Glossary (also emit.c's): a value is a node of the folded tree, numbered
 * in pre-order; its "level" l says it changes only with loops 0..l-1, so it
 * can be computed once just before loop l (level 0: once per call; level
 * loop_count: per element).  A value held in a local is "hoisted" to its
 * level.  A "position" follows one operand (plan index k: 0 the output,
 * k >= 1 input k - 1) through the loop nest as a running element offset, so
 * every access is a position plus a literal.  "Steps" are the function body
 * in order, each at a nesting depth; every printer walks the same steps.
 */
#ifndef BCGEN_KIR_H
#define BCGEN_KIR_H

#include "internal.h"

/* Per value (node of the folded tree). */
typedef struct kir_value {
    int level;          /* see the glossary */
    int size;           /* values in the subtree, this one included */
    const char *local;  /* the local holding this value ("shared0", "in1_value",
                           "literal0"), or NULL: written out where used */
    bool declares;      /* this occurrence declares `local` */
    signed char folded; /* -1, or the known 0/1 of an integer self-comparison */
    bool inside_local;  /* tiles: strictly inside a hoisted subtree, which C computes */
} kir_value;

/* ORDER KIR: kir_op_names in kir.c. */
typedef enum kir_op {
    KIR_LOCAL,        /* const T <local of node> = <value of node>; */
    KIR_STORE,        /* out[...] = root, operand k at (position k +) offsets[k] */
    KIR_LOOP,         /* for (i<loop> = 0; i<loop> < trips; i<loop>++) { */
    KIR_END,          /* } closing the innermost open loop or block */
    KIR_ADVANCE,      /* position `operand` += amount (any sign) */
    KIR_BLOCK_LOOP,   /* blocks of `size` trips over loop `loop` (extent trips):
                         for (i<loop>_block ...) { const long i<loop>_count = ...; */
    KIR_COUNT_LOOP,   /* for (long i<loop> = 0; i<loop> < i<loop>_count; i<loop>++) { */
    KIR_MOVE,         /* position `operand` (+= or -= when subtract) counter * amount,
                         counter i<loop>_block (by_count false) or i<loop>_count */
    KIR_MK_DECLARE,   /* the declaration of node's microkernel (variant) */
    KIR_TILE_LITERAL, /* const T tile_literal<node> = <literal>; (a stride-0 argument) */
    KIR_TILE_LOOP,    /* tiles of `size` over the innermost run of `trips` elements */
    KIR_TILE_CALL,    /* node's microkernel over one tile; into tile<node> unless the root */
    KIR_ROWS_CALL,    /* the root's _rows microkernel over the two innermost loops */
    KIR_FENCE,        /* the store fence after streaming stores */
    KIR_ACC_INIT,     /* a reduction's accumulator, at its identity */
    KIR_ACC_UPDATE,   /* the accumulator takes the root's value at the current offsets */
    KIR_ACC_STORE,    /* out[...] = the accumulator, finished (mean divides, casts) */
    KIR_ACC_TILE,     /* the accumulator's partial sums take a tile of the root's values
                         (a _sum16 microkernel; tile0, or the root operand itself) */
    KIR_TILE_CONVERT, /* argument `arg` of node converted into tile<node>_<arg> (a
                         bcg_mk_cast_F_T microkernel; see kir_tile_converts) */
    KIR_STORE_PAIR,   /* AOT: the root, add_sat or sub_sat of two 16-bit operands, at
                         offsets and offsets + 1, by one pair helper (Arm's qadd16) */
    KIR_TILE_STORE,   /* a fused program: root `node`'s tile (or the operand, literal or
                         output tile it shares) into output operand `operand` at its
                         position + tile_start, by bcg_mk_cast_T_T (a copy) */
    KIR_ELEMENT_OPEN, /* a fused program, per element: { (closed by an END) around the
                         element's shared values and its stores */
    KIR_ELEMENT_LOCAL,/* const T <local of node> = <value of node at offsets>; a subtree
                         several roots compute, once for the element */
    KIR_ROW_TILES,    /* 2-D tiles: tiles of `size` rows of loop `loop` (extent trips),
                         each row the whole innermost run; tile_count = rows x run */
    KIR_GATHER,       /* operand `operand` laid out contiguously in in<k>_tile (`size`
                         elements): the 2-D tile's rows, or the 1-D tile (by_count);
                         before the tiles when subtract (it repeats every row) */
    KIR_SCATTER,      /* tile0 (the root's tile) into the output's rows */
    KIR_VEX_CALL,     /* the tile's whole tree by its fused vector function
                         (kernel_ir.vex, gen/vex.c) in place of its TILE_CALLs */
    KIR_ROW_CALLS,    /* 2-D tiles with row_calls: for each row of the tile (closed by an
                         END), the tree's calls over that row's columns (tile_count) */
    KIR_COLUMN_TILES, /* 2-D tiles with row_calls: the run in columns of `size`
                         (column_start, column_count; closed by an END) */
    KIR_SMALL_CALL    /* the whole kernel: its straight-line vector function
                         (kernel_ir.small; `size` elements in `trips` vectors) */
} kir_op;

typedef enum kir_variant { KIR_PLAIN, KIR_STREAM, KIR_ROWS } kir_variant;

typedef struct kir_step {
    kir_op op;
    int depth;               /* nesting depth of the C text (1: the function body) */
    int node;                /* LOCAL, MK_DECLARE, TILE_LITERAL, TILE_CALL, ROWS_CALL */
    int loop;                /* LOOP, BLOCK_LOOP, COUNT_LOOP, MOVE */
    int operand;             /* ADVANCE, MOVE, GATHER: plan operand index; MK_DECLARE
                                with node -1: the gather (scatter when 0) of operand */
    int64_t trips;           /* LOOP, BLOCK_LOOP, TILE_LOOP, ROW_TILES: the extent */
    int64_t size;            /* BLOCK_LOOP, TILE_LOOP, ROW_TILES: trips per block or
                                tile; GATHER, SCATTER: elements in the tile */
    int64_t amount;          /* ADVANCE: elements; MOVE: the stride */
    bool subtract, by_count; /* MOVE; GATHER (see there) */
    kir_variant variant;     /* MK_DECLARE */
    bool convert;            /* MK_DECLARE: the cast kernel of argument `arg` of node */
    int arg;                 /* MK_DECLARE (convert), TILE_CONVERT: the argument */
    const int64_t *offsets;  /* STORE: per plan operand */
    /* STORE with node >= 1: a fused program's other root `node`, stored into
     * plan operand `operand` (the root, node 0, has node -1 here) */
} kir_step;

/* TILE_TEST: a unary operation whose tile is bool (u8) while its argument's
 * is the operation's dtype (isnan, isinf, isfinite, signbit) */
typedef enum tile_shape { TILE_BINARY, TILE_COMPARE, TILE_WHERE, TILE_UNARY, TILE_TEST } tile_shape;

typedef struct kernel_ir {
    const plan *p;
    int input_count;
    bcg_dtype out_dtype;
    int inplace;                 /* options.inplace */

    int node_count;
    const expr_node **nodes;     /* pre-order */
    int *post_order;             /* the same ids in post-order */
    kir_value *value;
    int per_element;             /* the level of a value read per element */
    int input_level[BCG_MAX_OPERANDS];
    bool input_used[BCG_MAX_OPERANDS];
    int shared_count, literal_count;

    /* the code form (kernel_form says it as data) and why it was chosen */
    kernel_form form;
    const char *reason;
    bool unrolled;               /* no loops; STORE offsets are absolute */
    bool tiled, stream, rows;
    int64_t factor, groups, rest;
    bool group_loop;
    int64_t block, block_inner;
    bool has_position[BCG_MAX_OPERANDS + 1];

    /* a reduction (BCG_REDUCE_*, 0 none): the loops from reduce_from on are
     * reduced; the reduced value's dtype and how many elements it takes;
     * fill: the result is empty, the steps store the identity over the
     * output (p is then the output's own plan) */
    int reduce;
    int reduce_from;
    bcg_dtype reduced_dtype;
    int64_t reduce_count;
    bool fill;
    int lanes;                   /* reduce_lanes: partial sums by the innermost index */
    /* the loop tiles run along: the innermost, or in a reduction over outer
     * loops, the kept loop just outside them (a block of accumulators) */
    int tile_loop;
    /* tiles: same[id] is the first value (in post-order) computing the
     * same tree as ID, whose tile ID's users read; ID itself when it is
     * computed (NULL: no tiles) */
    int *same;
    bool reduce_rows;            /* a block reduction of an operand: the innermost
                                    reduced loop is one _accadd_rows call */
    bool lane_rows;              /* and the sum is along the contiguous innermost loop:
                                    one _sum16_rows call finishes a tile of kept
                                    elements' laned sums (lanes is then 1) */
    /* 2-D tiles (lower.c, "2-D tiles"): a tile is tile_rows whole rows of
     * the innermost run, along loop tile_loop (the one outside it); gathered[k]:
     * plan operand k is read from its gathered tile (in<k-1>_tile), in the
     * 1-D tiles too; scatter: the root's tile is scattered into the output */
    bool tiles2d, scatter;
    /* gathered_out: the tree is the gathered operand itself (a copy), and
     * its gather writes the output's rows directly (lower.c,
     * gather_into_output) instead of a tile the cast kernel copies out */
    bool gathered_out;
    int64_t tile_rows;
    /* row_calls: the tree is called once per row of a 2-D tile (a
     * KIR_ROW_CALLS loop), so a per-row operand (strides 0 along the run)
     * is read in place as one value a call instead of gathered into a tile
     * (lower.c, "2-D tiles of long runs over a transposed input") */
    bool row_calls;
    /* row_groups > 0: the rows form's one call covers the loop outside the
     * tile's rows too (row_groups trips of it, tile_rows all the rows of
     * both: lower.c row_groups_chosen, vex_layout.group) */
    int64_t row_groups;
    int64_t tile_columns;        /* row_calls: a tile's columns of the run */
    bool gathered[BCG_MAX_OPERANDS + 1];

    int step_count, step_capacity;
    kir_step *steps;

    /* Roots (a fused program, compile.fuse_count): the tree of every output
     * numbered as one forest, root_id[0] = 0 the kernel's own (operand 0's
     * or the accumulator's), root_id[j] the one written into plan operand
     * root_operand[j] (an input slot past the real inputs).  Common
     * subtrees across roots are computed once a tile (same), loads are the
     * tiles' own; every store of the root is followed by one per other
     * root at the same element.  root_count 1: no fusion. */
    int root_count;
    int *root_id;
    int *root_operand;
    int real_inputs;             /* input_count without the fused outputs */
    bool stream_copies;          /* TILE_STORE steps of computed tiles stream
                                    (bcg_mk_copy_nt; a FENCE step ends the kernel) */
    /* several reductions (a fused program whose other roots reduce too;
     * NULL otherwise): root_reduce[j] is how root j reduces (reduce 0:
     * stored per element), root 0's mirroring reduce, reduced_dtype,
     * out_dtype, reduce_count and lanes.  Every reduction shares the
     * reduced loops; the ACC steps of root j > 0 carry node root_id[j] and
     * operand root_operand[j] (root 0's: node 0, operand 0), its
     * accumulator is acc<j>.  No tiles then: the per-element loop nest. */
    fuse_reduction *root_reduce;
    int element_count;           /* per-element forms: subtrees computed once an
                                    element for several roots (element<n> locals) */
    int *element_first;          /* [element_count]: the value declaring each */
    /* the tiles' tree as one fused AVX2 function (vex.c; NULL: microkernel
     * calls): a KIR_VEX_CALL step calls it */
    struct vex_function *vex;
    /* a small output's whole kernel as one function of straight-line AVX2
     * code (vex_build_small; NULL: none): the only step is a KIR_SMALL_CALL,
     * and jit.c binds the code as the kernel's function (no libtcc) */
    struct vex_function *small;
    bool small_flat; /* SMALL is the flat form (vex_build_flat): a loop of bodies */
    int small_max_run; /* the flat form's longest run (vex_flat_max_run, as chosen) */
} kernel_ir;

/* ---- lower.c ---------------------------------------------------------------- */

/* Lowers ROOT (the folded tree of C) over c->plan into *OUT (c->arena).
 * Reads c->options, c->microkernels, c->stream, c->aot. */
bcg_status lower_kernel(compile *c, const expr_node *root, kernel_ir **out);
/* The JIT's loop order (before a threaded piece cuts the outermost loop):
 * a transposed input's contiguous loop just outside the innermost, for the
 * 2-D tiles of long runs (plan_order_transposed). */
void lower_order_plan(compile *c);

/* ---- kir.c ------------------------------------------------------------------ */

/* The id of the Kth child of value ID. */
int kir_child(const kernel_ir *ir, int id, int k);

/* The dtype node ID's microkernel takes its argument K in, and whether the
 * argument's value (of its own dtype) is converted into it first (by a
 * TILE_CONVERT step: the implicit conversions of mixed dtypes and of
 * where's condition).  A cast node's microkernel is itself the conversion
 * (bcg_mk_cast_F_T) and takes its argument as it is. */
bcg_dtype kir_tile_argument_dtype(const kernel_ir *ir, int id, int k);
/* Which root (kernel_ir.root_id) value ID is, or -1; whether it is one. */
int kir_root_index(const kernel_ir *ir, int id);
bool kir_is_root(const kernel_ir *ir, int id);
/* Whether root ID's microkernel call writes its output directly (its
 * tile's users then read the output): the root's, unless a reduction's,
 * and a fused output's unless its copy streams (kernel_ir.stream_copies). */
bool kir_root_writes_output(const kernel_ir *ir, int id);
/* The value whose tile holds value ID's (see kernel_ir.same). */
int kir_tile_same(const kernel_ir *ir, int id);
bool kir_tile_converts(const kernel_ir *ir, int id, int k);
/* "bcg_mk_cast_F_T", the microkernel converting a tile of FROM into TO. */
void kir_cast_name(bcg_dtype from, bcg_dtype to, char *buf, size_t cap);
/* The microkernel family computing value ID ("add", "gt", "exp") and its
 * shape, or NULL; the dtype it computes in (its name's suffix). */
const char *kir_tile_family(const kernel_ir *ir, int id, tile_shape *kind);
bcg_dtype kir_tile_dtype(const kernel_ir *ir, int id);
/* "bcg_mk_gather_rows_32" (or scatter_rows) for elements of DTYPE into BUF. */
void kir_gather_name(bcg_dtype dtype, bool scatter, char *buf, size_t cap);
/* "bcg_mk_add_f32", "bcg_mk_add_f32_nt", "bcg_mk_add_f32_rows" into BUF. */
void kir_microkernel_name(const kernel_ir *ir, int id, kir_variant variant, char *buf,
                          size_t cap);
/* The microkernel of a block reduction's whole innermost reduced loop
 * (kernel_ir.reduce_rows) into BUF: "bcg_mk_accadd_rows_f32" for a root
 * operand, "bcg_mk_mul_accadd_rows_f32" for a binary root of two operands,
 * "bcg_mk_sum16_rows_f32" for laned sums (kernel_ir.lane_rows). */
void kir_accadd_rows_name(const kernel_ir *ir, char *buf, size_t cap);
/* Shortest decimal text that reads back as V (as a float when SINGLE), with
 * a '.' or an exponent so that C reads it as floating; subnormals in hex,
 * which is exact (clang warns about inexact decimal subnormals). */
void kir_format_float(char *buf, size_t cap, double v, bool single);
/* A literal's value as people read it: "true", "-3", "0.1", "nan", "-inf". */
void kir_format_literal(char *buf, size_t cap, const expr_node *n);
/* Operator OP's ops.h symbol ("+", "sqrt"); NULL for operand, literal, cast. */
const char *kir_op_symbol(expr_op op);
/* The tree fully parenthesised, operands as in0, in1, ... (header comment). */
void kir_format_tree(strbuf *sb, const expr_node *root);
/* The IR as text (one step a line, values as expressions) for explain;
 * at most MAX_STEPS steps, then how many more. */
void kir_dump(strbuf *sb, const kernel_ir *ir, int max_steps);
/* The IR as a JSON object (the same content). */
void kir_dump_json(strbuf *sb, const kernel_ir *ir, int max_steps);

#endif
