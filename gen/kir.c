/* kir.c - queries on the kernel IR (kir.h) and its text forms: the form as
 * a sentence (the kernel's header comment, explain), the whole IR as text
 * and JSON (explain), and the text of values that both share. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kir.h"
#include "vex.h"

/* ---- queries ---------------------------------------------------------------------- */

int kir_child(const kernel_ir *ir, int id, int k)
{
    int child = id + 1;
    for (int j = 0; j < k; j++)
        child += ir->value[child].size;
    return child;
}

static bool is_comparison(expr_op op) { return op >= OP_EQ && op <= OP_GE; } /* ORDER OP */
static bool is_float_test(expr_op op) { return op >= OP_ISNAN && op <= OP_SIGNBIT; } /* ORDER OP */

const char *kir_tile_family(const kernel_ir *ir, int id, tile_shape *kind)
{
    const expr_node *n = ir->nodes[id];
    if ((unsigned)n->op >= OP_COUNT || !op_table[n->op].tile || ir->value[id].folded >= 0)
        return NULL;
    if (n->op == OP_WHERE)
        *kind = TILE_WHERE;
    else if (is_comparison(n->op))
        *kind = TILE_COMPARE;
    else if (is_float_test(n->op))
        *kind = TILE_TEST;
    else
        *kind = n->arg_count == 1 ? TILE_UNARY : TILE_BINARY;
    return op_table[n->op].tile;
}

bcg_dtype kir_tile_dtype(const kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    return n->op == OP_WHERE || n->op == OP_CAST ? n->dtype : expr_operation_type(n);
}

bcg_dtype kir_tile_argument_dtype(const kernel_ir *ir, int id, int k)
{
    const expr_node *n = ir->nodes[id];
    if (n->op == OP_CAST)
        return ir->nodes[kir_child(ir, id, 0)]->dtype;
    return n->op == OP_WHERE && k == 0 ? BCG_BOOL : kir_tile_dtype(ir, id);
}

int kir_tile_same(const kernel_ir *ir, int id) { return ir->same ? ir->same[id] : id; }

bool kir_tile_converts(const kernel_ir *ir, int id, int k)
{
    return ir->nodes[kir_child(ir, id, k)]->dtype != kir_tile_argument_dtype(ir, id, k);
}

void kir_cast_name(bcg_dtype from, bcg_dtype to, char *buf, size_t cap)
{
    snprintf(buf, cap, "bcg_mk_cast_%s_%s", bcg_dtype_name(from), bcg_dtype_name(to));
}

void kir_microkernel_name(const kernel_ir *ir, int id, kir_variant variant, char *buf,
                          size_t cap)
{
    if (ir->nodes[id]->op == OP_CAST) {
        kir_cast_name(ir->nodes[kir_child(ir, id, 0)]->dtype, ir->nodes[id]->dtype, buf, cap);
        return;
    }
    if (ir->nodes[id]->op == OP_OPERAND || ir->nodes[id]->op == OP_LITERAL) {
        /* a root that is an operand or a literal: copied or filled in */
        kir_cast_name(ir->nodes[id]->dtype, ir->nodes[id]->dtype, buf, cap);
        return;
    }
    tile_shape kind;
    const char *family = kir_tile_family(ir, id, &kind);
    snprintf(buf, cap, "bcg_mk_%s_%s%s", family ? family : "?",
             bcg_dtype_name(kir_tile_dtype(ir, id)),
             variant == KIR_STREAM ? "_nt" : variant == KIR_ROWS ? "_rows" : "");
}

void kir_accadd_rows_name(const kernel_ir *ir, char *buf, size_t cap)
{
    tile_shape kind;
    const char *family = ir->nodes[0]->op == OP_OPERAND ? NULL : kir_tile_family(ir, 0, &kind);
    if (ir->lane_rows) {
        snprintf(buf, cap, "bcg_mk_sum16_rows_%s", bcg_dtype_name(ir->nodes[0]->dtype));
        return;
    }
    snprintf(buf, cap, "bcg_mk_%s%saccadd_rows_%s", family ? family : "", family ? "_" : "",
             bcg_dtype_name(ir->nodes[0]->dtype));
}

void kir_gather_name(bcg_dtype dtype, bool scatter, char *buf, size_t cap)
{
    snprintf(buf, cap, "bcg_mk_%s_rows_%d", scatter ? "scatter" : "gather",
             (int)(8 * bcg_dtype_size(dtype)));
}

/* ---- text of values ------------------------------------------------------------------- */

void kir_format_float(char *buf, size_t cap, double v, bool single)
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

void kir_format_literal(char *buf, size_t cap, const expr_node *n)
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
            kir_format_float(buf, cap, n->value.f, n->dtype != BCG_F64);
        break;
    }
}

/* How the header comment and messages write operator OP: its ops.h symbol;
 * NULL for the rows that are not operators. */
const char *kir_op_symbol(expr_op op)
{
    if ((unsigned)op >= OP_COUNT || op == OP_OPERAND || op == OP_LITERAL || op == OP_CAST)
        return NULL;
    return op_table[op].symbol;
}

/* Value ID (of IR, or the tree N when IR is NULL) fully parenthesised,
 * operands as in0, in1, ...; with IR, a child held in a local is its name. */
static void format_value(strbuf *sb, const kernel_ir *ir, int id, const expr_node *n, bool top)
{
    char buf[64];
    if (ir) {
        n = ir->nodes[id];
        if (!top && ir->value[id].local) {
            sb_puts(sb, ir->value[id].local);
            return;
        }
        if (ir->value[id].folded >= 0) {
            sb_puts(sb, ir->value[id].folded ? "true" : "false");
            return;
        }
    }
    switch (n->op) {
    case OP_OPERAND:
        sb_printf(sb, "in%d", n->operand);
        return;
    case OP_LITERAL:
        kir_format_literal(buf, sizeof buf, n);
        sb_puts(sb, buf);
        return;
    default:
        break;
    }
    int child = id + 1;
    const char *symbol = n->op == OP_CAST ? bcg_dtype_name(n->cast_to)
                         : kir_op_symbol(n->op) ? kir_op_symbol(n->op) : "?";
    bool call = n->op == OP_CAST ||
                (op_table[n->op].call && strcmp(op_table[n->op].call, symbol) == 0);
    if (call)
        sb_printf(sb, "%s(", symbol);
    else if (n->arg_count == 1)
        sb_printf(sb, "(%s", symbol);
    else
        sb_putc(sb, '(');
    for (int k = 0; k < n->arg_count; k++) {
        if (k)
            sb_puts(sb, call ? ", " : n->arg_count == 1 ? "" : " ");
        if (k && !call)
            sb_printf(sb, "%s ", symbol);
        format_value(sb, ir, child, n->args[k], false);
        if (ir)
            child += ir->value[child].size;
    }
    sb_putc(sb, ')');
}

void kir_format_tree(strbuf *sb, const expr_node *root)
{
    format_value(sb, NULL, 0, root, true);
}

/* ---- the form ----------------------------------------------------------------------- */

const char *form_kind_name(form_kind kind)
{
    static const char *const names[] = {"empty", "unrolled", "rows", "tiles", "blocks",
                                        "groups", "inner unrolled", "reduce", "small"};
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
        if (f->runs > 0) /* 2-D tiles */
            snprintf(buf, cap, "loop nest; the two innermost loops (%lld runs of %lld "
                     "elements) call the library's vectorised microkernels, %d elements "
                     "(%s) a tile%s", (long long)f->runs, (long long)f->run_length,
                     f->tile_elements,
                     f->tile_elements % f->run_length ? "rows of a column of the runs"
                                                      : "whole runs",
                     streaming);
        else if (f->fused && f->tile_elements == 0)
            snprintf(buf, cap, "loop nest; the innermost run (%lld elements) is one call of "
                     "fused AVX2 code (the tree in vector registers)%s",
                     (long long)f->run_length, streaming);
        else if (f->fused)
            snprintf(buf, cap, "loop nest; the innermost run (%lld elements) calls fused "
                     "AVX2 code (the tree in vector registers), %d elements a tile%s",
                     (long long)f->run_length, f->tile_elements, streaming);
        else
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
    case FORM_SMALL:
        if (f->runs > 0) { /* the flat form */
            snprintf(buf, cap, "loops of straight-line code; the %lld elements' runs of %lld "
                     "as one stream, in bodies of %lld elements of AVX2 code (the tree in vector "
                     "registers, every offset a constant)", (long long)f->run_length,
                     (long long)(f->run_length / f->runs), (long long)f->group_size);
            break;
        }
        snprintf(buf, cap, "no loops; all %lld elements are one function of straight-line "
                 "AVX2 code (the tree in vector registers, every offset a constant)",
                 (long long)f->run_length);
        break;
    case FORM_REDUCE:
        if (f->reduce_count == 0)
            snprintf(buf, cap, "the %s of nothing (the result is empty): its identity stored "
                     "into every output element", reduce_name(f->reduce));
        else
            snprintf(buf, cap, "loop nest; each output element is the %s of %lld elements, "
                     "accumulated in the innermost loops", reduce_name(f->reduce),
                     (long long)f->reduce_count);
        break;
    }
}

/* ---- the IR as text ----------------------------------------------------------------- */

/* ORDER KIR */
static const char *const kir_op_names[] = {
    "local", "store", "loop", "end", "advance", "blocks", "loop", "move",
    "declare", "literal", "tiles", "call", "rows", "fence", "acc", "accumulate", "store",
    "accumulate", "convert", "store2", "store", "element", "local", "tiles2d", "gather",
    "scatter", "vex", "rows", "columns", "small",
};

static void position_name(strbuf *sb, int k)
{
    if (k == 0)
        sb_puts(sb, "out_pos");
    else
        sb_printf(sb, "in%d_pos", k - 1);
}

/* One access "in0[in0_pos + 3]" of plan operand K at OFFSET. */
static void format_access(strbuf *sb, const kernel_ir *ir, int k, int64_t offset)
{
    if (k == 0)
        sb_puts(sb, "out[");
    else
        sb_printf(sb, "in%d[", k - 1);
    if (!ir->unrolled && ir->has_position[k]) {
        position_name(sb, k);
        if (offset)
            sb_printf(sb, " %c %llu", offset < 0 ? '-' : '+',
                      offset < 0 ? 0ULL - (unsigned long long)offset : (unsigned long long)offset);
    } else {
        sb_printf(sb, "%lld", (long long)offset);
    }
    sb_putc(sb, ']');
}

/* A microkernel argument: a temporary, a literal or an operand with its
 * stride in the innermost loop. */
static void format_argument(strbuf *sb, const kernel_ir *ir, int id)
{
    const expr_node *n = ir->nodes[id];
    if (ir->value[id].local) {
        sb_printf(sb, "%s stride 0", ir->value[id].local);
    } else if (n->op == OP_LITERAL) {
        sb_printf(sb, "tile_literal%d", id);
    } else if (n->op == OP_OPERAND && ir->gathered[n->operand + 1]) {
        sb_printf(sb, "in%d_tile", n->operand);
    } else if (n->op == OP_OPERAND) {
        const plan *p = ir->p;
        int64_t stride = p->stride[n->operand + 1][ir->tile_loop];
        if (ir->row_calls) /* a call per row: the stride along it */
            stride = p->stride[n->operand + 1][p->loop_count - 1];
        sb_printf(sb, "in%d stride %lld", n->operand,
                  ir->tiles2d ? (long long)(stride != 0) : (long long)stride);
    } else if (kir_root_writes_output(ir, kir_tile_same(ir, id))) {
        int root = kir_tile_same(ir, id);
        if (root == 0)
            sb_puts(sb, "out");
        else
            sb_printf(sb, "in%d", ir->root_operand[kir_root_index(ir, root)] - 1);
    } else {
        sb_printf(sb, "tile%d", kir_tile_same(ir, id));
    }
}

/* Marks in READ the inputs value ID reads itself, not through a local. */
static void direct_reads(const kernel_ir *ir, int id, bool top, bool *read)
{
    const expr_node *n = ir->nodes[id];
    if ((!top && ir->value[id].local) || ir->value[id].folded >= 0)
        return;
    if (n->op == OP_OPERAND)
        read[n->operand] = true;
    for (int k = 0; k < n->arg_count; k++)
        direct_reads(ir, kir_child(ir, id, k), false, read);
}

/* NAME = the identity of REDUCE, said alike for the kernel's own
 * accumulator and a fused program's others: a block along the tile loop,
 * LANES partial sums. */
static void format_acc_init(strbuf *sb, const kernel_ir *ir, const char *name, int reduce,
                            int lanes)
{
    sb_printf(sb, "%s = the identity of %s", name, reduce_name(reduce));
    if (ir->tiled && ir->tile_loop < ir->p->loop_count - 1)
        sb_printf(sb, ", one accumulator per element of the tile along loop i%d", ir->tile_loop);
    if (lanes > 1)
        sb_printf(sb, " in %d partial sums, by the innermost index mod %d", lanes, lanes);
}

/* store ACCESS = NAME, the finished accumulator (the kernel's own, plan
 * operand 0, or a fused program's other at OPERAND). */
static void format_acc_store(strbuf *sb, const kernel_ir *ir, int operand, const char *name,
                             int reduce, int64_t count, bcg_dtype out_dtype, int lanes)
{
    sb_puts(sb, "store ");
    format_access(sb, ir, operand, 0);
    sb_printf(sb, " = %s (%s of %lld, as %s%s)", name, reduce_name(reduce), (long long)count,
              bcg_dtype_name(out_dtype),
              lanes > 1 ? "; the partial sums combined in a fixed order" : "");
}

/* A fused program's other reduction's ACC step (kernel_ir.root_reduce),
 * said as the kernel's own are; whether STEP is one. */
static bool other_acc_step(strbuf *sb, const kernel_ir *ir, const kir_step *step)
{
    int j = ir->root_reduce && step->node > 0 ? kir_root_index(ir, step->node) : 0;
    if (j <= 0)
        return false;
    const fuse_reduction *r = &ir->root_reduce[j];
    int id = step->node;
    switch (step->op) {
    case KIR_ACC_INIT: {
        char name[16];
        snprintf(name, sizeof name, "acc%d", j);
        format_acc_init(sb, ir, name, r->reduce, r->lanes);
        break;
    }
    case KIR_ACC_UPDATE: {
        bool read[BCG_MAX_OPERANDS] = {false}, first = true;
        if (ir->value[id].local && ir->value[id].level >= ir->per_element) {
            sb_printf(sb, "acc%d %s= %s", j, reduce_name(r->reduce), ir->value[id].local);
            break;
        }
        direct_reads(ir, id, true, read);
        sb_printf(sb, "acc%d %s= ", j, reduce_name(r->reduce));
        if (ir->value[id].local)
            sb_puts(sb, ir->value[id].local);
        else
            sb_puts(sb, "value");
        for (int k = 1; k <= ir->input_count; k++)
            if (read[k - 1]) {
                sb_puts(sb, first ? " from " : ", ");
                format_access(sb, ir, k, 0);
                first = false;
            }
        break;
    }
    case KIR_ACC_TILE:
        if (ir->tile_loop < ir->p->loop_count - 1)
            sb_printf(sb, "call bcg_mk_accadd_%s: acc%d's block of accumulators takes the tile "
                      "of ", bcg_dtype_name(ir->nodes[id]->dtype), j);
        else
            sb_printf(sb, "call bcg_mk_sum16_%s: acc%d's %d partial sums take the tile of ",
                      bcg_dtype_name(ir->nodes[id]->dtype), j, r->lanes);
        if (ir->value[id].local)
            sb_puts(sb, ir->value[id].local);
        else if (ir->nodes[id]->op == OP_OPERAND)
            format_access(sb, ir, ir->nodes[id]->operand + 1, 0);
        else if (ir->nodes[id]->op == OP_LITERAL)
            sb_printf(sb, "tile_literal%d", id);
        else
            sb_printf(sb, "tile%d", kir_tile_same(ir, id));
        break;
    default: {
        char name[16];
        snprintf(name, sizeof name, "acc%d", j);
        format_acc_store(sb, ir, step->operand, name, r->reduce, r->count, r->out_dtype,
                         r->lanes);
        break;
    }
    }
    return true;
}

int kir_root_index(const kernel_ir *ir, int id)
{
    for (int j = 0; j < ir->root_count; j++)
        if (ir->root_id[j] == id)
            return j;
    return -1;
}

bool kir_is_root(const kernel_ir *ir, int id)
{
    return id == 0 || (ir->root_count > 1 && kir_root_index(ir, id) >= 0);
}

bool kir_root_writes_output(const kernel_ir *ir, int id)
{
    if (!ir->tiled || !kir_is_root(ir, id) || (ir->same && ir->same[id] != id))
        return false;
    if (id == 0) /* (an operand or literal root is copied by its own call: tile_calls) */
        return !ir->reduce;
    if (ir->root_reduce && ir->root_reduce[kir_root_index(ir, id)].reduce)
        return false; /* another reduction's tile: accumulated */
    if (ir->nodes[id]->op == OP_OPERAND || ir->nodes[id]->op == OP_LITERAL)
        return false;
    /* a fused output's tile streams through a copy in large kernels */
    return !ir->stream_copies;
}

/* The dtype of plan operand K (an input read by some node). */
static bcg_dtype operand_dtype(const kernel_ir *ir, int k)
{
    for (int id = 0; id < ir->node_count; id++)
        if (ir->nodes[id]->op == OP_OPERAND && ir->nodes[id]->operand == k - 1)
            return ir->nodes[id]->dtype;
    return ir->out_dtype;
}

static void format_step(strbuf *sb, const kernel_ir *ir, const kir_step *step)
{
    const plan *p = ir->p;
    char name[48];
    switch (step->op) {
    case KIR_LOCAL:
    case KIR_ELEMENT_LOCAL:
        sb_printf(sb, "local %s %s = ", bcg_dtype_name(ir->nodes[step->node]->dtype),
                  ir->value[step->node].local);
        format_value(sb, ir, step->node, NULL, true);
        if (step->op == KIR_ELEMENT_LOCAL)
            sb_puts(sb, " (this element's, for several outputs)");
        break;
    case KIR_ELEMENT_OPEN:
        sb_puts(sb, "element: the values several outputs share, then the stores");
        break;
    case KIR_STORE: case KIR_STORE_PAIR: {
        bool read[BCG_MAX_OPERANDS] = {false}, first = true;
        int root = step->node >= 1 ? step->node : 0; /* a fused program's other root */
        int into = root ? step->operand : 0;
        /* a value the element's block computed for several roots */
        bool element = ir->value[root].local && ir->value[root].level >= ir->per_element;
        if (!element)
            direct_reads(ir, root, true, read);
        sb_puts(sb, "store ");
        format_access(sb, ir, into, step->offsets[into]);
        if (root)
            sb_printf(sb, " (output %d, value %d)", kir_root_index(ir, root), root);
        if (element)
            sb_printf(sb, " = %s", ir->value[root].local);
        for (int k = 1; k <= ir->input_count; k++)
            if (read[k - 1]) {
                sb_puts(sb, first ? " from " : ", ");
                format_access(sb, ir, k, step->offsets[k]);
                first = false;
            }
        break;
    }
    case KIR_LOOP:
        sb_printf(sb, "loop i%d: %lld trips", step->loop, (long long)step->trips);
        break;
    case KIR_END:
        sb_puts(sb, "end");
        break;
    case KIR_ADVANCE:
        position_name(sb, step->operand);
        sb_printf(sb, " += %lld", (long long)step->amount);
        break;
    case KIR_BLOCK_LOOP:
        sb_printf(sb, "blocks i%d_block: %lld trips in blocks of %lld", step->loop,
                  (long long)step->trips, (long long)step->size);
        break;
    case KIR_COUNT_LOOP:
        sb_printf(sb, "loop i%d: i%d_count trips", step->loop, step->loop);
        break;
    case KIR_MOVE:
        position_name(sb, step->operand);
        sb_printf(sb, " %s i%d_%s * %lld", step->subtract ? "-=" : "+=", step->loop,
                  step->by_count ? "count" : "block", (long long)step->amount);
        break;
    case KIR_MK_DECLARE:
        if (step->node < 0)
            kir_gather_name(step->operand ? operand_dtype(ir, step->operand) : ir->out_dtype,
                            step->operand == 0, name, sizeof name);
        else if (step->convert)
            kir_cast_name(ir->nodes[kir_child(ir, step->node, step->arg)]->dtype,
                          kir_tile_argument_dtype(ir, step->node, step->arg), name, sizeof name);
        else
            kir_microkernel_name(ir, step->node, step->variant, name, sizeof name);
        sb_printf(sb, "declare %s", name);
        break;
    case KIR_TILE_CONVERT: {
        int child = kir_child(ir, step->node, step->arg);
        kir_cast_name(ir->nodes[child]->dtype, kir_tile_argument_dtype(ir, step->node, step->arg),
                      name, sizeof name);
        sb_printf(sb, "call %s into tile%d_%d from ", name, step->node, step->arg);
        format_argument(sb, ir, child);
        break;
    }
    case KIR_TILE_LITERAL: {
        char value[64];
        kir_format_literal(value, sizeof value, ir->nodes[step->node]);
        sb_printf(sb, "literal %s tile_literal%d = %s",
                  bcg_dtype_name(ir->nodes[step->node]->dtype), step->node, value);
        break;
    }
    case KIR_TILE_LOOP:
        sb_printf(sb, "tiles of %lld over %lld elements", (long long)step->size,
                  (long long)step->trips);
        break;
    case KIR_TILE_CALL:
    case KIR_ROWS_CALL: {
        const expr_node *n = ir->nodes[step->node];
        kir_microkernel_name(ir, step->node, step->op == KIR_ROWS_CALL ? KIR_ROWS
                                                                        : step->variant,
                             name, sizeof name);
        sb_printf(sb, "call %s into ", name);
        if (step->op == KIR_TILE_CALL && kir_root_writes_output(ir, step->node) &&
            step->node != 0)
            sb_printf(sb, "in%d", ir->root_operand[kir_root_index(ir, step->node)] - 1);
        else if (step->node == 0 && !ir->reduce)
            sb_puts(sb, "out");
        else
            sb_printf(sb, "tile%d", step->node);
        sb_puts(sb, " from ");
        if (n->op == OP_OPERAND || n->op == OP_LITERAL) /* a root copied or filled in */
            format_argument(sb, ir, step->node);
        for (int k = 0; k < n->arg_count; k++) {
            if (k)
                sb_puts(sb, ", ");
            if (step->op == KIR_TILE_CALL && kir_tile_converts(ir, step->node, k))
                sb_printf(sb, "tile%d_%d", step->node, k);
            else
                format_argument(sb, ir, kir_child(ir, step->node, k));
        }
        if (step->op == KIR_ROWS_CALL)
            sb_printf(sb, "; %lld runs of %lld%s", (long long)p->extent[p->loop_count - 2],
                      (long long)p->extent[p->loop_count - 1],
                      step->variant == KIR_STREAM ? ", streaming stores" : "");
        break;
    }
    case KIR_FENCE:
        sb_puts(sb, "fence (after the streaming stores)");
        break;
    case KIR_TILE_STORE: {
        bcg_dtype t = ir->nodes[step->node]->dtype;
        if (step->variant == KIR_STREAM)
            snprintf(name, sizeof name, "bcg_mk_copy_nt");
        else
            kir_cast_name(t, t, name, sizeof name);
        sb_printf(sb, "call %s: output %d into ", name, kir_root_index(ir, step->node));
        format_access(sb, ir, step->operand, 0);
        sb_puts(sb, " + tile_start from ");
        format_argument(sb, ir, step->node);
        break;
    }
    case KIR_ROW_TILES:
        if (ir->row_groups > 0) { /* the rows form over two loops */
            sb_printf(sb, "tiles of %lld rows of %lld over loops i%d and i%d (%lld groups of "
                      "%lld rows)", (long long)step->size,
                      (long long)p->extent[p->loop_count - 1], step->loop - 1, step->loop,
                      (long long)ir->row_groups, (long long)p->extent[step->loop]);
            break;
        }
        sb_printf(sb, "tiles of %lld rows of %lld over loop i%d (%lld rows)",
                  (long long)step->size, (long long)p->extent[p->loop_count - 1], step->loop,
                  (long long)step->trips);
        break;
    case KIR_GATHER: {
        int inner = p->loop_count - 1, k = step->operand;
        if (ir->gathered_out && !step->by_count && !step->subtract)
            sb_printf(sb, "gather in%d into out", k - 1);
        else
            sb_printf(sb, "gather in%d into in%d_tile", k - 1, k - 1);
        if (step->by_count)
            sb_printf(sb, ": the tile's run, stride %lld", (long long)p->stride[k][inner]);
        else
            sb_printf(sb, ": rows of %lld, strides %lld and %lld%s",
                      (long long)(ir->row_calls ? ir->tile_columns : p->extent[inner]),
                      (long long)p->stride[k][inner - 1],
                      (long long)p->stride[k][inner],
                      step->subtract ? ", once (every row the same)" : "");
        break;
    }
    case KIR_VEX_CALL: /* leaves in the order of the function's pointer array */
        sb_printf(sb, "vex %s into %s from ", VEX_SYMBOL, ir->scatter ? "tile0" : "out");
        for (int j = 0; j < ir->vex->leaf_count; j++) {
            const expr_node *leaf = ir->nodes[ir->vex->leaf_node[j]];
            int k = leaf->operand + 1, inner = p->loop_count - 1;
            if (j)
                sb_puts(sb, ", ");
            if (ir->vex->rows && leaf->op == OP_OPERAND && !ir->value[ir->vex->leaf_node[j]].local &&
                !ir->gathered[k] && ir->row_groups > 0) /* from group to group too */
                sb_printf(sb, "in%d strides %lld, %lld and %lld", k - 1,
                          (long long)p->stride[k][inner - 2], (long long)p->stride[k][inner - 1],
                          (long long)p->stride[k][inner]);
            else if (ir->vex->rows && leaf->op == OP_OPERAND &&
                     !ir->value[ir->vex->leaf_node[j]].local &&
                     !ir->gathered[k]) /* the rows form: from row to row, then along the run */
                sb_printf(sb, "in%d strides %lld and %lld", k - 1,
                          (long long)p->stride[k][inner - 1], (long long)p->stride[k][inner]);
            else
                format_argument(sb, ir, ir->vex->leaf_node[j]);
        }
        if (ir->vex->rows)
            sb_puts(sb, ", row by row");
        if (ir->row_groups > 0)
            sb_printf(sb, " in %lld groups", (long long)ir->row_groups);
        sb_puts(sb, ir->vex->leaf_count ? ": " : "nothing: ");
        kir_format_tree(sb, ir->nodes[0]);
        sb_puts(sb, " fused in AVX2 registers");
        break;
    case KIR_ROW_CALLS:
        sb_puts(sb, "each row of the tile: one call per operation over its columns");
        break;
    case KIR_COLUMN_TILES:
        sb_printf(sb, "columns of %lld of the run of %lld", (long long)step->size,
                  (long long)p->extent[p->loop_count - 1]);
        break;
    case KIR_SMALL_CALL: /* the operands it reads, in the order it loads their pointers */
        sb_printf(sb, "small %s into out from ", VEX_SMALL_SYMBOL);
        for (int j = 0; j < ir->small->leaf_count; j++) {
            if (j)
                sb_puts(sb, ", ");
            sb_printf(sb, "in%d", ir->nodes[ir->small->leaf_node[j]]->operand);
        }
        sb_puts(sb, ir->small->leaf_count ? ": " : "nothing: ");
        kir_format_tree(sb, ir->nodes[0]);
        if (ir->small_flat)
            sb_printf(sb, ", %lld elements, rows of %lld as one stream: a loop of bodies of "
                      "%lld elements of straight-line AVX2 code (the flat form)",
                      (long long)step->size, (long long)p->extent[p->loop_count - 1],
                      (long long)ir->small->body);
        else
            sb_printf(sb, ", %lld element%s in %lld vector%s of straight-line AVX2 code",
                      (long long)step->size, step->size == 1 ? "" : "s", (long long)step->trips,
                      step->trips == 1 ? "" : "s");
        break;
    case KIR_SCATTER: {
        int inner = p->loop_count - 1;
        sb_printf(sb, "scatter tile0 into out: rows of %lld, strides %lld and %lld",
                  (long long)p->extent[inner], (long long)p->stride[0][inner - 1],
                  (long long)p->stride[0][inner]);
        break;
    }
    case KIR_ACC_INIT:
        if (other_acc_step(sb, ir, step))
            break;
        format_acc_init(sb, ir, "acc", ir->reduce, ir->lanes);
        break;
    case KIR_ACC_UPDATE: {
        bool read[BCG_MAX_OPERANDS] = {false}, first = true;
        if (other_acc_step(sb, ir, step))
            break;
        if (ir->value[0].local && ir->value[0].level >= ir->per_element) /* an element's */
            sb_printf(sb, "acc %s= %s", reduce_name(ir->reduce), ir->value[0].local);
        else
            direct_reads(ir, 0, true, read);
        if (!ir->value[0].local || ir->value[0].level < ir->per_element)
            sb_printf(sb, "acc %s= value", reduce_name(ir->reduce));
        for (int k = 1; k <= ir->input_count; k++)
            if (read[k - 1]) {
                sb_puts(sb, first ? " from " : ", ");
                format_access(sb, ir, k, 0);
                first = false;
            }
        break;
    }
    case KIR_ACC_TILE:
        if (other_acc_step(sb, ir, step))
            break;
        if (step->variant == KIR_ROWS && ir->lane_rows) {
            kir_accadd_rows_name(ir, name, sizeof name);
            sb_printf(sb, "call %s: each of the tile's accumulators takes the sum of %lld "
                      "elements (loop i%d) in %d partial sums, by the index mod %d, combined "
                      "in a fixed order, of ", name,
                      (long long)ir->p->extent[ir->p->loop_count - 1], ir->p->loop_count - 1,
                      REDUCE_LANES, REDUCE_LANES);
        } else if (step->variant == KIR_ROWS) {
            kir_accadd_rows_name(ir, name, sizeof name);
            sb_printf(sb, "call %s: the tile's accumulators take %lld rows (loop i%d) of ",
                      name, (long long)ir->p->extent[ir->p->loop_count - 1],
                      ir->p->loop_count - 1);
            if (ir->nodes[0]->op != OP_OPERAND) { /* computed in the same pass */
                tile_shape kind;
                sb_printf(sb, "%s(", kir_tile_family(ir, 0, &kind));
                format_access(sb, ir, ir->nodes[kir_child(ir, 0, 0)]->operand + 1, 0);
                sb_puts(sb, ", ");
                format_access(sb, ir, ir->nodes[kir_child(ir, 0, 1)]->operand + 1, 0);
                sb_puts(sb, ")");
                break;
            }
        } else if (ir->tile_loop < ir->p->loop_count - 1)
            sb_printf(sb, "call bcg_mk_accadd_%s: the tile's accumulators take the tile of ",
                      bcg_dtype_name(ir->nodes[0]->dtype));
        else
            sb_printf(sb, "call bcg_mk_sum16_%s: acc's %d partial sums take the tile of ",
                      bcg_dtype_name(ir->nodes[0]->dtype), ir->lanes);
        if (ir->nodes[0]->op == OP_OPERAND)
            format_access(sb, ir, ir->nodes[0]->operand + 1, 0);
        else
            sb_puts(sb, "tile0");
        break;
    case KIR_ACC_STORE:
        if (other_acc_step(sb, ir, step))
            break;
        format_acc_store(sb, ir, 0, "acc", ir->reduce, ir->reduce_count, ir->out_dtype,
                         ir->lanes);
        break;
    }
}

static const char *level_phrase(const kernel_ir *ir, int level, char *buf, size_t cap)
{
    if (level == 0)
        snprintf(buf, cap, "once per call");
    else if (level >= ir->per_element)
        snprintf(buf, cap, "per element");
    else
        snprintf(buf, cap, "per trip of loop i%d", level - 1);
    return buf;
}

void kir_dump(strbuf *sb, const kernel_ir *ir, int max_steps)
{
    char buf[64];
    sb_printf(sb, "form: %s (%s)\n", form_kind_name(ir->form.kind), ir->reason);
    sb_puts(sb, "value: ");
    format_value(sb, ir, 0, NULL, true);
    if (ir->form.kind == FORM_EMPTY)
        sb_printf(sb, " -> %s\n", bcg_dtype_name(ir->out_dtype));
    else
        sb_printf(sb, " -> %s, %s\n", bcg_dtype_name(ir->out_dtype),
                  level_phrase(ir, ir->value[0].level, buf, sizeof buf));
    for (int id = 0; id < ir->node_count; id++) {
        const kir_value *value = &ir->value[id];
        if (value->local && value->declares)
            sb_printf(sb, "hoisted: %s, %s\n", value->local,
                      level_phrase(ir, value->level, buf, sizeof buf));
    }
    for (int j = 0; ir->vex && j < ir->vex->float_hoisted; j++) { /* (vex.c mark_float_hoisted) */
        sb_puts(sb, "hoisted: ");
        kir_format_tree(sb, ir->nodes[ir->vex->float_hoist_node[j]]);
        sb_puts(sb, ", once a run, in a register of the fused function\n");
    }
    sb_printf(sb, "steps: %d\n", ir->step_count);
    int shown = ir->step_count < max_steps ? ir->step_count : max_steps;
    for (int i = 0; i < shown; i++) {
        for (int d = 0; d < ir->steps[i].depth; d++)
            sb_puts(sb, "  ");
        format_step(sb, ir, &ir->steps[i]);
        sb_putc(sb, '\n');
    }
    if (shown < ir->step_count)
        sb_printf(sb, "  ... %d more steps\n", ir->step_count - shown);
}

static void json_string(strbuf *sb, const char *text)
{
    sb_putc(sb, '"');
    for (const unsigned char *s = (const unsigned char *)text; *s; s++) {
        if (*s == '"' || *s == '\\')
            sb_printf(sb, "\\%c", *s);
        else if (*s < 0x20)
            sb_printf(sb, "\\u%04x", *s);
        else
            sb_putc(sb, (char)*s);
    }
    sb_putc(sb, '"');
}

void kir_dump_json(strbuf *sb, const kernel_ir *ir, int max_steps)
{
    char buf[64];
    strbuf text;
    sb_init(&text);
    sb_puts(sb, "{\"form\": ");
    json_string(sb, form_kind_name(ir->form.kind));
    sb_puts(sb, ", \"reason\": ");
    json_string(sb, ir->reason);
    format_value(&text, ir, 0, NULL, true);
    sb_puts(sb, ", \"value\": ");
    json_string(sb, text.data ? text.data : "");
    sb_puts(sb, ", \"hoisted\": [");
    bool first = true;
    for (int id = 0; id < ir->node_count; id++) {
        const kir_value *value = &ir->value[id];
        if (!value->local || !value->declares)
            continue;
        sb_puts(sb, first ? "{\"local\": " : ", {\"local\": ");
        json_string(sb, value->local);
        sb_printf(sb, ", \"level\": %d, \"where\": ", value->level);
        json_string(sb, level_phrase(ir, value->level, buf, sizeof buf));
        sb_putc(sb, '}');
        first = false;
    }
    sb_printf(sb, "], \"step_count\": %d, \"steps\": [", ir->step_count);
    int shown = ir->step_count < max_steps ? ir->step_count : max_steps;
    for (int i = 0; i < shown; i++) {
        text.len = 0;
        format_step(&text, ir, &ir->steps[i]);
        sb_printf(sb, "%s{\"op\": \"%s\", \"depth\": %d, \"text\": ", i ? ", " : "",
                  kir_op_names[ir->steps[i].op], ir->steps[i].depth);
        json_string(sb, text.data ? text.data : "");
        sb_putc(sb, '}');
    }
    sb_puts(sb, "]}");
    sb_free(&text);
}
