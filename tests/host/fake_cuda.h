/* fake_cuda (fake_cuda.c): a stand-in CUDA driver, loaded by the library through
 * FUSEDOPS_LIBCUDA, that plays one GPU and records each cuLaunchKernelEx instead of running it.
 * What the library's tests may rely on, with no cuda.h needed to read it. */
#ifndef FUSEDOPS_TEST_FAKE_CUDA_H
#define FUSEDOPS_TEST_FAKE_CUDA_H

/* The GPU it plays (the environment picks the rest, fake_cuda.c):
 *   FAKE_CUDA_CC      compute capability as 10*major+minor (default 90)
 *   FAKE_CUDA_DRIVER  what cuDriverGetVersion answers (default 13000)
 *   FAKE_CUDA_PTX     every kernel's CU_FUNC_ATTRIBUTE_PTX_VERSION (default: the compute
 *                     capability, as if every kernel had SASS for it); "fail": the query fails
 *   FAKE_CUDA_MISSING_KERNEL  a kernel name cuLibraryGetKernel answers CUDA_ERROR_NOT_FOUND
 *                     for, as if the fatbinary lacked it (default: none)
 *   FAKE_CUDA_UNLOAD  "fail": cuLibraryUnload of the loaded library fails
 *                     (CUDA_ERROR_INVALID_VALUE) and leaves it loaded
 *   FAKE_CUDA_NAME    "fail": cuDeviceGetName fails (CUDA_ERROR_NOT_SUPPORTED: a GPU that
 *                     opens halfway, its primary context already retained) */
#define FAKE_CUDA_SM_COUNT 132
#define FAKE_CUDA_SMEM_OPTIN (227 * 1024) /* bytes one thread block may opt in to */

/* Resident thread blocks per SM it reports for `threads` threads a block: the thread limit
 * of an H100 SM (2048, at most 32 blocks), shared memory aside. */
static inline int fake_cuda_blocks_per_sm(int threads) {
    int blocks = threads > 0 ? 2048 / threads : 1;
    return blocks < 1 ? 1 : blocks > 32 ? 32 : blocks;
}

/* The launches so far and the last one, as cuLaunchKernelEx received it, and the tensor maps
 * encoded so far. cuTensorMapEncodeTiled succeeds (zeroing the map) for arguments within the
 * driver's documented limits (rank 1 to 5, a 16-byte aligned address, dims 1 to 2^32, strides
 * multiples of 16 bytes below 2^40, boxes of 1 to 256 with a first dimension of whole 16-byte
 * units and, 128-byte swizzled, at most 128 bytes, element strides 1 to 8) and fails with
 * CUDA_ERROR_INVALID_VALUE otherwise. */
#define FAKE_CUDA_MAPS 8
typedef struct fake_cuda_launch {
    int count;            /* cuLaunchKernelEx calls so far */
    const char *kernel;   /* the name the library looked the kernel up by (cuLibraryGetKernel) */
    unsigned grid[3], block[3];
    unsigned shared_bytes;
    const void *stream;
    unsigned num_attrs;
    int pdl;              /* -1: no CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, else
                           * its programmaticStreamSerializationAllowed */
    unsigned cluster[3];  /* CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, all 0 when absent */
    int blocks_fastest;   /* an attention kernel's tile_attention_kernel_args.blocks_fastest
                           * (its walk's order, src/attention.c), else -1 */
    unsigned walk_programs; /* an attention kernel's programs_div.divisor (the programs its
                             * walk divides by), else 0 */
    int tensor_maps;      /* cuTensorMapEncodeTiled calls so far that succeeded (a running
                           * count, as `count`; kept up to date between launches too) */
    struct {              /* the last FAKE_CUDA_MAPS of them: map i at maps[i % FAKE_CUDA_MAPS] */
        const void *address;
        unsigned long long dims[5], strides[4]; /* strides in bytes, of dims 1 to rank - 1 */
    } maps[FAKE_CUDA_MAPS];
} fake_cuda_launch;

/* Exported by the fake: copies the record into *out. Look it up with dlsym on the library's
 * handle (dlopen of the same path with RTLD_NOLOAD). */
typedef void fake_cuda_last_launch_fn(fake_cuda_launch *out);
#define FAKE_CUDA_LAST_LAUNCH "fake_cuda_last_launch"

/* The library loads and unloads so far (fake_cuda_library_calls copies them; look it up as
 * fake_cuda_last_launch). */
typedef struct fake_cuda_library {
    int loads;          /* cuLibraryLoadData calls that succeeded */
    int unloads;        /* cuLibraryUnload calls that unloaded a loaded library */
    int failed_unloads; /* of a loaded library, failed by FAKE_CUDA_UNLOAD=fail */
    int stray_unloads;  /* of a handle not loaded (never loaded, or unloaded already) */
} fake_cuda_library;
typedef void fake_cuda_library_fn(fake_cuda_library *out);
#define FAKE_CUDA_LIBRARY_CALLS "fake_cuda_library_calls"

/* What the fake prints on stderr when the program exits holding primary context references
 * (cuDevicePrimaryCtxRetain without its cuDevicePrimaryCtxRelease). */
#define FAKE_CUDA_RETAINED_AT_EXIT "fake_cuda: primary context retained at exit"

#endif
