// Disk store recovery (core/disk/journal.cc Journal::Recover, disk_store.cc Impl::Recover)
// over journal batches the fuzzer writes.
//
// A 4 MiB store (1 MiB metadata, a 2 MiB journal of two 1 MiB halves, 1 MiB of data) is made
// once by the real store: a few objects written, one removed. Each input then lays batches
// over a copy of that image, sealed with the store's seed so they pass the header check and
// recovery really parses their entries. One record per batch:
//
//   u8 ctl       bit 0: journal half; bit 1: checkpoint-begin flag; bit 2: checkpoint-end
//                flag; bit 3: corrupt one payload byte after sealing (a torn batch)
//   u8 block     block index inside the half (0..255)
//   u8 lap, u8 seq, u8 commit_seq
//   u16 length   payload bytes (little-endian), then the payload (journal entries, or junk)
//
// Properties: opening never crashes and either fails cleanly or gives a store whose used
// space is exactly its objects' blocks; opening it again finds the same objects; every listed
// object reads back or is reported corrupt; and the store keeps working: a new object written
// after recovery is there, with its bytes, after another reopen.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/disk/device.h"
#include "core/disk/disk_store.h"
#include "core/disk/format.h"
#include "core/disk/memory_device.h"
#include "core/base/status.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/object_bytes.h"
#include "spdlog/spdlog.h"

using namespace mooncake;
namespace df = mooncake::disk_format;
using mooncake::fuzz::ObjectBytes;

namespace {

constexpr uint64_t kCapacity = 4 << 20;

struct Base {
    std::vector<std::byte> image;
    df::Superblock sb;
};

const Base& BaseImage() {
    static const Base base = [] {
        spdlog::set_level(spdlog::level::off);
        auto device = std::make_unique<MemoryDevice>(kCapacity);
        MemoryDevice* raw = device.get();
        auto handle = raw->OpenHandle();
        DiskStoreOptions options;
        options.capacity = kCapacity;
        {
            auto store = DiskStore::OpenOnDevice(std::move(device), options);
            FUZZ_CHECK(store.ok());
            auto& s = **store;
            FUZZ_CHECK(
                s.Write("alpha", 1, ObjectBytes(100, 1), IoPriority::kForeground).ok());
            FUZZ_CHECK(
                s.Write("beta", 2, ObjectBytes(5000, 2), IoPriority::kForeground).ok());
            FUZZ_CHECK(
                s.Write("gamma", 3, ObjectBytes(4096, 3), IoPriority::kForeground).ok());
            FUZZ_CHECK(s.Remove("beta", 2).ok());
        }
        Base b;
        b.image.resize(kCapacity);
        handle->Peek(0, b.image);
        FUZZ_CHECK(df::DecodeSuperblock({b.image.data(), kDeviceBlockSize}, &b.sb) ==
                   df::SuperblockState::kValid);
        return b;
    }();
    return base;
}

using ObjectSet = std::set<std::tuple<std::string, Generation, uint64_t>>;

ObjectSet Objects(const DiskStore& store) {
    ObjectSet out;
    for (const DiskObjectInfo& o : store.List()) out.emplace(o.key, o.generation, o.size);
    return out;
}

uint64_t BlocksOf(const ObjectSet& objects) {
    uint64_t n = 0;
    for (const auto& [key, gen, size] : objects) n += AlignUp(size);
    return n;
}

Result<std::unique_ptr<DiskStore>> Open(const MemoryDevice& device) {
    DiskStoreOptions options;
    options.capacity = kCapacity;
    return DiskStore::OpenOnDevice(device.OpenHandle(), options);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const Base& base = BaseImage();
    static MemoryDevice device(kCapacity);  // reused: a fresh 4 MiB device per input is slow
    device.Poke(0, base.image);

    const uint64_t half_size = base.sb.journal_size / 2;
    size_t pos = 0;
    for (int records = 0; records < 16 && size - pos >= 7; ++records) {
        const uint8_t ctl = data[pos];
        const uint64_t block = data[pos + 1];
        df::BatchHeader h;
        h.lap = data[pos + 2];
        h.seq = data[pos + 3];
        h.commit_seq = data[pos + 4];
        h.flags = ((ctl & 2) ? df::kFlagCheckpointBegin : 0) | ((ctl & 4) ? df::kFlagCheckpointEnd : 0);
        size_t len = data[pos + 5] | (size_t{data[pos + 6]} << 8);
        pos += 7;
        len = std::min(len, size - pos);
        std::string payload(reinterpret_cast<const char*>(data + pos), len);
        pos += len;
        h.position = base.sb.journal_offset + (ctl & 1) * half_size + block * kDeviceBlockSize;
        const uint64_t bytes = df::BatchBytes(payload.size());
        if (h.position + bytes > base.sb.journal_offset + ((ctl & 1) + 1) * half_size) continue;
        std::vector<std::byte> buf(bytes);
        df::EncodeBatch(h, payload, base.sb.store_id, buf);
        if ((ctl & 8) && !payload.empty()) buf[df::kBatchHeaderBytes] ^= std::byte{0x40};
        device.Poke(h.position, buf);
    }

    ObjectSet first;
    {
        auto opened = Open(device);
        if (!opened.ok()) return 0;  // refused cleanly
        DiskStore& store = **opened;
        first = Objects(store);
        FUZZ_CHECK(first.size() == store.object_count());
        FUZZ_CHECK(store.used() == BlocksOf(first));
        FUZZ_CHECK(store.used() <= store.capacity());
        std::set<std::string> keys;
        for (const auto& [key, gen, sz] : first) {
            FUZZ_CHECK(ValidateKey(key).ok());
            FUZZ_CHECK(gen != kNoGeneration);
            FUZZ_CHECK(keys.insert(key).second);  // one generation per key
        }
    }
    {
        auto opened = Open(device);
        FUZZ_CHECK(opened.ok());
        DiskStore& store = **opened;
        if (Objects(store) != first && std::getenv("FUZZ_VERBOSE")) {
            for (const auto& [k, g, sz] : first) std::fprintf(stderr, "first:  %s %llu %llu\n", k.c_str(), (unsigned long long)g, (unsigned long long)sz);
            for (const auto& [k, g, sz] : Objects(store)) std::fprintf(stderr, "second: %s %llu %llu\n", k.c_str(), (unsigned long long)g, (unsigned long long)sz);
        }
        FUZZ_CHECK(Objects(store) == first);
        for (const auto& [key, gen, sz] : first) {
            auto got = store.SizeOf(key, gen);
            FUZZ_CHECK(got.ok() && *got == sz);
            std::vector<std::byte> out(sz);
            Status st = store.Read(key, gen, out, IoPriority::kForeground);
            FUZZ_CHECK(st.ok() || st.code() == StatusCode::kCorruption);
        }
        Status st = store.Write("fuzz-new", 7, ObjectBytes(6000, 7), IoPriority::kForeground);
        FUZZ_CHECK(st.ok() || st.code() == StatusCode::kNoSpace ||
                   st.code() == StatusCode::kStaleGeneration);
        if (!st.ok()) return 0;
    }
    {
        auto opened = Open(device);
        FUZZ_CHECK(opened.ok());
        DiskStore& store = **opened;
        std::vector<std::byte> out(6000);
        FUZZ_CHECK(store.Read("fuzz-new", 7, out, IoPriority::kForeground).ok());
        FUZZ_CHECK(out == ObjectBytes(6000, 7));
        FUZZ_CHECK(store.used() == BlocksOf(Objects(store)));
    }
    return 0;
}
