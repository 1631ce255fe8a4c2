// mooncake_tier.store: Mooncake's Python store API (MooncakeDistributedStore and its helper
// types) over mooncake-tier. This file only converts between Python and DistributedStore and
// releases the GIL around every store call; docs/PYTHON.md is the user's page.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <iterator>
#include <limits>
#include <span>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "python/src/distributed_store.h"
#include "python/src/error_codes.h"
#include "python/src/host_mem_allocator.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace py = pybind11;
using mooncake::Result;
using mooncake::ReplicaState;
using mooncake::Tier;
using mooncake::py::DistributedStore;
using mooncake::py::ReplicaInfo;
using mooncake::py::SetupOptions;
using mooncake::py::WritePlacement;

namespace {

// Mooncake's write options, every field it has, so an engine that sets one does not fall back
// to another path. Every one is honoured: replica_num (MEMORY copies on distinct nodes),
// preferred_segment(s) (one copy each, in order), prefer_alloc_in_same_node, with_soft_pin /
// soft_pin_ttl_ms and with_hard_pin (core/master/pin_table.h), group_ids
// (core/master/group_table.h), tenant_id (the store's own, or refused).
struct ReplicateConfig {
    size_t replica_num = 1;
    bool with_soft_pin = false;
    uint64_t soft_pin_ttl_ms = 0;
    bool with_hard_pin = false;
    std::string preferred_segment;
    std::vector<std::string> preferred_segments;
    bool prefer_alloc_in_same_node = false;
    std::vector<std::string> group_ids;
    std::string tenant_id;
};

// Where and how a write lands (DistributedStore's `preferred`). The node, by name: Mooncake's
// preferred_segment, else the first of preferred_segments, else this store's own node for
// prefer_alloc_in_same_node; "" for no preference. With replica_num > 1, the copies past the
// first go to the rest of preferred_segments first (one copy per segment, as Mooncake places
// them), then where the master finds room. The pins: a soft pin for soft_pin_ttl_ms (0: the
// master's default_kv_soft_pin_ttl_ms), a hard pin.
WritePlacement Placement(const DistributedStore& store, const ReplicateConfig& c) {
    WritePlacement out;
    if (!c.preferred_segment.empty()) {
        out.segment = c.preferred_segment;
    } else if (!c.preferred_segments.empty()) {
        out.segment = c.preferred_segments.front();
    } else if (c.prefer_alloc_in_same_node) {
        out.segment = store.hostname();
    }
    // 0 stays 0 (refused as Mooncake's INVALID_PARAMS); past 2^32 - 1 is "every node".
    out.pin.replicas = static_cast<uint32_t>(
        std::min<size_t>(c.replica_num, std::numeric_limits<uint32_t>::max()));
    for (const std::string& segment : c.preferred_segments) {
        if (segment != out.segment) out.copy_segments.push_back(segment);
    }
    out.pin.soft = c.with_soft_pin;
    if (c.with_soft_pin) out.pin.soft_ttl = std::chrono::milliseconds(c.soft_pin_ttl_ms);
    out.pin.hard = c.with_hard_pin;
    out.groups = c.group_ids;
    out.tenant = c.tenant_id;
    return out;
}

struct ExistOptions {
    bool prefetch_to_memory = false;
};

enum class ReplicaStatus { UNDEFINED = 0, INITIALIZED, PROCESSING, COMPLETE, REMOVED, FAILED };

struct ReplicaDescriptor {
    ReplicaInfo info;
    ReplicaStatus status() const {
        return info.state == ReplicaState::kComplete ? ReplicaStatus::COMPLETE
                                                     : ReplicaStatus::PROCESSING;
    }
    std::string type() const { return info.tier == Tier::kMemory ? "MEMORY" : "LOCAL_DISK"; }
};

// The bytes of one value, readable through the buffer protocol (batch_get_buffer).
struct BufferHandle {
    std::string bytes;
};

uint64_t SizeArg(const py::handle& value, const char* name) {
    if (py::isinstance<py::int_>(value)) {
        long long v = value.cast<long long>();
        if (v < 0) throw std::invalid_argument(std::string(name) + " must not be negative");
        return static_cast<uint64_t>(v);
    }
    auto parsed = mooncake::py::ParseHumanSize(py::str(value).cast<std::string>());
    if (!parsed.ok()) throw std::invalid_argument(std::string(name) + ": " + parsed.status().message());
    return *parsed;
}

bool BoolArg(const py::handle& value) {
    if (py::isinstance<py::bool_>(value) || py::isinstance<py::int_>(value)) {
        return value.cast<bool>();
    }
    std::string s = py::str(value).cast<std::string>();
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s == "1" || s == "true" || s == "yes" || s == "on";
}

// Transfer-engine settings mean nothing here (bytes move on mooncake-tier's data channel: TCP,
// or memcpy / a shared pool on the same host; there is no RDMA path): said once per process
// when a caller passes one that would mean something to Mooncake, never silently.
void NoteIgnoredTransferSettings(const std::string& protocol, const std::string& devices,
                                 bool engine, const std::vector<std::string>& other_keys) {
    const bool rdma = !protocol.empty() && protocol != "tcp";
    if (!rdma && devices.empty() && !engine && other_keys.empty()) return;
    static std::once_flag once;
    std::call_once(once, [&] {
        std::string others;
        for (const std::string& k : other_keys) others += (others.empty() ? "" : ", ") + k;
        spdlog::info("MooncakeDistributedStore.setup: protocol '{}', rdma devices '{}'{}{} are "
                     "transfer-engine settings that mooncake-tier ignores: bytes move on its own "
                     "data channel (TCP; memcpy or a shared pool on the same host) "
                     "(docs/PYTHON.md; logged once)",
                     protocol, devices, engine ? ", a transfer engine" : "",
                     others.empty() ? "" : ", " + others);
    });
}

int SetupFrom(DistributedStore& store, const SetupOptions& options) {
    py::gil_scoped_release release;
    return store.Setup(options);
}

// setup(config_dict): Mooncake's keys; sizes as ints or "16MB"; unknown keys ignored.
int SetupDict(DistributedStore& store, const py::dict& config) {
    SetupOptions o;
    std::string protocol, devices;
    std::vector<std::string> others;
    try {
        for (auto item : config) {
            std::string k = py::str(item.first).cast<std::string>();
            const py::handle v = item.second;
            if (k == "local_hostname") o.local_hostname = py::str(v).cast<std::string>();
            else if (k == "global_segment_size") o.global_segment_size = SizeArg(v, "global_segment_size");
            else if (k == "local_buffer_size") o.local_buffer_size = SizeArg(v, "local_buffer_size");
            else if (k == "master_server_addr") o.master_server_addr = py::str(v).cast<std::string>();
            else if (k == "enable_ssd_offload") o.enable_ssd_offload = BoolArg(v);
            else if (k == "ssd_offload_path") o.ssd_offload_path = py::str(v).cast<std::string>();
            else if (k == "ssd_offload_size") o.ssd_offload_size = SizeArg(v, "ssd_offload_size");
            else if (k == "tenant_id") o.tenant_id = py::str(v).cast<std::string>();
            else if (k == "protocol") protocol = py::str(v).cast<std::string>();
            else if (k == "rdma_devices" || k == "device_name") devices = py::str(v).cast<std::string>();
            else if (k != "metadata_server") others.push_back(k);  // transfer-engine settings
        }
    } catch (const std::exception& e) {
        spdlog::error("MooncakeDistributedStore.setup: {}", e.what());
        return mooncake::py::kInvalidParams;
    }
    NoteIgnoredTransferSettings(protocol, devices, /*engine=*/false, others);
    return SetupFrom(store, o);
}

int SetupArgs(DistributedStore& store, const std::string& local_hostname,
              const std::string& /*metadata_server: transfer engine only*/,
              const py::object& global_segment_size, const py::object& local_buffer_size,
              const std::string& protocol, const std::string& rdma_devices,
              const std::string& master_server_addr, const py::object& engine,
              bool enable_ssd_offload, const std::string& ssd_offload_path,
              const py::kwargs& others) {
    SetupOptions o;
    std::vector<std::string> ignored;
    for (auto item : others) {
        std::string k = py::str(item.first).cast<std::string>();
        if (k == "tenant_id") o.tenant_id = py::str(item.second).cast<std::string>();
        else ignored.push_back(k);  // enable_client_http_server, client_http_port, ...
    }
    NoteIgnoredTransferSettings(protocol, rdma_devices, !engine.is_none(), ignored);
    o.local_hostname = local_hostname;
    o.master_server_addr = master_server_addr;
    o.enable_ssd_offload = enable_ssd_offload;
    o.ssd_offload_path = ssd_offload_path;
    try {
        o.global_segment_size = SizeArg(global_segment_size, "global_segment_size");
        o.local_buffer_size = SizeArg(local_buffer_size, "local_buffer_size");
    } catch (const std::exception& e) {
        spdlog::error("MooncakeDistributedStore.setup: {}", e.what());
        return mooncake::py::kInvalidParams;
    }
    return SetupFrom(store, o);
}

// setup_dummy(mem_pool_size, local_buffer_size, server_address): SGLang's standalone-storage
// mode. Mooncake attaches to the real client process at server_address and hands it the
// shared-memory pool; here the store becomes a pure client (no embedded node) of the local
// mooncaked whose --listen address server_address is, and each MooncakeHostMemAllocator pool
// given to register_buffer is handed to that daemon, which copies bytes in and out of it
// (python/src/shared_pool_transport.h). mem_pool_size is only checked (docs/PYTHON.md).
int SetupDummy(DistributedStore& store, const py::object& mem_pool_size,
               const py::object& local_buffer_size, const std::string& server_address) {
    SetupOptions o;
    o.global_segment_size = 0;
    o.master_server_addr = server_address;
    o.shared_pools = true;
    try {
        (void)SizeArg(mem_pool_size, "mem_pool_size");
        o.local_buffer_size = SizeArg(local_buffer_size, "local_buffer_size");
    } catch (const std::exception& e) {
        spdlog::error("MooncakeDistributedStore.setup_dummy: {}", e.what());
        return mooncake::py::kInvalidParams;
    }
    if (server_address.empty()) {
        spdlog::error("MooncakeDistributedStore.setup_dummy: empty server_address (the local "
                      "mooncaked's --listen address, HOST:PORT)");
        return mooncake::py::kInvalidParams;
    }
    return SetupFrom(store, o);
}

py::list Descriptors(const std::vector<ReplicaInfo>& infos) {
    py::list out;
    for (const ReplicaInfo& i : infos) out.append(ReplicaDescriptor{i});
    return out;
}

void* Ptr(uintptr_t address) { return reinterpret_cast<void*>(address); }

// A value is stored as the buffer's bytes in memory order, so only a C-contiguous buffer
// (bytes, bytearray, a plain memoryview or array) can be passed without a copy.
bool IsCContiguous(const py::buffer_info& info) {
    py::ssize_t expected = info.itemsize;
    for (py::ssize_t i = info.ndim - 1; i >= 0; --i) {
        if (info.shape[i] > 1 && info.strides[i] != expected) return false;
        expected *= info.shape[i];
    }
    return true;
}

// The bytes of each value of a Python list (its buffer infos kept alive in `infos`); false
// when one is not C-contiguous.
bool ValueSpans(const py::list& values, std::vector<py::buffer_info>& infos,
                std::vector<const void*>& data, std::vector<size_t>& sizes) {
    for (auto v : values) {
        infos.push_back(py::reinterpret_borrow<py::buffer>(v).request());
        if (!IsCContiguous(infos.back())) return false;
        data.push_back(infos.back().ptr);
        sizes.push_back(static_cast<size_t>(infos.back().size * infos.back().itemsize));
    }
    return true;
}

}  // namespace

PYBIND11_MODULE(store, m) {
    m.doc() = "mooncake-tier's drop-in for Mooncake's Python store API (see docs/PYTHON.md)";
    // A library inside an engine logs to stderr, never into the engine's stdout.
    // $MOONCAKE_LOG_LEVEL (trace|debug|info|warn|error|off) sets the level; default info.
    spdlog::set_default_logger(spdlog::stderr_color_mt("mooncake_tier"));
    if (const char* level = std::getenv("MOONCAKE_LOG_LEVEL")) {
        spdlog::set_level(spdlog::level::from_str(level));
    }
    // Stores still open when the interpreter exits (a test class's store, an engine killed
    // by SIGTERM through Python) leave the cluster like close() does.
    py::module_::import("atexit").attr("register")(py::cpp_function([] {
        py::gil_scoped_release release;
        DistributedStore::CloseAll();
    }));

    py::class_<ReplicateConfig>(m, "ReplicateConfig")
        .def(py::init<>())
        .def_readwrite("replica_num", &ReplicateConfig::replica_num)
        .def_readwrite("with_soft_pin", &ReplicateConfig::with_soft_pin)
        .def_readwrite("soft_pin_ttl_ms", &ReplicateConfig::soft_pin_ttl_ms)
        .def_readwrite("with_hard_pin", &ReplicateConfig::with_hard_pin)
        .def_readwrite("preferred_segment", &ReplicateConfig::preferred_segment)
        .def_readwrite("preferred_segments", &ReplicateConfig::preferred_segments)
        .def_readwrite("prefer_alloc_in_same_node", &ReplicateConfig::prefer_alloc_in_same_node)
        .def_readwrite("group_ids", &ReplicateConfig::group_ids)
        .def_readwrite("tenant_id", &ReplicateConfig::tenant_id)
        .def("__str__", [](const ReplicateConfig& c) {
            std::ostringstream s;
            s << "ReplicateConfig(replica_num=" << c.replica_num
              << ", with_soft_pin=" << (c.with_soft_pin ? "True" : "False")
              << ", with_hard_pin=" << (c.with_hard_pin ? "True" : "False")
              << ", preferred_segment='" << c.preferred_segment << "')";
            return s.str();
        })
        .def("__repr__", [](const ReplicateConfig& c) {
            return "ReplicateConfig(replica_num=" + std::to_string(c.replica_num) + ")";
        });

    py::class_<ExistOptions>(m, "ExistOptions")
        .def(py::init<>())
        .def_readwrite("prefetch_to_memory", &ExistOptions::prefetch_to_memory);

    py::enum_<ReplicaStatus>(m, "ReplicaStatus")
        .value("UNDEFINED", ReplicaStatus::UNDEFINED)
        .value("INITIALIZED", ReplicaStatus::INITIALIZED)
        .value("PROCESSING", ReplicaStatus::PROCESSING)
        .value("COMPLETE", ReplicaStatus::COMPLETE)
        .value("REMOVED", ReplicaStatus::REMOVED)
        .value("FAILED", ReplicaStatus::FAILED);

    py::class_<ReplicaDescriptor>(m, "ReplicaDescriptor")
        .def_property_readonly("status", &ReplicaDescriptor::status)
        .def_property_readonly("type", &ReplicaDescriptor::type)
        .def_property_readonly("size", [](const ReplicaDescriptor& d) { return d.info.size; })
        .def_property_readonly("node", [](const ReplicaDescriptor& d) { return d.info.node; })
        .def("is_memory_replica",
             [](const ReplicaDescriptor& d) { return d.info.tier == Tier::kMemory; })
        .def("is_local_disk_replica",
             [](const ReplicaDescriptor& d) { return d.info.tier == Tier::kLocalDisk; })
        // Mooncake's DISK tier is a shared file system; mooncake-tier has none.
        .def("is_disk_replica", [](const ReplicaDescriptor&) { return false; })
        .def("__repr__", [](const ReplicaDescriptor& d) {
            return "ReplicaDescriptor(type=" + d.type() + ", status=" +
                   (d.info.state == ReplicaState::kComplete ? "COMPLETE" : "PROCESSING") +
                   ", node=" + d.info.node + ")";
        });

    py::class_<BufferHandle>(m, "BufferHandle", py::buffer_protocol())
        .def("size", [](const BufferHandle& b) { return b.bytes.size(); })
        .def("__len__", [](const BufferHandle& b) { return b.bytes.size(); })
        .def("ptr", [](BufferHandle& b) { return reinterpret_cast<uintptr_t>(b.bytes.data()); })
        .def_buffer([](BufferHandle& b) {
            return py::buffer_info(b.bytes.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                                   {b.bytes.size()}, {1}, /*readonly=*/false);
        });

    using mooncake::py::HostMemAllocator;
    struct HostMemAllocatorHandle {};  // the allocations are process-wide (host_mem_allocator.h)
    py::class_<HostMemAllocatorHandle>(m, "MooncakeHostMemAllocator")
        .def(py::init<>())
        .def("alloc", [](HostMemAllocatorHandle&, size_t size) {
            uintptr_t ptr = 0;
            {
                py::gil_scoped_release r;
                ptr = HostMemAllocator::Alloc(size);
            }
            // Raised as Mooncake's does: a 0 would reach ctypes.from_address in the caller.
            if (ptr == 0) throw std::runtime_error("MooncakeHostMemAllocator.alloc(" +
                                                   std::to_string(size) + ") failed (see log)");
            return ptr;
        }, py::arg("size"))
        .def("free", [](HostMemAllocatorHandle&, uintptr_t ptr) {
            py::gil_scoped_release r;
            return HostMemAllocator::Free(ptr);
        }, py::arg("ptr"));

    using S = DistributedStore;
    py::class_<S>(m, "MooncakeDistributedStore")
        .def(py::init<>())
        .def("setup", &SetupDict, py::arg("config"))
        .def("setup", &SetupArgs, py::arg("local_hostname"), py::arg("metadata_server"),
             py::arg("global_segment_size") = 16 << 20, py::arg("local_buffer_size") = 16 << 20,
             py::arg("protocol") = "tcp", py::arg("rdma_devices") = "",
             py::arg("master_server_addr") = "127.0.0.1:50051", py::arg("engine") = py::none(),
             py::arg("enable_ssd_offload") = false, py::arg("ssd_offload_path") = "")
        .def("init_all", [](S& s, const std::string&, const std::string&, const py::object& seg) {
            SetupOptions o;
            o.global_segment_size = SizeArg(seg, "global_segment_size");
            return SetupFrom(s, o);
        }, py::arg("protocol") = "tcp", py::arg("device_name") = "",
           py::arg("mount_segment_size") = 16 << 20)
        .def("setup_dummy", &SetupDummy, py::arg("mem_pool_size"), py::arg("local_buffer_size"),
             py::arg("server_address"))
        .def("close", [](S& s) { py::gil_scoped_release r; return s.Close(); })
        // Not Mooncake's: how many transfers went through a shared pool (setup_dummy), for
        // tests and benchmarks that must know no byte crossed a socket.
        .def("shared_pool_transfer_count", &S::shared_pool_transfers)
        .def("put", [](S& s, const std::string& key, const py::buffer& value,
                       const ReplicateConfig& config) {
            const WritePlacement preferred = Placement(s, config);
            py::buffer_info info = value.request();
            if (!IsCContiguous(info)) return static_cast<int>(mooncake::py::kInvalidParams);
            size_t n = static_cast<size_t>(info.size * info.itemsize);
            py::gil_scoped_release r;
            return s.Put(key, info.ptr, n, /*staged=*/true, preferred);
        }, py::arg("key"), py::arg("value"), py::arg("config") = ReplicateConfig{})
        .def("put_from", [](S& s, const std::string& key, uintptr_t buffer, size_t size,
                            const ReplicateConfig& config) {
            const WritePlacement preferred = Placement(s, config);
            py::gil_scoped_release r;
            return s.Put(key, Ptr(buffer), size, /*staged=*/false, preferred);
        }, py::arg("key"), py::arg("buffer_ptr"), py::arg("size"),
           py::arg("config") = ReplicateConfig{})
        .def("put_batch", [](S& s, const std::vector<std::string>& keys, const py::list& values,
                             const ReplicateConfig& config) {
            const WritePlacement preferred = Placement(s, config);
            std::vector<py::buffer_info> infos;
            std::vector<const void*> data;
            std::vector<size_t> sizes;
            if (!ValueSpans(values, infos, data, sizes) || keys.size() != data.size()) {
                return static_cast<int>(mooncake::py::kInvalidParams);
            }
            py::gil_scoped_release r;
            for (int rc : s.BatchPut(keys, data, sizes, /*staged=*/true, preferred)) {
                if (rc != 0) return rc;
            }
            return 0;
        }, py::arg("keys"), py::arg("values"), py::arg("config") = ReplicateConfig{})
        .def("batch_put_from", [](S& s, const std::vector<std::string>& keys,
                                  const std::vector<uintptr_t>& buffers,
                                  const std::vector<size_t>& sizes, const ReplicateConfig& config) {
            const WritePlacement preferred = Placement(s, config);
            std::vector<const void*> data;
            for (uintptr_t b : buffers) data.push_back(Ptr(b));
            py::gil_scoped_release r;
            return s.BatchPut(keys, data, sizes, /*staged=*/false, preferred);
        }, py::arg("keys"), py::arg("buffer_ptrs"), py::arg("sizes"),
           py::arg("config") = ReplicateConfig{})
        .def("put_parts", [](S& s, const std::string& key, const py::args& parts,
                             const ReplicateConfig& config) {
            const WritePlacement preferred = Placement(s, config);
            std::vector<py::buffer_info> infos;
            std::vector<std::span<const std::byte>> spans;
            for (auto part : parts) {
                if (!py::isinstance<py::buffer>(part)) {
                    spdlog::error("put_parts: part {} is not a bytes-like object", spans.size());
                    return static_cast<int>(mooncake::py::kInvalidParams);
                }
                infos.push_back(py::reinterpret_borrow<py::buffer>(part).request());
                if (!IsCContiguous(infos.back())) {
                    spdlog::error("put_parts: part {} is not C-contiguous", spans.size());
                    return static_cast<int>(mooncake::py::kInvalidParams);
                }
                spans.emplace_back(static_cast<const std::byte*>(infos.back().ptr),
                                   static_cast<size_t>(infos.back().size * infos.back().itemsize));
            }
            if (spans.empty()) return static_cast<int>(mooncake::py::kInvalidParams);
            py::gil_scoped_release r;
            return s.PutParts(key, spans, preferred);
        }, py::arg("key"), py::arg("config") = ReplicateConfig{})
        .def("upsert", [](S& s, const std::string& key, const py::buffer& value,
                          const ReplicateConfig& config) {
            const WritePlacement preferred = Placement(s, config);
            py::buffer_info info = value.request();
            if (!IsCContiguous(info)) return static_cast<int>(mooncake::py::kInvalidParams);
            size_t n = static_cast<size_t>(info.size * info.itemsize);
            py::gil_scoped_release r;
            return s.Upsert(key, info.ptr, n, /*staged=*/true, preferred);
        }, py::arg("key"), py::arg("value"), py::arg("config") = ReplicateConfig{})
        .def("upsert_from", [](S& s, const std::string& key, uintptr_t buffer, size_t size,
                               const ReplicateConfig& config) {
            const WritePlacement preferred = Placement(s, config);
            py::gil_scoped_release r;
            return s.Upsert(key, Ptr(buffer), size, /*staged=*/false, preferred);
        }, py::arg("key"), py::arg("buffer_ptr"), py::arg("size"),
           py::arg("config") = ReplicateConfig{})
        .def("upsert_batch", [](S& s, const std::vector<std::string>& keys,
                                const py::list& values, const ReplicateConfig& config) {
            const WritePlacement preferred = Placement(s, config);
            std::vector<py::buffer_info> infos;
            std::vector<const void*> data;
            std::vector<size_t> sizes;
            if (!ValueSpans(values, infos, data, sizes) || keys.size() != data.size()) {
                return static_cast<int>(mooncake::py::kInvalidParams);
            }
            py::gil_scoped_release r;
            for (int rc : s.BatchUpsert(keys, data, sizes, /*staged=*/true, preferred)) {
                if (rc != 0) return rc;
            }
            return 0;
        }, py::arg("keys"), py::arg("values"), py::arg("config") = ReplicateConfig{})
        .def("batch_upsert_from", [](S& s, const std::vector<std::string>& keys,
                                     const std::vector<uintptr_t>& buffers,
                                     const std::vector<size_t>& sizes,
                                     const ReplicateConfig& config) {
            const WritePlacement preferred = Placement(s, config);
            std::vector<const void*> data;
            for (uintptr_t b : buffers) data.push_back(Ptr(b));
            py::gil_scoped_release r;
            return s.BatchUpsert(keys, data, sizes, /*staged=*/false, preferred);
        }, py::arg("keys"), py::arg("buffer_ptrs"), py::arg("sizes"),
           py::arg("config") = ReplicateConfig{})
        .def("batch_put_from_multi_buffers", [](S& s, const std::vector<std::string>& keys,
                                                const std::vector<std::vector<uintptr_t>>& ptrs,
                                                const std::vector<std::vector<size_t>>& sizes,
                                                const ReplicateConfig& config) {
            const WritePlacement preferred = Placement(s, config);
            py::gil_scoped_release r;
            return s.BatchPutMulti(keys, ptrs, sizes, /*upsert=*/false, preferred);
        }, py::arg("keys"), py::arg("all_buffer_ptrs"), py::arg("all_sizes"),
           py::arg("config") = ReplicateConfig{})
        .def("batch_upsert_from_multi_buffers", [](S& s, const std::vector<std::string>& keys,
                                                   const std::vector<std::vector<uintptr_t>>& ptrs,
                                                   const std::vector<std::vector<size_t>>& sizes,
                                                   const ReplicateConfig& config) {
            const WritePlacement preferred = Placement(s, config);
            py::gil_scoped_release r;
            return s.BatchPutMulti(keys, ptrs, sizes, /*upsert=*/true, preferred);
        }, py::arg("keys"), py::arg("all_buffer_ptrs"), py::arg("all_sizes"),
           py::arg("config") = ReplicateConfig{})
        .def("batch_get_into_multi_buffers", [](S& s, const std::vector<std::string>& keys,
                                                const std::vector<std::vector<uintptr_t>>& ptrs,
                                                const std::vector<std::vector<size_t>>& sizes,
                                                bool /*prefer_alloc_in_same_node*/) {
            py::gil_scoped_release r;
            return s.BatchGetIntoMulti(keys, ptrs, sizes);
        }, py::arg("keys"), py::arg("all_buffer_ptrs"), py::arg("all_sizes"),
           py::arg("prefer_alloc_in_same_node") = false)
        // Mooncake's session API for layer-wise transfers (python/src/range_sessions.h).
        .def("batch_put_session_start", [](S& s, const std::vector<std::string>& keys,
                                           const std::vector<uint64_t>& sizes,
                                           const ReplicateConfig& config) {
            const WritePlacement preferred = Placement(s, config);
            py::gil_scoped_release r;
            return s.BatchPutSessionStart(keys, sizes, preferred);
        }, py::arg("keys"), py::arg("sizes"), py::arg("config") = ReplicateConfig{})
        .def("batch_put_from_multi_buffer_ranges",
             [](S& s, const std::vector<std::string>& keys,
                const std::vector<std::vector<uintptr_t>>& ptrs,
                const std::vector<std::vector<size_t>>& sizes,
                const std::vector<std::vector<uint64_t>>& offsets) {
            py::gil_scoped_release r;
            return s.BatchPutFromMultiBufferRanges(keys, ptrs, sizes, offsets);
        }, py::arg("keys"), py::arg("all_buffer_ptrs"), py::arg("all_sizes"),
           py::arg("all_dst_offsets"))
        .def("batch_put_session_end", [](S& s, const std::vector<std::string>& keys) {
            py::gil_scoped_release r;
            return s.BatchPutSessionEnd(keys);
        }, py::arg("keys"))
        .def("batch_put_session_revoke", [](S& s, const std::vector<std::string>& keys) {
            py::gil_scoped_release r;
            return s.BatchPutSessionRevoke(keys);
        }, py::arg("keys"))
        .def("batch_get_session_start", [](S& s, const std::vector<std::string>& keys) {
            py::gil_scoped_release r;
            return s.BatchGetSessionStart(keys);
        }, py::arg("keys"))
        // SGLang's direct linker (through getattr): the codes, and per key where its reads
        // come from, "memory" or "local_disk" (None for a key not found), for its metrics.
        .def("batch_get_session_start_with_sources", [](S& s, const std::vector<std::string>& keys) {
            std::vector<std::optional<Tier>> tiers;
            std::vector<int> codes;
            {
                py::gil_scoped_release r;
                codes = s.BatchGetSessionStart(keys, &tiers);
            }
            py::list sources;
            for (const std::optional<Tier>& t : tiers) {
                if (!t) {
                    sources.append(py::none());
                } else {
                    sources.append(*t == Tier::kMemory ? "memory" : "local_disk");
                }
            }
            return py::make_tuple(codes, sources);
        }, py::arg("keys"))
        .def("batch_get_into_multi_buffer_ranges",
             [](S& s, const std::vector<std::string>& keys,
                const std::vector<std::vector<uintptr_t>>& ptrs,
                const std::vector<std::vector<size_t>>& sizes,
                const std::vector<std::vector<uint64_t>>& offsets) {
            py::gil_scoped_release r;
            return s.BatchGetIntoMultiBufferRanges(keys, ptrs, sizes, offsets);
        }, py::arg("keys"), py::arg("all_buffer_ptrs"), py::arg("all_sizes"),
           py::arg("all_src_offsets"))
        .def("batch_get_session_end", [](S& s, const std::vector<std::string>& keys) {
            py::gil_scoped_release r;
            return s.BatchGetSessionEnd(keys);
        }, py::arg("keys"))
        .def("get", [](S& s, const std::string& key) {
            Result<std::string> v = Result<std::string>(std::string());
            {
                py::gil_scoped_release r;
                v = s.Get(key);
            }
            return v.ok() ? py::bytes(*v) : py::bytes();
        }, py::arg("key"))
        .def("get_batch", [](S& s, const std::vector<std::string>& keys) {
            std::vector<Result<std::string>> vs;
            {
                py::gil_scoped_release r;
                vs = s.BatchGet(keys);
            }
            py::list out;
            for (auto& v : vs) out.append(v.ok() ? py::bytes(*v) : py::bytes());
            return out;
        }, py::arg("keys"))
        .def("get_buffer", [](S& s, const std::string& key) -> py::object {
            Result<std::string> v = Result<std::string>(std::string());
            {
                py::gil_scoped_release r;
                v = s.Get(key);
            }
            if (!v.ok()) return py::none();
            return py::cast(BufferHandle{std::move(*v)});
        }, py::arg("key"))
        .def("batch_get_buffer", [](S& s, const std::vector<std::string>& keys) {
            std::vector<Result<std::string>> vs;
            {
                py::gil_scoped_release r;
                vs = s.BatchGet(keys);
            }
            py::list out;
            for (auto& v : vs) {
                if (v.ok()) out.append(BufferHandle{std::move(*v)});
                else out.append(py::none());
            }
            return out;
        }, py::arg("keys"))
        .def("get_into", [](S& s, const std::string& key, uintptr_t buffer, size_t size) {
            py::gil_scoped_release r;
            return s.GetInto(key, Ptr(buffer), size);
        }, py::arg("key"), py::arg("buffer_ptr"), py::arg("size"))
        .def("batch_get_into", [](S& s, const std::vector<std::string>& keys,
                                  const std::vector<uintptr_t>& buffers,
                                  const std::vector<size_t>& sizes) {
            py::gil_scoped_release r;
            return s.BatchGetInto(keys, buffers, sizes);
        }, py::arg("keys"), py::arg("buffer_ptrs"), py::arg("sizes"))
        .def("get_into_ranges", [](S& s, const std::vector<uintptr_t>& buffers,
                                   const std::vector<std::vector<std::string>>& keys,
                                   const std::vector<std::vector<std::vector<uint64_t>>>& dst,
                                   const std::vector<std::vector<std::vector<uint64_t>>>& src,
                                   const std::vector<std::vector<std::vector<uint64_t>>>& sizes) {
            py::gil_scoped_release r;
            return s.GetIntoRanges(buffers, keys, dst, src, sizes);
        }, py::arg("buffer_ptrs"), py::arg("keys"), py::arg("dst_offsets"),
           py::arg("src_offsets"), py::arg("sizes"))
        .def("get_size", [](S& s, const std::string& key) {
            py::gil_scoped_release r;
            return s.GetSize(key);
        }, py::arg("key"))
        .def("is_exist", [](S& s, const std::string& key, const py::object& options) {
            bool prefetch = !options.is_none() && options.cast<ExistOptions>().prefetch_to_memory;
            py::gil_scoped_release r;
            return s.IsExist(key, prefetch);
        }, py::arg("key"), py::arg("options") = py::none())
        .def("batch_is_exist", [](S& s, const std::vector<std::string>& keys,
                                  const py::object& options) {
            bool prefetch = !options.is_none() && options.cast<ExistOptions>().prefetch_to_memory;
            py::gil_scoped_release r;
            return s.BatchIsExist(keys, prefetch);
        }, py::arg("keys"), py::arg("options") = py::none())
        .def("get_replica_desc", [](S& s, const std::string& key) {
            Result<std::vector<ReplicaInfo>> d = Result<std::vector<ReplicaInfo>>(std::vector<ReplicaInfo>{});
            {
                py::gil_scoped_release r;
                d = s.GetReplicaDesc(key);
            }
            return d.ok() ? Descriptors(*d) : py::list();
        }, py::arg("key"))
        .def("batch_get_replica_desc", [](S& s, const std::vector<std::string>& keys) {
            std::vector<Result<std::vector<ReplicaInfo>>> all;
            {
                py::gil_scoped_release r;
                all = s.BatchGetReplicaDesc(keys);  // one round trip
            }
            py::dict out;
            for (size_t i = 0; i < keys.size(); ++i) {
                if (all[i].ok()) out[py::str(keys[i])] = Descriptors(*all[i]);
            }
            return out;
        }, py::arg("keys"))
        .def("remove", [](S& s, const std::string& key, bool force) {
            py::gil_scoped_release r;
            return s.Remove(key, force);
        }, py::arg("key"), py::arg("force") = false)
        .def("batch_remove", [](S& s, const std::vector<std::string>& keys, bool force) {
            py::gil_scoped_release r;
            return s.BatchRemove(keys, force);
        }, py::arg("keys"), py::arg("force") = false)
        .def("remove_by_regex", [](S& s, const std::string& pattern, bool force) {
            py::gil_scoped_release r;
            return s.RemoveByRegex(pattern, force);
        }, py::arg("regex_pattern"), py::arg("force") = false)
        .def("remove_all", [](S& s, bool force) {
            py::gil_scoped_release r;
            return s.RemoveAll(force);
        }, py::arg("force") = false)
        .def("register_buffer", [](S& s, uintptr_t buffer, size_t size) {
            return s.RegisterBuffer(buffer, size);
        }, py::arg("buffer_ptr"), py::arg("size"))
        .def("unregister_buffer", [](S& s, uintptr_t buffer) {
            return s.UnregisterBuffer(buffer);
        }, py::arg("buffer_ptr"))
        .def("get_hostname", &S::hostname)
        .def("health_check", [](S& s) {
            py::gil_scoped_release r;
            return s.HealthCheck();
        })
        .def("get_offload_rpc_read_count", &S::offload_rpc_read_count);
}
