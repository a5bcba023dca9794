/* stream_rule.c - streaming against plain stores, measured the ways bcgen's
 * benchmarks run a kernel: the data behind bcg_options.stream_stores'
 * automatic rule (gen/compile.c, compile_stream_bytes).
 *
 *   stream_rule EXPR OPERANDS [--rounds N]
 *
 * OPERANDS as one argument, C-contiguous: "a=f32[4096,1] b=f32[1,4096]".
 * Three kernels of EXPR: the JIT with streaming stores forced (S1), the JIT
 * with plain stores (S0), and the cc backend (gcc -O3 -march=native).  One
 * line of numbers, each a median:
 *
 *   repeat   the kernel called back to back on its own output (make bench's
 *            time_calls, a user's loop): per-call seconds of S1, S0 and cc,
 *            in blocks of calls that alternate S1, S0, cc (the first call
 *            of a block, the change of kernel, is not counted);
 *   sweep    bench/sweep's way: single calls alternating JIT, cc, JIT, cc,
 *            the JIT and cc each with an output of its own; cc time / JIT
 *            time for S1 and for S0 (the sweep's ratio), and for a second
 *            cc kernel in the JIT's place (cc2: the pairing's own bias);
 *            "pairs_us" gives the two sides' median times of each pairing;
 *   cold     each call after a 256 MiB write that evicts the caches: S1,
 *            S0 and cc seconds.
 *
 * bench/stream_rule.sh runs it over sizes, dtypes and in/out ratios.
 * Only the public API (runtime/bcgen.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bcgen.h"

#define MAX_OPS 4
#define MAX_SAMPLES 512
#define FLUSH_BYTES (256u << 20)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void *allocate(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
        return NULL;
    memset(p, 1, bytes);
    return p;
}

/* Floats uniform in [-2, 2), integers random (as bench/sweep.c fills):
 * a byte pattern would make products of tiny floats, whose denormal
 * results take microcode assists and swamp the stores being measured. */
static void fill(void *buffer, size_t elements, bcg_dtype dtype, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    size_t size = bcg_dtype_size(dtype);
    for (size_t i = 0; i < elements; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        char *at = (char *)buffer + i * size;
        if (dtype == BCG_F32) {
            float v = (float)((double)(s >> 40) * (4.0 / 16777216.0) - 2.0);
            memcpy(at, &v, sizeof v);
        } else if (dtype == BCG_F64) {
            double v = (double)(s >> 11) * (4.0 / 9007199254740992.0) - 2.0;
            memcpy(at, &v, sizeof v);
        } else {
            memcpy(at, &s, size < 8 ? size : 8);
        }
    }
}

typedef struct operand {
    char name[32];
    bcg_dtype dtype;
    int rank;
    int64_t shape[8];
    void *buffer;
} operand;

static int parse_operands(const char *text, operand *ops)
{
    int count = 0;
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        if (count == MAX_OPS)
            return -1;
        operand *o = &ops[count];
        const char *eq = strchr(p, '='), *open = eq ? strchr(eq, '[') : NULL;
        if (!eq || !open || eq - p >= (long)sizeof o->name)
            return -1;
        memcpy(o->name, p, (size_t)(eq - p));
        o->name[eq - p] = 0;
        char dtype[16];
        if (open - eq - 1 >= (long)sizeof dtype)
            return -1;
        memcpy(dtype, eq + 1, (size_t)(open - eq - 1));
        dtype[open - eq - 1] = 0;
        if (bcg_dtype_parse(dtype, &o->dtype) != BCG_OK)
            return -1;
        p = open + 1;
        o->rank = 0;
        while (*p && *p != ']') {
            char *end;
            o->shape[o->rank++] = strtoll(p, &end, 10);
            p = *end == ',' ? end + 1 : end;
        }
        if (*p != ']')
            return -1;
        p++;
        count++;
    }
    return count;
}

static const bcg_kernel *compile(bcg_context *ctx, const char *expr, const bcg_operand *ops, int count,
                                 int stream, int backend)
{
    bcg_options o;
    bcg_options_init(&o);
    o.stream_stores = stream;
    o.backend = backend;
    o.native = 1;
    bcg_kernel *k = NULL;
    bcg_error err;
    if (bcg_compile(ctx, expr, ops, count, &o, &k, &err) != BCG_OK) {
        fprintf(stderr, "stream_rule: %s\n", err.message);
        exit(1);
    }
    if (backend == BCG_BACKEND_CC && bcg_kernel_note(k)[0]) {
        fprintf(stderr, "stream_rule: cc backend: %s\n", bcg_kernel_note(k));
        exit(1);
    }
    return k;
}

static double call(const bcg_kernel *k, void *out, const void *const *inputs)
{
    bcg_error err;
    double t0 = now();
    if (bcg_run(k, out, inputs, &err) != BCG_OK) {
        fprintf(stderr, "stream_rule: %s\n", err.message);
        exit(1);
    }
    return now() - t0;
}

static volatile unsigned char *flush_buffer;

static void flush(void)
{
    memset((void *)flush_buffer, (int)(now() * 1000) & 0xFF, FLUSH_BYTES);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: stream_rule EXPR OPERANDS [--rounds N]\n");
        return 2;
    }
    int rounds = argc > 4 && !strcmp(argv[3], "--rounds") ? atoi(argv[4]) : 15;
    operand ops[MAX_OPS];
    int count = parse_operands(argv[2], ops);
    if (count <= 0) {
        fprintf(stderr, "stream_rule: cannot read %s\n", argv[2]);
        return 2;
    }
    bcg_operand pub[MAX_OPS];
    const void *inputs[MAX_OPS];
    double in_bytes = 0;
    for (int i = 0; i < count; i++) {
        size_t elements = 1;
        for (int d = 0; d < ops[i].rank; d++)
            elements *= (size_t)ops[i].shape[d];
        size_t bytes = elements * bcg_dtype_size(ops[i].dtype);
        in_bytes += (double)bytes;
        ops[i].buffer = allocate(bytes);
        if (ops[i].buffer)
            fill(ops[i].buffer, elements, ops[i].dtype, (uint64_t)i + 1);
        inputs[i] = ops[i].buffer;
        pub[i] = (bcg_operand){ops[i].name, ops[i].dtype, ops[i].rank, ops[i].shape, NULL};
    }
    bcg_context *ctx = bcg_context_new(), *cc_ctx = bcg_context_new();
    bcg_context *cc2_ctx = bcg_context_new();
    const bcg_kernel *kernels[4] = {compile(ctx, argv[1], pub, count, 1, BCG_BACKEND_TCC),
                                    compile(ctx, argv[1], pub, count, 0, BCG_BACKEND_TCC),
                                    compile(cc_ctx, argv[1], pub, count, 0, BCG_BACKEND_CC),
                                    compile(cc2_ctx, argv[1], pub, count, 0, BCG_BACKEND_CC)};
    size_t out_bytes = (size_t)bcg_kernel_elements(kernels[0]) * bcg_dtype_size(bcg_kernel_dtype(kernels[0]));
    void *out_jit = allocate(out_bytes), *out_cc = allocate(out_bytes);
    void *outs[3] = {out_jit, out_jit, out_cc};
    flush_buffer = allocate(FLUSH_BYTES);
    if (!out_jit || !out_cc || !flush_buffer) {
        fprintf(stderr, "stream_rule: out of memory\n");
        return 1;
    }
    for (int k = 0; k < 3; k++)
        call(kernels[k], outs[k], inputs);
    double first = call(kernels[1], out_jit, inputs);
    /* blocks of about 20 ms, at least 3 calls */
    int block = first > 0 ? (int)(0.02 / first) : 3;
    if (block < 3)
        block = 3;
    if (block > 200)
        block = 200;

    /* repeat: blocks of one kernel, alternating S1, S0, cc */
    static double rep[3][MAX_SAMPLES];
    int rep_n[3] = {0, 0, 0};
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 3; k++) {
            call(kernels[k], outs[k], inputs);
            for (int i = 1; i < block && rep_n[k] < MAX_SAMPLES; i++)
                rep[k][rep_n[k]++] = call(kernels[k], outs[k], inputs);
        }
    /* sweep: single calls JIT, cc, JIT, cc, ... */
    static double ratio[4][MAX_SAMPLES], pair_jit[4][MAX_SAMPLES], pair_cc[4][MAX_SAMPLES];
    int ratio_n[4] = {0, 0, 0, 0};
    for (int r = 0; r < rounds; r++)
        for (int s = 0; s < 4; s += s == 1 ? 2 : 1) {
            call(kernels[s], out_jit, inputs);
            call(kernels[2], out_cc, inputs);
            for (int i = 0; i < block && ratio_n[s] < MAX_SAMPLES; i++) {
                double j = call(kernels[s], out_jit, inputs);
                double c = call(kernels[2], out_cc, inputs);
                pair_jit[s][ratio_n[s]] = j;
                pair_cc[s][ratio_n[s]] = c;
                ratio[s][ratio_n[s]++] = c / j;
            }
        }
    /* cold: each call after the caches are flushed */
    static double cold[3][MAX_SAMPLES];
    int cold_n = 0;
    for (int r = 0; r < rounds && cold_n < MAX_SAMPLES; r++, cold_n++)
        for (int k = 0; k < 3; k++) {
            flush();
            cold[k][cold_n] = call(kernels[k], outs[k], inputs);
        }
    printf("pairs_us S1 %.1f/%.1f S0 %.1f/%.1f cc2 %.1f/%.1f  ", 1e6 * median(pair_jit[0], ratio_n[0]),
           1e6 * median(pair_cc[0], ratio_n[0]), 1e6 * median(pair_jit[1], ratio_n[1]),
           1e6 * median(pair_cc[1], ratio_n[1]), 1e6 * median(pair_jit[3], ratio_n[3]),
           1e6 * median(pair_cc[3], ratio_n[3]));
    printf("out_MiB %.2f in_MiB %.2f repeat_us S1 %.1f S0 %.1f cc %.1f  sweep_ratio S1 %.3f S0 %.3f cc2 %.3f"
           "  cold_us S1 %.1f S0 %.1f cc %.1f  | %s | %s\n",
           (double)out_bytes / 1048576.0, in_bytes / 1048576.0, 1e6 * median(rep[0], rep_n[0]),
           1e6 * median(rep[1], rep_n[1]), 1e6 * median(rep[2], rep_n[2]), median(ratio[0], ratio_n[0]),
           median(ratio[1], ratio_n[1]), median(ratio[3], ratio_n[3]), 1e6 * median(cold[0], cold_n), 1e6 * median(cold[1], cold_n),
           1e6 * median(cold[2], cold_n), argv[1], argv[2]);
    return 0;
}
