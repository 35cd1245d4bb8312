/* A stand-in for the CUDA driver (libcuda.so.1) where no GPU is, and the tests' one model of a device: the
 * functions shoal._native.CudaCopier loads, with device memory that is host memory. Work queued on any
 * stream (copies, event records, a test's "kernels") runs later, in order, only when the host asks: one
 * item per event query, all of it up to an event on its synchronize, all on the context's synchronize. So a
 * protocol that let the host reuse memory before its copy ran would show other values than the numpy
 * path's (tests/test_handoff.py). Each call checks what the real driver asks of its caller (initialised,
 * the device's context current on the calling thread, an event flag it knows) and answers the real error
 * codes otherwise; fake_cuda_state() tells a test what was left behind (contexts pushed, events alive,
 * primary contexts retained), the copies queued and the last stream used; fake_cuda_launch() queues a
 * kernel (run by the runner fake_cuda_set_kernel_runner() set), fake_cuda_pending() counts the queue.
 * Built by tests/fake_cuda.py. */
#include <pthread.h>
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
    NOT_READY = 600,
    UNKNOWN = 999,
};

/* An event: the records of it the queue has not reached yet; freed by the last of them once destroyed. */
typedef struct fake_event {
    int unreached;
    int destroyed;
} fake_event;

enum { ITEM_COPY, ITEM_RECORD, ITEM_KERNEL };
typedef struct item {
    int kind;
    void* destination;
    const void* source;
    size_t bytes;
    fake_event* event;
    long long kernel;
} item;

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

/* The device's one queue (every stream's work, in the order it was queued). */
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static item* queue;
static size_t queue_head, queue_tail, queue_capacity;
static void (*kernel_runner)(long long);

static void enqueue(item work) {
    pthread_mutex_lock(&queue_lock);
    if (queue_head > 0 && queue_head == queue_tail) queue_head = queue_tail = 0;
    if (queue_tail == queue_capacity) {
        memmove(queue, queue + queue_head, (queue_tail - queue_head) * sizeof(item));
        queue_tail -= queue_head;
        queue_head = 0;
        if (queue_tail == queue_capacity) {
            queue_capacity = queue_capacity ? 2 * queue_capacity : 64;
            queue = realloc(queue, queue_capacity * sizeof(item));
        }
    }
    queue[queue_tail++] = work;
    pthread_mutex_unlock(&queue_lock);
}

static void reached(fake_event* event) {
    if (--event->unreached == 0 && event->destroyed) free(event);
}

/* Runs the oldest item of the queue (outside the lock: a kernel is the test's code); 0 if it is empty. */
static int run_one(void) {
    pthread_mutex_lock(&queue_lock);
    if (queue_head == queue_tail) {
        pthread_mutex_unlock(&queue_lock);
        return 0;
    }
    item work = queue[queue_head++];
    pthread_mutex_unlock(&queue_lock);
    if (work.kind == ITEM_COPY)
        memcpy(work.destination, work.source, work.bytes);
    else if (work.kind == ITEM_RECORD)
        reached(work.event);
    else if (kernel_runner != NULL)
        kernel_runner(work.kernel);
    return 1;
}

static CUresult queue_copy(void* destination, const void* source, size_t bytes, void* stream) {
    item work = {ITEM_COPY, destination, source, bytes, NULL, 0};
    enqueue(work);
    ++copies;
    last_stream = (unsigned long long)stream;
    return SUCCESS;
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
    if (!in_context()) return INVALID_CONTEXT;
    while (run_one()) {
    }
    return SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr destination, const void* source, size_t bytes, void* stream) {
    if (!in_context()) return INVALID_CONTEXT;
    return queue_copy((void*)destination, source, bytes, stream);
}

CUresult cuMemcpyDtoHAsync_v2(void* destination, CUdeviceptr source, size_t bytes, void* stream) {
    if (!in_context()) return INVALID_CONTEXT;
    return queue_copy(destination, (const void*)source, bytes, stream);
}

CUresult cuEventCreate(void** event, unsigned flags) {
    if (!in_context()) return INVALID_CONTEXT;
    if (flags & ~0x7u) return INVALID_VALUE;
    *event = calloc(1, sizeof(fake_event));
    ++events_alive;
    return SUCCESS;
}

CUresult cuEventDestroy_v2(void* event) {
    if (!in_context()) return INVALID_CONTEXT;
    fake_event* e = event;
    if (e->unreached == 0)
        free(e);
    else
        e->destroyed = 1; /* as CUDA: destroyed with records pending, freed when the queue reaches them */
    --events_alive;
    return SUCCESS;
}

CUresult cuEventRecord(void* event, void* stream) {
    if (!in_context() || event == NULL) return INVALID_CONTEXT;
    fake_event* e = event;
    ++e->unreached;
    item work = {ITEM_RECORD, NULL, NULL, 0, e, 0};
    enqueue(work);
    last_stream = (unsigned long long)stream;
    return SUCCESS;
}

CUresult cuEventQuery(void* event) {
    if (!in_context() || event == NULL) return INVALID_CONTEXT;
    run_one();
    return ((fake_event*)event)->unreached == 0 ? SUCCESS : NOT_READY;
}

CUresult cuEventSynchronize(void* event) {
    if (!in_context() || event == NULL) return INVALID_CONTEXT;
    while (((fake_event*)event)->unreached != 0)
        if (!run_one()) return UNKNOWN; /* recorded on no queue: cannot happen on a real device */
    return SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char** text) {
    switch (error) {
        case INVALID_VALUE: *text = "invalid argument"; return SUCCESS;
        case NOT_INITIALIZED: *text = "initialization error"; return SUCCESS;
        case INVALID_DEVICE: *text = "invalid device ordinal"; return SUCCESS;
        case INVALID_CONTEXT: *text = "invalid device context"; return SUCCESS;
        case NOT_READY: *text = "device not ready"; return SUCCESS;
        case UNKNOWN: *text = "unknown error"; return SUCCESS;
        default: *text = NULL; return INVALID_VALUE;
    }
}

/* The tests' side. A kernel: `id` handed to the runner when the queue reaches it. */
void fake_cuda_set_kernel_runner(void (*runner)(long long)) {
    kernel_runner = runner;
}

void fake_cuda_launch(long long id) {
    item work = {ITEM_KERNEL, NULL, NULL, 0, NULL, id};
    enqueue(work);
}

long long fake_cuda_pending(void) {
    pthread_mutex_lock(&queue_lock);
    const long long pending = (long long)(queue_tail - queue_head);
    pthread_mutex_unlock(&queue_lock);
    return pending;
}

/* {contexts pushed on this thread, events alive, primary contexts retained, copies queued, last stream} */
void fake_cuda_state(long long* out) {
    out[0] = depth;
    out[1] = events_alive;
    out[2] = retained;
    out[3] = copies;
    out[4] = (long long)last_stream;
}
