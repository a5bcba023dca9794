/* main.c - a firmware-style program calling the kernels bcgen generates
 * from kernels.bcg at build time (CMakeLists.txt: bcgen_generate).
 * Everything is static: no malloc, no stdio; the results land in volatile
 * globals a debugger (or a test) can read. */
#include <stdint.h>

#include "kernels.h"

static int16_t raw[CALIBRATE_RAW_ELEMENTS];
static const float gain[CALIBRATE_GAIN_ELEMENTS] = {0.001f, 0.002f, 0.0005f};
static const float offset[CALIBRATE_OFFSET_ELEMENTS] = {-1.0f, 0.25f, 0.0f};

static CALIBRATE_OUT_TYPE calibrated[CALIBRATE_OUT_ELEMENTS];
static MAGNITUDE_OUT_TYPE magnitudes[MAGNITUDE_OUT_ELEMENTS];
static TO_Q15_OUT_TYPE q15[TO_Q15_OUT_ELEMENTS];

volatile float result;
volatile int16_t first_q15;

int main(void)
{
    for (int i = 0; i < CALIBRATE_RAW_ELEMENTS; i++)
        raw[i] = (int16_t)(i * 37 - 1200);

    calibrate(calibrated, raw, gain, offset);

    /* the rows of `calibrated` are the x, y and z of 32 vectors */
    const int n = MAGNITUDE_X_ELEMENTS;
    magnitude(magnitudes, &calibrated[0], &calibrated[n], &calibrated[2 * n]);
    to_q15(q15, magnitudes, 0.5f);

    float sum = 0.0f;
    for (int i = 0; i < MAGNITUDE_OUT_ELEMENTS; i++)
        sum += magnitudes[i];
    result = sum;
    first_q15 = q15[0];
    for (;;) {
    }
}
