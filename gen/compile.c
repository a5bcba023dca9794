/* compile.c - the pipeline and the public API around it.
 *
 * compile_pipeline is the whole flow in one place, for every caller:
 *
 *   compile_front: check operands -> shape_broadcast -> expr_parse
 *                  -> expr_type -> plan_build                    (front.c)
 *   emit_kernel  : plan + tree -> fold -> IR -> C source   (fold.c, lower.c, emit.c)
 *   compile_code : C source -> machine code (libtcc, jit.c; or cc, cc.c)
 *
 * Everything a compile makes lives in one arena, freed when the compile
 * returns; the kernel keeps only what its runs need (see "kernels" below).
 * Contexts, the kernel cache and kernel lifetimes are cache.c's; running a
 * kernel, on one thread or several, is run.c's.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include "internal.h"
#include "kir.h"
#include "vex.h"

/* ---- kernels ------------------------------------------------------------------
 *
 * A kernel keeps what its runs need and nothing more (issue 9: a small
 * kernel costs a few KB, most of it its code page): the result's shape,
 * what bcg_run checks of each pointer, the outermost loop for threaded
 * runs, and its cache key.  The key holds every argument of the compile,
 * so kernel_recompile rebuilds the tree and the plan from it when a threaded
 * split or bcg_kernel_source needs them; only a kernel the reference
 * evaluator runs (fn NULL) keeps them.  cache.c owns lookup and lifetime. */

void kernel_destroy(bcg_kernel *k)
{
    if (!k)
        return;
    run_splits_free(k);
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

static char *copy_text(const char *text)
{
    size_t n = strlen(text);
    char *copy = mem_alloc(n + 1);
    if (copy)
        memcpy(copy, text, n + 1);
    return copy;
}

bool compile_warnings_exist(const compile *c)
{
    for (int i = 0; i < c->operand_count; i++)
        if (!c->used[i])
            return true;
    return c->broadcast->warning[0] != 0;
}

/* The warnings of a compile, "; "-separated (mem_alloc'd), or NULL when
 * there are none or memory runs out: the legacy broadcast warning, and the
 * operands the expression does not read. */
char *compile_warnings(const compile *c)
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
    k->dtype = c->out_dtype;
    k->output_size = bcg_dtype_size(c->out_dtype);
    /* the output's shape: the result's, or a reduction's target */
    k->rank = c->out_shape.rank;
    k->elements = 1;
    for (int d = 0; d < k->rank; d++)
        k->elements *= c->out_shape.dims[d];
    k->loop_count = p->loop_count;
    k->outer_extent = p->loop_count ? p->extent[0] : 0;
    /* threads split the outermost loop: never a reduced one (each output
     * element is reduced on one thread, in one order, whatever the count) */
    if (c->reduce && (p->empty || c->fill_plan || (p->loop_count && p->stride[0][0] == 0)))
        k->loop_count = 0;
    /* names live after the run array, in the same block */
    size_t names = 0;
    for (int i = 0; i < c->operand_count; i++)
        names += strlen(c->operands[i].name) + 1;
    size_t run_bytes = sizeof *k->run * (size_t)c->operand_count +
                       sizeof *k->checks * (size_t)c->operand_count;
    k->run = mem_alloc(run_bytes + names);
    k->shape = mem_alloc(sizeof *k->shape * (size_t)(k->rank ? k->rank : 1));
    k->outer_stride = mem_alloc(sizeof *k->outer_stride * (size_t)(c->operand_count + 1));
    if (!k->run || !k->shape || !k->outer_stride)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    memcpy(k->shape, c->out_shape.dims, sizeof *k->shape * (size_t)k->rank);
    for (int i = 0; i <= c->operand_count; i++)
        k->outer_stride[i] = p->loop_count ? p->stride[i][0] : 0;
    if (!(k->warning = compile_warnings(c)) && compile_warnings_exist(c))
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    char *name_at = (char *)k->run + run_bytes;
    /* a reduction of an empty result still writes its identity: the
     * output's own span */
    plan_span(c->fill_plan ? c->fill_plan : p, 0, k->output_size, &k->output_low, &k->output_high);
    for (int i = 0; i < c->operand_count; i++) {
        run_operand *r = &k->run[i];
        size_t n = strlen(c->operands[i].name) + 1;
        memcpy(name_at, c->operands[i].name, n);
        r->name = name_at;
        name_at += n;
        r->size = bcg_dtype_size(c->operands[i].dtype);
        /* The operand's own span (compile_front's view): broadcast
         * dimensions do not widen it.  An operand the expression does not
         * read is not checked either. */
        const compile_operand *o = &c->operands[i];
        bool unread = o->empty || p->empty || !c->used[i];
        r->low = unread ? 0 : o->low * (int64_t)r->size;
        r->high = unread ? 0 : (o->high + 1) * (int64_t)r->size;
        /* Exact aliasing is safe when the input walks the output's elements
         * in step: same element size and the same strides in every loop. */
        bool same = r->size == k->output_size;
        for (int l = 0; same && l < p->loop_count; l++)
            same = p->stride[i + 1][l] == p->stride[0][l];
        /* (an operand folded away is never read: its plan strides are 0) */
        r->may_alias = same || (c->unread && c->unread[i] && r->size == k->output_size);
    }
    k->checks = (run_check *)(k->run + c->operand_count);
    k->check_count = 0;
    for (int i = 0; i < c->operand_count; i++) {
        const run_operand *r = &k->run[i];
        if (r->low != r->high)
            k->checks[k->check_count++] = (run_check){r->low, r->high, (uint32_t)i,
                                                      (uint32_t)(r->size - 1), r->may_alias};
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
bcg_status compile_code(const compile *c, const char *source, jit_code **code,
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
    /* a small kernel's whole code (vex.c): the function itself, no libtcc */
    const vex_function *small = c->microkernels && c->ir ? c->ir->small : NULL;
    if (small)
        return jit_bind(small->code, small->size, small->entry, code, fn, err);
    /* the fused vector function the JIT form's tiles call (vex.c) */
    const vex_function *vex = c->microkernels && c->ir ? c->ir->vex : NULL;
    return jit_compile(source, c->function_name, vex ? vex->code : NULL, vex ? vex->size : 0,
                       code, fn, err);
}

/* The bytes one run of C writes (*OUT) and reads (*IN, each operand's
 * elements once; an in-place operand is the output).  Decided on the whole
 * kernel, so a thread's piece (a copy of C) streams exactly when the whole
 * kernel does. */
static void touched_bytes(const compile *c, double *in, double *out)
{
    *out = (double)c->plan->elements * (double)bcg_dtype_size(c->out_dtype);
    *in = 0;
    for (int i = 0; i < c->operand_count; i++) {
        int64_t elements = 0;
        shape_elements(&c->operands[i].shape, &elements);
        if (i != c->options.inplace)
            *in += (double)elements * (double)bcg_dtype_size(c->operands[i].dtype);
    }
}

/* BCG_STREAM_AUTO's rule (the measurements below): the bytes touched reach
 * the last-level cache's size, or half of it for a kernel that reads at
 * least twice what it writes. */
static bool stream_auto(const compile *c)
{
    double in, out, cache = (double)compile_stream_bytes();
    touched_bytes(c, &in, &out);
    return in + out >= cache || (in >= 2 * out && in + out >= cache / 2);
}

/* ---- the streaming threshold: the last-level cache ----------------------------
 *
 * A kernel run again and again (a user's loop, make bench, the sweep) finds
 * what it touched last time in the cache as long as that fits: plain
 * stores then write into lines already there, while streaming stores send
 * every output byte to memory.  Past the cache's size plain stores read
 * each output line from memory first and push the inputs out, and
 * streaming wins.  Measured (bench/stream_rule.c, EPYC VM, 32 MiB L3, 1
 * MiB L2 a core, loaded; cc time / JIT time with the JIT and the cc
 * backend alternating as the sweep runs them, streaming / plain; and one
 * kernel repeated, us, streaming / plain):
 *
 *   outer (N,1)+(1,4096) f32, out 16 MiB    sweep 0.46 / 0.92   repeat 417 / 174
 *                             out 24 MiB    sweep 0.83 / 0.88   repeat 582 / 483
 *                             out 32 MiB    sweep 0.99 / 0.82   repeat 791 / 961
 *   a + 0.1 f32, 8 + 8 MiB                  sweep 0.70 / 0.92   repeat 190 / 140
 *                12 + 12 MiB                sweep 0.89 / 0.91   repeat 296 / 325
 *                16 + 16 MiB                sweep 0.93 / 0.91   repeat 413 / 533
 *   a * b f64 (both full), 12 + 6 MiB       sweep 1.08-1.23 / 0.96-0.98  repeat 157 / 219
 *                          16 + 8 MiB       sweep 1.09-1.16 / 0.92-0.95  repeat 238 / 372
 *   a * b f32 (both full), 12 + 6 MiB       sweep 1.01-1.07 / 0.93-0.96  repeat 155 / 205
 *   a + b f32 (both full), 8 + 4 MiB        sweep 1.03 / 0.99    repeat 97 / 101
 *                     24 + 12 MiB           sweep 1.10 / 1.04   repeat 540 / 666
 *   0.5 / a f64, 12 + 12 MiB                sweep 0.76 / 0.95   repeat 384 / 309
 *   where(a > 0, a, 0.1) f32, 20 + 20 MiB   sweep 1.04 / 0.96   repeat 559 / 759
 *
 * so the crossover is near the L3's size (touched bytes, output and inputs)
 * for inputs up to the output's size, and near half of it for kernels that
 * read twice what they write (two full inputs: streaming keeps those in
 * the cache); the old fixed 16 MiB streamed outer products of 16-24 MiB at
 * half the speed of plain stores.  (A repeated kernel alone crosses over a
 * little earlier, from about 3/4 of the L3 when the inputs are as large as
 * the output; the sweep, whose cc kernel writes an output of its own
 * between two JIT runs, a little later.)
 *
 * The size is read once: Linux's /sys/devices/system/cpu/cpu0/cache (the
 * largest level), else CPUID's deterministic cache leaves (0x8000001D on
 * AMD, 4 on Intel).  Not sysconf(_SC_LEVEL3_CACHE_SIZE) nor CPUID
 * 0x80000006: in this VM they report 384 MiB (another session's VM, 508
 * MiB: the host's), not the 32 MiB the two cores share.  Unknown or
 * implausible (under 1 MiB, over 1 GiB): BCG_STREAM_AUTO_BYTES. */

static size_t sysfs_cache_bytes(void)
{
    size_t best = 0;
    int best_level = 0;
    for (int index = 0; index < 16; index++) {
        char path[96], text[32];
        int level = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        bool read = fgets(text, sizeof text, f) != NULL;
        fclose(f);
        if (!read)
            continue;
        level = atoi(text);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
        if (!(f = fopen(path, "r")))
            continue;
        read = fgets(text, sizeof text, f) != NULL;
        fclose(f);
        char *unit = NULL;
        unsigned long long size = read ? strtoull(text, &unit, 10) : 0;
        if (unit && (*unit == 'K' || *unit == 'k'))
            size <<= 10;
        else if (unit && *unit == 'M')
            size <<= 20;
        if (size > 0 && (level > best_level || (level == best_level && size > best))) {
            best = (size_t)size;
            best_level = level;
        }
    }
    return best;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The largest cache a deterministic cache-parameters leaf describes (its
 * subleaves: type in eax[4:0], 0 ends; level eax[7:5]; ways, partitions,
 * line size and sets in ebx and ecx). */
static size_t cpuid_cache_bytes(unsigned leaf)
{
    unsigned a, b, c, d;
    if ((unsigned)__get_cpuid_max(leaf & 0x80000000u, NULL) < leaf)
        return 0;
    size_t best = 0;
    unsigned best_level = 0;
    for (unsigned sub = 0; sub < 16; sub++) {
        __cpuid_count(leaf, sub, a, b, c, d);
        if ((a & 31) == 0)
            break;
        unsigned level = (a >> 5) & 7;
        size_t size = (size_t)(((b >> 22) & 0x3ff) + 1) * (((b >> 12) & 0x3ff) + 1) *
                      ((b & 0xfff) + 1) * ((size_t)c + 1);
        if ((a & 31) != 1 && level >= best_level) { /* (not a data-only L1) */
            best = size;
            best_level = level;
        }
    }
    (void)d;
    return best;
}
#endif

static size_t stream_bytes = 0;
static pthread_once_t stream_bytes_once = PTHREAD_ONCE_INIT;

static void find_stream_bytes(void)
{
    size_t bytes = sysfs_cache_bytes();
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (bytes == 0)
        bytes = cpuid_cache_bytes(0x8000001Du);
    if (bytes == 0)
        bytes = cpuid_cache_bytes(4);
#endif
    if (bytes < ((size_t)1 << 20) || bytes > ((size_t)1 << 30))
        bytes = BCG_STREAM_AUTO_BYTES;
    stream_bytes = bytes;
}

size_t compile_stream_bytes(void)
{
    pthread_once(&stream_bytes_once, find_stream_bytes);
    return stream_bytes;
}

void compile_choose_jit(compile *c, size_t max_source)
{
    c->function_name = "bcg_kernel";
    /* jit.c links the microkernels; bcg_emit's source stays plain C, and so
     * does the cc backend's, which gcc -O3 vectorises itself */
    c->microkernels = c->options.backend != BCG_BACKEND_CC;
    c->max_source = max_source;
    c->stream = c->microkernels && c->options.stream_stores != 0 &&
                (c->options.stream_stores == 1 || stream_auto(c));
    lower_order_plan(c);
}

/* ---- the pipeline ------------------------------------------------------------
 *
 * Every caller goes through compile_pipeline: bcg_compile, a threaded piece
 * and bcg_kernel_source (COMPILE_JIT), bcg_emit (COMPILE_PLAIN), the AOT
 * pairs (COMPILE_AOT, aot.c), and the CLI's explain (COMPILE_JIT), emit's
 * and run's checks (COMPILE_FRONT). */

bcg_status compile_pipeline(compile *c, const compile_request *r)
{
    bcg_status s = compile_front(c, r->text, r->operands, r->operand_count, r->options);
    if (s || r->goal == COMPILE_FRONT)
        return s;
    if (r->goal == COMPILE_JIT)
        compile_choose_jit(c, r->max_source);
    if (r->outer_trips > 0 && (s = compile_cut_outer(c, r->outer_trips)))
        return s;
    if (r->check && (s = r->check(c, r->check_arg)))
        return s;
    return emit_kernel(c);
}

/* A thread's piece: the outermost loop cut to TRIPS trips, and loops, never
 * straight-line code (a piece is long). */
bcg_status compile_cut_outer(compile *c, int64_t trips)
{
    plan *p = arena_alloc(c->arena, sizeof *p);
    if (!p)
        return fail(c->err, BCG_ERR_NOMEM, "out of memory");
    *p = *c->plan;
    p->elements = p->elements / p->extent[0] * trips;
    p->extent[0] = trips;
    c->plan = p;
    c->source = NULL;
    c->options.unroll_limit = 0;
    return BCG_OK;
}

/* K compiled again, in A, from its key (or its kept front end): the same
 * tree, plan, choices and source, with the outermost loop cut to
 * OUTER_TRIPS when > 0. */
bcg_status kernel_recompile(const bcg_kernel *k, arena *a, bcg_error *err, int64_t outer_trips,
                            compile **out)
{
    compile *c = arena_alloc(a, sizeof *c);
    if (!c)
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    bcg_status s;
    if (k->front) { /* kept: the kernel runs on the reference evaluator */
        *c = *k->front;
        c->arena = a;
        c->err = err;
        s = outer_trips > 0 ? compile_cut_outer(c, outer_trips) : BCG_OK;
        if (!s)
            s = emit_kernel(c);
    } else {
        const char *expr;
        bcg_operand *operands;
        int count;
        bcg_options options;
        if (!cache_key_decode(a, k->key, k->key_length, &expr, &operands, &count, &options))
            return fail(err, BCG_ERR_NOMEM, "out of memory");
        compile_request r = {.text = expr, .operands = operands, .operand_count = count,
                             .options = &options, .goal = COMPILE_JIT,
                             .max_source = k->max_source, .outer_trips = outer_trips};
        memset(c, 0, sizeof *c);
        c->arena = a;
        c->err = err;
        s = compile_pipeline(c, &r);
    }
    *out = c;
    return s;
}

/* Whether the arguments can be keyed: compile_front rejects the others
 * before it reads the caller's arrays. */
static bool keyable(const char *expr, size_t expr_length, const bcg_operand *operands,
                    int operand_count, const bcg_options *options)
{
    bool ok = expr && operands && operand_count >= 1 && operand_count <= BCG_MAX_OPERANDS &&
              expr_length <= BCG_MAX_EXPR;
    const bcg_output *out = options ? options->output : NULL;
    if (ok && out && (out->strides || out->reduce != BCG_REDUCE_NONE))
        ok = out->rank >= 0 && out->rank <= BCG_MAX_RANK &&
             (out->reduce == BCG_REDUCE_NONE || out->rank == 0 || out->shape);
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

    /* before the cache: its key does not hold a program's outputs */
    if (opts.outputs || opts.output_count || opts.output_names)
        return fail(err, BCG_ERR_USAGE,
                    "bcg_options.outputs describes a program's outputs; compile the program "
                    "with bcg_compile_program (or describe one output in bcg_options.output)");
    size_t expr_length = expr ? strnlen(expr, BCG_MAX_EXPR + 1) : 0;
    bool can_key = keyable(expr, expr_length, operands, operand_count, &opts);
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
    compile *c = arena_alloc(a, sizeof *c);
    bcg_status s = c ? BCG_OK : fail(err, BCG_ERR_NOMEM, "out of memory");
    if (!s) {
        memset(c, 0, sizeof *c);
        c->arena = a;
        c->err = err;
        compile_request r = {.text = expr, .operands = operands, .operand_count = operand_count,
                             .options = &opts, .goal = COMPILE_JIT, .max_source = k->max_source};
        s = compile_pipeline(c, &r);
    }
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
        s = prepare_run(k, c, err);
    char note[600] = "";
    bool work = !s && (!c->plan->empty || c->fill_plan); /* code to run */
    /* a small kernel's code checks bcg_run's pointers itself (run.c) */
    if (work && c->microkernels && c->ir && c->ir->small &&
        vex_small_checks(c->arena, c->ir->small, k) != BCG_OK)
        s = fail(err, BCG_ERR_NOMEM, "out of memory");
    if (!s && work) {
        bcg_error jit_err;
        error_clear(&jit_err);
        s = compile_code(c, c->source, &k->code, &k->cc, &k->fn, note, sizeof note, &jit_err);
        k->checked = jit_checked_entry(k->code);
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
    if (!s && !k->fn && work) {
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

/* A fused program's kernel (program.c): C, set up by the caller in A with
 * its fuse_count other roots, compiled over OPERANDS (the program's, then
 * one per other output) as bcg_compile compiles a kernel, keyed by
 * KEY_TEXT (the program, which no expression equals).  The kernel keeps
 * its front end (kernel_recompile makes threaded pieces from it; the key
 * cannot be decoded into one expression) and so takes A.  A kernel only
 * the reference evaluator could run is not made (BCG_ERR_JIT): the
 * program runs statement by statement instead. */
bcg_status compile_fused(bcg_context *ctx, arena *a, compile *c, const char *key_text,
                         const compile_request *r, bcg_kernel **kernel)
{
    bcg_error *err = c->err;
    *kernel = NULL;
    key_probe probe = {0, 0};
    size_t key_length = strlen(key_text);
    if ((*kernel = cache_lookup(ctx, key_text, key_length, r->operands, r->operand_count,
                                r->options, &probe))) {
        arena_free(a);
        return BCG_OK;
    }
    bcg_kernel *k = mem_alloc(sizeof *k);
    if (!k) {
        arena_free(a);
        return fail(err, BCG_ERR_NOMEM, "out of memory");
    }
    memset(k, 0, sizeof *k);
    k->ctx = ctx;
    k->lazy_lock_ready = pthread_mutex_init(&k->lazy_lock, NULL) == 0;
    k->max_source = cache_max_source(ctx);
    compile_request request = *r;
    request.goal = COMPILE_JIT;
    request.max_source = k->max_source;
    bcg_status s = compile_pipeline(c, &request);
    if (!s) {
        k->key = cache_key_new(&probe, key_text, key_length, r->operands, r->operand_count,
                               r->options);
        k->key_length = probe.length;
        k->hash = probe.hash;
        k->stream = c->stream;
        if (!k->key)
            s = fail(err, BCG_ERR_NOMEM, "out of memory");
    }
    if (!s)
        s = prepare_run(k, c, err);
    char note[600] = "";
    if (!s && c->plan->empty)
        s = fail(err, BCG_ERR_USAGE, "internal: a fused program with no elements");
    if (!s) {
        s = compile_code(c, c->source, &k->code, &k->cc, &k->fn, note, sizeof note, err);
        cache_count_compile(ctx);
    }
    if (!s && note[0] && !(k->note = copy_text(note)))
        s = fail(err, BCG_ERR_NOMEM, "out of memory");
    if (s) {
        kernel_destroy(k); /* without the arena, still the caller's */
        arena_free(a);
        return s;
    }
    c->err = NULL; /* the caller's error struct does not outlive this call */
    c->source = NULL;
    k->arena = a;
    k->front = c;
    k->bytes += 64 * 1024 + jit_code_size(k->code) + (k->note ? strlen(k->note) + 1 : 0);
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
        if (a && kernel_recompile(k, a, &err, 0, &c) == BCG_OK)
            k->source = copy_text(c->source);
        arena_free(a);
    }
    pthread_mutex_unlock(&k->lazy_lock);
    return k->source;
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
    compile_request r = {.text = expr, .operands = operands, .operand_count = operand_count,
                         .options = options, .goal = COMPILE_PLAIN};
    bcg_status s = compile_pipeline(c, &r);
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
