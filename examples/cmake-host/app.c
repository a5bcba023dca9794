/* app.c - the same expression through bcgen's JIT (bcg_compile, bcg_run)
 * and through the kernel bcgen_generate made from kernels.bcg at build
 * time; prints "same" when both give the same bytes. */
#include <bcgen.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

int main(void)
{
    static float x[SCALE_X_ELEMENTS], gain[SCALE_GAIN_ELEMENTS];
    static float jit[SCALE_OUT_ELEMENTS], aot[SCALE_OUT_ELEMENTS];
    float bias = 0.25f;
    for (int i = 0; i < SCALE_X_ELEMENTS; i++)
        x[i] = (float)i / 7.0f - 3.0f;
    for (int i = 0; i < SCALE_GAIN_ELEMENTS; i++)
        gain[i] = 1.0f + (float)i / 3.0f;

    bcg_context *ctx = bcg_context_new();
    int64_t shape_x[] = SCALE_X_SHAPE, shape_gain[] = SCALE_GAIN_SHAPE;
    bcg_operand ops[] = {
        {"x", BCG_F32, SCALE_X_RANK, shape_x, NULL},
        {"gain", BCG_F32, SCALE_GAIN_RANK, shape_gain, NULL},
        {"bias", BCG_F32, 0, NULL, NULL},
    };
    bcg_kernel *k;
    bcg_error err;
    if (bcg_compile(ctx, "x * gain + bias", ops, 3, NULL, &k, &err) != BCG_OK) {
        fprintf(stderr, "compile: %s\n", err.message);
        return 1;
    }
    const void *in[] = {x, gain, &bias};
    if (bcg_run(k, jit, in, &err) != BCG_OK) {
        fprintf(stderr, "run: %s\n", err.message);
        return 1;
    }
    bcg_context_free(ctx);

    scale(aot, x, gain, bias);
    int same = memcmp(jit, aot, sizeof jit) == 0;
    printf("%s %s %g %g\n", same ? "same" : "different", BCGEN_VERSION, (double)aot[0],
           (double)aot[SCALE_OUT_ELEMENTS - 1]);
    return same ? 0 : 1;
}
