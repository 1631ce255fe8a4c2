// disk_bench: DiskStore on the real libaio device against fio on the same directory.
//
// For each object size (64 KiB, 1 MiB) and queue depth (1, 8, 32): `qd` threads write objects
// of that size through DiskStore (each Write is durable: data, journal batch, fdatasync; group
// commit shares the flush), then `qd` threads read random ones back. Then fio runs the same
// shapes (ioengine=libaio, direct=1, bs, iodepth; rw=write, rw=write with fdatasync=1 for the
// same durability as ours, rw=randread) on a file in the same directory.
//
// By default both the store's file and fio's file are written once up front ("steady state":
// a cache's disk has been filled before, so its blocks are allocated and written). --cold
// starts every case on freshly created files instead, where the file system's first-write
// extent conversion makes every flush costlier.
//
// Every number is the median of --repeat runs (default 3), ours and fio interleaved, because
// a shared machine's disk is noisy.
//
//   disk_bench [--dir DIR] [--mib-per-case N] [--seconds-per-case S] [--fio PATH] [--cold]
//              [--repeat N]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/disk/disk_store.h"

namespace {

namespace fs = std::filesystem;
using mooncake::AlignedBuffer;
using mooncake::DiskStore;
using mooncake::DiskStoreOptions;
using mooncake::IoPriority;
using Clock = std::chrono::steady_clock;

struct Args {
    std::string dir = "/tmp/mooncake-disk-bench";
    uint64_t mib_per_case = 128;
    double seconds_per_case = 2.0;
    std::string fio = "fio";
    bool cold = false;
    int repeat = 3;  // each number is the median of this many runs
};

[[noreturn]] void Die(const std::string& what) {
    std::fprintf(stderr, "disk_bench: %s\n", what.c_str());
    std::exit(1);
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double Median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Writes `bytes` of zeros to `path` (created), then fsyncs.
void Prefill(const std::string& path, uint64_t bytes) {
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) Die("cannot create " + path);
    std::vector<char> zeros(8 << 20);
    for (uint64_t at = 0; at < bytes; at += zeros.size()) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(zeros.size(), bytes - at));
        if (pwrite(fd, zeros.data(), n, static_cast<off_t>(at)) != static_cast<ssize_t>(n)) {
            Die("cannot write " + path);
        }
    }
    fsync(fd);
    close(fd);
}

class OurSide {
  public:
    explicit OurSide(const Args& args) : args_(args), dir_(args.dir + "/store") {
        options_.dir = dir_;
        options_.capacity = (args.mib_per_case * 2 + 64) << 20;
        options_.queue_depth = 32;
        if (!args.cold) {
            fs::remove_all(dir_);
            fs::create_directories(dir_);
            // An all-zero file is a blank store: Open formats it in place.
            Prefill(dir_ + "/mooncake-disk.img", options_.capacity);
            Open();
        }
    }

    // {write MB/s, read MB/s}
    std::pair<double, double> Run(uint64_t bs, int qd) {
        if (args_.cold) {
            store_.reset();
            fs::remove_all(dir_);
            Open();
        }
        DiskStore& store = *store_;
        const uint64_t max_objects = (args_.mib_per_case << 20) / bs;
        const auto budget = std::chrono::duration<double>(args_.seconds_per_case);

        std::atomic<uint64_t> next{0};
        std::atomic<bool> failed{false};
        auto start = Clock::now();
        RunThreads(qd, [&](int t) {
            AlignedBuffer buf(bs);
            std::memset(buf.data(), 0x5a + t, bs);
            for (;;) {
                uint64_t i = next.fetch_add(1);
                if (i >= max_objects || Clock::now() - start > budget) break;
                std::memcpy(buf.data(), &i, sizeof i);
                if (!store.Write(Key(i), 1, buf.span(), IoPriority::kForeground).ok()) {
                    failed = true;
                    break;
                }
            }
        });
        const double write_secs = Seconds(Clock::now() - start);
        const uint64_t stored = store.object_count();
        if (failed || stored == 0) Die("writes failed");

        std::atomic<uint64_t> reads{0};
        start = Clock::now();
        RunThreads(qd, [&](int t) {
            AlignedBuffer buf(bs);
            std::mt19937_64 rng(static_cast<uint64_t>(t) * 7919 + 1);
            for (;;) {
                uint64_t n = reads.fetch_add(1);
                if (n >= stored || Clock::now() - start > budget) break;
                if (!store.Read(Key(rng() % stored), 1, buf.span(), IoPriority::kForeground).ok()) {
                    failed = true;
                    break;
                }
            }
        });
        const double read_secs = Seconds(Clock::now() - start);
        if (failed) Die("reads failed");
        const uint64_t read_count = std::min<uint64_t>(reads.load(), stored);

        // Empty the store for the next case (durable removes, shared flushes).
        auto all = store.List();
        std::atomic<size_t> at{0};
        RunThreads(8, [&](int) {
            for (size_t i = at.fetch_add(1); i < all.size(); i = at.fetch_add(1)) {
                if (!store.Remove(all[i].key, all[i].generation).ok()) failed = true;
            }
        });
        if (failed) Die("removes failed");
        return {static_cast<double>(stored * bs) / write_secs / 1e6,
                static_cast<double>(read_count * bs) / read_secs / 1e6};
    }

    ~OurSide() {
        store_.reset();
        fs::remove_all(dir_);
    }

  private:
    static std::string Key(uint64_t i) { return "bench/" + std::to_string(i); }

    template <typename Fn>
    static void RunThreads(int n, Fn fn) {
        std::vector<std::thread> threads;
        for (int t = 0; t < n; ++t) threads.emplace_back(fn, t);
        for (auto& th : threads) th.join();
    }

    void Open() {
        auto opened = DiskStore::Open(options_);
        if (!opened.ok()) Die(opened.status().ToString());
        store_ = std::move(*opened);
    }

    const Args& args_;
    const std::string dir_;
    DiskStoreOptions options_;
    std::unique_ptr<DiskStore> store_;
};

// bw_bytes of the "read" or "write" section of fio's JSON output, in MB/s.
double FioBandwidth(const std::string& json, const std::string& section) {
    size_t at = json.find("\"" + section + "\" : {");
    if (at == std::string::npos) return 0;
    at = json.find("\"bw_bytes\" : ", at);
    if (at == std::string::npos) return 0;
    return std::strtod(json.c_str() + at + 13, nullptr) / 1e6;
}

double RunFio(const Args& args, const std::string& rw, uint64_t bs, int qd, bool sync) {
    char cmd[1024];
    std::snprintf(cmd, sizeof cmd,
                  "%s --name=bench --directory=%s --filename=fio.dat --size=%lluM --bs=%llu "
                  "--iodepth=%d --ioengine=libaio --direct=1 --rw=%s --runtime=%g %s "
                  "--output-format=json 2>/dev/null",
                  args.fio.c_str(), args.dir.c_str(),
                  static_cast<unsigned long long>(args.mib_per_case),
                  static_cast<unsigned long long>(bs), qd, rw.c_str(), args.seconds_per_case,
                  sync ? "--fdatasync=1" : "");
    FILE* pipe = popen(cmd, "r");
    if (!pipe) return 0;
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
    pclose(pipe);
    return FioBandwidth(out, rw == "write" ? "write" : "read");
}

}  // namespace

int main(int argc, char** argv) {
    Args args;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) Die(a + " needs a value");
            return argv[++i];
        };
        if (a == "--dir")
            args.dir = value();
        else if (a == "--mib-per-case")
            args.mib_per_case = std::stoull(value());
        else if (a == "--seconds-per-case")
            args.seconds_per_case = std::stod(value());
        else if (a == "--fio")
            args.fio = value();
        else if (a == "--cold")
            args.cold = true;
        else if (a == "--repeat")
            args.repeat = std::max(1, std::stoi(value()));
        else {
            std::fprintf(stderr,
                         "usage: disk_bench [--dir DIR] [--mib-per-case N] "
                         "[--seconds-per-case S] [--fio PATH] [--cold] [--repeat N]\n");
            return 2;
        }
    }
    fs::create_directories(args.dir);
    const std::string fio_file = args.dir + "/fio.dat";
    std::printf(
        "disk_bench: dir %s, %llu MiB per case, at most %gs per phase, median of %d, %s files\n",
        args.dir.c_str(), static_cast<unsigned long long>(args.mib_per_case), args.seconds_per_case,
        args.repeat, args.cold ? "fresh (cold)" : "prewritten (steady state)");
    std::printf("%-6s %-6s %3s %10s %10s %9s %14s %9s\n", "op", "bs", "qd", "ours MB/s", "fio MB/s",
                "ours/fio", "fio+sync MB/s", "ours/sync");
    OurSide ours(args);
    if (!args.cold) Prefill(fio_file, args.mib_per_case << 20);
    const std::pair<uint64_t, const char*> sizes[] = {{64 << 10, "64KiB"}, {1 << 20, "1MiB"}};
    for (auto [bs, name] : sizes) {
        for (int qd : {1, 8, 32}) {
            std::vector<double> ow, orr, fw, fws, fr;
            for (int r = 0; r < args.repeat; ++r) {
                auto [w, rd] = ours.Run(bs, qd);
                ow.push_back(w);
                orr.push_back(rd);
                if (args.cold) fs::remove(fio_file);
                fw.push_back(RunFio(args, "write", bs, qd, false));
                if (args.cold) fs::remove(fio_file);
                fws.push_back(RunFio(args, "write", bs, qd, true));
                fr.push_back(RunFio(args, "randread", bs, qd, false));
            }
            const double ours_w = Median(ow), ours_r = Median(orr), fio_w = Median(fw),
                         fio_ws = Median(fws), fio_r = Median(fr);
            std::printf("%-6s %-6s %3d %10.0f %10.0f %9.2f %14.0f %9.2f\n", "write", name, qd,
                        ours_w, fio_w, fio_w > 0 ? ours_w / fio_w : 0.0, fio_ws,
                        fio_ws > 0 ? ours_w / fio_ws : 0.0);
            std::printf("%-6s %-6s %3d %10.0f %10.0f %9.2f %14s %9s\n", "read", name, qd, ours_r,
                        fio_r, fio_r > 0 ? ours_r / fio_r : 0.0, "", "");
            std::fflush(stdout);
        }
    }
    fs::remove(fio_file);
    return 0;
}
