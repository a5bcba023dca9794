/* jit.c - compiles emitted kernels in-process through libtcc.
 *
 * Facts about Debian's libtcc 0.9.27 that shape this file:
 *  - libtcc keeps global state: concurrent compiles from two threads crash.
 *    One process-wide mutex (tcc_lock) is held from tcc_new to tcc_delete.
 *  - Hermetic is fast and safe: -nostdlib -nostdinc, no #include in the
 *    source, and the few functions a kernel calls (libm, and the helpers tcc
 *    calls for unsigned 64-bit <-> floating conversions, normally found in
 *    libtcc1.a which libtcc-dev does not ship) are handed over with
 *    tcc_add_symbol.  Nothing from the user reaches tcc_set_options.
 *  - Code memory: tcc_relocate into a buffer mapped read+write here, then
 *    the whole buffer is made read+execute.  tcc_relocate itself asks for
 *    read+write+execute on the code it has just written; the Makefile
 *    renames libtcc.a's mprotect to jit_tcc_mprotect below, which drops
 *    the execute bit from such a request, so no page of this process is
 *    ever writable and executable at once, not even during a compile.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <libtcc.h>

#include "internal.h"
#include "vex.h"

struct jit_code {
    void *memory;
    size_t size;
    void *vex_memory;   /* the fused vector function (vex.c) the code calls, or NULL */
    size_t vex_size;
    bool checked_entry; /* jit_bind: memory starts with the checks (vex_small_checks) */
};

/* VEX (VEX_SIZE bytes of machine code) in pages of its own: mapped
 * read+write, written, then made read+execute before anything runs it, so
 * it is never writable and executable at once.  NULL when it cannot be. */
static void *map_code(const unsigned char *vex, size_t vex_size, size_t *size)
{
    long page = sysconf(_SC_PAGESIZE);
    *size = (vex_size + (size_t)page - 1) / (size_t)page * (size_t)page;
    void *memory = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED)
        return NULL;
    memcpy(memory, vex, vex_size);
    if (mprotect(memory, *size, PROT_READ | PROT_EXEC) != 0) {
        munmap(memory, *size);
        return NULL;
    }
    return memory;
}

/* The bytes jit_compile maps after a fused vector function for libtcc's
 * code (a kernel calling one is a loop nest of a few KB); larger code
 * gets pages of its own. */
#define VEX_CODE_ROOM (32 * 1024)

static pthread_mutex_t tcc_lock = PTHREAD_MUTEX_INITIALIZER;

/* The code buffer of the compile in progress (under tcc_lock), mapped
 * read+write. */
static void *code_buffer;
static size_t code_buffer_size;

/* Every mprotect call libtcc makes (the Makefile renames its references).
 * A request for write and execute together becomes read+write: the code is
 * made read+execute by jit_compile once relocation is done.  A read+write
 * request inside the code buffer changes nothing and makes no system call
 * (tcc_relocate asks twice a compile; each is a TLB flush on some kernels). */
int jit_tcc_mprotect(void *address, size_t length, int protection);
int jit_tcc_mprotect(void *address, size_t length, int protection)
{
    if ((protection & PROT_WRITE) && (protection & PROT_EXEC))
        protection &= ~PROT_EXEC;
    char *at = address, *buffer = code_buffer;
    if (protection == (PROT_READ | PROT_WRITE) && buffer && at >= buffer &&
        length <= code_buffer_size && (size_t)(at - buffer) <= code_buffer_size - length)
        return 0;
    return mprotect(address, length, protection);
}

/* ---- libtcc's memory -------------------------------------------------------------
 *
 * A compile makes libtcc allocate about 2 MB (its token and string pools
 * take 1.8 MB at once) and free it all in tcc_delete.  Through malloc that
 * grew the heap and trimmed it again on every compile: three brk calls
 * and fresh zeroed pages each time, measured at about a fifth of a small
 * kernel's compile.  So the Makefile renames libtcc's malloc, calloc,
 * realloc and free to the jit_tcc_ functions below, which hand out memory
 * from scratch blocks kept between compiles: a bump pointer, free a no-op
 * (but for the newest block, so growing the newest block by realloc stays
 * in place), and all of it reset when a compile ends with nothing live.
 * Only libtcc calls them, only under tcc_lock.  Requests of SCRATCH_BLOCK
 * or more go to the C library, and so does every pointer that is not
 * scratch.  The blocks kept are bounded by SCRATCH_KEEP; the pages a
 * compile touched stay mapped. */

#define SCRATCH_BLOCK (1024 * 1024)
#define SCRATCH_KEEP (16 * 1024 * 1024)
#define SCRATCH_ALIGN 16

typedef struct scratch_block {
    struct scratch_block *next;
    size_t size, used;          /* bytes after the header */
    _Alignas(SCRATCH_ALIGN) unsigned char data[];
} scratch_block;

typedef struct scratch_header {
    size_t size;                /* the bytes asked for */
    size_t pad;
} scratch_header;

static scratch_block *scratch;  /* the block handing out memory; its next are full */
static scratch_block *scratch_spare;
static long scratch_live;       /* allocations not yet freed */
static size_t scratch_high;     /* the bytes a compile took, at most */
static bool scratch_off;        /* something outlived a compile: plain malloc from now on */

static scratch_block *scratch_find(const void *p)
{
    const unsigned char *at = p;
    for (scratch_block *b = scratch; b; b = b->next)
        if (at >= b->data && at < b->data + b->size)
            return b;
    return NULL;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

void *jit_tcc_malloc(size_t size);
void *jit_tcc_malloc(size_t size)
{
    /* a block of a large kernel's sections: the C library grows it in
     * place (mremap) where the scratch would copy it */
    if (scratch_off || size >= SCRATCH_BLOCK)
        return malloc(size);
    size_t need = sizeof(scratch_header) + round_up(size ? size : 1, SCRATCH_ALIGN);
    if (need < size)
        return NULL;
    if (!scratch || scratch->size - scratch->used < need) {
        scratch_block *b = scratch_spare;
        if (b && b->size >= need) {
            scratch_spare = b->next;
        } else {
            /* doubling: a compile of a large source (BCG_MAX_SOURCE) makes a
             * few blocks, so scratch_find's walk stays short */
            size_t bytes = scratch ? 2 * scratch->size : SCRATCH_BLOCK;
            if (bytes < need)
                bytes = round_up(need, SCRATCH_BLOCK);
            b = malloc(sizeof *b + bytes);
            if (!b)
                return NULL;
            b->size = bytes;
        }
        b->used = 0;
        b->next = scratch;
        scratch = b;
    }
    scratch_header *h = (scratch_header *)(scratch->data + scratch->used);
    h->size = size;
    scratch->used += need;
    scratch_live++;
    return h + 1;
}

void *jit_tcc_calloc(size_t count, size_t size);
void *jit_tcc_calloc(size_t count, size_t size)
{
    if (size && count > (size_t)-1 / size)
        return NULL;
    void *p = jit_tcc_malloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void jit_tcc_free(void *p);
void jit_tcc_free(void *p)
{
    if (!p)
        return;
    scratch_block *b = scratch_find(p);
    if (!b) {
        free(p);
        return;
    }
    scratch_header *h = (scratch_header *)p - 1;
    size_t bytes = sizeof *h + round_up(h->size ? h->size : 1, SCRATCH_ALIGN);
    if (b == scratch && (unsigned char *)h + bytes == b->data + b->used)
        b->used -= bytes; /* the newest block: its room is reused */
    scratch_live--;
}

void *jit_tcc_realloc(void *p, size_t size);
void *jit_tcc_realloc(void *p, size_t size)
{
    if (!p)
        return jit_tcc_malloc(size);
    scratch_block *b = scratch_find(p);
    if (!b)
        return realloc(p, size);
    scratch_header *h = (scratch_header *)p - 1;
    size_t old = round_up(h->size ? h->size : 1, SCRATCH_ALIGN);
    size_t want = round_up(size ? size : 1, SCRATCH_ALIGN);
    if (want < size)
        return NULL;
    if (want <= old) {
        h->size = size;
        return p;
    }
    unsigned char *end = (unsigned char *)p + old;
    if (b == scratch && end == b->data + b->used && b->size - b->used >= want - old) {
        b->used += want - old; /* the newest block grows in place */
        h->size = size;
        return p;
    }
    void *q = jit_tcc_malloc(size);
    if (!q)
        return NULL;
    memcpy(q, p, h->size < size ? h->size : size);
    jit_tcc_free(p);
    return q;
}

/* After tcc_delete: the scratch is reused by the next compile, as one
 * block of the size this one needed once it took more than one. */
static void scratch_reset(void)
{
    if (scratch_live != 0) {
        scratch_off = true; /* libtcc kept memory: keep it, and ours, for good */
        return;
    }
    size_t total = 0;
    for (scratch_block *b = scratch; b; b = b->next)
        total += b->used;
    if (total > scratch_high)
        scratch_high = total;
    scratch_block *list = scratch;
    scratch = NULL;
    if (list && list->next) {
        /* several blocks: next time one that holds them all */
        while (list) {
            scratch_block *next = list->next;
            free(list);
            list = next;
        }
        size_t bytes = round_up(scratch_high + scratch_high / 4, SCRATCH_BLOCK);
        if (bytes <= SCRATCH_KEEP && (list = malloc(sizeof *list + bytes))) {
            list->size = bytes;
            list->next = NULL;
        }
    }
    if (list && list->size > SCRATCH_KEEP) {
        free(list);
        list = NULL;
    }
    free(scratch_spare);
    scratch_spare = list;
}

/* The conversions tcc's x86-64 code generator calls for unsigned 64-bit
 * integers and long double; gcc compiles these casts correctly. */
static unsigned long long fixunssfdi(float x) { return (unsigned long long)x; }
static unsigned long long fixunsdfdi(double x) { return (unsigned long long)x; }
static unsigned long long fixunsxfdi(long double x) { return (unsigned long long)x; }
static float floatundisf(unsigned long long x) { return (float)x; }
static double floatundidf(unsigned long long x) { return (double)x; }
static long double floatundixf(unsigned long long x) { return (long double)x; }

static const struct {
    const char *name;
    const void *address;
} kernel_symbols[] = {
    /* the float functions of ops.h are handed over from op_table; these
     * are the ones cexpr.c calls itself (its own_math_functions) */
    {"fabs", (const void *)fabs},   {"fabsf", (const void *)fabsf},
    {"fmod", (const void *)fmod},   {"fmodf", (const void *)fmodf},
    {"pow", (const void *)pow},     {"powf", (const void *)powf},
    {"copysign", (const void *)copysign}, {"copysignf", (const void *)copysignf},
    {"__fixunssfdi", (const void *)fixunssfdi},
    {"__fixunsdfdi", (const void *)fixunsdfdi},
    {"__fixunsxfdi", (const void *)fixunsxfdi},
    {"__floatundisf", (const void *)floatundisf},
    {"__floatundidf", (const void *)floatundidf},
    {"__floatundixf", (const void *)floatundixf},
};

/* ---- the functions a kernel may call ------------------------------------------
 *
 * Handing libtcc every function a kernel might call (the math functions of
 * ops.h and the microkernels, about a thousand names) cost 120 us of a
 * 650 us compile, measured: each tcc_add_symbol inserts into libtcc's ELF
 * symbol table.  So one table of them all is built once, hashed by name,
 * and a compile hands over only those whose names occur in its source as
 * identifiers (a scan of a few KB), and libtcc's own helpers, which its
 * code calls for some casts without the source naming them.  A name is handed over once even when
 * two rows give it (fmod is both a row of ops.h and cexpr.c's own). */

typedef struct callable {
    const char *name;
    const void *address;
} callable;

static callable *callables;      /* every name once; NULL if memory ran out */
static int callable_count;
static int *callable_slots;      /* open addressing: index + 1, 0 empty */
static size_t slot_mask;
static char (*single_names)[32]; /* the float variants' names ("expf") */
static unsigned char *handed;    /* per compile: which callables went to libtcc */
static int *handed_list;         /* and their indices, to clear `handed` after */
static int helpers[16];          /* libtcc's own helpers (__fixunssfdi ...): always */
static int helper_count;
static int symbols_handed;       /* by the latest compile: test_compile_cost reads it */

static uint64_t name_hash(const char *name, size_t length)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < length; i++)
        h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
    return h;
}

static int find_callable(const char *name, size_t length)
{
    for (size_t at = name_hash(name, length) & slot_mask;; at = (at + 1) & slot_mask) {
        int i = callable_slots[at] - 1;
        if (i < 0)
            return -1;
        if (strncmp(callables[i].name, name, length) == 0 && callables[i].name[length] == 0)
            return i;
    }
}

static void add_callable(const char *name, const void *address)
{
    size_t length = strlen(name);
    if (find_callable(name, length) >= 0)
        return; /* the first row to name it wins, as tcc_add_symbol's first did */
    size_t at = name_hash(name, length) & slot_mask;
    while (callable_slots[at])
        at = (at + 1) & slot_mask;
    callables[callable_count] = (callable){name, address};
    callable_slots[at] = ++callable_count;
}

/* Builds the table (under tcc_lock; the first compile does).  Plain malloc:
 * the table lives as long as the process, outside mem_alloc's leak count
 * and its injected failures; without memory the next compile tries again. */
static bool callables_init(void)
{
    size_t most = sizeof kernel_symbols / sizeof kernel_symbols[0] + 2 * OP_COUNT +
                  (size_t)microkernel_symbol_count;
    size_t slots = 64;
    while (slots < 2 * most)
        slots *= 2;
    callables = malloc(sizeof *callables * most);
    callable_slots = malloc(sizeof *callable_slots * slots);
    single_names = malloc(sizeof *single_names * OP_COUNT);
    handed = malloc(most);
    handed_list = malloc(sizeof *handed_list * most);
    if (!callables || !callable_slots || !single_names || !handed || !handed_list) {
        free(callables);
        free(callable_slots);
        free(single_names);
        free(handed);
        free(handed_list);
        callables = NULL;
        return false;
    }
    memset(callable_slots, 0, sizeof *callable_slots * slots);
    memset(handed, 0, most);
    slot_mask = slots - 1;
    /* the rows of ops.h first: their addresses win over kernel_symbols' */
    for (int op = 0; op < OP_COUNT; op++)
        if (op_table[op].math) {
            const op_info *row = &op_table[op];
            snprintf(single_names[op], sizeof single_names[op], "%sf", row->math);
            add_callable(row->math, row->math2_f64 ? (const void *)row->math2_f64
                                                   : (const void *)row->math_f64);
            add_callable(single_names[op], row->math2_f32 ? (const void *)row->math2_f32
                                                          : (const void *)row->math_f32);
        }
    for (size_t i = 0; i < sizeof kernel_symbols / sizeof kernel_symbols[0]; i++) {
        add_callable(kernel_symbols[i].name, kernel_symbols[i].address);
        /* tcc's code calls these for casts; the source never names them */
        if (strncmp(kernel_symbols[i].name, "__", 2) == 0 &&
            helper_count < (int)(sizeof helpers / sizeof helpers[0]))
            helpers[helper_count++] =
                find_callable(kernel_symbols[i].name, strlen(kernel_symbols[i].name));
    }
    for (int i = 0; i < microkernel_symbol_count; i++)
        add_callable(microkernel_symbols[i].name, microkernel_symbols[i].address);
    return true;
}

static bool identifier_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Hands STATE every callable whose name occurs in SOURCE as an identifier
 * (in a comment too: a needless symbol is harmless); false when the table
 * could not be built.  Called under tcc_lock, which also guards `handed`. */
static bool add_used_symbols(TCCState *state, const char *source)
{
    if (!callables && !callables_init())
        return false;
    int used_count = 0;
    for (int i = 0; i < helper_count; i++) {
        handed[helpers[i]] = 1;
        handed_list[used_count++] = helpers[i];
        tcc_add_symbol(state, callables[helpers[i]].name, callables[helpers[i]].address);
    }
    for (const char *p = source; *p;) {
        if (!identifier_char(*p)) {
            p++;
            continue;
        }
        const char *start = p;
        while (identifier_char(*p))
            p++;
        if (*start >= '0' && *start <= '9')
            continue;
        int i = find_callable(start, (size_t)(p - start));
        if (i < 0 || handed[i])
            continue;
        handed[i] = 1;
        handed_list[used_count++] = i;
        tcc_add_symbol(state, callables[i].name, callables[i].address);
    }
    for (int i = 0; i < used_count; i++)
        handed[handed_list[i]] = 0;
    symbols_handed = used_count;
    return true;
}

typedef struct tcc_messages {
    char text[400];
    size_t len;
} tcc_messages;

static void collect_message(void *opaque, const char *message)
{
    tcc_messages *m = opaque;
    if (m->len > 0 || !message)
        return; /* the first message is the one that explains */
    size_t n = strlen(message);
    if (n >= sizeof m->text)
        n = sizeof m->text - 1;
    memcpy(m->text, message, n);
    m->text[n] = 0;
    m->len = n;
}

bcg_status jit_compile(const char *source, const char *function_name,
                       const unsigned char *vex, size_t vex_size,
                       jit_code **code_out, kernel_fn *fn_out, bcg_error *err)
{
    tcc_messages messages = {{0}, 0};
    bcg_status status = BCG_OK;
    void *memory = MAP_FAILED;
    size_t size = 0;
    void *symbol = NULL;
    size_t tcc_in_vex = 0; /* libtcc's bytes placed after the vector function */

    *code_out = NULL;
    *fn_out = NULL;
    jit_code *code = mem_alloc(sizeof *code);
    if (!code)
        return fail(err, BCG_ERR_NOMEM, "out of memory before compiling the kernel");
    code->vex_memory = NULL;
    code->vex_size = 0;
    code->checked_entry = false;
    /* the fused vector function first, libtcc's code after it in the same
     * pages when it fits the room left (VEX_CODE_ROOM): one mapping and
     * one mprotect a kernel, each a TLB flush (measured: a quarter of a
     * compile's CPU time went to mprotect and munmap) */
    long page = sysconf(_SC_PAGESIZE);
    size_t vex_part = round_up(vex_size, 64);
    if (vex) {
        code->vex_size = round_up(vex_part + VEX_CODE_ROOM, (size_t)page);
        code->vex_memory = mmap(NULL, code->vex_size, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (code->vex_memory == MAP_FAILED) {
            mem_free(code);
            return fail(err, BCG_ERR_NOMEM, "could not map %zu bytes for the fused vector code",
                        vex_size);
        }
        memcpy(code->vex_memory, vex, vex_size);
    }

    pthread_mutex_lock(&tcc_lock);
    TCCState *state = tcc_new();
    if (!state) {
        status = fail(err, BCG_ERR_NOMEM, "libtcc could not create a compiler state");
        goto unlock;
    }
    tcc_set_error_func(state, &messages, collect_message);
    /* Fixed options only: an unknown option makes libtcc call exit(). */
    tcc_set_options(state, "-nostdlib -nostdinc -Wall -Werror");
    tcc_set_output_type(state, TCC_OUTPUT_MEMORY);
    if (tcc_compile_string(state, source) < 0) {
        status = fail(err, BCG_ERR_JIT, "libtcc rejected the generated kernel: %s", messages.text);
        goto done;
    }
    if (code->vex_memory)
        tcc_add_symbol(state, VEX_SYMBOL, code->vex_memory);
    if (!add_used_symbols(state, source)) {
        status = fail(err, BCG_ERR_NOMEM, "out of memory naming the kernel's functions to libtcc");
        goto done;
    }
    int needed = tcc_relocate(state, NULL);
    if (needed <= 0) {
        status = fail(err, BCG_ERR_JIT, "libtcc could not link the kernel: %s", messages.text);
        goto done;
    }
    void *at;
    if (vex && (size_t)needed <= code->vex_size - vex_part) { /* after the vector function */
        at = (char *)code->vex_memory + vex_part;
        tcc_in_vex = (size_t)needed;
        code_buffer = code->vex_memory; /* (libtcc's mprotect calls start at a page) */
        code_buffer_size = code->vex_size;
    } else {
        size = round_up((size_t)needed, (size_t)page);
        memory = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (memory == MAP_FAILED) {
            status = fail(err, BCG_ERR_NOMEM, "could not map %zu bytes for kernel code", size);
            goto done;
        }
        at = memory;
        code_buffer = memory;
        code_buffer_size = size;
    }
    int relocated = tcc_relocate(state, at);
    code_buffer = NULL;
    if (relocated < 0) {
        status = fail(err, BCG_ERR_JIT, "libtcc could not relocate the kernel: %s", messages.text);
        goto done;
    }
    symbol = tcc_get_symbol(state, function_name);
    if (!symbol)
        status = fail(err, BCG_ERR_JIT, "the generated kernel has no function %s", function_name);
done:
    tcc_delete(state);
unlock:
    scratch_reset();
    pthread_mutex_unlock(&tcc_lock);

    if (status == BCG_OK && code->vex_memory) {
        /* the room libtcc's code did not take, never touched, given back
         * (so a kernel holds, and the cache counts, only its pages) */
        size_t used = round_up(vex_part + tcc_in_vex, (size_t)page);
        if (used < code->vex_size &&
            munmap((char *)code->vex_memory + used, code->vex_size - used) == 0)
            code->vex_size = used;
    }
    if (status == BCG_OK && memory != MAP_FAILED &&
        mprotect(memory, size, PROT_READ | PROT_EXEC) != 0)
        status = fail(err, BCG_ERR_JIT, "could not make kernel code read-only and executable");
    if (status == BCG_OK && code->vex_memory &&
        mprotect(code->vex_memory, code->vex_size, PROT_READ | PROT_EXEC) != 0)
        status = fail(err, BCG_ERR_JIT, "could not make kernel code read-only and executable");
    if (status != BCG_OK) {
        if (memory != MAP_FAILED)
            munmap(memory, size);
        if (code->vex_memory)
            munmap(code->vex_memory, code->vex_size);
        mem_free(code);
        return status;
    }
    if (memory == MAP_FAILED) { /* (all of it in the vector function's pages) */
        code->memory = code->vex_memory;
        code->size = code->vex_size;
        code->vex_memory = NULL;
        code->vex_size = 0;
    } else {
        code->memory = memory;
        code->size = size;
    }
    *code_out = code;
    /* ISO C does not convert object pointers to function pointers; POSIX
     * guarantees the representation (as for dlsym), so copy the bits. */
    memcpy(fn_out, &symbol, sizeof symbol);
    return BCG_OK;
}

bcg_status jit_bind(const unsigned char *machine, size_t size, size_t entry,
                    jit_code **code_out, kernel_fn *fn_out, bcg_error *err)
{
    *code_out = NULL;
    *fn_out = NULL;
    jit_code *code = mem_alloc(sizeof *code);
    if (!code)
        return fail(err, BCG_ERR_NOMEM, "out of memory before mapping the kernel's code");
    code->vex_memory = NULL;
    code->vex_size = 0;
    if (!(code->memory = map_code(machine, size, &code->size))) {
        mem_free(code);
        return fail(err, BCG_ERR_NOMEM, "could not map %zu bytes for the kernel's vector code",
                    size);
    }
    code->checked_entry = entry > 0;
    void *symbol = (char *)code->memory + entry;
    memcpy(fn_out, &symbol, sizeof symbol); /* as jit_compile: POSIX's representation */
    *code_out = code;
    return BCG_OK;
}

void jit_free(jit_code *code)
{
    if (!code)
        return;
    munmap(code->memory, code->size);
    if (code->vex_memory)
        munmap(code->vex_memory, code->vex_size);
    mem_free(code);
}

kernel_check_fn jit_checked_entry(const jit_code *code)
{
    kernel_check_fn entry = NULL;
    if (code && code->checked_entry)
        memcpy(&entry, &code->memory, sizeof entry);
    return entry;
}

size_t jit_code_size(const jit_code *code)
{
    return code ? sizeof *code + code->size + code->vex_size : 0;
}

/* ---- test hooks (tests/unit/test_compile_cost.c) ----------------------------------- */

void jit_costs(jit_cost_info *info)
{
    pthread_mutex_lock(&tcc_lock);
    info->symbols_handed = symbols_handed;
    info->callables = callable_count;
    info->scratch_live = scratch_live;
    info->scratch_reused = !scratch_off;
    info->scratch_kept = scratch_spare ? scratch_spare->size : 0;
    pthread_mutex_unlock(&tcc_lock);
}
