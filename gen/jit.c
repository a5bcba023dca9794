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
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <libtcc.h>

#include "internal.h"

struct jit_code {
    void *memory;
    size_t size;
};

static pthread_mutex_t tcc_lock = PTHREAD_MUTEX_INITIALIZER;

/* Every mprotect call libtcc makes (the Makefile renames its references).
 * A request for write and execute together becomes read+write: the code is
 * made read+execute by jit_compile once relocation is done. */
int jit_tcc_mprotect(void *address, size_t length, int protection);
int jit_tcc_mprotect(void *address, size_t length, int protection)
{
    if ((protection & PROT_WRITE) && (protection & PROT_EXEC))
        protection &= ~PROT_EXEC;
    return mprotect(address, length, protection);
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
                       jit_code **code_out, kernel_fn *fn_out, bcg_error *err)
{
    tcc_messages messages = {{0}, 0};
    bcg_status status = BCG_OK;
    void *memory = MAP_FAILED;
    size_t size = 0;
    void *symbol = NULL;

    *code_out = NULL;
    *fn_out = NULL;
    jit_code *code = mem_alloc(sizeof *code);
    if (!code)
        return fail(err, BCG_ERR_NOMEM, "out of memory before compiling the kernel");

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
    for (size_t i = 0; i < sizeof kernel_symbols / sizeof kernel_symbols[0]; i++) {
        bool in_table = false; /* fmod, copysign: also rows of ops.h, added below */
        for (int op = 0; op < OP_COUNT && !in_table; op++)
            if (op_table[op].math) {
                size_t n = strlen(op_table[op].math);
                in_table = strncmp(kernel_symbols[i].name, op_table[op].math, n) == 0 &&
                           (kernel_symbols[i].name[n] == 0 ||
                            strcmp(kernel_symbols[i].name + n, "f") == 0);
            }
        if (!in_table)
            tcc_add_symbol(state, kernel_symbols[i].name, kernel_symbols[i].address);
    }
    for (int op = 0; op < OP_COUNT; op++)
        if (op_table[op].math) {
            const op_info *row = &op_table[op];
            char single[32];
            snprintf(single, sizeof single, "%sf", row->math);
            tcc_add_symbol(state, row->math, row->math2_f64 ? (const void *)row->math2_f64
                                                              : (const void *)row->math_f64);
            tcc_add_symbol(state, single, row->math2_f32 ? (const void *)row->math2_f32
                                                         : (const void *)row->math_f32);
        }
    /* the vectorised inner runs (runtime/microkernels.c), only for kernels
     * that call them: a plain kernel's compile time stays as it was */
    if (strstr(source, "bcg_mk_"))
        for (int i = 0; i < microkernel_symbol_count; i++)
            tcc_add_symbol(state, microkernel_symbols[i].name, microkernel_symbols[i].address);
    int needed = tcc_relocate(state, NULL);
    if (needed <= 0) {
        status = fail(err, BCG_ERR_JIT, "libtcc could not link the kernel: %s", messages.text);
        goto done;
    }
    long page = sysconf(_SC_PAGESIZE);
    size = ((size_t)needed + (size_t)page - 1) / (size_t)page * (size_t)page;
    memory = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
        status = fail(err, BCG_ERR_NOMEM, "could not map %zu bytes for kernel code", size);
        goto done;
    }
    if (tcc_relocate(state, memory) < 0) {
        status = fail(err, BCG_ERR_JIT, "libtcc could not relocate the kernel: %s", messages.text);
        goto done;
    }
    symbol = tcc_get_symbol(state, function_name);
    if (!symbol)
        status = fail(err, BCG_ERR_JIT, "the generated kernel has no function %s", function_name);
done:
    tcc_delete(state);
unlock:
    pthread_mutex_unlock(&tcc_lock);

    if (status == BCG_OK && mprotect(memory, size, PROT_READ | PROT_EXEC) != 0)
        status = fail(err, BCG_ERR_JIT, "could not make kernel code read-only and executable");
    if (status != BCG_OK) {
        if (memory != MAP_FAILED)
            munmap(memory, size);
        mem_free(code);
        return status;
    }
    code->memory = memory;
    code->size = size;
    *code_out = code;
    /* ISO C does not convert object pointers to function pointers; POSIX
     * guarantees the representation (as for dlsym), so copy the bits. */
    memcpy(fn_out, &symbol, sizeof symbol);
    return BCG_OK;
}

void jit_free(jit_code *code)
{
    if (!code)
        return;
    munmap(code->memory, code->size);
    mem_free(code);
}

size_t jit_code_size(const jit_code *code)
{
    return code ? sizeof *code + code->size : 0;
}
