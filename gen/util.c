/* util.c - memory (with an allocation-failure hook for tests), the per-compile
 * arena, a growable string buffer, and the sticky error helpers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- memory ------------------------------------------------------------- */

/* The failure countdown is the one piece of global state besides libtcc's:
 * it exists only for the allocation-failure tests and is off (0) otherwise. */
static _Thread_local long fail_countdown;
static _Thread_local long alloc_count;

static bool injected_failure(void)
{
    alloc_count++;
    if (fail_countdown > 0 && --fail_countdown == 0)
        return true;
    return false;
}

/* Live blocks, for the leak check of the allocation-failure test; atomic
 * because contexts are used from several threads. */
static long live_blocks;

void *mem_alloc(size_t size)
{
    if (injected_failure())
        return NULL;
    void *p = malloc(size ? size : 1);
    if (p)
        __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    return p;
}

void *mem_realloc(void *p, size_t size)
{
    if (injected_failure())
        return NULL;
    void *q = realloc(p, size ? size : 1);
    if (q && !p)
        __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    return q;
}

void mem_free(void *p)
{
    if (p)
        __atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    free(p);
}

long mem_live(void) { return __atomic_load_n(&live_blocks, __ATOMIC_RELAXED); }

long mem_fail_after(long n)
{
    long made = alloc_count;
    alloc_count = 0;
    fail_countdown = n;
    return made;
}

void bcg_free(void *p) { mem_free(p); }

/* ---- arena -------------------------------------------------------------- */

typedef struct arena_block {
    struct arena_block *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
} arena_block;

struct arena {
    arena_block *head;
};

arena *arena_new(void)
{
    arena *a = mem_alloc(sizeof *a);
    if (a)
        a->head = NULL;
    return a;
}

void arena_free(arena *a)
{
    if (!a)
        return;
    arena_block *b = a->head;
    while (b) {
        arena_block *next = b->next;
        mem_free(b);
        b = next;
    }
    mem_free(a);
}

void *arena_alloc(arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size == 0)
        size = 16;
    arena_block *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t block_size = size > 16384 ? size : 16384;
        if (block_size > SIZE_MAX - sizeof *b)
            return NULL;
        b = mem_alloc(sizeof *b + block_size);
        if (!b)
            return NULL;
        b->size = block_size;
        b->used = 0;
        /* Keep the fuller block behind the new one only when the new one is
         * a one-off large allocation; otherwise the new block becomes head. */
        if (a->head && block_size == size && a->head->size - a->head->used > 256) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

char *arena_strndup(arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

char *arena_printf(arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = n < 0 ? NULL : arena_alloc(a, (size_t)n + 1);
    if (p)
        vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

/* ---- string buffer ------------------------------------------------------ */

void sb_init(strbuf *sb)
{
    sb->data = NULL;
    sb->len = sb->cap = 0;
    sb->failed = false;
}

void sb_free(strbuf *sb)
{
    mem_free(sb->data);
    sb_init(sb);
}

static bool sb_reserve(strbuf *sb, size_t extra)
{
    if (sb->failed)
        return false;
    if (sb->len + extra + 1 <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            sb->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *p = mem_realloc(sb->data, cap);
    if (!p) {
        sb->failed = true;
        return false;
    }
    sb->data = p;
    sb->cap = cap;
    return true;
}

void sb_put(strbuf *sb, const char *s, size_t n)
{
    if (!sb_reserve(sb, n))
        return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = 0;
}

void sb_puts(strbuf *sb, const char *s) { sb_put(sb, s, strlen(s)); }

void sb_putc(strbuf *sb, char c) { sb_put(sb, &c, 1); }

void sb_vprintf(strbuf *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n >= 0 && sb_reserve(sb, (size_t)n)) {
        vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap2);
        sb->len += (size_t)n;
    } else if (n < 0) {
        sb->failed = true;
    }
    va_end(ap2);
}

void sb_printf(strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

char *sb_finish(strbuf *sb)
{
    if (!sb_reserve(sb, 0)) {
        sb_free(sb);
        return NULL;
    }
    char *p = sb->data;
    p[sb->len] = 0;
    sb_init(sb);
    return p;
}

/* ---- errors ------------------------------------------------------------- */

void error_clear(bcg_error *err)
{
    if (!err)
        return;
    err->status = BCG_OK;
    err->column = 0;
    err->operand = -1;
    err->dimension = -1;
    err->message[0] = 0;
}

static bcg_status vfail_at(bcg_error *err, bcg_status status, int column, int operand,
                           int dimension, const char *fmt, va_list ap)
{
    if (!err || err->status != BCG_OK)
        return status;
    err->status = status;
    err->column = column;
    err->operand = operand;
    err->dimension = dimension;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    return status;
}

bcg_status fail(bcg_error *err, bcg_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_at(err, status, 0, -1, -1, fmt, ap);
    va_end(ap);
    return status;
}

bcg_status fail_at(bcg_error *err, bcg_status status, int column, int operand,
                   int dimension, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_at(err, status, column, operand, dimension, fmt, ap);
    va_end(ap);
    return status;
}

bool name_is_valid(const char *s, size_t n)
{
    if (!s || n == 0 || n > BCG_MAX_NAME)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        bool digit = c >= '0' && c <= '9';
        if (!(alpha || (digit && i > 0)))
            return false;
    }
    return true;
}
