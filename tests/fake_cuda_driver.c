/* A stand-in for the CUDA driver (libcuda.so.1) where no GPU is: the functions shoal._native.CudaCopier
 * loads, with device memory that is host memory and copies that run at once. Each call checks what the
 * real driver asks of its caller (initialised, the device's context current on the calling thread, an
 * event flag it knows) and answers the real error codes otherwise; fake_cuda_state() tells a test what
 * was left behind (contexts pushed, events alive, primary contexts retained) and the last stream used.
 * Built by tests/test_cuda_driver.py. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum {
    SUCCESS = 0,
    INVALID_VALUE = 1,
    NOT_INITIALIZED = 3,
    INVALID_DEVICE = 101,
    INVALID_CONTEXT = 201,
};

static int initialized;
static int retained;
static int events_alive;
static long long copies;
static unsigned long long last_stream;
static char primary_context; /* its address is the context's handle */
static _Thread_local void* context_stack[8];
static _Thread_local int depth;

static int in_context(void) {
    return depth > 0 && context_stack[depth - 1] == &primary_context;
}

CUresult cuInit(unsigned flags) {
    if (flags != 0) return INVALID_VALUE;
    initialized = 1;
    return SUCCESS;
}

CUresult cuDeviceGet(int* device, int ordinal) {
    if (!initialized) return NOT_INITIALIZED;
    if (ordinal != 0) return INVALID_DEVICE;
    *device = 0;
    return SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(void** context, int device) {
    if (!initialized) return NOT_INITIALIZED;
    if (device != 0) return INVALID_DEVICE;
    ++retained;
    *context = &primary_context;
    return SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(int device) {
    if (device != 0 || retained == 0) return INVALID_DEVICE;
    --retained;
    return SUCCESS;
}

CUresult cuCtxPushCurrent_v2(void* context) {
    if (context != &primary_context || depth == 8) return INVALID_CONTEXT;
    context_stack[depth++] = context;
    return SUCCESS;
}

CUresult cuCtxPopCurrent_v2(void** context) {
    if (depth == 0) return INVALID_CONTEXT;
    *context = context_stack[--depth];
    return SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    return in_context() ? SUCCESS : INVALID_CONTEXT;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr destination, const void* source, size_t bytes, void* stream) {
    if (!in_context()) return INVALID_CONTEXT;
    memcpy((void*)destination, source, bytes);
    ++copies;
    last_stream = (unsigned long long)stream;
    return SUCCESS;
}

CUresult cuMemcpyDtoHAsync_v2(void* destination, CUdeviceptr source, size_t bytes, void* stream) {
    if (!in_context()) return INVALID_CONTEXT;
    memcpy(destination, (const void*)source, bytes);
    ++copies;
    last_stream = (unsigned long long)stream;
    return SUCCESS;
}

CUresult cuEventCreate(void** event, unsigned flags) {
    if (!in_context()) return INVALID_CONTEXT;
    if (flags & ~0x7u) return INVALID_VALUE;
    *event = malloc(1);
    ++events_alive;
    return SUCCESS;
}

CUresult cuEventDestroy_v2(void* event) {
    if (!in_context()) return INVALID_CONTEXT;
    free(event);
    --events_alive;
    return SUCCESS;
}

CUresult cuEventRecord(void* event, void* stream) {
    if (!in_context() || event == NULL) return INVALID_CONTEXT;
    last_stream = (unsigned long long)stream;
    return SUCCESS;
}

CUresult cuEventQuery(void* event) {
    return in_context() && event != NULL ? SUCCESS : INVALID_CONTEXT;
}

CUresult cuEventSynchronize(void* event) {
    return in_context() && event != NULL ? SUCCESS : INVALID_CONTEXT;
}

CUresult cuGetErrorString(CUresult error, const char** text) {
    switch (error) {
        case INVALID_VALUE: *text = "invalid argument"; return SUCCESS;
        case NOT_INITIALIZED: *text = "initialization error"; return SUCCESS;
        case INVALID_DEVICE: *text = "invalid device ordinal"; return SUCCESS;
        case INVALID_CONTEXT: *text = "invalid device context"; return SUCCESS;
        default: *text = NULL; return INVALID_VALUE;
    }
}

/* {contexts pushed on this thread, events alive, primary contexts retained, copies, last stream} */
void fake_cuda_state(long long* out) {
    out[0] = depth;
    out[1] = events_alive;
    out[2] = retained;
    out[3] = copies;
    out[4] = (long long)last_stream;
}
