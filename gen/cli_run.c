/* cli_run.c - `bcgen run`: compiles an expression through the JIT and runs
 * it on data from .npy files or generated sources, printing the result as
 * NumPy prints arrays or writing it to a .npy file.
 *
 * Operands with explicit strides are given a buffer laid out with those
 * strides (negative ones included), filled from the logical array, so the
 * kernel really reads a strided view.  A 0 stride makes several logical
 * elements share one memory location; the last one written wins, so such
 * data should repeat along that dimension (as an expanded view does). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "npy.h"

static const char help[] =
    "usage: bcgen run EXPR -i NAME=DTYPE[SHAPE][@[STRIDES]]=SOURCE ... [options]\n"
    "\n"
    "JIT-compiles EXPR for the operands' dtypes and shapes and runs it.\n"
    "SOURCE is a .npy file (its dtype and shape must be the declared ones;\n"
    "little- and big-endian, C and Fortran order are read), or one of:\n"
    "  range       0, 1, 2, ... in the operand's dtype (wrapping)\n"
    "  ones, zeros\n"
    "  random:SEED reproducible pseudo-random values\n"
    "Without -o the result is printed as NumPy prints arrays.\n"
    "\n"
    "options:\n"
    "  -o OUT.npy             write the result to a .npy file\n"
    "  --inplace NAME         write the result into operand NAME's buffer\n"
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
    "  --unroll full|none|N   as for emit\n"
    "  --reference            run the plain-C reference evaluator, not the JIT\n"
    "  --no-fuse              a program of statements: one kernel per statement\n"
    "                         (by default statements over one result shape are\n"
    "                         fused into one kernel; bcgen explain says if)\n"
    "  --time                 report compile and run time on stderr\n"
    "  --threads N            run on N threads (bcg_run_threads; small work stays\n"
    "                         on one)\n"
    "  --stream auto|on|off   streaming stores for the output (auto: kernels\n"
    "                         touching the last-level cache's size; see emit)\n"
    "  --backend tcc|cc       libtcc in-process (default) or the system's cc -O3\n"
    "                         (cached on disk); --native adds -march=native\n"
    "  --no-vex               tiles call a microkernel per operation instead of\n"
    "                         the tree's fused AVX2 function\n"
    "  --axis K, --strict-rank: as for explain\n"
    "  --warn-legacy          print the legacy broadcast warning on stderr (see\n"
    "                         bcgen shape --help)\n"
    "  --                     ends the options: every later argument is the EXPR\n"
    "                         (one starting with '-' goes here: -- '-a')\n"
    "\n"
    "examples:\n"
    "  bcgen run 'a + b' -i a=f32[5,3,4,1]=range -i b=f32[3,1,1]=ones\n"
    "  bcgen run -i a=f32[3]=range -- '-a'\n";

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* An operand's memory: the allocation and the pointer to element [0..0]. */
typedef struct laid_out {
    void *allocation;
    char *base;
} laid_out;

/* Element offsets reached by a shape with strides: [low, high]. */
static void reach(const cli_operand *o, const int64_t *strides, int64_t *low, int64_t *high)
{
    *low = *high = 0;
    for (int d = 0; d < o->shape.rank; d++) {
        int64_t r = strides[d] * (o->shape.dims[d] - 1);
        if (r < 0)
            *low += r;
        else
            *high += r;
    }
}

/* Copies between a C-contiguous array and a strided layout, one way or the
 * other (TO_STRIDED). */
static void copy_strided(const cli_operand *o, const int64_t *strides, char *base, char *flat,
                         size_t size, int64_t elements, bool to_strided)
{
    int64_t index[BCG_MAX_RANK] = {0};
    for (int64_t e = 0; e < elements; e++) {
        int64_t offset = 0;
        for (int d = 0; d < o->shape.rank; d++)
            offset += index[d] * strides[d];
        if (to_strided)
            memcpy(base + offset * (int64_t)size, flat + e * (int64_t)size, size);
        else
            memcpy(flat + e * (int64_t)size, base + offset * (int64_t)size, size);
        for (int d = o->shape.rank - 1; d >= 0; d--) {
            if (++index[d] < o->shape.dims[d])
                break;
            index[d] = 0;
        }
    }
}

static int load_operand(const cli_operand *o, npy_array *logical, laid_out *mem)
{
    bcg_error err;
    error_clear(&err);
    const char *src = o->source;
    size_t n = strlen(src);
    memset(logical, 0, sizeof *logical);
    if (n > 4 && strcmp(src + n - 4, ".npy") == 0) {
        if (npy_read(src, logical, &err))
            return cli_report("run", NULL, &err);
        char want[256], got[256];
        if (logical->dtype != o->dtype || logical->shape.rank != o->shape.rank ||
            memcmp(logical->shape.dims, o->shape.dims,
                   sizeof(int64_t) * (size_t)o->shape.rank) != 0) {
            shape_format(&o->shape, want, sizeof want);
            shape_format(&logical->shape, got, sizeof got);
            fprintf(stderr,
                    "bcgen run: %s holds %s %s but operand %s is declared %s %s "
                    "(bcgen does not convert data)\n",
                    src, bcg_dtype_name(logical->dtype), got, o->name,
                    bcg_dtype_name(o->dtype), want);
            npy_free(logical);
            return 1;
        }
    } else {
        logical->dtype = o->dtype;
        logical->shape = o->shape;
        if (npy_fill(logical, src, &err))
            return cli_report("run", NULL, &err);
    }
    int64_t elements = 1;
    for (int d = 0; d < o->shape.rank; d++)
        elements *= o->shape.dims[d];
    size_t size = bcg_dtype_size(o->dtype);
    if (!o->has_strides || elements == 0) {
        mem->allocation = NULL;
        mem->base = logical->data;
        return 0;
    }
    int64_t low, high;
    reach(o, o->strides, &low, &high);
    mem->allocation = calloc((size_t)(high - low + 1), size);
    if (!mem->allocation) {
        fprintf(stderr, "bcgen run: out of memory laying out %s\n", o->name);
        return 1;
    }
    mem->base = (char *)mem->allocation - low * (int64_t)size;
    copy_strided(o, o->strides, mem->base, logical->data, size, elements, true);
    return 0;
}

/* Writes RESULT to PATH, or prints it (after "NAME = " when NAME). */
static int put_result(const char *path, const char *name, const npy_array *result)
{
    bcg_error err;
    error_clear(&err);
    if (path) {
        if (npy_write(path, result, &err))
            return cli_report("run", NULL, &err);
        return 0;
    }
    strbuf sb;
    sb_init(&sb);
    npy_format(&sb, result);
    if (sb.failed) {
        fprintf(stderr, "bcgen run: out of memory printing the result\n");
        sb_free(&sb);
        return 1;
    }
    printf("%s%s%s\n", name ? name : "", name ? " = " : "", sb.data ? sb.data : "");
    sb_free(&sb);
    return 0;
}

/* `bcgen run` of a program of statements: bcg_compile_program and
 * bcg_run_outputs, or with --reference each statement's front end and the
 * reference evaluator; each output to its -o NAME=FILE or printed. */
static int run_program(cli_args *args, const bcg_operand *ops, bcg_context *ctx,
                       npy_array *logical, laid_out *mem, int *loaded)
{
    bcg_error err;
    error_clear(&err);
    int count = args->output_count, status = 1;
    arena *a = arena_new();
    compile *fronts = a ? arena_alloc(a, sizeof *fronts * (size_t)count) : NULL;
    npy_array *results = calloc((size_t)count, sizeof *results);
    char **views = calloc((size_t)count, sizeof *views);
    void **outs = calloc((size_t)count, sizeof *outs);
    bcg_program *prog = NULL;
    program p;
    if (!fronts || !results || !views || !outs) {
        fprintf(stderr, "bcgen run: out of memory\n");
        goto done;
    }
    double t0 = now_ms();
    if (args->reference) {
        if (!program_resolve(a, args->expr, ops, args->operand_count, &args->options, &p, &err))
            for (int i = 0; i < count; i++) {
                fronts[i].arena = a;
                fronts[i].err = &err;
                compile_request r = {.text = p.statements[i].expanded, .operands = ops,
                                     .operand_count = args->operand_count,
                                     .options = &p.statements[i].options,
                                     .goal = COMPILE_FRONT};
                if (compile_pipeline(&fronts[i], &r)) {
                    program_statement_error(&p, i, &err);
                    break;
                }
            }
    } else {
        bcg_compile_program(ctx, args->expr, ops, args->operand_count, &args->options, &prog,
                            &err);
    }
    double t1 = now_ms();
    if (err.status != BCG_OK) {
        status = cli_report("run", args->expr, &err);
        goto done;
    }
    for (int i = 0; prog && i < count; i++) {
        /* (a fused program's statements' own kernels are not made: their
         * notes are the fused kernel's, said once) */
        const bcg_kernel *k = bcg_program_fused(prog) ? (i ? NULL : bcg_program_fused(prog))
                                                      : program_kernel_made(prog, i);
        if (k && bcg_kernel_note(k)[0])
            fprintf(stderr, "bcgen run: note: %s: %s\n",
                    bcg_program_fused(prog) ? "the fused kernel" : args->output_names[i],
                    bcg_kernel_note(k));
        /* the parts of its warning ("; "-separated): an operand one statement
         * does not read is said once, and only when no statement reads it */
        int rank;
        const int64_t *shape;
        const char *w;
        program_output_dtype(prog, i, &rank, &shape, &w);
        while (*w) {
            size_t n = strcspn(w, ";");
            bool unread = strncmp(w, "operand ", 8) == 0 && strstr(w, " is not read by") &&
                          (size_t)(strstr(w, " is not read by") - w) < n;
            bool everywhere = true;
            for (int j = 0; unread && j < count; j++) {
                const char *other;
                program_output_dtype(prog, j, &rank, &shape, &other);
                const char *at = strstr(other, "operand ");
                bool found = false;
                for (; at && !found; at = strstr(at + 1, "operand "))
                    found = strncmp(at, w, n) == 0;
                everywhere &= found;
            }
            if (!unread)
                fprintf(stderr, "bcgen run: warning: %s: %.*s\n", args->output_names[i], (int)n,
                        w);
            else if (everywhere && i == 0)
                fprintf(stderr, "bcgen run: warning: %.*s (by any statement)\n", (int)n, w);
            w += n;
            while (*w == ';' || *w == ' ')
                w++;
        }
    }
    for (; *loaded < args->operand_count; (*loaded)++)
        if ((status = load_operand(&args->operands[*loaded], &logical[*loaded],
                                   &mem[*loaded])))
            goto done;
    status = 1;
    const void *inputs[BCG_MAX_OPERANDS];
    for (int i = 0; i < args->operand_count; i++)
        inputs[i] = mem[i].base;
    for (int i = 0; i < count; i++) {
        npy_array *result = &results[i];
        if (prog) {
            int rank;
            const int64_t *shape;
            const char *warning;
            result->dtype = program_output_dtype(prog, i, &rank, &shape, &warning);
            result->shape.rank = rank;
            memcpy(result->shape.dims, shape, sizeof(int64_t) * (size_t)rank);
        } else {
            result->dtype = fronts[i].out_dtype;
            result->shape = fronts[i].out_shape;
        }
        int64_t elements = 1;
        for (int d = 0; d < result->shape.rank; d++)
            elements *= result->shape.dims[d];
        size_t size = bcg_dtype_size(result->dtype);
        result->data = calloc(elements ? (size_t)elements : 1, size);
        if (!result->data) {
            fprintf(stderr, "bcgen run: out of memory for output %s\n", args->output_names[i]);
            goto done;
        }
        outs[i] = result->data;
        if (args->outs[i].output.strides && elements > 0) { /* as cli_run's view */
            cli_operand view;
            memset(&view, 0, sizeof view);
            view.shape = result->shape;
            int64_t low, high;
            reach(&view, args->outs[i].strides, &low, &high);
            views[i] = malloc((size_t)(high - low + 1) * size);
            if (!views[i]) {
                fprintf(stderr, "bcgen run: out of memory for output view %s\n",
                        args->output_names[i]);
                goto done;
            }
            memset(views[i], 0xA5, (size_t)(high - low + 1) * size);
            outs[i] = views[i] - low * (int64_t)size;
        }
    }
    double t2 = now_ms();
    bcg_status s = BCG_OK;
    if (prog)
        s = bcg_run_outputs(prog, outs, inputs, args->threads, &err);
    for (int i = 0; !prog && !s && i < count; i++)
        if ((s = eval_run(&fronts[i], outs[i], inputs, &err)))
            program_statement_error(&p, i, &err);
    double t3 = now_ms();
    if (s != BCG_OK) {
        status = cli_report("run", args->expr, &err);
        goto done;
    }
    if (args->time)
        fprintf(stderr, "bcgen run: %s %.3f ms, run %.3f ms\n",
                args->reference ? "plan" : "compile", t1 - t0, t3 - t2);
    for (int i = 0; i < count; i++) {
        npy_array *result = &results[i];
        if (views[i]) {
            cli_operand view;
            memset(&view, 0, sizeof view);
            view.shape = result->shape;
            int64_t elements = 1;
            for (int d = 0; d < result->shape.rank; d++)
                elements *= result->shape.dims[d];
            copy_strided(&view, args->outs[i].strides, outs[i], result->data,
                         bcg_dtype_size(result->dtype), elements, false);
        }
        if ((status = put_result(args->output_paths[i], args->output_names[i], result)))
            goto done;
    }
    status = 0;
done:
    for (int i = 0; results && i < count; i++)
        free(results[i].data);
    for (int i = 0; views && i < count; i++)
        free(views[i]);
    free(results);
    free(views);
    free(outs);
    bcg_program_free(prog);
    arena_free(a);
    return status;
}

int cli_run(int argc, char **argv)
{
    cli_args *args = malloc(sizeof *args);
    npy_array *logical = calloc(BCG_MAX_OPERANDS, sizeof *logical);
    laid_out *mem = calloc(BCG_MAX_OPERANDS, sizeof *mem);
    bcg_context *ctx = bcg_context_new();
    npy_array result = {0};
    char *view_memory = NULL; /* --out-strides: the buffer the view lives in */
    compile front = {0};
    bcg_kernel *kernel = NULL;
    int status = 1, loaded = 0;
    if (!args || !logical || !mem || !ctx) {
        fprintf(stderr, "bcgen run: out of memory\n");
        goto done;
    }
    status = cli_parse_args("run", help, argc, argv,
                            ARG_OUTPUT | ARG_UNROLL | ARG_REFERENCE | ARG_TIME | ARG_COMPILE |
                                ARG_THREADS,
                            true, args);
    if (status >= 0)
        goto done;
    status = 1;
    if (args->reference && args->threads > 1) {
        fprintf(stderr, "bcgen run: --threads runs the JIT's kernel; --reference runs on one\n");
        status = 2;
        goto done;
    }

    bcg_operand ops[BCG_MAX_OPERANDS];
    cli_operand_views(args->operand_count, args->operands, ops);
    bcg_error err;
    error_clear(&err);
    if (args->program) {
        status = run_program(args, ops, ctx, logical, mem, &loaded);
        goto done;
    }

    /* Compile first: a bad expression should not wait for data to load. */
    double t0 = now_ms();
    if (args->reference) {
        front.arena = arena_new();
        front.err = &err;
        if (!front.arena)
            fail(&err, BCG_ERR_NOMEM, "out of memory");
        else
            compile_pipeline(&front, &(compile_request){.text = args->expr, .operands = ops,
                                                        .operand_count = args->operand_count,
                                                        .options = &args->options,
                                                        .goal = COMPILE_FRONT});
    } else {
        bcg_compile(ctx, args->expr, ops, args->operand_count, &args->options, &kernel, &err);
    }
    double t1 = now_ms();
    if (err.status != BCG_OK) {
        status = cli_report("run", args->expr, &err);
        goto done;
    }
    if (kernel && bcg_kernel_note(kernel)[0])
        fprintf(stderr, "bcgen run: note: %s\n", bcg_kernel_note(kernel));
    /* the legacy broadcast warning (--warn-legacy), as `bcgen shape` prints it */
    const char *warning = kernel ? bcg_kernel_warning(kernel) : front.broadcast->warning;
    if (warning[0])
        fprintf(stderr, "bcgen run: warning: %s\n", warning);

    for (; loaded < args->operand_count; loaded++)
        if ((status = load_operand(&args->operands[loaded], &logical[loaded], &mem[loaded])))
            goto done;
    status = 1;

    const void *inputs[BCG_MAX_OPERANDS];
    for (int i = 0; i < args->operand_count; i++)
        inputs[i] = mem[i].base;
    const shape *result_shape = kernel ? NULL : &front.out_shape;
    result.dtype = kernel ? bcg_kernel_dtype(kernel) : front.out_dtype;
    if (kernel) {
        result.shape.rank = bcg_kernel_rank(kernel);
        memcpy(result.shape.dims, bcg_kernel_shape(kernel),
               sizeof(int64_t) * (size_t)result.shape.rank);
    } else {
        result.shape = *result_shape;
    }
    int64_t elements = 1;
    for (int d = 0; d < result.shape.rank; d++)
        elements *= result.shape.dims[d];
    size_t size = bcg_dtype_size(result.dtype);
    int inplace = args->options.inplace;
    result.data = calloc(elements ? (size_t)elements : 1, size);
    if (!result.data) {
        fprintf(stderr, "bcgen run: out of memory for the result\n");
        goto done;
    }
    void *out = inplace >= 0 ? mem[inplace].base : result.data;
    /* --out-strides: the kernel writes a view into a buffer of its span
     * (filled with 0xA5 bytes, so a stray write would show in no result),
     * gathered into the C-contiguous result afterwards */
    cli_operand view;
    memset(&view, 0, sizeof view);
    if (args->out.output.strides && elements > 0) {
        int64_t low, high;
        view.shape = result.shape;
        reach(&view, args->out.strides, &low, &high);
        view_memory = malloc((size_t)(high - low + 1) * size);
        if (!view_memory) {
            fprintf(stderr, "bcgen run: out of memory for the output view\n");
            goto done;
        }
        memset(view_memory, 0xA5, (size_t)(high - low + 1) * size);
        out = view_memory - low * (int64_t)size;
    }

    double t2 = now_ms();
    bcg_status s = kernel ? bcg_run_threads(kernel, out, inputs, args->threads, &err)
                          : eval_run(&front, out, inputs, &err);
    double t3 = now_ms();
    if (s != BCG_OK) {
        status = cli_report("run", args->expr, &err);
        goto done;
    }
    if (view_memory)
        copy_strided(&view, args->out.strides, out, result.data, size, elements, false);
    if (inplace >= 0 && elements > 0) {
        const cli_operand *o = &args->operands[inplace];
        if (o->has_strides)
            copy_strided(o, o->strides, mem[inplace].base, result.data, size, elements, false);
        else
            memcpy(result.data, mem[inplace].base, (size_t)elements * size);
    }
    if (args->time)
        fprintf(stderr, "bcgen run: %s %.3f ms, run %.3f ms\n",
                args->reference ? "plan" : "compile", t1 - t0, t3 - t2);

    if (args->output_path) {
        if (npy_write(args->output_path, &result, &err)) {
            status = cli_report("run", NULL, &err);
            goto done;
        }
    } else {
        strbuf sb;
        sb_init(&sb);
        npy_format(&sb, &result);
        if (sb.failed) {
            fprintf(stderr, "bcgen run: out of memory printing the result\n");
            sb_free(&sb);
            goto done;
        }
        printf("%s\n", sb.data ? sb.data : "");
        sb_free(&sb);
    }
    status = 0;
done:
    for (int i = 0; i < loaded && logical; i++) {
        npy_free(&logical[i]);
        free(mem[i].allocation);
    }
    if (logical && loaded < BCG_MAX_OPERANDS)
        npy_free(&logical[loaded]);
    free(result.data);
    free(view_memory);
    arena_free(front.arena);
    bcg_context_free(ctx);
    free(mem);
    free(logical);
    free(args);
    return status;
}
