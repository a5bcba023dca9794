/* driver.c - the C half of `make bench`: times bcgen's kernels, the
 * reference evaluator and a memcpy bound on the cases of bench/cases.txt,
 * and prints one JSON object per case on stdout for bench/bench.py to merge
 * with the Python peers (NumPy, numexpr, PyTorch).
 *
 *   driver CASES.txt [--quick] [--only NAME]
 *
 * Every time is a median over repeated runs; a run of a small case is a
 * loop of many calls divided by their count, so per-call times are not
 * swamped by the clock.  The memcpy bound copies half of the bytes the
 * kernel moves (a copy reads and writes each byte once), so its time is
 * what the same traffic costs on this machine in this run.
 *
 * bcgen goes through the public API (bcg_compile, bcg_run, and
 * bcg_run_threads with BENCH_THREADS threads for the threaded column, and
 * bcg_run of a kernel compiled with the cc backend, -march=native, for the
 * "bcgen cc" column), as a user's program would; the reference evaluator (eval_run) has no public entry, so
 * the driver links libbcgen.a and includes internal.h for it alone.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "hand.h"

#define MAX_CASE_OPERANDS 8
#define LINE_MAX_BYTES 1024
/* The thread count of the threaded column (the machine has 2 cores). */
#define BENCH_THREADS 2

typedef struct bench_operand {
    char name[BCG_MAX_NAME + 1];
    bcg_dtype dtype;
    shape shape;
    int64_t strides[BCG_MAX_RANK];
    bool strided;
    int64_t span;       /* elements the buffer holds */
    int64_t offset;     /* element [0,...,0] within it (negative strides) */
    void *buffer;
} bench_operand;

typedef struct bench_case {
    char name[64];
    char expr[256];
    int operand_count;
    bench_operand operands[MAX_CASE_OPERANDS];
} bench_case;

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, compare_doubles);
    return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

/* NAME=DTYPE[SHAPE] or NAME=DTYPE[SHAPE]@[STRIDES] */
static bool parse_operand(const char *text, bench_operand *op)
{
    const char *equals = strchr(text, '=');
    const char *open = equals ? strchr(equals, '[') : NULL;
    const char *close = open ? strchr(open, ']') : NULL;
    if (!equals || !open || !close || (size_t)(equals - text) > BCG_MAX_NAME)
        return false;
    memset(op, 0, sizeof *op);
    memcpy(op->name, text, (size_t)(equals - text));
    char dtype_text[16];
    size_t dtype_length = (size_t)(open - equals - 1);
    if (dtype_length >= sizeof dtype_text)
        return false;
    memcpy(dtype_text, equals + 1, dtype_length);
    dtype_text[dtype_length] = 0;
    if (bcg_dtype_parse(dtype_text, &op->dtype) != BCG_OK)
        return false;
    if (shape_parse(open, (size_t)(close - open + 1), &op->shape, NULL) != BCG_OK)
        return false;
    int64_t step = 1;
    for (int d = op->shape.rank - 1; d >= 0; d--) {
        op->strides[d] = step;
        step *= op->shape.dims[d];
    }
    op->span = step;
    if (close[1] == '@') {
        /* [S0,S1,...]: any sign (shape_parse takes sizes, not strides) */
        shape strides;
        strides.rank = 0;
        const char *at = close + 2;
        if (*at != '[')
            return false;
        at++;
        while (*at && *at != ']') {
            char *end;
            long long v = strtoll(at, &end, 10);
            if (end == at || strides.rank == BCG_MAX_RANK)
                return false;
            strides.dims[strides.rank++] = v;
            at = end;
            while (*at == ',' || *at == ' ')
                at++;
        }
        if (*at != ']' || strides.rank != op->shape.rank)
            return false;
        op->strided = true;
        int64_t reach = 0;
        for (int d = 0; d < op->shape.rank; d++) {
            op->strides[d] = strides.dims[d];
            int64_t extent = strides.dims[d] * (op->shape.dims[d] - 1);
            if (extent < 0)
                op->offset -= extent;
            reach += extent < 0 ? -extent : extent;
        }
        if (reach + 1 > op->span)
            op->span = reach + 1;
    }
    return true;
}

static bool parse_case(char *line, bench_case *c)
{
    char *fields[4] = {0};
    int count = 0;
    for (char *s = line; count < 4; count++) {
        fields[count] = s;
        char *bar = strchr(s, '|');
        if (!bar) {
            count++;
            break;
        }
        *bar = 0;
        s = bar + 1;
    }
    if (count < 3)
        return false;
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", trim(fields[0]));
    snprintf(c->expr, sizeof c->expr, "%s", trim(fields[1]));
    char *save = NULL;
    for (char *word = strtok_r(trim(fields[2]), " ", &save); word;
         word = strtok_r(NULL, " ", &save)) {
        if (c->operand_count == MAX_CASE_OPERANDS ||
            !parse_operand(word, &c->operands[c->operand_count]))
            return false;
        c->operand_count++;
    }
    return c->operand_count > 0;
}

static uint64_t random_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* Floats uniform in [-2, 2) (f16 and bf16 rounded from f32); integers over
 * their whole range. */
static void fill(bench_operand *op, uint64_t seed)
{
    uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
    size_t size = bcg_dtype_size(op->dtype);
    for (int64_t i = 0; i < op->span; i++) {
        uint64_t r = random_next(&state);
        double unit = (double)(r >> 11) * (1.0 / 9007199254740992.0);
        char *at = (char *)op->buffer + (size_t)i * size;
        if (op->dtype == BCG_F32) {
            float v = (float)(4.0 * unit - 2.0);
            memcpy(at, &v, sizeof v);
        } else if (op->dtype == BCG_F64) {
            double v = 4.0 * unit - 2.0;
            memcpy(at, &v, sizeof v);
        } else if (op->dtype == BCG_F16 || op->dtype == BCG_BF16) {
            float v = (float)(4.0 * unit - 2.0);
            uint16_t bits = op->dtype == BCG_F16 ? bcg_f16_from_f32(v) : bcg_bf16_from_f32(v);
            memcpy(at, &bits, sizeof bits);
        } else if (op->dtype == BCG_BOOL) {
            *at = (char)(r & 1);
        } else {
            memcpy(at, &r, size);
        }
    }
}

static void *allocate(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

/* Runs BODY enough times per repetition to last about TARGET seconds and
 * returns the median seconds per call over REPEATS repetitions. */
typedef void (*timed_body)(void *state);

static double time_calls(timed_body body, void *state, int repeats, double target)
{
    body(state); /* warm up: page faults, caches, lazy binding */
    double start = now_seconds();
    body(state);
    double once = now_seconds() - start;
    long calls = once > 0 ? (long)(target / once) : 1000000;
    if (calls < 1)
        calls = 1;
    if (calls > 10000000)
        calls = 10000000;
    double samples[64];
    if (repeats > 64)
        repeats = 64;
    for (int r = 0; r < repeats; r++) {
        start = now_seconds();
        for (long i = 0; i < calls; i++)
            body(state);
        samples[r] = (now_seconds() - start) / (double)calls;
    }
    return median(samples, repeats);
}

typedef struct run_state {
    const bcg_kernel *kernel;
    const compile *front;
    void *output;
    const void *inputs[MAX_CASE_OPERANDS];
    void *copy_to, *copy_from;
    size_t copy_bytes;
    hand_fn hand;
    void *hand_output;
    const void *buffers[MAX_CASE_OPERANDS]; /* each operand's whole buffer */
    size_t buffer_bytes[MAX_CASE_OPERANDS];
    int count;
    size_t output_bytes;
    bool failed;
} run_state;

static void run_bcgen(void *opaque)
{
    run_state *s = opaque;
    bcg_error err;
    if (bcg_run(s->kernel, s->output, s->inputs, &err) != BCG_OK)
        s->failed = true;
}

static void run_bcgen_threads(void *opaque)
{
    run_state *s = opaque;
    bcg_error err;
    if (bcg_run_threads(s->kernel, s->output, s->inputs, BENCH_THREADS, &err) != BCG_OK)
        s->failed = true;
}

static void run_reference(void *opaque)
{
    run_state *s = opaque;
    if (eval_run(s->front, s->output, s->inputs, NULL) != BCG_OK)
        s->failed = true;
}

static void run_hand(void *opaque)
{
    run_state *s = opaque;
    s->hand(s->hand_output, s->inputs);
    __asm__ volatile("" ::: "memory");
}

static void run_nt_bound(void *opaque)
{
    run_state *s = opaque;
    hand_nt_bound(s->buffers, s->buffer_bytes, s->count, s->hand_output, s->output_bytes);
}

/* Elements where the hand loop's output differs from bcgen's: bitwise, or
 * for f32 by more than 8 eps relative to max(|x|, |y|, 1) (bcgen's f32 exp
 * is a polynomial within 1 ulp of libm, which the hand loop calls). */
static int64_t hand_differences(const void *x, const void *y, int64_t n, bcg_dtype d)
{
    size_t size = bcg_dtype_size(d);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (memcmp((const char *)x + i * (int64_t)size, (const char *)y + i * (int64_t)size, size) == 0)
            continue;
        if (d == BCG_F32) {
            /* an ulp or two of exp(a) may be many of exp(a) + b near 0 */
            float p, q;
            memcpy(&p, (const char *)x + i * 4, 4);
            memcpy(&q, (const char *)y + i * 4, 4);
            double scale = fabs(p) > fabs(q) ? fabs(p) : fabs(q);
            if (fabs((double)p - (double)q) <= 8 * 1.1920929e-7 * (scale > 1 ? scale : 1))
                continue;
        }
        bad++;
    }
    return bad;
}

static void run_memcpy(void *opaque)
{
    run_state *s = opaque;
    memcpy(s->copy_to, s->copy_from, s->copy_bytes);
    __asm__ volatile("" ::: "memory");
}

static void to_public(const bench_case *c, bcg_operand *ops)
{
    for (int i = 0; i < c->operand_count; i++) {
        const bench_operand *o = &c->operands[i];
        ops[i] = (bcg_operand){o->name, o->dtype, o->shape.rank, o->shape.dims,
                               o->strided ? o->strides : NULL};
    }
}

/* Median milliseconds of a first compile (a fresh context each time, so
 * tcc runs) and microseconds of a cache hit. */
static bool time_compile(const bench_case *c, int repeats, double *first_ms, double *hit_us,
                         bcg_error *err)
{
    bcg_operand ops[MAX_CASE_OPERANDS];
    to_public(c, ops);
    double samples[64];
    if (repeats > 64)
        repeats = 64;
    for (int r = 0; r < repeats; r++) {
        bcg_context *ctx = bcg_context_new();
        bcg_kernel *k;
        double start = now_seconds();
        bcg_status s = bcg_compile(ctx, c->expr, ops, c->operand_count, NULL, &k, err);
        samples[r] = (now_seconds() - start) * 1e3;
        if (s != BCG_OK) {
            bcg_context_free(ctx);
            return false;
        }
        if (r == repeats - 1) {
            double hits[16];
            for (int h = 0; h < 16; h++) {
                start = now_seconds();
                for (int i = 0; i < 1000; i++)
                    bcg_compile(ctx, c->expr, ops, c->operand_count, NULL, &k, err);
                hits[h] = (now_seconds() - start) / 1000 * 1e6;
            }
            *hit_us = median(hits, 16);
        }
        bcg_context_free(ctx);
    }
    *first_ms = median(samples, repeats);
    return true;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

static int bench_one(bench_case *c, bool quick)
{
    bcg_error err;
    bcg_operand ops[MAX_CASE_OPERANDS];
    int status = 1;
    for (int i = 0; i < c->operand_count; i++) {
        bench_operand *o = &c->operands[i];
        o->buffer = allocate((size_t)o->span * bcg_dtype_size(o->dtype));
        if (!o->buffer) {
            fprintf(stderr, "driver: %s: out of memory\n", c->name);
            return 1;
        }
        fill(o, (uint64_t)i + 1);
    }
    to_public(c, ops);
    hand_fn hand = hand_lookup(c->name);

    bcg_context *ctx = bcg_context_new(), *cc_context = NULL;
    bcg_kernel *kernel = NULL;
    arena *front_arena = arena_new();
    compile *front = front_arena ? arena_alloc(front_arena, sizeof *front) : NULL;
    run_state state;
    memset(&state, 0, sizeof state);
    if (!ctx || !front) {
        fprintf(stderr, "driver: %s: out of memory\n", c->name);
        goto done;
    }
    if (bcg_compile(ctx, c->expr, ops, c->operand_count, NULL, &kernel, &err) != BCG_OK) {
        fprintf(stderr, "driver: %s: %s\n", c->name, err.message);
        goto done;
    }
    front->arena = front_arena;
    front->err = &err;
    if (compile_front(front, c->expr, ops, c->operand_count, NULL) != BCG_OK) {
        fprintf(stderr, "driver: %s: %s\n", c->name, err.message);
        goto done;
    }
    front->err = NULL;

    int64_t elements = bcg_kernel_elements(kernel);
    size_t out_bytes = (size_t)elements * bcg_dtype_size(bcg_kernel_dtype(kernel));
    size_t in_bytes = 0;
    for (int i = 0; i < c->operand_count; i++)
        in_bytes += (size_t)c->operands[i].span * bcg_dtype_size(c->operands[i].dtype);
    size_t moved = out_bytes + in_bytes;
    state.kernel = kernel;
    state.front = front;
    state.output = allocate(out_bytes);
    state.hand = hand;
    state.hand_output = allocate(out_bytes);
    state.output_bytes = out_bytes;
    state.count = c->operand_count;
    state.copy_bytes = moved / 2;
    state.copy_to = allocate(state.copy_bytes);
    state.copy_from = allocate(state.copy_bytes);
    if (!state.output || !state.copy_to || !state.copy_from || !state.hand_output) {
        fprintf(stderr, "driver: %s: out of memory\n", c->name);
        goto done;
    }
    memset(state.copy_from, 1, state.copy_bytes);
    for (int i = 0; i < c->operand_count; i++) {
        bench_operand *o = &c->operands[i];
        state.inputs[i] = (char *)o->buffer + o->offset * (int64_t)bcg_dtype_size(o->dtype);
        state.buffers[i] = o->buffer;
        state.buffer_bytes[i] = (size_t)o->span * bcg_dtype_size(o->dtype);
    }
    /* the hand loop's output against bcgen's (checked once, before timing) */
    long long hand_bad = -1;
    if (hand) {
        run_bcgen(&state);
        hand(state.hand_output, state.inputs);
        hand_bad = hand_differences(state.output, state.hand_output, elements, bcg_kernel_dtype(kernel));
        if (hand_bad)
            fprintf(stderr, "driver: %s: the hand loop differs from bcgen in %lld elements\n", c->name, hand_bad);
    } else {
        fprintf(stderr, "driver: %s: no hand loop in bench/hand.c\n", c->name);
    }

    int repeats = quick ? 3 : 11;
    double target = quick ? 0.02 : 0.1;
    double bcgen_s = time_calls(run_bcgen, &state, repeats, target);
    double threads_s = time_calls(run_bcgen_threads, &state, repeats, target);
    double reference_s = time_calls(run_reference, &state, quick ? 1 : 3, target);
    double memcpy_s = time_calls(run_memcpy, &state, repeats, target);
    /* the hand loop and the non-temporal bound, then bcgen again: the
     * ratio bcgen / hand (hand_ratio) is bcgen's time measured right after */
    double hand_s = hand ? time_calls(run_hand, &state, repeats, target) : 0;
    double nt_s = time_calls(run_nt_bound, &state, repeats, target);
    double bcgen_again_s = time_calls(run_bcgen, &state, repeats, target);
    /* the cc backend (gcc -O3 -march=native), from a context of its own;
     * after the first `make bench` its objects come from the disk cache */
    double cc_s = 0;
    char cc_note[sizeof ((bcg_error *)0)->message] = "";
    cc_context = bcg_context_new();
    bcg_options cc_options;
    bcg_options_init(&cc_options);
    cc_options.backend = BCG_BACKEND_CC;
    cc_options.native = 1;
    bcg_kernel *cc_kernel = NULL;
    if (cc_context && bcg_compile(cc_context, c->expr, ops, c->operand_count, &cc_options,
                                  &cc_kernel, &err) == BCG_OK) {
        snprintf(cc_note, sizeof cc_note, "%s", bcg_kernel_note(cc_kernel));
        state.kernel = cc_kernel;
        cc_s = time_calls(run_bcgen, &state, repeats, target);
        state.kernel = kernel;
    } else {
        snprintf(cc_note, sizeof cc_note, "%s", err.message);
    }
    double compile_ms = 0, hit_us = 0;
    if (!time_compile(c, quick ? 3 : 15, &compile_ms, &hit_us, &err)) {
        fprintf(stderr, "driver: %s: %s\n", c->name, err.message);
        goto done;
    }
    if (state.failed) {
        fprintf(stderr, "driver: %s: a run failed\n", c->name);
        goto done;
    }

    printf("{\"name\": ");
    json_string(c->name);
    printf(", \"expr\": ");
    json_string(c->expr);
    printf(", \"elements\": %lld, \"bytes\": %zu, \"bcgen_tcc_s\": %.9g, \"bcgen_threads_s\": %.9g,"
           " \"threads\": %d, \"reference_s\": %.9g,"
           " \"memcpy_s\": %.9g, \"compile_ms\": %.6g, \"cache_hit_us\": %.6g, \"jit\": %s,"
           " \"hand_s\": %.9g, \"hand_ratio\": %.4g, \"hand_differences\": %lld, \"nt_bound_s\": %.9g,"
           " \"bcgen_cc_s\": %.9g, \"cc_note\": ",
           (long long)elements, moved, bcgen_s, threads_s, BENCH_THREADS, reference_s, memcpy_s, compile_ms, hit_us,
           bcg_kernel_note(kernel)[0] ? "false" : "true", hand_s, hand_s > 0 ? bcgen_again_s / hand_s : 0.0,
           hand_bad, nt_s, cc_s);
    json_string(cc_note);
    printf("}\n");
    fflush(stdout);
    status = 0;
done:
    free(state.output);
    free(state.copy_to);
    free(state.copy_from);
    free(state.hand_output);
    for (int i = 0; i < c->operand_count; i++) {
        free(c->operands[i].buffer);
        c->operands[i].buffer = NULL;
    }
    arena_free(front_arena);
    bcg_context_free(ctx);
    bcg_context_free(cc_context);
    return status;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *only = NULL;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else
            path = argv[i];
    }
    if (!path) {
        fprintf(stderr, "usage: driver CASES.txt [--quick] [--only NAME]\n");
        return 2;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 2;
    }
    char line[LINE_MAX_BYTES];
    int failures = 0;
    while (fgets(line, sizeof line, f)) {
        char *text = trim(line);
        if (!*text || *text == '#')
            continue;
        bench_case c;
        if (!parse_case(text, &c)) {
            fprintf(stderr, "driver: cannot read case line: %s\n", text);
            failures++;
            continue;
        }
        if (only && strcmp(only, c.name) != 0)
            continue;
        failures += bench_one(&c, quick);
    }
    fclose(f);
    return failures ? 1 : 0;
}
