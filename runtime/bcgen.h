/* bcgen.h - public API of bcgen, the broadcast kernel generator.
 *
 * bcgen turns an elementwise expression over named tensors of concrete
 * shapes ("a * b + c" with a=f32[5,3,4,1], b=f32[3,1,1], c=f32[]) into C
 * specialized for exactly those shapes, dtypes and strides, and compiles it
 * in-process through libtcc (or hands the source to the caller).
 *
 * Use only what this header declares.  Every name starts with bcg_ / BCG_.
 *
 * Typical use:
 *
 *     bcg_context *ctx = bcg_context_new();
 *     int64_t sa[] = {5, 3, 4, 1}, sb[] = {3, 1, 1};
 *     bcg_operand ops[] = {
 *         {"a", BCG_F32, 4, sa, NULL},
 *         {"b", BCG_F32, 3, sb, NULL},
 *     };
 *     bcg_kernel *k; bcg_error err;
 *     if (bcg_compile(ctx, "a * b + 1", ops, 2, NULL, &k, &err) != BCG_OK)
 *         fprintf(stderr, "%s\n", err.message);
 *     const void *in[] = {a_data, b_data};
 *     bcg_run(k, out_data, in, &err);
 *     bcg_context_free(ctx);          (frees k too)
 *
 * Ownership: the context owns every kernel compiled through it; kernels stay
 * valid until bcg_context_free.  Strings returned as "const char *" are owned
 * by the object they came from.  Strings returned through "char **" are
 * allocated for the caller, who frees them with bcg_free.
 *
 * Errors: every function that can fail returns a bcg_status and, when given a
 * non-NULL bcg_error, fills it.  The library never prints, never exits and
 * never aborts on bad input.
 */
#ifndef BCGEN_H
#define BCGEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BCG_VERSION "0.1.0"

/* Limits (each reported by name in the error that enforces it). */
#define BCG_MAX_OPERANDS 64   /* operands per expression */
#define BCG_MAX_RANK 64       /* dimensions per operand */
#define BCG_MAX_NAME 63       /* bytes in an operand name */
#define BCG_MAX_EXPR 65536    /* bytes in an expression */
#define BCG_MAX_DEPTH 200     /* nesting depth of an expression */
#define BCG_MAX_THREADS 64    /* threads of one bcg_run_threads call */
/* Bytes of generated C that bcg_compile hands to the compiler (12 MiB): it
 * bounds the compile time (libtcc cannot be interrupted) to about 1 s.  A
 * fully unrolled kernel over it is made with loops instead; any other is
 * BCG_ERR_LIMIT. */
#define BCG_MAX_SOURCE 12582912

/* The Paddle-style axis is "not given" (NumPy right alignment). */
#define BCG_AXIS_NONE (-1000)

typedef enum bcg_status {
    BCG_OK = 0,
    BCG_ERR_USAGE,      /* a bad argument to an API call */
    BCG_ERR_SHAPE,      /* malformed shape text, a negative size */
    BCG_ERR_BROADCAST,  /* shapes do not broadcast, in-place shape change, axis */
    BCG_ERR_PARSE,      /* expression syntax; err.column says where */
    BCG_ERR_TYPE,       /* dtype rules: bad operand types, literal does not fit */
    BCG_ERR_LIMIT,      /* a documented limit was exceeded (rank, operand count, sizes, ...) */
    BCG_ERR_NOMEM,      /* an allocation failed */
    BCG_ERR_JIT,        /* libtcc rejected the generated code */
    BCG_ERR_RUN,        /* bcg_run: null, misaligned or overlapping pointers */
    BCG_ERR_IO          /* a file could not be read or written */
} bcg_status;

/* Element types.  ORDER DTYPE: gen/dtype.c has a table in this order. */
typedef enum bcg_dtype {
    BCG_BOOL, /* 1 byte, 0 or 1 (any non-zero byte reads as true) */
    BCG_I8, BCG_I16, BCG_I32, BCG_I64,
    BCG_U8, BCG_U16, BCG_U32, BCG_U64,
    BCG_F32, BCG_F64,
    BCG_F16,  /* IEEE binary16 (NumPy's float16), stored as its 16 bits (uint16_t) */
    BCG_BF16, /* bfloat16 (the top half of an f32), stored as its 16 bits (uint16_t) */
    BCG_DTYPE_COUNT
} bcg_dtype;

/* What went wrong.  The first error of a call wins; later ones are dropped. */
typedef struct bcg_error {
    bcg_status status;
    int column;        /* 1-based column in the expression, 0 when not an expression error */
    int operand;       /* operand index, -1 when none */
    int dimension;     /* dimension index in the broadcast result, -1 when none */
    char message[512]; /* one line, no trailing newline */
} bcg_error;

/* One input tensor, described by the caller. */
typedef struct bcg_operand {
    const char *name;       /* identifier: [A-Za-z_][A-Za-z0-9_]*, at most BCG_MAX_NAME bytes */
    bcg_dtype dtype;
    int rank;               /* 0 .. BCG_MAX_RANK; 0 is a scalar */
    const int64_t *shape;   /* rank sizes, each >= 0; may be NULL when rank is 0 */
    const int64_t *strides; /* rank strides in elements (any sign, 0 allowed), or NULL for C-contiguous */
} bcg_operand;

/* Where and how a kernel writes its result (bcg_options.output; NULL: a new
 * C-contiguous array of the expression's dtype).  Read during bcg_compile
 * only.  bcg_run's output pointer then points at the view's element
 * [0,...,0], like an operand's (with negative strides, inside the buffer). */
typedef struct bcg_output {
    /* BCG_DTYPE_AUTO (-1): the expression's dtype; else the result is cast to
     * this dtype on store, as NumPy's out= with casting='same_kind' allows
     * (bool to anything, within a kind, uint to int, integers to floats,
     * f64 to f32; never float to integer, signed to unsigned or to bool). */
    int dtype;
    /* The output's rank and its strides in elements (any sign; no two
     * elements in one place), or NULL for C-contiguous.  Without a
     * reduction rank is the result's when strides are given. */
    int rank;
    const int64_t *strides;
    /* A reduction (BCG_REDUCE_SUM ...; BCG_REDUCE_NONE, 0, for none) to the
     * output shape SHAPE (rank dimensions), which must broadcast to the
     * expression's result (right-aligned, each size equal or 1): every
     * result dimension where the output has size 1 or no dimension is
     * reduced, as np.sum(x, axis=..., keepdims=True) reshaped to SHAPE.
     * Sums and products of bool and integers accumulate in i64 (u64 for
     * unsigned), mean of integers in f64; min and max keep the dtype and
     * propagate NaN; any and all give bool.  Float sums accumulate f32 in
     * double and f64 with compensated (Neumaier) summation. */
    int reduce;
    const int64_t *shape;
} bcg_output;

#define BCG_DTYPE_AUTO (-1)

enum {
    BCG_REDUCE_NONE, BCG_REDUCE_SUM, BCG_REDUCE_PROD, BCG_REDUCE_MIN, BCG_REDUCE_MAX,
    BCG_REDUCE_MEAN, BCG_REDUCE_ANY, BCG_REDUCE_ALL
};

/* Compile options.  Start from bcg_options_init(); a NULL pointer means the defaults. */
typedef struct bcg_options {
    int inplace;        /* -1: the output is a new C-contiguous array; k: written into operand k */
    int axis;           /* BCG_AXIS_NONE, or Paddle's axis (exactly two operands) */
    int strict_rank;    /* 1: reject rank-0 operands (the "at least one dimension" rule) */
    int warn_legacy;    /* 1: warn when shapes differ, broadcast, and hold as many elements */
    /* Outputs with at most this many elements are fully unrolled; 0: never
     * (then no straight-line code at all: compiled kernels on AVX2 write
     * outputs of up to 1024 elements as one function of straight-line
     * vector code otherwise, see disable_vector_code). */
    int unroll_limit;
    int unroll_factor;  /* the innermost loop is unrolled by this factor; 1: not unrolled */
    /* Compiled kernels (not bcg_emit's source) hand inner runs of at least
     * this many elements to vectorised library microkernels, a tile at a
     * time; 0: never. */
    int microkernel_run;
    /* BCG_BACKEND_TCC (0, the default): libtcc in-process, no compiler
     * needed.  BCG_BACKEND_CC: the plain C compiled by the system's `cc`
     * (-O3) into a shared object cached on disk in $XDG_CACHE_HOME/bcgen or
     * ~/.cache/bcgen and loaded with dlopen; when that fails the kernel is
     * compiled with libtcc and bcg_kernel_note says why. */
    int backend;
    int native;         /* BCG_BACKEND_CC: 1 adds -march=native */
    /* Streaming (non-temporal) stores of the output, in compiled kernels
     * whose inner runs go through the microkernels and whose root is a
     * binary operation, comparison or where() of operands and literals:
     * they write past the caches instead of first reading each output line
     * into them, which halves the memory traffic of a large output's write
     * and keeps the inputs in the cache, but leaves the output out of it.
     * BCG_STREAM_AUTO (-1, the default): for kernels that touch (output
     * and inputs together) at least the size of the last-level cache,
     * read once at run time (Linux's /sys/devices/system/cpu/cpu0/cache,
     * else CPUID), or BCG_STREAM_AUTO_BYTES where that is unknown: below
     * it a kernel run again finds its data in the cache, which plain
     * stores keep; 0: never; 1: always.  Results are the same either way. */
    int stream_stores;
    /* The output view and dtype (see bcg_output); NULL: a new C-contiguous
     * array of the expression's dtype.  With inplace, only dtype may be
     * given (the target's strides are the output's). Keep it last: the
     * fields before it are ints (the cache key reads them as bytes). */
    const bcg_output *output;
    /* A program's outputs (bcg_compile_program): OUTPUT_COUNT descriptions,
     * outputs[i] of the statement OUTPUT_NAMES[i] names or, where
     * output_names or output_names[i] is NULL, of statement i; statements
     * without one get a new C-contiguous array of their expression's
     * dtype.  NULL / 0: none. */
    const bcg_output *outputs;
    int output_count;
    const char *const *output_names;
    /* bcg_compile_program, bcg_emit_program: 1 compiles every statement as
     * a kernel of its own even where the program fuses into one (the
     * proven per-statement path, for comparison); 0 (the default): fused
     * where it can be (docs/semantics.md, "Programs"). */
    int separate_statements;
    /* Compiled kernels (the libtcc path) on a CPU with AVX2: 0 (the
     * default) computes a tile's whole tree of float arithmetic,
     * comparisons, minimum/maximum and where in one fused vector function
     * that bcgen writes as machine code, in place of a microkernel call
     * per operation, and writes a whole kernel of at most 1024 output
     * elements as one function of straight-line vector code (no libtcc
     * code, no loop); 1 keeps the microkernel calls and tcc's code (for
     * comparison).  Results are the same either way. */
    int disable_vector_code;
} bcg_options;

#define BCG_STREAM_AUTO (-1)
#define BCG_STREAM_AUTO_BYTES (32 * 1024 * 1024)

#define BCG_BACKEND_TCC 0
#define BCG_BACKEND_CC 1

typedef struct bcg_context bcg_context;
typedef struct bcg_kernel bcg_kernel;

void bcg_options_init(bcg_options *options);

/* Returns NULL only when memory runs out. */
bcg_context *bcg_context_new(void);
/* Frees the context and every kernel compiled through it.  NULL is allowed. */
void bcg_context_free(bcg_context *ctx);

/* Bounds the context's kernel cache to MAX_KERNELS kernels and MAX_BYTES
 * bytes of kernel memory (code, key and run data); 0 means no bound, the
 * default for both.  Past either bound bcg_compile evicts the least
 * recently used kernels (evicting at once when the new bounds are lower).
 * An evicted kernel leaves the cache (compiling its key again compiles it
 * again) but stays valid while a caller holds it (see bcg_kernel_release)
 * or a run of it is in progress; so in a bounded context, release every
 * kernel you no longer run, or evicted kernels stay allocated. */
bcg_status bcg_context_set_capacity(bcg_context *ctx, size_t max_kernels,
                                    size_t max_bytes, bcg_error *err);

/* What a context's cache holds now. */
typedef struct bcg_cache_stats {
    size_t kernels;       /* in the cache */
    size_t bytes;         /* their memory */
    size_t max_kernels;   /* the capacity (0: no bound) */
    size_t max_bytes;
    size_t live_kernels;  /* cached, plus evicted ones still held */
    long compiles;        /* kernels compiled (cache misses) */
    long evictions;       /* kernels evicted by the capacity */
} bcg_cache_stats;
void bcg_context_stats(bcg_context *ctx, bcg_cache_stats *stats);

/* Compiles EXPR over OPERANDS.  On success *kernel is owned by ctx and
 * valid until bcg_context_free, or, once you release it, until the cache
 * drops it.  Compiling the same key (expression, operands, options) again
 * returns the same kernel while it is cached: a hit is a hash-table lookup
 * (about 0.1 us, whatever the number of kernels), no compile. */
bcg_status bcg_compile(bcg_context *ctx, const char *expr,
                       const bcg_operand *operands, int operand_count,
                       const bcg_options *options, bcg_kernel **kernel,
                       bcg_error *err);

/* Lifetime.  Each successful bcg_compile holds a reference to the kernel for
 * its caller; a caller that no longer runs the kernel may drop it:
 *  - bcg_kernel_release: the kernel stays cached (a later bcg_compile of its
 *    key finds it) until the context's capacity evicts it;
 *  - bcg_kernel_free: the kernel also leaves the cache at once.
 * Either way its memory goes when no caller holds it and no run of it is in
 * progress: a run started on another thread finishes on valid code.  After
 * either call do not start a run of it, unless you hold another reference.
 * A context without a capacity never evicts, so there holding and releasing
 * only matter for bcg_kernel_free.  NULL is allowed. */
void bcg_kernel_release(bcg_kernel *kernel);
void bcg_kernel_free(bcg_kernel *kernel);

/* The broadcast result of a compiled kernel. */
int bcg_kernel_rank(const bcg_kernel *kernel);
const int64_t *bcg_kernel_shape(const bcg_kernel *kernel);
bcg_dtype bcg_kernel_dtype(const bcg_kernel *kernel);
int64_t bcg_kernel_elements(const bcg_kernel *kernel);
/* "" normally; when libtcc could not compile the kernel, a sentence saying
 * why, and the kernel runs on the (slower) reference evaluator instead. */
const char *bcg_kernel_note(const bcg_kernel *kernel);
/* The generated C source (owned by the kernel).  Kernels do not keep it:
 * the first call generates it again (the same text that was compiled) and
 * the kernel keeps it from then on.  NULL only when memory runs out. */
const char *bcg_kernel_source(const bcg_kernel *kernel);
/* "" normally; else what the compile warns about, "; "-separated: the
 * broadcast's legacy warning when the kernel was compiled with
 * options.warn_legacy and the shapes trigger it (bcg_broadcast_shapes says
 * when), and each operand the expression does not read (such operands take
 * no part in the broadcast, as in NumPy, and bcg_run does not check their
 * pointers). */
const char *bcg_kernel_warning(const bcg_kernel *kernel);

/* Runs the kernel.  INPUTS holds one pointer per operand, in the order they
 * were given; each points at the operand's element [0, ..., 0].  OUTPUT is a
 * C-contiguous buffer of bcg_kernel_elements() elements, or, for an in-place
 * kernel, the in-place operand's own pointer (NULL means that pointer too). */
bcg_status bcg_run(const bcg_kernel *kernel, void *output,
                   const void *const *inputs, bcg_error *err);

/* bcg_run without its checks, for callers that run one kernel on the same
 * buffers many times and checked them once with bcg_run: no pointer,
 * alignment or overlap checks and no bcg_error (BCG_ERR_USAGE only for a
 * NULL kernel).  The caller must hold a reference to K (not released or
 * freed) for the whole call, and the pointers must be ones bcg_run would
 * accept; anything else is undefined behaviour.  It costs what a direct
 * call of the kernel's code does. */
bcg_status bcg_run_unchecked(const bcg_kernel *kernel, void *output,
                             const void *const *inputs);

/* bcg_run on up to THREADS threads (1 .. BCG_MAX_THREADS), the calling one
 * included: the outermost loop is cut into pieces run by a pool of worker
 * threads that the kernel's context starts on first need and joins in
 * bcg_context_free.  Work too small to gain (under about 32768 elements a
 * thread) runs on the calling thread alone.  The first threaded run of a
 * kernel with a given piece count compiles its pieces (one or two more tcc
 * compiles).  The result is the same as bcg_run's, bit for bit. */
bcg_status bcg_run_threads(const bcg_kernel *kernel, void *output,
                           const void *const *inputs, int threads, bcg_error *err);

/* Generates the C source for EXPR without compiling it.  FUNCTION_NAME names
 * the kernel function (an identifier; NULL: "bcg_kernel").  *source is
 * allocated for the caller: free it with bcg_free. */
bcg_status bcg_emit(const char *expr, const bcg_operand *operands,
                    int operand_count, const bcg_options *options,
                    const char *function_name, char **source, bcg_error *err);

/* ---- programs: several outputs from one call ---------------------------------
 *
 * A program is statements separated by ';', each "NAME = EXPR":
 *
 *     "y = g * a; s = y"        with outputs[1].reduce = BCG_REDUCE_SUM to b's shape
 *
 * Every statement is an output, in order.  A later statement may use an
 * earlier statement's NAME: it stands for that statement's value (before
 * any cast on store), as if its expression were written there in
 * parentheses; a reduced statement's name cannot be used.  Each output has
 * its statement's own result shape (NumPy's: the broadcast of the operands
 * that statement reads, names included), its own view, dtype and
 * reduction (bcg_options.outputs).  Names are identifiers, not operand
 * names, each given once; a plain expression without '=' is a program of
 * one unnamed output.  In-place writing (options.inplace) is for programs
 * of one statement only.
 *
 * How it runs: a program whose statements all iterate over one result
 * shape, its reductions (any number) all over the same dimensions, is
 * fused into one kernel that computes every output in one pass
 * (bcg_program_fused), bit for bit what each statement's own kernel
 * gives (bcg_program_kernel compiles that kernel when first asked for);
 * otherwise (or with
 * options.separate_statements) each statement is a kernel of its own
 * (cached like any bcg_compile), run in statement order over the same
 * inputs, a name used later recomputed there (docs/semantics.md,
 * "Programs").  The program is owned by the caller: free it with
 * bcg_program_free before its context. */
#define BCG_MAX_OUTPUTS 64   /* statements in a program */
typedef struct bcg_program bcg_program;

bcg_status bcg_compile_program(bcg_context *ctx, const char *program,
                               const bcg_operand *operands, int operand_count,
                               const bcg_options *options, bcg_program **out,
                               bcg_error *err);
void bcg_program_free(bcg_program *program);  /* NULL allowed */
int bcg_program_output_count(const bcg_program *program);
/* The Ith statement's name ("" for a plain expression), and its kernel
 * (bcg_kernel_rank/shape/dtype/elements give the output's; owned by the
 * program). */
const char *bcg_program_output_name(const bcg_program *program, int i);
const bcg_kernel *bcg_program_kernel(const bcg_program *program, int i);
/* The fused kernel that computes every output in one pass, or NULL when
 * the program runs statement by statement (owned by the program). */
const bcg_kernel *bcg_program_fused(const bcg_program *program);
/* Runs every statement on up to THREADS threads each (as bcg_run_threads).
 * OUTPUTS holds one pointer per output, in statement order, each as
 * bcg_run's output.  Besides bcg_run's checks per statement: with several
 * statements no output may overlap another output or any operand the
 * program reads (errors name both). */
bcg_status bcg_run_outputs(const bcg_program *program, void *const *outputs,
                           const void *const *inputs, int threads, bcg_error *err);
/* The C source of every statement's kernel, FUNCTION_NAME_<NAME> each, and
 * FUNCTION_NAME (NULL: "bcg_kernel") calling them in order:
 *     void FUNCTION_NAME(void *const *out, const void *const *in);
 * Free *source with bcg_free. */
bcg_status bcg_emit_program(const char *program, const bcg_operand *operands,
                            int operand_count, const bcg_options *options,
                            const char *function_name, char **source, bcg_error *err);

/* Broadcasts shapes alone.  SHAPES[i] has RANKS[i] sizes; NAMES may be NULL.
 * RESULT must hold BCG_MAX_RANK sizes.  WARNING (may be NULL) receives a
 * legacy warning when options->warn_legacy is set, or "" when there is none. */
bcg_status bcg_broadcast_shapes(int count, const int64_t *const *shapes,
                                const int *ranks, const char *const *names,
                                const bcg_options *options, int64_t *result,
                                int *result_rank, char *warning,
                                size_t warning_size, bcg_error *err);

/* dtype helpers: "f32", 4, ... */
const char *bcg_dtype_name(bcg_dtype dtype);
size_t bcg_dtype_size(bcg_dtype dtype);
/* Accepts bcgen names (f32, i8, bool, f16, bf16), NumPy names (float32,
 * int8, float16), "half" and "bfloat16". */
bcg_status bcg_dtype_parse(const char *text, bcg_dtype *dtype);

/* The 16-bit float formats' bit patterns, for filling and reading BCG_F16
 * and BCG_BF16 buffers: round to nearest even (subnormals included),
 * overflow to infinity, NaN kept (made quiet); widening is exact.  These are
 * the conversions the kernels use (docs/semantics.md). */
uint16_t bcg_f16_from_f32(float x);
uint16_t bcg_f16_from_f64(double x);  /* rounds once, as NumPy's astype */
float bcg_f16_to_f32(uint16_t bits);
uint16_t bcg_bf16_from_f32(float x);
float bcg_bf16_to_f32(uint16_t bits);

void bcg_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
