/* fuzz_compile.c - the whole compile path: the input chooses up to three
 * operands (dtype, rank <= 3, sizes 0..3), the options and the expression
 * text.  Whatever compiles is run twice - the tcc-compiled kernel through
 * bcg_run and the reference evaluator (eval.c) on the same plan - over the
 * same data, and the two must agree: integers and bools exactly, floats to
 * within 4 ulps (NaN matching NaN).  Whatever does not compile must fail
 * with a status and a message.
 *
 * Input layout: byte 0 operand count and options, then 2 bytes per operand
 * (dtype; rank and sizes), then the expression. */
#include "internal.h"

#include <math.h>

#include "fuzz.h"

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
        default: break;
        }
    }
}

/* Distance in ulps between two floats of the same type, via their ordered bits. */
static uint64_t ulps(double x, double y, bool single)
{
    if (isnan(x) || isnan(y))
        return isnan(x) && isnan(y) ? 0 : UINT64_MAX;
    if (x == y)
        return 0;
    int64_t a, b;
    if (single) {
        float fx = (float)x, fy = (float)y;
        int32_t ia, ib;
        memcpy(&ia, &fx, 4);
        memcpy(&ib, &fy, 4);
        a = ia < 0 ? INT32_MIN - (int64_t)ia : ia;
        b = ib < 0 ? INT32_MIN - (int64_t)ib : ib;
    } else {
        memcpy(&a, &x, 8);
        memcpy(&b, &y, 8);
        a = a < 0 ? INT64_MIN - a : a;
        b = b < 0 ? INT64_MIN - b : b;
        if ((a < 0) != (b < 0))
            return UINT64_MAX;
    }
    return a > b ? (uint64_t)(a - b) : (uint64_t)(b - a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3 || size > 512)
        return 0;
    int count = 1 + data[0] % 3;
    if (size < 1 + 2 * (size_t)count)
        return 0;
    static const int unroll_limits[] = {0, 16, 64, 4};
    bcg_options o;
    bcg_options_init(&o);
    o.unroll_limit = unroll_limits[(data[0] >> 2) & 3];
    o.unroll_factor = 1 + ((data[0] >> 4) & 3);
    static const char *const names[] = {"a", "b", "c"};
    int64_t shapes[3][3];
    bcg_operand ops[3];
    for (int i = 0; i < count; i++) {
        uint8_t t = data[1 + 2 * i], r = data[2 + 2 * i];
        int rank = r & 3;
        for (int d = 0; d < rank; d++)
            shapes[i][d] = (r >> (2 + 2 * d)) & 3;
        ops[i] = (bcg_operand){names[i], (bcg_dtype)(t % BCG_DTYPE_COUNT), rank, shapes[i], NULL};
    }
    char *text = fuzz_string(data + 1 + 2 * count, size - 1 - 2 * (size_t)count);

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
    int64_t elements = bcg_kernel_elements(k);
    bcg_dtype result_type = bcg_kernel_dtype(k);
    size_t out_size = bcg_dtype_size(result_type);
    FUZZ_CHECK(elements >= 0 && elements <= 27);

    /* Inputs: 27 elements each is the most any of them can need. */
    _Alignas(16) unsigned char in_data[3][27 * 8];
    const void *in[3];
    for (int i = 0; i < count; i++) {
        fill(in_data[i], ops[i].dtype, 27, (uint64_t)size * 1000003u + (uint64_t)i);
        in[i] = in_data[i];
    }
    _Alignas(16) unsigned char jit_out[27 * 8], ref_out[27 * 8];
    memset(jit_out, 0xa5, sizeof jit_out);
    memset(ref_out, 0x5a, sizeof ref_out);
    FUZZ_CHECK(bcg_run(k, jit_out, in, &err) == BCG_OK);

    arena *a = arena_new();
    compile *c = a ? arena_alloc(a, sizeof *c) : NULL;
    FUZZ_CHECK(c != NULL);
    bcg_error ref_err;
    error_clear(&ref_err);
    c->arena = a;
    c->err = &ref_err;
    c->function_name = "bcg_kernel";
    FUZZ_CHECK(compile_front(c, text, ops, count, &o) == BCG_OK);
    if (elements > 0)
        FUZZ_CHECK(eval_run(c, ref_out, in, &ref_err) == BCG_OK);
    else
        memcpy(ref_out, jit_out, sizeof ref_out);

    for (int64_t i = 0; i < elements; i++) {
        const unsigned char *x = jit_out + i * (int64_t)out_size, *y = ref_out + i * (int64_t)out_size;
        if (result_type == BCG_F32) {
            float fx, fy;
            memcpy(&fx, x, 4);
            memcpy(&fy, y, 4);
            FUZZ_CHECK(ulps(fx, fy, true) <= 4);
        } else if (result_type == BCG_F64) {
            double dx, dy;
            memcpy(&dx, x, 8);
            memcpy(&dy, y, 8);
            FUZZ_CHECK(ulps(dx, dy, false) <= 4);
        } else {
            FUZZ_CHECK(memcmp(x, y, out_size) == 0);
        }
    }
    arena_free(a);
    bcg_context_free(ctx);
    free(text);
    return 0;
}
