/* cache.c - a context's kernels: the cache that finds a compiled kernel by
 * its key, the capacity that bounds it, and when a kernel's memory goes.
 *
 * The key is everything that can change the generated code: the expression,
 * every operand's name (names bind the expression's identifiers), dtype,
 * rank, shape and strides, and the options.  It is a byte string in which
 * every variable-length part is preceded by its length, so two different
 * inputs never give the same bytes, whatever the text holds (a name holding
 * ":9:1:3,@\n" cannot pose as a second operand), and it can be decoded
 * back into the arguments (kernel_recompile rebuilds a kernel's tree and plan
 * from it instead of keeping them).  A lookup never builds it: walk_key
 * feeds the parts straight from the caller's arrays into a hash, then, for
 * a cached kernel with the same hash and length, compares them against
 * that kernel's stored copy: no allocation and no formatting on a hit.
 *
 * Lookup is a hash table of chains whose bucket count doubles when the
 * kernels outnumber the buckets, so a hit costs the same with a million
 * kernels as with ten.  A list orders the cached kernels by last use; with
 * a capacity (bcg_context_set_capacity) the least recently used ones are
 * evicted after each insertion.
 *
 * Lifetime: a kernel is retired when nothing refers to it.  `refs` counts
 * one for being cached and one for each bcg_compile that returned it and
 * was not released, so one a caller still holds stays valid after eviction
 * until the caller releases it.  Every live kernel is also on the
 * context's `live` list, so bcg_context_free frees them all, held or not.
 *
 * Runs in progress: a kernel evicted or released while another thread
 * runs it must live until that run ends.  Counting runs in `refs` costs two
 * locked instructions per bcg_run (measured: 6 -> 14 ns a call for a
 * 4-element kernel), so instead each thread that runs kernels publishes the
 * kernel it runs in a slot of its own with a plain store, and retiring a
 * kernel first makes every thread's slot visible with membarrier(2) (the
 * "asymmetric fence": its cost moves from every run to each retirement)
 * and then frees the kernel only if no slot holds it; one still running
 * waits on the context's `retired` list until the run's end reaps it.
 * Where membarrier is unavailable (old kernels, valgrind) runs count
 * themselves in `refs` instead.
 */
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

struct bcg_context {
    pthread_mutex_t lock;
    bcg_kernel **buckets;      /* bucket_count chains (a power of two) */
    size_t bucket_count;
    size_t cached_count;       /* kernels in the table */
    size_t cached_bytes;       /* and the memory they hold */
    size_t max_kernels;        /* capacity; 0: no bound */
    size_t max_bytes;
    bcg_kernel *newest, *oldest;
    bcg_kernel *live;
    size_t live_count;
    bcg_kernel *retired;       /* unreferenced, maybe still running (chained by hash_next) */
    long tcc_compiles;         /* how many times a backend ran: tests read it */
    long evictions;
    long key_compares;         /* stored keys compared by lookups: tests read it */
    long threaded_runs;        /* runs that used the pool: tests read it */
    pool *pool;                /* bcg_run_threads' workers; NULL until needed */
    size_t max_source;         /* BCG_MAX_SOURCE; tests lower it (compile_set_max_source) */
};

#define FIRST_BUCKETS 64

static void evict_over_capacity(bcg_context *ctx, const bcg_kernel *keep, bcg_kernel **out);

bcg_context *bcg_context_new(void)
{
    bcg_context *ctx = mem_alloc(sizeof *ctx);
    if (!ctx)
        return NULL;
    memset(ctx, 0, sizeof *ctx);
    ctx->max_source = BCG_MAX_SOURCE;
    ctx->bucket_count = FIRST_BUCKETS;
    ctx->buckets = mem_alloc(sizeof *ctx->buckets * ctx->bucket_count);
    if (!ctx->buckets || pthread_mutex_init(&ctx->lock, NULL) != 0) {
        mem_free(ctx->buckets);
        mem_free(ctx);
        return NULL;
    }
    memset(ctx->buckets, 0, sizeof *ctx->buckets * ctx->bucket_count);
    return ctx;
}

void bcg_context_free(bcg_context *ctx)
{
    if (!ctx)
        return;
    bcg_kernel *k = ctx->live;
    while (k) {
        bcg_kernel *next = k->live_next;
        kernel_destroy(k);
        k = next;
    }
    for (k = ctx->retired; k;) {
        bcg_kernel *next = k->hash_next;
        kernel_destroy(k);
        k = next;
    }
    pool_free(ctx->pool);
    pthread_mutex_destroy(&ctx->lock);
    mem_free(ctx->buckets);
    mem_free(ctx);
}

bcg_status bcg_context_set_capacity(bcg_context *ctx, size_t max_kernels, size_t max_bytes,
                                    bcg_error *err)
{
    error_clear(err);
    if (!ctx)
        return fail(err, BCG_ERR_USAGE, "bcg_context_set_capacity: no context");
    bcg_kernel *evicted = NULL;
    pthread_mutex_lock(&ctx->lock);
    ctx->max_kernels = max_kernels;
    ctx->max_bytes = max_bytes;
    evict_over_capacity(ctx, NULL, &evicted);
    pthread_mutex_unlock(&ctx->lock);
    while (evicted) {
        bcg_kernel *next = evicted->hash_next;
        kernel_drop(evicted);
        evicted = next;
    }
    return BCG_OK;
}

void bcg_context_stats(bcg_context *ctx, bcg_cache_stats *stats)
{
    if (!stats)
        return;
    memset(stats, 0, sizeof *stats);
    if (!ctx)
        return;
    pthread_mutex_lock(&ctx->lock);
    stats->kernels = ctx->cached_count;
    stats->bytes = ctx->cached_bytes;
    stats->max_kernels = ctx->max_kernels;
    stats->max_bytes = ctx->max_bytes;
    stats->compiles = ctx->tcc_compiles;
    stats->evictions = ctx->evictions;
    stats->live_kernels = ctx->live_count;
    pthread_mutex_unlock(&ctx->lock);
}

size_t cache_max_source(bcg_context *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    size_t n = ctx->max_source;
    pthread_mutex_unlock(&ctx->lock);
    return n;
}

void compile_set_max_source(bcg_context *ctx, size_t bytes)
{
    pthread_mutex_lock(&ctx->lock);
    ctx->max_source = bytes;
    pthread_mutex_unlock(&ctx->lock);
}

void cache_count_compile(bcg_context *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    ctx->tcc_compiles++;
    pthread_mutex_unlock(&ctx->lock);
}

long compile_tcc_count(const bcg_context *ctx) { return ctx->tcc_compiles; }
long cache_key_compares(const bcg_context *ctx) { return ctx->key_compares; }
long compile_threaded_run_count(const bcg_context *ctx) { return ctx->threaded_runs; }

pool *cache_pool(bcg_context *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    if (!ctx->pool)
        ctx->pool = pool_new();
    if (ctx->pool)
        ctx->threaded_runs++;
    pool *p = ctx->pool;
    pthread_mutex_unlock(&ctx->lock);
    return p;
}

int compile_pool_workers(bcg_context *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    pool *p = ctx->pool;
    pthread_mutex_unlock(&ctx->lock);
    return p ? pool_worker_count(p) : 0;
}

/* ---- the key ------------------------------------------------------------------ */

typedef struct key_walk {
    uint64_t hash;                /* probe: the hash of the bytes fed */
    size_t length;                /* bytes fed so far */
    const unsigned char *stored;  /* compare: the stored key, else NULL */
    size_t stored_length;
    bool differs;                 /* compare: the bytes differ from the stored key */
    unsigned char *out;           /* write: the key's buffer, else NULL */
} key_walk;

static uint64_t mix(uint64_t h, uint64_t word)
{
    h ^= word;
    h *= 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

static void key_feed(key_walk *w, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    if (w->out) {
        memcpy(w->out + w->length, p, n);
    } else if (w->stored) {
        if (!w->differs)
            w->differs = n > w->stored_length - w->length ||
                         memcmp(w->stored + w->length, p, n) != 0;
    } else {
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            uint64_t word;
            memcpy(&word, p + i, 8);
            w->hash = mix(w->hash, word);
        }
        if (i < n) {
            uint64_t word = 0;
            memcpy(&word, p + i, n - i);
            w->hash = mix(w->hash, word);
        }
    }
    w->length += n;
}

/* Feeds the key of the arguments into W.  Callers have checked that every
 * name is valid and every rank in range.  bcg_options holds only ints up
 * to its last field, the output pointer, so the bytes before it are its
 * value (no padding); the output description is fed by value after them.
 * ORDER KEY: cache_key_decode reads the parts in this order. */
/* The bytes of bcg_options before its output pointer: ints only. */
#define OPTION_BYTES offsetof(bcg_options, output)
_Static_assert(OPTION_BYTES % sizeof(int) == 0, "bcg_options: ints before the output pointer");

static void walk_key(key_walk *w, const char *expr, size_t expr_length, const bcg_operand *ops,
                     int count, const bcg_options *o)
{
    key_feed(w, &expr_length, sizeof expr_length);
    key_feed(w, expr, expr_length);
    key_feed(w, &count, sizeof count);
    key_feed(w, o, OPTION_BYTES);
    key_feed(w, &o->disable_vector_code, sizeof o->disable_vector_code);
    const bcg_output *out = o->output;
    bool reduce = out && out->reduce != BCG_REDUCE_NONE;
    int output[5] = {out != NULL, out ? out->dtype : 0, out ? out->rank : 0,
                     out && out->strides, reduce ? out->reduce : 0};
    key_feed(w, output, sizeof output);
    if (out && out->strides)
        key_feed(w, out->strides, sizeof *out->strides * (size_t)out->rank);
    if (reduce && out->shape)
        key_feed(w, out->shape, sizeof *out->shape * (size_t)out->rank);
    for (int i = 0; i < count; i++) {
        const bcg_operand *op = &ops[i];
        size_t name_length = strlen(op->name);
        int fixed[4] = {(int)op->dtype, op->rank, op->shape != NULL, op->strides != NULL};
        key_feed(w, &name_length, sizeof name_length);
        key_feed(w, op->name, name_length);
        key_feed(w, fixed, sizeof fixed);
        if (op->shape)
            key_feed(w, op->shape, sizeof *op->shape * (size_t)op->rank);
        if (op->strides)
            key_feed(w, op->strides, sizeof *op->strides * (size_t)op->rank);
    }
}

unsigned char *cache_key_new(const key_probe *probe, const char *expr, size_t expr_length,
                             const bcg_operand *ops, int count, const bcg_options *options)
{
    unsigned char *key = mem_alloc(probe->length);
    if (!key)
        return NULL;
    key_walk write = {.out = key};
    walk_key(&write, expr, expr_length, ops, count, options);
    return key;
}

typedef struct key_reader {
    const unsigned char *p, *end;
} key_reader;

static const unsigned char *take(key_reader *r, size_t n)
{
    if ((size_t)(r->end - r->p) < n)
        return NULL;
    const unsigned char *at = r->p;
    r->p += n;
    return at;
}

#define TAKE(r, var) (take(r, sizeof(var)) ? (memcpy(&(var), (r)->p - sizeof(var), sizeof(var)), true) : false)

/* ORDER KEY: walk_key writes the parts in this order. */
bool cache_key_decode(arena *a, const unsigned char *key, size_t length, const char **expr,
                      bcg_operand **ops_out, int *count_out, bcg_options *options)
{
    key_reader r = {key, key + length};
    size_t expr_length;
    int count;
    if (!TAKE(&r, expr_length))
        return false;
    const unsigned char *text = take(&r, expr_length);
    int output[5];
    const unsigned char *option_bytes;
    int disable_vector_code;
    if (!text || !TAKE(&r, count) || !(option_bytes = take(&r, OPTION_BYTES)) ||
        !TAKE(&r, disable_vector_code) || !TAKE(&r, output) || count < 1 ||
        count > BCG_MAX_OPERANDS)
        return false;
    memset(options, 0, sizeof *options);
    memcpy(options, option_bytes, OPTION_BYTES);
    options->disable_vector_code = disable_vector_code;
    if (output[0]) {
        bcg_output *out = arena_alloc(a, sizeof *out);
        if (!out || output[2] < 0 || output[2] > BCG_MAX_RANK)
            return false;
        memset(out, 0, sizeof *out);
        out->dtype = output[1];
        out->rank = output[2];
        out->reduce = output[4];
        size_t bytes = sizeof(int64_t) * (size_t)output[2];
        for (int part = 0; part < 2; part++) {
            if (part == 0 ? !output[3] : output[4] == BCG_REDUCE_NONE)
                continue;
            const unsigned char *at = take(&r, bytes);
            int64_t *values = arena_alloc(a, bytes ? bytes : 1);
            if (!at || !values)
                return false;
            memcpy(values, at, bytes);
            if (part == 0)
                out->strides = values;
            else
                out->shape = values;
        }
        options->output = out;
    }
    char *e = arena_strndup(a, (const char *)text, expr_length);
    bcg_operand *ops = arena_alloc(a, sizeof *ops * (size_t)count);
    if (!e || !ops)
        return false;
    for (int i = 0; i < count; i++) {
        size_t name_length;
        int fixed[4];
        if (!TAKE(&r, name_length))
            return false;
        const unsigned char *name = take(&r, name_length);
        if (!name || !TAKE(&r, fixed))
            return false;
        ops[i].name = arena_strndup(a, (const char *)name, name_length);
        ops[i].dtype = (bcg_dtype)fixed[0];
        ops[i].rank = fixed[1];
        if (!ops[i].name || fixed[1] < 0 || fixed[1] > BCG_MAX_RANK)
            return false;
        size_t bytes = sizeof(int64_t) * (size_t)fixed[1];
        for (int part = 0; part < 2; part++) {
            if (!fixed[2 + part])
                continue;
            const unsigned char *at = take(&r, bytes);
            int64_t *values = arena_alloc(a, bytes ? bytes : 1);
            if (!at || !values)
                return false;
            memcpy(values, at, bytes);
            if (part == 0)
                ops[i].shape = values;
            else
                ops[i].strides = values;
        }
    }
    *expr = e;
    *ops_out = ops;
    *count_out = count;
    return r.p == r.end;
}

/* ---- the table and the use order (all under ctx->lock) ---------------------------- */

static bcg_kernel **bucket_of(bcg_context *ctx, uint64_t hash)
{
    return &ctx->buckets[hash & (ctx->bucket_count - 1)];
}

/* Doubles the buckets when kernels outnumber them; stays as it is when
 * memory runs out (chains get longer, lookups stay correct). */
static void grow_table(bcg_context *ctx)
{
    if (ctx->cached_count < ctx->bucket_count)
        return;
    size_t count = ctx->bucket_count * 2;
    bcg_kernel **buckets = mem_alloc(sizeof *buckets * count);
    if (!buckets)
        return;
    memset(buckets, 0, sizeof *buckets * count);
    for (size_t b = 0; b < ctx->bucket_count; b++) {
        bcg_kernel *k = ctx->buckets[b];
        while (k) {
            bcg_kernel *next = k->hash_next;
            bcg_kernel **to = &buckets[k->hash & (count - 1)];
            k->hash_next = *to;
            *to = k;
            k = next;
        }
    }
    mem_free(ctx->buckets);
    ctx->buckets = buckets;
    ctx->bucket_count = count;
}

static void unlink_use(bcg_context *ctx, bcg_kernel *k)
{
    if (k->newer)
        k->newer->older = k->older;
    else
        ctx->newest = k->older;
    if (k->older)
        k->older->newer = k->newer;
    else
        ctx->oldest = k->newer;
    k->newer = k->older = NULL;
}

static void link_newest(bcg_context *ctx, bcg_kernel *k)
{
    k->older = ctx->newest;
    k->newer = NULL;
    if (ctx->newest)
        ctx->newest->newer = k;
    ctx->newest = k;
    if (!ctx->oldest)
        ctx->oldest = k;
}

/* Takes K out of the table and the use order; the caller drops the
 * cache's reference (outside the lock). */
static void uncache(bcg_context *ctx, bcg_kernel *k)
{
    bcg_kernel **at = bucket_of(ctx, k->hash);
    while (*at != k)
        at = &(*at)->hash_next;
    *at = k->hash_next;
    k->hash_next = NULL;
    unlink_use(ctx, k);
    k->cached = false;
    ctx->cached_count--;
    ctx->cached_bytes -= k->bytes;
}

/* Evicts least recently used kernels, never KEEP, while the cache is over
 * its capacity; the evicted are chained on *OUT through hash_next for the
 * caller to drop outside the lock. */
static void evict_over_capacity(bcg_context *ctx, const bcg_kernel *keep, bcg_kernel **out)
{
    for (;;) {
        bool over = (ctx->max_kernels && ctx->cached_count > ctx->max_kernels) ||
                    (ctx->max_bytes && ctx->cached_bytes > ctx->max_bytes);
        bcg_kernel *victim = ctx->oldest;
        if (victim == keep && victim)
            victim = victim->newer;
        if (!over || !victim)
            return;
        uncache(ctx, victim);
        ctx->evictions++;
        victim->hash_next = *out;
        *out = victim;
    }
}

static void hold(const bcg_kernel *k)
{
    __atomic_add_fetch(&((bcg_kernel *)k)->refs, 1, __ATOMIC_RELAXED);
}

/* ---- runs in progress (see the top of the file) ------------------------------------ */

typedef struct run_slot {
    const bcg_kernel *running;  /* atomic: the kernel this thread runs, or NULL */
    struct run_slot *next;      /* every slot made (never freed; reused) */
    int taken;                  /* atomic: a thread owns it */
} run_slot;

static run_slot *slots;                 /* atomic: push-only list */
/* initial-exec: a run reads it without a call to __tls_get_addr */
static __thread run_slot *thread_slot __attribute__((tls_model("initial-exec")));
static pthread_key_t slot_key;          /* gives a slot back when its thread exits */
static pthread_once_t slots_once = PTHREAD_ONCE_INIT;
static bool fence_ready;                /* membarrier registered: runs use slots */

static long membarrier(int command) { return syscall(__NR_membarrier, command, 0, 0); }

static void give_back(void *slot) { __atomic_store_n(&((run_slot *)slot)->taken, 0, __ATOMIC_RELEASE); }

static void slots_init(void)
{
    long commands = membarrier(MEMBARRIER_CMD_QUERY);
    fence_ready = commands > 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                  pthread_key_create(&slot_key, give_back) == 0 &&
                  membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

/* This thread's slot, or NULL (then the run counts itself in refs). */
static run_slot *own_slot(void)
{
    if (thread_slot)
        return thread_slot;
    for (run_slot *s = __atomic_load_n(&slots, __ATOMIC_ACQUIRE); s; s = s->next) {
        int free_slot = 0;
        if (__atomic_compare_exchange_n(&s->taken, &free_slot, 1, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
            thread_slot = s;
            break;
        }
    }
    if (!thread_slot) {
        /* process-wide infrastructure, like libtcc's state: plain malloc,
         * outside the allocation-failure tests' count */
        run_slot *s = calloc(1, sizeof *s);
        if (!s)
            return NULL;
        s->taken = 1;
        s->next = __atomic_load_n(&slots, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(&slots, &s->next, s, true, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED))
            ;
        thread_slot = s;
    }
    if (pthread_setspecific(slot_key, thread_slot) != 0) {
        give_back(thread_slot);
        thread_slot = NULL;
    }
    return thread_slot;
}

/* run_begin's first run on a thread (no slot yet) and nested runs; out
 * of line, so that run_begin's common case inlines into its callers. */
static __attribute__((noinline)) run_token run_begin_other(const bcg_kernel *k)
{
    run_slot *s = thread_slot; /* set only where slots are in use */
    if (!s) {
        pthread_once(&slots_once, slots_init);
        s = fence_ready ? own_slot() : NULL;
    }
    if (s && !__atomic_load_n(&s->running, __ATOMIC_RELAXED)) {
        /* a plain store: retire()'s membarrier makes it visible */
        __atomic_store_n(&s->running, k, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        return s;
    }
    hold(k);
    return NULL;
}

static inline __attribute__((always_inline)) run_token begin(const bcg_kernel *k)
{
    run_slot *s = thread_slot;
    if (s && !__atomic_load_n(&s->running, __ATOMIC_RELAXED)) { /* as run_begin_other */
        __atomic_store_n(&s->running, k, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        return s;
    }
    return run_begin_other(k);
}

run_token run_begin(const bcg_kernel *k) { return begin(k); }

static void reap(bcg_context *ctx);

void run_function(const bcg_kernel *k, void *output, const void *const *inputs)
{
    run_token token = begin(k);
    k->fn(output, inputs);
    run_end(k, token);
}

int run_checked(const bcg_kernel *k, void *output, const void *const *inputs)
{
    run_token token = begin(k);
    int failed = k->checked(output, inputs);
    run_end(k, token);
    return failed;
}


void run_end(const bcg_kernel *k, run_token token)
{
    if (!token) {
        kernel_drop(k);
        return;
    }
    /* K stays allocated until the slot is cleared: read what is needed first */
    bcg_context *ctx = k->ctx;
    bool retired = __atomic_load_n(&k->retired, __ATOMIC_ACQUIRE);
    __atomic_store_n(&((run_slot *)token)->running, NULL, __ATOMIC_RELEASE);
    if (retired)
        reap(ctx);
}

static bool running_somewhere(const bcg_kernel *k)
{
    for (run_slot *s = __atomic_load_n(&slots, __ATOMIC_ACQUIRE); s; s = s->next)
        if (__atomic_load_n(&s->running, __ATOMIC_ACQUIRE) == k)
            return true;
    return false;
}

/* Frees the context's retired kernels that no thread runs; the others stay
 * retired for a later reap. */
static void reap(bcg_context *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    bcg_kernel *list = ctx->retired;
    ctx->retired = NULL;
    pthread_mutex_unlock(&ctx->lock);
    if (!list)
        return;
    /* every thread's earlier slot stores are visible after this */
    if (fence_ready && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
        __atomic_thread_fence(__ATOMIC_SEQ_CST); /* cannot fail once registered */
    bcg_kernel *keep = NULL;
    while (list) {
        bcg_kernel *next = list->hash_next;
        if (running_somewhere(list)) {
            list->hash_next = keep;
            keep = list;
        } else {
            kernel_destroy(list);
        }
        list = next;
    }
    if (!keep)
        return;
    pthread_mutex_lock(&ctx->lock);
    while (keep) {
        bcg_kernel *next = keep->hash_next;
        keep->hash_next = ctx->retired;
        ctx->retired = keep;
        keep = next;
    }
    pthread_mutex_unlock(&ctx->lock);
}

void kernel_drop(const bcg_kernel *k)
{
    bcg_kernel *kernel = (bcg_kernel *)k;
    /* acquire-release: whatever a release did to the kernel happens before
     * the thread that retires it reads it */
    if (__atomic_sub_fetch(&kernel->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    pthread_once(&slots_once, slots_init);
    bcg_context *ctx = kernel->ctx;
    pthread_mutex_lock(&ctx->lock);
    if (kernel->live_prev)
        kernel->live_prev->live_next = kernel->live_next;
    else
        ctx->live = kernel->live_next;
    if (kernel->live_next)
        kernel->live_next->live_prev = kernel->live_prev;
    ctx->live_count--;
    __atomic_store_n(&kernel->retired, true, __ATOMIC_RELEASE);
    kernel->hash_next = ctx->retired;
    ctx->retired = kernel;
    pthread_mutex_unlock(&ctx->lock);
    reap(ctx);
}

bcg_kernel *cache_lookup(bcg_context *ctx, const char *expr, size_t expr_length,
                         const bcg_operand *ops, int count, const bcg_options *options,
                         key_probe *probe)
{
    key_walk w = {.hash = 0};
    walk_key(&w, expr, expr_length, ops, count, options);
    probe->hash = w.hash;
    probe->length = w.length;
    pthread_mutex_lock(&ctx->lock);
    bcg_kernel *found = NULL;
    for (bcg_kernel *k = *bucket_of(ctx, w.hash); k; k = k->hash_next) {
        if (k->hash != w.hash || k->key_length != w.length)
            continue;
        ctx->key_compares++;
        key_walk compare = {.stored = k->key, .stored_length = k->key_length};
        walk_key(&compare, expr, expr_length, ops, count, options);
        if (!compare.differs) {
            found = k;
            break;
        }
    }
    if (found) {
        if (ctx->newest != found) {
            unlink_use(ctx, found);
            link_newest(ctx, found);
        }
        found->callers++;
        hold(found);
    }
    pthread_mutex_unlock(&ctx->lock);
    return found;
}

bcg_kernel *cache_insert(bcg_kernel *k)
{
    bcg_context *ctx = k->ctx;
    bcg_kernel *evicted = NULL, *found = NULL;
    pthread_mutex_lock(&ctx->lock);
    for (bcg_kernel *other = *bucket_of(ctx, k->hash); other; other = other->hash_next)
        if (other->hash == k->hash && other->key_length == k->key_length &&
            memcmp(other->key, k->key, k->key_length) == 0) {
            found = other; /* another thread won the race: keep one copy */
            break;
        }
    if (found) {
        found->callers++;
        hold(found);
    } else {
        k->refs = 2; /* cached, and the caller's */
        k->callers = 1;
        k->cached = true;
        bcg_kernel **at = bucket_of(ctx, k->hash);
        k->hash_next = *at;
        *at = k;
        link_newest(ctx, k);
        k->live_prev = NULL;
        k->live_next = ctx->live;
        if (ctx->live)
            ctx->live->live_prev = k;
        ctx->live = k;
        ctx->live_count++;
        ctx->cached_count++;
        ctx->cached_bytes += k->bytes;
        grow_table(ctx);
        evict_over_capacity(ctx, k, &evicted);
    }
    pthread_mutex_unlock(&ctx->lock);
    while (evicted) {
        bcg_kernel *next = evicted->hash_next;
        kernel_drop(evicted);
        evicted = next;
    }
    if (found) {
        kernel_destroy(k);
        return found;
    }
    return k;
}

/* ---- releasing ------------------------------------------------------------------- */

static void release(bcg_kernel *k, bool forget)
{
    bcg_context *ctx = k->ctx;
    bool held = false, was_cached = false;
    pthread_mutex_lock(&ctx->lock);
    if (k->callers > 0) {
        k->callers--;
        held = true;
    }
    if (forget && k->cached) {
        uncache(ctx, k);
        was_cached = true;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (was_cached)
        kernel_drop(k);
    if (held)
        kernel_drop(k);
}

void bcg_kernel_release(bcg_kernel *k)
{
    if (k)
        release(k, false);
}

void bcg_kernel_free(bcg_kernel *k)
{
    if (k)
        release(k, true);
}
