/* aot.h - ahead-of-time output for firmware: several kernels written as one
 * .c/.h pair that needs nothing from bcgen (gen/aot.c; the command is
 * `bcgen aot`, gen/cli_aot.c).  Internal: only gen/ and tests include it. */
#ifndef BCGEN_AOT_H
#define BCGEN_AOT_H

#include "internal.h"

/* Outputs of at most this many elements are fully unrolled by default in
 * AOT pairs (bcgen aot; the JIT keeps bcg_options_init's 16): measured on
 * a Cortex-M4F with arm-none-eabi-gcc 12 (bench/aot_unroll.py), at 4
 * elements full unrolling is the code of a loop unrolled by 4; at 8 and 16
 * it costs 1.2-4.3x the bytes of that loop for at most 1.3x fewer
 * instructions (none for an f32 to i16 cast at -O2, which is slower
 * unrolled): f32 x * g + b at 16 elements 318 against 96 bytes at -Os,
 * 80 against 102 instructions. */
#define AOT_DEFAULT_UNROLL_LIMIT 4

/* One kernel of the pair. */
typedef struct aot_kernel {
    const char *name;              /* the C function's name */
    const char *expression;
    const bcg_operand *operands;   /* named as the function's parameters */
    int operand_count;
    bcg_options options;           /* unrolling, in place, axis, ... */
    bool math_double;              /* f32 sqrt ... tanh and ** in double; else sqrtf ... powf */
    /* a program's fused kernel (aot.c, expand_programs): its program and
     * fusion, which program_fuse_setup makes the kernel of; else NULL */
    const struct program *fuse_program;
    const struct program_fusion *fusion;
} aot_kernel;

typedef struct aot_request {
    int kernel_count;
    const aot_kernel *kernels;
    bool restrict_pointers;        /* the caller promises no two buffers overlap */
    int index_bits;                /* 32: every position must fit a 32-bit ptrdiff_t; 64 */
    const char *command;           /* how the pair was made, quoted into both comments */
    const char *source_name;       /* the .c's file name, for the comments */
    const char *header_name;       /* the .h's file name: the .c includes "header_name" */
} aot_request;

/* Generates the pair.  On success *source and *header are allocated for the
 * caller (free with mem_free).  Errors name the kernel ("kernel scale: ...")
 * and keep the operand and column of the failing kernel's error. */
bcg_status aot_generate(const aot_request *request, char **source, char **header,
                        bcg_error *err);

#endif
