/* main.c - a minimal firmware-style program calling two kernels that
 * `bcgen aot` generated (kernels.c, kernels.h; `make kernels` regenerates
 * them).  Everything is static: no malloc, no stdio; the results land in a
 * volatile global a debugger (or a test) can read. */
#include <stdint.h>

#include "kernels.h"

/* Three channels of 32 raw ADC samples, and their calibration. */
static int16_t raw[CALIBRATE_RAW_ELEMENTS];
static const float gain[CALIBRATE_GAIN_ELEMENTS] = {0.001f, 0.002f, 0.0005f};
static const float offset[CALIBRATE_OFFSET_ELEMENTS] = {-1.0f, 0.25f, 0.0f};

static float calibrated[CALIBRATE_OUT_ELEMENTS];
static float magnitudes[MAGNITUDE_OUT_ELEMENTS];

volatile float result;

int main(void)
{
    for (int i = 0; i < CALIBRATE_RAW_ELEMENTS; i++)
        raw[i] = (int16_t)(i * 37 - 1200);

    /* calibrated[c][i] = raw[c][i] * gain[c] + offset[c] */
    calibrate(calibrated, raw, gain, offset);

    /* the rows of `calibrated` are the x, y and z of 32 vectors */
    const int n = MAGNITUDE_X_ELEMENTS;
    magnitude(magnitudes, &calibrated[0], &calibrated[n], &calibrated[2 * n]);

    float sum = 0.0f;
    for (int i = 0; i < MAGNITUDE_OUT_ELEMENTS; i++)
        sum += magnitudes[i];
    result = sum;
    for (;;) {
    }
}
