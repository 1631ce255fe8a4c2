// soak_client: one client process of the concurrency soak (tests/fault/soak_test.cc).
//
//   soak_client MASTER INDEX KEYS SECONDS OUT_FILE
//
// Owns the keys "soak/<INDEX>/<j>" (j < KEYS) and, for SECONDS, does put/get/rm on them at
// random, reads skewed to a hot tenth so promotion has work. A put of a key that exists
// removes it first (Put refuses an existing key). Every value is Pattern(seed, size) with a
// seed unique to that put, so any read is checked exactly against the last acknowledged put:
//   - bytes returned must equal the last acknowledged put's bytes ("wrong" otherwise);
//   - a key whose last acknowledged op was rm (or that was never put) must read NotFound;
//   - a key whose last acknowledged op was a put that reads NotFound is counted "missing".
// A put that failed may or may not have landed (a lost reply): its seed is remembered and the
// key's state is unknown until a read settles it (either answer is then right); at the end
// such keys are removed (force) so the final state is definite.
//
// OUT_FILE: one line per key "key seed size present" (present 0/1, the state after the run),
// then "#summary" with the counters. Exit 0, or 3 if any read returned wrong bytes.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "thrift/client.h"

namespace {

using mooncake::Client;
using mooncake::StatusCode;
using mooncake::test::Pattern;

struct KeyState {
    bool present = false;        // last acknowledged op was a put
    bool uncertain = false;      // a put failed: `maybe_seed` may or may not be stored
    uint64_t seed = 0, size = 0;
    uint64_t maybe_seed = 0, maybe_size = 0;
};

struct Counters {
    uint64_t ops = 0, puts = 0, puts_ok = 0, puts_nospace = 0, puts_failed = 0;
    uint64_t gets = 0, hits = 0, not_found = 0, get_errors = 0;
    uint64_t rms = 0, rms_ok = 0, rms_leased = 0, rm_errors = 0;
    uint64_t wrong = 0, missing = 0, resurrected = 0;
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: soak_client MASTER INDEX KEYS SECONDS OUT_FILE\n");
        return 2;
    }
    const std::string master = argv[1];
    const uint64_t index = std::strtoull(argv[2], nullptr, 10);
    const size_t nkeys = std::strtoull(argv[3], nullptr, 10);
    const auto duration = std::chrono::seconds(std::strtoll(argv[4], nullptr, 10));
    const std::string out_path = argv[5];

    auto connected = Client::Connect(master);
    if (!connected.ok()) {
        std::fprintf(stderr, "connect: %s\n", connected.status().ToString().c_str());
        return 4;
    }
    Client& client = **connected;
    std::mt19937_64 rng(0x5eed0000 + index);
    std::vector<KeyState> keys(nkeys);
    auto name = [&](size_t j) { return "soak/" + std::to_string(index) + "/" + std::to_string(j); };
    uint64_t next_seed = (index + 1) << 40;
    Counters c;

    auto pick = [&]() -> size_t {
        // Half the picks from the hot tenth, so some disk-resident keys are read again.
        size_t hot = std::max<size_t>(1, nkeys / 10);
        return (rng() % 2 == 0) ? rng() % hot : rng() % nkeys;
    };
    auto do_get = [&](size_t j) {
        KeyState& k = keys[j];
        ++c.gets;
        auto got = client.Get(name(j));
        if (got.ok()) {
            ++c.hits;
            if (k.present && *got == Pattern(k.seed, k.size)) {
                // right bytes
            } else if (k.uncertain && *got == Pattern(k.maybe_seed, k.maybe_size)) {
                k.present = true;  // the failed put had landed after all
                k.seed = k.maybe_seed;
                k.size = k.maybe_size;
            } else if (!k.present && !k.uncertain) {
                ++c.resurrected;
                ++c.wrong;
                std::fprintf(stderr, "WRONG: %s read %zu bytes after its rm\n", name(j).c_str(),
                             got->size());
            } else {
                ++c.wrong;
                std::fprintf(stderr, "WRONG: %s read %zu bytes, not those of seed %llu\n",
                             name(j).c_str(), got->size(),
                             static_cast<unsigned long long>(k.seed));
            }
            k.uncertain = false;
        } else if (got.status().Is(StatusCode::kNotFound)) {
            ++c.not_found;
            if (k.present) {
                ++c.missing;
                std::fprintf(stderr, "missing: %s (seed %llu): %s\n", name(j).c_str(),
                             static_cast<unsigned long long>(k.seed),
                             got.status().ToString().c_str());
                k.present = false;  // from now on it is expected absent
            }
            k.uncertain = false;
        } else {
            ++c.get_errors;
        }
    };
    auto do_rm = [&](size_t j, bool force) -> bool {
        KeyState& k = keys[j];
        ++c.rms;
        auto st = client.Remove(name(j), force);
        if (st.ok() || st.Is(StatusCode::kNotFound)) {
            ++c.rms_ok;
            k.present = false;
            k.uncertain = false;
            return true;
        }
        if (st.Is(StatusCode::kHasLease)) {
            ++c.rms_leased;
        } else {
            ++c.rm_errors;
        }
        return false;
    };
    auto do_put = [&](size_t j) {
        KeyState& k = keys[j];
        if ((k.present || k.uncertain) && !do_rm(j, false)) return;
        ++c.puts;
        uint64_t seed = next_seed++;
        uint64_t size = 4096 + rng() % (44 * 1024);
        auto st = client.Put(name(j), Pattern(seed, size));
        if (st.ok()) {
            ++c.puts_ok;
            k.present = true;
            k.seed = seed;
            k.size = size;
            return;
        }
        if (st.Is(StatusCode::kNoSpace)) {
            ++c.puts_nospace;  // refused before anything was stored
            return;
        }
        ++c.puts_failed;
        k.uncertain = true;
        k.maybe_seed = seed;
        k.maybe_size = size;
    };

    const auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < end) {
        ++c.ops;
        uint64_t dice = rng() % 100;
        if (dice < 50) {
            do_get(pick());
        } else if (dice < 88) {
            do_put(rng() % nkeys);
        } else {
            do_rm(rng() % nkeys, false);
        }
    }
    for (size_t j = 0; j < nkeys; ++j) {
        if (keys[j].uncertain) do_rm(j, true);
    }

    std::ofstream out(out_path);
    for (size_t j = 0; j < nkeys; ++j) {
        const KeyState& k = keys[j];
        out << name(j) << ' ' << k.seed << ' ' << k.size << ' ' << (k.present ? 1 : 0) << ' '
            << (k.uncertain ? 1 : 0) << '\n';
    }
    out << "#summary ops=" << c.ops << " puts=" << c.puts << " puts_ok=" << c.puts_ok
        << " puts_nospace=" << c.puts_nospace << " puts_failed=" << c.puts_failed
        << " gets=" << c.gets << " hits=" << c.hits << " not_found=" << c.not_found
        << " get_errors=" << c.get_errors << " rms=" << c.rms << " rms_ok=" << c.rms_ok
        << " rms_leased=" << c.rms_leased << " rm_errors=" << c.rm_errors
        << " wrong=" << c.wrong << " missing=" << c.missing
        << " resurrected=" << c.resurrected << '\n';
    out.close();
    return c.wrong > 0 ? 3 : 0;
}
