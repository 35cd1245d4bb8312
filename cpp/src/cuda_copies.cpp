// shoal._native.CudaCopier: the torch hand-off's host<->device copies and events, through the CUDA
// driver API loaded at run time (shoal neither links CUDA nor needs it installed).
//
// Why not torch's copy_() and Event: each torch call costs the trainer's thread a dispatch (10-20 us
// on a GPU server's CPU, as much as a kernel launch), and the thread that drives the policy is the
// loop's bottleneck when the policy is launch-bound. Here a batch's gather and copies are one call
// and an event's record, query or wait another, each a few driver calls.
//
// The driver library is the platform's (libcuda.so.1, nvcuda.dll) unless the caller names one: the tests
// load tests/fake_cuda_driver.c, a stand-in whose device memory is host memory and whose queued work runs
// only when the host asks an event (their one model of a device, on every machine).
#include "cuda_copies.hpp"

#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "shoal/platform/library.hpp"

namespace py = pybind11;

namespace {

// The driver API's types, as its header declares them (ABI-stable since CUDA 4).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;
using CUstream = void*;
using CUevent = void*;
constexpr CUresult kSuccess = 0;
constexpr CUresult kNotReady = 600;          // CUDA_ERROR_NOT_READY
constexpr unsigned kEventDisableTiming = 2;  // CU_EVENT_DISABLE_TIMING

/// (destination, source, bytes): host or device addresses as the caller's tensors give them.
using Copy = std::tuple<uintptr_t, uintptr_t, size_t>;

/// The CUDA driver (libcuda), its device's primary context (the one the runtime and torch use)
/// made current around each call, so that any thread and any current device may call.
class DriverDevice final {
public:
    DriverDevice(int ordinal, const std::string& driver) {
#if defined(SHOAL_OS_WINDOWS)
        const char* platform = "nvcuda.dll";
#elif defined(SHOAL_OS_LINUX)
        const char* platform = "libcuda.so.1";
#else
        const char* platform = nullptr;
#endif
        if (driver.empty() && platform == nullptr) throw std::runtime_error("no CUDA driver on this operating system");
        const std::string name = driver.empty() ? std::string(platform) : driver;
        std::string error;
        library_ = shoal::platform::open_library(name, &error);
        if (library_ == nullptr) throw std::runtime_error(name + ": " + error);
        bind(init_, "cuInit");
        bind(device_get_, "cuDeviceGet");
        bind(retain_, "cuDevicePrimaryCtxRetain");
        bind(release_, "cuDevicePrimaryCtxRelease_v2");
        bind(push_, "cuCtxPushCurrent_v2");
        bind(pop_, "cuCtxPopCurrent_v2");
        bind(context_synchronize_, "cuCtxSynchronize");
        bind(htod_, "cuMemcpyHtoDAsync_v2");
        bind(dtoh_, "cuMemcpyDtoHAsync_v2");
        bind(event_create_, "cuEventCreate");
        bind(event_destroy_, "cuEventDestroy_v2");
        bind(event_record_, "cuEventRecord");
        bind(event_query_, "cuEventQuery");
        bind(event_synchronize_, "cuEventSynchronize");
        bind(error_string_, "cuGetErrorString");
        check(init_(0), "cuInit");
        check(device_get_(&device_, ordinal), "cuDeviceGet");
        check(retain_(&context_, device_), "cuDevicePrimaryCtxRetain");
    }

    ~DriverDevice() { release_(device_); }  // the library stays loaded: the process uses it

    void host_to_device(const Copy& c, uintptr_t stream) {
        Current current(*this);
        check(htod_(std::get<0>(c), reinterpret_cast<const void*>(std::get<1>(c)), std::get<2>(c), as_stream(stream)),
              "cuMemcpyHtoDAsync");
    }

    void device_to_host(const Copy& c, uintptr_t stream) {
        Current current(*this);
        check(dtoh_(reinterpret_cast<void*>(std::get<0>(c)), std::get<1>(c), std::get<2>(c), as_stream(stream)),
              "cuMemcpyDtoHAsync");
    }

    CUevent new_event() {
        Current current(*this);
        CUevent event = nullptr;
        check(event_create_(&event, kEventDisableTiming), "cuEventCreate");
        return event;
    }

    void destroy_event(CUevent event) noexcept {
        // At interpreter exit the driver may be shut down already: nothing is left to free then.
        if (push_(context_) != kSuccess) return;
        event_destroy_(event);
        CUcontext popped;
        pop_(&popped);
    }

    void record(CUevent event, uintptr_t stream) {
        Current current(*this);
        check(event_record_(event, as_stream(stream)), "cuEventRecord");
    }

    bool query(CUevent event) {
        Current current(*this);
        const CUresult result = event_query_(event);
        if (result == kNotReady) return false;
        check(result, "cuEventQuery");
        return true;
    }

    void synchronize(CUevent event) {
        Current current(*this);
        check(event_synchronize_(event), "cuEventSynchronize");
    }

    void synchronize_device() {
        Current current(*this);
        check(context_synchronize_(), "cuCtxSynchronize");
    }

private:
    struct Current {  // the device's context current on this thread for one call
        explicit Current(DriverDevice& d) : device(d) {
            device.check(device.push_(device.context_), "cuCtxPushCurrent");
        }
        ~Current() {
            CUcontext popped;
            device.pop_(&popped);
        }
        DriverDevice& device;
    };

    static CUstream as_stream(uintptr_t stream) { return reinterpret_cast<CUstream>(stream); }

    template <class F>
    void bind(F& function, const char* name) {
        function = reinterpret_cast<F>(shoal::platform::find_symbol(library_, name));
        if (function == nullptr) throw std::runtime_error(std::string("the CUDA driver has no ") + name);
    }

    void check(CUresult result, const char* call) const {
        if (result == kSuccess) return;
        const char* text = nullptr;
        if (error_string_(result, &text) != kSuccess || text == nullptr) text = "unknown error";
        throw std::runtime_error(std::string(call) + " failed: CUDA error " + std::to_string(result) + " (" + text +
                                 ")");
    }

    void* library_ = nullptr;
    CUdevice device_ = 0;
    CUcontext context_ = nullptr;
    CUresult (*init_)(unsigned) = nullptr;
    CUresult (*device_get_)(CUdevice*, int) = nullptr;
    CUresult (*retain_)(CUcontext*, CUdevice) = nullptr;
    CUresult (*release_)(CUdevice) = nullptr;
    CUresult (*push_)(CUcontext) = nullptr;
    CUresult (*pop_)(CUcontext*) = nullptr;
    CUresult (*context_synchronize_)() = nullptr;
    CUresult (*htod_)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;
    CUresult (*dtoh_)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
    CUresult (*event_create_)(CUevent*, unsigned) = nullptr;
    CUresult (*event_destroy_)(CUevent) = nullptr;
    CUresult (*event_record_)(CUevent, CUstream) = nullptr;
    CUresult (*event_query_)(CUevent) = nullptr;
    CUresult (*event_synchronize_)(CUevent) = nullptr;
    CUresult (*error_string_)(CUresult, const char**) = nullptr;
};

/// An event of a CudaCopier's device.
class CudaEvent {
public:
    explicit CudaEvent(std::shared_ptr<DriverDevice> device)
        : device_(std::move(device)), event_(device_->new_event()) {}
    ~CudaEvent() { device_->destroy_event(event_); }
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;

    void record(uintptr_t stream) { device_->record(event_, stream); }
    bool query() { return device_->query(event_); }
    void synchronize() {
        py::gil_scoped_release release;  // it may wait for the GPU
        device_->synchronize(event_);
    }

private:
    std::shared_ptr<DriverDevice> device_;
    CUevent event_;
};

/// A batch's upload, fixed once: host-to-host gathers (small columns into one page-locked staging
/// array), then host-to-device copies.
struct UploadPlan {
    std::vector<Copy> gathers;
    std::vector<Copy> uploads;
};

class CudaCopier {
public:
    CudaCopier(int device, const std::string& driver) : device_(std::make_shared<DriverDevice>(device, driver)) {}

    std::unique_ptr<CudaEvent> new_event() { return std::make_unique<CudaEvent>(device_); }

    void upload(const UploadPlan& plan, uintptr_t stream) {
        py::gil_scoped_release release;
        for (const Copy& g : plan.gathers)
            std::memcpy(reinterpret_cast<void*>(std::get<0>(g)), reinterpret_cast<const void*>(std::get<1>(g)),
                        std::get<2>(g));
        for (const Copy& c : plan.uploads) device_->host_to_device(c, stream);
    }

    void host_to_device(uintptr_t destination, uintptr_t source, size_t bytes, uintptr_t stream) {
        device_->host_to_device({destination, source, bytes}, stream);
    }

    void device_to_host(uintptr_t destination, uintptr_t source, size_t bytes, uintptr_t stream) {
        device_->device_to_host({destination, source, bytes}, stream);
    }

    void synchronize_device() {
        py::gil_scoped_release release;
        device_->synchronize_device();
    }

private:
    std::shared_ptr<DriverDevice> device_;
};

}  // namespace

void register_cuda_copies(py::module_& m) {
    py::class_<UploadPlan>(m, "UploadPlan", "A batch's upload: host gathers, then host-to-device copies.")
        .def(py::init([](std::vector<Copy> gathers, std::vector<Copy> uploads) {
                 return UploadPlan{std::move(gathers), std::move(uploads)};
             }),
             py::arg("gathers"), py::arg("uploads"));
    py::class_<CudaEvent>(m, "CudaEvent", "An event of a CudaCopier's device.")
        .def("record", &CudaEvent::record, py::arg("stream"), "Marks the work queued so far on `stream`.")
        .def("query", &CudaEvent::query, "True once the work before its last record is done.")
        .def("synchronize", &CudaEvent::synchronize, "Waits (GIL released) for the work before its last record.");
    py::class_<CudaCopier>(m, "CudaCopier",
                           "Host<->device copies and events through the CUDA driver (loaded at run time). Addresses "
                           "and streams are integers (tensor.data_ptr(), stream.cuda_stream).")
        .def(py::init<int, const std::string&>(), py::arg("device"), py::arg("driver") = "",
             "`driver`: the driver library to load (default the platform's: libcuda.so.1, nvcuda.dll). "
             "RuntimeError, saying why, where the driver cannot be loaded or the device used.")
        .def("new_event", &CudaCopier::new_event)
        .def("upload", &CudaCopier::upload, py::arg("plan"), py::arg("stream"),
             "A plan's gathers, then its copies queued on `stream`.")
        .def("host_to_device", &CudaCopier::host_to_device, py::arg("destination"), py::arg("source"), py::arg("bytes"),
             py::arg("stream"))
        .def("device_to_host", &CudaCopier::device_to_host, py::arg("destination"), py::arg("source"), py::arg("bytes"),
             py::arg("stream"))
        .def("synchronize_device", &CudaCopier::synchronize_device,
             "Waits (GIL released) until the device has no work left.");
}
