/* emit.c - the C printer of the kernel IR: turns what lower.c decided
 * into one hermetic C99 translation unit (templates/kernel.c.tmpl, with the
 * helper functions of templates/ops.c.tmpl) defining
 *
 *     void NAME(void *output, const void *const *inputs);
 *
 * or, with c->aot set, only the function with the AOT form's typed
 * signature (emit_aot.c).  This file writes the text of each step; the
 * templates hold the fixed C around them.
 *
 *   tree + plan
 *     -> fold_tree        (fold.c)     constants folded
 *     -> lower_kernel     (lower.c)    the kernel IR: form, values, steps
 *     -> print steps      (here)       each step as one or two lines, values
 *                                      through cexpr.c
 *     -> render           ops.c.tmpl into `helpers`, then kernel.c.tmpl
 *
 * The forms are functions of the IR: the JIT form is the plain form of an
 * IR that has microkernel steps (only lowered when c->microkernels), and the
 * AOT form is the same steps inside emit_aot.c's signature.
 *
 * Glossary: see kir.h.  Operand names from the user never reach the
 * source: operands are out, in0, in1, ... and the header comment shows the
 * expression regenerated from the tree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cprint.h"
#include "vex.h"

static bool is_float(bcg_dtype t) { return dtype_kind_of(t) == KIND_FLOAT; }
static bool is_signed(bcg_dtype t) { return dtype_kind_of(t) == KIND_INT; }

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

/* ---- steps: the body of the function ------------------------------------------ */

static tmpl_scope *new_step(cprinter *e, int depth, const char *kind)
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

/* One line of C at DEPTH from e->line (its failure reported). */
static void code_line(cprinter *e, int depth)
{
    if (e->line.failed) {
        cprint_fail_nomem(e);
        return;
    }
    const char *code = cprint_copy(e, e->line.data ? e->line.data : "");
    if (!code)
        return;
    tmpl_scope *step = new_step(e, depth, "is_code");
    tmpl_set_str(step, "code", code);
}

static void position_name(char *buf, size_t cap, int k)
{
    if (k == 0)
        snprintf(buf, cap, "out_pos");
    else
        snprintf(buf, cap, "in%d_pos", k - 1);
}

static void print_advance(cprinter *e, const kir_step *step)
{
    tmpl_scope *scope = new_step(e, step->depth, "is_advance");
    char name[24], magnitude[24];
    position_name(name, sizeof name, step->operand);
    tmpl_set_str(scope, "name", name);
    tmpl_set_str(scope, "operator", step->amount < 0 ? "-=" : "+=");
    snprintf(magnitude, sizeof magnitude, "%llu",
             step->amount < 0 ? 0ULL - (unsigned long long)step->amount
                              : (unsigned long long)step->amount);
    tmpl_set_str(scope, "amount", magnitude);
}

/* "NAME += COUNTER * STRIDE;" (or -=, and no factor for a stride of 1). */
static void print_move(cprinter *e, const kir_step *step)
{
    int64_t stride = step->amount;
    bool negative = (stride < 0) != step->subtract;
    unsigned long long amount =
        stride < 0 ? 0ULL - (unsigned long long)stride : (unsigned long long)stride;
    char name[24];
    position_name(name, sizeof name, step->operand);
    strbuf *line = &e->line;
    line->len = 0;
    sb_printf(line, "%s %s i%d_%s", name, negative ? "-=" : "+=", step->loop,
              step->by_count ? "count" : "block");
    if (amount != 1)
        sb_printf(line, " * %llu", amount);
    sb_putc(line, ';');
    code_line(e, step->depth);
}

/* A fused program's other root into its output operand:
 * in<k>[offset] = value; */
static void print_other_store(cprinter *e, const kir_step *step)
{
    strbuf *line = &e->line;
    bcg_dtype t = e->ir->nodes[step->node]->dtype; /* cast to the output's by the front end */
    line->len = 0;
    sb_printf(line, "in%d[", step->operand - 1);
    cexpr_put_offset(e, line, step->operand);
    sb_puts(line, "] = ");
    cexpr_store_open(e, line, t);
    cexpr_put_as(e, line, step->node, t);
    cexpr_store_close(line, t);
    sb_putc(line, ';');
    code_line(e, step->depth);
}

static void print_store(cprinter *e, const kir_step *step)
{
    strbuf *line = &e->line;
    for (int k = 0; k <= e->ir->input_count; k++)
        e->offset[k] = step->offsets[k];
    if (step->node >= 1) {
        print_other_store(e, step);
        return;
    }
    line->len = 0;
    cexpr_put_offset(e, line, 0);
    sb_putc(line, 0); /* keeps data non-NULL */
    if (line->failed) {
        cprint_fail_nomem(e);
        return;
    }
    size_t value_at = line->len;
    cexpr_store_open(e, line, e->ir->out_dtype);
    cexpr_put_as(e, line, 0, e->ir->out_dtype);
    cexpr_store_close(line, e->ir->out_dtype);
    if (line->failed) {
        cprint_fail_nomem(e);
        return;
    }
    tmpl_scope *scope = new_step(e, step->depth, NULL);
    tmpl_set_str(scope, "offset", line->data);
    tmpl_set_str(scope, "value", line->data + value_at);
}

/* The root (add_sat or sub_sat of two operands) at offsets and offsets + 1
 * by its pair helper: bcg_add_sat_pair_i16(&out[p], &in0[q], &in1[r]); */
static void print_store_pair(cprinter *e, const kir_step *step)
{
    const expr_node *root = e->ir->nodes[0];
    bool add = root->op == OP_ADD_SAT;
    for (int k = 0; k <= e->ir->input_count; k++)
        e->offset[k] = step->offsets[k];
    e->need[add ? HELPER_ADD_SAT_PAIR : HELPER_SUB_SAT_PAIR][root->dtype] = true;
    e->need[add ? HELPER_ADD_SAT : HELPER_SUB_SAT][root->dtype] = true;
    strbuf *line = &e->line;
    line->len = 0;
    sb_printf(line, "bcg_%s_pair_%s(&out[", add ? "add_sat" : "sub_sat",
              bcg_dtype_name(root->dtype));
    cexpr_put_offset(e, line, 0);
    for (int k = 0; k < 2; k++) {
        int operand = e->ir->nodes[kir_child(e->ir, 0, k)]->operand;
        sb_printf(line, "], &in%d[", operand);
        cexpr_put_offset(e, line, operand + 1);
    }
    sb_puts(line, "]);");
    code_line(e, step->depth);
}

static void print_local(cprinter *e, const kir_step *step)
{
    strbuf *line = &e->line;
    for (int k = 0; k <= e->ir->input_count; k++)
        e->offset[k] = 0;
    line->len = 0;
    cexpr_put_node(e, line, step->node);
    if (line->failed) {
        cprint_fail_nomem(e);
        return;
    }
    tmpl_scope *scope = new_step(e, step->depth, "is_local");
    tmpl_set_str(scope, "ctype", cexpr_local_ctype(e, e->ir->nodes[step->node]->dtype));
    tmpl_set_str(scope, "name", e->ir->value[step->node].local);
    tmpl_set_str(scope, "value", line->data);
}

/* A value several roots of a fused program share, once for the element at
 * the step's offsets. */
static void print_element_local(cprinter *e, const kir_step *step)
{
    strbuf *line = &e->line;
    for (int k = 0; k <= e->ir->input_count; k++)
        e->offset[k] = step->offsets[k];
    line->len = 0;
    cexpr_put_node(e, line, step->node);
    if (line->failed) {
        cprint_fail_nomem(e);
        return;
    }
    tmpl_scope *scope = new_step(e, step->depth, "is_local");
    tmpl_set_str(scope, "ctype", cexpr_value_ctype(e->ir->nodes[step->node]->dtype));
    tmpl_set_str(scope, "name", e->ir->value[step->node].local);
    tmpl_set_str(scope, "value", line->data);
}

/* ---- microkernel steps (the JIT form only) -----------------------------------------
 *
 * Each microkernel called is declared at block scope just before the tile
 * loop, so the unit still needs no header; its ABI is at the top of
 * runtime/microkernels.c. */

static void print_declare(cprinter *e, const kir_step *step)
{
    const kernel_ir *ir = e->ir;
    tile_shape kind;
    char name[48];
    if (step->node < 0) { /* the gather (scatter) kernel of an element size */
        bcg_dtype t = step->operand ? e->c->operands[step->operand - 1].dtype : ir->out_dtype;
        kir_gather_name(t, step->operand == 0, name, sizeof name);
        e->line.len = 0;
        sb_printf(&e->line, step->operand ? "void %s(void *, const void *, long, long, long, long);"
                                          : "void %s(void *, long, long, const void *, long, long);",
                  name);
        code_line(e, step->depth);
        return;
    }
    const expr_node *node = ir->nodes[step->node];
    bool leaf = node->op == OP_OPERAND || node->op == OP_LITERAL; /* a root copied */
    if (step->convert || node->op == OP_CAST || leaf) { /* a cast kernel */
        int k = step->convert ? step->arg : 0;
        bcg_dtype from = leaf ? node->dtype : ir->nodes[kir_child(ir, step->node, k)]->dtype;
        bcg_dtype to = step->convert ? kir_tile_argument_dtype(ir, step->node, k) : node->dtype;
        kir_cast_name(from, to, name, sizeof name);
        e->line.len = 0;
        sb_printf(&e->line, "void %s(%s *, const %s *, long, long);", name, dtype_ctype(to),
                  dtype_ctype(from));
        code_line(e, step->depth);
        return;
    }
    kir_tile_family(ir, step->node, &kind);
    kir_microkernel_name(ir, step->node, step->variant, name, sizeof name);
    const char *type = dtype_ctype(kir_tile_dtype(ir, step->node));
    const char *out_type = kind == TILE_COMPARE || kind == TILE_TEST ? "bcg_u8" : type;
    strbuf *line = &e->line;
    line->len = 0;
    if (step->variant == KIR_ROWS)
        sb_printf(line, "void %s(%s *, long, const %s *, long, long, const %s *, long, long, "
                  "long, long, long);", name, out_type, type, type);
    else if (kind == TILE_WHERE)
        sb_printf(line, "void %s(%s *, const bcg_u8 *, long, const %s *, long, "
                  "const %s *, long, long);", name, type, type, type);
    else if (kind == TILE_UNARY || kind == TILE_TEST)
        sb_printf(line, "void %s(%s *, const %s *, long, long);", name, out_type, type);
    else
        sb_printf(line, "void %s(%s *, const %s *, long, const %s *, long, long);", name,
                  out_type, type, type);
    code_line(e, step->depth);
}

/* "const T tile_literalID = VALUE;": literal ID as the variable whose
 * address a microkernel call takes (stride 0). */
static void print_tile_literal(cprinter *e, const kir_step *step)
{
    const expr_node *n = e->ir->nodes[step->node];
    strbuf *line = &e->line;
    line->len = 0;
    sb_printf(line, "const %s tile_literal%d = ", dtype_ctype(n->dtype), step->node);
    if (n->dtype == BCG_F16 || n->dtype == BCG_BF16) /* the bits, as memory holds them */
        sb_printf(line, "0x%04xU", n->dtype == BCG_F16 ? bcg_f16_from_f64(n->value.f)
                                                       : bcg_bf16_from_f32((float)n->value.f));
    else
        cexpr_put_literal(e, line, n);
    sb_putc(line, ';');
    code_line(e, step->depth);
}

static void print_tile_loop(cprinter *e, const kir_step *step)
{
    long long extent = (long long)step->trips, tile = (long long)step->size;
    strbuf *line = &e->line;
    line->len = 0;
    sb_printf(line, "for (long tile_start = 0; tile_start < %lld; tile_start += %lld) {",
              extent, tile);
    code_line(e, step->depth);
    line->len = 0;
    sb_printf(line, "const long tile_count = %lld - tile_start < %lld ? %lld - tile_start : %lld;",
              extent, tile, extent, tile);
    code_line(e, step->depth + 1);
}

/* Where value ID's tile is: tile<ID>, or the output a root writes
 * directly (kir_root_writes_output) at the tile. */
static void put_tile_source(cprinter *e, strbuf *sb, int id)
{
    const kernel_ir *ir = e->ir;
    if (!kir_root_writes_output(ir, id)) {
        sb_printf(sb, "tile%d", id);
    } else if (id == 0) {
        sb_puts(sb, ir->has_position[0] ? "out + out_pos + tile_start" : "out + tile_start");
    } else {
        int k = ir->root_operand[kir_root_index(ir, id)];
        sb_printf(sb, "in%d + ", k - 1);
        if (ir->has_position[k])
            sb_printf(sb, "in%d_pos + ", k - 1);
        sb_puts(sb, "tile_start");
    }
}

/* ", V" as a call's argument, parenthesised when negative ("(-3)"). */
static void put_signed_argument(strbuf *sb, int64_t v)
{
    sb_printf(sb, v < 0 ? ", (%lld)" : ", %lld", (long long)v);
}

/* " + COUNTER * STRIDE" (or " - ..."), nothing for a stride of 0. */
static void put_scaled(strbuf *sb, const char *counter, int64_t stride)
{
    if (stride == 1)
        sb_printf(sb, " + %s", counter);
    else if (stride > 0)
        sb_printf(sb, " + %s * %lld", counter, (long long)stride);
    else if (stride < 0)
        sb_printf(sb, " - %s * %llu", counter, 0ULL - (unsigned long long)stride);
}

/* "in0 + in0_pos" (or "out + out_pos"): plan operand K at its position. */
static void put_base(const kernel_ir *ir, strbuf *sb, int k)
{
    if (k == 0)
        sb_puts(sb, "out");
    else
        sb_printf(sb, "in%d", k - 1);
    if (ir->has_position[k]) {
        if (k == 0)
            sb_puts(sb, " + out_pos");
        else
            sb_printf(sb, " + in%d_pos", k - 1);
    }
}

/* The 2-D tile's first element of plan operand K. */
/* A gathered tile's row in a call per row (kernel_ir.row_calls): the
 * KIR_ROW_CALLS loop's tile_row. */
static void put_tile_row(const kernel_ir *ir, strbuf *sb)
{
    if (ir->row_calls)
        sb_puts(sb, " + tile_row * column_count");
}

/* Operand K's first element in the row (and with calls per row, the
 * column) of the tile. */
static void put_row_start(const kernel_ir *ir, strbuf *sb, int k)
{
    put_base(ir, sb, k);
    put_scaled(sb, "row_start", ir->p->stride[k][ir->tile_loop]);
    if (ir->row_calls)
        put_scaled(sb, "column_start", ir->p->stride[k][ir->p->loop_count - 1]);
}

/* The argument pair "pointer, stride" of value ID in a tile call. */
static void put_tile_argument(cprinter *e, strbuf *sb, int id)
{
    const kernel_ir *ir = e->ir;
    const expr_node *n = ir->nodes[id];
    if (ir->value[id].local) { /* hoisted: one value for the whole run */
        sb_printf(sb, "&%s, 0", ir->value[id].local);
        return;
    }
    if (n->op == OP_LITERAL) {
        sb_printf(sb, "&tile_literal%d, 0", id);
        return;
    }
    if (n->op != OP_OPERAND) {
        put_tile_source(e, sb, kir_tile_same(ir, id));
        sb_puts(sb, ", 1");
        return;
    }
    int k = n->operand + 1;
    if (ir->gathered[k]) {
        sb_printf(sb, "in%d_tile", n->operand);
        put_tile_row(ir, sb);
        sb_puts(sb, ", 1");
        return;
    }
    if (ir->tiles2d) { /* contiguous over the tile, or one value (lower.c, "2-D tiles") */
        put_row_start(ir, sb, k);
        /* (a call per row: one value per row too) */
        int level = ir->row_calls ? ir->p->loop_count - 1 : ir->tile_loop;
        sb_puts(sb, ir->p->stride[k][level] == 0 ? ", 0" : ", 1");
        return;
    }
    long long stride = (long long)ir->p->stride[k][ir->tile_loop];
    sb_printf(sb, "in%d", n->operand);
    if (ir->has_position[k])
        sb_printf(sb, " + in%d_pos", n->operand);
    if (stride == 1)
        sb_puts(sb, " + tile_start");
    else if (stride > 0)
        sb_printf(sb, " + tile_start * %lld", stride);
    else if (stride < 0)
        sb_printf(sb, " - tile_start * %llu", 0ULL - (unsigned long long)stride);
    put_signed_argument(sb, stride);
}

static void print_tile_call(cprinter *e, const kir_step *step, int64_t tile)
{
    const kernel_ir *ir = e->ir;
    int id = step->node;
    const expr_node *n = ir->nodes[id];
    strbuf *line = &e->line;
    char name[48];
    /* a reduction's root goes to tile0, and a root that is scattered; a
     * fused output's root to its output unless its copy streams */
    bool to_out = kir_root_writes_output(ir, id) && !(id == 0 && ir->scatter);
    if (!to_out) {
        line->len = 0;
        sb_printf(line, "%s tile%d[%lld];", dtype_ctype(n->dtype), id, (long long)tile);
        code_line(e, step->depth);
    }
    kir_microkernel_name(ir, id, step->variant, name, sizeof name);
    line->len = 0;
    sb_printf(line, "%s(", name);
    if (to_out && ir->tiles2d)
        put_row_start(ir, line, 0);
    else if (to_out)
        put_tile_source(e, line, id);
    else
        sb_printf(line, "tile%d", id);
    if (n->op == OP_OPERAND || n->op == OP_LITERAL) { /* a root copied or filled in */
        sb_puts(line, ", ");
        put_tile_argument(e, line, id);
    }
    for (int k = 0; k < n->arg_count; k++) {
        sb_puts(line, ", ");
        if (kir_tile_converts(ir, id, k))
            sb_printf(line, "tile%d_%d, 1", id, k);
        else
            put_tile_argument(e, line, kir_child(ir, id, k));
    }
    sb_puts(line, ", tile_count);");
    code_line(e, step->depth);
}

/* Leaf ID's first element in the tile, for the fused function (vex.c): a
 * hoisted local's address, a gathered tile, a 2-D tile's first row, or
 * the 1-D tile's start (the operand contiguous, strided or one value). */
static void put_vex_pointer(cprinter *e, strbuf *sb, int id)
{
    const kernel_ir *ir = e->ir;
    const expr_node *n = ir->nodes[id];
    int k = n->operand + 1;
    if (ir->value[id].local)
        sb_printf(sb, "&%s", ir->value[id].local);
    else if (ir->gathered[k]) {
        sb_printf(sb, "in%d_tile", n->operand);
        put_tile_row(ir, sb);
    } else if (ir->tiles2d)
        put_row_start(ir, sb, k);
    else { /* (read in place with its stride: vex.c's strided leaves) */
        put_base(ir, sb, k);
        put_scaled(sb, "tile_start", ir->p->stride[k][ir->tile_loop]);
    }
}

/* The tile's whole tree by its fused vector function (kernel_ir.vex),
 * declared here as the microkernels are; jit.c binds the name. */
static void print_vex_call(cprinter *e, const kir_step *step, int64_t tile)
{
    const kernel_ir *ir = e->ir;
    const vex_function *f = ir->vex;
    strbuf *line = &e->line;
    bool to_out = kir_root_writes_output(ir, 0) && !ir->scatter;
    line->len = 0;
    sb_puts(line, f->rows ? "void " VEX_SYMBOL "(long, void *, const void *const *, long);"
                          : "void " VEX_SYMBOL "(long, void *, const void *const *);");
    code_line(e, step->depth);
    if (!to_out) {
        line->len = 0;
        sb_printf(line, "%s tile0[%lld];", dtype_ctype(ir->nodes[0]->dtype), (long long)tile);
        code_line(e, step->depth);
    }
    if (f->leaf_count > 0) {
        line->len = 0;
        sb_printf(line, "const void *const vex_in[%d] = {", f->leaf_count);
        for (int j = 0; j < f->leaf_count; j++) {
            if (j)
                sb_puts(line, ", ");
            put_vex_pointer(e, line, f->leaf_node[j]);
        }
        sb_puts(line, "};");
        code_line(e, step->depth);
    }
    line->len = 0;
    if (f->rows) /* the rows form: row_count runs */
        sb_printf(line, VEX_SYMBOL "(%lld, ", (long long)ir->p->extent[ir->p->loop_count - 1]);
    else
        sb_puts(line, VEX_SYMBOL "(tile_count, ");
    if (to_out && ir->tiles2d)
        put_row_start(ir, line, 0);
    else if (to_out)
        put_tile_source(e, line, 0);
    else
        sb_puts(line, "tile0");
    sb_puts(line, f->leaf_count > 0 ? ", vex_in" : ", 0");
    sb_puts(line, f->rows ? ", row_count);" : ");");
    code_line(e, step->depth);
}

/* The whole kernel by its straight-line vector function (kernel_ir.small),
 * of the kernel's own signature: jit.c makes that code the kernel itself. */
static void print_small_call(cprinter *e, const kir_step *step)
{
    strbuf *line = &e->line;
    line->len = 0;
    sb_puts(line, "void " VEX_SMALL_SYMBOL "(void *, const void *const *);");
    code_line(e, step->depth);
    line->len = 0;
    sb_puts(line, VEX_SMALL_SYMBOL "(out, inputs);");
    code_line(e, step->depth);
}

/* A fused program's other root, a tile into its output by the copy kernel
 * (bcg_mk_cast_T_T): from the root's tile, the tile it shares, or the
 * operand or literal it is; the output is contiguous along the tiles. */
static void print_tile_store(cprinter *e, const kir_step *step)
{
    const kernel_ir *ir = e->ir;
    bcg_dtype t = ir->nodes[step->node]->dtype;
    const char *type = dtype_ctype(t);
    char name[48];
    kir_cast_name(t, t, name, sizeof name);
    strbuf *line = &e->line;
    int k = step->operand;
    if (step->variant == KIR_STREAM) { /* bytes past the caches, as the _nt kernels */
        line->len = 0;
        sb_puts(line, "void bcg_mk_copy_nt(void *, const void *, long);");
        code_line(e, step->depth);
        line->len = 0;
        sb_printf(line, "bcg_mk_copy_nt(in%d + ", k - 1);
        if (ir->has_position[k])
            sb_printf(line, "in%d_pos + ", k - 1);
        sb_puts(line, "tile_start, ");
        put_tile_source(e, line, kir_tile_same(ir, step->node));
        sb_printf(line, ", tile_count * %d);", (int)bcg_dtype_size(t));
        code_line(e, step->depth);
        return;
    }
    line->len = 0;
    sb_printf(line, "void %s(%s *, const %s *, long, long);", name, type, type);
    code_line(e, step->depth);
    line->len = 0;
    sb_printf(line, "%s(in%d + ", name, k - 1);
    if (ir->has_position[k])
        sb_printf(line, "in%d_pos + ", k - 1);
    sb_puts(line, "tile_start, ");
    put_tile_argument(e, line, step->node);
    sb_puts(line, ", tile_count);");
    code_line(e, step->depth);
}

/* Argument ARG of node NODE converted into its own temporary,
 * tile<node>_<arg>, by a cast kernel. */
static void print_tile_convert(cprinter *e, const kir_step *step, int64_t tile)
{
    const kernel_ir *ir = e->ir;
    int child = kir_child(ir, step->node, step->arg);
    bcg_dtype to = kir_tile_argument_dtype(ir, step->node, step->arg);
    char name[48];
    kir_cast_name(ir->nodes[child]->dtype, to, name, sizeof name);
    strbuf *line = &e->line;
    line->len = 0;
    sb_printf(line, "%s tile%d_%d[%lld];", dtype_ctype(to), step->node, step->arg,
              (long long)tile);
    code_line(e, step->depth);
    line->len = 0;
    sb_printf(line, "%s(tile%d_%d, ", name, step->node, step->arg);
    put_tile_argument(e, line, child);
    sb_puts(line, ", tile_count);");
    code_line(e, step->depth);
}

/* ---- 2-D tiles, gathers and scatters ------------------------------------------------ */

/* The plan operand whose lines the tiles of calls per row should start on:
 * a gathered input contiguous along the tiles' rows whose line is a tile's
 * rows, or 0 for none. */
static int row_tiles_aligned_to(const cprinter *e, long long rows)
{
    const kernel_ir *ir = e->ir;
    if (!ir->row_calls)
        return 0;
    for (int k = 1; k <= ir->input_count; k++)
        if (ir->gathered[k] && ir->p->stride[k][ir->tile_loop] == 1 &&
            rows * (long long)bcg_dtype_size(e->c->operands[k - 1].dtype) == 64)
            return k;
    return 0;
}

static void print_row_tiles(cprinter *e, const kir_step *step)
{
    long long extent = (long long)step->trips, rows = (long long)step->size;
    long long run = (long long)e->ir->p->extent[e->ir->p->loop_count - 1];
    strbuf *line = &e->line;
    line->len = 0;
    int k = row_tiles_aligned_to(e, rows);
    if (k) {
        /* the first tile ends where the input's first column reaches a
         * line: every later tile reads one whole line of each column, where
         * a tile across two lines read both (an input at an address 16
         * bytes into a line, as NumPy's large arrays are) */
        size_t size = bcg_dtype_size(e->c->operands[k - 1].dtype);
        sb_printf(line, "for (long row_start = 0, row_next = %lld - (long)((unsigned long long)"
                  "(const char *)(", rows);
        put_base(e->ir, line, k);
        put_scaled(line, "column_start", e->ir->p->stride[k][e->ir->p->loop_count - 1]);
        sb_printf(line, ") / %zu %% %lld); row_start < %lld; row_start = row_next, row_next += "
                  "%lld) {", size, rows, extent, rows);
        code_line(e, step->depth);
        line->len = 0;
        sb_printf(line, "const long row_count = (row_next < %lld ? row_next : %lld) - row_start;",
                  extent, extent);
        code_line(e, step->depth + 1);
        return;
    }
    sb_printf(line, "for (long row_start = 0; row_start < %lld; row_start += %lld) {", extent,
              rows);
    code_line(e, step->depth);
    line->len = 0;
    sb_printf(line, "const long row_count = %lld - row_start < %lld ? %lld - row_start : %lld;",
              extent, rows, extent, rows);
    code_line(e, step->depth + 1);
    if (e->ir->row_calls) /* (each row's calls have their own) */
        return;
    line->len = 0;
    sb_printf(line, "const long tile_count = row_count * %lld;", run);
    code_line(e, step->depth + 1);
}

/* A 2-D tile's rows one at a time (kernel_ir.row_calls): row_start and
 * tile_count, which the calls inside read, are the row's own there. */
static void print_row_calls(cprinter *e, const kir_step *step)
{
    strbuf *line = &e->line;
    line->len = 0;
    sb_puts(line, "const long tile_first_row = row_start;");
    code_line(e, step->depth);
    line->len = 0;
    sb_puts(line, "for (long tile_row = 0; tile_row < row_count; tile_row++) {");
    code_line(e, step->depth);
    line->len = 0;
    sb_puts(line, "const long row_start = tile_first_row + tile_row;");
    code_line(e, step->depth + 1);
    line->len = 0;
    sb_puts(line, "const long tile_count = column_count;");
    code_line(e, step->depth + 1);
}

/* The run in columns (kernel_ir.row_calls), each gathered and called. */
static void print_column_tiles(cprinter *e, const kir_step *step)
{
    long long run = (long long)e->ir->p->extent[e->ir->p->loop_count - 1];
    long long columns = (long long)step->size;
    strbuf *line = &e->line;
    line->len = 0;
    sb_printf(line, "for (long column_start = 0; column_start < %lld; column_start += %lld) {",
              run, columns);
    code_line(e, step->depth);
    line->len = 0;
    sb_printf(line,
              "const long column_count = %lld - column_start < %lld ? %lld - column_start : %lld;",
              run, columns, run, columns);
    code_line(e, step->depth + 1);
}

/* in<k>_tile declared, then filled by the gather kernel. */
static void print_gather(cprinter *e, const kir_step *step)
{
    const kernel_ir *ir = e->ir;
    const plan *p = ir->p;
    int k = step->operand, inner = p->loop_count - 1;
    bcg_dtype t = e->c->operands[k - 1].dtype;
    char name[48];
    kir_gather_name(t, false, name, sizeof name);
    strbuf *line = &e->line;
    line->len = 0;
    if (ir->gathered_out && !step->by_count && !step->subtract) { /* the output's rows */
        sb_printf(line, "%s(", name);
        put_row_start(ir, line, 0);
        sb_puts(line, ", ");
    } else {
        sb_printf(line, "%s in%d_tile[%lld];", dtype_ctype(t), k - 1, (long long)step->size);
        code_line(e, step->depth);
        line->len = 0;
        sb_printf(line, "%s(in%d_tile, ", name, k - 1);
    }
    if (step->by_count) { /* one run of tile_count elements */
        put_base(ir, line, k);
        put_scaled(line, "tile_start", p->stride[k][inner]);
        sb_printf(line, p->stride[k][inner] < 0 ? ", 1, tile_count, 0, (%lld));"
                                                : ", 1, tile_count, 0, %lld);",
                  (long long)p->stride[k][inner]);
    } else {
        int64_t outer = p->stride[k][inner - 1], along = p->stride[k][inner];
        if (step->subtract) /* the same rows every tile: the first tile's */
            put_base(ir, line, k);
        else
            put_row_start(ir, line, k);
        if (step->subtract)
            sb_printf(line, ", %lld", (long long)ir->tile_rows);
        else
            sb_puts(line, ", row_count");
        if (ir->row_calls) /* a column of the tile */
            sb_puts(line, ", column_count");
        else
            sb_printf(line, ", %lld", (long long)p->extent[inner]);
        put_signed_argument(line, outer);
        put_signed_argument(line, along);
        sb_puts(line, ");");
    }
    code_line(e, step->depth);
}

static void print_scatter(cprinter *e, const kir_step *step)
{
    const kernel_ir *ir = e->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    char name[48];
    kir_gather_name(ir->out_dtype, true, name, sizeof name);
    strbuf *line = &e->line;
    line->len = 0;
    sb_printf(line, "%s(", name);
    put_row_start(ir, line, 0);
    put_signed_argument(line, p->stride[0][inner - 1]);
    put_signed_argument(line, p->stride[0][inner]);
    sb_printf(line, ", tile0, row_count, %lld);", (long long)p->extent[inner]);
    code_line(e, step->depth);
}

/* The root's _rows call over the two innermost loops. */
static void print_rows_call(cprinter *e, const kir_step *step)
{
    const kernel_ir *ir = e->ir;
    const plan *p = ir->p;
    int inner = p->loop_count - 1;
    char name[48];
    kir_microkernel_name(ir, 0, KIR_ROWS, name, sizeof name);
    strbuf *line = &e->line;
    line->len = 0;
    sb_printf(line, "%s(%s, %lld", name, ir->has_position[0] ? "out + out_pos" : "out",
              (long long)p->stride[0][inner - 1]);
    for (int k = 0; k < 2; k++) {
        int id = kir_child(ir, 0, k);
        const expr_node *n = ir->nodes[id];
        sb_puts(line, ", ");
        if (n->op == OP_LITERAL) {
            sb_printf(line, "&tile_literal%d, 0, 0", id);
            continue;
        }
        int o = n->operand + 1;
        sb_printf(line, "in%d", n->operand);
        if (ir->has_position[o])
            sb_printf(line, " + in%d_pos", n->operand);
        put_signed_argument(line, p->stride[o][inner]);
        put_signed_argument(line, p->stride[o][inner - 1]);
    }
    sb_printf(line, ", %lld, %lld, %d);", (long long)p->extent[inner],
              (long long)p->extent[inner - 1], step->variant == KIR_STREAM ? 1 : 0);
    code_line(e, step->depth);
}

/* ---- blocks ------------------------------------------------------------------------ */

static void print_block_loop(cprinter *e, const kir_step *step)
{
    long long extent = (long long)step->trips, side = (long long)step->size;
    int l = step->loop;
    strbuf *line = &e->line;
    line->len = 0;
    sb_printf(line, "for (long i%d_block = 0; i%d_block < %lld; i%d_block += %lld) {", l, l,
              extent, l, side);
    code_line(e, step->depth);
    line->len = 0;
    sb_printf(line, "const long i%d_count = %lld - i%d_block < %lld ? %lld - i%d_block : %lld;",
              l, extent, l, side, extent, l, side);
    code_line(e, step->depth + 1);
}

static void print_count_loop(cprinter *e, const kir_step *step)
{
    int l = step->loop;
    strbuf *line = &e->line;
    line->len = 0;
    sb_printf(line, "for (long i%d = 0; i%d < i%d_count; i%d++) {", l, l, l, l);
    code_line(e, step->depth);
}

/* ---- reductions --------------------------------------------------------------------- */

acc_kind reduce_acc_kind(int reduce, bcg_dtype value)
{
    bool is_float = dtype_kind_of(value) == KIND_FLOAT;
    switch (reduce) {
    case BCG_REDUCE_SUM:
        return !is_float ? ACC_WRAP : value == BCG_F64 ? ACC_COMPENSATED : ACC_DOUBLE;
    case BCG_REDUCE_PROD:
        return is_float ? ACC_DOUBLE : ACC_WRAP;
    case BCG_REDUCE_MEAN:
        return is_float && value != BCG_F64 ? ACC_DOUBLE : ACC_COMPENSATED;
    case BCG_REDUCE_MIN:
    case BCG_REDUCE_MAX:
        return ACC_EXTREME;
    default:
        return ACC_LOGICAL;
    }
}

/* Whether the reduction keeps a block of accumulators, one per element of
 * a tile along a kept loop (lower.c, block_reduce_chosen). */
static bool acc_blocked(const kernel_ir *ir)
{
    return ir->reduce && ir->tiled && ir->tile_loop < ir->p->loop_count - 1;
}

/* Which reduction an ACC step is: the kernel's own (accumulator acc) or
 * another root's of a fused program (acc<j>, kernel_ir.root_reduce). */
typedef struct acc_of {
    char name[16];
    int root, operand;  /* its value and its output's plan operand */
    int reduce, lanes;
    bcg_dtype value, reduced, out;
    int64_t count;
} acc_of;

static acc_of acc_of_step(const kernel_ir *ir, const kir_step *step)
{
    acc_of a = {.name = "acc", .reduce = ir->reduce, .lanes = ir->lanes,
                .value = ir->nodes[0]->dtype, .reduced = ir->reduced_dtype,
                .out = ir->out_dtype, .count = ir->reduce_count};
    int j = ir->root_reduce && step->node > 0 ? kir_root_index(ir, step->node) : 0;
    if (j > 0) {
        const fuse_reduction *r = &ir->root_reduce[j];
        snprintf(a.name, sizeof a.name, "acc%d", j);
        a.root = step->node;
        a.operand = step->operand;
        a.reduce = r->reduce;
        a.lanes = r->lanes;
        a.value = ir->nodes[step->node]->dtype;
        a.reduced = r->reduced_dtype;
        a.out = r->out_dtype;
        a.count = r->count;
    }
    return a;
}

/* A block of accumulators: declared for a whole tile, zeroed for this one. */
/* "for (HEAD) { NAME[NAME_i] = 0.0; }" (NAME_c too when COMPENSATED): an
 * array of accumulators zeroed by a loop, since an initialiser makes tcc
 * call memset. */
static void print_acc_zeroing_of(cprinter *e, int depth, const char *head, bool compensated,
                                 const char *name)
{
    strbuf *line = &e->line;
    line->len = 0;
    sb_printf(line, "for (%s) {", head);
    code_line(e, depth);
    line->len = 0;
    if (compensated)
        sb_printf(line, "%s[%s_i] = 0.0; %s_c[%s_i] = 0.0;", name, name, name, name);
    else
        sb_printf(line, "%s[%s_i] = 0.0;", name, name);
    code_line(e, depth + 1);
    line->len = 0;
    sb_putc(line, '}');
    code_line(e, depth);
}

static void print_acc_block_init(cprinter *e, const kir_step *step, int64_t tile)
{
    const acc_of a = acc_of_step(e->ir, step);
    const char *acc = a.name;
    bool compensated = reduce_acc_kind(a.reduce, a.value) == ACC_COMPENSATED;
    strbuf *line = &e->line;
    line->len = 0;
    if (compensated)
        sb_printf(line, "double %s[%lld]; double %s_c[%lld];", acc, (long long)tile, acc,
                  (long long)tile);
    else
        sb_printf(line, "double %s[%lld];", acc, (long long)tile);
    code_line(e, step->depth);
    char head[128];
    snprintf(head, sizeof head, "long %s_i = 0; %s_i < tile_count; %s_i++", acc, acc, acc);
    print_acc_zeroing_of(e, step->depth, head, compensated, acc);
}

/* The accumulator's declaration at its identity. */
static void print_acc_init(cprinter *e, const kir_step *step)
{
    const acc_of a = acc_of_step(e->ir, step);
    const char *acc = a.name;
    bcg_dtype t = a.value;
    bool product = a.reduce == BCG_REDUCE_PROD, maximum = a.reduce == BCG_REDUCE_MAX;
    strbuf *line = &e->line;
    line->len = 0;
    switch (reduce_acc_kind(a.reduce, t)) {
    case ACC_WRAP:
        sb_printf(line, "unsigned long long %s = %s;", acc, product ? "1ULL" : "0ULL");
        break;
    case ACC_DOUBLE:
        if (a.lanes > 1) /* a loop: tcc would call memset for an initialiser */
            sb_printf(line, "double %s[%d];", acc, a.lanes);
        else
            sb_printf(line, "double %s = %s;", acc, product ? "1.0" : "0.0");
        break;
    case ACC_COMPENSATED:
        if (a.lanes > 1)
            sb_printf(line, "double %s[%d]; double %s_c[%d];", acc, a.lanes, acc, a.lanes);
        else
            sb_printf(line, "double %s = 0.0, %s_c = 0.0;", acc, acc);
        break;
    case ACC_EXTREME: {
        sb_printf(line, "%s %s = ", cexpr_local_ctype(e, t), acc);
        if (t == BCG_BOOL) {
            if (e->c->aot) /* a bool (cexpr.c: essential types) */
                sb_puts(line, maximum ? "false" : "true");
            else
                sb_puts(line, maximum ? "0" : "1");
        } else if (t == BCG_F32 || dtype_is_half(t)) { /* f16, bf16: float values */
            t = BCG_F32;
            e->need[HELPER_FROM_BITS][t] = true;
            sb_printf(line, "bcg_f32_from_bits(%s)", maximum ? "0xff800000U" : "0x7f800000U");
        } else if (t == BCG_F64) {
            e->need[HELPER_FROM_BITS][t] = true;
            sb_printf(line, "bcg_f64_from_bits(%s)",
                      maximum ? "0xfff0000000000000ULL" : "0x7ff0000000000000ULL");
        } else {
            static const char *const lowest[BCG_DTYPE_COUNT] = {
                [BCG_I8] = "(-128)", [BCG_I16] = "(-32768)", [BCG_I32] = "((-2147483647) - 1)",
                [BCG_I64] = "((-9223372036854775807LL) - 1)", [BCG_U8] = "0", [BCG_U16] = "0",
                [BCG_U32] = "0U", [BCG_U64] = "0ULL"};
            static const char *const highest[BCG_DTYPE_COUNT] = {
                [BCG_I8] = "127", [BCG_I16] = "32767", [BCG_I32] = "2147483647",
                [BCG_I64] = "9223372036854775807LL", [BCG_U8] = "255", [BCG_U16] = "65535",
                [BCG_U32] = "4294967295U", [BCG_U64] = "18446744073709551615ULL"};
            sb_puts(line, maximum ? lowest[t] : highest[t]);
        }
        sb_putc(line, ';');
        break;
    }
    case ACC_LOGICAL:
        if (e->c->aot) /* a bool (cexpr.c: essential types) */
            sb_printf(line, "bool %s = %s;", acc, a.reduce == BCG_REDUCE_ALL ? "true" : "false");
        else
            sb_printf(line, "int %s = %d;", acc, a.reduce == BCG_REDUCE_ALL);
        break;
    }
    code_line(e, step->depth);
    if (a.lanes > 1) {
        char head[128];
        snprintf(head, sizeof head, "int %s_i = 0; %s_i < %d; %s_i++", acc, acc, a.lanes, acc);
        print_acc_zeroing_of(e, step->depth, head,
                             reduce_acc_kind(a.reduce, t) == ACC_COMPENSATED, acc);
    }
}

static void print_acc_update(cprinter *e, const kir_step *step)
{
    const kernel_ir *ir = e->ir;
    const acc_of a = acc_of_step(ir, step);
    const char *acc = a.name;
    bcg_dtype t = a.value;
    bool product = a.reduce == BCG_REDUCE_PROD;
    for (int k = 0; k <= ir->input_count; k++)
        e->offset[k] = step->offsets[k];
    strbuf value;
    sb_init(&value);
    cexpr_put_as(e, &value, a.root, t);
    strbuf *line = &e->line;
    line->len = 0;
    const char *v = value.data ? value.data : "0";
    switch (reduce_acc_kind(a.reduce, t)) {
    case ACC_WRAP:
        sb_printf(line, "%s %s= (unsigned long long)%s(%s);", acc, product ? "*" : "+",
                  dtype_kind_of(t) == KIND_UINT ? "" : "(long long)", v);
        break;
    case ACC_DOUBLE:
        if (a.lanes > 1) /* partial sum j % lanes of the innermost loop's j */
            sb_printf(line, "%s[i%d & %d] += (double)(%s);", acc, ir->p->loop_count - 1,
                      a.lanes - 1, v);
        else
            sb_printf(line, "%s %s= (double)(%s);", acc, product ? "*" : "+", v);
        break;
    case ACC_COMPENSATED: { /* Neumaier's step, one statement a line */
        /* the sum and compensation this element goes to: ACC[ACC_l] or ACC */
        char sum[40], comp[40];
        if (a.lanes > 1) {
            snprintf(sum, sizeof sum, "%s[%s_l]", acc, acc);
            snprintf(comp, sizeof comp, "%s_c[%s_l]", acc, acc);
        } else {
            snprintf(sum, sizeof sum, "%s", acc);
            snprintf(comp, sizeof comp, "%s_c", acc);
        }
        e->need_math[MATH_FABS][0] = true;
        sb_puts(line, "{");
        code_line(e, step->depth);
        line->len = 0;
        sb_printf(line, "const double %s_x = (double)(%s);", acc, v);
        if (value.failed)
            line->failed = true;
        code_line(e, step->depth + 1);
        if (a.lanes > 1) {
            line->len = 0;
            sb_printf(line, "const long %s_l = i%d & %d;", acc, ir->p->loop_count - 1,
                      a.lanes - 1);
            code_line(e, step->depth + 1);
        }
        line->len = 0;
        sb_printf(line, "const double %s_t = %s + %s_x;", acc, sum, acc);
        code_line(e, step->depth + 1);
        line->len = 0;
        sb_printf(line, "if (fabs(%s) >= fabs(%s_x)) {", sum, acc);
        code_line(e, step->depth + 1);
        line->len = 0;
        sb_printf(line, "%s += (%s - %s_t) + %s_x;", comp, sum, acc, acc);
        code_line(e, step->depth + 2);
        line->len = 0;
        sb_puts(line, "} else {");
        code_line(e, step->depth + 1);
        line->len = 0;
        sb_printf(line, "%s += (%s_x - %s_t) + %s;", comp, acc, acc, sum);
        code_line(e, step->depth + 2);
        line->len = 0;
        sb_puts(line, "}");
        code_line(e, step->depth + 1);
        line->len = 0;
        sb_printf(line, "%s = %s_t;", sum, acc);
        code_line(e, step->depth + 1);
        line->len = 0;
        sb_puts(line, "}");
        code_line(e, step->depth);
        sb_free(&value);
        return;
    }
    case ACC_EXTREME:
        if (t == BCG_BOOL && e->c->aot) {
            sb_printf(line, "%s = %s %s (%s);", acc, acc, a.reduce == BCG_REDUCE_MAX ? "||" : "&&",
                      v);
        } else if (t == BCG_BOOL) {
            sb_printf(line, "%s = %s %s (%s);", acc, acc, a.reduce == BCG_REDUCE_MAX ? "|" : "&",
                      v);
        } else {
            bool maximum = a.reduce == BCG_REDUCE_MAX;
            t = dtype_compute(t);
            e->need[maximum ? HELPER_MAXIMUM : HELPER_MINIMUM][t] = true;
            sb_printf(line, "%s = bcg_%s_%s(%s, %s);", acc, maximum ? "maximum" : "minimum",
                      bcg_dtype_name(t), acc, v);
        }
        break;
    case ACC_LOGICAL:
        if (e->c->aot) /* V is a bool already */
            sb_printf(line, "%s = %s %s (%s);", acc, acc, a.reduce == BCG_REDUCE_ANY ? "||" : "&&",
                      v);
        else
            sb_printf(line, "%s %s= (%s) != 0;", acc, a.reduce == BCG_REDUCE_ANY ? "|" : "&", v);
        break;
    }
    if (value.failed)
        line->failed = true;
    sb_free(&value);
    code_line(e, step->depth);
}

/* A fused program's other reduction A: a tile of its values into its
 * partial sums (bcg_mk_sum16_T) or its block of accumulators
 * (bcg_mk_accadd_T), as the kernel's own. */
static void print_other_acc_tile(cprinter *e, const kir_step *step, const acc_of *a)
{
    bool single = a->value == BCG_F32;
    const char *kernel = acc_blocked(e->ir) ? "accadd" : "sum16";
    strbuf *line = &e->line;
    line->len = 0;
    if (single)
        sb_printf(line, "void bcg_mk_%s_f32(double *, const float *, long, long);", kernel);
    else
        sb_printf(line, "void bcg_mk_%s_f64(double *, double *, const double *, long, long);",
                  kernel);
    code_line(e, step->depth);
    line->len = 0;
    sb_printf(line, "bcg_mk_%s_%s(%s, ", kernel, single ? "f32" : "f64", a->name);
    if (!single)
        sb_printf(line, "%s_c, ", a->name);
    put_tile_argument(e, line, a->root);
    sb_puts(line, ", tile_count);");
    code_line(e, step->depth);
}

/* A tile of the root's values into the partial sums (bcg_mk_sum16_T). */
static void print_acc_tile(cprinter *e, const kir_step *step)
{
    const kernel_ir *ir = e->ir;
    const acc_of other = acc_of_step(ir, step);
    if (other.root > 0) {
        print_other_acc_tile(e, step, &other);
        return;
    }
    bool single = ir->nodes[0]->dtype == BCG_F32;
    const char *type = single ? "float" : "double";
    strbuf *line = &e->line;
    if (step->variant == KIR_ROWS) { /* every run of the innermost loop, in order */
        const plan *p = ir->p;
        int inner = p->loop_count - 1;
        bool binary = ir->nodes[0]->op != OP_OPERAND; /* (kir_accadd_rows_name) */
        char name[64];
        kir_accadd_rows_name(ir, name, sizeof name);
        line->len = 0;
        sb_printf(line, "void %s(double *, %sconst %s *, long, long, %slong, long);", name,
                  single ? "" : "double *, ", type,
                  binary ? (single ? "const float *, long, long, " : "const double *, long, long, ")
                         : "");
        code_line(e, step->depth);
        line->len = 0;
        sb_printf(line, "%s(acc, %s", name, single ? "" : "acc_c, ");
        for (int arg = 0; arg < (binary ? 2 : 1); arg++) {
            int id = binary ? kir_child(ir, 0, arg) : 0;
            if (arg > 0)
                sb_puts(line, ", ");
            put_tile_argument(e, line, id);
            put_signed_argument(line, p->stride[ir->nodes[id]->operand + 1][inner]);
        }
        sb_printf(line, ", %lld, tile_count);", (long long)p->extent[inner]);
        code_line(e, step->depth);
        return;
    }
    if (acc_blocked(ir)) { /* element j of the tile into accumulator j */
        line->len = 0;
        if (single)
            sb_puts(line, "void bcg_mk_accadd_f32(double *, const float *, long, long);");
        else
            sb_puts(line, "void bcg_mk_accadd_f64(double *, double *, const double *, long, "
                          "long);");
        code_line(e, step->depth);
        line->len = 0;
        sb_printf(line, "bcg_mk_accadd_%s(acc, %s", single ? "f32" : "f64",
                  single ? "" : "acc_c, ");
        if (ir->nodes[0]->op == OP_OPERAND)
            put_tile_argument(e, line, 0);
        else
            sb_puts(line, "tile0, 1");
        sb_puts(line, ", tile_count);");
        code_line(e, step->depth);
        return;
    }
    line->len = 0;
    if (single)
        sb_printf(line, "void bcg_mk_sum16_f32(double *, const %s *, long, long);", type);
    else
        sb_printf(line, "void bcg_mk_sum16_f64(double *, double *, const %s *, long, long);",
                  type);
    code_line(e, step->depth);
    line->len = 0;
    sb_printf(line, "bcg_mk_sum16_%s(acc, %s", single ? "f32" : "f64", single ? "" : "acc_c, ");
    if (ir->nodes[0]->op == OP_OPERAND) {
        put_tile_argument(e, line, 0);
    } else {
        sb_puts(line, "tile0, 1");
    }
    sb_puts(line, ", tile_count);");
    code_line(e, step->depth);
}

/* A fused program's other reduction A: in<k>[...] = its finished
 * accumulator, as print_acc_store finishes the kernel's own (per element,
 * never a block of accumulators). */
static void print_other_acc_store(cprinter *e, const kir_step *step, const acc_of *a)
{
    const kernel_ir *ir = e->ir;
    bool blocked = acc_blocked(ir);
    /* the accumulator (in a block: the tile element's) and its compensation */
    char acc[40], acc_c[40];
    snprintf(acc, sizeof acc, blocked ? "%s[%s_i]" : "%s", a->name, a->name);
    snprintf(acc_c, sizeof acc_c, blocked ? "%s_c[%s_i]" : "%s_c", a->name, a->name);
    bcg_dtype r = a->reduced;
    char count[48];
    snprintf(count, sizeof count, "%lld.0", (long long)a->count);
    const char *mean = a->reduce == BCG_REDUCE_MEAN ? " / " : "";
    const char *divisor = a->reduce == BCG_REDUCE_MEAN ? count : "";
    strbuf final;
    sb_init(&final);
    acc_kind kind = reduce_acc_kind(a->reduce, a->value);
    if (a->reduce == BCG_REDUCE_MEAN && a->count == 0) {
        e->need[HELPER_FROM_BITS][dtype_compute(r)] = true; /* the mean of nothing: NaN */
        sb_puts(&final, r != BCG_F64 ? "bcg_f32_from_bits(0x7fc00000U)"
                                     : "bcg_f64_from_bits(0x7ff8000000000000ULL)");
    } else if (kind == ACC_WRAP) {
        sb_printf(&final, r == BCG_I64 ? "(bcg_i64)%s" : "%s", acc);
    } else if (kind == ACC_DOUBLE) {
        char sum[64];
        snprintf(sum, sizeof sum, a->lanes > 1 ? "bcg_lanes_sum(%s)" : "%s", acc);
        if (a->lanes > 1)
            e->need[HELPER_LANES][BCG_F32] = true;
        if (dtype_is_half(r)) {
            cexpr_need_half(e, r == BCG_F16 ? HELPER_HALF_ROUND_F64 : HELPER_HALF_ROUND, r);
            sb_printf(&final, r == BCG_F16 ? "bcg_round_f16_f64(%s%s%s)"
                                           : "bcg_round_bf16((float)(%s%s%s))",
                      sum, mean, divisor);
        } else if (a->reduce == BCG_REDUCE_MEAN)
            sb_printf(&final, "(float)(%s / %s)", sum, count);
        else
            sb_printf(&final, r == BCG_F32 ? "(float)%s" : "%s", sum);
    } else if (kind == ACC_COMPENSATED) {
        char sum[256];
        if (a->lanes > 1) {
            e->need[HELPER_LANES][BCG_F64] = true;
            e->need_math[MATH_FABS][0] = true;
            snprintf(sum, sizeof sum, "bcg_lanes_compensated(%s, %s)", acc, acc_c);
        } else { /* the compensation is NaN once the sum is infinite: the sum stands */
            snprintf(sum, sizeof sum, "(%s - %s == 0.0 ? %s + %s : %s)", acc, acc, acc, acc_c,
                     acc);
        }
        if (a->reduce == BCG_REDUCE_MEAN)
            sb_printf(&final, "(%s / %s)", sum, count);
        else
            sb_puts(&final, sum);
    } else {
        sb_puts(&final, acc);
    }
    strbuf *line = &e->line;
    line->len = 0;
    for (int k = 0; k <= ir->input_count; k++)
        e->offset[k] = 0;
    int depth = step->depth;
    if (blocked) { /* one output element per accumulator of the tile */
        sb_printf(line, "for (long %s_i = 0; %s_i < tile_count; %s_i++) {", a->name, a->name,
                  a->name);
        code_line(e, depth++);
        line->len = 0;
        int k = a->operand;
        long long stride = (long long)ir->p->stride[k][ir->tile_loop];
        sb_printf(line, "in%d[", k - 1);
        if (ir->has_position[k])
            sb_printf(line, "in%d_pos + ", k - 1);
        sb_printf(line, "(tile_start + %s_i)", a->name);
        if (stride != 1)
            sb_printf(line, stride < 0 ? " * (%lld)" : " * %lld", stride);
    } else {
        sb_printf(line, "in%d[", a->operand - 1);
        cexpr_put_offset(e, line, a->operand);
    }
    sb_puts(line, "] = ");
    cexpr_store_open(e, line, a->out);
    cexpr_convert_open(e, line, r, a->out);
    sb_puts(line, final.data ? final.data : acc);
    cexpr_convert_close(line, r, a->out);
    cexpr_store_close(line, a->out);
    sb_putc(line, ';');
    if (final.failed)
        line->failed = true;
    sb_free(&final);
    code_line(e, depth);
    if (blocked) {
        line->len = 0;
        sb_putc(line, '}');
        code_line(e, step->depth);
    }
}

/* out[...] = the finished accumulator, converted to the output's dtype. */
static void print_acc_store(cprinter *e, const kir_step *step)
{
    const kernel_ir *ir = e->ir;
    const acc_of a = acc_of_step(ir, step);
    if (a.root > 0) {
        print_other_acc_store(e, step, &a);
        return;
    }
    bcg_dtype t = ir->nodes[0]->dtype, r = ir->reduced_dtype;
    char count[48];
    snprintf(count, sizeof count, "%lld.0", (long long)ir->reduce_count);
    strbuf final;
    sb_init(&final);
    acc_kind kind = reduce_acc_kind(ir->reduce, t);
    if (ir->reduce == BCG_REDUCE_MEAN && ir->reduce_count == 0) {
        e->need[HELPER_FROM_BITS][dtype_compute(r)] = true; /* the mean of nothing: NaN */
        sb_puts(&final, r != BCG_F64 ? "bcg_f32_from_bits(0x7fc00000U)"
                                     : "bcg_f64_from_bits(0x7ff8000000000000ULL)");
    } else if (kind == ACC_WRAP) {
        sb_puts(&final, r == BCG_I64 ? "(bcg_i64)acc" : "acc");
    } else if (kind == ACC_DOUBLE) {
        const char *acc = acc_blocked(ir) ? "acc[acc_i]" : "acc";
        if (ir->lanes > 1) {
            e->need[HELPER_LANES][BCG_F32] = true;
            acc = "bcg_lanes_sum(acc)";
        }
        if (dtype_is_half(r)) {
            /* the double rounded to f16 once (bf16: through float), as eval.c */
            cexpr_need_half(e, r == BCG_F16 ? HELPER_HALF_ROUND_F64 : HELPER_HALF_ROUND, r);
            sb_printf(&final, r == BCG_F16 ? "bcg_round_f16_f64(%s%s%s)"
                                           : "bcg_round_bf16((float)(%s%s%s))",
                      acc, ir->reduce == BCG_REDUCE_MEAN ? " / " : "",
                      ir->reduce == BCG_REDUCE_MEAN ? count : "");
        } else if (ir->reduce == BCG_REDUCE_MEAN)
            sb_printf(&final, "(float)(%s / %s)", acc, count);
        else
            sb_printf(&final, r == BCG_F32 ? "(float)%s" : "%s", acc);
    } else if (kind == ACC_COMPENSATED) {
        /* the compensation is NaN once acc is infinite: acc then stands */
        const char *sum = "(acc - acc == 0.0 ? acc + acc_c : acc)";
        if (acc_blocked(ir))
            sum = "(((acc[acc_i] - acc[acc_i]) == 0.0) ? (acc[acc_i] + acc_c[acc_i]) : acc[acc_i])";
        if (ir->lanes > 1) {
            e->need[HELPER_LANES][BCG_F64] = true;
            e->need_math[MATH_FABS][0] = true;
            sum = "bcg_lanes_compensated(acc, acc_c)";
        }
        if (ir->reduce == BCG_REDUCE_MEAN)
            sb_printf(&final, "(%s / %s)", sum, count);
        else
            sb_puts(&final, sum);
    } else {
        sb_puts(&final, "acc");
    }
    strbuf *line = &e->line;
    line->len = 0;
    for (int k = 0; k <= ir->input_count; k++)
        e->offset[k] = 0;
    int depth = step->depth;
    if (acc_blocked(ir)) { /* one output element per accumulator of the tile */
        sb_puts(line, "for (long acc_i = 0; acc_i < tile_count; acc_i++) {");
        code_line(e, depth++);
        line->len = 0;
        long long stride = (long long)ir->p->stride[0][ir->tile_loop];
        sb_printf(line, "out[%s(tile_start + acc_i)", ir->has_position[0] ? "out_pos + " : "");
        if (stride != 1)
            sb_printf(line, stride < 0 ? " * (%lld)" : " * %lld", stride);
        sb_puts(line, "] = ");
        cexpr_store_open(e, line, ir->out_dtype);
    } else {
        sb_puts(line, "out[");
        cexpr_put_offset(e, line, 0);
        sb_puts(line, "] = ");
        cexpr_store_open(e, line, ir->out_dtype);
    }
    cexpr_convert_open(e, line, r, ir->out_dtype);
    sb_puts(line, final.data ? final.data : "acc");
    cexpr_convert_close(line, r, ir->out_dtype);
    cexpr_store_close(line, ir->out_dtype);
    sb_putc(line, ';');
    if (final.failed)
        line->failed = true;
    sb_free(&final);
    code_line(e, depth);
    if (acc_blocked(ir)) {
        line->len = 0;
        sb_putc(line, '}');
        code_line(e, step->depth);
    }
}

/* Every step of the IR into the template's `steps` list. */
static void print_steps(cprinter *e)
{
    const kernel_ir *ir = e->ir;
    int64_t tile = 0;
    e->use_position = !ir->unrolled;
    for (int i = 0; i < ir->step_count && e->status == BCG_OK; i++) {
        const kir_step *step = &ir->steps[i];
        tmpl_scope *scope;
        switch (step->op) {
        case KIR_LOCAL: print_local(e, step); break;
        case KIR_STORE: print_store(e, step); break;
        case KIR_STORE_PAIR: print_store_pair(e, step); break;
        case KIR_LOOP: {
            char counter[16];
            scope = new_step(e, step->depth, "is_open");
            snprintf(counter, sizeof counter, "i%d", step->loop);
            tmpl_set_str(scope, "counter", counter);
            tmpl_set_int(scope, "trips", step->trips);
            break;
        }
        case KIR_END: new_step(e, step->depth, "is_close"); break;
        case KIR_ADVANCE: print_advance(e, step); break;
        case KIR_BLOCK_LOOP: print_block_loop(e, step); break;
        case KIR_COUNT_LOOP: print_count_loop(e, step); break;
        case KIR_MOVE: print_move(e, step); break;
        case KIR_MK_DECLARE: print_declare(e, step); break;
        case KIR_TILE_LITERAL: print_tile_literal(e, step); break;
        case KIR_TILE_LOOP:
            tile = step->size;
            print_tile_loop(e, step);
            break;
        case KIR_TILE_CALL: print_tile_call(e, step, tile); break;
        case KIR_VEX_CALL: print_vex_call(e, step, tile); break;
        case KIR_SMALL_CALL: print_small_call(e, step); break;
        case KIR_TILE_CONVERT: print_tile_convert(e, step, tile); break;
        case KIR_TILE_STORE: print_tile_store(e, step); break;
        case KIR_ELEMENT_OPEN:
            e->line.len = 0;
            sb_putc(&e->line, '{');
            code_line(e, step->depth);
            break;
        case KIR_ELEMENT_LOCAL: print_element_local(e, step); break;
        case KIR_ROWS_CALL: print_rows_call(e, step); break;
        case KIR_ROW_TILES:
            tile = step->size * ir->p->extent[ir->p->loop_count - 1];
            print_row_tiles(e, step);
            break;
        case KIR_ROW_CALLS:
            tile = ir->tile_columns; /* a row's temporaries */
            print_row_calls(e, step);
            break;
        case KIR_COLUMN_TILES: print_column_tiles(e, step); break;
        case KIR_GATHER: print_gather(e, step); break;
        case KIR_SCATTER: print_scatter(e, step); break;
        case KIR_ACC_INIT:
            if (acc_blocked(e->ir))
                print_acc_block_init(e, step, tile);
            else
                print_acc_init(e, step);
            break;
        case KIR_ACC_UPDATE: print_acc_update(e, step); break;
        case KIR_ACC_STORE: print_acc_store(e, step); break;
        case KIR_ACC_TILE: print_acc_tile(e, step); break;
        case KIR_FENCE: /* runtime/microkernels.c: why the fence */
            e->line.len = 0;
            sb_puts(&e->line, "void bcg_mk_fence(void);");
            code_line(e, step->depth);
            e->line.len = 0;
            sb_puts(&e->line, "bcg_mk_fence();");
            code_line(e, step->depth);
            break;
        }
    }
}

/* ---- the template variables -------------------------------------------------------- */

static bool set_header(cprinter *e, const char *function_name)
{
    compile *c = e->c;
    tmpl_scope *s = e->scope;
    char buf[BCG_MAX_RANK * 24 + 8];
    strbuf sb;

    tmpl_set_str(s, "function_name", function_name);
    tmpl_set_str(s, "version", BCG_VERSION);
    sb_init(&sb);
    kir_format_tree(&sb, c->root);
    if (sb.failed)
        return false;
    if (c->aot && sb.data && strstr(sb.data, "//")) {
        /* the AOT comment without // (floor division), which MISRA C rule
         * 3.1 forbids in a comment: a /\/ b, as aot.c writes the header's */
        strbuf escaped;
        sb_init(&escaped);
        for (const char *ch = sb.data; *ch; ch++) {
            sb_putc(&escaped, *ch);
            if (ch[0] == '/' && ch[1] == '/')
                sb_putc(&escaped, '\\');
        }
        sb_free(&sb);
        if (escaped.failed)
            return false;
        sb = escaped;
    }
    tmpl_set_str(s, "expression", sb.data ? sb.data : "");
    sb_free(&sb);

    const shape *result = &c->broadcast->result;
    tmpl_set_str(s, "result_dtype", bcg_dtype_name(e->ir->out_dtype));
    /* the output's shape: a reduction's target, else the result's */
    const shape *out_shape = c->reduce ? &c->out_shape : result;
    format_dims(buf, sizeof buf, out_shape->rank, out_shape->dims);
    tmpl_set_str(s, "result_shape", buf);
    int64_t elements = 1;
    for (int d = 0; d < out_shape->rank; d++)
        elements *= out_shape->dims[d];
    tmpl_set_int(s, "elements", elements);
    if (c->options.inplace >= 0) {
        snprintf(buf, sizeof buf, "in place: the output is in%d", c->options.inplace);
    } else if (c->reduce) {
        char dims[BCG_MAX_RANK * 24 + 8];
        format_dims(dims, sizeof dims, result->rank, result->dims);
        size_t used = (size_t)snprintf(buf, sizeof buf, "the %s of the %s result over dims",
                                       reduce_name(c->reduce), dims);
        for (int d = 0; d < result->rank && used + 8 < sizeof buf; d++)
            if (c->reduced[d])
                used += (size_t)snprintf(buf + used, sizeof buf - used, " %d", d);
        if (c->view_strides && c->options.output && c->options.output->strides &&
            used + 40 < sizeof buf) {
            used += (size_t)snprintf(buf + used, sizeof buf - used, "; strides ");
            format_dims(buf + used, sizeof buf - used, c->out_shape.rank, c->view_strides);
        }
    } else if (c->out_strides) {
        size_t used = (size_t)snprintf(buf, sizeof buf, "a view with strides ");
        format_dims(buf + used, sizeof buf - used - 16, result->rank, c->out_strides);
        strcat(buf, " (elements)");
    } else {
        snprintf(buf, sizeof buf, "C-contiguous");
    }
    tmpl_set_str(s, "out_layout", buf);

    tmpl_list_declare(s, "inputs");
    for (int i = 0; i < e->ir->input_count; i++) {
        const compile_operand *op = &c->operands[i];
        tmpl_scope *item = tmpl_list_add(s, "inputs");
        tmpl_set_int(item, "index", i);
        tmpl_set_str(item, "dtype", bcg_dtype_name(op->dtype));
        format_dims(buf, sizeof buf, op->shape.rank, op->shape.dims);
        tmpl_set_str(item, "shape", buf);
        format_dims(buf, sizeof buf, op->shape.rank, op->strides);
        tmpl_set_str(item, "strides", buf);
        tmpl_set_str(item, "note", i >= e->ir->real_inputs ? " (an output: see below)"
                                   : !e->ir->input_used[i] ? " (not used by the expression)"
                                   : i == c->options.inplace ? " (also the output)" : "");
    }
    /* a fused program's other outputs and their expressions */
    tmpl_list_declare(s, "fused_roots");
    for (int j = 0; j < c->fuse_count; j++) {
        int i = c->operand_count - c->fuse_count + j;
        strbuf tree;
        sb_init(&tree);
        kir_format_tree(&tree, c->fuse_root[j]);
        const char *text = tree.failed ? NULL : cprint_copy(e, tree.data ? tree.data : "");
        sb_free(&tree);
        if (!text)
            return false;
        tmpl_scope *item = tmpl_list_add(s, "fused_roots");
        tmpl_set_int(item, "index", i);
        tmpl_set_str(item, "name", c->operands[i].name);
        tmpl_set_str(item, "expression", text);
    }

    /* the plan as plan.c prints it, one comment line per line */
    const char *names[BCG_MAX_OPERANDS + 1];
    char name_text[BCG_MAX_OPERANDS + 1][16];
    names[0] = "out";
    for (int i = 0; i < e->ir->input_count; i++) {
        snprintf(name_text[i + 1], sizeof name_text[i + 1], "in%d", i);
        names[i + 1] = name_text[i + 1];
    }
    sb_init(&sb);
    plan_dump(&sb, e->ir->p, names);
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

    form_describe(&e->ir->form, buf, sizeof buf);
    tmpl_set_str(s, "strategy", buf);
    return true;
}

static void set_body_variables(cprinter *e)
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
    tmpl_set_bool(s, "empty", e->ir->p->empty);
    tmpl_set_str(s, "out_ctype", dtype_ctype(e->ir->out_dtype));
    bool any_input = false;
    tmpl_list_declare(s, "fused_outputs");
    for (int i = 0; i < e->ir->input_count; i++) {
        if (!e->ir->input_used[i] || e->ir->p->empty || e->ir->small)
            continue; /* (the small function reads inputs[] itself) */
        if (i >= e->ir->real_inputs) { /* a fused program's output: written */
            tmpl_scope *item = tmpl_list_add(s, "fused_outputs");
            tmpl_set_int(item, "index", i);
            tmpl_set_str(item, "ctype", dtype_ctype(e->c->operands[i].dtype));
            any_input = true;
            continue;
        }
        tmpl_scope *item = tmpl_list_add(s, "used_inputs");
        tmpl_set_int(item, "index", i);
        tmpl_set_str(item, "ctype", dtype_ctype(e->c->operands[i].dtype));
        any_input = true;
    }
    tmpl_set_bool(s, "any_input", any_input);
    for (int k = 0; k <= e->ir->input_count; k++) {
        if (!e->ir->has_position[k])
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
static void set_helper_variables(cprinter *e, tmpl_scope *s, bool aot)
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
        [BCG_I8] = "(-128)", [BCG_I16] = "(-32768)", [BCG_I32] = "((-2147483647) - 1)",
        [BCG_I64] = "((-9223372036854775807LL) - 1)", [BCG_U8] = "0", [BCG_U16] = "0",
        [BCG_U32] = "0U", [BCG_U64] = "0ULL",
    };
    tmpl_set_bool(s, "aot", false);
    for (int h = 0; h < HELPER_COUNT; h++) {
        tmpl_list_declare(s, helper_lists[h]);
        for (int t = 0; t < BCG_DTYPE_COUNT; t++) {
            if (!e->need[h][t])
                continue;
            tmpl_scope *item = tmpl_list_add(s, helper_lists[h]);
            bcg_dtype d = (bcg_dtype)t;
            tmpl_set_str(item, "type", dtype_ctype(d));
            tmpl_set_str(item, "suffix", bcg_dtype_name(d));
            tmpl_set_str(item, "wide", cexpr_wide_unsigned(d));
            tmpl_set_int(item, "bits", dtype_bits(d));
            tmpl_set_bool(item, "is_signed", is_signed(d));
            tmpl_set_bool(item, "is_float", is_float(d));
            tmpl_set_bool(item, "is_bf16", d == BCG_BF16);
            tmpl_set_str(item, "f", d == BCG_F32 ? "f" : "");
            tmpl_set_bool(item, "single", d == BCG_F32);
            tmpl_set_str(item, "bits_type", d == BCG_F32 ? "unsigned int" : "unsigned long long");
            tmpl_set_str(item, "sign", d == BCG_F32 ? "0x80000000U" : "0x8000000000000000ULL");
            /* reciprocal(0) as NumPy on x86-64 (docs/semantics.md) */
            tmpl_set_str(item, "reciprocal_of_zero",
                         d == BCG_I32 || d == BCG_I64 ? minimum[t] : "0");
            tmpl_set_bool(item, "zero_is_minimum", d == BCG_I32 || d == BCG_I64);
            /* the literals 0 and 1 in the helpers: in the AOT form spelled in
             * the type they meet (MISRA C:2012 rule 10.4); u is the suffix
             * of an unsigned type's integer literals */
            bool typed = aot && d != BCG_BOOL;
            tmpl_set_str(item, "zero", !typed ? "0" : is_float(d) ? (d == BCG_F64 ? "0.0" : "0.0F")
                                       : is_signed(d) ? "0" : "0U");
            tmpl_set_str(item, "one", !typed ? "1" : is_float(d) ? (d == BCG_F64 ? "1.0" : "1.0F")
                                      : is_signed(d) ? "1" : "1U");
            tmpl_set_str(item, "u", typed && dtype_kind_of(d) == KIND_UINT ? "U" : "");
            tmpl_set_str(item, "wide_u", aot ? "U" : "");
            /* select: a value of the type and its condition (bool in the AOT form) */
            tmpl_set_str(item, "value_type", aot && d == BCG_BOOL ? "bool" : cexpr_value_ctype(d));
            tmpl_set_str(item, "condition_type", aot ? "bool" : "int");
            if (h == HELPER_ADD_SAT_PAIR || h == HELPER_SUB_SAT_PAIR)
                tmpl_set_bool(item, "acle", aot);
            if (h == HELPER_ADD_SAT || h == HELPER_SUB_SAT || h == HELPER_MUL_Q) {
                /* saturating arithmetic: Arm's intrinsics in the AOT form
                 * (not libtcc's, which takes no preprocessor lines); 8-
                 * and 16-bit types compute in long, 32-bit products in
                 * long long */
                bool arm = h == HELPER_MUL_Q ? d != BCG_I32
                                             : dtype_bits(d) < 32 || d == BCG_I32;
                tmpl_set_bool(item, "acle", aot && arm);
                tmpl_set_bool(item, "narrow", dtype_bits(d) < 32);
                tmpl_set_int(item, "sat_bits", dtype_bits(d));
                tmpl_set_int(item, "fraction", dtype_bits(d) - 1);
                tmpl_set_str(item, "product_type", d == BCG_I32 ? "long long" : "long");
                tmpl_set_str(item, "low_mask", d == BCG_I8 ? "0x7F" : "0x7FFF");
                tmpl_set_str(item, "divisor", d == BCG_I32 ? "2147483648LL"
                                              : d == BCG_I16 ? "32768L" : "128L");
            }
            if (h == HELPER_TO_INT || h == HELPER_TO_INT_F32 || h == HELPER_ADD_SAT ||
                h == HELPER_SUB_SAT || h == HELPER_MUL_Q) {
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

bcg_status emit_helpers(arena *a, const emit_needs *needs, strbuf *out, bcg_error *err)
{
    const char *ops_text = tmpl_builtin("ops.c.tmpl");
    if (!ops_text)
        return fail(err, BCG_ERR_USAGE, "the kernel templates are not built into the library");
    /* set_helper_variables reads only `need`, `need_math` and `scope` */
    cprinter *e = arena_alloc(a, sizeof *e);
    tmpl_scope *ops = tmpl_scope_new(a, NULL);
    if (!e || !ops || !(e->scope = tmpl_scope_new(a, NULL)))
        return fail(err, BCG_ERR_NOMEM, "out of memory while emitting the helpers");
    memcpy(e->need, needs->helper, sizeof e->need);
    memcpy(e->need_math, needs->math, sizeof e->need_math);
    set_helper_variables(e, ops, true);
    tmpl_set_bool(ops, "aot", true); /* the AOT file's helpers: native _Float16 where there is one */
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

static bcg_status render(cprinter *e, const char *function_name)
{
    compile *c = e->c;
    const char *kernel_text = tmpl_builtin("kernel.c.tmpl");
    const char *ops_text = tmpl_builtin("ops.c.tmpl");
    if (!kernel_text || !ops_text)
        return fail(c->err, BCG_ERR_USAGE, "the kernel templates are not built into the library");

    tmpl_scope *ops = tmpl_scope_new(e->arena, NULL);
    if (!ops)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    if (c->needs_out) { /* a program's statement: what it needs (program.c) */
        for (int h = 0; h < HELPER_COUNT; h++)
            for (int t = 0; t < BCG_DTYPE_COUNT; t++)
                c->needs_out->helper[h][t] |= e->need[h][t];
        for (int f = 0; f < MATH_COUNT; f++)
            for (int single = 0; single < 2; single++)
                c->needs_out->math[f][single] |= e->need_math[f][single];
    }
    if (c->program_needs) { /* the prelude of every statement of a program */
        for (int h = 0; h < HELPER_COUNT; h++)
            for (int t = 0; t < BCG_DTYPE_COUNT; t++)
                e->need[h][t] |= c->program_needs->helper[h][t];
        for (int f = 0; f < MATH_COUNT; f++)
            for (int single = 0; single < 2; single++)
                e->need_math[f][single] |= c->program_needs->math[f][single];
    }
    set_helper_variables(e, ops, false);
    strbuf helpers;
    sb_init(&helpers);
    bcg_status s = tmpl_render(&helpers, "ops.c.tmpl", ops_text, ops, c->err);
    if (s == BCG_OK && helpers.failed)
        s = fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    if (s == BCG_OK) {
        tmpl_set_str(e->scope, "helpers",
                     helpers.data && !c->no_prelude ? helpers.data : "");
        tmpl_set_bool(e->scope, "prelude", !c->no_prelude);
        if (!set_header(e, function_name))
            s = fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    }
    sb_free(&helpers);
    if (s != BCG_OK)
        return s;
    set_body_variables(e);
    /* the typedefs of bcg_f16 and bcg_bf16 only where a pointer or a
     * helper names them (operands, output, the conversion helpers) */
    bool half = dtype_is_half(e->ir->out_dtype);
    for (int i = 0; i < c->operand_count; i++)
        half |= dtype_is_half(c->operands[i].dtype);
    for (int h = HELPER_HALF_LOAD; h <= HELPER_HALF_ROUND_F64; h++)
        half |= e->need[h][BCG_F16] || e->need[h][BCG_BF16];
    /* (and the tiles' temporaries and microkernel declarations: isnan(bool)
     * tests a tile of f16, the float type of bool) */
    for (int id = 0; (e->ir->tiled || e->ir->tiles2d) && id < e->ir->node_count; id++)
        half |= dtype_is_half(e->ir->nodes[id]->dtype) ||
                dtype_is_half(expr_operation_type(e->ir->nodes[id]));
    if (c->needs_out)
        c->needs_out->half_types |= half;
    if (c->program_needs)
        half |= c->program_needs->half_types;
    tmpl_set_bool(e->scope, "half_types", half);
    if (c->aot)
        c->aot->needs.half_types |= half;
    if ((s = emit_aot_variables(e)) != BCG_OK)
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

/* ---- the entry point ---------------------------------------------------------------- */

_Static_assert(HELPER_COUNT == EMIT_HELPER_FAMILIES && MATH_COUNT == EMIT_MATH_FUNCTIONS,
               "emit_needs must match the helper and math tables");

bcg_status emit_kernel(compile *c)
{
    if (!c || !c->arena || !c->root || !c->plan || !c->broadcast || !c->operands)
        return fail(c ? c->err : NULL, BCG_ERR_USAGE,
                    "emit_kernel needs a typed tree, a plan and the broadcast result");
    const char *function_name = c->function_name ? c->function_name : "bcg_kernel";
    const char *problem = emit_function_name_problem(function_name);
    if (problem)
        return fail(c->err, BCG_ERR_USAGE, "'%s' is %s; pick another function name",
                    function_name, problem);

    /* the tree as emitted: constants folded (fold.c says why); the header
     * comment keeps the expression as written */
    expr_node *root;
    kernel_ir *ir;
    if (fold_tree(c->arena, c->root, &root, c->err))
        return BCG_ERR_NOMEM;
    if (c->fuse_count > 0) { /* a fused program's other roots, folded alike */
        c->fuse_folded = arena_alloc(c->arena, sizeof *c->fuse_folded * (size_t)c->fuse_count);
        if (!c->fuse_folded)
            return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
        for (int j = 0; j < c->fuse_count; j++) {
            expr_node *folded;
            if (fold_tree(c->arena, c->fuse_root[j], &folded, c->err))
                return BCG_ERR_NOMEM;
            c->fuse_folded[j] = folded;
        }
    }
    bcg_status s = lower_kernel(c, root, &ir);
    if (s != BCG_OK)
        return s;
    c->ir = ir;
    c->form = ir->form;

    cprinter *e = arena_alloc(c->arena, sizeof *e);
    if (!e)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    memset(e, 0, sizeof *e);
    e->c = c;
    e->ir = ir;
    e->arena = c->arena;
    e->err = c->err;
    e->status = BCG_OK;
    if (!(e->scope = tmpl_scope_new(c->arena, NULL)))
        return fail(c->err, BCG_ERR_NOMEM, "out of memory while emitting the kernel");
    sb_init(&e->line);
    print_steps(e);
    sb_free(&e->line);
    if (e->status != BCG_OK)
        return e->status;
    s = render(e, function_name);
    /* Full unrolling made more C than bcg_compile hands to tcc: loops
     * instead (with unroll_limit 0 the second pass cannot unroll). */
    const plan *p = c->plan;
    if (s == BCG_OK && ir->unrolled && !p->empty && p->loop_count > 0 && c->max_source > 0 &&
        strlen(c->source) > c->max_source) {
        c->options.unroll_limit = 0;
        return emit_kernel(c);
    }
    return s;
}
