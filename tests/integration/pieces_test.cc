// Values as pieces of caller memory (PutPieces, BatchPutPieces, GetIntoPieces,
// BatchGetIntoPieces; net/byte_pieces.h) against real daemons: the two-step path through a
// master and a node, the by-key path of a standalone daemon, and a transport without vectored
// calls (the DataTransport defaults, which join and split through one copy). Every byte is
// compared, and bytes past what a read should fill are checked untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "tests/integration/forwarding_transport.h"
#include "tests/integration/harness.h"

namespace mooncake::test {
namespace {

// One key's 8 pieces, uneven, none adjacent to the next (a 64-byte gap after each).
const std::vector<size_t> kUneven = {1, 4095, 4097, 65536, 3, 100000, 7, 12345};
constexpr size_t kGap = 64;
constexpr std::byte kUntouched{0xA5};

// `sizes_per_key` pieces laid out in one buffer, a gap after each.
struct Layout {
    std::vector<std::byte> memory;
    std::vector<std::vector<std::span<std::byte>>> pieces;  // per key

    explicit Layout(const std::vector<std::vector<size_t>>& sizes_per_key) {
        size_t total = 0;
        for (const auto& sizes : sizes_per_key) {
            for (size_t n : sizes) total += n + kGap;
        }
        memory.assign(total, kUntouched);
        size_t at = 0;
        for (const auto& sizes : sizes_per_key) {
            auto& row = pieces.emplace_back();
            for (size_t n : sizes) {
                row.emplace_back(memory.data() + at, n);
                at += n + kGap;
            }
        }
    }
    // Key k's pieces, read-only (what a put takes).
    std::vector<std::span<const std::byte>> Const(size_t k) const {
        return {pieces[k].begin(), pieces[k].end()};
    }
    // Key k's pieces joined.
    std::string Joined(size_t k) const {
        std::string out;
        for (const auto& p : pieces[k])
            out.append(reinterpret_cast<const char*>(p.data()), p.size());
        return out;
    }
    bool GapsUntouched() const {
        for (const auto& row : pieces) {
            for (const auto& p : row) {
                const std::byte* gap = p.data() + p.size();
                for (size_t i = 0; i < kGap; ++i) {
                    if (gap[i] != kUntouched) return false;
                }
            }
        }
        return true;
    }
};

std::vector<std::vector<size_t>> Rotated(size_t keys) {
    std::vector<std::vector<size_t>> out;
    for (size_t k = 0; k < keys; ++k) {
        auto sizes = kUneven;
        std::rotate(sizes.begin(), sizes.begin() + static_cast<long>(k % sizes.size()),
                    sizes.end());
        out.push_back(sizes);
    }
    return out;
}

// Fills every piece of `layout` with key k's Pattern, piece after piece.
void Fill(Layout& layout, uint64_t seed) {
    for (size_t k = 0; k < layout.pieces.size(); ++k) {
        size_t total = 0;
        for (const auto& p : layout.pieces[k]) total += p.size();
        const std::string value = Pattern(seed + k, total);
        size_t at = 0;
        for (const auto& p : layout.pieces[k]) {
            std::memcpy(p.data(), value.data() + at, p.size());
            at += p.size();
        }
    }
}

// 64 keys of 8 uneven pieces in one batch, read back in another split (the sizes reversed),
// then one key alone and a read into more room than the value needs.
void RoundTrip(Client& client, const std::string& prefix) {
    constexpr size_t kKeys = 64;
    const auto sizes = Rotated(kKeys);
    Layout save(sizes);
    Fill(save, 100);
    std::vector<std::string> keys;
    std::vector<std::vector<std::span<const std::byte>>> values;
    std::vector<PiecesItem> items;
    for (size_t k = 0; k < kKeys; ++k) {
        keys.push_back(prefix + std::to_string(k));
        values.push_back(save.Const(k));
    }
    for (size_t k = 0; k < kKeys; ++k) items.push_back({keys[k], values[k]});
    for (const Status& st : client.BatchPutPieces(items)) ASSERT_TRUE(st.ok()) << st.ToString();
    auto got = client.Get(keys[7]);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, save.Joined(7));

    std::vector<std::vector<size_t>> reversed;
    for (auto s : sizes) reversed.emplace_back(s.rbegin(), s.rend());
    Layout load(reversed);
    std::vector<MutablePieces> outs;
    for (const auto& row : load.pieces) outs.emplace_back(row);
    const uint64_t total = std::accumulate(kUneven.begin(), kUneven.end(), uint64_t{0});
    auto read = client.BatchGetIntoPieces(keys, outs);
    ASSERT_EQ(read.size(), kKeys);
    for (size_t k = 0; k < kKeys; ++k) {
        ASSERT_TRUE(read[k].ok()) << read[k].status().ToString();
        EXPECT_EQ(*read[k], total);
        EXPECT_EQ(load.Joined(k), save.Joined(k)) << keys[k];
    }
    EXPECT_TRUE(load.GapsUntouched());

    // More room than the value: filled in order, the rest untouched, the value's size back.
    Layout roomy({{total - 10, 1000}});
    auto one = client.GetIntoPieces(keys[3], roomy.pieces[0]);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    EXPECT_EQ(*one, total);
    EXPECT_EQ(roomy.Joined(0).substr(0, total), save.Joined(3));
    for (size_t i = 10; i < 1000; ++i) EXPECT_EQ(roomy.pieces[0][1][i], kUntouched);
    // Too little room: refused. (Not "nothing written": on the data channel an error's
    // message may land where the payload would have, as for a single buffer.)
    Layout small({{1000, total - 1001}});
    auto refused = client.GetIntoPieces(keys[3], small.pieces[0]);
    EXPECT_TRUE(refused.status().Is(StatusCode::kInvalidArgument)) << refused.status().ToString();

    // A value over the by-key bound (1 MiB) in pieces: the two-step put.
    Layout big({{600000, 3, 700000}});
    Fill(big, 900);
    ASSERT_TRUE(client.PutPieces(prefix + "big", big.Const(0)).ok());
    auto value = client.Get(prefix + "big");
    ASSERT_TRUE(value.ok()) << value.status().ToString();
    EXPECT_EQ(*value, big.Joined(0));
}

TEST(PiecesTest, ThroughAMasterAndANode) {
    Cluster c;
    c.AddNode("64MiB", false);
    ASSERT_TRUE(c.WaitForNodes(1));
    RoundTrip(*c.client, "pc/");
}

TEST(PiecesTest, ByKeyOnAStandaloneDaemon) {
    Standalone s({"--dram_size=64MiB", "--enable_offload=false"});
    ASSERT_NE(s.client, nullptr);
    RoundTrip(*s.client, "ps/");
}

TEST(PiecesTest, ATransportWithoutVectoredCallsJoinsAndSplits) {
    Cluster c;
    c.AddNode("64MiB", false);
    ASSERT_TRUE(c.WaitForNodes(1));
    ClientOptions options;
    options.transport = std::make_shared<ForwardingTransport>();
    auto client = ConnectWhenUp(c.master_address, std::chrono::seconds(10), options);
    ASSERT_NE(client, nullptr);
    RoundTrip(*client, "pf/");
}

}  // namespace
}  // namespace mooncake::test
