/* coverage.c - which rows of the operator table (gen/ops.h) reach the
 * microkernels, dtype by dtype: the inventory behind `bcgen functions
 * --tiles` and tests/unit/test_ops.c, so that a row or dtype falling back
 * to tcc's per-element code (5 to 50 times slower) is visible and cannot
 * come back silently.  Each row is compiled the way a user would write it,
 * on operands of one dtype (4096 elements, a long contiguous run), and the
 * answer is whether the kernel bcg_compile made calls microkernels. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The expression of row OP on operands a, b and c: the call for a row with
 * one ("hypot(a, b)"), else the operator ("a << b", "~a"). */
static bool row_expression(expr_op op, char *buf, size_t cap)
{
    const op_info *row = &op_table[op];
    static const char *const args[] = {"", "a", "a, b", "a, b, c"};
    if (op == OP_OPERAND || op == OP_LITERAL || op == OP_CAST || row->arity < 1 ||
        row->arity > 3)
        return false;
    if (row->call)
        snprintf(buf, cap, "%s(%s)", row->call, args[row->arity]);
    else if (row->arity == 1)
        snprintf(buf, cap, "%sa", row->symbol);
    else
        snprintf(buf, cap, "a %s b", row->symbol);
    return true;
}

tile_cover tile_coverage(bcg_context *ctx, expr_op op, bcg_dtype t, char *expr, size_t cap)
{
    char text[64];
    if (!expr) {
        expr = text;
        cap = sizeof text;
    }
    if ((unsigned)op >= OP_COUNT || (unsigned)t >= BCG_DTYPE_COUNT ||
        !row_expression(op, expr, cap))
        return COVER_UNTYPED;
    int64_t shape[1] = {4096};
    bcg_operand ops[3] = {
        {"a", t, 1, shape, NULL}, {"b", t, 1, shape, NULL}, {"c", t, 1, shape, NULL}};
    bcg_options options;
    bcg_options_init(&options);
    options.microkernel_run = 1;
    options.disable_vector_code = 1; /* the microkernels' coverage, not gen/vex.c's */
    bcg_kernel *kernel = NULL;
    bcg_error err;
    if (bcg_compile(ctx, expr, ops, op_table[op].arity, &options, &kernel, &err) != BCG_OK)
        return err.status == BCG_ERR_TYPE ? COVER_UNTYPED : COVER_FAILED;
    tile_cover cover = strstr(bcg_kernel_source(kernel), "bcg_mk_") ? COVER_TILED : COVER_SCALAR;
    bcg_kernel_free(kernel); /* ~1000 of them: kept out of the cache */
    return cover;
}
