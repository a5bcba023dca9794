/* cache.c - a context's kernels: the cache that finds a compiled kernel by
 * its key, the capacity that bounds it, and when a kernel's memory goes.
 *
 * The key is everything that can change the generated code: the expression,
 * every operand's name (names bind the expression's identifiers), dtype,
 * rank, shape and strides, and the options.  It is a byte string in which
 * every variable-length part is preceded by its length, so two different
 * inputs never give the same bytes, whatever the text holds (a name holding
 * ":9:1:3,@\n" cannot pose as a second operand), and it can be decoded
 * back into the arguments (kernel_front rebuilds a kernel's tree and plan
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
 * Lifetime: a kernel is freed when nothing refers to it.  `refs` counts one
 * for being cached, one for each bcg_compile that returned it and was not
 * released, and one for each run in progress.  So a kernel evicted or freed
 * while another thread runs it goes when that run ends, and one a caller
 * still holds stays valid after eviction until the caller releases it.
 * Every live kernel is also on the context's `live` list, so
 * bcg_context_free frees them all, held or not.
 */
#include <stdlib.h>
#include <string.h>

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
 * name is valid and every rank in range.  bcg_options holds only ints, so
 * its bytes are its value (no padding).  ORDER KEY: cache_key_decode reads
 * the parts in this order. */
static void walk_key(key_walk *w, const char *expr, size_t expr_length, const bcg_operand *ops,
                     int count, const bcg_options *o)
{
    key_feed(w, &expr_length, sizeof expr_length);
    key_feed(w, expr, expr_length);
    key_feed(w, &count, sizeof count);
    key_feed(w, o, sizeof *o);
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
    if (!text || !TAKE(&r, count) || !TAKE(&r, *options) || count < 1 ||
        count > BCG_MAX_OPERANDS)
        return false;
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

void kernel_hold(const bcg_kernel *k) { hold(k); }

void kernel_drop(const bcg_kernel *k)
{
    bcg_kernel *kernel = (bcg_kernel *)k;
    /* acquire-release: whatever a run or a release did to the kernel
     * happens before the thread that frees it reads it */
    if (__atomic_sub_fetch(&kernel->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    bcg_context *ctx = kernel->ctx;
    pthread_mutex_lock(&ctx->lock);
    if (kernel->live_prev)
        kernel->live_prev->live_next = kernel->live_next;
    else
        ctx->live = kernel->live_next;
    if (kernel->live_next)
        kernel->live_next->live_prev = kernel->live_prev;
    ctx->live_count--;
    pthread_mutex_unlock(&ctx->lock);
    kernel_destroy(kernel);
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
