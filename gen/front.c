/* front.c - the front of the pipeline: the options and operands checked,
 * the broadcast over the operands the expression reads, the expression
 * parsed and typed, the iteration plan.  compile_front is what every path
 * starts with (bcg_compile, bcg_emit, the AOT pair, `bcgen explain` and
 * `bcgen run --reference`); each stage reports into the one bcg_error of the
 * compile and the first error stops the flow.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Defaults measured on this kind of machine (issue 3): tcc-compiled
 * straight-line code pays only for tiny outputs; larger ones loop with the
 * innermost loop unrolled 4 times. */
#define DEFAULT_UNROLL_LIMIT 16
#define DEFAULT_UNROLL_FACTOR 4
/* Inner runs from this many elements call the vectorised microkernels:
 * below it the call and tile overhead outweigh what vectorising saves
 * (measured against tcc's per-element code, same process, interleaved:
 * a run of 30 with five operations and a cast 4.5x faster through tiles,
 * a run of 63 1.5x, a run of 16 through exp 0.9x, runs of 4 0.5x). */
#define DEFAULT_MICROKERNEL_RUN 16
#define MAX_UNROLL_FACTOR 64
#define MAX_UNROLL_LIMIT 65536

void bcg_options_init(bcg_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->inplace = -1;
    o->axis = BCG_AXIS_NONE;
    o->unroll_limit = DEFAULT_UNROLL_LIMIT;
    o->unroll_factor = DEFAULT_UNROLL_FACTOR;
    o->microkernel_run = DEFAULT_MICROKERNEL_RUN;
    o->stream_stores = BCG_STREAM_AUTO;
}

static bcg_status check_options(const bcg_options *o, int operand_count, bcg_error *err)
{
    if (o->inplace < -1 || o->inplace >= operand_count)
        return fail(err, BCG_ERR_USAGE, "in-place operand index %d is out of range (0..%d)",
                    o->inplace, operand_count - 1);
    if (o->unroll_factor < 1 || o->unroll_factor > MAX_UNROLL_FACTOR)
        return fail(err, BCG_ERR_LIMIT, "unroll factor %d is out of range (1..%d)",
                    o->unroll_factor, MAX_UNROLL_FACTOR);
    if (o->microkernel_run < 0)
        return fail(err, BCG_ERR_USAGE, "microkernel run length %d is negative",
                    o->microkernel_run);
    if (o->backend != BCG_BACKEND_TCC && o->backend != BCG_BACKEND_CC)
        return fail(err, BCG_ERR_USAGE, "backend %d is unknown (BCG_BACKEND_TCC or _CC)",
                    o->backend);
    if (o->native != 0 && o->native != 1)
        return fail(err, BCG_ERR_USAGE, "native is %d; give 0 or 1", o->native);
    if (o->stream_stores < BCG_STREAM_AUTO || o->stream_stores > 1)
        return fail(err, BCG_ERR_USAGE,
                    "stream_stores is %d; give BCG_STREAM_AUTO (-1), 0 or 1", o->stream_stores);
    if (o->output_count != 0 || o->outputs || o->output_names)
        return fail(err, BCG_ERR_USAGE,
                    "bcg_options.outputs describes a program's outputs; compile the program "
                    "with bcg_compile_program (or describe one output in bcg_options.output)");
    if (o->unroll_limit < 0 || o->unroll_limit > MAX_UNROLL_LIMIT)
        return fail(err, BCG_ERR_LIMIT,
                    "full-unroll limit %d is out of range (0..%d elements)",
                    o->unroll_limit, MAX_UNROLL_LIMIT);
    return BCG_OK;
}

/* Every byte offset a kernel forms from OP (an operand, or the output view
 * when WHAT is given) fits in int64.  Errors name it as "operand NAME" or
 * WHAT. */
static bcg_status check_span(const bcg_operand *op, int index, const char *what, bcg_error *err)
{
    char label[BCG_MAX_NAME + 16];
    snprintf(label, sizeof label, "%s%s", what ? what : "operand ", what ? "" : op->name);
    /* Every byte offset the kernel forms must fit in int64: the span of
     * the strides over the shape, times the element size.  A contiguous
     * operand is checked the same way, with its C-contiguous strides (its
     * element count times the element size must fit). */
    const int64_t *strides = op->strides;
    int64_t contiguous[BCG_MAX_RANK];
    bool empty = false;
    for (int d = 0; d < op->rank; d++)
        empty |= op->shape[d] == 0;
    if (!strides && !empty) {
        int64_t step = 1, bytes;
        for (int d = op->rank - 1; d >= 0; d--) {
            contiguous[d] = step;
            if (__builtin_mul_overflow(step, op->shape[d], &step) ||
                __builtin_mul_overflow(step, (int64_t)bcg_dtype_size(op->dtype), &bytes))
                return fail_at(err, BCG_ERR_LIMIT, 0, index, d,
                               "%s: its sizes up to dimension %d make more %s elements "
                               "than INT64_MAX bytes hold (a 64-bit byte count)",
                               label, d, bcg_dtype_name(op->dtype));
        }
        strides = contiguous;
    }
    int64_t low = 0, high = 0;
    for (int d = 0; strides && d < op->rank; d++) {
        int64_t reach;
        if (op->shape[d] == 0)
            break;
        if (__builtin_mul_overflow(strides[d], op->shape[d] - 1, &reach) ||
            __builtin_add_overflow(reach < 0 ? low : high, reach, reach < 0 ? &low : &high) ||
            __builtin_mul_overflow(low, (int64_t)bcg_dtype_size(op->dtype), &reach) ||
            __builtin_mul_overflow(high + 1, (int64_t)bcg_dtype_size(op->dtype), &reach))
            return fail_at(err, BCG_ERR_LIMIT, 0, index, d,
                           "%s: stride %lld over %lld elements in dimension %d reaches "
                           "beyond a 64-bit byte offset",
                           label, (long long)strides[d], (long long)op->shape[d], d);
    }
    /* ... and so must the whole span, lowest to highest byte (negative
     * strides reach below the pointer, positive ones above it) */
    int64_t span;
    if (__builtin_sub_overflow(high + 1, low, &span) ||
        __builtin_mul_overflow(span, (int64_t)bcg_dtype_size(op->dtype), &span))
        return fail_at(err, BCG_ERR_LIMIT, 0, index, -1,
                       "%s: its strides span %lld to %lld elements, more than a 64-bit "
                       "byte count holds",
                       label, (long long)low, (long long)high);
    return BCG_OK;
}

static bcg_status check_operand(const bcg_operand *op, int index, bcg_error *err)
{
    if (!op->name)
        return fail_at(err, BCG_ERR_USAGE, 0, index, -1, "operand %d has no name", index);
    size_t n = strlen(op->name);
    if (n > BCG_MAX_NAME)
        return fail_at(err, BCG_ERR_LIMIT, 0, index, -1,
                       "operand %d name is %zu bytes long; the limit is %d", index, n,
                       BCG_MAX_NAME);
    if (!name_is_valid(op->name, n))
        return fail_at(err, BCG_ERR_USAGE, 0, index, -1,
                       "operand %d name is not an identifier ([A-Za-z_][A-Za-z0-9_]*)", index);
    if ((unsigned)op->dtype >= BCG_DTYPE_COUNT)
        return fail_at(err, BCG_ERR_USAGE, 0, index, -1, "operand %s has an unknown dtype (%d)",
                       op->name, (int)op->dtype);
    if (op->rank < 0 || op->rank > BCG_MAX_RANK)
        return fail_at(err, BCG_ERR_LIMIT, 0, index, -1,
                       "operand %s has rank %d; ranks go from 0 to %d", op->name, op->rank,
                       BCG_MAX_RANK);
    if (op->rank > 0 && !op->shape)
        return fail_at(err, BCG_ERR_USAGE, 0, index, -1,
                       "operand %s has rank %d but no shape", op->name, op->rank);
    for (int d = 0; d < op->rank; d++)
        if (op->shape[d] < 0)
            return fail_at(err, BCG_ERR_SHAPE, 0, index, -1,
                           "operand %s has a negative size %lld in dimension %d", op->name,
                           (long long)op->shape[d], d);
    return check_span(op, index, NULL, err);
}

/* The in-place target is also the output, so no two of its elements may
 * share memory (a 0 stride, or strides that interleave): each element
 * would be written more than once, with the others' inputs already
 * overwritten.  Sufficient test: ordered by |stride|, each dimension steps
 * past everything the smaller ones reach. */
static bcg_status check_layout(const compile_operand *o, int index, bool inplace, bcg_error *err);

static bcg_status check_inplace_layout(const compile_operand *o, int index, bcg_error *err)
{
    return check_layout(o, index, true, err);
}

/* The same test for an in-place target (INPLACE) or an output view. */
static bcg_status check_layout(const compile_operand *o, int index, bool inplace, bcg_error *err)
{
    int order[BCG_MAX_RANK], count = 0;
    for (int d = 0; d < o->shape.rank; d++) {
        if (o->shape.dims[d] == 0)
            return BCG_OK; /* nothing is written */
        if (o->shape.dims[d] > 1)
            order[count++] = d;
    }
    for (int i = 1; i < count; i++) /* insertion sort by |stride| */
        for (int j = i; j > 0 && llabs(o->strides[order[j]]) < llabs(o->strides[order[j - 1]]); j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int64_t reach = 0; /* how far the dimensions so far reach, in elements */
    for (int i = 0; i < count; i++) {
        int d = order[i];
        int64_t step = llabs(o->strides[d]);
        if (step <= reach && !inplace)
            return fail_at(err, BCG_ERR_BROADCAST, 0, index, d,
                           "the output strides overlap: stride %lld in dimension %d revisits "
                           "memory (a 0 stride or interleaved strides), so results would "
                           "overwrite each other",
                           (long long)o->strides[d], d);
        if (step <= reach)
            return fail_at(err, BCG_ERR_BROADCAST, 0, index, d,
                           "in-place target %s has overlapping elements: stride %lld in "
                           "dimension %d revisits memory (a 0 stride or interleaved strides); "
                           "write the result to a separate array",
                           o->name, (long long)o->strides[d], d);
        reach += step * (o->shape.dims[d] - 1);
    }
    return BCG_OK;
}

/* NumPy's can_cast(FROM, TO, casting='same_kind'): safe casts, and casts
 * within a kind (i64 to i8, f64 to f32); bool to anything, uint to int and
 * integers to floats; never float to integer, int to uint, or to bool. */
bool dtype_same_kind(bcg_dtype from, bcg_dtype to)
{
    dtype_kind a = dtype_kind_of(from), b = dtype_kind_of(to);
    if (a == b || a == KIND_BOOL)
        return true;
    return (a == KIND_UINT && (b == KIND_INT || b == KIND_FLOAT)) ||
           (a == KIND_INT && b == KIND_FLOAT);
}

const char *reduce_name(int r)
{
    static const char *const names[] = {"none", "sum", "prod", "min", "max", "mean", "any", "all"};
    return r >= 0 && r < (int)(sizeof names / sizeof names[0]) ? names[r] : NULL;
}

/* NumPy's: sums and products of bool and signed integers in i64, of
 * unsigned in u64 (the platform's long), floats in their own type; mean of
 * integers in f64; min and max keep the type; any and all give bool. */
bcg_dtype reduce_dtype(int r, bcg_dtype t)
{
    dtype_kind k = dtype_kind_of(t);
    switch (r) {
    case BCG_REDUCE_SUM:
    case BCG_REDUCE_PROD:
        return k == KIND_FLOAT ? t : k == KIND_UINT ? BCG_U64 : BCG_I64;
    case BCG_REDUCE_MEAN:
        return k == KIND_FLOAT ? t : BCG_F64;
    case BCG_REDUCE_ANY:
    case BCG_REDUCE_ALL:
        return BCG_BOOL;
    default:
        return t;
    }
}

int reduce_lanes(const compile *c)
{
    return reduce_lanes_of(c, c->reduce, c->root->dtype, 0);
}

int reduce_lanes_of(const compile *c, int reduce, bcg_dtype value, int out)
{
    const plan *p = c->plan;
    if (reduce != BCG_REDUCE_SUM && reduce != BCG_REDUCE_MEAN)
        return 1;
    if (reduce == BCG_REDUCE_SUM && dtype_kind_of(value) != KIND_FLOAT)
        return 1; /* integer sums wrap: any order gives the same bits */
    if (!p || c->fill_plan || p->empty || p->loop_count == 0)
        return 1;
    int inner = p->loop_count - 1;
    if (p->stride[0][inner] != 0 || p->stride[out][inner] != 0)
        return 1;
    for (int k = 1; k < p->operand_count; k++)
        if (c->used[k - 1] && p->stride[k][inner] != 0 && p->stride[k][inner] != 1)
            return 1;
    return REDUCE_LANES;
}

/* A reduction's output (see bcg_output): the target shape must broadcast
 * to the result; the dimensions it reduces, the reduced dtype, the view's
 * strides, and the plan's output strides (0 along reduced dimensions). */
static bcg_status reduction_view(compile *c, const bcg_output *o)
{
    bcg_error *err = c->err;
    const shape *result = &c->broadcast->result;
    char have[BCG_MAX_RANK * 24 + 8], want[BCG_MAX_RANK * 24 + 8];
    if (!reduce_name(o->reduce))
        return fail(err, BCG_ERR_USAGE, "reduction %d is unknown (BCG_REDUCE_SUM ... _ALL)",
                    o->reduce);
    if (c->options.inplace >= 0)
        return fail(err, BCG_ERR_USAGE, "a reduction (%s) cannot write in place",
                    reduce_name(o->reduce));
    if (o->rank < 0 || o->rank > BCG_MAX_RANK || (o->rank > 0 && !o->shape))
        return fail(err, BCG_ERR_USAGE, "the reduction's output shape has rank %d%s", o->rank,
                    o->rank > 0 ? " but no sizes" : "");
    shape *out = &c->out_shape;
    out->rank = o->rank;
    for (int d = 0; d < o->rank; d++) {
        if (o->shape[d] < 0)
            return fail(err, BCG_ERR_SHAPE, "the output shape has a negative size %lld in "
                        "dimension %d", (long long)o->shape[d], d);
        out->dims[d] = o->shape[d];
    }
    shape_format(out, have, sizeof have);
    shape_format(result, want, sizeof want);
    if (out->rank > result->rank)
        return fail(err, BCG_ERR_BROADCAST,
                    "cannot reduce the result %s to the output shape %s: the output has more "
                    "dimensions (%d) than the result (%d)", want, have, out->rank, result->rank);
    int lead = result->rank - out->rank;
    int64_t count = 1, out_elements = 1;
    for (int d = 0; d < result->rank; d++) {
        int64_t size = d < lead ? 1 : out->dims[d - lead], full = result->dims[d];
        if (size != full && size != 1)
            return fail_at(err, BCG_ERR_BROADCAST, 0, -1, d,
                           "cannot reduce the result %s to the output shape %s: dimension %d "
                           "has size %lld in the result and %lld in the output (equal or 1)",
                           want, have, d, (long long)full, (long long)size);
        c->reduced[d] = size == 1 && full != 1;
        if (c->reduced[d])
            count *= full;
        else
            out_elements *= size;
    }
    c->reduce = o->reduce;
    c->reduce_count = count;
    c->reduced_dtype = reduce_dtype(o->reduce, c->root->dtype);
    if ((o->reduce == BCG_REDUCE_MIN || o->reduce == BCG_REDUCE_MAX) && count == 0 &&
        out_elements > 0)
        for (int d = 0; d < result->rank; d++)
            if (c->reduced[d] && result->dims[d] == 0)
                return fail_at(err, BCG_ERR_BROADCAST, 0, -1, d,
                               "cannot take the %s over dimension %d of size 0: an empty %s "
                               "has no value (NumPy: zero-size array to reduction operation "
                               "which has no identity)",
                               reduce_name(o->reduce), d, reduce_name(o->reduce));
    bcg_dtype dtype = c->reduced_dtype;
    if (o->dtype != BCG_DTYPE_AUTO) {
        dtype = (bcg_dtype)o->dtype;
        if (!dtype_same_kind(c->reduced_dtype, dtype))
            return fail(err, BCG_ERR_TYPE,
                        "cannot cast the %s (%s) to the output dtype %s: not a same-kind cast "
                        "(NumPy's casting='same_kind')",
                        reduce_name(o->reduce), bcg_dtype_name(c->reduced_dtype),
                        bcg_dtype_name(dtype));
    }
    c->out_dtype = dtype;
    /* the view over the output shape: given, or C-contiguous */
    int64_t *view = arena_alloc(c->arena, sizeof *view * (size_t)(out->rank + 1));
    int64_t *strides = arena_alloc(c->arena, sizeof *strides * (size_t)(result->rank + 1));
    compile_operand *co = arena_alloc(c->arena, sizeof *co);
    if (!view || !strides || !co)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    int64_t step = 1;
    for (int d = out->rank - 1; d >= 0; d--) {
        view[d] = o->strides ? o->strides[d] : step;
        if (out->dims[d] > 0 && step <= INT64_MAX / out->dims[d])
            step *= out->dims[d];
    }
    bcg_operand as_operand = {.name = "out", .dtype = dtype, .rank = out->rank,
                              .shape = out->dims, .strides = view};
    bcg_status s = check_span(&as_operand, -1, "the output", err);
    if (s)
        return s;
    memset(co, 0, sizeof *co);
    co->name = "the output";
    co->dtype = dtype;
    co->shape = *out;
    for (int d = 0; d < out->rank; d++) {
        co->strides[d] = view[d];
        if (out->dims[d] > 1 && view[d] == 0)
            return fail_at(err, BCG_ERR_BROADCAST, 0, -1, d + lead,
                           "output stride 0 in dimension %d of size %lld would write %lld "
                           "results to one place",
                           d, (long long)out->dims[d], (long long)out->dims[d]);
    }
    if ((s = check_layout(co, -1, false, err)))
        return s;
    for (int d = 0; d < result->rank; d++)
        strides[d] = d < lead || c->reduced[d] ? 0 : view[d - lead];
    c->view_strides = view;
    c->out_strides = strides;
    if (count == 0 && out_elements > 0) { /* nothing to reduce: the identity, everywhere */
        if ((s = plan_build(c->arena, out, view, 0, NULL, &c->fill_plan, err)))
            return s;
    }
    return BCG_OK;
}

/* The output: its dtype (the expression's, the in-place target's or the
 * one asked for, checked against NumPy's same_kind rule, and the root cast
 * to it so that every path stores the cast value), and its strides (the
 * in-place target's or the ones asked for, checked like an operand's and
 * like an in-place target's: no element written twice). */
static bcg_status output_view(compile *c)
{
    bcg_error *err = c->err;
    const bcg_output *o = c->options.output;
    const shape *result = &c->broadcast->result;
    int inplace = c->options.inplace;
    bcg_dtype want = c->root->dtype;
    c->out_strides = NULL;
    c->out_cast = false;
    c->out_shape = *result;
    c->view_strides = NULL;
    c->reduce = BCG_REDUCE_NONE;
    c->reduce_count = 1;
    c->fill_plan = NULL;
    c->reduced_dtype = c->root->dtype;
    memset(c->reduced, 0, sizeof c->reduced);
    if (o && o->reduce != BCG_REDUCE_NONE)
        return reduction_view(c, o);
    if (o && o->dtype != BCG_DTYPE_AUTO && (o->dtype < 0 || o->dtype >= BCG_DTYPE_COUNT))
        return fail(err, BCG_ERR_USAGE, "output dtype %d is not a bcg_dtype", o->dtype);
    if (inplace >= 0) {
        const compile_operand *target = &c->operands[inplace];
        bcg_status s = check_inplace_layout(target, inplace, err);
        if (s)
            return s;
        if (o && o->strides)
            return fail_at(err, BCG_ERR_USAGE, 0, inplace, -1,
                           "output strides and an in-place target %s both given: the "
                           "target's strides are the output's", target->name);
        if (o && o->dtype != BCG_DTYPE_AUTO && o->dtype != (int)target->dtype)
            return fail_at(err, BCG_ERR_TYPE, 0, inplace, -1,
                           "output dtype %s and the in-place target %s (%s) differ",
                           bcg_dtype_name((bcg_dtype)o->dtype), target->name,
                           bcg_dtype_name(target->dtype));
        if (!dtype_same_kind(c->root->dtype, target->dtype))
            return fail_at(err, BCG_ERR_TYPE, 0, inplace, -1,
                           "cannot write the result into %s in place: the expression gives %s "
                           "and %s's dtype is %s; %s to %s is not a same-kind cast (NumPy's "
                           "casting='same_kind')",
                           target->name, bcg_dtype_name(c->root->dtype), target->name,
                           bcg_dtype_name(target->dtype), bcg_dtype_name(c->root->dtype),
                           bcg_dtype_name(target->dtype));
        want = target->dtype;
    } else if (o) {
        if (o->dtype != BCG_DTYPE_AUTO) {
            want = (bcg_dtype)o->dtype;
            if (!dtype_same_kind(c->root->dtype, want))
                return fail(err, BCG_ERR_TYPE,
                            "cannot cast the result from %s to the output dtype %s: not a "
                            "same-kind cast (NumPy's casting='same_kind')",
                            bcg_dtype_name(c->root->dtype), bcg_dtype_name(want));
        }
        if (o->strides) {
            if (o->rank != result->rank) {
                char text[BCG_MAX_RANK * 24 + 8];
                shape_format(result, text, sizeof text);
                return fail(err, BCG_ERR_BROADCAST,
                            "output strides are given for rank %d; the result %s has rank %d",
                            o->rank, text, result->rank);
            }
            /* the view is checked as an operand of the result's shape would be */
            bcg_operand view = {.name = "out", .dtype = want, .rank = result->rank,
                                .shape = result->dims, .strides = o->strides};
            compile_operand *co = arena_alloc(c->arena, sizeof *co);
            int64_t *strides = arena_alloc(c->arena, sizeof *strides * (size_t)(result->rank + 1));
            if (!co || !strides)
                return fail(err, BCG_ERR_NOMEM, "out of memory");
            bcg_status s = check_span(&view, -1, "the output", err);
            if (s)
                return s;
            memset(co, 0, sizeof *co);
            co->name = "the output";
            co->dtype = want;
            co->shape = *result;
            for (int d = 0; d < result->rank; d++) {
                co->strides[d] = strides[d] = o->strides[d];
                if (result->dims[d] > 1 && strides[d] == 0)
                    return fail_at(err, BCG_ERR_BROADCAST, 0, -1, d,
                                   "output stride 0 in dimension %d of size %lld would write "
                                   "%lld results to one place",
                                   d, (long long)result->dims[d], (long long)result->dims[d]);
            }
            if ((s = check_layout(co, -1, false, err)))
                return s;
            c->out_strides = strides;
            c->view_strides = strides;
        }
    }
    c->out_dtype = want;
    if (want != c->root->dtype) { /* cast on store */
        expr_node *cast = arena_alloc(c->arena, sizeof *cast);
        if (!cast)
            return fail(err, BCG_ERR_NOMEM, "out of memory");
        memset(cast, 0, sizeof *cast);
        cast->op = OP_CAST;
        cast->column = c->root->column;
        cast->dtype = cast->cast_to = want;
        cast->arg_count = 1;
        cast->args[0] = c->root;
        c->root = cast;
        c->out_cast = true;
    }
    return BCG_OK;
}

static void mark_used(const expr_node *n, bool *used)
{
    if (n->op == OP_OPERAND)
        used[n->operand] = true;
    for (int k = 0; k < n->arg_count; k++)
        mark_used(n->args[k], used);
}

/* c->unread: the operands the expression reads as written (so they take
 * part in the broadcast and the result's shape) but no more once folded
 * (fold.c: a * 0, 0 * a, x - x, where(c, x, x) on integers).  The plan
 * gives them stride 0 everywhere (each element the same, which the folded
 * tree never reads), so that their layout neither orders nor splits the
 * loops: (a) * (0) over a strided i16[5,3,23,2,2] was a nest of four tcc
 * loops, 1.1 us against gcc's memset of 21 ns (bench sweep), and is one
 * contiguous fill.  Not the in-place target (its strides are the
 * output's), nor under Paddle's axis rule or in a fused program. */
static bcg_status mark_unread(compile *c)
{
    int count = c->operand_count;
    c->unread = arena_alloc(c->arena, sizeof *c->unread * (size_t)count);
    bool *read = arena_alloc(c->arena, sizeof *read * (size_t)count);
    if (!c->unread || !read)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory");
    memset(c->unread, 0, sizeof *c->unread * (size_t)count);
    if (c->fuse_count > 0 || c->options.axis != BCG_AXIS_NONE)
        return BCG_OK;
    memset(read, 0, sizeof *read * (size_t)count);
    expr_node *folded;
    if (fold_tree(c->arena, c->root, &folded, c->err))
        return BCG_ERR_NOMEM;
    mark_used(folded, read);
    for (int i = 0; i < count; i++)
        c->unread[i] = c->used[i] && !read[i] && i != c->options.inplace;
    return BCG_OK;
}

/* shape_broadcast over the operands C's expression uses (c->used), into
 * c->broadcast with every operand's aligned shape at its own index (all 1s
 * for the unused); errors name operands by their index among all.  With no
 * operand used the result is a scalar, as NumPy's for an expression of
 * literals. */
static bcg_status broadcast_used(compile *c, const shape *shapes, const char **names,
                                 size_t element_size)
{
    int map[BCG_MAX_OPERANDS], count = 0, inplace = -1;
    for (int i = 0; i < c->operand_count; i++)
        if (c->used[i]) {
            if (i == c->options.inplace)
                inplace = count;
            map[count++] = i;
        }
    broadcast_result *b = c->broadcast;
    if (count == 0) {
        memset(b, 0, sizeof *b);
    } else {
        shape *sub_shapes = arena_alloc(c->arena, sizeof *sub_shapes * (size_t)count);
        const char **sub_names = arena_alloc(c->arena, sizeof *sub_names * (size_t)count);
        if (!sub_shapes || !sub_names)
            return fail(c->err, BCG_ERR_NOMEM, "out of memory");
        for (int j = 0; j < count; j++) {
            sub_shapes[j] = shapes[map[j]];
            sub_names[j] = names[map[j]];
        }
        broadcast_rules rules = {
            .axis = c->options.axis,
            .inplace = inplace,
            .strict_rank = c->options.strict_rank != 0,
            .warn_legacy = c->options.warn_legacy != 0,
        };
        bcg_status s = shape_broadcast(count, sub_shapes, sub_names, &rules, element_size, b,
                                       c->err);
        if (s) {
            if (c->err && c->err->operand >= 0 && c->err->operand < count)
                c->err->operand = map[c->err->operand];
            return s;
        }
        for (int j = count - 1; j >= 0; j--) /* map[j] >= j: back to front */
            b->aligned[map[j]] = b->aligned[j];
    }
    for (int i = 0; i < c->operand_count; i++)
        if (!c->used[i]) {
            b->aligned[i].rank = b->result.rank;
            for (int d = 0; d < b->result.rank; d++)
                b->aligned[i].dims[d] = 1;
        }
    return BCG_OK;
}

/* The elements [low, high] an operand's strides reach from its element
 * [0,...,0] (check_operand made sure the bytes fit in int64); empty
 * operands reach nothing. */
static void operand_reach(compile_operand *co)
{
    co->low = co->high = 0;
    co->empty = false;
    for (int d = 0; d < co->shape.rank; d++) {
        if (co->shape.dims[d] == 0) {
            co->empty = true;
            co->low = co->high = 0;
            return;
        }
        int64_t reach = co->strides[d] * (co->shape.dims[d] - 1);
        if (reach < 0)
            co->low += reach;
        else
            co->high += reach;
    }
}

bcg_status compile_front(compile *c, const char *text, const bcg_operand *operands,
                         int operand_count, const bcg_options *options)
{
    bcg_error *err = c->err;
    if (!text)
        return fail(err, BCG_ERR_USAGE, "no expression given");
    if (operand_count < 1 || operand_count > BCG_MAX_OPERANDS)
        return fail(err, operand_count < 1 ? BCG_ERR_USAGE : BCG_ERR_LIMIT,
                    "%d operands given; an expression takes 1 to %d", operand_count,
                    BCG_MAX_OPERANDS);
    if (!operands)
        return fail(err, BCG_ERR_USAGE, "no operands given");
    if (options)
        c->options = *options;
    else
        bcg_options_init(&c->options);
    bcg_status s = check_options(&c->options, operand_count, err);
    if (s)
        return s;

    c->text = text;
    c->operand_count = operand_count;
    c->operands = arena_alloc(c->arena, sizeof *c->operands * (size_t)operand_count);
    c->broadcast = arena_alloc(c->arena, sizeof *c->broadcast);
    shape *shapes = arena_alloc(c->arena, sizeof *shapes * (size_t)operand_count);
    const char **names = arena_alloc(c->arena, sizeof *names * (size_t)operand_count);
    bcg_dtype *dtypes = arena_alloc(c->arena, sizeof *dtypes * (size_t)operand_count);
    if (!c->operands || !c->broadcast || !shapes || !names || !dtypes)
        return fail(err, BCG_ERR_NOMEM, "out of memory");

    for (int i = 0; i < operand_count; i++) {
        const bcg_operand *op = &operands[i];
        if ((s = check_operand(op, i, err)))
            return s;
        for (int j = 0; j < i; j++)
            if (strcmp(names[j], op->name) == 0)
                return fail_at(err, BCG_ERR_USAGE, 0, i, -1,
                               "operand name %s is given twice (operands %d and %d)",
                               op->name, j, i);
        compile_operand *co = &c->operands[i];
        co->name = names[i] = arena_strndup(c->arena, op->name, strlen(op->name));
        if (!co->name)
            return fail(err, BCG_ERR_NOMEM, "out of memory");
        co->dtype = dtypes[i] = op->dtype;
        co->shape.rank = op->rank;
        for (int d = 0; d < op->rank; d++)
            co->shape.dims[d] = op->shape[d];
        shapes[i] = co->shape;
        co->strides_given = op->strides != NULL;
        int64_t step = 1;
        for (int d = op->rank - 1; d >= 0; d--) {
            co->strides[d] = op->strides ? op->strides[d] : step;
            if (op->shape[d] > 0 && step <= INT64_MAX / op->shape[d])
                step *= op->shape[d];
        }
        operand_reach(co);
    }

    expr_names table = {operand_count, names};
    if ((s = expr_parse(c->arena, text, &table, &c->root, err))) {
        if (err && program_is_statements(text)) {
            size_t n = strlen(err->message);
            snprintf(err->message + n, sizeof err->message - n, "%s",
                     "; this is a program of statements (NAME = EXPR; ...), which "
                     "bcg_compile_program compiles (one kernel takes one expression)");
        }
        return s;
    }
    /* NumPy broadcasts the arrays an expression reads: an operand the
     * expression does not read (it was validated above) takes no part in
     * the broadcast, unless it is the in-place target, which keeps its
     * shape, or Paddle's axis rule, defined over exactly the two operands
     * given, is in force. */
    c->used = arena_alloc(c->arena, sizeof *c->used * (size_t)operand_count);
    if (!c->used)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    mark_used(c->root, c->used);
    for (int j = 0; j < c->fuse_count; j++) /* what a fused program's other outputs read */
        mark_used(c->fuse_root[j], c->used);
    for (int i = 0; i < operand_count; i++)
        if (c->options.inplace == i || c->options.axis != BCG_AXIS_NONE ||
            i >= operand_count - c->fuse_count) /* a fused program's outputs (program.c) */
            c->used[i] = true;
    if ((s = broadcast_used(c, shapes, names, 0)))
        return s;
    if ((s = expr_type(c->arena, c->root, dtypes, operand_count, err)))
        return s;

    /* The result's byte size must fit in int64 too, now that its dtype is known. */
    if ((s = broadcast_used(c, shapes, names, bcg_dtype_size(c->root->dtype))))
        return s;
    if ((s = output_view(c)))
        return s;

    /* where each operand's dimensions sit among the result's: right
     * aligned, or from Paddle's axis */
    for (int i = 0; i < operand_count; i++) {
        compile_operand *co = &c->operands[i];
        co->axis_offset = c->broadcast->result.rank - co->shape.rank;
        if (c->options.axis != BCG_AXIS_NONE && c->options.axis >= 0 && operand_count == 2 &&
            co->shape.rank < c->broadcast->result.rank)
            co->axis_offset = c->options.axis;
    }
    if ((s = mark_unread(c)))
        return s;
    plan_input *inputs = arena_alloc(c->arena, sizeof *inputs * (size_t)operand_count);
    if (!inputs)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    const shape *result = &c->broadcast->result;
    static const shape scalar = {0, {0}};
    static const int64_t no_strides[BCG_MAX_RANK];
    for (int i = 0; i < operand_count; i++) {
        inputs[i].aligned = &c->broadcast->aligned[i];
        if (!c->used[i]) { /* never read: a scalar broadcast everywhere */
            inputs[i].strides = NULL;
            inputs[i].original_rank = 0;
            inputs[i].original = &scalar;
            inputs[i].axis_offset = result->rank;
            continue;
        }
        inputs[i].strides = c->unread[i] ? no_strides : c->operands[i].strides;
        inputs[i].original_rank = c->operands[i].shape.rank;
        inputs[i].original = &c->operands[i].shape;
        inputs[i].axis_offset = c->operands[i].axis_offset;
    }
    const int64_t *output_strides = c->out_strides;
    if (c->options.inplace >= 0)
        output_strides = c->operands[c->options.inplace].strides;
    return plan_build(c->arena, result, output_strides, operand_count, inputs, &c->plan, err);
}

