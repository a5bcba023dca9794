/* runtime.h - what the runtime files (microkernels.c, pool.c) share with
 * the generator in gen/.  The runtime stands alone: it includes only the
 * public header and the C library, never gen/internal.h, so a change in
 * the generator does not rebuild (or reach) the vectorised code. */
#ifndef BCGEN_RUNTIME_H
#define BCGEN_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

#include "bcgen.h"

/* gen/util.c: the library's allocator (failure injection in the tests). */
void *mem_alloc(size_t size);
void mem_free(void *p);

/* ---- runtime/microkernels.c: vectorised inner runs ------------------------ */

/* Every microkernel, by the name emitted kernels call (bcg_mk_add_f32 ...);
 * jit.c hands them all to tcc.  The ABI is at the top of microkernels.c. */
typedef struct microkernel_symbol {
    const char *name;
    const void *address;
} microkernel_symbol;
extern const microkernel_symbol microkernel_symbols[];
extern const int microkernel_symbol_count;
bool microkernel_exists(const char *name);
/* The f32 exp, log, sin, cos and tanh microkernels are vectorised
 * polynomials: at most this many ulp from the double-precision C library
 * rounded to float (test_microkernels sweeps it; docs/semantics.md). */
#define TRANSCENDENTAL_F32_MAX_ULP 2

/* ---- runtime/pool.c: worker threads for bcg_run_threads --------------------- */

#define POOL_MAX_WORKERS (BCG_MAX_THREADS - 1)
typedef struct pool pool;
typedef void (*pool_task)(void *arg, int part);
pool *pool_new(void);           /* no threads yet; NULL when memory runs out */
/* Runs task(arg, 0) .. task(arg, PARTS - 1), each once, on the calling
 * thread and up to min(THREADS, PARTS) - 1 workers (started on first need),
 * and returns when all are done.  If workers cannot be started the caller
 * runs the pieces itself. */
void pool_run(pool *p, int threads, int parts, pool_task task, void *arg);
int pool_worker_count(pool *p);
void pool_free(pool *p);        /* joins the workers; NULL allowed */

#endif
