/* fuzz_compile.c - the whole compile path: the input chooses up to three
 * operands (dtype, rank <= 3, sizes, strides), the options, how the kernel
 * runs and the expression text.  Whatever compiles is run - through
 * bcg_run, or bcg_run_threads on two threads - and computed again by the
 * reference evaluator (eval.c) on the same plan over the same data, and the
 * two must agree bit for bit (NaN matching any NaN).  The one exception is
 * what docs/semantics.md allows: f32 exp, log, sin, cos and tanh on inner
 * runs long enough for the vectorised microkernels are within 2 ulp of
 * libm.  When such a call is the root of the expression its results are
 * compared within 2 ulp; when it is deeper (its error can grow on the way
 * up) the kernel is run for memory safety only, and the same kernel
 * without microkernels is compared bit for bit.  Whatever does not compile
 * must fail with a status and a message.
 *
 * Input layout:
 *   byte 0     bits 0-1 operand count - 1 (mod 3), 2-3 full-unroll limit
 *              (0, 16, 64, 4), 4-5 unroll factor - 1, 6 "extended": stride
 *              and run bytes follow the operands, 7 "long": sizes are
 *              1, 3, 67, 1024 instead of 0..3
 *   2 bytes    per operand: dtype; rank (bits 0-1) and a 2-bit size code
 *              per dimension
 *   extended:  1 byte per operand, a 2-bit stride code per dimension (the
 *              C-contiguous stride times 1, -1, 0 or 2; 0 as a whole byte
 *              is C-contiguous), then 1 run byte: bits 0-1 in place into
 *              operand (value - 1), bit 2 bcg_run_threads on 2 threads,
 *              bit 3 no microkernels, bit 4 streaming stores forced
 *   the rest   the expression
 *
 * "long" sizes reach the paths small shapes cannot: inner runs of 67 and
 * 1024 elements take the microkernels (64 or more), outputs of 65536 and
 * more elements are cut into pieces for two threads.  Results are capped
 * at 2^18 elements to keep each input fast. */
#include "internal.h"

#include <math.h>

#include "fuzz.h"

#define MAX_ELEMENTS ((int64_t)1 << 18)
#define TRANSCENDENTAL_ULP 2 /* TRANSCENDENTAL_F32_MAX_ULP, docs/semantics.md */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void fill(void *buffer, bcg_dtype t, int64_t count, uint64_t seed)
{
    static const double specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e30, -1e30,
                                      INFINITY, -INFINITY, NAN, 3.0, 127.0, 255.0, 1e-40, 7.5};
    for (int64_t i = 0; i < count; i++) {
        uint64_t r = mix(seed + (uint64_t)i);
        double v = (r & 3) ? (double)((int64_t)(r >> 8) % 41 - 20) : specials[(r >> 2) % 16];
        if ((r & 0x70) == 0x70)
            v = (double)(int64_t)(r >> 20) / 1048576.0; /* fractions, for the math functions */
        switch (t) {
        case BCG_BOOL: ((uint8_t *)buffer)[i] = (uint8_t)(r >> 40) & 1; break;
        case BCG_I8: ((int8_t *)buffer)[i] = (int8_t)(r >> 24); break;
        case BCG_I16: ((int16_t *)buffer)[i] = (int16_t)(r >> 24); break;
        case BCG_I32: ((int32_t *)buffer)[i] = (r & 4) ? (int32_t)(r >> 24) : (int32_t)(isfinite(v) ? fmod(v, 100) : 0); break;
        case BCG_I64: ((int64_t *)buffer)[i] = (r & 4) ? (int64_t)(r >> 1) : (int64_t)(r % 41) - 20; break;
        case BCG_U8: ((uint8_t *)buffer)[i] = (uint8_t)(r >> 24); break;
        case BCG_U16: ((uint16_t *)buffer)[i] = (uint16_t)(r >> 24); break;
        case BCG_U32: ((uint32_t *)buffer)[i] = (uint32_t)(r >> 24); break;
        case BCG_U64: ((uint64_t *)buffer)[i] = (r & 4) ? r : r % 41; break;
        case BCG_F32: ((float *)buffer)[i] = (float)v; break;
        case BCG_F64: ((double *)buffer)[i] = v; break;
        case BCG_F16: /* values, and now and then any 16-bit pattern */
            ((uint16_t *)buffer)[i] = (r & 0x300) == 0x300 ? (uint16_t)(r >> 32) : bcg_f16_from_f64(v);
            break;
        case BCG_BF16:
            ((uint16_t *)buffer)[i] = (r & 0x300) == 0x300 ? (uint16_t)(r >> 32)
                                                            : bcg_bf16_from_f32((float)v);
            break;
        default: break;
        }
    }
}

/* Distance in ulps between two floats, via their ordered bits. */
static uint64_t float_ulps(float x, float y)
{
    if (isnan(x) || isnan(y))
        return isnan(x) && isnan(y) ? 0 : UINT64_MAX;
    if (x == y)
        return 0;
    int32_t ia, ib;
    memcpy(&ia, &x, 4);
    memcpy(&ib, &y, 4);
    int64_t a = ia < 0 ? INT32_MIN - (int64_t)ia : ia;
    int64_t b = ib < 0 ? INT32_MIN - (int64_t)ib : ib;
    return a > b ? (uint64_t)(a - b) : (uint64_t)(b - a);
}

/* An f32 function whose microkernel is a polynomial (ops.h: a tile family
 * and transcendental; sqrt's is correctly rounded): exp, log, sin, cos,
 * tanh, and issue 13's log1p ... erf, expit. */
static bool is_transcendental_f32(const expr_node *n)
{
    return n->dtype == BCG_F32 && n->op != OP_SQRT && op_table[n->op].tile &&
           op_table[n->op].transcendental;
}

/* How far the microkernel may be from the straight-line code: the
 * polynomial's bound plus libm's (docs/semantics.md, accuracy table). */
static uint64_t approximate_ulp(const expr_node *n)
{
    return n->op == OP_EXP || n->op == OP_LOG || n->op == OP_SIN || n->op == OP_COS ||
                   n->op == OP_TANH
               ? TRANSCENDENTAL_ULP
               : 5;
}

/* An f32 exp/log/sin/cos/tanh anywhere below N. */
static bool transcendental_below(const expr_node *n)
{
    for (int i = 0; i < n->arg_count; i++)
        if (is_transcendental_f32(n->args[i]) || transcendental_below(n->args[i]))
            return true;
    return false;
}

/* COUNT elements of type T: equal bit for bit, NaN matching any NaN, or
 * for f32 within ULP ulps. */
static bool same_values(const unsigned char *x, const unsigned char *y, int64_t count,
                        bcg_dtype t, uint64_t ulp)
{
    size_t size = bcg_dtype_size(t);
    for (int64_t i = 0; i < count; i++, x += size, y += size) {
        if (t == BCG_F32) {
            float fx, fy;
            memcpy(&fx, x, 4);
            memcpy(&fy, y, 4);
            if (float_ulps(fx, fy) > ulp)
                return false;
        } else if (t == BCG_F64) {
            double dx, dy;
            memcpy(&dx, x, 8);
            memcpy(&dy, y, 8);
            if (!(isnan(dx) && isnan(dy)) && memcmp(x, y, 8) != 0)
                return false;
        } else if (t == BCG_F16 || t == BCG_BF16) {
            uint16_t hx, hy;
            memcpy(&hx, x, 2);
            memcpy(&hy, y, 2);
            float fx = t == BCG_F16 ? bcg_f16_to_f32(hx) : bcg_bf16_to_f32(hx);
            float fy = t == BCG_F16 ? bcg_f16_to_f32(hy) : bcg_bf16_to_f32(hy);
            /* ULP counts f32 ulps: an f16 one is 2^13 of them, a bf16 one 2^16 */
            if (float_ulps(fx, fy) > (t == BCG_F16 ? ulp << 13 : ulp << 16))
                return false;
        } else if (memcmp(x, y, size) != 0) {
            return false;
        }
    }
    return true;
}

typedef struct operand_memory {
    unsigned char *jit, *reference; /* buffers of `span` elements (the reference's
                                        copy is written only in place) */
    int64_t span, offset;           /* elements; element [0,...,0] is at `offset` */
} operand_memory;

/* The span of an operand's elements, and where element [0, ..., 0] is in it. */
static void operand_span(const bcg_operand *op, int64_t *span, int64_t *offset)
{
    int64_t low = 0, high = 0;
    for (int d = 0; d < op->rank; d++) {
        if (op->shape[d] == 0) {
            *span = 0;
            *offset = 0;
            return;
        }
        int64_t step = (op->shape[d] - 1) * (op->strides ? op->strides[d] : 0);
        if (step < 0)
            low += step;
        else
            high += step;
    }
    if (!op->strides) { /* C-contiguous */
        int64_t elements = 1;
        for (int d = 0; d < op->rank; d++)
            elements *= op->shape[d];
        low = 0;
        high = elements - 1;
    }
    *span = high - low + 1;
    *offset = -low;
}

/* Runs KERNEL (the JIT) and the reference evaluator on the same inputs and
 * compares, f32 within ULP ulps; CHECK_VALUES false: the JIT run is for
 * memory safety only. */
static void run_and_compare(bcg_kernel *k, const compile *c, const bcg_operand *ops, int count,
                            int inplace, bool threads, bool check_values, uint64_t ulp,
                            uint64_t seed)
{
    operand_memory memory[3];
    const void *jit_in[3], *reference_in[3];
    for (int i = 0; i < count; i++) {
        operand_memory *m = &memory[i];
        operand_span(&ops[i], &m->span, &m->offset);
        size_t bytes = (size_t)(m->span ? m->span : 1) * bcg_dtype_size(ops[i].dtype);
        m->jit = malloc(bytes);
        m->reference = malloc(bytes);
        FUZZ_CHECK(m->jit && m->reference);
        fill(m->jit, ops[i].dtype, m->span, seed * 1000003u + (uint64_t)i);
        memcpy(m->reference, m->jit, bytes);
        size_t at = (size_t)m->offset * bcg_dtype_size(ops[i].dtype);
        jit_in[i] = m->jit + at;
        /* only the in-place target is written; the others are shared */
        reference_in[i] = (i == inplace ? m->reference : m->jit) + at;
    }
    int64_t elements = bcg_kernel_elements(k);
    bcg_dtype result_type = bcg_kernel_dtype(k);
    size_t out_size = bcg_dtype_size(inplace >= 0 ? ops[inplace].dtype : result_type);
    size_t out_bytes = (size_t)(elements ? elements : 1) * out_size;
    unsigned char *jit_out = NULL, *reference_out = NULL;
    if (inplace < 0) {
        jit_out = malloc(out_bytes);
        reference_out = malloc(out_bytes);
        FUZZ_CHECK(jit_out && reference_out);
        memset(jit_out, 0xa5, out_bytes);
        memset(reference_out, 0x5a, out_bytes);
    }
    bcg_error err;
    if (threads)
        FUZZ_CHECK(bcg_run_threads(k, jit_out, jit_in, 2, &err) == BCG_OK);
    else
        FUZZ_CHECK(bcg_run(k, jit_out, jit_in, &err) == BCG_OK);

    if (elements > 0 && check_values) {
        bcg_error reference_err;
        error_clear(&reference_err);
        void *reference_target = inplace >= 0 ? (void *)reference_in[inplace] : reference_out;
        FUZZ_CHECK(eval_run(c, reference_target, reference_in, &reference_err) == BCG_OK);
        if (inplace >= 0) /* the whole buffer: what is outside the view must be untouched too */
            FUZZ_CHECK(same_values(memory[inplace].jit, memory[inplace].reference,
                                   memory[inplace].span, ops[inplace].dtype, ulp));
        else
            FUZZ_CHECK(same_values(jit_out, reference_out, elements, result_type, ulp));
    }
    for (int i = 0; i < count; i++) {
        free(memory[i].jit);
        free(memory[i].reference);
    }
    free(jit_out);
    free(reference_out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3 || size > 512)
        return 0;
    int count = 1 + (data[0] & 3) % 3;
    bool extended = data[0] & 0x40, long_sizes = data[0] & 0x80;
    size_t header = 1 + 2 * (size_t)count + (extended ? (size_t)count + 1 : 0);
    if (size < header)
        return 0;
    static const int unroll_limits[] = {0, 16, 64, 4};
    static const int64_t short_sizes[] = {0, 1, 2, 3}, long_size_table[] = {1, 3, 67, 1024};
    static const int64_t stride_factors[] = {1, -1, 0, 2};
    const int64_t *sizes = long_sizes ? long_size_table : short_sizes;
    bcg_options o;
    bcg_options_init(&o);
    o.unroll_limit = unroll_limits[(data[0] >> 2) & 3];
    o.unroll_factor = 1 + ((data[0] >> 4) & 3);
    static const char *const names[] = {"a", "b", "c"};
    int64_t shapes[3][3], strides[3][3];
    bcg_operand ops[3];
    int64_t largest = 1; /* the most elements the result can have */
    for (int i = 0; i < count; i++) {
        uint8_t t = data[1 + 2 * i], r = data[2 + 2 * i];
        int rank = r & 3;
        for (int d = 0; d < rank; d++)
            shapes[i][d] = sizes[(r >> (2 + 2 * d)) & 3];
        ops[i] = (bcg_operand){names[i], (bcg_dtype)(t % BCG_DTYPE_COUNT), rank, shapes[i], NULL};
        if (extended && data[1 + 2 * count + i] != 0) {
            uint8_t codes = data[1 + 2 * count + i];
            int64_t contiguous = 1;
            for (int d = rank - 1; d >= 0; d--) {
                strides[i][d] = contiguous * stride_factors[(codes >> (2 * d)) & 3];
                contiguous *= shapes[i][d] ? shapes[i][d] : 1;
            }
            ops[i].strides = strides[i];
        }
    }
    /* the result's size in each aligned dimension is the largest there */
    int result_rank = 0;
    for (int i = 0; i < count; i++)
        if (ops[i].rank > result_rank)
            result_rank = ops[i].rank;
    for (int d = 0; d < result_rank; d++) {
        int64_t dim = 1;
        for (int i = 0; i < count; i++) {
            int at = d - (result_rank - ops[i].rank);
            if (at >= 0 && ops[i].shape[at] > dim)
                dim = ops[i].shape[at];
        }
        largest *= dim;
    }
    if (largest > MAX_ELEMENTS)
        return 0;
    int inplace = -1;
    bool threads = false;
    if (extended) {
        uint8_t run = data[header - 1];
        if ((run & 3) != 0 && (run & 3) <= count)
            inplace = (run & 3) - 1;
        threads = run & 4;
        if (run & 8)
            o.microkernel_run = 0;
        if (run & 16)
            o.stream_stores = 1;
    }
    o.inplace = inplace;
    char *text = fuzz_string(data + header, size - header);

    bcg_context *ctx = bcg_context_new();
    FUZZ_CHECK(ctx != NULL);
    bcg_kernel *k = NULL;
    bcg_error err;
    bcg_status s = bcg_compile(ctx, text, ops, count, &o, &k, &err);
    if (s != BCG_OK) {
        FUZZ_CHECK(k == NULL && err.status == s && err.message[0]);
        bcg_context_free(ctx);
        free(text);
        return 0;
    }
    FUZZ_CHECK(bcg_kernel_elements(k) >= 0 && bcg_kernel_elements(k) <= MAX_ELEMENTS);

    arena *a = arena_new();
    compile *c = a ? arena_alloc(a, sizeof *c) : NULL;
    FUZZ_CHECK(c != NULL);
    bcg_error reference_err;
    error_clear(&reference_err);
    c->arena = a;
    c->err = &reference_err;
    c->function_name = "bcg_kernel";
    FUZZ_CHECK(compile_front(c, text, ops, count, &o) == BCG_OK);

    /* A microkernel's f32 exp/log/sin/cos/tanh is within 2 ulp of libm: at
     * the root (stored as f32) that is the tolerance; below it, or converted
     * on an in-place store, the error can grow, and the kernel without
     * microkernels is what is compared. */
    bool root_approximate = o.microkernel_run > 0 && is_transcendental_f32(c->root);
    bool deep = o.microkernel_run > 0 &&
                (transcendental_below(c->root) ||
                 (root_approximate && inplace >= 0 && ops[inplace].dtype != BCG_F32));
    run_and_compare(k, c, ops, count, inplace, threads, !deep,
                    root_approximate ? approximate_ulp(c->root) : 0, (uint64_t)size);
    if (deep) {
        o.microkernel_run = 0;
        bcg_kernel *plain = NULL;
        FUZZ_CHECK(bcg_compile(ctx, text, ops, count, &o, &plain, &err) == BCG_OK);
        run_and_compare(plain, c, ops, count, inplace, threads, true, 0, (uint64_t)size);
    }
    arena_free(a);
    bcg_context_free(ctx);
    free(text);
    return 0;
}
