// shoal._native.CudaCopier: the torch hand-off's host<->device copies and events, through the CUDA
// driver API loaded at run time (shoal neither links CUDA nor needs it installed).
//
// Why not torch's copy_() and Event: each torch call costs the trainer's thread a dispatch (10-20 us
// on a GPU server's CPU, as much as a kernel launch), and the thread that drives the policy is the
// loop's bottleneck when the policy is launch-bound. Here a batch's gather and copies are one call
// and an event's record, query or wait another, each a few driver calls.
//
// The "simulated" device (tests, every machine): device pointers are host memory; the work queued on
// any stream runs later, in order: one item per event query, all of it up to an event on its
// synchronize (as tests/test_handoff.py's simulated stream), so a protocol that let the host reuse
// memory before its copy ran would show other values than the numpy path's.
#include "cuda_copies.hpp"

#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "shoal/errors.hpp"
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

/// One device's copies and events: the driver's, or the simulated one's.
class Device {
public:
    virtual ~Device() = default;
    virtual void host_to_device(const Copy& copy, uintptr_t stream) = 0;
    virtual void device_to_host(const Copy& copy, uintptr_t stream) = 0;
    virtual CUevent new_event() = 0;
    virtual void destroy_event(CUevent event) noexcept = 0;
    virtual void record(CUevent event, uintptr_t stream) = 0;
    virtual bool query(CUevent event) = 0;
    virtual void synchronize(CUevent event) = 0;
    virtual void synchronize_device() = 0;
    virtual bool simulated() const noexcept { return false; }
};

/// The CUDA driver (libcuda), its device's primary context (the one the runtime and torch use)
/// made current around each call, so that any thread and any current device may call.
class DriverDevice final : public Device {
public:
    explicit DriverDevice(int ordinal) {
#if defined(SHOAL_OS_WINDOWS)
        const char* name = "nvcuda.dll";
#elif defined(SHOAL_OS_LINUX)
        const char* name = "libcuda.so.1";
#else
        const char* name = nullptr;
#endif
        if (name == nullptr) throw std::runtime_error("no CUDA driver on this operating system");
        std::string error;
        library_ = shoal::platform::open_library(name, &error);
        if (library_ == nullptr) throw std::runtime_error(std::string(name) + ": " + error);
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

    ~DriverDevice() override { release_(device_); }  // the library stays loaded: the process uses it

    void host_to_device(const Copy& c, uintptr_t stream) override {
        Current current(*this);
        check(htod_(std::get<0>(c), reinterpret_cast<const void*>(std::get<1>(c)), std::get<2>(c), as_stream(stream)),
              "cuMemcpyHtoDAsync");
    }

    void device_to_host(const Copy& c, uintptr_t stream) override {
        Current current(*this);
        check(dtoh_(reinterpret_cast<void*>(std::get<0>(c)), std::get<1>(c), std::get<2>(c), as_stream(stream)),
              "cuMemcpyDtoHAsync");
    }

    CUevent new_event() override {
        Current current(*this);
        CUevent event = nullptr;
        check(event_create_(&event, kEventDisableTiming), "cuEventCreate");
        return event;
    }

    void destroy_event(CUevent event) noexcept override {
        // At interpreter exit the driver may be shut down already: nothing is left to free then.
        if (push_(context_) != kSuccess) return;
        event_destroy_(event);
        CUcontext popped;
        pop_(&popped);
    }

    void record(CUevent event, uintptr_t stream) override {
        Current current(*this);
        check(event_record_(event, as_stream(stream)), "cuEventRecord");
    }

    bool query(CUevent event) override {
        Current current(*this);
        const CUresult result = event_query_(event);
        if (result == kNotReady) return false;
        check(result, "cuEventQuery");
        return true;
    }

    void synchronize(CUevent event) override {
        Current current(*this);
        check(event_synchronize_(event), "cuEventSynchronize");
    }

    void synchronize_device() override {
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

/// A device whose memory is the host's and whose one queue runs only when the host asks an event.
/// Python callables can be queued too (a test's "kernels"); it never releases the GIL.
class SimulatedDevice final : public Device {
public:
    void host_to_device(const Copy& c, uintptr_t) override { queue_copy(c); }
    void device_to_host(const Copy& c, uintptr_t) override { queue_copy(c); }

    CUevent new_event() override { return new unsigned(0); }  // the records it has not reached yet
    void destroy_event(CUevent event) noexcept override { delete static_cast<unsigned*>(event); }

    void record(CUevent event, uintptr_t) override {
        auto* unreached = static_cast<unsigned*>(event);
        ++*unreached;
        queue_.push_back([unreached] { --*unreached; });
    }

    bool query(CUevent event) override {
        run_one();
        return *static_cast<unsigned*>(event) == 0;
    }

    void synchronize(CUevent event) override {
        while (*static_cast<unsigned*>(event) != 0)
            if (!run_one()) throw std::logic_error("simulated device: an event recorded on no queue");
    }

    void synchronize_device() override {
        while (run_one()) {
        }
    }

    bool simulated() const noexcept override { return true; }

    void launch(py::function work) {
        queue_.push_back([work = std::move(work)] { work(); });
    }

    size_t pending() const noexcept { return queue_.size(); }

private:
    void queue_copy(const Copy& c) {
        queue_.push_back([c] {
            std::memcpy(reinterpret_cast<void*>(std::get<0>(c)), reinterpret_cast<const void*>(std::get<1>(c)),
                        std::get<2>(c));
        });
    }

    bool run_one() {
        if (queue_.empty()) return false;
        auto work = std::move(queue_.front());
        queue_.pop_front();
        work();
        return true;
    }

    std::deque<std::function<void()>> queue_;
};

/// The GIL released around a call to a real device (it may wait for the GPU); kept for a simulated one.
class ReleaseForDevice {
public:
    explicit ReleaseForDevice(const Device& device) {
        if (!device.simulated()) release_.emplace();
    }

private:
    std::optional<py::gil_scoped_release> release_;
};

/// An event of a CudaCopier's device.
class CudaEvent {
public:
    explicit CudaEvent(std::shared_ptr<Device> device) : device_(std::move(device)), event_(device_->new_event()) {}
    ~CudaEvent() { device_->destroy_event(event_); }
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;

    void record(uintptr_t stream) { device_->record(event_, stream); }
    bool query() { return device_->query(event_); }
    void synchronize() {
        ReleaseForDevice release(*device_);
        device_->synchronize(event_);
    }

private:
    std::shared_ptr<Device> device_;
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
    CudaCopier(int device, bool simulated)
        : device_(simulated ? std::shared_ptr<Device>(std::make_shared<SimulatedDevice>())
                            : std::shared_ptr<Device>(std::make_shared<DriverDevice>(device))) {}

    std::unique_ptr<CudaEvent> new_event() { return std::make_unique<CudaEvent>(device_); }

    void upload(const UploadPlan& plan, uintptr_t stream) {
        ReleaseForDevice release(*device_);
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
        ReleaseForDevice release(*device_);
        device_->synchronize_device();
    }

    bool simulated() const noexcept { return device_->simulated(); }

    void launch_simulated(py::function work) {
        auto* simulated = dynamic_cast<SimulatedDevice*>(device_.get());
        if (simulated == nullptr) throw shoal::UsageError("launch_simulated: this copier drives a real device");
        simulated->launch(std::move(work));
    }

    size_t pending_simulated() const {
        auto* simulated = dynamic_cast<const SimulatedDevice*>(device_.get());
        if (simulated == nullptr) throw shoal::UsageError("pending_simulated: this copier drives a real device");
        return simulated->pending();
    }

private:
    std::shared_ptr<Device> device_;
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
                           "Host<->device copies and events through the CUDA driver (loaded at run time), or a "
                           "simulated device whose memory is the host's. Addresses and streams are integers "
                           "(tensor.data_ptr(), stream.cuda_stream).")
        .def(py::init<int, bool>(), py::arg("device"), py::arg("simulated") = false,
             "RuntimeError, saying why, where the driver cannot be loaded or the device used.")
        .def("new_event", &CudaCopier::new_event)
        .def("upload", &CudaCopier::upload, py::arg("plan"), py::arg("stream"),
             "A plan's gathers, then its copies queued on `stream`.")
        .def("host_to_device", &CudaCopier::host_to_device, py::arg("destination"), py::arg("source"), py::arg("bytes"),
             py::arg("stream"))
        .def("device_to_host", &CudaCopier::device_to_host, py::arg("destination"), py::arg("source"), py::arg("bytes"),
             py::arg("stream"))
        .def("synchronize_device", &CudaCopier::synchronize_device,
             "Waits (GIL released) until the device has no work left.")
        .def_property_readonly("simulated", &CudaCopier::simulated)
        .def("launch_simulated", &CudaCopier::launch_simulated, py::arg("work"),
             "Simulated device only: queues a Python callable (a test's kernel) behind the queued work.")
        .def("pending_simulated", &CudaCopier::pending_simulated,
             "Simulated device only: how many items of work are queued and not run yet.");
}
