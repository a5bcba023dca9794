/* vex.h - fused AVX2 machine code for a tile's tree (vex.c). */
#ifndef BCGEN_VEX_H
#define BCGEN_VEX_H

#include "internal.h"

struct kernel_ir;

#define VEX_MAX_LEAVES 9

/* One tile's tree as a function
 *     void bcg_vex(long n, void *out, const void *const *in);
 * CODE (SIZE bytes, position-independent, in the compile's arena) computes
 * out[0 .. n) from in[j], leaf j's first element: value LEAF_NODE[j] of
 * the kernel IR (an operand or a hoisted local). */
typedef struct vex_function {
    unsigned char *code;
    size_t size;
    size_t entry;       /* small kernels: the function's offset after the checks
                           (vex_small_checks), else 0 */
    int leaf_count;
    int leaf_node[VEX_MAX_LEAVES];
    bool strided;   /* a leaf is read in place with a stride other than 0 and 1 */
    bool typed;     /* an integer or mixed tree (its leaves contiguous, one value,
                       or read in place with a stride of -1 or +-2; the rows
                       form too) */
    bool stream;    /* the root is stored past the caches (the kernel fences) */
    int lanes;      /* small kernels: output elements a vector */
    int64_t body;   /* the flat form: the elements of its loop's body */
    int split;      /* the flat form: the plan's loop of its rows (the loops after
                       it a row, those before it level loops) */
    int functions, functions_per_body; /* the flat form: its transcendentals, and
                       of them those computed again every body (the others once
                       before its loops) */
    int hoisted;    /* the flat form: values computed once before its innermost
                       level loop (vex.c small_mark_hoisted) */
    /* small kernels: the transcendentals' results computed (once per value
     * of the loops their operands vary along), against one per element */
    int64_t computed, per_element;
    int subtrees;   /* small kernels: of them, subtrees of operations (small_subtrees) */
    int polynomials; /* small kernels: of them, f32 functions computed by the
                        microkernels' polynomials, as the tiles (the flat form in
                        their place, vex.c small_few_values), not the C library's */
    bool paired;    /* the loop computes two vectors an iteration (float trees) */
    bool zmm;       /* ... as one zmm body (AVX-512: vex.c's zmm_paired) */
    bool zmm_ahead; /* ... reading a leaf of stride +-2 by two loads a whole
                       register apart (vex.c's zmm_index_load) */
    bool shared;    /* a value the tree uses twice or more is computed once (float trees) */
    int branches;   /* typed trees: where()s computed on one side, chosen by a
                       branch on their condition computed once a run (where_branch) */
    int byte_literals; /* typed trees: products of bytes by a literal written
                          without the literal in a register (byte_times_literal) */
    int plain_extremes; /* typed trees: float minimums and maximums whose first
                           operand is never NaN (an integer value converted), one
                           vminps or vmaxps without the NaN test (typed_never_nan) */
    int float_hoisted; /* float trees: values constant along a run computed once a run
                          into registers (mark_float_hoisted), nodes float_hoist_node */
    int float_hoist_node[4];
    bool rows;      /* void f(long n, void *out, const void *const *in, long rows):
                       ROWS runs of n, each pointer moved on by its outer
                       stride (vex_layout.outer) from run to run */
} vex_function;

/* How the function reads its leaves: STRIDE[k] (k >= 1, a plan operand)
 * is operand k's stride along the run in elements: 0 one value, 1
 * contiguous, any other read in place (vex_reads_stride says which);
 * STREAM: the root stored with vmovntps (peeled to 32-byte alignment).
 * OUTER (NULL: one run a call): OUTER[k] operand k's stride from run to
 * run and OUT_OUTER the output's, in elements (the rows form); GROUP,
 * OUTER2, OUT_OUTER2 a second level of rows around them. */
typedef struct vex_layout {
    const int64_t *stride;
    bool stream;
    const int64_t *outer;
    int64_t out_outer;
    /* GROUP > 0 (the rows form over two loops: row_levels): the rows come
     * in groups of GROUP, OUTER2[k] and OUT_OUTER2 the strides from group
     * to group in elements, so one call covers a loop of tiles of all the
     * rows; the ROWS argument counts every row of every group */
    int64_t group;
    const int64_t *outer2;
    int64_t out_outer2;
} vex_layout;

/* Whether the function of IR's root tree reads an operand of DTYPE with
 * STRIDE in place (reversed loads, even elements); else the caller
 * gathers it into a tile. */
bool vex_reads_stride(const struct kernel_ir *ir, bcg_dtype dtype, int64_t stride);

/* The elements of one vector of the function of IR's root tree: 8 or 4
 * in an f32 or f64 tree, 32 over the widest value's size in an integer or
 * mixed one (the typed path). */
int vex_lanes(const struct kernel_ir *ir);

/* Whether the function of IR's root tree computes a subtree that is one
 * value along the run once a run (the integer and mixed path's
 * mark_hoisted; the f32/f64 path computes it every vector). */
bool vex_hoists_per_run(const struct kernel_ir *ir);
/* Whether the float path computes every subtree of IR that is constant
 * along a run (its leaves one value a row) once a run, in a register, as
 * far as registers allow (vex.c mark_float_hoisted): the rows form then
 * spares it per vector. */
bool vex_float_hoists(const struct kernel_ir *ir);

/* Whether the function's last elements short of a vector (its tail),
 * in a run of a vector or more, are vector code when it reads a leaf of
 * DTYPE with STRIDE: masked loads (vmaskmov) in an f32/f64 tree, the last
 * whole vector again in an integer or mixed one; else the tail goes
 * through stack slots (about 20 ns a run). */
bool vex_vector_tail(const struct kernel_ir *ir, bcg_dtype dtype, int64_t stride);

/* The name the emitted C calls it by (jit.c binds it). */
#define VEX_SYMBOL "bcg_vex"

/* Whether this CPU and OS run AVX2 code. */
bool vex_cpu_ok(void);

/* The paired loop of float trees (two vectors an iteration) joins its
 * divisions and square roots into zmm ones where the CPU has AVX-512F:
 * VEX_WIDE -1 (the default) asks the CPU, 0 and 1 force it (tests: the
 * disassembly alike on every machine).  VEX_PAIRING 0 writes the single
 * loop only (tests, measurements). */
extern int vex_wide;
extern int vex_pairing;
/* VEX_ZMM: the paired loop as one zmm body (zmm_paired) -1 where the CPU
 * has AVX-512F, BW and DQ, 0 never (the ymm pairs, as before), 1 always
 * (tests). */
extern int vex_zmm;
/* VEX_ZMM_STRIDED 0: a leaf of stride -1 or +-2 keeps the ymm pairs, as
 * before (measurements); -1 (the default): the zmm body reads it with one
 * vperm or vpermt2 across both vectors (bytes where the CPU has VBMI). */
extern int vex_zmm_strided;
extern int vex_zmm_ahead;
/* VEX_ZMM_MASK_WIDTH 0: in the zmm body a comparison's mask wanted at
 * another width is narrowed or widened from its vector (vpmov*), as before
 * (measurements); else vpmovm2{b,w,d,q} from k1, which still holds it. */
extern int vex_zmm_mask_width;
/* VEX_MASK_PRODUCT 0: u8(c) * x (c bool, an integer product) converts c
 * to 0/1 and multiplies, as before (measurements); else x and c's mask. */
extern int vex_mask_product;
/* VEX_PAIRING_STRIDED 0: no paired loop when a leaf is read with a stride
 * other than 0 and 1 (reversed, +-2), as before (tests, measurements). */
extern int vex_pairing_strided;
/* VEX_PAIRING_RARE 0: no paired loop for a tree with f32 exp or log (their
 * rare lanes' test and call, rare_test), as before (measurements). */
extern int vex_pairing_rare;
/* VEX_KEEP_LEAVES 0: a float tree loads (and converts) a leaf at every
 * use, as before (measurements); else one converted or strided leaf read
 * twice or more is loaded once and kept (kept_leaf). */
extern int vex_keep_leaves;
/* VEX_CONVERT_IN_REGISTER 0: a float tree's strided leaf of another
 * dtype is staged in a stack slot and converted from there, as before
 * (measurements); else converted in its register (convert_in_register). */
extern int vex_convert_in_register;
/* VEX_HOLD_LOCALS 0: a float tree's hoisted locals are read from memory
 * every vector, as before (measurements); else held in registers the body
 * leaves free, as broadcast operands are. */
extern int vex_hold_locals;
/* VEX_STREAM_PAIRS 0: a streaming root's aligned loop computes one vector
 * an iteration, as before (measurements); else the paired loop's body
 * (two vectors, or one zmm) from the output's 64-byte boundary on. */
extern int vex_stream_pairs;
/* VEX_PAIR_HOISTED 0: a typed tree with a value computed once a run
 * (write_hoisted) writes the single loop, as before (measurements); -1
 * (the default): the zmm body reads the value's slot (load_hoisted), the
 * ymm pairs still the single loop; 1: the ymm pairs too. */
extern int vex_pair_hoisted;
/* VEX_ZMM_BLEND_K1 0: the zmm body's byte blends set k1 from their mask
 * again, as before (measurements); else the blend at k1's width. */
extern int vex_zmm_blend_k1;
/* VEX_WHERE_BRANCH 0: a typed where() whose condition is computed once a
 * run blends both sides every vector, as before (measurements); else one
 * side, by a branch (where_branch). */
extern int vex_where_branch;
/* VEX_FLAT_HOIST 0: the flat form's typed tree computes every value every
 * vector, as before (measurements); else the values the same for the
 * whole body once before its loop (vex.c small_mark_hoisted). */
extern int vex_flat_hoist;

/* VEX_OVERLAP_STRIDED 0: a float tree's tail with a leaf read in place
 * with a stride (but -1 in the lanes' dtype, masked) goes through the
 * stack slots element by element, as before (measurements); else its
 * last whole vector again (vex.c strided_overlap). */
extern int vex_overlap_strided;
/* VEX_OVERLAP_LANE_STRIDED 0: a float tree whose leaves are all of the
 * lanes' dtype (or one value), one read with a stride other than +-1,
 * takes its tail through the stack slots, as before (measurements); else
 * its last whole vector again, as a leaf of another dtype does. */
extern int vex_overlap_lane_strided;

/* VEX_STRIDED_COPY 0: a leaf copied from runs of stride +-2 or +-3 (a
 * folded minimum(a, a)) takes the cast microkernel, as before
 * (measurements); else the fused code (vex.c strided_copy). */
extern int vex_strided_copy;

/* VEX_HOLD_ROW_VALUES 0: in the rows form a float tree's leaf of one
 * value a row is loaded (and converted) at every use, as before
 * (measurements); else held in a register the body leaves free, loaded
 * once a row. */
extern int vex_hold_row_values;

/* VEX_MEDIUM_STRIDED_ROWS 0: runs of 65 to 512 with a per-row operand and
 * one read with a stride keep a call a run, as before (measurements);
 * else the 2-D tiles' rows form (lower.c medium_strided_rows). */
extern int vex_medium_strided_rows;

/* VEX_ROW_GROUPS 0: the rows form covers the rows of one loop a call, a
 * loop of calls around it, as before (measurements); else the loop
 * outside too when nothing between needs C (lower.c row_groups_chosen). */
extern int vex_row_groups;

/* VEX_FLOAT_HOIST 0: the float path computes a subtree constant along a
 * run in every vector's body, as before (measurements); else once a run
 * in a register of its own (vex.c mark_float_hoisted). */
extern int vex_float_hoist;

/* Leaves of a stride of 3 or more either way (other_stride_load):
 * VEX_OTHER_STRIDES -1 (the default) reads them in place by the measured
 * choice, 0 not at all (the callers gather them), 1 by loads and vpshufb
 * only, 2 by gathers where the elements take 4 or 8 bytes (tests,
 * measurements). */
extern int vex_other_strides;

/* The fused function of IR's root tree into *OUT (in A), or *OUT NULL when
 * an operation, dtype or leaf is not supported or registers run out.
 * LAYOUT: how each operand is read along the run.  Fails only when memory
 * runs out. */
bcg_status vex_build(arena *a, const struct kernel_ir *ir, const vex_layout *layout,
                     vex_function **out);

/* ---- small kernels (the end of vex.c) ---- */

/* Outputs of at most this many elements may be one function of
 * straight-line vector code (measured: see vex_build_small). */
#define VEX_SMALL_MAX 1024

/* The name the JIT form's C calls it by; jit_bind makes the code itself
 * the kernel's function, so nothing links it. */
#define VEX_SMALL_SYMBOL "bcg_vex_small"

/* Whether IR's kernel is one vex_build_small may write: one root stored
 * as its own dtype, no reduction, 1 to VEX_SMALL_MAX elements (f32 and
 * f64 trees by the tile code's compute, integer and mixed ones by its
 * typed path). */
bool vex_small_supported(const struct kernel_ir *ir);

/* The whole kernel of IR as one function of the kernel's signature
 *     void f(void *out, const void *const *in)      (kernel_fn)
 * with no loop: every output vector's loads and stores at constant
 * displacements, into *OUT (in A; leaf_node lists the operands read), or
 * *OUT NULL when the tree, a dtype or the code size is beyond it.  Fails
 * only when memory runs out. */
bcg_status vex_build_small(arena *a, const struct kernel_ir *ir, vex_function **out);

/* The flat form (vex.c, "the flat form"): runs of at most VEX_FLAT_MAX_RUN
 * elements whose output rows are contiguous, as the small kernel's
 * straight-line code over a body of about VEX_FLAT_BODY_ELEMENTS (a whole
 * number of vectors) in a loop. */
#define VEX_FLAT_MAX_RUN 40
#define VEX_FLAT_BODY_ELEMENTS 64
/* (plans of more loops: a row of the loops after the split one, at most
 * this many elements; a body at most VEX_FLAT_MAX_BODY) */
#define VEX_FLAT_MAX_ROW 256
#define VEX_FLAT_MAX_BODY 1024

/* Whether IR's kernel has the flat form's shape: one root stored as its
 * own dtype, no reduction, 2 loops or more, the innermost of at most
 * VEX_FLAT_MAX_RUN, the output contiguous over the loops from one of
 * them on (its rows), the loops after it a row of at most
 * VEX_FLAT_MAX_ROW elements, any number of loops before it. */
bool vex_flat_supported(const struct kernel_ir *ir);

/* The whole kernel of IR as the flat form, of vex_build_small's signature
 * and use, into *OUT, or *OUT NULL when not supported (transcendentals
 * where IR chose tiles, fewer rows than a body, code size, a tree vex.c
 * cannot write).  Fails only when memory runs out. */
bcg_status vex_build_flat(arena *a, const struct kernel_ir *ir, vex_function **out);

/* F (vex_build_small's) with check_run's checks of K's pointers before it,
 * as a second entry at offset 0 of kernel_check_fn's signature (F's own
 * moves to F->entry): the output not NULL and aligned, every operand that
 * reads memory not NULL, aligned and not overlapping the output but as an
 * exact alias it may be, with K's byte ranges as displacements.  F stays
 * as it is when a range does not fit in 32 bits.  Fails only when memory
 * runs out. */
bcg_status vex_small_checks(arena *a, vex_function *f, const bcg_kernel *k);

#endif
