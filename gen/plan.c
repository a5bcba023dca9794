/* plan.c - the iteration plan: which loops the kernel runs, in which order,
 * and how far each operand's pointer moves per step of each loop.
 *
 *   result shape, output strides, inputs (aligned + original shape/strides)
 *     -> broadcast strides    one stride per operand per result dimension,
 *                             0 where the operand (or the result) has size 1
 *     -> drop size-1 dims     they add no iterations
 *     -> order                outermost to innermost, see below
 *     -> coalesce             merge adjacent loops stepped jointly contiguously
 *
 * Glossary: a "loop" is one level of the emitted loop nest; its "extent" is
 * its trip count; an operand's "stride" in a loop is how many elements its
 * pointer advances per trip (0 = broadcast: the same element is reread).
 *
 * Order rule.  Dimensions are sorted by the magnitude of the output's stride,
 * largest outermost, so the innermost loop writes the output with the
 * smallest step.  Ties (the output steps equally, which only happens for
 * odd in-place layouts) are broken by input 0's |stride|, then input 1's and
 * so on, and finally by the result dimension index (lower outermost), which
 * makes the order total, deterministic and stable.  With a C-contiguous
 * output every kept dimension has a distinct stride, so the plan keeps C
 * order and inputs' layouts never reorder it; with an in-place output in,
 * say, Fortran layout, the output's layout wins.  NumPy's nditer also sorts
 * axes by stride magnitude, but lets every operand vote and keeps C order
 * when they disagree; bcgen favours the output because the output is the
 * one array always touched with a store, and a simple lexicographic rule is
 * easier to explain in `bcgen explain`.
 *
 * Coalescing.  An outer loop o and the inner loop i right inside it become
 * one loop of extent extent[o] * extent[i] when, for EVERY operand,
 * stride[o] == stride[i] * extent[i]: then the pair visits exactly the
 * offsets 0, s, 2s, ... with s = stride[i].  This covers broadcast operands
 * (0 == 0 * n) and negative strides (-4 == -1 * 4) alike; a product that
 * overflows int64 never merges.  Merging left to right is as good as any
 * other order, since the merged loop keeps the inner stride and the test
 * against the next loop out is then the same test as against loop o.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* |s| without the overflow of -INT64_MIN. */
static uint64_t magnitude(int64_t s)
{
    return s < 0 ? 0 - (uint64_t)s : (uint64_t)s;
}

/* C-contiguous strides over DIMS.  The products are formed in unsigned
 * arithmetic: they can only exceed int64 when another dimension is 0, and
 * then the array is empty and the strides are never used. */
static void contiguous_strides(const int64_t *dims, int rank, int64_t *strides)
{
    uint64_t step = 1;
    for (int d = rank - 1; d >= 0; d--) {
        strides[d] = (int64_t)step;
        step *= (uint64_t)dims[d];
    }
}

/* Fills ROW[d] (d < result rank) with the input's stride along result
 * dimension d: the original stride where the input really spans the
 * dimension, 0 where it is broadcast. */
static void input_broadcast_strides(const shape *result, const plan_input *in,
                                    int64_t *row)
{
    int64_t contiguous[BCG_MAX_RANK];
    const int64_t *strides = in->strides;
    assert(in->aligned->rank == result->rank);
    assert(in->axis_offset >= 0 && in->original_rank >= 0 &&
           in->original_rank <= BCG_MAX_RANK);
    if (!strides) {
        contiguous_strides(in->original->dims, in->original_rank, contiguous);
        strides = contiguous;
    }
    for (int d = 0; d < result->rank; d++) {
        int j = d - in->axis_offset;
        bool spanned = j >= 0 && j < in->original_rank;
        assert(spanned ? in->aligned->dims[d] == in->original->dims[j]
                       : in->aligned->dims[d] == 1);
        bool broadcast = in->aligned->dims[d] == 1 || result->dims[d] == 1;
        row[d] = spanned && !broadcast ? strides[j] : 0;
    }
    /* Original dimensions past the end of the aligned shape were dropped by
     * the alignment; that is only allowed for size-1 dimensions. */
    int past_end = result->rank - in->axis_offset;
    for (int j = past_end > 0 ? past_end : 0; j < in->original_rank; j++)
        assert(in->original->dims[j] == 1);
}

/* True when result dimension D1 goes outside D2 (see "Order rule" above). */
static bool outer_first(int64_t (*full)[BCG_MAX_RANK], int operand_count,
                        int d1, int d2)
{
    for (int k = 0; k < operand_count; k++) {
        uint64_t m1 = magnitude(full[k][d1]), m2 = magnitude(full[k][d2]);
        if (m1 != m2)
            return m1 > m2;
    }
    return d1 < d2;
}

/* True when loop L of P and result dimension D (extent EXTENT, strides
 * FULL[k][d]) can be merged, D going inside L. */
static bool mergeable(const plan *p, int l, int64_t (*full)[BCG_MAX_RANK],
                      int d, int64_t extent)
{
    for (int k = 0; k < p->operand_count; k++) {
        int64_t joint;
        if (__builtin_mul_overflow(full[k][d], extent, &joint) ||
            joint != p->stride[k][l])
            return false;
    }
    return true;
}

bcg_status plan_build(arena *a, const shape *result, const int64_t *output_strides,
                      int input_count, const plan_input *inputs, plan **out,
                      bcg_error *err)
{
    assert(result && out && result->rank >= 0 && result->rank <= BCG_MAX_RANK);
    assert(input_count >= 0 && input_count <= BCG_MAX_OPERANDS);
    assert(input_count == 0 || inputs);
    *out = NULL;
    int operand_count = input_count + 1;
    size_t rows = sizeof(int64_t[BCG_MAX_RANK]) * (size_t)operand_count;
    plan *p = arena_alloc(a, sizeof *p);
    if (!p)
        return fail(err, BCG_ERR_NOMEM, "out of memory building the plan");
    p->stride = arena_alloc(a, rows);
    /* full[k][d]: operand k's broadcast stride along result dimension d */
    int64_t (*full)[BCG_MAX_RANK] = arena_alloc(a, rows);
    if (!p->stride || !full)
        return fail(err, BCG_ERR_NOMEM, "out of memory building the plan");
    p->operand_count = operand_count;

    p->empty = false;
    p->elements = 1;
    for (int d = 0; d < result->rank; d++)
        if (result->dims[d] == 0)
            p->empty = true;
    if (p->empty) {
        p->elements = 0;
    } else {
        for (int d = 0; d < result->rank; d++)
            if (__builtin_mul_overflow(p->elements, result->dims[d], &p->elements))
                return fail(err, BCG_ERR_LIMIT,
                            "the result has more elements than int64 can count");
    }

    if (output_strides) {
        for (int d = 0; d < result->rank; d++)
            full[0][d] = result->dims[d] == 1 ? 0 : output_strides[d];
    } else {
        contiguous_strides(result->dims, result->rank, full[0]);
        for (int d = 0; d < result->rank; d++)
            if (result->dims[d] == 1)
                full[0][d] = 0;
    }
    for (int i = 0; i < input_count; i++)
        input_broadcast_strides(result, &inputs[i], full[i + 1]);

    /* Keep the dimensions that iterate, then insertion-sort them outermost
     * first; the tie-break on the index keeps this stable. */
    int kept = 0;
    for (int d = 0; d < result->rank; d++) {
        if (result->dims[d] == 1)
            continue;
        int pos = kept++;
        while (pos > 0 && outer_first(full, operand_count, d, p->order[pos - 1])) {
            p->order[pos] = p->order[pos - 1];
            pos--;
        }
        p->order[pos] = d;
    }
    for (int pos = kept; pos < BCG_MAX_RANK; pos++)
        p->order[pos] = -1;

    int loop_count = 0;
    for (int pos = 0; pos < kept; pos++) {
        int d = p->order[pos];
        int64_t extent = result->dims[d];
        int l = loop_count - 1;
        if (l >= 0 && mergeable(p, l, full, d, extent)) {
            p->extent[l] *= extent;
            p->dim_count[l]++;
        } else {
            l = loop_count++;
            p->extent[l] = extent;
            p->dim_first[l] = pos;
            p->dim_count[l] = 1;
        }
        /* A merged loop steps like its innermost dimension. */
        for (int k = 0; k < operand_count; k++)
            p->stride[k][l] = full[k][d];
    }
    p->loop_count = loop_count;
    *out = p;
    return BCG_OK;
}

/* Moves loop FROM to position OUTER (FROM < OUTER), the loops between one
 * out; the dimensions of each loop follow it. */
static void move_loop(plan *p, int from, int outer)
{
    int order[BCG_MAX_RANK], first[BCG_MAX_RANK], count[BCG_MAX_RANK], used = 0;
    int64_t extent[BCG_MAX_RANK], stride[BCG_MAX_OPERANDS + 1][BCG_MAX_RANK];
    for (int to = 0; to < p->loop_count; to++) {
        int l = to < from ? to : to < outer ? to + 1 : to == outer ? from : to;
        extent[to] = p->extent[l];
        for (int j = 0; j < p->operand_count; j++)
            stride[j][to] = p->stride[j][l];
        first[to] = used;
        count[to] = p->dim_count[l];
        for (int d = 0; d < p->dim_count[l]; d++)
            order[used++] = p->order[p->dim_first[l] + d];
    }
    for (int to = 0; to < p->loop_count; to++) {
        p->extent[to] = extent[to];
        p->dim_first[to] = first[to];
        p->dim_count[to] = count[to];
        for (int j = 0; j < p->operand_count; j++)
            p->stride[j][to] = stride[j][to];
    }
    memcpy(p->order, order, sizeof *order * (size_t)used);
}

/* ---- the JIT's order for a transposed input ------------------------------------
 *
 * The order rule keeps the output's layout, so an input laid out another
 * way (a of where(7 > a, 7, a) as i32[15,10,7916] with strides
 * [1,118740,15]: contiguous along dimension 0, 60 bytes apart along the
 * output's run) is read with a long stride in the innermost loop, and the
 * loop along which it is contiguous may be anywhere outside.  The JIT's
 * 2-D tiles of long runs over a transposed input (lower.c) gather a tile's
 * rows of each column together through the loop just outside the
 * innermost, reading each line of such an input once, whole, when that
 * loop is where it is contiguous.  So for the JIT's tiles, that loop moves
 * there, the others keeping their order: any order gives the same values
 * (each element is computed once from the same inputs; an in-place target
 * reads each element only where it writes it).  Measured: see lower.c,
 * "2-D tiles of long runs over a transposed input". */
void plan_order_transposed(plan *p, int64_t long_stride, int64_t min_run, int64_t min_rows)
{
    if (p->empty || p->loop_count < 3)
        return;
    int inner = p->loop_count - 1, outer = inner - 1;
    if (p->stride[0][inner] != 1 || p->extent[inner] < min_run)
        return;
    for (int k = 1; k < p->operand_count; k++) {
        int64_t across = p->stride[k][inner];
        if ((across <= long_stride && across >= -long_stride) || p->stride[k][outer] == 1)
            continue;
        int from = -1;
        for (int l = 0; l < outer; l++)
            if (p->stride[k][l] == 1 && p->extent[l] >= min_rows)
                from = l;
        if (from < 0)
            continue;
        move_loop(p, from, outer);
        return;
    }
}

/* The same for an input contiguous along no loop but read with a short
 * stride along one (a of where(a > f64(a), a, f64(a)) as f32
 * [2,4,7,3,137] with strides [84,14,2,23688,168]: dims 1-2 a loop of
 * stride 2, 168 along the run): the loop of the shortest such stride,
 * rows at most MAX_ALONG elements and two to a LINE_BYTES line (SIZE[K]
 * bytes an element of plan operand K), moves just outside the innermost,
 * where the 2-D tiles' gather reads a tile's rows of each column together
 * (lower.c, spaced_along), when the input's stride along the run is a
 * line or more and the lines read between two trips of that loop would
 * not stay in cache (REUSE_BYTES).  Not where some loop reads the input
 * contiguously (plan_order_transposed's) or the loop outside the run
 * already has such a stride. */
void plan_order_spaced(plan *p, const size_t *size, int64_t long_stride, int64_t min_run,
                       int64_t min_rows, int64_t max_along, int64_t line_bytes,
                       int64_t reuse_bytes)
{
    if (p->empty || p->loop_count < 3)
        return;
    int inner = p->loop_count - 1, outer = inner - 1;
    if (p->stride[0][inner] != 1 || p->extent[inner] < min_run)
        return;
    for (int k = 1; k < p->operand_count; k++) {
        int64_t across = p->stride[k][inner];
        if (across <= long_stride && across >= -long_stride)
            continue;
        int from = -1;
        int64_t best = 0;
        bool contiguous = false;
        for (int l = 0; l <= outer; l++) {
            int64_t s = p->stride[k][l] < 0 ? -p->stride[k][l] : p->stride[k][l];
            contiguous = contiguous || s == 1;
            if (s == 0 || s > max_along || 2 * s * (int64_t)size[k] > line_bytes ||
                p->extent[l] < min_rows || (from >= 0 && s >= best))
                continue;
            from = l;
            best = s;
        }
        if (contiguous || from < 0 || from == outer ||
            (across < 0 ? -across : across) * (int64_t)size[k] < line_bytes)
            continue;
        /* the lines read between two trips of loop FROM, a line an element:
         * when they stay in cache (REUSE_BYTES), the next trip's neighbours
         * are read from there anyway and the order is left as it is */
        double lines = 1;
        for (int l = from + 1; l <= inner; l++)
            lines *= (double)p->extent[l];
        if (lines * (double)line_bytes <= (double)reuse_bytes)
            continue;
        int64_t now = p->stride[k][outer] < 0 ? -p->stride[k][outer] : p->stride[k][outer];
        if (now != 0 && 2 * now * (int64_t)size[k] <= line_bytes)
            continue;
        move_loop(p, from, outer);
        return;
    }
}

/* "dim 2", "dims 1-3 merged" for a run of consecutive dimensions in C order,
 * or "dims 2,0 merged" when the loop reorders or skips dropped dimensions. */
static void describe_dims(const plan *p, int l, char *buf, size_t cap)
{
    const int *dims = p->order + p->dim_first[l];
    int count = p->dim_count[l];
    if (count == 1) {
        snprintf(buf, cap, "dim %d", dims[0]);
        return;
    }
    bool consecutive = true;
    for (int i = 1; i < count; i++)
        if (dims[i] != dims[i - 1] + 1)
            consecutive = false;
    if (consecutive) {
        snprintf(buf, cap, "dims %d-%d merged", dims[0], dims[count - 1]);
        return;
    }
    size_t used = (size_t)snprintf(buf, cap, "dims ");
    for (int i = 0; i < count && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, i ? ",%d" : "%d", dims[i]);
    if (used < cap)
        snprintf(buf + used, cap - used, " merged");
}

/* The head of a loop line, "loop 1: extent 12 (dims 1-2 merged)"; its length. */
static int loop_head(const plan *p, int l, char *buf, size_t cap)
{
    char dims[512];
    describe_dims(p, l, dims, sizeof dims);
    return snprintf(buf, cap, "loop %d: extent %lld (%s)", l,
                    (long long)p->extent[l], dims);
}

void plan_dump(strbuf *sb, const plan *p, const char *const *operand_names)
{
    char head[640];
    int width = 0;
    for (int l = 0; l < p->loop_count; l++) {
        int n = loop_head(p, l, head, sizeof head);
        if (n > width)
            width = n;
    }
    for (int l = 0; l < p->loop_count; l++) {
        loop_head(p, l, head, sizeof head);
        /* Pad the heads to one width so the stride columns line up. */
        sb_printf(sb, "%-*s  strides", width, head);
        for (int k = 0; k < p->operand_count; k++) {
            const char *name = operand_names ? operand_names[k] : NULL;
            sb_puts(sb, k ? ", " : " ");
            if (name)
                sb_puts(sb, name);
            else if (k == 0)
                sb_puts(sb, "out");
            else
                sb_printf(sb, "in%d", k - 1);
            sb_printf(sb, " %lld", (long long)p->stride[k][l]);
        }
        sb_putc(sb, '\n');
    }
    sb_printf(sb, "elements %lld, loops %d%s\n", (long long)p->elements,
              p->loop_count, p->empty ? ", empty" : "");
}

void plan_span(const plan *p, int k, size_t size, int64_t *low, int64_t *high)
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
