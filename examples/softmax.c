/* The shortest complete program that calls tile_softmax() on a stream and checks the status.
 * Build: cc softmax.c -lfusedops -lcuda (the CUDA runtime works as well as the driver API). */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fusedops.h"

int main(void) {
    enum { ROWS = 4, COLS = 1000 };
    static float host[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) host[i] = (float)((i * 37) % 101) / 10.0f;

    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr x, y;
    CUstream stream;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS) {
        fprintf(stderr, "no GPU\n");
        return 77;
    }
    cuDevicePrimaryCtxRetain(&ctx, dev);
    cuCtxSetCurrent(ctx); /* tile_* calls run on the current context's device */
    cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    cuMemAlloc(&x, sizeof host);
    cuMemAlloc(&y, sizeof host);
    cuMemcpyHtoD(x, host, sizeof host);

    tile_status s = tile_softmax(TILE_DTYPE_F32, (void *)y, (const void *)x, ROWS, COLS, COLS, COLS,
                                 (tile_stream)stream);
    if (s != TILE_STATUS_SUCCESS) {
        fprintf(stderr, "tile_softmax: %s: %s\n", tile_status_string(s), tile_last_error());
        return 1;
    }
    cuMemcpyDtoHAsync(host, y, sizeof host, stream);
    cuStreamSynchronize(stream);

    double sum = 0;
    for (int c = 0; c < COLS; c++) sum += host[c];
    printf("row 0 sums to %.6f (1 expected)\n", sum);
    return fabs(sum - 1.0) < 1e-4 ? 0 : 1;
}
