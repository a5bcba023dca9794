/* lower.c - the lowering stage: decides a kernel's code and writes the
 * decision down as the kernel IR (kir.h), without writing any C.
 *
 *   folded tree + plan
 *     -> number values    pre-order ids, subtree sizes, post-order
 *     -> levels           the loop level each value is invariant from
 *     -> the form         unrolled, loops with groups, tiles of microkernel
 *                         calls (streaming or not), rows, cache blocks
 *     -> hoisting         which values become locals, at which level
 *     -> steps            loop opens/closes, locals, stores, position moves,
 *                         microkernel declarations and calls
 *
 * Glossary: see kir.h (level, position, steps) and emit.c (the C they
 * become).  "group" = the innermost loop's body repeated unroll_factor
 * times; the trips left over (extent % factor) follow the group loop as
 * straight-line steps, so no runtime remainder branch.  "fully unrolled" =
 * no loops at all: one store per output element, each offset a literal.
 *
 * In-place kernels (the output is input k, same pointer and strides): each
 * store reads element e of the aliased input and writes element e of the
 * output, so stores in any order, unrolled or not, see the values the
 * reference evaluator sees.  A hoisted load could go stale, so the aliased
 * input and every subtree containing it are never hoisted.
 */
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "kir.h"
#include "vex.h"

/* Full unrolling is skipped (loops are used) when elements x tree nodes
 * exceeds this, to keep the source of a large expression reasonable. */
#define MAX_UNROLLED_NODES ((int64_t)1 << 20)

typedef struct lowering {
    compile *c;
    kernel_ir *ir;
    bcg_status status;                 /* first failure; sticky */
    bool input_loaded[BCG_MAX_OPERANDS]; /* its in<k>_value local is declared */
    bool fused_only; /* the 1-D tiles' tree needs more temporaries than
                        MAX_TILE_TEMPORARIES: only the fused function writes it
                        (fused_past_temporaries) */
} lowering;

static void fail_nomem(lowering *w)
{
    if (w->status == BCG_OK)
        w->status = fail(w->c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
}

static bool is_comparison(expr_op op) { return op >= OP_EQ && op <= OP_GE; } /* ORDER OP */

/* ---- steps ------------------------------------------------------------------- */

static kir_step *add_step(lowering *w, kir_op op, int depth)
{
    kernel_ir *ir = w->ir;
    if (w->status != BCG_OK)
        return NULL;
    if (ir->step_count == ir->step_capacity) {
        int capacity = ir->step_capacity ? 2 * ir->step_capacity : 64;
        kir_step *steps = arena_alloc(w->c->arena, sizeof *steps * (size_t)capacity);
        if (!steps) {
            fail_nomem(w);
            return NULL;
        }
        if (ir->step_count)
            memcpy(steps, ir->steps, sizeof *steps * (size_t)ir->step_count);
        ir->steps = steps;
        ir->step_capacity = capacity;
    }
    kir_step *step = &ir->steps[ir->step_count++];
    memset(step, 0, sizeof *step);
    step->op = op;
    step->depth = depth;
    step->node = -1;
    step->loop = -1;
    step->operand = -1;
    return step;
}

static void step_loop(lowering *w, int depth, int loop, int64_t trips)
{
    kir_step *step = add_step(w, KIR_LOOP, depth);
    if (step) {
        step->loop = loop;
        step->trips = trips;
    }
}

static void step_end(lowering *w, int depth) { add_step(w, KIR_END, depth); }

static void step_advance(lowering *w, int depth, int k, int64_t amount)
{
    if (amount == 0)
        return;
    kir_step *step = add_step(w, KIR_ADVANCE, depth);
    if (step) {
        step->operand = k;
        step->amount = amount;
    }
}

/* position K (+= or -=) COUNTER * STRIDE, nothing when STRIDE is 0 */
static void step_move(lowering *w, int depth, int k, bool subtract, int loop, bool by_count,
                      int64_t stride)
{
    if (stride == 0)
        return;
    kir_step *step = add_step(w, KIR_MOVE, depth);
    if (step) {
        step->operand = k;
        step->subtract = subtract;
        step->loop = loop;
        step->by_count = by_count;
        step->amount = stride;
    }
}

/* A store, operand k at offsets[k] (from its position when it has one);
 * OP KIR_STORE or KIR_STORE_PAIR. */
static void step_store_op(lowering *w, int depth, const int64_t *offsets, kir_op op)
{
    kernel_ir *ir = w->ir;
    int64_t *copy = arena_alloc(w->c->arena, sizeof *copy * (size_t)(ir->input_count + 1));
    if (!copy) {
        fail_nomem(w);
        return;
    }
    if (offsets)
        memcpy(copy, offsets, sizeof *copy * (size_t)(ir->input_count + 1));
    else /* the positions themselves */
        memset(copy, 0, sizeof *copy * (size_t)(ir->input_count + 1));
    kir_step *step = add_step(w, op, depth);
    if (step)
        step->offsets = copy;
}

/* A fused program's other roots at the same element (after the root's
 * store or accumulator update), each into its own output operand. */
static void step_other_stores(lowering *w, int depth, const int64_t *offsets)
{
    const kernel_ir *ir = w->ir;
    for (int j = 1; j < ir->root_count && w->status == BCG_OK; j++) {
        if (ir->root_reduce && ir->root_reduce[j].reduce) /* its accumulator's step */
            continue;
        step_store_op(w, depth, offsets, KIR_STORE);
        kir_step *step = &ir->steps[ir->step_count - 1];
        if (w->status == BCG_OK) {
            step->node = ir->root_id[j];
            step->operand = ir->root_operand[j];
        }
    }
}

/* A fused program's values shared by several roots, for the element at
 * OFFSETS, in a block of their own (post-order: a shared value inside
 * another is declared first); whether the block was opened. */
static bool step_element_locals(lowering *w, int depth, const int64_t *offsets)
{
    const kernel_ir *ir = w->ir;
    if (ir->element_count == 0)
        return false;
    add_step(w, KIR_ELEMENT_OPEN, depth);
    for (int visit = 0; visit < ir->node_count; visit++) {
        int id = ir->post_order[visit];
        for (int n = 0; n < ir->element_count; n++)
            if (ir->element_first[n] == id) {
                step_store_op(w, depth + 1, offsets, KIR_ELEMENT_LOCAL);
                if (w->status == BCG_OK)
                    ir->steps[ir->step_count - 1].node = id;
            }
    }
    return true;
}

static void step_store(lowering *w, int depth, const int64_t *offsets)
{
    bool block = step_element_locals(w, depth, offsets);
    step_store_op(w, depth + block, offsets, KIR_STORE);
    step_other_stores(w, depth + block, offsets);
    if (block)
        step_end(w, depth);
}

/* The locals of LEVEL in post-order, so every local comes after the
 * locals its value uses. */
static void step_locals(lowering *w, int level, int depth)
{
    const kernel_ir *ir = w->ir;
    for (int visit = 0; visit < ir->node_count; visit++) {
        int id = ir->post_order[visit];
        const kir_value *value = &ir->value[id];
        if (!value->declares || value->level != level)
            continue;
        kir_step *step = add_step(w, KIR_LOCAL, depth);
        if (step)
            step->node = id;
    }
}

static void step_node(lowering *w, kir_op op, int depth, int id, kir_variant variant)
{
    kir_step *step = add_step(w, op, depth);
    if (step) {
        step->node = id;
        step->variant = variant;
    }
}

/* ---- numbering and levels ---------------------------------------------------- */

static int count_nodes(const expr_node *n)
{
    int count = 1;
    for (int k = 0; k < n->arg_count; k++)
        count += count_nodes(n->args[k]);
    return count;
}

static int number_nodes(kernel_ir *ir, const expr_node *n, int id)
{
    ir->nodes[id] = n;
    ir->value[id].folded = -1;
    int next = id + 1;
    for (int k = 0; k < n->arg_count; k++)
        next = number_nodes(ir, n->args[k], next);
    ir->value[id].size = next - id;
    return next;
}

static int order_post(kernel_ir *ir, int id, int visit)
{
    for (int k = 0, child = id + 1; k < ir->nodes[id]->arg_count; k++) {
        visit = order_post(ir, child, visit);
        child += ir->value[child].size;
    }
    ir->post_order[visit] = id;
    return visit + 1;
}

/* An integer compared with itself has a known result, and compilers warn
 * about writing such a comparison; NaN keeps float ones honest. */
static int folded_comparison(const expr_node *n)
{
    if (!is_comparison(n->op) || dtype_kind_of(expr_operation_type(n)) == KIND_FLOAT ||
        !fold_same_tree(n->args[0], n->args[1]))
        return -1;
    return n->op == OP_EQ || n->op == OP_LE || n->op == OP_GE;
}

/* The level of each input: the loops it is read along. */
static void choose_input_levels(kernel_ir *ir)
{
    const plan *p = ir->p;
    if (ir->unrolled) {
        ir->per_element = p->elements > 1 ? 1 : 0;
        for (int i = 0; i < ir->input_count; i++) {
            bool broadcast = i != ir->inplace;
            for (int l = 0; l < p->loop_count; l++)
                if (p->stride[i + 1][l] != 0)
                    broadcast = false;
            ir->input_level[i] = broadcast ? 0 : ir->per_element;
        }
        return;
    }
    ir->per_element = p->loop_count;
    for (int i = 0; i < ir->input_count; i++) {
        int level = p->loop_count;
        if (i != ir->inplace)
            while (level > 0 && p->stride[i + 1][level - 1] == 0)
                level--;
        ir->input_level[i] = level;
    }
}

/* Levels bottom-up; a folded comparison is a constant whose operands are
 * never read. */
static void assign_levels(kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    int level = 0;
    ir->value[id].folded = (signed char)folded_comparison(n);
    if (ir->value[id].folded >= 0) {
        ir->value[id].level = 0;
        return;
    }
    if (n->op == OP_OPERAND) {
        level = ir->input_level[n->operand];
        ir->input_used[n->operand] = true;
    }
    for (int k = 0; k < n->arg_count; k++) {
        int child = kir_child(ir, id, k);
        assign_levels(ir, child);
        if (ir->value[child].level > level)
            level = ir->value[child].level;
    }
    ir->value[id].level = level;
}

/* The levels of every root's tree; a fused program's outputs count as
 * used inputs (they have positions), though no tree reads them. */
static void assign_roots_levels(kernel_ir *ir)
{
    for (int j = 0; j < ir->root_count; j++)
        assign_levels(ir, ir->root_id[j]);
    for (int i = ir->real_inputs; i < ir->input_count; i++)
        ir->input_used[i] = true;
}

/* Chooses the locals: an input invariant along more loops than its parent
 * is loaded once (in<k>_value, declared by its first such occurrence); a
 * subtree invariant along more loops than its parent is computed once
 * (shared<n>); an integer literal compared against is bound to a const
 * local (literal<n>), so that compilers do not warn about comparisons they
 * can decide.  Post-order, so a local is always declared before the locals
 * that use it. */
static void choose_locals(lowering *w, int id, int parent_level, bool parent_compares)
{
    kernel_ir *ir = w->ir;
    const expr_node *n = ir->nodes[id];
    kir_value *value = &ir->value[id];
    if (value->folded >= 0)
        return;
    for (int k = 0; k < n->arg_count; k++)
        choose_locals(w, kir_child(ir, id, k), value->level, is_comparison(n->op));
    char name[32];
    if (n->op == OP_LITERAL) {
        if (!parent_compares || dtype_kind_of(n->dtype) == KIND_FLOAT)
            return;
        snprintf(name, sizeof name, "literal%d", ir->literal_count++);
        value->declares = true;
    } else if (n->op == OP_OPERAND) {
        if (value->level >= ir->per_element || value->level >= parent_level)
            return;
        snprintf(name, sizeof name, "in%d_value", n->operand);
        value->declares = !w->input_loaded[n->operand];
        w->input_loaded[n->operand] = true;
    } else {
        if (value->level >= ir->per_element || value->level >= parent_level)
            return;
        snprintf(name, sizeof name, "shared%d", ir->shared_count++);
        value->declares = true;
    }
    value->local = arena_strndup(w->c->arena, name, strlen(name));
    if (!value->local)
        fail_nomem(w);
}

/* ---- values several roots share, per element (a fused program) ----------------
 *
 * In the per-element forms a subtree that a later root computes and an
 * earlier root computes too (`y = g * a; s = y * y`: g * a) is one local
 * of the element, element<n>, declared before the element's stores in a
 * block of its own; every occurrence reads it.  Only values computed per
 * element (hoisted ones are locals already), the largest shared subtree
 * of each later root. */

static bool element_shareable(const kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    return n->op != OP_OPERAND && n->op != OP_LITERAL && ir->value[id].folded < 0 &&
           ir->value[id].level >= ir->per_element && !ir->value[id].local;
}

/* The first value before BEFORE (an earlier root's) computing ID's tree. */
static int element_match(const kernel_ir *ir, int id, int before)
{
    for (int other = 0; other < before; other++) {
        bool first = element_shareable(ir, other) ||
                     (ir->value[other].local && ir->value[other].level >= ir->per_element);
        if (first && ir->nodes[other]->op == ir->nodes[id]->op &&
            fold_same_tree(ir->nodes[other], ir->nodes[id]))
            return other;
    }
    return -1;
}

static void choose_element_shares(lowering *w, int id, int before)
{
    kernel_ir *ir = w->ir;
    if (!element_shareable(ir, id))
        return;
    int first = element_match(ir, id, before);
    if (first < 0) {
        for (int k = 0; k < ir->nodes[id]->arg_count; k++)
            choose_element_shares(w, kir_child(ir, id, k), before);
        return;
    }
    if (!ir->value[first].local) { /* a new element local */
        char name[32];
        snprintf(name, sizeof name, "element%d", ir->element_count);
        ir->value[first].local = arena_strndup(w->c->arena, name, strlen(name));
        if (!ir->value[first].local) {
            fail_nomem(w);
            return;
        }
        ir->element_first[ir->element_count++] = first;
    }
    ir->value[id].local = ir->value[first].local;
}

static void choose_elements(lowering *w)
{
    kernel_ir *ir = w->ir;
    ir->element_first = arena_alloc(w->c->arena, sizeof *ir->element_first *
                                                     (size_t)ir->node_count);
    if (!ir->element_first) {
        fail_nomem(w);
        return;
    }
    for (int j = 1; j < ir->root_count; j++)
        choose_element_shares(w, ir->root_id[j], ir->root_id[j]);
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
 * of a small tree within L1.  Every row of gen/ops.h has a microkernel for
 * every dtype it types on (issue 11; `bcgen functions --tiles`, checked by
 * tests/unit/test_ops.c) and a cast kernel for every pair of dtypes; a
 * tree with an operation none computes (clip) keeps the straight-line
 * form; results are the same bit for bit either way. */

#define TILE_ELEMENTS 1024
#define MAX_TILE_TEMPORARIES 12
#define MAX_TILE_STRIDE 8

/* The elements of a 1-D tile: TILE_ELEMENTS, or more where every value of
 * the tree is narrower than 4 bytes, so that a tile is at least
 * TILE_MIN_BYTES of its widest value and the calls cost per byte what they
 * cost on f32.  Measured (where(a > 100, a, 0) over u8[4096,4096], two
 * calls a tile): 1024-element tiles 0.72 ms against the gcc hand loop's
 * 0.53 ms, the call overhead of 32768 calls; 4096-element tiles: see
 * README, Performance, "Transposed inputs, narrow tiles". */
#define TILE_MIN_BYTES 4096

/* The fused function (vex.c) needs no tiles of temporaries: one call takes
 * the whole run unless an operand is gathered into a tile. */
static bool vex_whole_run(const kernel_ir *ir)
{
    if (!ir->vex)
        return false;
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->gathered[k])
            return false;
    return true;
}

/* A root that is one literal (an integer `a * 0` folded) is one fill
 * call over the whole run: no temporaries to keep in the caches, and
 * the cast microkernel's fill loop is gcc's memset or vector stores.
 * Measured: a * 0 over i8 (208,960), 4096-element tiles 1.69 us, gcc -O3
 * 0.91 us. */
static bool fill_whole_run(const kernel_ir *ir)
{
    return ir->root_count == 1 && ir->node_count >= 1 && ir->nodes[0]->op == OP_LITERAL;
}

static int64_t tile_elements(const kernel_ir *ir)
{
    /* (f16 and bf16 count as the floats their microkernels compute in) */
    size_t widest = dtype_is_half(ir->out_dtype) ? 4 : bcg_dtype_size(ir->out_dtype);
    for (int id = 0; id < ir->node_count; id++) {
        bcg_dtype t = ir->nodes[id]->dtype;
        size_t size = dtype_is_half(t) ? 4 : bcg_dtype_size(t);
        widest = size > widest ? size : widest;
    }
    int64_t elements = TILE_MIN_BYTES / (int64_t)(widest ? widest : 1);
    return elements > TILE_ELEMENTS ? elements : TILE_ELEMENTS;
}

/* Whether the subtree ID is computed once per trip of an outer loop, in C,
 * and handed to the tile calls as a stride-0 argument (a local of its
 * dtype): an operation that does not vary along the innermost run (the
 * sqrt(v + 1e-5) of a per-row v), not the root (its call writes the
 * output), not bool (microkernels take bool as bytes, locals hold ints). */
static bool tile_hoistable(const kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    /* (f16 and bf16 locals are floats; microkernels take their bits) */
    return !kir_is_root(ir, id) && n->op != OP_OPERAND && n->op != OP_LITERAL &&
           n->dtype != BCG_BOOL &&
           !dtype_is_half(n->dtype) &&
           ir->value[id].folded < 0 && ir->value[id].level < ir->per_element &&
           ir->value[id].level <= ir->tile_loop; /* constant along the tiles' loop */
}

/* Whether a tile of FROM converts into TO (bcg_mk_cast_F_T). */
static bool tile_cast_exists(bcg_dtype from, bcg_dtype to)
{
    char name[48];
    kir_cast_name(from, to, name, sizeof name);
    return microkernel_exists(name);
}

/* Whether the subtree ID gives a value of dtype WANT through microkernels
 * alone (and hoisted subtrees), converted by a cast kernel when its own
 * dtype is another; counts its operations into *operations. */
/* Whether value ID repeats the tree of a value before it in pre-order,
 * outside it: its users read that one's tile (choose_tile_sharing), so its
 * operations take no temporaries of their own.  where(sqrt(f32(abs(x))) >
 * 3.0, a, sqrt(f32(abs(x)))) with x = maximum(b, maximum(2, a)) counted 15
 * temporaries, over MAX_TILE_TEMPORARIES, for the 8 it takes, and ran as
 * per-element code: 337 us against the cc backend's 58 us (bench sweep). */
static bool tile_repeats(const kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    if (n->op == OP_OPERAND || n->op == OP_LITERAL)
        return false;
    for (int other = 0; other < id; other++)
        if (other + ir->value[other].size <= id && ir->nodes[other]->op == n->op &&
            !ir->value[other].inside_local && fold_same_tree(ir->nodes[other], n))
            return true;
    return false;
}

static bool tile_subtree_supported(const kernel_ir *ir, int id, int *operations);

static bool tile_supported(const kernel_ir *ir, int id, bcg_dtype want, int *operations)
{
    const expr_node *n = ir->nodes[id];
    if (n->dtype != want &&
        (!tile_cast_exists(n->dtype, want) || ++*operations > MAX_TILE_TEMPORARIES))
        return false;
    if (n->op == OP_OPERAND || n->op == OP_LITERAL || tile_hoistable(ir, id))
        return true;
    if (tile_repeats(ir, id)) { /* computed once, before: checked, not counted */
        int uncounted = 0;
        return tile_subtree_supported(ir, id, &uncounted);
    }
    return tile_subtree_supported(ir, id, operations);
}

/* tile_supported of ID's own operation and its arguments, ID not hoisted. */
static bool tile_subtree_supported(const kernel_ir *ir, int id, int *operations)
{
    const expr_node *n = ir->nodes[id];
    char name[48];
    if (n->op == OP_CAST) { /* the cast kernel of its argument's dtype */
        int child = kir_child(ir, id, 0);
        kir_microkernel_name(ir, id, KIR_PLAIN, name, sizeof name);
        return microkernel_exists(name) && ++*operations <= MAX_TILE_TEMPORARIES &&
               tile_supported(ir, child, ir->nodes[child]->dtype, operations);
    }
    tile_shape kind;
    const char *family = kir_tile_family(ir, id, &kind);
    bcg_dtype t = kir_tile_dtype(ir, id);
    /* (bool tiles are bytes: its kernels read any non-zero byte as true and
     * write 0 or 1, as the straight-line code loads and stores bool) */
    if (!family || n->dtype != (kind == TILE_COMPARE || kind == TILE_TEST ? BCG_BOOL : t))
        return false;
    kir_microkernel_name(ir, id, KIR_PLAIN, name, sizeof name);
    if (!microkernel_exists(name) || ++*operations > MAX_TILE_TEMPORARIES)
        return false;
    for (int k = 0; k < n->arg_count; k++)
        if (!tile_supported(ir, kir_child(ir, id, k), kir_tile_argument_dtype(ir, id, k),
                            operations))
            return false;
    return true;
}

/* Whether a fused program's other roots can be stored a tile at a time
 * along loop TILE_LOOP: each output written contiguously there, each tree
 * computed by microkernels (or an operand or literal copied). */
static bool other_roots_tile(const kernel_ir *ir, int tile_loop, int *operations,
                             const char **why)
{
    for (int j = 1; j < ir->root_count; j++) {
        int id = ir->root_id[j];
        char name[48];
        kir_cast_name(ir->nodes[id]->dtype, ir->nodes[id]->dtype, name, sizeof name);
        if (ir->root_reduce && ir->root_reduce[j].reduce) {
            /* another reduction: its tile goes to its partial sums or block
             * of accumulators (KIR_ACC_TILE), as the kernel's own does */
            bcg_dtype t = ir->nodes[id]->dtype;
            if ((ir->root_reduce[j].reduce != BCG_REDUCE_SUM &&
                 ir->root_reduce[j].reduce != BCG_REDUCE_MEAN) ||
                (t != BCG_F32 && t != BCG_F64) || ir->root_reduce[j].lanes != ir->lanes ||
                !tile_supported(ir, id, t, operations)) {
                if (why)
                    *why = "a reduction of the fused program is no float sum or mean of "
                           "microkernels";
                return false;
            }
            continue;
        }
        if (ir->p->stride[ir->root_operand[j]][tile_loop] != 1) {
            if (why)
                *why = "an output of the fused program is not contiguous along the tiles";
            return false;
        }
        if (!microkernel_exists(name) ||
            !tile_supported(ir, id, ir->nodes[id]->dtype, operations)) {
            if (why)
                *why = "an operation of a fused output's tree has no microkernel for its dtypes";
            return false;
        }
    }
    return true;
}

/* Whether plan operand K, read with STRIDE (longer than MAX_TILE_STRIDE)
 * along the run, goes to the tiles all the same: the fused function reads
 * it in place (spaced_load), when its elements are at most
 * VEX_MAX_STRIDE_BYTES apart and no loop reads it contiguously (a
 * transposed view keeps the per-element code and plan_order_transposed's
 * order).  Measured (a * 3 + b over 8000 elements, same process, fused
 * against the per-element code): strides 12 to 200 of i8, i16, f32, f64
 * 1.7-8.6x faster; 2000 bytes apart 1.8x (f32, i8); 4000 and 8000 bytes
 * apart 0.9-1.2x (pages); f64[64,5000] transposed (stride 64 along the
 * run, 1 along the rows) 2x slower.  A tree with a costly function
 * (expensive_function) goes only when the fused function writes it
 * (vex_fuses_run). */
#define VEX_MAX_STRIDE_BYTES 2048
static bool expensive_function(const kernel_ir *ir, int id);
static int64_t vex_stride(const lowering *w, int k, int64_t stride);

/* Whether the fused function (vex_build) writes the root tree over the
 * run as lower_tiles will ask for it.  A tree it does not write keeps the
 * microkernels, whose reads of a long stride lose to the per-element code
 * where the tree calls a costly function (same-process harness, 8000
 * elements, stride 100, per-element code against the microkernels' tiles:
 * f32 sin(a) + b 16.0 against 29.4 us, cos(a) * b 14.3 against 27.7, f64
 * exp(a) + b 29.1 against 37.6, erf(a) + b 19.1 against 32.5; f64 sin and
 * log even) and win where it does not (a % 3 + b 40 against 28 us, a // b
 * + 1 124 against 75: those keep the tiles). */
static bool vex_fuses_run(const lowering *w)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int64_t strides[BCG_MAX_OPERANDS + 1] = {0};
    for (int k = 1; k <= ir->input_count; k++)
        strides[k] = vex_stride(w, k, p->stride[k][p->loop_count - 1]);
    vex_layout layout = {strides, false, NULL, 0, 0, NULL, 0};
    vex_function *f = NULL;
    return ir->root_count == 1 && vex_build(w->c->arena, ir, &layout, &f) == BCG_OK && f;
}

static bool spaced_along(int64_t along, int64_t size);
static int64_t transposed_tile_rows(const lowering *w, int64_t *columns, bool *row_calls);

/* Whether plan operand K, read with a line or more between elements along
 * the run, has a short stride (spaced_along) in the loop outside it: the
 * 2-D tiles' spaced gather reads a tile's rows of each column together,
 * where the fused function loads each element alone (a + b, a f32 (700,
 * 1147) strides (4, 2800): see the commit); only where those tiles are
 * taken (runs over half a tile: exp(where(...)) over runs of 65 of such an
 * input ran 1.8x slower per element than fused). */
static bool spaced_outside(const lowering *w, int k)
{
    const plan *p = w->ir->p;
    int inner = p->loop_count - 1;
    int64_t size = (int64_t)bcg_dtype_size(w->c->operands[k - 1].dtype);
    int64_t across = p->stride[k][inner] < 0 ? -p->stride[k][inner] : p->stride[k][inner];
    return p->loop_count >= 2 && across * size >= 64 /* a line */ &&
           spaced_along(p->stride[k][inner - 1], size) &&
           transposed_tile_rows(w, NULL, NULL) > 0;
}

static bool vex_long_stride(const lowering *w, int k, int64_t stride)
{
    const plan *p = w->ir->p;
    int64_t size = (int64_t)bcg_dtype_size(w->c->operands[k - 1].dtype);
    if (w->c->options.disable_vector_code || !vex_cpu_ok() ||
        stride * size > VEX_MAX_STRIDE_BYTES || stride * size < -VEX_MAX_STRIDE_BYTES ||
        !vex_reads_stride(w->ir, w->c->operands[k - 1].dtype, stride))
        return false;
    /* contiguous along the loop just outside the run (where
     * plan_order_transposed puts it): the transposed 2-D tiles; along a
     * loop further out they are not taken, and the per-element groups
     * were 3x slower than these tiles ((a) * (b), i16, b contiguous along
     * a loop of 15 outside two others, rows of 90: 52 against 15-20 us) */
    int outside = p->loop_count - 2;
    if (outside >= 0 && (p->stride[k][outside] == 1 || p->stride[k][outside] == -1))
        return false;
    if (spaced_outside(w, k))
        return false;
    return !expensive_function(w->ir, 0) || vex_fuses_run(w);
}

/* Whether a tree with a microkernel for every operation but more of them
 * than MAX_TILE_TEMPORARIES tiles of temporaries hold (a stack bound) is
 * written by the fused function over the 1-D tiles' run as lower_tiles
 * asks for it (vex_fuses_run; an integer or mixed tree reading every
 * strided leaf in place), which keeps no temporaries: it then takes the 1-D
 * tiles with lowering.fused_only set, where it kept the per-element
 * groups (u8(u8(c > u8(a > sqrt(f64(abs(b))))) * sqrt(f64(abs(b)))) * c,
 * 13 operations, runs of 49, a stride 2, sweep seed 5: see the commit). */
static bool fused_past_temporaries(const lowering *w)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    int uncounted = -(1 << 20); /* every operation's microkernel, however many */
    if (w->c->options.disable_vector_code || !vex_cpu_ok() ||
        !tile_supported(ir, 0, ir->out_dtype, &uncounted))
        return false;
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->input_used[k - 1] && p->stride[k][inner] != 0 && p->stride[k][inner] != 1 &&
            vex_stride(w, k, p->stride[k][inner]) == 1)
            return false; /* (lower_tiles drops a typed function over a gathered leaf) */
    return vex_fuses_run(w);
}

/* Whether this kernel's innermost run goes through microkernels; else
 * says why not into WHY (when the reason is worth telling). */
static bool tiles_chosen(lowering *w, const char **why)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int operations = 0;
    if (!c->microkernels || c->options.microkernel_run <= 0 || ir->unrolled || p->empty ||
        p->loop_count == 0)
        return false;
    int inner = p->loop_count - 1;
    if (p->extent[inner] < c->options.microkernel_run) {
        *why = "the innermost run is shorter than microkernel_run";
        return false;
    }
    if (p->stride[0][inner] != 1)
        return false;
    /* A run that reads an input with a long stride (a transposed view) is
     * bound by cache and TLB misses, not arithmetic; measured (make bench,
     * `transposed`), the per-element code is faster there than tiles. */
    for (int k = 1; k < p->operand_count; k++)
        if ((p->stride[k][inner] > MAX_TILE_STRIDE || p->stride[k][inner] < -MAX_TILE_STRIDE) &&
            !vex_long_stride(w, k, p->stride[k][inner])) {
            *why = "an input is read with a long stride in the innermost run";
            return false;
        }
    const expr_node *root = ir->nodes[0];
    /* (a root of another dtype than the output's would need a conversion
     * no parent step makes; a cast on store is a cast node, the root) */
    if (root->dtype != ir->out_dtype)
        return false;
    /* An operand or a literal as the whole tree (`a`, a reversed or
     * strided view made contiguous; `a * 0` folded to 0) is copied or filled
     * by the cast kernel of its own dtype: tcc's per-element copy ran at
     * 0.37 ns an element, 80 times a vectorised fill (bench/sweep). */
    if (root->op == OP_OPERAND || root->op == OP_LITERAL) {
        if (!tile_cast_exists(root->dtype, root->dtype))
            return false;
    } else if (!tile_supported(ir, 0, ir->out_dtype, &operations)) {
        if (ir->root_count == 1 && fused_past_temporaries(w)) {
            w->fused_only = true;
            return true;
        }
        *why = operations > MAX_TILE_TEMPORARIES
                   ? "the tree needs more tiles of temporaries than MAX_TILE_TEMPORARIES"
                   : "an operation of the tree has no microkernel for its dtypes";
        return false;
    }
    return other_roots_tile(ir, ir->p->loop_count - 1, &operations, why);
}

/* The locals of a tiled kernel: each largest hoistable subtree (see
 * tile_hoistable) gets one, with the locals its own C needs inside it (as
 * the straight-line form chooses them); everything inside is marked, so the
 * tile steps pass the local instead of calling microkernels for it. */
static void choose_tile_locals(lowering *w, int id)
{
    kernel_ir *ir = w->ir;
    if (tile_hoistable(ir, id)) {
        choose_locals(w, id, ir->per_element, false);
        for (int inside = id + 1; inside < id + ir->value[id].size; inside++)
            ir->value[inside].inside_local = true;
        return;
    }
    for (int k = 0; k < ir->nodes[id]->arg_count; k++)
        choose_tile_locals(w, kir_child(ir, id, k));
}

/* Whether the root's arguments are all operands and literals of the
 * root's operation's dtype (no temporaries, no conversions): the trees that
 * stream and that take the rows form. */
static bool root_reads_leaves(const kernel_ir *ir)
{
    if (ir->nodes[0]->op == OP_CAST)
        return false;
    for (int k = 0; k < ir->nodes[0]->arg_count; k++) {
        const expr_node *child = ir->nodes[kir_child(ir, 0, k)];
        if ((child->op != OP_OPERAND && child->op != OP_LITERAL) || kir_tile_converts(ir, 0, k))
            return false;
    }
    return true;
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
/* Whether every run of the output starts on the cache line offset the
 * first one does: a single run, or runs a whole number of lines long.
 * Streaming stores of runs that are not (a padded u8 (30000, 313) + 5, f32
 * rows of 300, 1500 or 3000 elements) measured 1.2-3x slower than plain
 * stores (cc time / JIT time 0.26 -> 0.74, 0.50 -> 0.89, 0.74 -> 0.88,
 * 0.82 -> 0.96), those that are 1.2-1.4x faster (f32 rows of 512, 1024,
 * 4000 and 4096: 0.87-1.0 -> 1.2-1.4; u8 rows of 320 even); the line each
 * run shares with the next is written by plain stores from both sides. */
static bool runs_whole_lines(const kernel_ir *ir)
{
    const plan *p = ir->p;
    if (p->loop_count < 2)
        return true;
    int64_t size = (int64_t)bcg_dtype_size(ir->out_dtype);
    if (p->extent[p->loop_count - 1] * size % 64 != 0)
        return false;
    /* and every row starts a line after the last: an output view padded
     * by less than a line (rows of 64 bytes 100 apart) shares lines too */
    for (int l = 0; l < p->loop_count - 1; l++)
        if (p->stride[0][l] * size % 64 != 0)
            return false;
    return true;
}

static bool stream_chosen(const kernel_ir *ir)
{
    tile_shape kind;
    const char *family = kir_tile_family(ir, 0, &kind);
    char name[48];
    if (!family || kind == TILE_UNARY || !root_reads_leaves(ir))
        return false;
    kir_microkernel_name(ir, 0, KIR_STREAM, name, sizeof name);
    return microkernel_exists(name);
}

/* The innermost run as tiles of microkernel calls, at DEPTH: each
 * microkernel (the cast kernels of converted arguments included) declared
 * once and each literal bound to a variable before the tile loop, then one
 * call per operation in post-order. */
#define MAX_TILE_DECLARATIONS (4 * MAX_TILE_TEMPORARIES)

/* Adds the declaration of NAME unless DECLARED (*count names) has it. */
static bool first_declaration(char (*declared)[48], int *count, const char *name)
{
    for (int i = 0; i < *count; i++)
        if (strcmp(declared[i], name) == 0)
            return false;
    if (*count < MAX_TILE_DECLARATIONS)
        snprintf(declared[(*count)++], 48, "%s", name);
    return true;
}

/* Common subexpressions in tiles: a value whose tree an earlier value (in
 * post-order) computes is not computed again; its users read the earlier
 * tile (kernel_ir.same).  where(a >= 3, b, a) written twice is one
 * comparison and one select per tile. */
static void choose_tile_sharing(lowering *w)
{
    kernel_ir *ir = w->ir;
    ir->same = arena_alloc(w->c->arena, sizeof *ir->same * (size_t)ir->node_count);
    if (!ir->same) {
        fail_nomem(w);
        return;
    }
    for (int visit = 0; visit < ir->node_count; visit++) {
        int id = ir->post_order[visit];
        const expr_node *n = ir->nodes[id];
        ir->same[id] = id;
        if (n->op == OP_OPERAND || n->op == OP_LITERAL || ir->value[id].local ||
            ir->value[id].inside_local || ir->value[id].folded >= 0)
            continue;
        for (int before = 0; before < visit && ir->same[id] == id; before++) {
            int other = ir->post_order[before];
            if (other == 0 && !ir->reduce && ir->stream)
                continue; /* the root's streaming stores are not read back */
            if (ir->same[other] == other && ir->nodes[other]->op == n->op &&
                !ir->value[other].local && !ir->value[other].inside_local &&
                ir->value[other].folded < 0 && fold_same_tree(ir->nodes[other], n))
                ir->same[id] = other;
        }
    }
}

static void tile_declarations(lowering *w, int depth)
{
    kernel_ir *ir = w->ir;
    char declared[MAX_TILE_DECLARATIONS][48];
    int count = 0;
    choose_tile_sharing(w);
    bool *read = arena_alloc(w->c->arena, (size_t)ir->node_count);
    if (!read)
        fail_nomem(w);
    if (w->status != BCG_OK)
        return;
    memset(read, 0, (size_t)ir->node_count);
    for (int id = 0; id < ir->node_count; id++) /* the arguments of the calls made */
        if (ir->nodes[id]->op != OP_LITERAL && ir->nodes[id]->op != OP_OPERAND &&
            !ir->value[id].inside_local && !ir->value[id].local && ir->same[id] == id)
            for (int k = 0; k < ir->nodes[id]->arg_count; k++)
                read[kir_child(ir, id, k)] = true;
    for (int j = 1; j < ir->root_count; j++) /* a fused program's stores read them */
        read[ir->root_id[j]] = true;
    for (int visit = 0; !ir->vex && visit < ir->node_count; visit++) {
        int id = ir->post_order[visit];
        const expr_node *n = ir->nodes[id];
        if (ir->value[id].inside_local || ir->value[id].local || ir->same[id] != id)
            continue; /* computed in C, before the loop of its level; or computed before */
        /* (a reduction reads a root operand itself: KIR_ACC_TILE) */
        bool leaf_root = id == 0 && !ir->reduce && (n->op == OP_LITERAL || n->op == OP_OPERAND);
        if (n->op == OP_LITERAL) {
            if (read[id] || leaf_root) /* (not a literal of a subtree computed before) */
                step_node(w, KIR_TILE_LITERAL, depth, id, KIR_PLAIN);
            if (!leaf_root)
                continue;
        }
        if (n->op == OP_OPERAND && !leaf_root)
            continue; /* (a root operand is copied by a call of its own) */
        char name[48];
        for (int k = 0; k < n->arg_count; k++) {
            if (!kir_tile_converts(ir, id, k))
                continue;
            kir_cast_name(ir->nodes[kir_child(ir, id, k)]->dtype,
                          kir_tile_argument_dtype(ir, id, k), name, sizeof name);
            if (first_declaration(declared, &count, name)) {
                kir_step *step = add_step(w, KIR_MK_DECLARE, depth);
                if (step) {
                    step->node = id;
                    step->convert = true;
                    step->arg = k;
                }
            }
        }
        /* the streaming root's is another function */
        bool stream = id == 0 && ir->stream; /* the root, last in post order */
        kir_microkernel_name(ir, id, stream ? KIR_STREAM : KIR_PLAIN, name, sizeof name);
        if (first_declaration(declared, &count, name))
            step_node(w, KIR_MK_DECLARE, depth, id, stream ? KIR_STREAM : KIR_PLAIN);
    }
}

static void tile_loop(lowering *w, int depth, int64_t extent, int64_t most)
{
    kir_step *loop = add_step(w, KIR_TILE_LOOP, depth);
    if (loop) {
        loop->trips = extent;
        loop->size = extent < most ? extent : most;
    }
}

static void tile_calls(lowering *w, int depth)
{
    const kernel_ir *ir = w->ir;
    if (ir->vex) { /* the whole tree: one call of its fused function */
        step_node(w, KIR_VEX_CALL, depth, 0, KIR_PLAIN);
        return;
    }
    if (ir->gathered_out) /* the gather wrote the output */
        return;
    for (int visit = 0; visit < ir->node_count; visit++) {
        int id = ir->post_order[visit];
        expr_op op = ir->nodes[id]->op;
        if (((op == OP_LITERAL || op == OP_OPERAND) && (id != 0 || ir->reduce)) ||
            ir->value[id].inside_local ||
            ir->value[id].local || kir_tile_same(ir, id) != id)
            continue;
        for (int k = 0; k < ir->nodes[id]->arg_count; k++)
            if (kir_tile_converts(ir, id, k)) {
                kir_step *step = add_step(w, KIR_TILE_CONVERT, depth);
                if (step) {
                    step->node = id;
                    step->arg = k;
                }
            }
        step_node(w, KIR_TILE_CALL, depth, id, id == 0 && ir->stream ? KIR_STREAM : KIR_PLAIN);
    }
}

/* A fused program's other roots, each tile into its output. */
static void tile_stores(lowering *w, int depth)
{
    const kernel_ir *ir = w->ir;
    for (int j = 1; j < ir->root_count; j++) {
        if (kir_root_writes_output(ir, ir->root_id[j]))
            continue; /* its call wrote it */
        if (ir->root_reduce && ir->root_reduce[j].reduce)
            continue; /* accumulated: KIR_ACC_TILE */
        kir_step *step = add_step(w, KIR_TILE_STORE, depth);
        if (step) {
            int id = ir->root_id[j];
            expr_op op = ir->nodes[id]->op;
            step->node = id;
            step->operand = ir->root_operand[j];
            /* a tile of computed values (or the root's output) streams */
            if (ir->stream_copies && op != OP_OPERAND && op != OP_LITERAL &&
                ir->nodes[id]->dtype != BCG_BOOL)
                step->variant = KIR_STREAM;
        }
    }
}

/* How many tile calls (conversions included) read plan operand K itself. */
static int tile_reads(const kernel_ir *ir, int k)
{
    int count = 0;
    for (int id = 0; id < ir->node_count; id++) {
        const expr_node *n = ir->nodes[id];
        if (n->op == OP_LITERAL || n->op == OP_OPERAND || ir->value[id].inside_local ||
            ir->value[id].local || kir_tile_same(ir, id) != id)
            continue;
        for (int a = 0; a < n->arg_count; a++) {
            int child = kir_child(ir, id, a);
            if (ir->nodes[child]->op == OP_OPERAND && !ir->value[child].local &&
                ir->nodes[child]->operand + 1 == k)
                count++;
        }
    }
    return count;
}

/* The declaration of the gather kernel of plan operand K (the scatter
 * kernel when K is 0), once per element size. */
static void gather_declare(lowering *w, int depth, int k, bool declared[2][4])
{
    const kernel_ir *ir = w->ir;
    size_t size = bcg_dtype_size(k ? w->c->operands[k - 1].dtype : ir->out_dtype);
    int bits = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3;
    if (declared[k == 0][bits])
        return;
    declared[k == 0][bits] = true;
    kir_step *step = add_step(w, KIR_MK_DECLARE, depth);
    if (step)
        step->operand = k;
}

/* Operand K laid out in its tile (see KIR_GATHER). */
static void step_gather(lowering *w, int depth, int k, int64_t size, bool by_count, bool once)
{
    kir_step *step = add_step(w, KIR_GATHER, depth);
    if (step) {
        step->operand = k;
        step->size = size;
        step->by_count = by_count;
        step->subtract = once;
    }
}

/* Trees with temporaries stream through the fused function over runs at
 * least this long (see choose_vex) */
#define VEX_STREAM_MIN_RUN 1024

/* Whether the fused function writes more bytes an element than it reads,
 * a leaf read in place with a stride other than 0 and 1 (STRIDE: as
 * choose_vex's; a leaf's bytes read an element are its stride's bytes, at
 * most a cache line).  Its output then stores plainly though the kernel
 * passes the cache (c->stream): measured same-run on this Zen 5 (load 3-5,
 * interleaved), streaming against plain stores, cc time / JIT time:
 * (abs(c)) / (f32(where(a < b, a, b))) u8 a reversed 6M 0.65 -> 0.87,
 * 12M 0.66 -> 0.96; a of stride 2 0.78 -> 0.98, 0.74 -> 1.04;
 * f64(u8(f32(c) > a) * (a)) + b i16 c of stride 2 6M 0.75 -> 1.07, 12M
 * 0.70 -> 1.20, reversed 0.95 -> 1.02, 0.69 -> 1.07; while with a
 * contiguous a (c) streaming and plain stores are within the noise
 * (1.06 / 0.94, 0.90 / 1.06), and trees that read as many bytes as they
 * write (a + 3 i16 reversed or of stride 2, a + b f32 reversed, 8M) gain
 * from streaming (1.20 / 1.13, 1.32 / 0.97, 1.13 / 0.82). */
static bool strided_widening(const lowering *w, const int64_t *stride)
{
    const kernel_ir *ir = w->ir;
    bool strided = false;
    int64_t read = 0;
    for (int k = 1; k <= ir->input_count; k++) {
        if (!ir->input_used[k - 1] || stride[k] == 0)
            continue;
        int64_t size = (int64_t)bcg_dtype_size(w->c->operands[k - 1].dtype);
        int64_t bytes = (stride[k] < 0 ? -stride[k] : stride[k]) * size;
        strided = strided || stride[k] != 1;
        read += bytes < 64 ? bytes : 64;
    }
    return strided && (int64_t)bcg_dtype_size(ir->out_dtype) > read;
}

/* Fused vector code (vex.c): the tile's whole tree as one machine-code
 * function instead of a microkernel call per operation, when the CPU runs
 * AVX2, bcg_options.disable_vector_code is 0 and vex_build can write the
 * tree; ir->vex then makes tile_calls one KIR_VEX_CALL step.  STRIDE[k]:
 * plan operand k's stride over a tile (0 one value, 1 contiguous, others
 * read in place; the callers gather operands vex_reads_stride refuses and
 * pass them as 1).  A streaming root (ir->stream, one operation of
 * leaves) is stored with vmovntps by the function when it has a strided
 * leaf; one of contiguous leaves keeps its _nt microkernel, as fast.
 * OUTER, OUT_OUTER: the rows form's outer strides (vex_layout), or NULL. */
static void choose_vex_groups(lowering *w, const int64_t *stride, const int64_t *outer,
                              int64_t out_outer, int64_t group, const int64_t *outer2,
                              int64_t out_outer2)
{
    compile *c = w->c;
    kernel_ir *ir = w->ir;
    if (ir->vex || c->options.disable_vector_code || ir->reduce || ir->root_count != 1 ||
        !vex_cpu_ok())
        return;
    /* a tree with temporaries whose output passes the cache (c->stream)
     * streams too: the function keeps no tiles of temporaries in the cache.
     * Measured (same process, streaming against plain stores of the fused
     * function): a * b + c f32 (4096,4096) 1.08-1.11x faster, f64
     * minimum(a, 2) * b - a (1024,2048) 1.42x, (x - m) / sqrt(v + 1e-5)
     * (4096,1024) 1.23x; but runs of 66 6.4x slower, 192 and 256 1.2-1.6x
     * slower (where(b + a > 0.1, b, b + a), b per run), so only long runs */
    bool stream = ir->stream || (c->stream && !ir->scatter && !ir->tiles2d &&
                                 ir->p->extent[ir->p->loop_count - 1] >= VEX_STREAM_MIN_RUN &&
                                 runs_whole_lines(ir) && !strided_widening(w, stride));
    vex_layout layout = {stride, stream, outer, out_outer, group, outer2, out_outer2};
    vex_function *f = NULL;
    if (vex_build(c->arena, ir, &layout, &f) != BCG_OK)
        fail_nomem(w);
    if (f && ir->stream && (!f->strided || !f->stream)) /* (a typed tree stores plainly) */
        f = NULL;
    if (f && f->stream)
        ir->stream = true;
    ir->vex = f;
}

static void choose_vex(lowering *w, const int64_t *stride, const int64_t *outer,
                       int64_t out_outer)
{
    choose_vex_groups(w, stride, outer, out_outer, 0, NULL, 0);
}

/* Operand K's stride along the run as the fused function reads it: in
 * place, or 1 when it is gathered into a tile first. */
static int64_t vex_stride(const lowering *w, int k, int64_t stride)
{
    return vex_reads_stride(w->ir, w->c->operands[k - 1].dtype, stride) ? stride : 1;
}

/* The fused function over STRIDES that fused_past_temporaries or
 * fused_over_tile2d found it can build (w->fused_only), with plain stores
 * (the same tree and layout: built before, so built again). */
static void build_fused_only(lowering *w, int64_t *strides)
{
    kernel_ir *ir = w->ir;
    vex_layout layout = {strides, false, NULL, 0, 0, NULL, 0};
    vex_function *f = NULL;
    if (vex_build(w->c->arena, ir, &layout, &f) != BCG_OK)
        fail_nomem(w);
    ir->vex = f;
    ir->stream = false;
}

/* The 1-D tiles.  An operand read with a stride other than 0 and 1 (a
 * reversed or strided view) by two calls or more is gathered into a
 * contiguous tile once a tile, and every call reads that: otherwise each
 * call gathers it again inside the microkernel (GATHER in
 * runtime/microkernels.c); where(where(a >= 3, b, a) > 5, ...) over a
 * reversed a read it three times a tile. */
static void lower_tiles(lowering *w, int depth)
{
    kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    int64_t most = tile_elements(ir);
    int64_t extent = p->extent[inner], size = extent < most ? extent : most;
    bool declared[2][4] = {{false}};
    int64_t vex_strides[BCG_MAX_OPERANDS + 1] = {0};
    for (int k = 1; k <= ir->input_count; k++)
        vex_strides[k] = vex_stride(w, k, p->stride[k][inner]);
    bool microkernels_stream = ir->stream; /* (a fused tree may stream where they do not) */
    choose_vex(w, vex_strides, NULL, 0);
    /* an integer or mixed tree over a leaf it does not read in place
     * (vex_reads_stride refuses it) is not fused: gathering the leaf first measured
     * slower than the microkernels' strided reads (1 - i8(a) over u8 of
     * stride 3: 3.4 against 0.63 ms); the root's call then streams only
     * where its microkernel has a streaming variant */
    for (int k = 1; ir->vex && ir->vex->typed && k <= ir->input_count; k++)
        if (ir->input_used[k - 1] && p->stride[k][inner] != 0 && p->stride[k][inner] != 1 &&
            vex_strides[k] == 1) {
            ir->vex = NULL;
            ir->stream = microkernels_stream;
        }
    if (w->fused_only && !ir->vex) /* the function fused_past_temporaries built */
        build_fused_only(w, vex_strides);
    tile_declarations(w, depth);
    if (w->status != BCG_OK)
        return;
    for (int k = 1; k <= ir->input_count; k++) {
        int64_t stride = p->stride[k][inner];
        /* (a fused program's other roots read operands themselves; the
         * fused function reads what vex_reads_stride says in place) */
        ir->gathered[k] = ir->root_count == 1 && ir->input_used[k - 1] && stride != 0 &&
                          stride != 1 &&
                          (ir->vex ? vex_strides[k] == 1 && tile_reads(ir, k) >= 1
                                   : tile_reads(ir, k) >= 2);
        if (ir->gathered[k])
            gather_declare(w, depth, k, declared);
    }
    tile_loop(w, depth, extent, vex_whole_run(ir) || fill_whole_run(ir) ? extent : most);
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->gathered[k])
            step_gather(w, depth + 1, k, size, true, false);
    tile_calls(w, depth + 1);
    tile_stores(w, depth + 1);
    step_end(w, depth);
}

/* ---- 2-D tiles -------------------------------------------------------------------------
 *
 * A tree over short inner runs (shorter than microkernel_run: an image of
 * (H, W, 3) times a per-channel gain, a per-row operand (N, 1) against
 * runs of 12) would make one call per operation per run of 3 or 12, and
 * the call costs more than the run; tcc's per-element code is 5-20x slower
 * than gcc's.  Instead a tile is tile_rows whole rows of the two innermost
 * loops (tile_rows * run <= TILE_ELEMENTS elements), and the tree runs
 * over it as the 1-D tiles do, each operation one call over
 * row_count * run contiguous elements.  An operand contiguous over the
 * tile (its outer stride run times an inner stride of 1) is read in place,
 * one value for the whole tile (strides 0 and 0) is passed with stride 0;
 * every other (per-row values, broadcast rows, reversed, strided and
 * transposed views) is gathered into a contiguous tile first
 * (bcg_mk_gather_rows_BITS), once a tile, or once before the tiles when it
 * repeats every row (outer stride 0: the gain).  The output is written in
 * place when contiguous over the tile, else the root's tile is scattered
 * (bcg_mk_scatter_rows_BITS).  The loops outside stay tcc loops moving
 * positions; the last tile has the rows left over.  In place: an element
 * is read (gathered) before the tile's root writes it, and only there. */

/* Measured (2-core AMD EPYC, AVX2, gcc 12; best of 15 batches, the forms
 * interleaved in one process, load 3-5): minimum(2, maximum(a, b * b)) and
 * a * b + c with a (rows, run), b (rows, 1), c (run,).  Against tcc's
 * per-element loops: 2-D tiles were faster from 32 elements on (minimum/
 * maximum 9x at 32 elements, 20-40x from 64; a * b + c 1.4x at 32, 2-4x
 * from 96); at 24 elements a * b + c took 57-80 ns against 39-49 ns, so
 * smaller outputs keep the loops (up to unroll_limit they are unrolled).
 * Against 1-D tiles (one call per run and operation): runs of 16 and 32
 * 2-5x faster as 2-D tiles, 64 1.1-2x, 128 as often slower as faster, 256
 * and 500 up to 2.4x slower (a per-row operand is gathered into every
 * tile, where a 1-D tile takes it with stride 0). */
#define TILES2D_MIN_ELEMENTS 32
/* and at least this many a tile (the calls of a tile cost about 5-10 ns
 * each): runs of 12 in tiles of 2 rows, minimum(2, maximum(a, b * b)) in
 * f64, went from 103 us to 19-24 us (the bench sweep's case); tiles of 12
 * elements (3 rows of 4) make more calls than elements */
#define TILES2D_MIN_TILE 16
#define TILES2D_MAX_RUN 64
/* Runs from TILES2D_MAX_RUN to TILE_ELEMENTS / 2 take 2-D tiles too when no
 * operand is a per-row value (the case that made them slower than 1-D
 * tiles above): then the 2-D tile gathers exactly what the 1-D tiles
 * gather, with a call per operation per tile of several rows instead of
 * per run (bench sweep: nested i16 selects over reversed runs of 131). */
static bool per_row_operand(const kernel_ir *ir)
{
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->input_used[k - 1] && p->stride[k][inner] == 0 && p->stride[k][inner - 1] != 0 &&
            p->extent[inner] > 1)
            return true;
    return false;
}

/* Whether an input is read backwards or with a stride of 2 along the runs
 * (a reversed view, every other element): the _rows microkernel gathers it
 * block by block on every call, the fused function's rows form
 * (vex_rows_chosen) reads it in place with a permute or two a vector.
 * Measured (same process, main's lower.c against this): a + 1, i16
 * (98, 62, 84) reversed along the run, 85 -> 28 us; f32 * 3 over runs of
 * 18, streaming, sweep seed 5: 20.3 -> 1.8 ms; stride 2, (30, 62, 84):
 * u8 a > b 57 -> 5.6 us, i8 a + b 27 -> 5.1 us, i32 minimum 29 -> 20 us,
 * f64 a - b even.  A streaming output over runs longer than a quarter
 * tile keeps the _rows call: the tiles of few rows then gather and stream
 * slower (a + 5 over u8 runs of 313). */
static bool strided_run(const kernel_ir *ir)
{
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->input_used[k - 1] && (p->stride[k][inner] == -1 || p->stride[k][inner] == 2 ||
                                      p->stride[k][inner] == -2))
            return true;
    return false;
}

/* Whether plan operand K is contiguous over a 2-D tile of runs of RUN. */
static bool tile2d_contiguous(const plan *p, int k, int64_t run)
{
    int inner = p->loop_count - 1;
    return p->stride[k][inner - 1] == run && (run == 1 || p->stride[k][inner] == 1);
}

/* Whether plan operand K is one value over the whole tile. */
static bool tile2d_scalar(const plan *p, int k, int64_t run)
{
    int inner = p->loop_count - 1;
    return p->stride[k][inner - 1] == 0 && (run == 1 || p->stride[k][inner] == 0);
}

static bool rows_form_fits(const kernel_ir *ir);
static bool rows_refused(const compile *c, const kernel_ir *ir);

/* Whether the subtree ID calls a function costlier than a few operations
 * (exp, log, sin, tanh, erf ...: not abs, neg, sqrt, floor, ceil). */
static bool expensive_function(const kernel_ir *ir, int id)
{
    static const char *const cheap[] = {"neg", "abs", "sqrt", "floor", "ceil", "pos", "bitnot",
                                        "not", "sign", "square", "reciprocal", "round",
                                        "trunc", "rint", "deg2rad", "rad2deg"};
    for (int inside = id; inside < id + ir->value[id].size; inside++) {
        tile_shape kind;
        const char *family = kir_tile_family(ir, inside, &kind);
        if (!family || kind != TILE_UNARY)
            continue;
        bool is_cheap = false;
        for (size_t i = 0; i < sizeof cheap / sizeof cheap[0]; i++)
            is_cheap = is_cheap || strcmp(family, cheap[i]) == 0;
        if (!is_cheap)
            return true;
    }
    return false;
}

/* ---- 2-D tiles of long runs over a transposed input ---------------------------------
 *
 * A long innermost run over an input whose stride along it spans a cache
 * line while its stride in the loop outside is 1 (b of a + b, b a
 * transposed view) took the cache-blocked scalar form, 0.6 of the gcc
 * hand loop (bench's transposed_b).  Instead, 2-D tiles of whole runs and
 * as many rows as one cache line of that input holds (16 for f32): the
 * gather (bcg_mk_gather_rows_BITS, whose transposed path moves 4 x 4 or 2 x
 * 2 blocks through registers) reads each line of it once, whole, and the
 * operands and output that are C-contiguous stay contiguous over the tile,
 * so the tree is one call per operation a tile.  The tiles live on the
 * stack: TRANSPOSED_TILES_MAX_BYTES bounds all of a kernel's together (the
 * gathered inputs, the temporaries and conversions, a scattered root's),
 * about what the 1-D tiles of a large tree take (12 temporaries of 8 KB,
 * 96 KB), since a kernel runs on its caller's stack (musl's threads have
 * 128 KB), else fewer rows (a line read in halves) down to
 * TRANSPOSED_MIN_ROWS, else the blocked form stays.
 * Measured: see README, Performance, "Transposed inputs, narrow tiles". */
#define TRANSPOSED_TILES_MAX_BYTES (96 * 1024)
#define TRANSPOSED_MIN_ROWS 4
#define TRANSPOSED_LINE_BYTES 64
/* the longest stride across rows that spaced_along takes (elements) */
#define SPACED_ALONG_MAX 8
/* the shortest run plan_order_spaced reorders for (elements) */
#define SPACED_MIN_RUN 16
/* the lines between two trips of the spaced loop that L1 keeps (bytes) */
#define SPACED_REUSE_BYTES (32 * 1024)

/* Whether the 2-D tiles of long runs over a transposed input call the tree
 * once per row of a tile (kernel_ir.row_calls), over columns of the run
 * (tile_columns) when whole runs would not fit.  Every operand whose
 * stride along the run is 0 or 1 is then read in place, a row at a time:
 * one value per row (m of (a.T - m), b (n, 1) against a transposed (n, n))
 * or the same row every tile, which the tiles gathered into a whole tile
 * of copies each.  Only the transposed inputs are gathered, and a tile has
 * the rows of a whole line of theirs (16 f32) within the stack bound:
 * measured (bench transposed_out, 2048 x 2048 f32, interleaved), whole
 * runs of 4 rows (b gathered too) 8.0 ms, 8 rows 4.9 ms, 16 rows of
 * columns of 1024 3.8 ms, of 704 3.2 ms, against 6.8-7.5 ms for the gcc
 * -O3 hand loop.  A
 * call of ROW_CALL_MIN_COLUMNS elements or more costs little more than
 * the tile's.  The output must be contiguous along the run (no scatter).
 * The columns are the outer loop, the tiles of rows inside: a strip's
 * tiles read the next line of the same columns of the transposed input,
 * which the gather prefetches a tile ahead, where rows outside made each
 * tile open 704 new streams (bench transposed, same run: 0.33x NumPy ->
 * 0.82x; a separate interleaved test, a + b with a transposed 2048 x 2048
 * f32: 2.8-3.1 ms -> 1.44 ms, a contiguous add 1.28 ms). */
#define ROW_CALL_MIN_COLUMNS 256

/* Whether plan operand K is read in place by calls per row (row_calls). */
static bool row_call_in_place(const kernel_ir *ir, int k)
{
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    return p->stride[k][inner] == 0 || p->stride[k][inner] == 1;
}

/* (only where an operand is then read in place that a tile would gather:
 * with the transposed input alone, bench transposed_b, 16 rows of columns
 * of 1024 ran at 6.0 ms against 4.7-4.9 ms for 8 rows of whole runs) */
static bool row_calls_wanted(const kernel_ir *ir)
{
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    if (p->loop_count < 2 || 2 * p->extent[inner] <= TILE_ELEMENTS || p->stride[0][inner] != 1)
        return false;
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->input_used[k - 1] && row_call_in_place(ir, k) &&
            !tile2d_contiguous(p, k, p->extent[inner]) && !tile2d_scalar(p, k, p->extent[inner]))
            return true;
    return false;
}

/* The columns of a tile of ROWS rows of calls per row: the whole run when
 * it fits the bound, else (GATHERED_SIZE, the narrowest gathered element,
 * 4 bytes or more) a multiple of 64 elements whose tiles fit
 * ROW_CALL_COLUMN_BYTES, 0 when that is under ROW_CALL_MIN_COLUMNS or the
 * elements are narrower.  Measured (interleaved, 2048 x 2048): columns
 * whose tiles fill L1 (48 KB, 16 rows of 704 f32) ran transposed_out in
 * 3.2-3.4 ms against 4.2 ms for 64 KB of them (16 x 1024), f64 (8 x 704)
 * within 2% either way; i16 over runs of 2000 (the 16-bit gather has no
 * register transposes) was 15% slower in columns of 704 or 1024 than in
 * whole runs of half the rows, which it keeps. */
#define ROW_CALL_COLUMN_BYTES (48 * 1024)

static int64_t row_call_columns(int64_t run, int64_t rows, int tiles, int run_tiles,
                                size_t widest, size_t gathered_size)
{
    double per_column = ((double)tiles * (double)rows + run_tiles) * (double)widest;
    if ((double)TRANSPOSED_TILES_MAX_BYTES / per_column >= (double)run)
        return run;
    if (gathered_size < 4)
        return 0;
    double columns = (double)ROW_CALL_COLUMN_BYTES / per_column;
    if (columns >= (double)run)
        return run;
    int64_t most = (int64_t)columns / 64 * 64;
    if (most < ROW_CALL_MIN_COLUMNS)
        return 0;
    /* as even as the columns go: 2048 in 1024 and 1024, not 1536 and 512 */
    int64_t pieces = (run + most - 1) / most, even = (run + pieces - 1) / pieces;
    return (even + 63) / 64 * 64;
}

void lower_order_plan(compile *c)
{
    if (!c->microkernels || c->options.microkernel_run <= 0 || c->reduce || c->fill_plan ||
        c->fuse_count != 0 || c->aot)
        return;
    plan *p = c->plan;
    int order[BCG_MAX_RANK];
    memcpy(order, p->order, sizeof order);
    plan_order_transposed(p, MAX_TILE_STRIDE, TILE_ELEMENTS / 2 + 1, TRANSPOSED_MIN_ROWS);
    if (memcmp(order, p->order, sizeof order) != 0)
        return;
    size_t size[BCG_MAX_OPERANDS + 1] = {0};
    for (int i = 0; i < c->operand_count && i < BCG_MAX_OPERANDS; i++)
        size[i + 1] = bcg_dtype_size(c->operands[i].dtype);
    plan_order_spaced(p, size, MAX_TILE_STRIDE, SPACED_MIN_RUN, TRANSPOSED_MIN_ROWS,
                      SPACED_ALONG_MAX, TRANSPOSED_LINE_BYTES, SPACED_REUSE_BYTES);
}

/* Whether ALONG, an input's stride in the loop just outside the run, is
 * short though not 1: rows a few elements apart, several to a line (a of
 * i8 (3428, 834) strides (-3, -10284)).  The gather's spaced path reads a
 * tile's rows of each column together as its transposed path does. */
static bool spaced_along(int64_t along, int64_t size)
{
    return along != 0 && along >= -SPACED_ALONG_MAX && along <= SPACED_ALONG_MAX &&
           2 * (along < 0 ? -along : along) * size <= TRANSPOSED_LINE_BYTES;
}

/* The rows of a tile, 0 for no tiles; with calls per row also their
 * columns into *COLUMNS (when not NULL). */
static int64_t transposed_rows_for(const lowering *w, bool row_calls, bool narrow_columns,
                                   int64_t *columns, int64_t *line_rows);

/* (calls per row also where whole runs would not hold a line's rows of the
 * transposed input within the stack bound: where(7 > a, 7, a) over a of
 * stride 15 along runs of 79160 i32, 15 rows a line, took the per-element
 * code, 0.2x the cc backend) */
static int64_t transposed_tile_rows(const lowering *w, int64_t *columns, bool *row_calls)
{
    int64_t line_rows = 0, rows;
    bool wanted = row_calls_wanted(w->ir);
    const plan *p = w->ir->p;
    rows = transposed_rows_for(w, wanted, false, columns, &line_rows);
    if (!wanted && rows < line_rows && p->stride[0][p->loop_count - 1] == 1) {
        int64_t by_row = transposed_rows_for(w, true, false, columns, &line_rows);
        if (by_row > rows) {
            if (row_calls)
                *row_calls = true;
            return by_row;
        }
    }
    /* no tiles else: columns of 8 and 16-bit elements too (see
     * row_call_columns), where the per-element code was the alternative */
    if (rows == 0 && line_rows >= TRANSPOSED_MIN_ROWS && p->stride[0][p->loop_count - 1] == 1) {
        rows = transposed_rows_for(w, true, true, columns, &line_rows);
        if (row_calls)
            *row_calls = rows > 0;
        return rows;
    }
    if (row_calls)
        *row_calls = wanted;
    return rows;
}

/* The rows of a tile as transposed_tile_rows, calls per row or not
 * (ROW_CALLS); *LINE_ROWS the rows of a line of the transposed input,
 * as many as the loop has. */
static int64_t transposed_rows_for(const lowering *w, bool row_calls, bool narrow_columns,
                                   int64_t *columns, int64_t *line_rows)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    if (p->loop_count < 2)
        return 0;
    int inner = p->loop_count - 1, outer = inner - 1;
    int64_t run = p->extent[inner], rows = 0;
    if (2 * run <= TILE_ELEMENTS)
        return 0; /* the 2-D tiles of short runs */
    int tiles = !row_calls && !tile2d_contiguous(p, 0, run); /* a scattered root's */
    int run_tiles = 0; /* a call per row: temporaries of one row */
    size_t widest = bcg_dtype_size(ir->out_dtype);
    for (int id = 0; id < ir->node_count; id++) {
        size_t size = bcg_dtype_size(ir->nodes[id]->dtype);
        widest = size > widest ? size : widest;
        if (ir->nodes[id]->op == OP_OPERAND || ir->nodes[id]->op == OP_LITERAL)
            continue;
        int temporaries = id != 0; /* the root writes the output */
        for (int k = 0; k < ir->nodes[id]->arg_count; k++)
            temporaries += kir_tile_converts(ir, id, k);
        if (row_calls)
            run_tiles += temporaries;
        else
            tiles += temporaries;
    }
    size_t gathered_size = 8; /* the narrowest gathered element */
    for (int i = 0; i < ir->input_count; i++) {
        if (!ir->input_used[i])
            continue;
        bool gathered = !tile2d_contiguous(p, i + 1, run) && !tile2d_scalar(p, i + 1, run) &&
                        !(row_calls && row_call_in_place(ir, i + 1));
        tiles += gathered;
        int64_t size = (int64_t)bcg_dtype_size(c->operands[i].dtype);
        if (gathered && (size_t)size < gathered_size)
            gathered_size = (size_t)size;
        int64_t across = p->stride[i + 1][inner], along = p->stride[i + 1][outer];
        /* spans of real memory: the product fits */
        /* (a stride the 1-D tiles refuse, or a line: stride 15 of i32
         * puts a column's 15 rows and the next column's in one read) */
        bool long_stride = across > MAX_TILE_STRIDE || across < -MAX_TILE_STRIDE ||
                           across >= TRANSPOSED_LINE_BYTES / size ||
                           across <= -TRANSPOSED_LINE_BYTES / size;
        if ((along == 1 || along == -1 || spaced_along(along, size)) && /* the gather's transposed path (ro 1; -1 its rows loop) */
            long_stride && TRANSPOSED_LINE_BYTES / size > rows)
            rows = TRANSPOSED_LINE_BYTES / size;
    }
    if (rows > p->extent[outer])
        rows = p->extent[outer];
    *line_rows = rows;
    if (narrow_columns && gathered_size < 4)
        gathered_size = 4;
    if (row_calls) {
        while (rows >= TRANSPOSED_MIN_ROWS &&
               !row_call_columns(run, rows, tiles, run_tiles, widest, gathered_size))
            rows /= 2;
        if (columns && rows >= TRANSPOSED_MIN_ROWS)
            *columns = row_call_columns(run, rows, tiles, run_tiles, widest, gathered_size);
        return rows >= TRANSPOSED_MIN_ROWS ? rows : 0;
    }
    while (rows >= TRANSPOSED_MIN_ROWS &&
           (double)tiles * (double)rows * (double)run * (double)widest > TRANSPOSED_TILES_MAX_BYTES)
        rows /= 2;
    return rows >= TRANSPOSED_MIN_ROWS ? rows : 0;
}

/* The rows of a 2-D tile of short runs (2 * run <= TILE_ELEMENTS) over an
 * input read across lines along the run and along a line in the loop
 * outside (transposed: outer stride +-1; spaced: spaced_along), when more
 * than TILE_ELEMENTS / run: a line's worth of rows, as the long runs' tiles
 * take (transposed_rows_for), within TRANSPOSED_TILES_MAX_BYTES of tiles;
 * else 0.  Tiles of TILE_ELEMENTS / run rows (6 rows of 150) had the
 * gather's transposed path read 6 bytes of each line a tile and every
 * line again the next tile, a tile's calls and gathers for few elements
 * (5 - a, u8 (93, 150) transposed: see the commit). */
static int64_t short_transposed_rows(const lowering *w)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    if (p->loop_count < 2)
        return 0;
    int inner = p->loop_count - 1, outer = inner - 1;
    int64_t run = p->extent[inner], rows = 0;
    if (2 * run > TILE_ELEMENTS)
        return 0;
    int tiles = !tile2d_contiguous(p, 0, run);
    size_t widest = bcg_dtype_size(ir->out_dtype);
    for (int id = 0; id < ir->node_count; id++) {
        size_t size = bcg_dtype_size(ir->nodes[id]->dtype);
        widest = size > widest ? size : widest;
        if (ir->nodes[id]->op == OP_OPERAND || ir->nodes[id]->op == OP_LITERAL)
            continue;
        tiles += id != 0;
        for (int k = 0; k < ir->nodes[id]->arg_count; k++)
            tiles += kir_tile_converts(ir, id, k);
    }
    for (int i = 0; i < ir->input_count; i++) {
        if (!ir->input_used[i] || tile2d_contiguous(p, i + 1, run) ||
            tile2d_scalar(p, i + 1, run))
            continue;
        tiles++;
        int64_t size = (int64_t)bcg_dtype_size(c->operands[i].dtype);
        int64_t across = p->stride[i + 1][inner], along = p->stride[i + 1][outer];
        if (across < 0)
            across = -across;
        /* (or a stride the 1-D tiles refuse, under a line: u8 stride 13) */
        if ((along == 1 || along == -1 || spaced_along(along, size)) &&
            (across * size >= TRANSPOSED_LINE_BYTES || across > MAX_TILE_STRIDE) &&
            TRANSPOSED_LINE_BYTES / size > rows)
            rows = TRANSPOSED_LINE_BYTES / size;
    }
    if (rows > p->extent[outer])
        rows = p->extent[outer];
    while ((double)tiles * (double)rows * (double)run * (double)widest >
           TRANSPOSED_TILES_MAX_BYTES)
        rows /= 2;
    return rows > TILE_ELEMENTS / run ? rows : 0;
}

static bool vex_in_place(const lowering *w, int k);

/* Whether a per-row subtree (as per_row_subtree) takes a square root or
 * a quotient: the divider's work, once a row instead of every element. */
static bool per_row_divides(const kernel_ir *ir)
{
    for (int id = 0; id < ir->node_count; id++) {
        int op = ir->nodes[id]->op;
        if ((op == OP_SQRT || op == OP_DIV || op == OP_RECIPROCAL) && ir->value[id].folded < 0 &&
            ir->value[id].level > 0 && ir->value[id].level < ir->per_element)
            return true;
    }
    return false;
}

/* Whether IR has an exp or log constant along the run but not along the
 * loops outside it (vex.c float_hoist_refused: the rows form computes it
 * once a row, the flat form every vector). */
static bool per_row_functions(const kernel_ir *ir)
{
    for (int id = 0; id < ir->node_count; id++) {
        int op = ir->nodes[id]->op;
        if ((op == OP_EXP || op == OP_LOG) && ir->value[id].folded < 0 &&
            ir->value[id].level > 0 && ir->value[id].level < ir->per_element)
            return true;
    }
    return false;
}

/* Runs of TILES2D_MAX_RUN to TILE_ELEMENTS / 2 with a per-row operand
 * take 2-D tiles too when the fused function's rows form will read every
 * operand in place (no gathers: contiguous over the tile, one value, or
 * read in place row by row) and computes a per-row subtree once a row
 * (the typed path's hoisting) or has none, the output contiguous along
 * the run: then
 * a call covers every row of a tile instead of one call per run with C
 * computing the per-row subtrees between calls (where(2 - a > c + b, 2 -
 * a, c + b), a and b per row, 110 runs of 145: see the commit). */
/* Whether a subtree other than a leaf is constant along the run but not
 * along the loops outside it (a per-row value that C or the function's
 * hoisting computes once a row). */
static bool per_row_subtree(const kernel_ir *ir)
{
    for (int id = 0; id < ir->node_count; id++) {
        const expr_node *n = ir->nodes[id];
        if (n->op != OP_OPERAND && n->op != OP_LITERAL && ir->value[id].folded < 0 &&
            ir->value[id].level > 0 && ir->value[id].level < ir->per_element)
            return true;
    }
    return false;
}

static bool medium_rows_in_place(const lowering *w)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    int64_t run = p->extent[inner];
    if (c->stream || c->options.disable_vector_code || ir->root_count != 1 || ir->reduce ||
        !vex_cpu_ok() || p->stride[0][inner] != 1 || run < vex_lanes(ir))
        return false;
    /* (a per-row subtree: integer trees only: a mixed one, where(2 - a >
     * c + b, ...) in f64 over i32 and f32 operands, ran 1.3-1.6x slower
     * row by row than the calls per run, its per-row values in stack slots
     * each vector; per-row leaves alone are read one value a row, and the
     * call for every row wins, cc / JIT same process, calls per run ->
     * one call: c - b, f64 rows of 112, c per row, b i16 0.57 -> 0.80, b
     * f64 0.58-0.76 -> 0.65-0.98; c * b + b f32 rows of 70 0.59 -> 0.80-0.90,
     * of 90 0.80 -> 0.96; (c - b) * c, f32 rows of 67 0.73-0.77 -> 0.97-1.0;
     * even for rows of 300-1000) */
    if (per_row_subtree(ir) && !vex_float_hoists(ir)) {
        if (!vex_hoists_per_run(ir))
            return false;
        for (int id = 0; id < ir->node_count; id++)
            if (dtype_kind_of(ir->nodes[id]->dtype) == KIND_FLOAT)
                return false;
    }
    for (int k = 1; k <= ir->input_count; k++) {
        if (!ir->input_used[k - 1] || tile2d_contiguous(p, k, run) || tile2d_scalar(p, k, run))
            continue;
        if (!vex_in_place(w, k) ||
            (run % vex_lanes(ir) != 0 &&
             !vex_vector_tail(ir, c->operands[k - 1].dtype, p->stride[k][inner])))
            return false;
    }
    return true;
}

static bool vex_rows_chosen(const lowering *w);

/* Runs of TILES2D_MAX_RUN to TILE_ELEMENTS / 2 with a per-row operand
 * and an operand read in place with a stride other than 0 and 1 (every
 * other element, reversed of another dtype, +-3) take 2-D tiles when the
 * fused function's rows form reads every operand in place with a vector
 * tail (vex_vector_tail: the last whole vector again): one call for every
 * row instead of one a run, whose prologue (registers saved, constants
 * and held leaves loaded) costs more than gcc's loop over a row
 * (where(b != 7, b, a), a f64 rows of 155 stride 2, b i8 one value a
 * row: see the commit). */
static bool medium_strided_rows(const lowering *w)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    int64_t run = p->extent[inner];
    if (vex_medium_strided_rows == 0 || c->stream || c->options.disable_vector_code ||
        ir->root_count != 1 || ir->reduce || !vex_cpu_ok() || p->stride[0][inner] != 1 ||
        run < vex_lanes(ir))
        return false;
    bool strided = false;
    for (int k = 1; k <= ir->input_count; k++) {
        if (!ir->input_used[k - 1] || tile2d_contiguous(p, k, run) || tile2d_scalar(p, k, run))
            continue;
        int64_t stride = p->stride[k][inner];
        if (!vex_in_place(w, k) ||
            (run % vex_lanes(ir) != 0 && !vex_vector_tail(ir, c->operands[k - 1].dtype, stride)))
            return false;
        strided = strided || (stride != 0 && stride != 1);
    }
    return strided;
}

/* Whether the tree is a leaf copied from runs read backwards (a + 0
 * folded) that the fused function's rows form copies in one call for
 * every row, a vpshufb and a vpermq a vector (vex.c reversed_copy), where
 * the 1-D tiles call the cast microkernel once a run and it copies
 * element by element (i8 (300, 64) reversed rows: 3.1 us, cc 0.2 us). */
static bool reversed_rows_copy(const lowering *w)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    bcg_dtype t = ir->nodes[0]->dtype;
    int64_t limit = (int64_t)1 << 26; /* (vex_build: the outer strides' adds) */
    if (ir->nodes[0]->op != OP_OPERAND || ir->value[0].local || c->stream ||
        c->options.disable_vector_code || !vex_cpu_ok() || ir->root_count != 1 ||
        t != ir->out_dtype || dtype_kind_of(t) == KIND_FLOAT || t == BCG_BOOL ||
        p->stride[0][inner] != 1 || p->stride[0][inner - 1] > limit ||
        p->stride[0][inner - 1] < -limit ||
        p->extent[inner] < 2 * (32 / (int64_t)bcg_dtype_size(t))) /* (as reversed_copy) */
        return false;
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->input_used[k - 1] &&
            (p->stride[k][inner] != -1 || p->stride[k][inner - 1] > limit ||
             p->stride[k][inner - 1] < -limit))
            return false;
    return vex_rows_chosen(w);
}

/* Whether the tree is an input copied whole (`a`, maximum(a, a) folded)
 * of the output's dtype, read forwards along runs of TILES2D_MIN_TILE or
 * more whose rows are not one contiguous block (reversed, permuted or
 * apart: else the plan had merged them), the output contiguous over the
 * rows: the 2-D tiles' gather writes the output's rows itself
 * (gather_into_output), a memcpy a row, and since no tile lives on the
 * stack a call takes every row of the loop outside the run (lower_kernel),
 * where the 1-D tiles called the cast kernel once a run, its prologue and
 * tcc's loop around it costing more than the run (maximum(a, a), i32
 * (61, 12, 4, 4, 3) rows of 48 reversed, sweep seed 96 case 85: 732 calls,
 * see the commit).  Not with streaming stores (the gather writes plainly)
 * nor for a bool or f16/bf16 (gather_into_output). */
static bool rows_copy(const lowering *w)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    const expr_node *root = ir->nodes[0];
    if (root->op != OP_OPERAND || ir->root_count != 1 || ir->reduce || c->stream ||
        p->loop_count < 2 || root->dtype != ir->out_dtype || ir->out_dtype == BCG_BOOL ||
        dtype_is_half(ir->out_dtype))
        return false;
    int k = root->operand + 1, inner = p->loop_count - 1;
    int64_t run = p->extent[inner];
    return c->operands[k - 1].dtype == ir->out_dtype && run >= TILES2D_MIN_TILE &&
           p->stride[k][inner] == 1 && p->stride[k][inner - 1] != 0 &&
           p->stride[k][inner - 1] != run && tile2d_contiguous(p, 0, run);
}

/* Smaller 2-D tiles, down to TILES2D_MIN_FUNCTION_TILE elements, for a
 * tree with a function that varies along the runs and has a vectorised
 * microkernel in f32 (exp, log, tanh, expm1 ... of runtime/microkernels.c,
 * 8 lanes).  Otherwise such a tree is tcc's per-element code, which
 * calls the C library once per element: in that stack-bound code each
 * call costs 9-13 ns (expf from the same code compiled by gcc -O0: as
 * slow; -O1: 2 ns; not the PLT, an AVX-SSE transition or denormals).
 * Measured (cc / JIT in one process, busy machine): maximum(exp(a),
 * exp(b * c)) f32 runs of 3 in rows of 4, 6768 elements, 0.13-0.34 ->
 * 0.62-1.14; abs(exp(minimum(b, exp(f32(c)))) / a + abs(a)) runs of 6
 * in rows of 2: 0.50 -> 0.79; log(abs(a) + 1) - b f32 runs of 5, rows of
 * 2: even (0.37-0.56 both).  Not a function constant along the run (per
 * row: the tile computes it per element, exp(a) * b 0.46 -> 0.21), nor
 * f64 (its polynomials 4 lanes, the others the C library's inside the
 * microkernel: exp(a * b) f64 runs of 3, rows of 4, 0.49-0.79 -> 0.55-
 * 0.72; sin(a) + cos(b) 0.89 -> 0.57), nor tiles under 8 (f64 exp(a) - 1
 * in tiles of 6: 1.44 -> 0.73).  Random f32 trees of short runs in rows of
 * 8 to 15 elements (bench of this change, same harness, main against
 * this): exp, log, tanh, expm1, log1p, arctan, expit, tan, exp2, 24
 * cases, cc / JIT geomean 0.51 -> 0.97 and 0.65 -> 0.86; but sin(a) + c
 * 0.52-0.89 -> 0.33-0.50 (its double-precision reduction), and log2 and
 * log10 either way (0.52 -> 0.26, 0.33 -> 0.44; 0.83 -> 0.74): those four
 * keep tcc's code. */
#define TILES2D_MIN_FUNCTION_TILE 8

static bool vectorised_function_along_run(const kernel_ir *ir)
{
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    bool found = false;
    for (int id = 0; id < ir->node_count; id++) {
        tile_shape kind;
        const char *family = kir_tile_family(ir, id, &kind);
        if (!family || kind != TILE_UNARY || !expensive_function(ir, id))
            continue;
        expr_op op = ir->nodes[id]->op;
        if (op == OP_SIN || op == OP_COS || op == OP_LOG2 || op == OP_LOG10)
            return false; /* (anywhere in the tree) */
        if (kir_tile_dtype(ir, id) != BCG_F32)
            continue;
        for (int c = id + 1; c < id + ir->value[id].size; c++)
            found = found || (ir->nodes[c]->op == OP_OPERAND &&
                              p->stride[ir->nodes[c]->operand + 1][inner] != 0);
    }
    return found;
}

/* Whether the tree is an input copied whole (`a`, maximum(a, a) folded)
 * that is read across lines along the run and along a line in the loop
 * outside (transposed, or spaced): the 2-D tiles gather it, the gather's
 * transposed path reading each line once, and the cast kernel of its
 * dtype copies the tile out, where the cache-blocked loops copied element
 * by element (same process, cc / JIT: u8 (2000, 3000) transposed 0.26 ->
 * 9.1, i16 (12, 30000) 0.17 -> 1.08, f64 (134, 317) 0.12 -> 0.72). */
static bool transposed_copy(const lowering *w)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    if (ir->nodes[0]->op != OP_OPERAND || ir->root_count != 1 || p->loop_count < 2)
        return false;
    int k = ir->nodes[0]->operand + 1, inner = p->loop_count - 1;
    int64_t size = (int64_t)bcg_dtype_size(w->c->operands[k - 1].dtype);
    int64_t along = p->stride[k][inner - 1], across = p->stride[k][inner];
    if (across < 0)
        across = -across;
    /* (or a stride the 1-D tiles refuse, under a line: u8 a copied
     * across rows of 13 to 63 bytes went to tcc's groups) */
    return (along == 1 || along == -1 || spaced_along(along, size)) &&
           (across * size >= TRANSPOSED_LINE_BYTES || across > MAX_TILE_STRIDE);
}

/* Whether the tree is one operation of leaves (a cast, a + b), which the
 * fused function leaves to its microkernel (vex_build). */
static bool one_operation(const kernel_ir *ir)
{
    for (int id = 1; id < ir->node_count; id++)
        if (ir->nodes[id]->op != OP_OPERAND && ir->nodes[id]->op != OP_LITERAL)
            return false;
    return ir->nodes[0]->op != OP_OPERAND && ir->nodes[0]->op != OP_LITERAL;
}

/* Whether the 2-D tiles of long runs (over TILES2D_MAX_RUN) would gather
 * an input the 1-D tiles read in place: every input is read along the run
 * with stride 1 or is one value over the tile, and one of them is not
 * contiguous over the tile (rows further apart than a run, in reverse
 * order, of a sub-view).  The 2-D tile copies it first, a call per
 * operation per run reads it where it is (unless the fused function's
 * rows form reads it in place, which it does for two operations or more):
 * i32(a) with a i16 (149, 5, 258) the rows reversed, 3 rows a tile: see
 * the commit. */
static bool tiles2d_add_gather(const kernel_ir *ir)
{
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    int64_t run = p->extent[inner];
    bool added = false;
    for (int k = 1; k <= ir->input_count; k++) {
        if (!ir->input_used[k - 1] || tile2d_scalar(p, k, run))
            continue;
        if (p->stride[k][inner] != 1)
            return false;
        added = added || !tile2d_contiguous(p, k, run);
    }
    return added;
}

/* Whether the 1-D tiles were refused for an input read with a long stride
 * along the run (tiles_chosen: a transposed view).  A per-row operand
 * (per_row_operand) then keeps the 2-D tiles: that rule weighs them
 * against the 1-D tiles, and the alternative here is tcc's per-element
 * code, cache blocks (blocking_chosen) or groups.  Measured (same
 * process, cc / JIT, machine under load): a - (b) * (b), i16 b transposed
 * (stride 6969 along runs of 143), a one value a row: 0.13 -> 1.2;
 * minimum((a) * (b), (b) * (c)) u8, b per row, c spaced (3 along rows of
 * 4, 2664 along runs of 224): 0.14 -> 1.7. */
static bool long_stride_run(const lowering *w)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    if (ir->tiled)
        return false;
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->input_used[k - 1] &&
            (p->stride[k][inner] > MAX_TILE_STRIDE || p->stride[k][inner] < -MAX_TILE_STRIDE))
            return true;
    return false;
}

/* Whether a tree with a microkernel for every operation but more of them
 * than MAX_TILE_TEMPORARIES (fused_past_temporaries, for the 2-D tiles)
 * is written by the fused function over a 2-D tile, every operand
 * contiguous over it (gathered) or one value for it, and over a tile of
 * calls per row (an operand of stride 0 along the run one value a row):
 * lower_tiles2d then builds it with lowering.fused_only set, where the
 * cache blocks ran (f32(c > i16((c) * (2) + abs(a)) + sqrt(f64(abs(b))))
 * * (c), 14 operations, b i32 transposed, runs of 115: cc / JIT 0.17 ->
 * 12-17, same process, under load). */
static bool fused_over_tile2d(const lowering *w)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    int64_t run = p->extent[inner];
    int uncounted = -(1 << 20); /* every operation's microkernel, however many */
    if (w->c->options.disable_vector_code || !vex_cpu_ok() || ir->root_count != 1 ||
        !tile_supported(ir, 0, ir->out_dtype, &uncounted))
        return false;
    for (int row_calls = 0; row_calls < 2; row_calls++) {
        int64_t strides[BCG_MAX_OPERANDS + 1] = {0};
        for (int k = 1; k <= ir->input_count; k++)
            strides[k] = (row_calls ? p->stride[k][inner] == 0 : tile2d_scalar(p, k, run)) ? 0 : 1;
        vex_layout layout = {strides, false, NULL, 0, 0, NULL, 0};
        vex_function *f = NULL;
        if (vex_build(w->c->arena, ir, &layout, &f) != BCG_OK || !f)
            return false;
    }
    return true;
}

/* Whether one 8- or 16-bit operation over runs of VEX_FLAT_MAX_RUN + 1
 * to NARROW_SCATTERED_MAX_RUN, read forwards (or one value a row), of an
 * operand whose rows are not one contiguous block (reversed, permuted), the output
 * contiguous over the rows, takes the 2-D tiles with the fused
 * function's rows form reading each row in place (one call for every row,
 * or over two loops, row_groups) instead of the _rows microkernel, whose
 * per-run cost (rows_inline, RUN_HALVES' two blocks through the stack)
 * is more than such a run's work.  Measured, cc / JIT same process,
 * medians of 5, _rows -> rows form: a - 3, u8 (3125, 48) rows reversed
 * 0.39 -> 0.50, i16 0.50 -> 0.74; a + b, u8 (7, 2, 4, 5, 64) a's rows
 * permuted 0.44 -> 0.84; a * b, i16 rows of 100 reversed 0.85 -> 1.17;
 * a - b, i8 rows of 128 0.97 -> 1.15; a & b, u8 rows of 100 0.98 ->
 * 1.19; a * 3, u8 rows of 80 1.02 -> 1.98; beside an operand of one
 * value a row: a + b, u16 rows of 64 reversed 0.46 -> 0.90, u8 a - b
 * rows of 100 0.85 -> 0.91, i16 b * a rows of 56 permuted 1.11 -> 1.27,
 * i8 minimum(a, b) rows of 50 0.94 -> 1.01; longer runs: u8 a - 3
 * rows of 200 0.87 -> 1.23, of 400 1.08 -> 1.33, i16 a * b rows of 136
 * 0.92 -> 1.43, i8 maximum(a, 3) rows of 300 1.11 -> 1.43, i16 a - b
 * rows of 500 0.96 -> 0.99; even: u16 a * 3 rows of 90 1.7.  An
 * 8-bit output includes comparisons of wider operands: a > b, f32 rows of
 * 60 reversed 0.65 -> 1.46, f64 a < 3 rows of 48 0.58 -> 1.01, i32 a == b
 * rows of 100 0.76 -> 1.03.  Not wider outputs, whose per-run cost is a
 * smaller share of the run: even within noise (f32 a + b rows of 60, i32
 * a * 3, f64 a - b, i64 maximum, 0.94-1.13 either way; u32 a + b rows of
 * 50 permuted gained, 0.84 -> 0.97).  Not runs of VEX_FLAT_MAX_RUN
 * or less, which the rows form gives to the flat form (a + b, u16 (40,
 * 30, 24), a's rows permuted: flat 1.14, the rows form over two loops
 * 0.81). */
#define NARROW_SCATTERED_MAX_RUN (TILE_ELEMENTS / 2) /* (as tiles2d_chosen) */
static bool narrow_scattered_rows(const lowering *w)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    int64_t run = p->extent[inner];
    size_t size = bcg_dtype_size(ir->out_dtype);
    if (c->stream || c->options.disable_vector_code || !vex_cpu_ok() || ir->root_count != 1 ||
        ir->reduce || !ir->tiled || (size != 1 && size != 2) || run <= VEX_FLAT_MAX_RUN ||
        run > NARROW_SCATTERED_MAX_RUN || p->stride[0][inner] != 1 ||
        !tile2d_contiguous(p, 0, run) || !rows_form_fits(ir))
        return false;
    bool scattered = false;
    for (int k = 1; k <= ir->input_count; k++) {
        if (!ir->input_used[k - 1] || tile2d_scalar(p, k, run))
            continue;
        if (p->stride[k][inner] == 0) /* (one value a row: held in a register a row) */
            continue;
        if (p->stride[k][inner] != 1)
            return false;
        /* (not rows that repeat, across 0: the flat form takes those,
         * long_rows_flat) */
        scattered = scattered || (!tile2d_contiguous(p, k, run) && p->stride[k][inner - 1] != 0);
    }
    return scattered && vex_rows_chosen(w);
}

static bool tiles2d_chosen(lowering *w)
{
    const compile *c = w->c;
    kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    if (!c->microkernels || c->options.microkernel_run <= 0 || ir->unrolled || p->empty ||
        p->loop_count < 2 || p->elements < TILES2D_MIN_ELEMENTS)
        return false;
    int inner = p->loop_count - 1;
    int64_t run = p->extent[inner];
    /* longer runs: only short enough that a tile holds several, and not a
     * single operation the _rows form does in one call; runs the 1-D tiles
     * refused for an input's long stride (a transposed view) included: the
     * gather reads a tile's rows of each column together (measured, runs
     * of 16 to 64 of a transposed f32 (m, n) + (m, 1) ops: 1.6-7x faster
     * than the per-element code with m 2000 and 20000, 4-20x for
     * minimum(2, maximum(a, b * b))) */
    int64_t transposed = ir->tiled ? 0 : transposed_tile_rows(w, NULL, NULL);
    if (run >= c->options.microkernel_run && !transposed && !narrow_scattered_rows(w) &&
        ((run > TILES2D_MAX_RUN && per_row_operand(ir) && !long_stride_run(w) &&
          !medium_rows_in_place(w) && !medium_strided_rows(w)) ||
         (ir->tiled && rows_form_fits(ir) && !rows_refused(c, ir) &&
          !(strided_run(ir) && (!c->stream || 4 * run <= TILE_ELEMENTS)))))
        return false;
    if (2 * run > TILE_ELEMENTS && !transposed)
        return false;
    if (ir->tiled && run > TILES2D_MAX_RUN && !transposed && tiles2d_add_gather(ir) &&
        !rows_copy(w) && /* (the gather is the copy) */
        (!vex_rows_chosen(w) || (one_operation(ir) && !tile2d_contiguous(p, 0, run))))
        return false;
    int64_t rows = p->extent[inner - 1] < TILE_ELEMENTS / run ? p->extent[inner - 1]
                                                              : TILE_ELEMENTS / run;
    if (transposed)
        rows = transposed;
    if (rows * run < TILES2D_MIN_TILE &&
        !(rows * run >= TILES2D_MIN_FUNCTION_TILE && vectorised_function_along_run(ir)))
        return false;
    /* a subtree the 1-D tiles compute once per run is computed per element
     * over a 2-D tile; measured, that still wins for arithmetic (a per-row
     * i8(2 + c - b) under runs of 30: 2.5x; (x - m) / sqrt(v + 1e-5) with
     * runs of 20: 1.6x, of 64: even) but not for exp(v) * x (5x slower) */
    /* (unless the rows form computes it once a row: vex.c
     * float_hoist_refused, f32 log and exp, with its measurements) */
    bool hoisted_rows = ir->tiled && vex_float_hoists(ir) && vex_rows_chosen(w);
    for (int id = 0; ir->tiled && !hoisted_rows && id < ir->node_count; id++)
        if (tile_hoistable(ir, id) && ir->value[id].level == inner &&
            expensive_function(ir, id))
            return false;
    const expr_node *root = ir->nodes[0];
    /* (a transposed operand copied whole: the gather's transposed path
     * does the work, the cast kernel of its dtype copies its tile out) */
    if ((root->op == OP_OPERAND && !reversed_rows_copy(w) && !rows_copy(w) &&
         !(transposed_copy(w) && tile_cast_exists(root->dtype, root->dtype))) ||
        root->op == OP_LITERAL || root->dtype != ir->out_dtype)
        return false;
    int operations = 0;
    ir->tile_loop = inner - 1; /* what tile_hoistable takes as constant over a tile */
    if (tile_supported(ir, 0, ir->out_dtype, &operations))
        return true;
    if (operations > MAX_TILE_TEMPORARIES && long_stride_run(w) && fused_over_tile2d(w)) {
        w->fused_only = true;
        return true;
    }
    ir->tile_loop = inner;
    return false;
}

/* The fused function's rows form (vex_function.rows) for 2-D tiles: each
 * row a run of its own, every operand moved on by its own outer stride,
 * read in place where vex_reads_stride allows (a per-row value as one
 * value a row, a row-contiguous operand whose rows are further apart than
 * a run, a reversed one), instead of gathering the operands that are not
 * contiguous over the tile into tiles first.  Chosen when such an operand
 * exists and runs hold a vector (8 f32, 4 f64 lanes) at least: a run's
 * last elements short of a vector go through the function's masked tail.
 * Measured ((x - m) * s, x (8192, run), m and s (8192, 1), same process,
 * rows form against the gathers): f32 runs of 4 2x slower, 8 1.3x
 * faster, 12 0.9-1.7x, 20 1.9x, 28 3.6x, 44 1.8x, 60 2.6x, 100 1.07x; f64
 * runs of 4 1.6x faster, 6 1.1x, 8 1.8x, 10 even, 16 1.3x. */

/* Whether plan operand K of a 2-D tile is read in place by the rows form.
 * Not an operand read with a long stride along the run that another loop
 * reads contiguously (a transposed view): the gather's transposed path
 * reads it a line at a time, where the rows form would load each element
 * alone (b + a, a i32 (1775, 1089) transposed: cc / JIT 2.96 gathered,
 * 0.78-1.02 in place). */
static bool vex_in_place(const lowering *w, int k)
{
    const plan *p = w->ir->p;
    int inner = p->loop_count - 1;
    int64_t stride = p->stride[k][inner];
    for (int l = 0; (stride > MAX_TILE_STRIDE || stride < -MAX_TILE_STRIDE) && l < inner; l++)
        if (p->stride[k][l] == 1 || p->stride[k][l] == -1)
            return false;
    return vex_reads_stride(w->ir, w->c->operands[k - 1].dtype, stride);
}

/* Whether the rows form's float tree takes a run's last elements short of
 * a vector as its last whole vector again (vex.c, float_overlap: every
 * leaf along the run contiguous, read in place or from its gathered tile,
 * or one value a row), not through the stack slots: then an operand of
 * another dtype (i32 under f64(a)), contiguous along its runs whose rows
 * lie apart, is read in place instead of copied into tiles first
 * ((a) / (f64(a)), a i32 rows of 118 44132 apart: see the commit). */
static bool float_overlap_rows(const lowering *w)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    int64_t run = p->extent[inner];
    /* (runs of three vectors or more: where(a == 1.5, a, b), f32 rows of
     * 17, the last vector again a third of the row's work, ran 5-10%
     * slower than its gathers) */
    if (ir->stream || vex_hoists_per_run(ir) || run < 3 * vex_lanes(ir))
        return false;
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->input_used[k - 1] && !tile2d_scalar(p, k, run) && p->stride[k][inner] != 1 &&
            p->stride[k][inner] != 0 && vex_in_place(w, k))
            return false;
    return true;
}

/* Whether plan operand K's last elements of a run short of a vector are
 * the float tree's last whole vector again for its stride (vex.c
 * strided_overlap), where they went through the stack slots: runs of
 * three vectors or more only take the rows form for it (b + f64(where(b
 * > 2.0, b, a)), f64 runs of 6, a stride 2 gathered once for every tile:
 * the rows form 4x slower, the last vector again half a row's work). */
static bool strided_overlap_tail(const lowering *w, int k)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int64_t stride = p->stride[k][p->loop_count - 1];
    return !vex_hoists_per_run(ir) && stride != 0 && stride != 1 &&
           !(stride == -1 && w->c->operands[k - 1].dtype == ir->nodes[0]->dtype);
}

/* Whether the rows form (rather than the gathers into 2-D tiles) reads
 * plan operand K, whose tail is the last whole vector again
 * (strided_overlap_tail).  Measured, cc / JIT same process, gathers
 * against the rows form: a * b - 1.0 over rows of 37-45, a f32 stride 2
 * 0.40 -> 0.45, f64 stride +-2 0.73 -> 0.50 and 0.75 -> 0.46, f64
 * stride -3 0.92 -> 0.57, f32 stride 3 1.39 -> 1.21; f64(a) * b - 1.0,
 * a i16 reversed 0.97 -> 1.36; sweep seed 1 case 27 (f32 runs of 63, a
 * stride 2, c reversed) 0.39 -> 0.55.  So f32 lanes with strides of +-2
 * and -1, and -1 of another dtype, over runs of 3 vectors or more; runs
 * past TILES2D_MAX_RUN (medium_strided_rows: the rows form or a call a
 * run) all. */
static bool strided_overlap_rows(const lowering *w, int k)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    int64_t run = p->extent[inner], stride = p->stride[k][inner];
    int64_t lanes = vex_lanes(ir);
    if (run > TILES2D_MAX_RUN)
        return true;
    return run >= 3 * lanes && (stride == -1 || ((stride == 2 || stride == -2) && lanes == 8));
}

static bool vex_rows_chosen(const lowering *w)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    int64_t run = p->extent[inner];
    int64_t lanes = ir->root_count == 1 ? vex_lanes(ir) : 0;
    if (ir->root_count != 1 || run < lanes)
        return false;
    /* a run's last elements short of a vector go through the masked tail
     * only when every leaf along the run is of the lanes' dtype, contiguous
     * or reversed; else through the stack slots, about 20 ns a row
     * (measured: 0.5 * a - b, a f32 (255, 1), b i8 (1, 14), 0.54 us with
     * the gathers against 3.4 us row by row) */
    bool tail = run % lanes == 0 || float_overlap_rows(w);
    for (int k = 1; !tail && k <= ir->input_count; k++)
        if (ir->input_used[k - 1] &&
            (!vex_vector_tail(ir, w->c->operands[k - 1].dtype, p->stride[k][inner]) ||
             (strided_overlap_tail(w, k) && !strided_overlap_rows(w, k))))
            return false;
    bool gathers = false;
    for (int k = 1; k <= ir->input_count; k++)
        gathers = gathers || (ir->input_used[k - 1] && !tile2d_contiguous(p, k, run) &&
                              !tile2d_scalar(p, k, run) && vex_in_place(w, k));
    return gathers;
}

/* The rows form over two loops: when the 2-D tiles' rows form reads
 * every operand in place (none gathered, the output written row by row)
 * and so calls once for every row of the loop outside the run, and no
 * value is computed in C between those calls (a local of that level), the
 * one call covers the loop outside that one too: its rows in groups, each
 * pointer moved on by its stride along that loop from group to group
 * (vex.c, vex_layout.group), instead of a tcc loop of calls, each paying
 * the function's prologue (registers saved, pointers, constants and held
 * leaves loaded) and the loop's own position updates.  Measured, cc / JIT
 * same process, a call per group against one call: sweep seed 41 case
 * 43, f64 rows of 33 from i16 operands in groups of 4 under 4815 trips,
 * see the commit. */
static bool row_groups_chosen(lowering *w)
{
    kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    if (vex_row_groups == 0 || !ir->tiles2d || ir->row_calls || ir->vex || ir->stream ||
        p->loop_count < 3 || p->stride[0][p->loop_count - 1] != 1 || !vex_rows_chosen(w))
        return false;
    int inner = p->loop_count - 1, outer = inner - 1, group = inner - 2;
    int64_t run = p->extent[inner];
    for (int id = 0; id < ir->node_count; id++)
        if (ir->value[id].declares && ir->value[id].level > group)
            return false;
    int64_t vex_strides[BCG_MAX_OPERANDS + 1] = {0};
    int64_t outer_strides[BCG_MAX_OPERANDS + 1] = {0};
    int64_t group_strides[BCG_MAX_OPERANDS + 1] = {0};
    for (int k = 1; k <= ir->input_count; k++) {
        bool scalar = tile2d_scalar(p, k, run);
        if (ir->input_used[k - 1] && !scalar && !tile2d_contiguous(p, k, run) &&
            !vex_in_place(w, k))
            return false; /* (gathered) */
        vex_strides[k] = scalar ? 0 : p->stride[k][inner];
        outer_strides[k] = scalar ? 0 : p->stride[k][outer];
        group_strides[k] = p->stride[k][group];
    }
    choose_vex_groups(w, vex_strides, outer_strides, p->stride[0][outer], p->extent[outer],
                      group_strides, p->stride[0][group]);
    if (!ir->vex || !ir->vex->rows) {
        ir->vex = NULL;
        return false;
    }
    ir->row_groups = p->extent[group];
    return true;
}

/* Whether the 2-D tiles' tree is a gathered operand copied whole (a
 * transposed or spaced input, transposed_copy: `a`, where(a <= a, a, a)
 * folded) whose gather writes the output's rows itself: the output
 * contiguous over the tile, plain stores, the operand's dtype the
 * output's, a tile of other rows every time.  The tile the cast kernel
 * copied out was a second pass over the elements (i32 (104, 436) strides
 * 2 and 208, cc / JIT 0.59 gathered then copied: see the commit). */
static bool gather_into_output(const lowering *w)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    const expr_node *root = ir->nodes[0];
    /* (not a bool: the cast kernel's copy makes every nonzero byte 1, as
     * the evaluator reads a bool, where the gather copies the bytes; nor
     * f16/bf16, whose copy the evaluator makes through a float) */
    if (root->op != OP_OPERAND || ir->root_count != 1 || ir->reduce || ir->vex || ir->stream ||
        ir->scatter || ir->row_calls || root->dtype != ir->out_dtype ||
        ir->out_dtype == BCG_BOOL || dtype_is_half(ir->out_dtype))
        return false;
    int k = root->operand + 1, outer = p->loop_count - 2;
    return ir->gathered[k] && w->c->operands[k - 1].dtype == ir->out_dtype &&
           p->stride[k][outer] != 0;
}

static void lower_tiles2d(lowering *w, int depth)
{
    kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1, outer = inner - 1;
    int64_t run = p->extent[inner], size = ir->tile_rows * run;
    bool declared[2][4] = {{false}};
    int64_t vex_strides[BCG_MAX_OPERANDS + 1] = {0};
    /* (calls per row read one value a row themselves) */
    bool rows = !ir->row_calls && vex_rows_chosen(w);
    if (rows) { /* the rows form: operands read in place row by row */
        int64_t outer_strides[BCG_MAX_OPERANDS + 1] = {0};
        for (int k = 1; k <= ir->input_count; k++) {
            bool in_place = vex_in_place(w, k);
            vex_strides[k] = tile2d_scalar(p, k, run) ? 0 : in_place ? p->stride[k][inner] : 1;
            outer_strides[k] = tile2d_scalar(p, k, run) ? 0 : in_place ? p->stride[k][outer] : run;
        }
        choose_vex(w, vex_strides, outer_strides,
                   p->stride[0][inner] == 1 ? p->stride[0][outer] : run);
        if (ir->vex && p->stride[0][inner] == 1)
            ir->scatter = false; /* written row by row in place */
    }
    if (!ir->vex) { /* one run of the tile (or of a row, calls per row): contiguous, or gathered */
        for (int k = 1; k <= ir->input_count; k++)
            vex_strides[k] = (ir->row_calls ? p->stride[k][inner] == 0 : tile2d_scalar(p, k, run))
                                 ? 0
                                 : 1;
        choose_vex(w, vex_strides, NULL, 0);
    }
    if (w->fused_only && !ir->vex) /* the function fused_over_tile2d built */
        build_fused_only(w, vex_strides);
    rows = ir->vex && ir->vex->rows;
    tile_declarations(w, depth);
    if (w->status != BCG_OK)
        return;
    bool any_gathered = false;
    for (int k = 1; k <= ir->input_count; k++) {
        ir->gathered[k] = ir->input_used[k - 1] && !tile2d_contiguous(p, k, run) &&
                          !tile2d_scalar(p, k, run) &&
                          (tile_reads(ir, k) > 0 || ir->nodes[0]->op == OP_OPERAND) &&
                          !(ir->row_calls && row_call_in_place(ir, k)) &&
                          !(rows && vex_in_place(w, k));
        if (ir->gathered[k])
            gather_declare(w, depth, k, declared);
        any_gathered = any_gathered || ir->gathered[k];
    }
    ir->gathered_out = gather_into_output(w);
    if (rows && !any_gathered && !ir->scatter) /* one call for every row */
        ir->tile_rows = p->extent[outer] * (ir->row_groups > 0 ? ir->row_groups : 1);
    if (ir->scatter)
        gather_declare(w, depth, 0, declared);
    for (int k = 1; k <= ir->input_count; k++) /* the same rows every tile */
        if (ir->gathered[k] && p->stride[k][outer] == 0 && !ir->row_calls)
            step_gather(w, depth, k, size, false, true);
    kir_step *step;
    if (ir->row_calls) { /* columns of the run, the tiles of rows inside, a call per row */
        /* (columns outermost: a strip's tiles read the next line of the
         * same rows of the transposed input, a stream per column that the
         * gather prefetches; see "2-D tiles of long runs") */
        if ((step = add_step(w, KIR_COLUMN_TILES, depth)))
            step->size = ir->tile_columns;
        if ((step = add_step(w, KIR_ROW_TILES, depth + 1))) {
            step->loop = outer;
            step->trips = p->extent[outer];
            step->size = ir->tile_rows;
        }
        for (int k = 1; k <= ir->input_count; k++)
            if (ir->gathered[k])
                step_gather(w, depth + 2, k, ir->tile_rows * ir->tile_columns, false, false);
        add_step(w, KIR_ROW_CALLS, depth + 2);
        tile_calls(w, depth + 3);
        step_end(w, depth + 2);
        step_end(w, depth + 1);
        step_end(w, depth);
        return;
    }
    if ((step = add_step(w, KIR_ROW_TILES, depth))) {
        step->loop = outer;
        step->trips = p->extent[outer] * (ir->row_groups > 0 ? ir->row_groups : 1);
        step->size = ir->tile_rows;
    }
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->gathered[k] && p->stride[k][outer] != 0)
            step_gather(w, depth + 1, k, size, false, false);
    tile_calls(w, depth + 1);
    if (ir->scatter && (step = add_step(w, KIR_SCATTER, depth + 1)))
        step->size = size;
    step_end(w, depth);
}

/* A 2-D tile's gather hoisted out of the loops around the tiles that do
 * not move its operand (stride 0: the operand is broadcast along them),
 * to just before the outermost of them: the tile it lays out is the same
 * on every trip, so it is gathered once for all of them.  Only a gather
 * of the rows of every tile (the same rows every tile, KIR_GATHER with
 * subtract) or of the one tile of a run of all the rows; the hoisted
 * gather reads from the operand's position there (unmoved inside) and
 * declares its microkernel again in its own scope.  Measured (b + a, a i8
 * (91, 1, 13, 15, 1), b (1, 49, 1, 15, 17) read with stride 3 along the
 * runs of 17: tiles of 15 rows, b gathered once a (i0, i1) instead of
 * once a tile, 13x fewer): cc / JIT 0.16-0.20 on the _rows call, 0.67-0.94
 * with the tiles and this; sweep seed 11, same process: a + maximum(
 * maximum(i8(b), 1), b) 1.75 -> 5.9-8.0, seed 5 b + f64(where(...)) 0.80
 * -> 0.96. */
static void hoist_tile_gathers(lowering *w)
{
    kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1, outer = inner - 1;
    /* (not a copy whose gather writes the output's rows, gathered_out: it
     * stores every trip's rows, and hoisted it wrote one tile once and the
     * output never: b copied from i8 (4, 4, 130) at strides [0, -4, 16],
     * the fuzzer's seed 104) */
    if (!ir->tiles2d || ir->row_calls || p->loop_count < 3 || ir->gathered_out)
        return;
    bool one_tile = ir->tile_rows == p->extent[outer];
    for (int g = 0; g < ir->step_count && w->status == BCG_OK; g++) {
        kir_step *gather = &ir->steps[g];
        if (gather->op != KIR_GATHER || gather->by_count || (!gather->subtract && !one_tile))
            continue;
        int k = gather->operand;
        /* the loop steps around it, innermost first: depth d's is the last
         * LOOP step before it at depth d */
        int at = -1, depth = gather->depth;
        for (int i = g - 1; i >= 0 && depth > 1; i--) {
            const kir_step *step = &ir->steps[i];
            if (step->depth >= depth)
                continue;
            depth = step->depth; /* the scope around: the one tile's, or a loop */
            if (step->op == KIR_ROW_TILES && !gather->subtract)
                continue;
            if (step->op != KIR_LOOP || p->stride[k][step->loop] != 0)
                break;
            at = i;
        }
        if (at < 0)
            continue;
        kir_step moved = *gather;
        moved.subtract = true; /* from the operand's position, the first rows */
        moved.depth = ir->steps[at].depth;
        if (!add_step(w, KIR_MK_DECLARE, 0) || !add_step(w, KIR_MK_DECLARE, 0))
            return;
        /* the N steps become N + 1: the gather leaves g, the declaration and
         * the gather go in at `at` (< g); those after g move up by one,
         * those from `at` to g by two */
        kir_step *steps = ir->steps;
        int n = ir->step_count - 2;
        memmove(&steps[g + 2], &steps[g + 1], sizeof *steps * (size_t)(n - g - 1));
        memmove(&steps[at + 2], &steps[at], sizeof *steps * (size_t)(g - at));
        kir_step declare = {.op = KIR_MK_DECLARE, .depth = moved.depth, .node = -1, .loop = -1,
                            .operand = k};
        steps[at] = declare;
        steps[at + 1] = moved;
        ir->step_count = n + 1;
        g++; /* (the step after the old gather is now at g + 2) */
    }
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
/* Whether a single operation over a leaf read with a stride other than 0
 * and 1 goes to the fused function (vex.c, which reads strides -1 and +-2
 * in place) rather than the _rows microkernel, whose strided reads are
 * scalar for negative strides.  Measured (harness, cc time / JIT time,
 * rows microkernel -> fused, 2000 x 1000 unless said): stride -1 i16 a - b
 * 0.70 -> 0.90, rows of 100 0.28 -> 1.10, u8 a > b 0.60 -> 0.79, f64 a * b
 * 0.53 -> 0.71, u16 a * b stride -2 0.11 -> 0.73; stride 2 i8 minimum(1, a)
 * 0.53 -> 1.30, u8 a + b 0.83 -> 1.00, i64 a + b 0.85 -> 1.12, i16 a + 3
 * 0.45 -> 0.50; reversed 1-byte products since vex.c byte_product keeps
 * 32 lanes (i8 a * b (2000, 1000) 0.63 -> 0.89-0.95, u8 (200, 1000) times
 * a row 0.63 -> 0.89; in 16-bit lanes they had gone 0.61 -> 0.50).
 * Losses, kept on the microkernels: f32 and i32 stride 2 (even or 5%
 * slower), products over stride 2 (i8, i16, f64: 0.80 -> 0.70). */
static bool strided_leaf_fused(const lowering *w)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    if (w->c->options.disable_vector_code || !vex_cpu_ok())
        return false;
    bool product = ir->nodes[0]->op == OP_MUL;
    bool any = false;
    for (int k = 1; k <= ir->input_count; k++) {
        int64_t stride = p->stride[k][p->loop_count - 1];
        if (!ir->input_used[k - 1] || stride == 0 || stride == 1)
            continue;
        if (stride < -2 || stride > 2) /* (not measured: the microkernels' rows) */
            return false;
        bcg_dtype dtype = w->c->operands[k - 1].dtype;
        size_t size = bcg_dtype_size(dtype);
        if (!vex_reads_stride(ir, dtype, stride))
            return false;
        if (stride > 0 && (product || size == 4))
            return false;
        any = true;
    }
    return any;
}

/* Whether the _rows microkernel lays the runs out as long contiguous calls
 * (runtime/microkernels.c, "_rows with a periodic operand"): its
 * conditions, an operand repeating every run (the same run each time, read
 * with any stride) beside a contiguous one, the output contiguous over the
 * runs.  Keep in step with the microkernel's (PERIODIC_MAX and
 * PERIODIC_MIN_ELEMENTS there). */
static bool rows_periodic(const kernel_ir *ir)
{
    const plan *p = ir->p;
    int inner = p->loop_count - 1, outer = inner - 1;
    int64_t run = p->extent[inner];
    if (run > 256 || run * p->extent[outer] < 4 * 1024 || p->stride[0][inner] != 1 ||
        p->stride[0][outer] != run)
        return false;
    int leaves[2];
    for (int j = 0; j < 2; j++) {
        int id = kir_child(ir, 0, j);
        if (ir->nodes[id]->op != OP_OPERAND)
            return false;
        leaves[j] = ir->nodes[id]->operand + 1;
    }
    for (int j = 0; j < 2; j++) {
        int k = leaves[j], other = leaves[1 - j];
        if (p->stride[k][outer] == 0 && p->stride[other][inner] == 1 &&
            p->stride[other][outer] == run)
            return true;
    }
    return false;
}

/* Whether the rows form's microkernel loses to the 2-D tiles (whose fused
 * function reads a tile's rows in place, or gathers them once a tile, or
 * takes the small flat form): the _rows microkernel makes one call per run
 * and gathers every run that is not contiguous or one value on its own
 * (GATHER, a call a run), so that an operand read with another stride
 * along runs shorter than ROWS_STRIDED_MAX_RUN, and any runs shorter than
 * microkernel_run, cost it tens of ns a run where the tiles take one call
 * for up to a thousand elements.  Not when the microkernel lays the runs
 * out as long calls (rows_periodic), and only with the fused function.
 * Measured, sweep seeds 1-12, every case taking the rows form (87), same
 * process, rows -> tiles: runs of 2 to 15, 30 cases, 1.7-170x faster
 * (where(maximum(a, a) > b, ...) u8 runs of 4, b reversed: 14.4 -> 0.085
 * us; a + b u8 runs of 3, a strided: 36.9 -> 0.40 ms); strided runs of
 * 16 to 90, 12 cases, 1.02-4.7x (b + a, i8 runs of 17, b stride 3,
 * 12.7 -> 8.2 ms); a periodic strided operand 0.30x (kept on the rows
 * form); strided runs of 143 to 846 went either way (0.78-2.6x: kept). */
#define ROWS_STRIDED_MAX_RUN 128

/* Whether an operand is read with a stride other than 0 and 1 along the
 * run: short runs of such that the 2-D tiles refuse (a tile under
 * TILES2D_MIN_TILE elements) take the loop nest rather than the _rows
 * call, whose gathers a run cost more than tcc's loads (measured, same
 * process: b * a, i16 (22, 28, 3, 3) runs of 3 by 3 rows, a stride 2, b
 * 3: 2.9x faster; b - a, f64 runs of 2, a reversed: 5.3x; b * a, f64 runs
 * of 4, a stride 3: 1.75x). */
static bool strided_short_run(const kernel_ir *ir)
{
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->input_used[k - 1] && p->stride[k][inner] != 0 && p->stride[k][inner] != 1)
            return true;
    return false;
}

static bool rows_refused(const compile *c, const kernel_ir *ir)
{
    const plan *p = ir->p;
    if (c->options.disable_vector_code || !vex_cpu_ok() || p->loop_count < 2 ||
        ir->root_count != 1 || rows_periodic(ir))
        return false;
    int inner = p->loop_count - 1;
    int64_t run = p->extent[inner];
    if (run < c->options.microkernel_run)
        return true;
    for (int k = 1; run < ROWS_STRIDED_MAX_RUN && k <= ir->input_count; k++) {
        int64_t along = p->stride[k][inner], across = p->stride[k][inner - 1];
        int64_t size = (int64_t)bcg_dtype_size(c->operands[k - 1].dtype);
        /* (not an operand far apart both along and across the runs, whose
         * gather finds no two elements near each other either way: b + a,
         * f32 (112, 46, 45), b strides 112 and 5040 (20 KB), cc / JIT 0.65
         * -> 0.59; a + 7, u8 runs of 16 at stride 1155, rows 105 bytes
         * apart: 0.175 -> 0.68, sweep seed 5) */
        if (ir->input_used[k - 1] && along != 0 && along != 1 &&
            ((along >= -MAX_TILE_STRIDE && along <= MAX_TILE_STRIDE) ||
             (across >= -1024 / size && across <= 1024 / size)))
            return true;
    }
    return false;
}

static bool rows_form_fits(const kernel_ir *ir)
{
    const plan *p = ir->p;
    if (!ir->tiled || ir->tiles2d || p->loop_count < 2 || ir->block > 0 ||
        p->extent[p->loop_count - 1] >= TILE_ELEMENTS)
        return false;
    tile_shape kind;
    const char *family = kir_tile_family(ir, 0, &kind);
    if (!family || (kind != TILE_BINARY && kind != TILE_COMPARE) || !root_reads_leaves(ir))
        return false;
    char name[48];
    kir_microkernel_name(ir, 0, KIR_ROWS, name, sizeof name);
    return microkernel_exists(name);
}

/* The rows form, unless the fused function reads a strided leaf faster. */
static bool rows_chosen(const lowering *w)
{
    return rows_form_fits(w->ir) && !strided_leaf_fused(w);
}

/* Whether a kernel whose innermost run is too short for tiles (a run of 3:
 * an image times a per-channel gain) still takes the rows form: one
 * binary operation or comparison on operands and literals, the output
 * contiguous along the run, and enough elements that one call beats
 * tcc's straight-line code.  The _rows microkernel then writes every run,
 * as long contiguous calls when one operand repeats with the run's period
 * (runtime/microkernels.c). */
#define SHORT_ROWS_MIN_ELEMENTS 4096

/* Whether short runs (a vector or more) read backwards go to the 2-D
 * tiles, where the fused function's rows form reads them in place a
 * vector at a time (tiles2d_chosen, vex_rows_chosen), rather than to the
 * _rows microkernel, whose reads of a negative stride are scalar:
 * where(3 > a, 3, a), i32 (7, 16, 4, 5, 8) reversed along runs of 8,
 * same process: 14.9 -> 0.83 us, cc / JIT 0.056 -> 0.99 (sweep seed 7's
 * worst case). */
static bool reversed_short_runs(const lowering *w)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    if (w->c->options.disable_vector_code || !vex_cpu_ok() || ir->root_count != 1 ||
        p->extent[inner] < vex_lanes(ir))
        return false;
    bool any = false;
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->input_used[k - 1]) {
            int64_t stride = p->stride[k][inner];
            if (stride == -1)
                any = true;
            else if (stride != 0 && stride != 1 &&
                     !vex_reads_stride(ir, w->c->operands[k - 1].dtype, stride))
                return false;
        }
    return any;
}

/* Whether the flat form (gen/vex.c) takes short runs that the _rows
 * microkernel would write a run at a time: it is fast only where an
 * operand (or literal) repeats with the run's period over a contiguous
 * other one and a call holds PERIODIC_MIN_ELEMENTS (runtime/microkernels.c:
 * long contiguous calls); elsewhere its runs are scalar loops, with a
 * branch an element for minimum and maximum.  minimum(a, 1e-5), f32
 * (324, 175, 6, 2) with a's pairs reversed (sweep seed 43): 8.1 ms
 * through _rows, 0.01 of the gcc loop. */
#define ROWS_PERIODIC_MIN_ELEMENTS 4096

static bool flat_beats_rows(const lowering *w)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    if (w->c->options.disable_vector_code || !vex_cpu_ok() || !vex_flat_supported(ir))
        return false;
    int inner = p->loop_count - 1, row = inner - 1;
    int64_t n = p->extent[inner];
    if (p->stride[0][row] != n || p->extent[row] * n < ROWS_PERIODIC_MIN_ELEMENTS)
        return true;
    int repeats = 0, contiguous = 0;
    for (int k = 0; k < 2; k++) {
        int id = kir_child(ir, 0, k);
        const expr_node *x = ir->nodes[id];
        int64_t s = 0, r = 0;
        if (x->op == OP_OPERAND) {
            s = p->stride[x->operand + 1][inner];
            r = p->stride[x->operand + 1][row];
        }
        repeats += r == 0;
        contiguous += s == 1 && r == n;
    }
    return !(repeats && contiguous);
}

static bool short_rows_chosen(const lowering *w)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    if (!c->microkernels || c->options.microkernel_run <= 0 || ir->unrolled || p->empty ||
        p->loop_count < 2 || p->elements < SHORT_ROWS_MIN_ELEMENTS)
        return false;
    int inner = p->loop_count - 1;
    if (p->extent[inner] >= c->options.microkernel_run || p->stride[0][inner] != 1 ||
        reversed_short_runs(w))
        return false;
    tile_shape kind;
    const char *family = kir_tile_family(ir, 0, &kind);
    if (!family || (kind != TILE_BINARY && kind != TILE_COMPARE) || !root_reads_leaves(ir))
        return false;
    int operations = 0;
    if (!tile_supported(ir, 0, ir->out_dtype, &operations))
        return false;
    if (flat_beats_rows(w))
        return false;
    char name[48];
    kir_microkernel_name(ir, 0, KIR_ROWS, name, sizeof name);
    return microkernel_exists(name);
}

static void lower_rows(lowering *w, int depth)
{
    const kernel_ir *ir = w->ir;
    step_node(w, KIR_MK_DECLARE, depth, 0, KIR_ROWS);
    for (int k = 0; k < 2; k++) {
        int id = kir_child(ir, 0, k);
        if (ir->nodes[id]->op == OP_LITERAL)
            step_node(w, KIR_TILE_LITERAL, depth, id, KIR_PLAIN);
    }
    step_node(w, KIR_ROWS_CALL, depth, 0, ir->stream ? KIR_STREAM : KIR_PLAIN);
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

static bool blocking_chosen(const lowering *w)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    if (c->aot || ir->unrolled || ir->tiled || ir->rows || p->empty || p->loop_count < 2)
        return false;
    int inner = p->loop_count - 1, outer = inner - 1;
    if (p->extent[inner] < 2 * BLOCK_INNER || p->extent[outer] < 2 * BLOCK_INNER)
        return false;
    for (int i = 0; i < ir->input_count; i++) {
        if (!ir->input_used[i])
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

/* The loops LEVEL (outer) and LEVEL + 1 (innermost) in blocks, at DEPTH.
 * Every position is back where it started when the blocks are done. */
static void lower_blocked(lowering *w, int level, int depth)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = level + 1;
    for (int side = 0; side < 2; side++) {
        kir_step *step = add_step(w, KIR_BLOCK_LOOP, depth + side);
        if (step) {
            step->loop = level + side;
            step->trips = p->extent[level + side];
            step->size = side ? ir->block_inner : ir->block;
        }
    }
    depth += 2;
    /* to the block's first element */
    for (int k = 0; k <= ir->input_count; k++)
        if (ir->has_position[k]) {
            step_move(w, depth, k, false, level, false, p->stride[k][level]);
            step_move(w, depth, k, false, inner, false, p->stride[k][inner]);
        }
    kir_step *step = add_step(w, KIR_COUNT_LOOP, depth);
    if (step)
        step->loop = level;
    step_locals(w, inner, depth + 1);
    if ((step = add_step(w, KIR_COUNT_LOOP, depth + 1)))
        step->loop = inner;
    int64_t zero[BCG_MAX_OPERANDS + 1] = {0};
    step_store(w, depth + 2, zero);
    for (int k = 0; k <= ir->input_count; k++)
        if (ir->has_position[k])
            step_advance(w, depth + 2, k, p->stride[k][inner]);
    step_end(w, depth + 1);
    for (int k = 0; k <= ir->input_count; k++)
        if (ir->has_position[k]) {
            step_advance(w, depth + 1, k, p->stride[k][level]);
            step_move(w, depth + 1, k, true, inner, true, p->stride[k][inner]);
        }
    step_end(w, depth);
    /* back to where the blocks started: the rows walked, then the corner */
    for (int k = 0; k <= ir->input_count; k++)
        if (ir->has_position[k]) {
            step_move(w, depth, k, true, level, true, p->stride[k][level]);
            step_move(w, depth, k, true, level, false, p->stride[k][level]);
            step_move(w, depth, k, true, inner, false, p->stride[k][inner]);
        }
    step_end(w, depth - 1);
    step_end(w, depth - 2);
}

/* ---- the loop nest ----------------------------------------------------------------- */

/* How far loop level LEVEL (and everything inside it) moves operand K's
 * position over one full run. */
static int64_t run_advance(const kernel_ir *ir, int k, int level)
{
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    /* spans of real memory: they fit in int64; unsigned keeps it defined */
    if (((ir->block > 0 || ir->rows || ir->tiles2d) && level == inner - 1) ||
        (ir->row_groups > 0 && level == inner - 2))
        return 0; /* lower_blocked puts every position back; rows calls and 2-D tiles
                     move none (nor the rows form over two loops) */
    if (level == inner)
        return ir->group_loop ? (int64_t)((uint64_t)ir->groups * (uint64_t)ir->factor *
                                          (uint64_t)p->stride[k][inner])
                              : 0;
    return (int64_t)((uint64_t)p->extent[level] * (uint64_t)p->stride[k][level]);
}

/* The store of element ELEMENT of the innermost run. */
static void store_at(lowering *w, int depth, int64_t element)
{
    const kernel_ir *ir = w->ir;
    int inner = ir->p->loop_count - 1;
    int64_t offsets[BCG_MAX_OPERANDS + 1];
    for (int k = 0; k <= ir->input_count; k++)
        offsets[k] = (int64_t)((uint64_t)element * (uint64_t)ir->p->stride[k][inner]);
    step_store(w, depth, offsets);
}

/* Whether the group loop's stores go two at a time (KIR_STORE_PAIR): in
 * the AOT form, a root that is add_sat or sub_sat of two operands, all
 * three i16 or u16 and contiguous in the innermost loop, and an even
 * unroll factor.  On Arm cores with SIMD32 (Cortex-M4, M7, M33 ...) a pair
 * is one 32-bit load per operand, one qadd16 and one store (CMSIS-DSP's
 * arm_add_q15 does the same); elsewhere the pair helper is two calls of
 * the element helper. */
static bool stores_pairs(const lowering *w)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    const expr_node *root = ir->nodes[0];
    if (!w->c->aot || ir->reduce || ir->fill || ir->factor % 2 != 0 ||
        (root->op != OP_ADD_SAT && root->op != OP_SUB_SAT) ||
        (root->dtype != BCG_I16 && root->dtype != BCG_U16) || ir->out_dtype != root->dtype ||
        p->stride[0][inner] != 1)
        return false;
    for (int k = 0; k < 2; k++) {
        int child = kir_child(ir, 0, k);
        const expr_node *n = ir->nodes[child];
        if (n->op != OP_OPERAND || n->dtype != root->dtype || ir->value[child].local ||
            p->stride[n->operand + 1][inner] != 1)
            return false;
    }
    return true;
}

static void lower_innermost(lowering *w, int depth)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    if (ir->tiled) {
        lower_tiles(w, depth);
    } else if (ir->group_loop) {
        step_loop(w, depth, inner, ir->groups);
        bool pairs = stores_pairs(w);
        for (int64_t j = 0; j < ir->factor; j += pairs ? 2 : 1) {
            if (pairs) {
                int64_t offsets[BCG_MAX_OPERANDS + 1];
                for (int k = 0; k <= ir->input_count; k++)
                    offsets[k] = j * p->stride[k][inner];
                step_store_op(w, depth + 1, offsets, KIR_STORE_PAIR);
            } else {
                store_at(w, depth + 1, j);
            }
        }
        for (int k = 0; k <= ir->input_count; k++)
            if (ir->has_position[k])
                step_advance(w, depth + 1, k,
                             (int64_t)((uint64_t)ir->factor * (uint64_t)p->stride[k][inner]));
        step_end(w, depth);
        for (int64_t j = 0; j < ir->rest; j++)
            store_at(w, depth, j);
    } else {
        for (int64_t j = 0; j < p->extent[inner]; j++)
            store_at(w, depth, j);
    }
}

static void lower_loop(lowering *w, int level, int depth)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    if (level == p->loop_count - 1) {
        lower_innermost(w, depth);
        return;
    }
    if (ir->block > 0 && level == p->loop_count - 2) {
        lower_blocked(w, level, depth);
        return;
    }
    if (ir->rows && level == p->loop_count - 2) {
        lower_rows(w, depth);
        return;
    }
    if (ir->tiles2d && level == p->loop_count - (ir->row_groups > 0 ? 3 : 2)) {
        lower_tiles2d(w, depth);
        return;
    }
    step_loop(w, depth, level, p->extent[level]);
    step_locals(w, level + 1, depth + 1);
    lower_loop(w, level + 1, depth + 1);
    for (int k = 0; k <= ir->input_count; k++)
        if (ir->has_position[k])
            step_advance(w, depth + 1, k,
                         (int64_t)((uint64_t)p->stride[k][level] -
                                   (uint64_t)run_advance(ir, k, level + 1)));
    step_end(w, depth);
}

static void lower_loop_nest(lowering *w)
{
    kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    ir->groups = p->extent[inner] / ir->factor;
    ir->rest = p->extent[inner] % ir->factor;
    /* tiles and blocks address the innermost run themselves */
    ir->group_loop = ir->groups >= 2 && !ir->tiled && ir->block == 0 && !ir->rows;
    /* a position is needed when a runtime loop moves the operand (a rows
     * call and 2-D tiles do the two innermost loops themselves) */
    ir->row_groups = 0;
    if (w->status == BCG_OK)
        row_groups_chosen(w);
    int moving = ir->row_groups > 0 ? inner - 2 : ir->rows || ir->tiles2d ? inner - 1 : inner;
    for (int k = 0; k <= ir->input_count; k++) {
        ir->has_position[k] = false;
        if (k > 0 && !ir->input_used[k - 1])
            continue;
        for (int l = 0; l < p->loop_count; l++)
            if (p->stride[k][l] != 0 && (l < moving || ir->group_loop || ir->block > 0))
                ir->has_position[k] = true;
    }
    step_locals(w, 0, 1);
    lower_loop(w, 0, 1);
}

/* One store per element, every offset a literal. */
static void lower_unrolled(lowering *w)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int64_t index[BCG_MAX_RANK] = {0};
    step_locals(w, 0, 1);
    for (int64_t element = 0; element < p->elements && w->status == BCG_OK; element++) {
        int64_t offsets[BCG_MAX_OPERANDS + 1];
        for (int k = 0; k <= ir->input_count; k++) {
            uint64_t offset = 0;
            for (int l = 0; l < p->loop_count; l++)
                offset += (uint64_t)index[l] * (uint64_t)p->stride[k][l];
            offsets[k] = (int64_t)offset;
        }
        step_store(w, 1, offsets);
        for (int l = p->loop_count - 1; l >= 0; l--) {
            if (++index[l] < p->extent[l])
                break;
            index[l] = 0;
        }
    }
}

/* ---- reductions ------------------------------------------------------------------
 *
 * The plan orders loops by the output's stride, and a reduced dimension's
 * is 0, so the reduced loops are the innermost (among them, the inputs'
 * layout decides).  Every loop is a real loop here: the accumulator is
 * set before the first reduced loop, takes one value per element inside
 * the innermost, and is finished and stored after the first reduced loop
 * closes; the output's position does not move inside.  Each output element
 * is reduced by one thread, in one order, so the result does not depend on
 * the thread count. */

/* Whether a laned float sum (reduce_lanes) takes its innermost run in
 * tiles: the root's values computed by microkernels into a tile (or read
 * from the operand that is the root), then added into the partial sums by
 * bcg_mk_sum16_T, a tile (a multiple of 16 elements) at a time, so every
 * element goes to the lane the scalar code gives it. */
static bool reduce_tree_tiles(const kernel_ir *ir)
{
    const expr_node *root = ir->nodes[0];
    int operations = 0;
    if (root->dtype != BCG_F32 && root->dtype != BCG_F64)
        return false;
    if (root->op == OP_OPERAND)
        return true;
    return root->op != OP_LITERAL && tile_supported(ir, 0, root->dtype, &operations);
}

static bool reduce_tiles_chosen(const lowering *w)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    if (!c->microkernels || c->options.microkernel_run <= 0 || ir->lanes <= 1 || ir->fill ||
        p->empty || p->loop_count == 0 || p->extent[p->loop_count - 1] < REDUCE_LANES)
        return false;
    int operations = 0;
    return reduce_tree_tiles(ir) && other_roots_tile(ir, p->loop_count - 1, &operations, NULL);
}

/* The first reduced loop: the plan orders loops by the output's stride,
 * which is 0 along the reduced ones, so they are the innermost. */
static int reduce_from_of(const kernel_ir *ir)
{
    const plan *p = ir->p;
    int from = p->loop_count;
    while (from > 0 && p->stride[0][from - 1] == 0 && !ir->fill)
        from--;
    return from;
}

/* Whether a float sum over outer-strided elements (one accumulator each,
 * reduce_lanes 1: the innermost reduced loop reads with a long stride, as
 * a sum over the rows of a C-contiguous matrix does) takes a block of
 * accumulators instead: the kept loop just outside the reduced ones runs
 * in tiles, each tile keeps one accumulator per element, and the reduced
 * loops run inside it, adding a tile of values (computed by microkernels
 * along the kept loop, where the inputs are contiguous) with
 * bcg_mk_accadd_T.  Each output element still adds its values in the
 * plan's order, one at a time, so the result is the scalar code's. */
#define MAX_BLOCK_REDUCE_STRIDE 1
/* Tiles of a block reduction: long enough that each step of the reduced
 * loop reads whole rows of a (4096, 4096) matrix in order (measured: 1024
 * took 4x as long, a new 4 KB page per row restarting the prefetcher),
 * while the accumulators (8 or 16 bytes each) stay in the L2 cache. */
#define BLOCK_REDUCE_TILE 4096
static bool block_reduce_chosen(const lowering *w, int from)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    if (!c->microkernels || c->options.microkernel_run <= 0 || ir->fill || p->empty ||
        from < 1 || from >= p->loop_count || ir->lanes > 1)
        return false;
    if (ir->reduce != BCG_REDUCE_SUM && ir->reduce != BCG_REDUCE_MEAN)
        return false;
    int kept = from - 1;
    if (p->extent[kept] < c->options.microkernel_run)
        return false;
    for (int k = 1; k < p->operand_count; k++)
        if (ir->input_used[k - 1] && llabs(p->stride[k][kept]) > MAX_BLOCK_REDUCE_STRIDE)
            return false;
    int operations = 0;
    return reduce_tree_tiles(ir) && other_roots_tile(ir, kept, &operations, NULL);
}

/* Whether a block reduction takes its whole innermost reduced loop in one
 * call (kernel_ir.reduce_rows): the root is an operand
 * (bcg_mk_accadd_rows_T), or a binary operation of two operands of its own
 * dtype whose value the call computes as it adds it
 * (bcg_mk_OP_accadd_rows_T: no tile between the operation and the
 * accumulators, see runtime/microkernels.c). */
/* Whether a laned f32 sum of an operand along the contiguous innermost loop
 * (the sum over the last axis), the only reduced loop, takes the block form
 * with one bcg_mk_sum16_rows_f32 call per tile of the kept loop outside it:
 * the call sets up each run's 16 partial sums, adds the run as
 * bcg_mk_sum16_f32 does and combines them as bcg_lanes_sum does, so the
 * order is the laned tiles' (kernel_ir.lane_rows).  Why: per run, the
 * kernel's own code (tcc's) zeroed the sums, called per tile and combined
 * them; on f32[4096,4096] that took 0.2-0.4 ms of 2.3. */
#define LANE_ROWS_TILE 256
static bool lane_rows_chosen(const lowering *w)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    return c->microkernels && c->options.microkernel_run > 0 && !ir->fill && !p->empty &&
           (ir->reduce == BCG_REDUCE_SUM || ir->reduce == BCG_REDUCE_MEAN) &&
           ir->lanes == REDUCE_LANES && ir->root_count == 1 && ir->nodes[0]->op == OP_OPERAND &&
           ir->nodes[0]->dtype == BCG_F32 && ir->reduce_from == inner && inner >= 1 &&
           p->extent[inner] >= REDUCE_LANES && microkernel_exists("bcg_mk_sum16_rows_f32");
}

static bool accadd_rows_chosen(const kernel_ir *ir)
{
    const expr_node *root = ir->nodes[0];
    if (ir->root_count != 1)
        return false;
    if (root->op == OP_OPERAND)
        return true;
    tile_shape kind;
    if (!kir_tile_family(ir, 0, &kind) || kind != TILE_BINARY || root->arg_count != 2)
        return false;
    for (int k = 0; k < 2; k++)
        if (ir->nodes[kir_child(ir, 0, k)]->op != OP_OPERAND || kir_tile_converts(ir, 0, k))
            return false;
    char name[64];
    kir_accadd_rows_name(ir, name, sizeof name);
    return microkernel_exists(name);
}

static void step_accumulators(lowering *w, kir_op op, int depth, const int64_t *zero);

/* The innermost (reduced, contiguous) loop as tiles: the tree's calls as
 * lower_tiles makes them (the root's into tile0), then the partial sums. */
static void lower_reduce_tiles(lowering *w, int depth)
{
    const kernel_ir *ir = w->ir;
    tile_declarations(w, depth);
    tile_loop(w, depth, ir->p->extent[ir->p->loop_count - 1], TILE_ELEMENTS);
    tile_calls(w, depth + 1);
    tile_stores(w, depth + 1);
    step_accumulators(w, KIR_ACC_TILE, depth + 1, NULL);
    step_end(w, depth);
}

static void lower_reduce_loop(lowering *w, int level, int depth);

/* The kept loop LEVEL as tiles of accumulators, the reduced loops inside
 * (see block_reduce_chosen); the positions the reduced loops moved go
 * back before the next tile. */
static void lower_block_reduce(lowering *w, int level, int depth)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int from = ir->reduce_from;
    if (!ir->reduce_rows) /* (a _rows call declares itself) */
        tile_declarations(w, depth);
    tile_loop(w, depth, p->extent[level], ir->lane_rows ? LANE_ROWS_TILE : BLOCK_REDUCE_TILE);
    lower_reduce_loop(w, level + 1, depth + 1);
    bool moved = !(ir->reduce_rows && from == p->loop_count - 1);
    for (int k = 0; moved && k <= ir->input_count; k++)
        if (ir->has_position[k])
            step_advance(w, depth + 1, k,
                         (int64_t)(0 - (uint64_t)p->extent[from] * (uint64_t)p->stride[k][from]));
    step_end(w, depth);
}

/* Step OP of every reduction (root 0's, then the other reducing roots',
 * see kernel_ir.root_reduce) at DEPTH; offsets ZERO for updates. */
static void step_accumulators(lowering *w, kir_op op, int depth, const int64_t *zero)
{
    const kernel_ir *ir = w->ir;
    for (int j = 0; j < ir->root_count; j++) {
        if (j > 0 && !(ir->root_reduce && ir->root_reduce[j].reduce))
            continue;
        kir_step *step = add_step(w, op, depth);
        if (!step)
            return;
        step->node = ir->root_id[j];
        step->operand = ir->root_operand[j];
        step->offsets = zero;
    }
}

static void lower_reduce_loop(lowering *w, int level, int depth)
{
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    bool blocked = ir->tiled && ir->tile_loop < inner;
    if (level == ir->reduce_from)
        step_accumulators(w, KIR_ACC_INIT, depth, NULL);
    if (ir->reduce_rows && level == inner) { /* the whole loop in one call */
        kir_step *step = add_step(w, KIR_ACC_TILE, depth);
        if (step)
            step->variant = KIR_ROWS;
    } else if (ir->tiled && level == ir->tile_loop) {
        if (blocked)
            lower_block_reduce(w, level, depth);
        else
            lower_reduce_tiles(w, depth);
    } else if (level == p->loop_count) {
        if (blocked) {
            tile_calls(w, depth);
            tile_stores(w, depth);
            step_accumulators(w, KIR_ACC_TILE, depth, NULL);
        } else if (!ir->fill) {
            bool block = step_element_locals(w, depth, NULL);
            int64_t *zero = arena_alloc(w->c->arena, sizeof *zero * (size_t)(ir->input_count + 1));
            if (!zero) {
                fail_nomem(w);
                return;
            }
            memset(zero, 0, sizeof *zero * (size_t)(ir->input_count + 1));
            step_accumulators(w, KIR_ACC_UPDATE, depth + block, zero);
            if (w->status == BCG_OK)
                step_other_stores(w, depth + block, zero);
            if (block)
                step_end(w, depth);
        }
    } else {
        step_loop(w, depth, level, p->extent[level]);
        if (!blocked || level < ir->tile_loop)
            step_locals(w, level + 1, depth + 1);
        lower_reduce_loop(w, level + 1, depth + 1);
        /* the loop inside moved the position a whole run (tiles move none) */
        bool moved = level + 1 < p->loop_count && !(ir->tiled && level + 1 == ir->tile_loop) &&
                     !(ir->reduce_rows && level + 1 == inner);
        for (int k = 0; k <= ir->input_count; k++)
            if (ir->has_position[k]) {
                uint64_t run = moved ? (uint64_t)p->extent[level + 1] *
                                           (uint64_t)p->stride[k][level + 1]
                                     : 0;
                step_advance(w, depth + 1, k, (int64_t)((uint64_t)p->stride[k][level] - run));
            }
        step_end(w, depth);
    }
    if (level == ir->reduce_from)
        step_accumulators(w, KIR_ACC_STORE, depth, NULL);
}

static void lower_reduction(lowering *w)
{
    kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    for (int k = 0; k <= ir->input_count; k++) {
        ir->has_position[k] = false;
        if (k > 0 && (ir->fill || !ir->input_used[k - 1]))
            continue;
        for (int l = 0; l < p->loop_count; l++)
            if (p->stride[k][l] != 0 && !(ir->tiled && l == ir->tile_loop))
                ir->has_position[k] = true;
    }
    if (!ir->fill)
        step_locals(w, 0, 1);
    lower_reduce_loop(w, 0, 1);
}

/* ---- small kernels -------------------------------------------------------------
 *
 * An output of at most VEX_SMALL_MAX elements is written as one function of
 * straight-line AVX2 code (vex_build_small) when vex.c can write its tree:
 * the steps written so far (unrolled stores, loops or tiles) give way to
 * one KIR_SMALL_CALL, and jit.c makes that code the kernel's function, so
 * a call runs no tcc code at all.  Measured (bcg_run in one process,
 * against unroll_limit 0's loops and tiles): rows of 7, 16 and 100, f32
 * and f64, a+b, a*b+c and where(a>c, sqrt(a)*b, a-c), 63 to 1022 elements:
 * 1.4x to 5.9x faster.  With the limit raised, 2000 to 4096 elements still
 * gained 1.3x to 6.9x in a hot loop (but f64 rows of 7 at 2044: 0.81x),
 * at 10 to 30 KB of code a kernel, which a caller running several kernels
 * pays in instruction cache and the compile in time: VEX_SMALL_MAX stays
 * at issue 11's small outputs, 1024. */
/* Whether IR's loop nest ends in tcc's per-element code (the inner
 * unrolled form: no tiles, rows, blocks or groups) where the flat form
 * could take it: short runs whose output is contiguous over the loops
 * from one on (any number of loops before it), in plans the 2-D tiles
 * refused (four loops or more, a tree of operations without
 * microkernels); transcendentals too, only here (vex.c, the flat form).  Measured (the harness, cc
 * time / JIT time, same process): (b) * (where(a > c, a, c)) - 5, i16
 * runs of 3 under loops of 5 and 89, 0.12 -> 6.3; sqrt(f32(abs(maximum(a,
 * where(u8(c) > 3, b, u8(c)))))), f32 runs of 3 under 3 under 12, 1728
 * elements, 0.15 -> 3.7. */
static bool flat_instead_of_elements(const kernel_ir *ir)
{
    return !ir->tiled && !ir->rows && !ir->unrolled && ir->block == 0 && !ir->group_loop &&
           vex_flat_supported(ir);
}

/* The flat form (vex.c, "the flat form"): the same straight-line code for
 * a body of rows of short runs, in a loop, where the 2-D tiles would
 * gather a broadcast operand into tiles of copies.  Chosen for 2-D tiles
 * of short runs (not calls per row) whose output rows are contiguous,
 * runs of up to 40 (VEX_FLAT_MAX_RUN; 15 before).  Measured (cc / JIT
 * same process, alternating with main's 2-D tiles, gathers or the rows
 * form): ((b) * (0)) * (b) + a, f64 rows of 35, a reversed, b stride 3,
 * both gathered (sweep seed 1 case 279) 0.55 -> 0.82; minimum(a, b) + 1,
 * f32 rows of 33, a stride 2 (the rows form in place), b one value a
 * row, 0.44 -> 1.57; a + b, u8 rows of 17, b reversed, 7.6 -> 16;
 * where(a > 0, a, b), f32 rows of 21 under 9, b reversed, 2.1 -> 4.0; a
 * * b + c, f32 rows of 23, b one value a row, c the same row every row,
 * 3.1 -> 3.9; i32 rows of 16, a reversed, b transposed, 1.85 -> 2.13;
 * even: f64 rows of 19 (a * b + c as above), rows of 28 under 5 ((a + b)
 * * c, c stride 2); slower: a - b, f64 rows of 37, a reversed (the rows
 * form's reversed loads, the flat form's vectors across rows two
 * windows), 0.95 -> 0.90.  And in place of the rows form (one operation,
 * its _rows microkernel called once for the runs of an outer trip):
 * a * b, i16 rows of 19 under 3, b one value a row, 0.67 -> 5.1; a + b,
 * f32 rows of 24 under 2, 0.68 -> 2.1; a - b, u8 rows of 33, 2.0 -> 5.2;
 * a + b, f32 rows of 20, b transposed, 0.75 -> 1.65; a * b, i32 rows of
 * 17 reversed, 1.35 -> 2.05; slower: a < b, f64 rows of 30, b stride 2,
 * 2.37 -> 2.26. */
/* Whether IR's 2-D tiles call the fused function on tiles whose every
 * gathered operand is gathered once for the whole call (hoisted out of
 * every loop: hoist_tile_gathers), so the function reads each operand
 * contiguously or as one value.  The flat form instead reads such an
 * operand in place every body: rows of 6 reversed cost two masked loads,
 * two vpermps and a blend a vector, against one load from the tile. */
static bool tiles_gathered_once(const kernel_ir *ir)
{
    if (!ir->tiles2d || !ir->vex || ir->step_count == 0)
        return false;
    int top = ir->steps[0].depth, gathers = 0;
    for (int i = 1; i < ir->step_count; i++)
        top = ir->steps[i].depth < top ? ir->steps[i].depth : top;
    for (int i = 0; i < ir->step_count; i++)
        if (ir->steps[i].op == KIR_GATHER) {
            if (ir->steps[i].depth != top)
                return false;
            gathers++;
        }
    return gathers > 0;
}

/* Whether the flat form takes IR's rows form over runs of more than
 * VEX_FLAT_MAX_RUN (up to VEX_FLAT_MAX_ROWS_RUN, vex_flat_max_run): runs
 * that are not a whole number of vectors, every operand contiguous or one
 * value along them, an operation that is not a division.  The _rows
 * microkernel's loop per run, with gcc's remainder after the whole
 * vectors, lost to the cc backend's loop of constant length there;
 * measured, cc / JIT same process, main -> flat: a + b, f32 rows of 82,
 * b one value a row, 0.73 -> 0.91; a - b, f32 rows of 45, 0.65 -> 1.13;
 * i32 rows of 82 0.79 -> 1.03; i16 0.54 -> 1.16; minimum(a, b) i32 rows
 * of 99 0.72 -> 0.93; a == b i32 rows of 57 0.53 -> 0.93; maximum(a, b)
 * f32 rows of 100 under 16, 0.76 -> 1.18; even: f64 rows of 67, 82 and
 * 100, u8 a * b rows of 150.  Not runs of whole vectors (a * b, f32 rows
 * of 128, 0.99 -> 0.80; of 96 0.92 -> 0.86), an operand whose rows do
 * not follow each other or repeat (a + b, f32 rows of 82, a's rows in
 * reverse order: 1.02-1.12 -> 0.82-0.89; a reversed or strided run) nor
 * a division (a / b, f32 rows of 82: 0.90 -> 0.69). */
static bool long_rows_flat(const kernel_ir *ir)
{
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    int op = ir->nodes[0]->op;
    if (!ir->rows || p->extent[inner] % vex_lanes(ir) == 0 || op == OP_DIV ||
        op == OP_FLOORDIV || op == OP_MOD)
        return false;
    int64_t run = p->extent[inner];
    for (int k = 1; k < p->operand_count; k++) { /* (rows that follow each other, or repeat) */
        int64_t along = p->stride[k][inner], across = p->stride[k][inner - 1];
        if (!(along == 1 && (across == run || across == 0)) &&
            !(along == 0 && (across == 1 || across == 0)))
            return false;
    }
    return true;
}

static bool flat_chosen(const kernel_ir *ir)
{
    int64_t run = ir->p->loop_count ? ir->p->extent[ir->p->loop_count - 1] : 1;
    if (run > VEX_FLAT_MAX_RUN && !long_rows_flat(ir))
        return false;
    /* (not in place of the fused rows form over two loops, row_groups:
     * measured faster there, cc / JIT same process, flat -> row groups:
     * f64 tree over i16 rows of 33 in 4815 groups of 4 (sweep seed 41
     * case 43) 0.36 -> 0.47; i16 a + 3 * b * c rows of 37 0.97 -> 1.25;
     * f32 where rows of 24 0.78 -> 0.97; slower only a * b + c, f32 rows
     * of 16 in groups of 2, 3.8 -> 3.1) */
    /* (not a 64-bit integer product in place of the rows form: AVX2 has
     * no such multiply, and vex.c's lost to the _rows microkernel's: a *
     * g, i64 rows of 29, g the same row every row, 2.07 -> 1.58, g one
     * value a row 1.35 -> 1.18; an i64 sum gained, 1.9 -> 2.13) */
    /* (but in place of it for a float tree over runs of at most two
     * vectors, measured cc / JIT same process, row groups -> flat: a * b
     * + c, f32 rows of 8 0.54 -> 1.22, of 12 1.9 -> 4.2, of 16 1.11 ->
     * 1.53; f64 rows of 8 0.85 -> 1.12; a - f64(b), b i16 rows of 8 0.96
     * -> 1.56; a / b + 1, b reversed f32 rows of 8 4.6 -> 7.8; where f32
     * rows of 16 1.05 -> 1.16; even: minimum f64 rows of 5.  Not a typed
     * tree: u8(maximum(b, u8(a))), a f64, b i16 rows of 8, 0.52 -> 0.36) */
    /* (nor in place of the rows form whose function computes a per-row
     * square root or quotient once a row (vex.c mark_float_hoisted), where
     * the flat form computes it for every element, over runs of two
     * vectors or more: (x - m) / sqrt(v + 1e-5), m and v one value a row,
     * cc / JIT same process, flat -> rows: f32 rows of 40 0.40 -> 1.24, of
     * 24 2.8 -> 7.0, f64 rows of 16 1.55 -> 4.3; where(x > m * 2, ...)
     * f64 rows of 30 1.05 -> 1.13; slower: f32 rows of 9 3.15 -> 2.9, x *
     * (s * s + 1) f32 rows of 20 2.9 -> 1.9-2.4) */
    if (ir->tiles2d && ir->vex && ir->vex->rows && ir->vex->float_hoisted > 0 &&
        per_row_divides(ir) && run >= 2 * vex_lanes(ir))
        return false;
    /* (nor for a per-row exp or log (vex.c float_hoist_refused: f32 only)
     * over runs of 4 vectors or more; measured cc / JIT same process,
     * flat -> rows, a * log(c) - b, c one value a row: f32 rows of 32 0.33
     * -> 0.50, 36 0.38 -> 0.50, 40 0.36 -> 0.50, a * log(c) rows of 32 0.76
     * -> 1.18; a * exp(c) - b rows of 36 0.40 -> 0.52; slower: log rows of
     * 33 0.81 -> 0.47 (the flat form's bodies of 2 rows there); rows of 16
     * and 24 stay flat: 1.29 and 1.49 against the rows form's 0.97 and
     * 1.20) */
    if (ir->tiles2d && ir->vex && ir->vex->rows && ir->vex->float_hoisted > 0 &&
        per_row_functions(ir) && run >= 4 * vex_lanes(ir))
        return false;
    /* (nor in place of 2-D tiles that gather their operands once for the
     * whole call, the fused function then reading every operand
     * contiguously (tiles_gathered_once); measured cc / JIT same process,
     * flat -> tiles: a - a - b, f32 rows of 6 under 38 under 96, b one
     * plane reversed in its rows (sweep seed 95 case 76) 0.49 -> 1.19;
     * rows of 5 0.81 -> 1.94; b of 200 rows of 6 0.64 -> 0.73; a * b + a,
     * tiles of 4 rows of 6, 1.58 -> 1.72.  Not where a gather stays inside
     * a loop (a * b - c, c one row per plane: 1.98 -> 1.80) nor where the
     * tiles call a microkernel (a + b, f32 rows of 3, 1.69 -> 1.16)) */
    if (tiles_gathered_once(ir))
        return false;
    const expr_node *root = ir->nodes[0];
    bool wide_product = root->op == OP_MUL && bcg_dtype_size(root->dtype) == 8 &&
                        dtype_kind_of(root->dtype) != KIND_FLOAT;
    return (ir->tiles2d && !ir->row_calls && !ir->scatter &&
            (ir->row_groups <= 0 || (run <= 2 * vex_lanes(ir) && !vex_hoists_per_run(ir))) &&
            vex_flat_supported(ir)) ||
           (ir->rows && !wide_product && vex_flat_supported(ir)) ||
           flat_instead_of_elements(ir);
}

/* Whether IR's tree computes a function the vector code takes from the
 * microkernels' polynomials (exp, log and the like; not sqrt, which is
 * exact): microkernel_run 0 asks for none of the microkernels, so such a
 * kernel keeps the C library's (tcc's code), as the loop nest does. */
static bool uses_polynomials(const kernel_ir *ir)
{
    for (int id = 0; id < ir->node_count; id++) {
        const expr_node *n = ir->nodes[id];
        if (op_table[n->op].transcendental && n->op != OP_SQRT)
            return true;
    }
    return false;
}

static void choose_small(lowering *w)
{
    compile *c = w->c;
    kernel_ir *ir = w->ir;
    /* unroll_limit 0 asks for loops: no straight-line code of any kind */
    if (!c->microkernels || c->aot || c->options.disable_vector_code ||
        c->options.unroll_limit == 0 || ir->stream ||
        ir->stream_copies || !vex_cpu_ok() ||
        (c->options.microkernel_run <= 0 && uses_polynomials(ir)))
        return;
    bool flat = !vex_small_supported(ir);
    if (flat && !flat_chosen(ir))
        return;
    vex_function *f = NULL;
    if ((flat ? vex_build_flat(c->arena, ir, &f) : vex_build_small(c->arena, ir, &f)) != BCG_OK) {
        fail_nomem(w);
        return;
    }
    if (!f)
        return;
    ir->small = f;
    ir->small_flat = flat;
    ir->small_max_run = vex_flat_max_run(ir); /* (before the rows form is cleared) */
    ir->vex = NULL;
    for (int id = 0; id < ir->node_count; id++) { /* the function reads operands only */
        ir->value[id].local = NULL;
        ir->value[id].declares = false;
    }
    ir->tiled = ir->rows = ir->tiles2d = ir->scatter = ir->group_loop = false;
    ir->block = 0;
    for (int k = 0; k <= ir->input_count; k++)
        ir->has_position[k] = false;
    ir->step_count = 0;
    kir_step *step = add_step(w, KIR_SMALL_CALL, 1);
    if (step) {
        step->size = ir->p->elements;
        step->trips = (ir->p->elements + f->lanes - 1) / f->lanes;
    }
}

/* ---- the form ------------------------------------------------------------------ */

/* What the decisions above come to, as data (see kernel_form). */
static kernel_form form_of(const kernel_ir *ir)
{
    const plan *p = ir->p;
    kernel_form f = {.kind = FORM_INNER_UNROLLED, .stream = ir->stream};
    int64_t inner = p->loop_count ? p->extent[p->loop_count - 1] : 1;
    if (ir->reduce) {
        f.kind = p->empty ? FORM_EMPTY : FORM_REDUCE;
        f.reduce = ir->reduce;
        f.reduce_count = ir->reduce_count;
    } else if (p->empty) {
        f.kind = FORM_EMPTY;
    } else if (ir->small) {
        f.kind = FORM_SMALL;
        f.run_length = p->elements;
        if (ir->small_flat) { /* the flat form: runs of run_length, a loop of bodies */
            f.runs = p->elements / inner;
            f.group_size = ir->small->body;
        }
    } else if (ir->unrolled) {
        f.kind = FORM_UNROLLED;
    } else if (ir->rows) {
        f.kind = FORM_ROWS;
        f.runs = p->extent[p->loop_count - 2];
        f.run_length = inner;
    } else if (ir->tiles2d) {
        f.kind = FORM_TILES;
        f.runs = p->extent[p->loop_count - 2];
        f.run_length = inner;
        f.tile_elements = (int)(ir->tile_rows * (ir->row_calls ? ir->tile_columns : inner));
    } else if (ir->tiled) {
        f.kind = FORM_TILES;
        f.run_length = inner;
        f.tile_elements = (int)tile_elements(ir);
        f.fused = ir->vex != NULL;
        if (vex_whole_run(ir))
            f.tile_elements = 0;
    } else if (ir->block > 0) {
        f.kind = FORM_BLOCKS;
        f.block_outer = ir->block;
        f.block_inner = ir->block_inner;
    } else if (ir->group_loop) {
        f.kind = FORM_GROUPS;
        f.groups = ir->groups;
        f.group_size = ir->factor;
        f.rest = ir->rest;
    } else {
        f.run_length = inner;
    }
    if (f.kind != FORM_ROWS && f.kind != FORM_TILES)
        f.stream = false;
    return f;
}

/* Why the form was chosen, in a phrase for explain. */
static const char *form_reason(const lowering *w, const char *not_tiled)
{
    const compile *c = w->c;
    const kernel_ir *ir = w->ir;
    const plan *p = ir->p;
    char buf[600];
    switch (ir->form.kind) {
    case FORM_EMPTY:
        return "the result has no elements";
    case FORM_REDUCE:
        snprintf(buf, sizeof buf, ir->fill ? "a %s over an empty result: no element to read"
                                           : "a %s: %lld result elements into each output element%s",
                 reduce_name(ir->reduce), (long long)ir->reduce_count,
                 !ir->tiled ? ""
                 : ir->lane_rows
                     ? "; a tile of the kept loop a call, each element's run along the contiguous "
                       "innermost loop in 16 partial sums"
                 : ir->tile_loop < p->loop_count - 1
                     ? "; a block of accumulators along the kept loop outside the reduced "
                       "ones, its values in tiles of microkernels"
                     : "; the contiguous innermost run in tiles of microkernels, added into "
                       "16 partial sums");
        break;
    case FORM_UNROLLED:
        if (p->loop_count == 0)
            snprintf(buf, sizeof buf, "a single element");
        else
            snprintf(buf, sizeof buf, "%lld elements <= unroll_limit %d",
                     (long long)p->elements, c->options.unroll_limit);
        break;
    case FORM_ROWS:
        if (ir->form.run_length < c->options.microkernel_run) {
            snprintf(buf, sizeof buf, "runs of %lld, shorter than microkernel_run %d, and one "
                     "operation on operands: one call of the microkernel for all %lld runs%s",
                     (long long)ir->form.run_length, c->options.microkernel_run,
                     (long long)ir->form.runs,
                     ir->stream ? "; streaming stores (stream_stores, output past the cache)" : "");
            break;
        }
        /* fall through */
    case FORM_TILES:
        if (ir->tiles2d) {
            char columns[200] = "";
            if (ir->row_calls)
                snprintf(columns, sizeof columns, ", in columns of %lld with a call per row "
                         "(operands of stride 0 or 1 along the run read in place), each "
                         "column's tiles of rows in turn (its lines read once, whole)",
                         (long long)ir->tile_columns);
            snprintf(buf, sizeof buf, "runs of %lld (%s microkernel_run %d), several to a tile, "
                     "and a microkernel for every operation that varies along them: 2-D tiles "
                     "of %lld rows (%d elements), %s%s%s", (long long)ir->form.run_length,
                     ir->form.run_length < c->options.microkernel_run ? "<" : ">=",
                     c->options.microkernel_run, (long long)ir->tile_rows,
                     ir->form.tile_elements,
                     ir->vex && ir->vex->rows && ir->row_groups > 0
                         ? "the fused function reading operands in place row by row, one call "
                           "over two loops (row_groups: the loop outside the rows too)"
                     : ir->vex && ir->vex->rows
                         ? "the fused function reading operands in place row by row"
                         : "operands not contiguous over a tile gathered once a tile",
                     ir->scatter ? ", the output scattered" : columns,
                     ir->stream ? "; streaming stores (stream_stores, output past the cache)"
                                : "");
            break;
        }
        snprintf(buf, sizeof buf, "a contiguous innermost run of %lld >= microkernel_run %d and "
                 "a microkernel for every operation that varies along it%s%s%s",
                 (long long)ir->form.run_length, c->options.microkernel_run,
                 ir->form.kind == FORM_ROWS ? "; runs shorter than a tile and one operation "
                                              "on operands: one call for all runs" : "",
                 ir->vex ? "; the tree written as one function of AVX2 code (gen/vex.c)" : "",
                 ir->stream ? "; streaming stores (stream_stores, output past the cache)" : "");
        break;
    case FORM_SMALL:
        if (ir->small_flat) {
            char rows[240] = ""; /* (rows of several loops, level loops, functions) */
            int split = ir->small->split;
            int64_t row = 1;
            for (int l = split + 1; l < p->loop_count; l++)
                row *= p->extent[l];
            if (split + 2 < p->loop_count)
                snprintf(rows, sizeof rows, " (rows of %lld elements over loops %d to %d)",
                         (long long)row, split + 1, p->loop_count - 1);
            if (split > 1)
                snprintf(rows + strlen(rows), sizeof rows - strlen(rows),
                         " under %d level loops", split);
            if (ir->small->functions > 0) /* (vex.c: small_transcendentals) */
                snprintf(rows + strlen(rows), sizeof rows - strlen(rows),
                         ", %d function%s into buffers (%d once before the loops, %d again "
                         "every body)", ir->small->functions,
                         ir->small->functions > 1 ? "s" : "",
                         ir->small->functions - ir->small->functions_per_body,
                         ir->small->functions_per_body);
            snprintf(buf, sizeof buf, "runs of %lld (<= %d) whose output rows are contiguous%s, "
                     "a tree gen/vex.c writes: the rows as one stream, a loop of bodies of "
                     "%lld elements of straight-line AVX2 code (the flat form), no tcc code",
                     (long long)p->extent[p->loop_count - 1], ir->small_max_run, rows,
                     (long long)ir->small->body);
        } else
            snprintf(buf, sizeof buf, "%lld elements <= %d and a tree gen/vex.c writes: the "
                     "whole kernel as straight-line AVX2 code, no tcc code",
                     (long long)p->elements, VEX_SMALL_MAX);
        break;
    case FORM_BLOCKS:
        snprintf(buf, sizeof buf, "an input is read with a stride of at least %d bytes in the "
                 "innermost loop and a shorter one outside it", BLOCK_LINE_BYTES);
        break;
    default:
        if (c->aot)
            snprintf(buf, sizeof buf, "plain C (the AOT form)%s",
                     p->elements > c->options.unroll_limit ? "; more elements than unroll_limit"
                                                           : "");
        else if (!c->microkernels)
            snprintf(buf, sizeof buf, "plain C (no microkernels: bcg_emit or the cc backend)");
        else
            snprintf(buf, sizeof buf, "%s", not_tiled ? not_tiled : "no microkernel form applies");
        break;
    }
    return arena_strndup(c->arena, buf, strlen(buf));
}

/* ---- the entry point ---------------------------------------------------------------- */

bcg_status lower_kernel(compile *c, const expr_node *root, kernel_ir **out)
{
    kernel_ir *ir = arena_alloc(c->arena, sizeof *ir);
    if (!ir)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    memset(ir, 0, sizeof *ir);
    lowering w = {.c = c, .ir = ir, .status = BCG_OK};
    const plan *p = c->plan;
    ir->p = p;
    ir->input_count = c->operand_count;
    ir->inplace = c->options.inplace;
    ir->out_dtype = c->root->dtype; /* the output's: compile_front cast the root to it */
    ir->factor = c->options.unroll_factor < 1 ? 1 : c->options.unroll_factor;
    ir->tile_loop = p->loop_count - 1;
    /* a fused program: its other roots after the kernel's own, one forest */
    ir->root_count = 1 + c->fuse_count;
    ir->real_inputs = c->operand_count - c->fuse_count;
    ir->root_id = arena_alloc(c->arena, sizeof *ir->root_id * (size_t)ir->root_count);
    ir->root_operand = arena_alloc(c->arena, sizeof *ir->root_operand * (size_t)ir->root_count);
    if (!ir->root_id || !ir->root_operand)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    ir->node_count = count_nodes(root);
    for (int j = 1; j < ir->root_count; j++)
        ir->node_count += count_nodes(c->fuse_folded[j - 1]);
    ir->nodes = arena_alloc(c->arena, sizeof *ir->nodes * (size_t)ir->node_count);
    ir->value = arena_alloc(c->arena, sizeof *ir->value * (size_t)ir->node_count);
    ir->post_order = arena_alloc(c->arena, sizeof *ir->post_order * (size_t)ir->node_count);
    if (!ir->nodes || !ir->value || !ir->post_order)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    memset(ir->value, 0, sizeof *ir->value * (size_t)ir->node_count);
    ir->root_id[0] = 0;
    ir->root_operand[0] = 0;
    int next = number_nodes(ir, root, 0), visit = order_post(ir, 0, 0);
    for (int j = 1; j < ir->root_count; j++) {
        ir->root_id[j] = next;
        ir->root_operand[j] = ir->real_inputs + j; /* plan operand: input slot + 1 */
        next = number_nodes(ir, c->fuse_folded[j - 1], next);
        visit = order_post(ir, ir->root_id[j], visit);
    }

    if (c->reduce) {
        ir->reduce = c->reduce;
        ir->reduced_dtype = c->reduced_dtype;
        ir->reduce_count = c->reduce_count;
        ir->out_dtype = c->out_dtype;
        ir->lanes = reduce_lanes(c);
        if (c->fill_plan) {
            ir->fill = true;
            ir->p = p = c->fill_plan;
        }
        ir->reduce_from = reduce_from_of(ir);
        if (c->fuse_reduce && !ir->fill) { /* several reductions: see root_reduce */
            ir->root_reduce = arena_alloc(c->arena, sizeof *ir->root_reduce *
                                                        (size_t)ir->root_count);
            if (!ir->root_reduce)
                return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
            ir->root_reduce[0] = (fuse_reduction){ir->reduce, ir->reduced_dtype, ir->out_dtype,
                                                  ir->reduce_count, ir->lanes};
            for (int j = 1; j < ir->root_count; j++) {
                fuse_reduction *r = &ir->root_reduce[j];
                *r = c->fuse_reduce[j - 1];
                r->lanes = r->reduce ? reduce_lanes_of(c, r->reduce, ir->nodes[ir->root_id[j]]->dtype,
                                                       ir->root_operand[j])
                                     : 1;
            }
        }
        if (!ir->fill) {
            choose_input_levels(ir);
            assign_roots_levels(ir);
            if (lane_rows_chosen(&w)) {
                ir->tiled = ir->reduce_rows = ir->lane_rows = true;
                ir->tile_loop = ir->reduce_from - 1;
                ir->lanes = 1; /* (the call combines each run's partial sums) */
            } else {
                ir->tiled = reduce_tiles_chosen(&w);
            }
            if (!ir->tiled && block_reduce_chosen(&w, ir->reduce_from)) {
                ir->tiled = true;
                ir->tile_loop = ir->reduce_from - 1;
                ir->reduce_rows = accadd_rows_chosen(ir);
            }
            for (int j = 0; j < ir->root_count; j++)
                if (ir->tiled) /* tiles read operands and literals themselves */
                    choose_tile_locals(&w, ir->root_id[j]);
                else
                    choose_locals(&w, ir->root_id[j], INT_MAX, false);
            if (!ir->tiled && ir->root_count > 1)
                choose_elements(&w);
        }
        bool copies = false; /* an element-wise other root, whose tiles a copy stores */
        for (int j = 1; j < ir->root_count; j++)
            copies = copies || !(ir->root_reduce && ir->root_reduce[j].reduce);
        ir->stream_copies = ir->tiled && c->stream && copies;
        if (!p->empty && w.status == BCG_OK)
            lower_reduction(&w);
        if (ir->stream_copies && w.status == BCG_OK) /* runtime/microkernels.c: why the fence */
            add_step(&w, KIR_FENCE, 1);
        if (w.status != BCG_OK)
            return w.status;
        ir->form = form_of(ir);
        if (!(ir->reason = form_reason(&w, NULL)))
            return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
        *out = ir;
        return BCG_OK;
    }
    ir->unrolled = p->loop_count == 0 ||
                   (p->elements <= c->options.unroll_limit &&
                    p->elements <= MAX_UNROLLED_NODES / ir->node_count);
    choose_input_levels(ir);
    assign_roots_levels(ir);
    const char *not_tiled = NULL;
    ir->tiled = tiles_chosen(&w, &not_tiled);
    bool short_rows = !ir->tiled && ir->root_count == 1 && short_rows_chosen(&w);
    /* (a fused program's other roots take 1-D tiles or the loop nest;
     * short rows the microkernel does badly take 2-D tiles if they can,
     * else, over a strided operand, the loop nest: see rows_refused) */
    bool refused = short_rows && rows_refused(c, ir);
    if ((!short_rows || refused) && ir->root_count == 1 && tiles2d_chosen(&w)) {
        short_rows = false;
        int64_t run = p->extent[p->loop_count - 1], rows = p->extent[p->loop_count - 2];
        int64_t columns = run;
        bool row_calls = false;
        int64_t transposed = ir->tiled ? 0 : transposed_tile_rows(&w, &columns, &row_calls); /* as tiles2d_chosen */
        ir->tiled = ir->tiles2d = true;
        ir->tile_rows = rows < TILE_ELEMENTS / run ? rows : TILE_ELEMENTS / run;
        if (transposed) /* long runs over a transposed input */
            ir->tile_rows = transposed;
        else if (short_transposed_rows(&w)) /* short runs over one */
            ir->tile_rows = short_transposed_rows(&w);
        else if (rows_copy(&w)) /* the gather writes the output: no tile on the stack */
            ir->tile_rows = rows;
        ir->row_calls = transposed && row_calls;
        /* (calls per row write the output's rows in place) */
        ir->scatter = !ir->row_calls && !tile2d_contiguous(p, 0, run);
        ir->tile_columns = ir->row_calls ? columns : run;
    }
    if (short_rows && refused && strided_short_run(ir))
        short_rows = false;
    /* (short rows stream as long calls where an operand repeats) */
    ir->stream = (short_rows || (ir->tiled && runs_whole_lines(ir))) && c->stream &&
                 !ir->scatter && stream_chosen(ir);
    if (short_rows) /* the rows call reads operands and literals itself */
        ir->rows = true;
    else
        for (int j = 0; j < ir->root_count; j++)
            if (!ir->tiled)
                choose_locals(&w, ir->root_id[j], INT_MAX, false);
            else /* tiles read operands and literals themselves; C computes hoisted subtrees */
                choose_tile_locals(&w, ir->root_id[j]);
    if (!ir->tiled && !ir->rows && ir->root_count > 1)
        choose_elements(&w);
    /* a fused program's loop nest stores every root per element or tile:
     * neither cache blocks nor rows calls (which write the root alone) */
    if (ir->root_count == 1 && blocking_chosen(&w)) {
        ir->block = BLOCK_OUTER;
        ir->block_inner = BLOCK_INNER;
    }
    ir->rows = ir->rows || (ir->root_count == 1 && rows_chosen(&w));
    ir->stream_copies = ir->tiled && c->stream && ir->root_count > 1;
    if (!p->empty && w.status == BCG_OK) {
        if (ir->unrolled) {
            lower_unrolled(&w);
        } else {
            lower_loop_nest(&w);
            hoist_tile_gathers(&w);
        }
        if (ir->stream || ir->stream_copies) /* runtime/microkernels.c: why the fence */
            add_step(&w, KIR_FENCE, 1);
    }
    if (w.status == BCG_OK && !p->empty)
        choose_small(&w);
    if (w.status != BCG_OK)
        return w.status;
    ir->form = form_of(ir); /* after the loop nest, which sets the groups */
    ir->reason = form_reason(&w, not_tiled);
    if (!ir->reason)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    *out = ir;
    return BCG_OK;
}
