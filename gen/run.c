/* run.c - running a compiled kernel: bcg_run's pointer checks, and
 * bcg_run_threads, which cuts the kernel's outermost loop into pieces that
 * the context's worker pool runs at once. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

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
    /* element sizes are powers of two: a mask, not a division (which cost
     * more than a 12-element kernel itself) */
    if ((uintptr_t)output & (k->output_size - 1))
        return fail(err, BCG_ERR_RUN,
                    "bcg_run: the output pointer %p is not aligned to its %zu-byte elements",
                    output, k->output_size);
    for (int i = 0; i < k->operand_count; i++) {
        const run_operand *r = &k->run[i];
        if (r->low == r->high)
            continue;
        if (!inputs[i])
            return fail_at(err, BCG_ERR_RUN, 0, i, -1, "bcg_run: operand %s is NULL", r->name);
        if ((uintptr_t)inputs[i] & (r->size - 1))
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

/* check_run's checks in one pass whose only branch is the loop's, over the
 * operands that read memory (bcg_kernel.checks): true when every one
 * passes, with *OUTPUT_POINTER resolved as check_run resolves it (false:
 * check_run finds which failed and says so).  K has elements, so the
 * output's byte range is not empty. */
static inline bool checks_pass(const bcg_kernel *k, void **output_pointer,
                               const void *const *inputs)
{
    void *output = *output_pointer;
    if (k->inplace >= 0) {
        const void *target = inputs[k->inplace];
        if (output && output != target)
            return false;
        output = (void *)target;
    }
    uintptr_t out = (uintptr_t)output;
    uintptr_t out_low = out + (uintptr_t)k->output_low, out_high = out + (uintptr_t)k->output_high;
    bool bad = !out || (out & (k->output_size - 1));
    for (int i = 0; i < k->check_count; i++) {
        const run_check *r = &k->checks[i];
        uintptr_t in = (uintptr_t)inputs[r->index];
        uintptr_t low = in + (uintptr_t)r->low, high = in + (uintptr_t)r->high;
        bad |= !in | ((in & r->mask) != 0) |
               ((out_low < high) & (low < out_high) & !((in == out) & r->may_alias));
    }
    *output_pointer = output;
    return !bad;
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
    /* the common cases: a small kernel checks the pointers in its own code
     * (vex_small_checks; when one fails nothing ran and check_run below
     * says which), others without a branch a check, then one call
     * (measured, bench small_16 in one process: bcg_run 8.3 ns -> 5.0, the
     * kernel alone 1.45) */
    if (k && k->checked && inputs) {
        if (k->inplace < 0 && run_checked(k, output, inputs) == 0)
            return BCG_OK;
        if (k->inplace >= 0 && (!output || output == inputs[k->inplace]) &&
            run_checked(k, (void *)inputs[k->inplace], inputs) == 0)
            return BCG_OK;
    } else if (k && k->fn && k->elements > 0 && inputs && checks_pass(k, &output, inputs)) {
        run_function(k, output, inputs);
        return BCG_OK;
    }
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

bcg_status bcg_run_unchecked(const bcg_kernel *k, void *output, const void *const *inputs)
{
    if (!k || k->elements == 0)
        return k ? BCG_OK : BCG_ERR_USAGE;
    if (!output && k->inplace >= 0)
        output = (void *)inputs[k->inplace];
    if (k->fn) {
        k->fn(output, inputs);
        return BCG_OK;
    }
    return eval_run(k->front, output, inputs, NULL);
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
/* Pieces a thread's share is cut into.  The threads claim pieces as they
 * finish, so on a shared machine a thread that another process slows down
 * takes fewer of them: with one piece a thread, the run waited for the
 * slowed half (exp(a) + b at 16M elements: 1.38x on two threads). */
#define PIECES_PER_THREAD 4

struct kernel_split {
    struct kernel_split *next;
    int asked;               /* the piece count asked for (the key) */
    int parts;               /* pieces made: ceil(E / chunk) */
    int64_t chunk, last;     /* outer trips per piece, and of the last piece */
    jit_code *code[2];
    cc_code *cc[2];          /* the cc backend's objects instead of code[] */
    kernel_fn fn[2];         /* [0]: CHUNK trips, [1]: LAST; NULL: pieces unavailable */
};

void run_splits_free(bcg_kernel *k)
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
    bcg_status s = a ? kernel_recompile(k, a, err, trips, &c)
                     : fail(err, BCG_ERR_NOMEM, "out of memory");
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
    int used = parts > 1 ? (int)parts : 1; /* threads with work */
    if (parts > 1) { /* each thread's share in pieces, when they come out even */
        int64_t asked = parts * PIECES_PER_THREAD, extent = k->outer_extent;
        int64_t chunk = (extent + asked - 1) / asked;
        if (asked <= extent && (extent + chunk - 1) / chunk % parts == 0)
            parts = asked;
    }
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
    pool_run(workers, used, split->parts, run_piece, &run);
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

