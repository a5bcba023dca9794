/* driver.c - the C half of `make bench`: times bcgen's kernels, the
 * reference evaluator and a memcpy bound on the cases of bench/cases.txt,
 * and prints one JSON object per case on stdout for bench/bench.py to merge
 * with the Python peers (NumPy, numexpr, PyTorch).
 *
 *   driver CASES.txt [--quick] [--only NAME[,NAME...]] [--stream -1|0|1]
 *
 * --stream sets bcg_options.stream_stores for bcgen's kernels (default -1,
 * BCG_STREAM_AUTO), to time a case with and without streaming stores.
 *
 * Every time is a median over repeated runs; a run of a small case is a
 * loop of many calls divided by their count, so per-call times are not
 * swamped by the clock.  The memcpy bound copies half of the bytes the
 * kernel moves (a copy reads and writes each byte once), so its time is
 * what the same traffic costs on this machine in this run.
 *
 * A case may describe its output (cases.txt's header: out=DTYPE[SHAPE]@[STRIDES],
 * OP->[SHAPE], OP->NAME): it goes to bcg_compile as bcg_options.output, the
 * driver allocates the view's buffer and passes its element [0,...,0], and
 * "bytes" (and the bounds) count the inputs once and the output once.  The
 * hand loop's result is compared bit for bit, or for a reduction within a
 * relative tolerance (hand_differences).
 *
 * bcgen goes through the public API (bcg_compile, bcg_run, and
 * bcg_run_threads with BENCH_THREADS threads for the threaded column, and
 * bcg_run of a kernel compiled with the cc backend, -march=native, for the
 * "bcgen cc" column), as a user's program would; the reference evaluator (eval_run) has no public entry, so
 * the driver links libbcgen.a and includes internal.h for it alone.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "hand.h"

#define MAX_CASE_OPERANDS 8
#define LINE_MAX_BYTES 1024
/* The thread count of the threaded column (the issue's machine has 2 cores). */
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

/* The case's output (see the header of bench/cases.txt): out=... and OP->... */
typedef struct bench_output {
    bool given;                 /* an out= or a reduction word */
    int dtype;                  /* BCG_DTYPE_AUTO or a bcg_dtype */
    int reduce;                 /* BCG_REDUCE_NONE or BCG_REDUCE_* */
    shape target;               /* OP->[SHAPE], or OP->NAME's operand's shape */
    bool has_shape;             /* out=...[SHAPE]: checked against the kernel's */
    shape shape;
    bool strided;               /* out=...@[STRIDES] */
    shape strides;              /* (dims hold the strides, any sign) */
    char text[96];              /* the words as written, for messages */
} bench_output;

typedef struct bench_case {
    char name[64];
    char expr[256];
    int operand_count;
    bench_operand operands[MAX_CASE_OPERANDS];
    bench_output output;
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

/* [S0,S1,...] at AT (strides: any sign, which shape_parse does not take);
 * returns the character after the ']' or NULL. */
static const char *parse_strides(const char *at, shape *strides)
{
    strides->rank = 0;
    if (*at != '[')
        return NULL;
    at++;
    while (*at && *at != ']') {
        char *end;
        long long v = strtoll(at, &end, 10);
        if (end == at || strides->rank == BCG_MAX_RANK)
            return NULL;
        strides->dims[strides->rank++] = v;
        at = end;
        while (*at == ',' || *at == ' ')
            at++;
    }
    return *at == ']' ? at + 1 : NULL;
}

/* The elements a buffer must hold for RANK dimensions DIMS with STRIDES,
 * and the position of element [0,...,0] in it (past negative strides). */
static void layout_span(int rank, const int64_t *dims, const int64_t *strides, int64_t *span,
                        int64_t *offset)
{
    int64_t count = 1, reach = 0;
    *offset = 0;
    for (int d = 0; d < rank; d++) {
        count *= dims[d];
        int64_t extent = strides[d] * (dims[d] - 1);
        if (extent < 0)
            *offset -= extent;
        reach += extent < 0 ? -extent : extent;
    }
    *span = count == 0 ? 0 : (reach + 1 > count ? reach + 1 : count);
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
        shape strides;
        const char *end = parse_strides(close + 2, &strides);
        if (!end || *end || strides.rank != op->shape.rank)
            return false;
        op->strided = true;
        memcpy(op->strides, strides.dims, sizeof(int64_t) * (size_t)strides.rank);
        int64_t span;
        layout_span(op->shape.rank, op->shape.dims, op->strides, &span, &op->offset);
        if (span > op->span)
            op->span = span;
    } else if (close[1]) {
        return false;
    }
    return true;
}

/* out=[DTYPE][[SHAPE]][@[STRIDES]] (at least one part) */
static bool parse_out(const char *text, bench_output *o)
{
    const char *at = text + 4;
    size_t dtype_length = strcspn(at, "[@");
    if (dtype_length) {
        char dtype_text[16];
        bcg_dtype d;
        if (dtype_length >= sizeof dtype_text)
            return false;
        memcpy(dtype_text, at, dtype_length);
        dtype_text[dtype_length] = 0;
        if (bcg_dtype_parse(dtype_text, &d) != BCG_OK)
            return false;
        o->dtype = (int)d;
        at += dtype_length;
    }
    if (*at == '[') {
        const char *close = strchr(at, ']');
        if (!close || shape_parse(at, (size_t)(close - at + 1), &o->shape, NULL) != BCG_OK)
            return false;
        o->has_shape = true;
        at = close + 1;
    }
    if (*at == '@') {
        at = parse_strides(at + 1, &o->strides);
        if (!at)
            return false;
        o->strided = true;
    }
    return *at == 0 && at != text + 4;
}

/* OP->[SHAPE] or OP->NAME (an operand of C, given before or after) */
static bool parse_reduce(const char *text, const char *arrow, bench_output *o, char *to)
{
    int r = 1;
    size_t length = (size_t)(arrow - text);
    while (reduce_name(r) && !(strlen(reduce_name(r)) == length &&
                               strncmp(reduce_name(r), text, length) == 0))
        r++;
    if (!reduce_name(r) || o->reduce)
        return false;
    o->reduce = r;
    const char *target = arrow + 2;
    if (*target == '[' || *target == '(')
        return shape_parse(target, strlen(target), &o->target, NULL) == BCG_OK;
    if (!*target || strlen(target) > BCG_MAX_NAME)
        return false;
    strcpy(to, target);
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
    char *save = NULL, to[BCG_MAX_NAME + 1] = "";
    bench_output *o = &c->output;
    o->dtype = BCG_DTYPE_AUTO;
    for (char *word = strtok_r(trim(fields[2]), " ", &save); word;
         word = strtok_r(NULL, " ", &save)) {
        char *arrow = strstr(word, "->");
        if (strncmp(word, "out=", 4) == 0 || arrow) {
            if (arrow ? !parse_reduce(word, arrow, o, to) : !parse_out(word, o))
                return false;
            size_t used = strlen(o->text);
            snprintf(o->text + used, sizeof o->text - used, "%s%s", used ? " " : "", word);
            o->given = true;
            continue;
        }
        if (c->operand_count == MAX_CASE_OPERANDS ||
            !parse_operand(word, &c->operands[c->operand_count]))
            return false;
        c->operand_count++;
    }
    if (to[0]) {
        int i = 0;
        while (i < c->operand_count && strcmp(c->operands[i].name, to) != 0)
            i++;
        if (i == c->operand_count)
            return false;
        o->target = c->operands[i].shape;
    }
    /* the target shape and out='s shape must agree */
    if (o->reduce && o->has_shape &&
        (o->shape.rank != o->target.rank ||
         memcmp(o->shape.dims, o->target.dims, sizeof(int64_t) * (size_t)o->shape.rank) != 0))
        return false;
    if (o->strided && o->has_shape && o->strides.rank != o->shape.rank)
        return false;
    if (o->strided && o->reduce && o->strides.rank != o->target.rank)
        return false;
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

/* ---- the machine's own two-thread capacity ---------------------------------
 * This machine's two cores are shared, so what two threads can gain moves
 * from run to run.  spin_capacity measures it next to each threaded timing:
 * a plain compute loop (four independent multiply-add chains, no memory
 * traffic) on one thread, then the same loop on two threads at once; the
 * capacity is 2 x one thread's time / the pair's time (2.0 on two idle
 * cores).  bench.py prints it beside the threaded column and the threads
 * target. */
#define SPIN_STEPS 4000000L

static void *spin(void *result)
{
    double x[4] = {1.0, 1.5, 2.0, 2.5};
    for (long i = 0; i < SPIN_STEPS; i++)
        for (int k = 0; k < 4; k++)
            x[k] = x[k] * 0.999999 + 1e-7;
    *(double *)result = x[0] + x[1] + x[2] + x[3];
    return NULL;
}

/* One thread's time over the time of two threads at once, times 2; the
 * median of five alternating rounds.  0 when no thread could be started. */
static double spin_capacity(void)
{
    double ratios[5], sink[2];
    for (int r = 0; r < 5; r++) {
        double start = now_seconds();
        spin(&sink[0]);
        double one = now_seconds() - start;
        pthread_t other;
        start = now_seconds();
        if (pthread_create(&other, NULL, spin, &sink[1]) != 0)
            return 0;
        spin(&sink[0]);
        pthread_join(other, NULL);
        double two = now_seconds() - start;
        ratios[r] = two > 0 ? 2 * one / two : 0;
    }
    return median(ratios, 5);
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
    void *hand_output_base; /* its whole buffer (a view's output) */
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
    hand_nt_bound(s->buffers, s->buffer_bytes, s->count, s->hand_output_base, s->output_bytes);
}

/* Elements where the hand loop's output differs from bcgen's: bitwise, or
 * for f32 by more than 8 eps relative to max(|x|, |y|, 1) (bcgen's f32 exp
 * is a polynomial within 1 ulp of libm, which the hand loop calls).  A
 * reduction's hand loop adds in its own order (a float sum in one float, as
 * a programmer writes it, where bcgen keeps partial sums), so there the
 * check is relative only: within REDUCE_RTOL of max(|x|, |y|, 1) (f32
 * 1e-3: an f32 sum of 4096 terms of size 2-4 rounds by a few 1e-4; a wrong
 * or missing term is off by far more), f64 1e-9. */
#define REDUCE_RTOL_F32 1e-3
#define REDUCE_RTOL_F64 1e-9
static int64_t hand_differences(const void *x, const void *y, int64_t n, bcg_dtype d, bool reduction)
{
    size_t size = bcg_dtype_size(d);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (memcmp((const char *)x + i * (int64_t)size, (const char *)y + i * (int64_t)size, size) == 0)
            continue;
        double p = 0, q = 0, tolerance = -1;
        if (d == BCG_F32) {
            float p32, q32;
            memcpy(&p32, (const char *)x + i * 4, 4);
            memcpy(&q32, (const char *)y + i * 4, 4);
            p = p32;
            q = q32;
            /* an ulp or two of exp(a) may be many of exp(a) + b near 0 */
            tolerance = reduction ? REDUCE_RTOL_F32 : 8 * 1.1920929e-7;
        } else if (d == BCG_F64 && reduction) {
            memcpy(&p, (const char *)x + i * 8, 8);
            memcpy(&q, (const char *)y + i * 8, 8);
            tolerance = REDUCE_RTOL_F64;
        }
        double scale = fabs(p) > fabs(q) ? fabs(p) : fabs(q);
        if (tolerance >= 0 && fabs(p - q) <= tolerance * (scale > 1 ? scale : 1))
            continue;
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

/* The case's bcg_options (the defaults, plus its output) into OPTIONS and
 * OUTPUT, which OPTIONS points at. */
static int stream_stores = BCG_STREAM_AUTO;

static void case_options(const bench_case *c, bcg_options *options, bcg_output *output)
{
    bcg_options_init(options);
    options->stream_stores = stream_stores;
    if (!c->output.given)
        return;
    const bench_output *o = &c->output;
    memset(output, 0, sizeof *output);
    output->dtype = o->dtype;
    output->reduce = o->reduce;
    if (o->reduce) {
        output->rank = o->target.rank;
        output->shape = o->target.dims;
    } else if (o->strided) {
        output->rank = o->strides.rank;
    }
    output->strides = o->strided ? o->strides.dims : NULL;
    options->output = output;
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
    bcg_options options;
    bcg_output output;
    case_options(c, &options, &output);
    double samples[64];
    if (repeats > 64)
        repeats = 64;
    for (int r = 0; r < repeats; r++) {
        bcg_context *ctx = bcg_context_new();
        bcg_kernel *k;
        double start = now_seconds();
        bcg_status s = bcg_compile(ctx, c->expr, ops, c->operand_count, &options, &k, err);
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
                    bcg_compile(ctx, c->expr, ops, c->operand_count, &options, &k, err);
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
    void *output_base = NULL, *hand_output_base = NULL;
    if (!ctx || !front) {
        fprintf(stderr, "driver: %s: out of memory\n", c->name);
        goto done;
    }
    bcg_options options;
    bcg_output output;
    case_options(c, &options, &output);
    if (bcg_compile(ctx, c->expr, ops, c->operand_count, &options, &kernel, &err) != BCG_OK) {
        fprintf(stderr, "driver: %s: %s\n", c->name, err.message);
        goto done;
    }
    front->arena = front_arena;
    front->err = &err;
    if (compile_front(front, c->expr, ops, c->operand_count, &options) != BCG_OK) {
        fprintf(stderr, "driver: %s: %s\n", c->name, err.message);
        goto done;
    }
    front->err = NULL;

    /* the output: C-contiguous, or the case's view (its buffer's span, and
     * element [0,...,0] at out_offset in it); a reduction's is its target */
    int64_t elements = bcg_kernel_elements(kernel);
    int out_rank = bcg_kernel_rank(kernel);
    const int64_t *out_dims = bcg_kernel_shape(kernel);
    int64_t out_span = elements, out_offset = 0;
    const bench_output *view = &c->output;
    if (view->has_shape && (view->shape.rank != out_rank ||
                         memcmp(view->shape.dims, out_dims, sizeof(int64_t) * (size_t)out_rank) != 0)) {
        fprintf(stderr, "driver: %s: %s: the output's shape is not the kernel's\n", c->name, view->text);
        goto done;
    }
    if (view->strided) {
        if (view->strides.rank != out_rank) {
            fprintf(stderr, "driver: %s: %s: %d strides for a rank-%d output\n", c->name, view->text,
                    view->strides.rank, out_rank);
            goto done;
        }
        layout_span(out_rank, out_dims, view->strides.dims, &out_span, &out_offset);
    }
    /* the elements the expression computes (a reduction's input) */
    int64_t computed = 1;
    for (int d = 0; d < front->broadcast->result.rank; d++)
        computed *= front->broadcast->result.dims[d];
    size_t out_size = bcg_dtype_size(bcg_kernel_dtype(kernel));
    size_t out_bytes = (size_t)out_span * out_size;
    size_t in_bytes = 0;
    for (int i = 0; i < c->operand_count; i++)
        in_bytes += (size_t)c->operands[i].span * bcg_dtype_size(c->operands[i].dtype);
    size_t moved = out_bytes + in_bytes;
    state.kernel = kernel;
    state.front = front;
    output_base = allocate(out_bytes);
    hand_output_base = allocate(out_bytes);
    state.output = output_base ? (char *)output_base + out_offset * (int64_t)out_size : NULL;
    state.hand = hand;
    state.hand_output_base = hand_output_base;
    state.hand_output = hand_output_base ? (char *)hand_output_base + out_offset * (int64_t)out_size : NULL;
    state.output_bytes = out_bytes;
    state.count = c->operand_count;
    state.copy_bytes = moved / 2;
    state.copy_to = allocate(state.copy_bytes);
    state.copy_from = allocate(state.copy_bytes);
    if (!output_base || !state.copy_to || !state.copy_from || !state.hand_output) {
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
        /* the whole buffers: a view's gaps (none in the cases) stay 0 in both */
        hand_bad = hand_differences(output_base, hand_output_base, out_span, bcg_kernel_dtype(kernel),
                                    view->reduce != BCG_REDUCE_NONE);
        if (hand_bad)
            fprintf(stderr, "driver: %s: the hand loop differs from bcgen in %lld elements\n", c->name, hand_bad);
    } else {
        fprintf(stderr, "driver: %s: no hand loop in bench/hand.c\n", c->name);
    }

    int repeats = quick ? 3 : 11;
    double target = quick ? 0.02 : 0.1;
    double bcgen_s = time_calls(run_bcgen, &state, repeats, target);
    double capacity_before = spin_capacity();
    double threads_s = time_calls(run_bcgen_threads, &state, repeats, target);
    double capacity = (capacity_before + spin_capacity()) / 2;
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
    bcg_options cc_options = options;
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
    printf(", \"output\": ");
    json_string(view->text);
    printf(", \"reduce\": %s, \"output_elements\": %lld", view->reduce ? "true" : "false",
           (long long)elements);
    printf(", \"elements\": %lld, \"bytes\": %zu, \"bcgen_tcc_s\": %.9g, \"bcgen_threads_s\": %.9g,"
           " \"threads\": %d, \"thread_capacity\": %.4g, \"reference_s\": %.9g,"
           " \"memcpy_s\": %.9g, \"compile_ms\": %.6g, \"cache_hit_us\": %.6g, \"jit\": %s,"
           " \"hand_s\": %.9g, \"hand_ratio\": %.4g, \"hand_differences\": %lld, \"nt_bound_s\": %.9g,"
           " \"bcgen_cc_s\": %.9g, \"cc_note\": ",
           (long long)computed, moved, bcgen_s, threads_s, BENCH_THREADS, capacity, reference_s, memcpy_s, compile_ms, hit_us,
           bcg_kernel_note(kernel)[0] ? "false" : "true", hand_s, hand_s > 0 ? bcgen_again_s / hand_s : 0.0,
           hand_bad, nt_s, cc_s);
    json_string(cc_note);
    printf("}\n");
    fflush(stdout);
    status = 0;
done:
    free(output_base);
    free(state.copy_to);
    free(state.copy_from);
    free(hand_output_base);
    for (int i = 0; i < c->operand_count; i++) {
        free(c->operands[i].buffer);
        c->operands[i].buffer = NULL;
    }
    arena_free(front_arena);
    bcg_context_free(ctx);
    bcg_context_free(cc_context);
    return status;
}

/* NAME is one of the comma-separated names of LIST */
static bool listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *at = list; at; at = strchr(at, ','), at = at ? at + 1 : NULL)
        if (strncmp(at, name, n) == 0 && (at[n] == ',' || at[n] == 0))
            return true;
    return false;
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
        else if (strcmp(argv[i], "--stream") == 0 && i + 1 < argc)
            stream_stores = atoi(argv[++i]);
        else
            path = argv[i];
    }
    if (!path) {
        fprintf(stderr, "usage: driver CASES.txt [--quick] [--only NAME[,NAME...]] [--stream -1|0|1]\n");
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
        if (only && !listed(only, c.name))
            continue;
        failures += bench_one(&c, quick);
    }
    fclose(f);
    return failures ? 1 : 0;
}
