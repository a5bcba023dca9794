/* compile.c - the pipeline and the public API around it.
 *
 * bcg_compile is the whole flow in one place:
 *
 *   compile_front: check operands -> shape_broadcast -> expr_parse
 *                  -> expr_type -> plan_build
 *   emit_kernel  : plan + tree -> C source (templates)
 *   jit_compile  : C source -> machine code (libtcc)
 *
 * Each stage reports into the one bcg_error of the call and the first error
 * stops the flow.  Everything a compile makes lives in one arena, freed
 * when the compile returns; the kernel keeps only what its runs need (see
 * "kernels" below).  Contexts, the kernel cache and kernel lifetimes are
 * cache.c's; libtcc itself is serialised in jit.c.
 */
#include <pthread.h>
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
 * below it the call and tile overhead outweigh what vectorising saves. */
#define DEFAULT_MICROKERNEL_RUN 64
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
    if (o->unroll_limit < 0 || o->unroll_limit > MAX_UNROLL_LIMIT)
        return fail(err, BCG_ERR_LIMIT,
                    "full-unroll limit %d is out of range (0..%d elements)",
                    o->unroll_limit, MAX_UNROLL_LIMIT);
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
                               "operand %s: its sizes up to dimension %d make more %s elements "
                               "than INT64_MAX bytes hold (a 64-bit byte count)",
                               op->name, d, bcg_dtype_name(op->dtype));
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
                           "operand %s: stride %lld over %lld elements in dimension %d reaches "
                           "beyond a 64-bit byte offset",
                           op->name, (long long)strides[d], (long long)op->shape[d], d);
    }
    /* ... and so must the whole span, lowest to highest byte (negative
     * strides reach below the pointer, positive ones above it) */
    int64_t span;
    if (__builtin_sub_overflow(high + 1, low, &span) ||
        __builtin_mul_overflow(span, (int64_t)bcg_dtype_size(op->dtype), &span))
        return fail_at(err, BCG_ERR_LIMIT, 0, index, -1,
                       "operand %s: its strides span %lld to %lld elements, more than a 64-bit "
                       "byte count holds",
                       op->name, (long long)low, (long long)high);
    return BCG_OK;
}

/* The in-place target is also the output, so no two of its elements may
 * share memory (a 0 stride, or strides that interleave): each element
 * would be written more than once, with the others' inputs already
 * overwritten.  Sufficient test: ordered by |stride|, each dimension steps
 * past everything the smaller ones reach. */
static bcg_status check_inplace_layout(const compile_operand *o, int index, bcg_error *err)
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

static void mark_used(const expr_node *n, bool *used)
{
    if (n->op == OP_OPERAND)
        used[n->operand] = true;
    for (int k = 0; k < n->arg_count; k++)
        mark_used(n->args[k], used);
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
    }

    expr_names table = {operand_count, names};
    if ((s = expr_parse(c->arena, text, &table, &c->root, err)))
        return s;
    /* NumPy broadcasts the arrays an expression reads: an operand the
     * expression does not read (it was validated above) takes no part in
     * the broadcast, unless it is the in-place target, which keeps its
     * shape, or Paddle's axis rule, defined over exactly the two operands
     * given, is in force. */
    c->used = arena_alloc(c->arena, sizeof *c->used * (size_t)operand_count);
    if (!c->used)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    mark_used(c->root, c->used);
    for (int i = 0; i < operand_count; i++)
        if (c->options.inplace == i || c->options.axis != BCG_AXIS_NONE)
            c->used[i] = true;
    if ((s = broadcast_used(c, shapes, names, 0)))
        return s;
    if ((s = expr_type(c->arena, c->root, dtypes, operand_count, err)))
        return s;

    /* The result's byte size must fit in int64 too, now that its dtype is known. */
    if ((s = broadcast_used(c, shapes, names, bcg_dtype_size(c->root->dtype))))
        return s;
    if (c->options.inplace >= 0) {
        const compile_operand *target = &c->operands[c->options.inplace];
        if ((s = check_inplace_layout(target, c->options.inplace, err)))
            return s;
        if (target->dtype != c->root->dtype)
            return fail_at(err, BCG_ERR_TYPE, 0, c->options.inplace, -1,
                           "in-place result cannot change the dtype of %s: it is %s and the "
                           "expression gives %s",
                           target->name, bcg_dtype_name(target->dtype),
                           bcg_dtype_name(c->root->dtype));
    }

    plan_input *inputs = arena_alloc(c->arena, sizeof *inputs * (size_t)operand_count);
    if (!inputs)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    const shape *result = &c->broadcast->result;
    static const shape scalar = {0, {0}};
    for (int i = 0; i < operand_count; i++) {
        inputs[i].aligned = &c->broadcast->aligned[i];
        if (!c->used[i]) { /* never read: a scalar broadcast everywhere */
            inputs[i].strides = NULL;
            inputs[i].original_rank = 0;
            inputs[i].original = &scalar;
            inputs[i].axis_offset = result->rank;
            continue;
        }
        inputs[i].strides = c->operands[i].strides;
        inputs[i].original_rank = c->operands[i].shape.rank;
        inputs[i].original = &c->operands[i].shape;
        inputs[i].axis_offset = result->rank - c->operands[i].shape.rank;
        if (c->options.axis != BCG_AXIS_NONE && c->options.axis >= 0 && operand_count == 2 &&
            c->operands[i].shape.rank < result->rank)
            inputs[i].axis_offset = c->options.axis;
    }
    const int64_t *output_strides = NULL;
    if (c->options.inplace >= 0)
        output_strides = c->operands[c->options.inplace].strides;
    return plan_build(c->arena, result, output_strides, operand_count, inputs, &c->plan, err);
}

/* ---- kernels ------------------------------------------------------------------
 *
 * A kernel keeps what its runs need and nothing more (issue 9: a small
 * kernel costs a few KB, most of it its code page): the result's shape,
 * what bcg_run checks of each pointer, the outermost loop for threaded
 * runs, and its cache key.  The key holds every argument of the compile,
 * so kernel_front rebuilds the tree and the plan from it when a threaded
 * split or bcg_kernel_source needs them; only a kernel the reference
 * evaluator runs (fn NULL) keeps them.  cache.c owns lookup and lifetime. */

static void splits_free(bcg_kernel *k);

void kernel_destroy(bcg_kernel *k)
{
    if (!k)
        return;
    splits_free(k);
    if (k->lazy_lock_ready)
        pthread_mutex_destroy(&k->lazy_lock);
    jit_free(k->code);
    cc_free(k->cc);
    mem_free(k->key);
    mem_free(k->source);
    mem_free(k->note);
    mem_free(k->warning);
    mem_free(k->run);
    mem_free(k->shape);
    mem_free(k->outer_stride);
    arena_free(k->arena);
    mem_free(k);
}

/* The byte range an operand's memory spans, from the plan's strides. */
static void span(const plan *p, int k, size_t size, int64_t *low, int64_t *high)
{
    int64_t lo = 0, hi = 0;
    if (p->empty) {
        *low = *high = 0;
        return;
    }
    for (int l = 0; l < p->loop_count; l++) {
        int64_t reach = p->stride[k][l] * (p->extent[l] - 1);
        if (reach < 0)
            lo += reach;
        else
            hi += reach;
    }
    *low = lo * (int64_t)size;
    *high = (hi + 1) * (int64_t)size;
}

static char *copy_text(const char *text)
{
    size_t n = strlen(text);
    char *copy = mem_alloc(n + 1);
    if (copy)
        memcpy(copy, text, n + 1);
    return copy;
}

static bool compile_warnings_exist(const compile *c)
{
    for (int i = 0; i < c->operand_count; i++)
        if (!c->used[i])
            return true;
    return c->broadcast->warning[0] != 0;
}

/* The warnings of a compile, "; "-separated (mem_alloc'd), or NULL when
 * there are none or memory runs out: the legacy broadcast warning, and the
 * operands the expression does not read. */
static char *compile_warnings(const compile *c)
{
    if (!compile_warnings_exist(c))
        return NULL;
    strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, c->broadcast->warning);
    for (int i = 0; i < c->operand_count; i++)
        if (!c->used[i])
            sb_printf(&sb, "%soperand %s is not read by the expression, so it takes no part "
                      "in the broadcast",
                      sb.len ? "; " : "", c->operands[i].name);
    return sb_finish(&sb);
}

/* Copies what runs need from the front end C into K, and counts the
 * memory K holds (without its code). */
static bcg_status prepare_run(bcg_kernel *k, const compile *c, bcg_error *err)
{
    const plan *p = c->plan;
    k->operand_count = c->operand_count;
    k->inplace = c->options.inplace;
    k->dtype = c->root->dtype;
    k->output_size = bcg_dtype_size(c->root->dtype);
    k->elements = p->elements;
    k->rank = c->broadcast->result.rank;
    k->loop_count = p->loop_count;
    k->outer_extent = p->loop_count ? p->extent[0] : 0;
    /* names live after the run array, in the same block */
    size_t names = 0;
    for (int i = 0; i < c->operand_count; i++)
        names += strlen(c->operands[i].name) + 1;
    size_t run_bytes = sizeof *k->run * (size_t)c->operand_count;
    k->run = mem_alloc(run_bytes + names);
    k->shape = mem_alloc(sizeof *k->shape * (size_t)(k->rank ? k->rank : 1));
    k->outer_stride = mem_alloc(sizeof *k->outer_stride * (size_t)(c->operand_count + 1));
    if (!k->run || !k->shape || !k->outer_stride)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    memcpy(k->shape, c->broadcast->result.dims, sizeof *k->shape * (size_t)k->rank);
    for (int i = 0; i <= c->operand_count; i++)
        k->outer_stride[i] = p->loop_count ? p->stride[i][0] : 0;
    if (!(k->warning = compile_warnings(c)) && compile_warnings_exist(c))
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    char *name_at = (char *)k->run + run_bytes;
    span(p, 0, k->output_size, &k->output_low, &k->output_high);
    for (int i = 0; i < c->operand_count; i++) {
        run_operand *r = &k->run[i];
        size_t n = strlen(c->operands[i].name) + 1;
        memcpy(name_at, c->operands[i].name, n);
        r->name = name_at;
        name_at += n;
        r->size = bcg_dtype_size(c->operands[i].dtype);
        /* The operand's own span, from its own shape and strides: broadcast
         * dimensions do not widen it.  compile_front checked it fits. */
        int64_t lo = 0, hi = 0;
        bool empty = false;
        for (int d = 0; d < c->operands[i].shape.rank; d++) {
            int64_t n_d = c->operands[i].shape.dims[d];
            if (n_d == 0)
                empty = true;
            int64_t reach = c->operands[i].strides[d] * (n_d > 0 ? n_d - 1 : 0);
            if (reach < 0)
                lo += reach;
            else
                hi += reach;
        }
        /* an operand the expression does not read is not checked either */
        bool unread = empty || p->empty || !c->used[i];
        r->low = unread ? 0 : lo * (int64_t)r->size;
        r->high = unread ? 0 : (hi + 1) * (int64_t)r->size;
        /* Exact aliasing is safe when the input walks the output's elements
         * in step: same element size and the same strides in every loop. */
        bool same = r->size == k->output_size;
        for (int l = 0; same && l < p->loop_count; l++)
            same = p->stride[i + 1][l] == p->stride[0][l];
        r->may_alias = same;
    }
    k->bytes = sizeof *k + k->key_length + run_bytes + names +
               sizeof *k->shape * (size_t)(k->rank ? k->rank : 1) +
               sizeof *k->outer_stride * (size_t)(c->operand_count + 1) +
               (k->warning ? strlen(k->warning) + 1 : 0);
    return BCG_OK;
}

/* Compiles SOURCE with the backend C's options ask for.  When the cc
 * backend fails, libtcc compiles it instead and *NOTE (may be NULL) gets a
 * sentence saying why; *cc is set only by the cc backend, *code only by
 * libtcc. */
static bcg_status compile_code(const compile *c, const char *source, jit_code **code,
                               cc_code **cc, kernel_fn *fn, char *note, size_t note_size,
                               bcg_error *err)
{
    *cc = NULL;
    *code = NULL;
    /* libtcc cannot be interrupted: its time is bounded by what it is given */
    size_t length = strlen(source);
    if (c->max_source > 0 && length > c->max_source)
        return fail(err, BCG_ERR_LIMIT,
                    "the generated C is %zu bytes, over the BCG_MAX_SOURCE limit of %zu bytes "
                    "that bounds the compile time; use a smaller unroll_factor or expression",
                    length, c->max_source);
    if (c->options.backend == BCG_BACKEND_CC) {
        bcg_error cc_err;
        error_clear(&cc_err);
        bcg_status s = cc_compile(source, c->function_name, c->options.native != 0, cc, fn,
                                  &cc_err);
        if (s == BCG_OK)
            return BCG_OK;
        if (s == BCG_ERR_NOMEM)
            return fail(err, s, "%s", cc_err.message);
        if (note)
            snprintf(note, note_size, "the cc backend failed (%s); compiled with libtcc",
                     cc_err.message);
    }
    return jit_compile(source, c->function_name, code, fn, err);
}

/* The bytes one run of C writes and reads (each operand's elements once):
 * BCG_STREAM_AUTO compares it with BCG_STREAM_AUTO_BYTES.  Decided on the
 * whole kernel, so a thread's piece (a copy of C) streams exactly when the
 * whole kernel does.  Measured (2-core EPYC, 32 MiB L3): (1024,2048)+(2048,)
 * f32, 16 MiB touched, 0.65 -> 0.31 ms with streaming stores; (4096,4096) +
 * (4096,) 6.8 -> 4.8 ms; (2048,1)+(1,2048), 16 MiB written and re-run in a
 * loop so that the output stays in L3, 0.55 -> 0.63 ms. */
static double touched_bytes(const compile *c)
{
    bcg_dtype out = c->options.inplace >= 0 ? c->operands[c->options.inplace].dtype
                                            : c->root->dtype;
    double bytes = (double)c->plan->elements * (double)bcg_dtype_size(out);
    for (int i = 0; i < c->operand_count; i++) {
        int64_t elements = 0;
        shape_elements(&c->operands[i].shape, &elements);
        if (i != c->options.inplace)
            bytes += (double)elements * (double)bcg_dtype_size(c->operands[i].dtype);
    }
    return bytes;
}

/* The front end of a kernel's compile in arena A: compile_front, then the
 * choices bcg_compile makes for compiled kernels. */
static bcg_status kernel_compile_front(arena *a, bcg_error *err, const char *expr,
                                       const bcg_operand *operands, int operand_count,
                                       const bcg_options *options, size_t max_source,
                                       compile **out)
{
    compile *c = arena_alloc(a, sizeof *c);
    if (!c)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    c->arena = a;
    c->err = err;
    bcg_status s = compile_front(c, expr, operands, operand_count, options);
    if (s)
        return s;
    compile_choose_jit(c, max_source);
    *out = c;
    return BCG_OK;
}

void compile_choose_jit(compile *c, size_t max_source)
{
    c->function_name = "bcg_kernel";
    /* jit.c links the microkernels; bcg_emit's source stays plain C, and so
     * does the cc backend's, which gcc -O3 vectorises itself */
    c->microkernels = c->options.backend != BCG_BACKEND_CC;
    c->max_source = max_source;
    c->stream = c->microkernels && c->options.stream_stores != 0 &&
                (c->options.stream_stores == 1 || touched_bytes(c) >= BCG_STREAM_AUTO_BYTES);
}

/* K's front end again, in A, from its key: the same tree, plan and choices
 * it was compiled with. */
static bcg_status kernel_front(const bcg_kernel *k, arena *a, bcg_error *err, compile **out)
{
    if (k->front) { /* kept: the kernel runs on the reference evaluator */
        compile *c = arena_alloc(a, sizeof *c);
        if (!c)
            return fail(err, BCG_ERR_NOMEM, "out of memory");
        *c = *k->front;
        c->arena = a;
        c->err = err;
        *out = c;
        return BCG_OK;
    }
    const char *expr;
    bcg_operand *ops;
    int count;
    bcg_options options;
    if (!cache_key_decode(a, k->key, k->key_length, &expr, &ops, &count, &options))
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    return kernel_compile_front(a, err, expr, ops, count, &options, k->max_source, out);
}

/* Whether the arguments can be keyed: compile_front rejects the others
 * before it reads the caller's arrays. */
static bool keyable(const char *expr, size_t expr_length, const bcg_operand *operands,
                    int operand_count)
{
    bool ok = expr && operands && operand_count >= 1 && operand_count <= BCG_MAX_OPERANDS &&
              expr_length <= BCG_MAX_EXPR;
    for (int i = 0; ok && i < operand_count; i++)
        ok = operands[i].rank >= 0 && operands[i].rank <= BCG_MAX_RANK && operands[i].name &&
             name_is_valid(operands[i].name, strnlen(operands[i].name, BCG_MAX_NAME + 1));
    return ok;
}

bcg_status bcg_compile(bcg_context *ctx, const char *expr, const bcg_operand *operands,
                       int operand_count, const bcg_options *options, bcg_kernel **kernel,
                       bcg_error *err)
{
    error_clear(err);
    if (!ctx || !kernel)
        return fail(err, BCG_ERR_USAGE, "bcg_compile needs a context and a kernel pointer");
    *kernel = NULL;
    bcg_options opts;
    if (options)
        opts = *options;
    else
        bcg_options_init(&opts);

    size_t expr_length = expr ? strnlen(expr, BCG_MAX_EXPR + 1) : 0;
    bool can_key = keyable(expr, expr_length, operands, operand_count);
    key_probe probe = {0, 0};
    if (can_key && (*kernel = cache_lookup(ctx, expr, expr_length, operands, operand_count,
                                           &opts, &probe)))
        return BCG_OK;

    bcg_kernel *k = mem_alloc(sizeof *k);
    arena *a = arena_new();
    if (!k || !a) {
        mem_free(k);
        arena_free(a);
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    }
    memset(k, 0, sizeof *k);
    k->ctx = ctx;
    k->lazy_lock_ready = pthread_mutex_init(&k->lazy_lock, NULL) == 0;
    k->max_source = cache_max_source(ctx);
    compile *c = NULL;
    bcg_status s = kernel_compile_front(a, err, expr, operands, operand_count, &opts,
                                        k->max_source, &c);
    if (!s && !can_key)
        s = fail(err, BCG_ERR_USAGE, "internal: kernel compiled without a cache key");
    if (!s) {
        k->key = cache_key_new(&probe, expr, expr_length, operands, operand_count, &opts);
        k->key_length = probe.length;
        k->hash = probe.hash;
        k->stream = c->stream;
        if (!k->key)
            s = fail(err, BCG_ERR_NOMEM, "out of memory");
    }
    if (!s)
        s = emit_kernel(c);
    if (!s)
        s = prepare_run(k, c, err);
    char note[600] = "";
    if (!s && !c->plan->empty) {
        bcg_error jit_err;
        error_clear(&jit_err);
        s = compile_code(c, c->source, &k->code, &k->cc, &k->fn, note, sizeof note, &jit_err);
        cache_count_compile(ctx);
        if (s == BCG_ERR_JIT) {
            /* The reference evaluator computes the same result, slower. */
            char before[sizeof note];
            snprintf(before, sizeof before, "%s", note);
            snprintf(note, sizeof note, "%.280s%s%.250s; running on the reference evaluator",
                     before, before[0] ? "; then " : "", jit_err.message);
            s = BCG_OK;
        } else if (s) {
            fail(err, s, "%s", jit_err.message);
        }
    }
    if (!s && note[0] && !(k->note = copy_text(note)))
        s = fail(err, BCG_ERR_NOMEM, "out of memory");
    c = s ? NULL : c;
    if (!s && !k->fn && !c->plan->empty) {
        /* the reference evaluator runs it: keep the front end */
        c->err = NULL; /* the caller's error struct does not outlive this call */
        c->source = NULL;
        k->arena = a;
        k->front = c;
        k->bytes += 64 * 1024; /* roughly: an arena's tree, plan and shapes */
        a = NULL;
    }
    arena_free(a);
    if (s) {
        kernel_destroy(k);
        return s;
    }
    k->bytes += jit_code_size(k->code) + (k->note ? strlen(k->note) + 1 : 0);
    *kernel = cache_insert(k);
    return BCG_OK;
}

int bcg_kernel_rank(const bcg_kernel *k) { return k ? k->rank : 0; }
const int64_t *bcg_kernel_shape(const bcg_kernel *k) { return k ? k->shape : NULL; }
bcg_dtype bcg_kernel_dtype(const bcg_kernel *k) { return k ? k->dtype : BCG_BOOL; }
int64_t bcg_kernel_elements(const bcg_kernel *k) { return k ? k->elements : 0; }
const char *bcg_kernel_note(const bcg_kernel *k) { return k && k->note ? k->note : ""; }
const char *bcg_kernel_warning(const bcg_kernel *k) { return k && k->warning ? k->warning : ""; }

const char *bcg_kernel_source(const bcg_kernel *kernel)
{
    if (!kernel)
        return NULL;
    bcg_kernel *k = (bcg_kernel *)kernel;
    if (!k->lazy_lock_ready)
        return NULL;
    pthread_mutex_lock(&k->lazy_lock);
    if (!k->source) {
        bcg_error err;
        error_clear(&err);
        arena *a = arena_new();
        compile *c = NULL;
        if (a && kernel_front(k, a, &err, &c) == BCG_OK && emit_kernel(c) == BCG_OK)
            k->source = copy_text(c->source);
        arena_free(a);
    }
    pthread_mutex_unlock(&k->lazy_lock);
    return k->source;
}

static bool overlaps(uintptr_t a, int64_t a_low, int64_t a_high, uintptr_t b, int64_t b_low,
                     int64_t b_high)
{
    if (a_low == a_high || b_low == b_high)
        return false;
    /* Unsigned arithmetic: pointers near either end of the address space
     * must not overflow a signed type. */
    uintptr_t a0 = a + (uintptr_t)a_low, a1 = a + (uintptr_t)a_high;
    uintptr_t b0 = b + (uintptr_t)b_low, b1 = b + (uintptr_t)b_high;
    return a0 < b1 && b0 < a1;
}

/* bcg_run's pointer checks; *OUTPUT becomes the in-place operand's pointer
 * when it was NULL.  The caller has checked k and that it has elements. */
static bcg_status check_run(const bcg_kernel *k, void **output_pointer,
                            const void *const *inputs, bcg_error *err)
{
    void *output = *output_pointer;
    if (!inputs)
        return fail(err, BCG_ERR_RUN, "bcg_run: the input pointer array is NULL");
    if (!output && k->inplace >= 0)
        output = (void *)inputs[k->inplace];
    /* An in-place kernel writes with the target's strides, which describe
     * the target's memory only. */
    if (k->inplace >= 0 && output != inputs[k->inplace])
        return fail_at(err, BCG_ERR_RUN, 0, k->inplace, -1,
                       "bcg_run: the kernel writes in place into %s, so the output must be "
                       "%s's own pointer (or NULL)",
                       k->run[k->inplace].name, k->run[k->inplace].name);
    if (!output)
        return fail(err, BCG_ERR_RUN, "bcg_run: the output pointer is NULL");
    if ((uintptr_t)output % k->output_size)
        return fail(err, BCG_ERR_RUN,
                    "bcg_run: the output pointer %p is not aligned to its %zu-byte elements",
                    output, k->output_size);
    for (int i = 0; i < k->operand_count; i++) {
        const run_operand *r = &k->run[i];
        if (r->low == r->high)
            continue;
        if (!inputs[i])
            return fail_at(err, BCG_ERR_RUN, 0, i, -1, "bcg_run: operand %s is NULL", r->name);
        if ((uintptr_t)inputs[i] % r->size)
            return fail_at(err, BCG_ERR_RUN, 0, i, -1,
                           "bcg_run: operand %s pointer %p is not aligned to its %zu-byte "
                           "elements",
                           r->name, inputs[i], r->size);
        if (overlaps((uintptr_t)output, k->output_low, k->output_high, (uintptr_t)inputs[i],
                     r->low, r->high) &&
            !(inputs[i] == output && r->may_alias))
            return fail_at(err, BCG_ERR_RUN, 0, i, -1,
                           "bcg_run: the output overlaps operand %s without being exactly the "
                           "same elements (partial overlap gives wrong results)",
                           r->name);
    }
    *output_pointer = output;
    return BCG_OK;
}

/* One run of K on this thread: its code, or the reference evaluator. */
static bcg_status run_whole(const bcg_kernel *k, void *output, const void *const *inputs,
                            bcg_error *err)
{
    if (k->fn) {
        k->fn(output, inputs);
        return BCG_OK;
    }
    return eval_run(k->front, output, inputs, err);
}

bcg_status bcg_run(const bcg_kernel *k, void *output, const void *const *inputs,
                   bcg_error *err)
{
    if (err && err->status != BCG_OK)
        error_clear(err);
    if (!k)
        return fail(err, BCG_ERR_USAGE, "bcg_run: no kernel");
    if (k->elements == 0)
        return BCG_OK;
    bcg_status s = check_run(k, &output, inputs, err);
    if (s)
        return s;
    /* a release or an eviction meanwhile frees K only when the run is done */
    run_token token = run_begin(k);
    s = run_whole(k, output, inputs, err);
    run_end(k, token);
    return s;
}

/* ---- threaded runs ------------------------------------------------------------------
 *
 * bcg_run_threads cuts the plan's outermost loop (E trips) into pieces of
 * CHUNK trips, the last one LAST trips (E = (parts - 1) * CHUNK + LAST).  A
 * piece is this kernel with the outermost extent changed, emitted and
 * compiled from the kernel's own tree and plan (rebuilt from its key), and
 * run on pointers moved by begin * stride[k][0] elements: every position is
 * linear in the outermost counter, a broadcast operand (stride 0) stays
 * put, and an in-place operand moves with the output since it has the
 * output's strides.  Distinct outer trips write distinct output elements
 * (the output is C-contiguous, or an in-place target checked by
 * check_inplace_layout), and an element is computed only from inputs that
 * no other piece writes (check_run allows no overlap but exact same-layout
 * aliasing), so pieces may run at once in any order and the result is
 * bcg_run's bit for bit. */

/* Below this many elements per thread, starting threads costs more than it saves. */
#define THREAD_MIN_ELEMENTS 32768

struct kernel_split {
    struct kernel_split *next;
    int asked;               /* the piece count asked for (the key) */
    int parts;               /* pieces made: ceil(E / chunk) */
    int64_t chunk, last;     /* outer trips per piece, and of the last piece */
    jit_code *code[2];
    cc_code *cc[2];          /* the cc backend's objects instead of code[] */
    kernel_fn fn[2];         /* [0]: CHUNK trips, [1]: LAST; NULL: pieces unavailable */
};

static void splits_free(bcg_kernel *k)
{
    kernel_split *s = k->splits;
    while (s) {
        kernel_split *next = s->next;
        jit_free(s->code[0]);
        jit_free(s->code[1]);
        cc_free(s->cc[0]);
        cc_free(s->cc[1]);
        mem_free(s);
        s = next;
    }
    k->splits = NULL;
}

/* Compiles K with its outermost loop cut to TRIPS. */
static bcg_status compile_piece(const bcg_kernel *k, int64_t trips, jit_code **code,
                                cc_code **cc, kernel_fn *fn, bcg_error *err)
{
    arena *a = arena_new();
    compile *c = NULL;
    plan *p = NULL;
    bcg_status s = a ? kernel_front(k, a, err, &c) : fail(err, BCG_ERR_NOMEM, "out of memory");
    if (!s && !(p = arena_alloc(a, sizeof *p)))
        s = fail(err, BCG_ERR_NOMEM, "out of memory");
    if (!s) {
        *p = *c->plan;
        p->elements = p->elements / p->extent[0] * trips;
        p->extent[0] = trips;
        c->plan = p;
        c->source = NULL;
        c->options.unroll_limit = 0; /* a piece is long: loops, never straight-line code */
        s = emit_kernel(c);
    }
    if (!s)
        s = compile_code(c, c->source, code, cc, fn, NULL, 0, err);
    arena_free(a);
    return s;
}

/* The pieces of K for ASKED threads, made on first use.  NULL only when
 * memory runs out; a split whose fn[0] is NULL could not be compiled
 * (bcg_run_threads then runs on one thread). */
static const kernel_split *find_split(bcg_kernel *k, int asked, bcg_error *err)
{
    pthread_mutex_lock(&k->lazy_lock);
    kernel_split *s = k->splits;
    while (s && s->asked != asked)
        s = s->next;
    if (!s && (s = mem_alloc(sizeof *s)) != NULL) {
        memset(s, 0, sizeof *s);
        int64_t extent = k->outer_extent;
        s->asked = asked;
        s->chunk = (extent + asked - 1) / asked;
        s->parts = (int)((extent + s->chunk - 1) / s->chunk);
        s->last = extent - (int64_t)(s->parts - 1) * s->chunk;
        bcg_error piece_err;
        error_clear(&piece_err);
        bcg_status status =
            compile_piece(k, s->chunk, &s->code[0], &s->cc[0], &s->fn[0], &piece_err);
        if (!status && s->last != s->chunk)
            status = compile_piece(k, s->last, &s->code[1], &s->cc[1], &s->fn[1], &piece_err);
        else
            s->fn[1] = s->fn[0];
        if (status == BCG_ERR_NOMEM) {
            jit_free(s->code[0]);
            cc_free(s->cc[0]);
            mem_free(s);
            s = NULL;
            fail(err, BCG_ERR_NOMEM, "out of memory");
        } else {
            if (status) { /* kept, so the failure is not retried on every run */
                jit_free(s->code[0]);
                jit_free(s->code[1]);
                cc_free(s->cc[0]);
                cc_free(s->cc[1]);
                memset(s->code, 0, sizeof s->code);
                memset(s->cc, 0, sizeof s->cc);
                memset(s->fn, 0, sizeof s->fn);
            }
            s->next = k->splits;
            k->splits = s;
        }
    } else if (!s) {
        fail(err, BCG_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_unlock(&k->lazy_lock);
    return s;
}

typedef struct piece_run {
    const bcg_kernel *kernel;
    const kernel_split *split;
    char *output;
    const void *const *inputs;
} piece_run;

static void run_piece(void *arg, int part)
{
    const piece_run *r = arg;
    const bcg_kernel *k = r->kernel;
    int64_t begin = (int64_t)part * r->split->chunk;
    const void *moved[BCG_MAX_OPERANDS];
    for (int i = 0; i < k->operand_count; i++) {
        int64_t stride = k->outer_stride[i + 1];
        moved[i] = stride == 0 ? r->inputs[i]
                               : (const char *)r->inputs[i] +
                                     begin * stride * (int64_t)k->run[i].size;
    }
    char *out = r->output + begin * k->outer_stride[0] * (int64_t)k->output_size;
    r->split->fn[part == r->split->parts - 1 ? 1 : 0](out, moved);
}

static bcg_status run_threads(const bcg_kernel *k, void *output, const void *const *inputs,
                              int threads, bcg_error *err)
{
    int64_t parts = threads;
    if (parts > k->elements / THREAD_MIN_ELEMENTS)
        parts = k->elements / THREAD_MIN_ELEMENTS;
    if (k->loop_count == 0)
        parts = 1;
    else if (parts > k->outer_extent)
        parts = k->outer_extent;
    const kernel_split *split = NULL;
    if (parts > 1 && k->fn && k->lazy_lock_ready) {
        split = find_split((bcg_kernel *)k, (int)parts, err);
        if (!split)
            return BCG_ERR_NOMEM;
    }
    pool *workers = NULL;
    if (split && split->fn[0] && split->parts > 1 && !(workers = cache_pool(k->ctx)))
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    if (!workers) /* one thread: bcg_run's path */
        return run_whole(k, output, inputs, err);
    piece_run run = {k, split, output, inputs};
    pool_run(workers, split->parts, run_piece, &run);
    return BCG_OK;
}

bcg_status bcg_run_threads(const bcg_kernel *k, void *output, const void *const *inputs,
                           int threads, bcg_error *err)
{
    if (err && err->status != BCG_OK)
        error_clear(err);
    if (!k)
        return fail(err, BCG_ERR_USAGE, "bcg_run_threads: no kernel");
    if (threads < 1 || threads > BCG_MAX_THREADS)
        return fail(err, BCG_ERR_USAGE, "bcg_run_threads: %d threads asked; give 1 to %d",
                    threads, BCG_MAX_THREADS);
    if (k->elements == 0)
        return BCG_OK;
    bcg_status s = check_run(k, &output, inputs, err);
    if (s)
        return s;
    run_token token = run_begin(k);
    s = run_threads(k, output, inputs, threads, err);
    run_end(k, token);
    return s;
}

bcg_status bcg_emit(const char *expr, const bcg_operand *operands, int operand_count,
                    const bcg_options *options, const char *function_name, char **source,
                    bcg_error *err)
{
    error_clear(err);
    if (!source)
        return fail(err, BCG_ERR_USAGE, "bcg_emit needs somewhere to put the source");
    *source = NULL;
    if (function_name && !name_is_valid(function_name, strlen(function_name)))
        return fail(err, BCG_ERR_USAGE,
                    "function name is not a C identifier ([A-Za-z_][A-Za-z0-9_]*, at most %d "
                    "bytes)",
                    BCG_MAX_NAME);
    arena *a = arena_new();
    compile *c = a ? arena_alloc(a, sizeof *c) : NULL;
    if (!c) {
        arena_free(a);
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    }
    c->arena = a;
    c->err = err;
    c->function_name = function_name ? function_name : "bcg_kernel";
    bcg_status s = compile_front(c, expr, operands, operand_count, options);
    if (!s)
        s = emit_kernel(c);
    if (!s) {
        size_t n = strlen(c->source);
        *source = mem_alloc(n + 1);
        if (!*source)
            s = fail(err, BCG_ERR_NOMEM, "out of memory");
        else
            memcpy(*source, c->source, n + 1);
    }
    arena_free(a);
    return s;
}
