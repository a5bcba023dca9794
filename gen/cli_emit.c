/* cli_emit.c - `bcgen emit`: prints or writes the C that bcgen generates
 * for an expression: bcg_emit's plain C, or with --jit the source
 * bcg_compile hands to its compiler (microkernel tiles, streaming stores). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: bcgen emit EXPR -i NAME=DTYPE[SHAPE][@[STRIDES]] ... [options]\n"
    "\n"
    "Prints the C kernel bcgen generates for EXPR (or writes it with -o).  The\n"
    "kernel is one function\n"
    "    void FN(void *out, const void *const *in);\n"
    "where in[i] points at element [0,...,0] of operand i (in -i order) and out\n"
    "at the C-contiguous result.  It includes no header and calls only the\n"
    "math functions it names in its prelude.\n"
    "\n"
    "options:\n"
    "  -i NAME=DTYPE[SHAPE]   an operand; @[S0,S1,...] gives strides in elements\n"
    "  --name FN              the function's name (default bcg_kernel)\n"
    "  -o FILE.c              write the source to FILE.c instead of stdout\n"
    "  --unroll full|none|N   full: unroll every element (straight-line code, for\n"
    "                         outputs of up to 65536 elements; larger ones loop);\n"
    "                         none: plain loops; N: unroll the innermost loop N\n"
    "                         times (default 4; outputs of at most 16 elements\n"
    "                         are unrolled fully)\n"
    "  --inplace NAME, --axis K, --strict-rank: as for explain\n"
    "  --out-strides S        the output is a view with strides S in elements\n"
    "                         ([S0,S1,...], one per result dimension, any sign;\n"
    "                         the kernel's out points at its element [0,...,0])\n"
    "  --out-dtype D          cast the result to D on store (NumPy's out= with\n"
    "                         casting='same_kind': within a kind, bool to any,\n"
    "                         uint to int, integers to floats)\n"
    "  --reduce OP            reduce the result with sum, prod, min, max, mean,\n"
    "                         any or all to --out-shape SHAPE (which must\n"
    "                         broadcast to the result: its size-1 and missing\n"
    "                         dimensions are reduced) or to --to NAME's shape\n"
    "  --no-fuse              a program of statements: a kernel per statement, not\n"
    "                         one fused kernel\n"
    "  --warn-legacy          print the legacy broadcast warning on stderr (see\n"
    "                         bcgen shape --help)\n"
    "  --jit                  the source the JIT compiles instead (bcg_compile,\n"
    "                         bcg_kernel_source): long inner runs call the\n"
    "                         library's vectorised microkernels (bcg_mk_*), which\n"
    "                         only the library links; the function is bcg_kernel\n"
    "  --stream auto|on|off   with --jit: streaming stores for the output (auto:\n"
    "                         kernels touching the last-level cache's size)\n"
    "  --backend tcc|cc, --native   with --jit: the backend (cc: plain C, no\n"
    "                         microkernels; --native adds -march=native)\n"
    "  --no-vex               with --jit: tiles call a microkernel per operation\n"
    "                         instead of the tree's fused AVX2 function (bcg_vex)\n"
    "  --                     ends the options: every later argument is the EXPR\n"
    "                         (one starting with '-' goes here: -- '-a')\n"
    "\n"
    "examples:\n"
    "  bcgen emit 'a * b + c' -i a=f32[5,3,4,1] -i b=f32[3,1,1] -i c=f32[] --name fma3\n"
    "  bcgen emit 'a + b' -i a=f32[4096,4096] -i b=f32[4096] --jit\n";

/* Prints the broadcast's warnings (--warn-legacy) for bcg_emit's source:
 * the front end bcg_emit runs, run again for its warning. */
static void print_emit_warning(const cli_args *args, const bcg_operand *ops)
{
    if (!args->options.warn_legacy)
        return;
    bcg_error err;
    error_clear(&err);
    compile front = {.arena = arena_new(), .err = &err};
    if (front.arena &&
        compile_pipeline(&front, &(compile_request){.text = args->expr, .operands = ops,
                                                    .operand_count = args->operand_count,
                                                    .options = &args->options,
                                                    .goal = COMPILE_FRONT}) == BCG_OK &&
        front.broadcast->warning[0])
        fprintf(stderr, "bcgen emit: warning: %s\n", front.broadcast->warning);
    arena_free(front.arena);
}

int cli_emit(int argc, char **argv)
{
    cli_args *args = malloc(sizeof *args);
    if (!args) {
        fprintf(stderr, "bcgen emit: out of memory\n");
        return 1;
    }
    int status = cli_parse_args("emit", help, argc, argv,
                                ARG_OUTPUT | ARG_NAME | ARG_UNROLL | ARG_JIT | ARG_COMPILE, false,
                                args);
    if (status >= 0) {
        free(args);
        return status;
    }
    bcg_options defaults;
    bcg_options_init(&defaults);
    if (!args->jit && (args->options.stream_stores != defaults.stream_stores ||
                       args->options.backend != defaults.backend || args->options.native)) {
        fprintf(stderr, "bcgen emit: --stream, --backend and --native apply to --jit only\n");
        free(args);
        return 2;
    }
    if (args->jit && args->function_name) {
        fprintf(stderr, "bcgen emit: --jit prints bcg_kernel; --name applies without it\n");
        free(args);
        return 2;
    }
    bcg_operand ops[BCG_MAX_OPERANDS];
    cli_operand_views(args->operand_count, args->operands, ops);
    bcg_error err;
    char *source = NULL;
    if (args->program) {
        if (args->jit) {
            fprintf(stderr, "bcgen emit: --jit shows one kernel; a program of statements "
                    "is emitted as plain C (without --jit)\n");
            free(args);
            return 2;
        }
        bcg_emit_program(args->expr, ops, args->operand_count, &args->options,
                         args->function_name, &source, &err);
    } else if (args->jit) {
        bcg_context *ctx = bcg_context_new();
        bcg_kernel *kernel = NULL;
        if (!ctx) {
            fprintf(stderr, "bcgen emit: out of memory\n");
            free(args);
            return 1;
        }
        if (bcg_compile(ctx, args->expr, ops, args->operand_count, &args->options, &kernel,
                        &err) == BCG_OK) {
            size_t n = strlen(bcg_kernel_source(kernel)) + 1;
            if ((source = mem_alloc(n)) != NULL)
                memcpy(source, bcg_kernel_source(kernel), n);
            else
                fail(&err, BCG_ERR_NOMEM, "out of memory");
            if (bcg_kernel_note(kernel)[0])
                fprintf(stderr, "bcgen emit: note: %s\n", bcg_kernel_note(kernel));
            if (bcg_kernel_warning(kernel)[0])
                fprintf(stderr, "bcgen emit: warning: %s\n", bcg_kernel_warning(kernel));
        }
        bcg_context_free(ctx);
    } else {
        if (bcg_emit(args->expr, ops, args->operand_count, &args->options,
                     args->function_name, &source, &err) == BCG_OK)
            print_emit_warning(args, ops);
    }
    if (!source) {
        status = cli_report("emit", args->expr, &err);
        free(args);
        return status;
    }
    status = 0;
    if (args->output_path) {
        FILE *f = fopen(args->output_path, "w");
        bool written = f && fputs(source, f) >= 0;
        if (f && fclose(f) != 0)
            written = false;
        if (!written) {
            fprintf(stderr, "bcgen emit: cannot write %s\n", args->output_path);
            status = 1;
        }
    } else {
        fputs(source, stdout);
    }
    bcg_free(source);
    free(args);
    return status;
}
