// mooncake-tierfs against a real standalone mooncaked, through a real FUSE mount.
//
// Each test starts its own daemon on free loopback ports and its own mount in a fresh temporary
// directory, and always tears both down (SIGTERM, then `fusermount3 -u -z`, then SIGKILL).
// Skipped unless root with /dev/fuse, fusermount3 and the two binaries present.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fuse/name_codec.h"
#include "fuse/render.h"
#include "thrift/client.h"
#include "tests/free_port.h"
#include "tests/test_time_scale.h"

namespace mooncake::tierfs {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using name_codec::Encode;
using test::FreePort;

constexpr const char* kDaemonBin = MOONCAKED_BIN;
constexpr const char* kTierFsBin = TIERFS_BIN;

std::string SkipReason() {
    if (geteuid() != 0) return "not root";
    if (access("/dev/fuse", R_OK | W_OK) != 0) return "no usable /dev/fuse";
    if (access(kDaemonBin, X_OK) != 0) return std::string("no ") + kDaemonBin;
    if (access(kTierFsBin, X_OK) != 0) return std::string("no ") + kTierFsBin;
    if (std::system("command -v fusermount3 >/dev/null 2>&1") != 0) return "no fusermount3";
    return "";
}

bool WaitFor(const std::function<bool()>& ready, std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + test::Scaled(timeout);
    while (Clock::now() < deadline) {
        if (ready()) return true;
        std::this_thread::sleep_for(10ms);
    }
    return ready();
}

std::string ReadWhole(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// A child process with its output in a log file.
class Process {
  public:
    Process(std::vector<std::string> argv, std::string log) : argv_(std::move(argv)), log_(log) {}
    ~Process() { Stop(SIGKILL, 1s); }

    void AddArg(const std::string& arg) { argv_.push_back(arg); }

    bool Start() {
        pid_ = fork();
        if (pid_ == 0) {
            int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            dup2(fd, 1);
            dup2(fd, 2);
            std::vector<char*> args;
            for (auto& a : argv_) args.push_back(a.data());
            args.push_back(nullptr);
            execvp(args[0], args.data());
            _exit(127);
        }
        return pid_ > 0;
    }

    // Signals and waits; the exit code (128 + signal if killed), -1 if it was not running.
    int Stop(int sig, std::chrono::milliseconds grace) {
        if (pid_ <= 0) return -1;
        kill(pid_, sig);
        int status = 0;
        auto deadline = Clock::now() + grace;
        while (waitpid(pid_, &status, WNOHANG) == 0) {
            if (Clock::now() > deadline) {
                kill(pid_, SIGKILL);
                waitpid(pid_, &status, 0);
                break;
            }
            std::this_thread::sleep_for(10ms);
        }
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }

    bool Running() {
        if (pid_ <= 0) return false;
        int status;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return false;
        }
        return true;
    }

    const std::string& log() const { return log_; }

  private:
    std::vector<std::string> argv_;
    std::string log_;
    pid_t pid_ = -1;
};

bool IsMounted(const std::string& path) {
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string id, parent, dev, root, mount_point;
        fields >> id >> parent >> dev >> root >> mount_point;
        if (mount_point == path && line.find("fuse.mooncake-tierfs") != std::string::npos) {
            return true;
        }
    }
    return false;
}

// Directory entries without "." and "..", or the errno.
struct Listing {
    std::set<std::string> names;
    int err = 0;
};
Listing ListDir(const std::string& path) {
    Listing out;
    DIR* dir = opendir(path.c_str());
    if (dir == nullptr) {
        out.err = errno;
        return out;
    }
    errno = 0;
    while (dirent* e = readdir(dir)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") out.names.insert(name);
        errno = 0;
    }
    out.err = errno;
    closedir(dir);
    return out;
}

// The file's content, or the errno of the first failing call.
struct FileRead {
    std::string data;
    int err = 0;
};
FileRead ReadFile(const std::string& path) {
    FileRead out;
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) {
        out.err = errno;
        return out;
    }
    char buf[4096];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0) {
            out.err = errno;
            break;
        }
        if (n == 0) break;
        out.data.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return out;
}

// An xattr's value, or the errno.
struct Xattr {
    std::string value;
    int err = 0;
};
Xattr GetXattr(const std::string& path, const std::string& name) {
    Xattr out;
    char buf[8192];
    ssize_t n = getxattr(path.c_str(), name.c_str(), buf, sizeof(buf));
    if (n < 0) {
        out.err = errno;
    } else {
        out.value.assign(buf, static_cast<size_t>(n));
    }
    return out;
}

// Writes `text` with one write(2); 0 or the errno of open/write/close.
int WriteFile(const std::string& path, const std::string& text, int flags = O_WRONLY | O_TRUNC) {
    int fd = open(path.c_str(), flags, 0644);
    if (fd < 0) return errno;
    ssize_t n = write(fd, text.data(), text.size());
    int err = n < 0 ? errno : 0;
    if (close(fd) != 0 && err == 0) err = errno;
    return err;
}

bool Has(const ObjectInfo& info, Tier tier) { return info.object.HasComplete(tier); }

std::string DramSize() {
    const char* dram = std::getenv("TIERFS_TEST_DRAM");
    return dram != nullptr ? dram : "64MiB";
}

class TierFsMountTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (std::string why = SkipReason(); !why.empty()) GTEST_SKIP() << why;
        char tmpl[] = "/tmp/tierfs-test.XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        mnt_ = dir_ + "/mnt";
        ASSERT_EQ(mkdir(mnt_.c_str(), 0755), 0);
        ASSERT_EQ(mkdir((dir_ + "/disk").c_str(), 0755), 0);
        rpc_port_ = FreePort();
        data_port_ = FreePort();
        ASSERT_NE(rpc_port_, 0);
        ASSERT_NE(data_port_, 0);
        master_ = "127.0.0.1:" + std::to_string(rpc_port_);
        StartDaemon();
    }

    void TearDown() override {
        if (dir_.empty()) return;
        if (HasFailure()) DumpLogs();
        if (tierfs_) tierfs_->Stop(SIGTERM, 3s);
        Unmount();
        if (daemon_) daemon_->Stop(SIGTERM, 5s);
        client_.reset();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }

    void Unmount() {
        std::string cmd = "fusermount3 -u -z '" + mnt_ + "' >/dev/null 2>&1";
        (void)std::system(cmd.c_str());
    }

    void DumpLogs() {
        for (const char* name : {"/mooncaked.log", "/tierfs.log"}) {
            std::string log = ReadWhole(dir_ + name);
            if (log.size() > 8000) log = "..." + log.substr(log.size() - 8000);
            std::fprintf(stderr, "---- %s ----\n%s\n", name, log.c_str());
        }
    }

    void StartDaemon() {
        daemon_ = std::make_unique<Process>(
            std::vector<std::string>{kDaemonBin, "--role", "standalone", "--listen", master_,
                                     "--data_port", std::to_string(data_port_), "--metrics_port",
                                     "0", "--dram_size", DramSize(), "--disk_dir", dir_ + "/disk",
                                     "--disk_size", "256MiB"},
            dir_ + "/mooncaked.log");
        for (const std::string& a : daemon_extra_) daemon_->AddArg(a);
        ASSERT_TRUE(daemon_->Start());
        ClientOptions options;
        options.connect_timeout = 500ms;
        options.rpc_timeout = 5000ms;
        options.auth_token = client_token_;
        bool up = WaitFor(
            [&] {
                auto c = Client::Connect(master_, options);
                if (!c.ok()) return false;
                client_ = std::move(*c);
                return true;
            },
            15s);
        ASSERT_TRUE(up) << "mooncaked did not answer on " << master_;
    }

    void Mount(bool rw = false, const std::vector<std::string>& extra = {}) {
        // TIERFS_TEST_WRAPPER="valgrind -q" (say) runs the file system under a tool.
        std::vector<std::string> argv;
        if (const char* wrapper = std::getenv("TIERFS_TEST_WRAPPER")) {
            std::istringstream words(wrapper);
            for (std::string w; words >> w;) argv.push_back(w);
        }
        for (const std::string& a :
             {std::string(kTierFsBin), mnt_, std::string("--master"), master_, std::string("-f")}) {
            argv.push_back(a);
        }
        if (rw) {
            argv.push_back("-o");
            argv.push_back("rw");
        }
        argv.insert(argv.end(), extra.begin(), extra.end());
        tierfs_ = std::make_unique<Process>(argv, dir_ + "/tierfs.log");
        ASSERT_TRUE(tierfs_->Start());
        ASSERT_TRUE(WaitFor([&] { return IsMounted(mnt_); }, 5s)) << "not mounted";
    }

    std::string P(const std::string& rel) const { return mnt_ + "/" + rel; }

    void Put(const std::string& key, size_t size = 4096) {
        std::string value(size, 'v');
        Status st = client_->Put(key, value);
        ASSERT_TRUE(st.ok()) << st.ToString();
    }

    ObjectInfo StatKey(const std::string& key) {
        auto info = client_->Stat(key);
        EXPECT_TRUE(info.ok()) << info.status().ToString();
        return info.ok() ? *info : ObjectInfo{};
    }

    // Drops the MEMORY copy (offloading first) and waits until only LOCAL_DISK holds it.
    void MoveToDisk(const std::string& key) {
        std::vector<std::string> keys = {key};
        auto moved = client_->Evict(keys);
        ASSERT_TRUE(moved.ok()) << moved.status().ToString();
        ASSERT_TRUE((*moved)[0].status.ok()) << (*moved)[0].status.ToString();
        ASSERT_TRUE(WaitFor(
            [&] {
                auto info = client_->Stat(key);
                return info.ok() && !Has(*info, Tier::kMemory) && Has(*info, Tier::kLocalDisk);
            },
            10s))
            << "key did not settle on LOCAL_DISK";
    }

    // Writes a LOCAL_DISK copy and keeps MEMORY; waits until both hold it.
    void CopyToDisk(const std::string& key) {
        std::vector<std::string> keys = {key};
        auto moved = client_->Offload(keys);
        ASSERT_TRUE(moved.ok()) << moved.status().ToString();
        ASSERT_TRUE(WaitFor(
            [&] {
                auto info = client_->Stat(key);
                return info.ok() && Has(*info, Tier::kMemory) && Has(*info, Tier::kLocalDisk);
            },
            10s))
            << "key did not reach both tiers";
    }

    std::set<std::string> MasterNames(std::optional<Tier> tier) {
        ListOptions options;
        options.tier = tier;
        options.limit = 1000;
        auto all = client_->ListAll(options);
        EXPECT_TRUE(all.ok()) << all.status().ToString();
        std::set<std::string> names;
        if (all.ok()) {
            for (const ObjectInfo& o : *all) names.insert(Encode(o.object.key));
        }
        return names;
    }

    std::string dir_, mnt_, master_;
    uint16_t rpc_port_ = 0, data_port_ = 0;
    std::unique_ptr<Process> daemon_, tierfs_;
    std::unique_ptr<Client> client_;
    std::vector<std::string> daemon_extra_;  // more mooncaked flags (StartDaemon)
    std::string client_token_;               // the token client_ presents
};

TEST_F(TierFsMountTest, LayoutAndModes) {
    Mount();
    Listing root = ListDir(mnt_);
    ASSERT_EQ(root.err, 0);
    EXPECT_EQ(root.names,
              (std::set<std::string>{"keys", "MEMORY", "LOCAL_DISK", "stats", "config"}));
    for (const char* d : {"", "keys", "MEMORY", "LOCAL_DISK", "config"}) {
        struct stat st;
        ASSERT_EQ(stat(P(d).c_str(), &st), 0) << d;
        EXPECT_TRUE(S_ISDIR(st.st_mode)) << d;
        EXPECT_EQ(st.st_mode & 07777, 0555u) << d;
    }
    struct stat st;
    ASSERT_EQ(stat(P("stats").c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0444u);

    FileRead stats = ReadFile(P("stats"));
    ASSERT_EQ(stats.err, 0);
    EXPECT_NE(stats.data.find("promotion_queued_total"), std::string::npos);

    auto knobs = client_->TuneGet();
    ASSERT_TRUE(knobs.ok());
    std::set<std::string> knob_names;
    for (const KnobInfo& k : *knobs) knob_names.insert(k.name);
    EXPECT_EQ(ListDir(P("config")).names, knob_names);
    FileRead threshold = ReadFile(P("config/promotion_admission_threshold"));
    ASSERT_EQ(threshold.err, 0);
    EXPECT_EQ(threshold.data, "2\n");
    ASSERT_EQ(stat(P("config/promotion_admission_threshold").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0444u);
    EXPECT_EQ(static_cast<size_t>(st.st_size), threshold.data.size());
    EXPECT_EQ(stat(P("config/no_such_knob").c_str(), &st), -1);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_EQ(stat(P("nothing").c_str(), &st), -1);
    EXPECT_EQ(errno, ENOENT);
}

TEST_F(TierFsMountTest, TierListingsEqualTheMastersList) {
    for (int i = 0; i < 12; ++i) Put("obj-" + std::to_string(i));
    for (int i = 0; i < 4; ++i) MoveToDisk("obj-" + std::to_string(i));
    for (int i = 4; i < 7; ++i) CopyToDisk("obj-" + std::to_string(i));
    Mount();

    std::set<std::string> memory = MasterNames(Tier::kMemory);
    std::set<std::string> disk = MasterNames(Tier::kLocalDisk);
    std::set<std::string> all = MasterNames(std::nullopt);
    EXPECT_EQ(memory.size(), 8u);
    EXPECT_EQ(disk.size(), 7u);
    EXPECT_EQ(all.size(), 12u);
    EXPECT_EQ(ListDir(P("MEMORY")).names, memory);
    EXPECT_EQ(ListDir(P("LOCAL_DISK")).names, disk);
    EXPECT_EQ(ListDir(P("keys")).names, all);

    // A key's file exists exactly where it is listed.
    struct stat st;
    EXPECT_EQ(stat(P("LOCAL_DISK/obj-0").c_str(), &st), 0);
    EXPECT_EQ(stat(P("MEMORY/obj-0").c_str(), &st), -1);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_EQ(stat(P("MEMORY/obj-5").c_str(), &st), 0);
    EXPECT_EQ(stat(P("LOCAL_DISK/obj-5").c_str(), &st), 0);
    EXPECT_EQ(stat(P("LOCAL_DISK/obj-9").c_str(), &st), -1);

    FileRead desc = ReadFile(P("keys/obj-5"));
    ASSERT_EQ(desc.err, 0);
    EXPECT_NE(desc.data.find("size: 4096\n"), std::string::npos) << desc.data;
    EXPECT_NE(desc.data.find("tiers: MEMORY,LOCAL_DISK\n"), std::string::npos) << desc.data;
    EXPECT_NE(desc.data.find("  MEMORY COMPLETE node="), std::string::npos) << desc.data;
    EXPECT_NE(desc.data.find("  LOCAL_DISK COMPLETE node="), std::string::npos) << desc.data;
    ASSERT_EQ(stat(P("keys/obj-5").c_str(), &st), 0);
    EXPECT_EQ(static_cast<size_t>(st.st_size), desc.data.size());
    EXPECT_EQ(st.st_mode & 07777, 0444u);
}

TEST_F(TierFsMountTest, PromotionShowsInMemoryWithinASecond) {
    Put("hot-key");
    MoveToDisk("hot-key");
    Mount();
    EXPECT_EQ(ListDir(P("LOCAL_DISK")).names.count("hot-key"), 1u);
    EXPECT_EQ(ListDir(P("MEMORY")).names.count("hot-key"), 0u);
    struct stat st;
    EXPECT_EQ(stat(P("MEMORY/hot-key").c_str(), &st), -1);  // a failed lookup is not cached
    EXPECT_EQ(GetXattr(P("keys/hot-key"), "user.mooncake.tiers").value, "LOCAL_DISK");

    std::vector<std::string> keys = {"hot-key"};
    auto promoted = client_->Promote(keys, /*force=*/true);
    ASSERT_TRUE(promoted.ok()) << promoted.status().ToString();
    ASSERT_TRUE((*promoted)[0].status.ok()) << (*promoted)[0].status.ToString();
    ASSERT_TRUE(WaitFor([&] { return Has(StatKey("hot-key"), Tier::kMemory); }, 10s))
        << "the promotion did not commit";
    auto committed = Clock::now();
    bool listed = WaitFor([&] { return ListDir(P("MEMORY")).names.count("hot-key") == 1; }, 3s);
    auto listed_after = Clock::now() - committed;
    bool found = WaitFor([&] { return stat(P("MEMORY/hot-key").c_str(), &st) == 0; }, 3s);
    bool tiers = WaitFor(
        [&] {
            return GetXattr(P("keys/hot-key"), "user.mooncake.tiers").value == "MEMORY,LOCAL_DISK";
        },
        3s);
    auto all_after = Clock::now() - committed;
    EXPECT_TRUE(listed);
    EXPECT_TRUE(found);
    EXPECT_TRUE(tiers);
    EXPECT_LT(listed_after, 1s);
    EXPECT_LT(all_after, 1s);
}

TEST_F(TierFsMountTest, ExtendedAttributes) {
    Put("xa/key%1", 5000);
    CopyToDisk("xa/key%1");
    Mount();
    std::string path = P("keys/" + Encode("xa/key%1"));
    EXPECT_EQ(Encode("xa/key%1"), "xa%2Fkey%251");
    EXPECT_EQ(GetXattr(path, "user.mooncake.key").value, "xa/key%1");
    EXPECT_EQ(GetXattr(path, "user.mooncake.tiers").value, "MEMORY,LOCAL_DISK");
    EXPECT_EQ(GetXattr(path, "user.mooncake.size").value, "5000");
    std::string replicas = GetXattr(path, "user.mooncake.replicas").value;
    EXPECT_EQ(replicas.rfind("MEMORY:COMPLETE@", 0), 0u) << replicas;
    EXPECT_NE(replicas.find(",LOCAL_DISK:COMPLETE@"), std::string::npos) << replicas;
    EXPECT_EQ(GetXattr(P("MEMORY/" + Encode("xa/key%1")), "user.mooncake.key").value, "xa/key%1");
    EXPECT_EQ(GetXattr(P("LOCAL_DISK/" + Encode("xa/key%1")), "user.mooncake.size").value, "5000");

    char list[4096];
    ssize_t n = listxattr(path.c_str(), list, sizeof(list));
    ASSERT_GT(n, 0);
    std::set<std::string> names;
    for (ssize_t i = 0; i < n; i += static_cast<ssize_t>(std::strlen(list + i)) + 1) {
        names.insert(list + i);
    }
    for (const std::string& expected : KeyXattrNames()) EXPECT_EQ(names.count(expected), 1u);
    EXPECT_EQ(listxattr(path.c_str(), nullptr, 0), n);

    EXPECT_EQ(GetXattr(path, "user.mooncake.nope").err, ENODATA);
    EXPECT_EQ(GetXattr(P("stats"), "user.mooncake.tiers").err, ENODATA);
    char tiny[2];
    EXPECT_EQ(getxattr(path.c_str(), "user.mooncake.tiers", tiny, sizeof(tiny)), -1);
    EXPECT_EQ(errno, ERANGE);
    EXPECT_EQ(getxattr(path.c_str(), "user.mooncake.tiers", nullptr, 0),
              static_cast<ssize_t>(std::strlen("MEMORY,LOCAL_DISK")));
}

TEST_F(TierFsMountTest, OddKeysRoundTripThroughTheMount) {
    const std::vector<std::string> keys = {
        "a/b%c",
        "with space",
        " lead and trail ",
        std::string("ctl\x01\x1f\x7f", 6),
        "new\nline",
        ".",
        "..",
        "...",
        "%2E",
        std::string("\xff\xfe"
                    "-not-utf8"),
        "\xc3\xa9t\xc3\xa9",
        std::string(300, 'L'),
        std::string(300, 'L') + "2",
        std::string(150, '/'),
    };
    for (const std::string& k : keys) Put(k, 100);
    Mount();

    std::set<std::string> expected;
    for (const std::string& k : keys) expected.insert(Encode(k));
    Listing listing = ListDir(P("keys"));
    ASSERT_EQ(listing.err, 0);
    EXPECT_EQ(listing.names, expected);
    EXPECT_EQ(ListDir(P("MEMORY")).names, expected);
    EXPECT_EQ(expected.count("a%2Fb%25c"), 1u);
    EXPECT_EQ(expected.count("%2E"), 1u);
    EXPECT_EQ(expected.count("%2E%2E"), 1u);

    for (const std::string& k : keys) {
        std::string name = Encode(k);
        SCOPED_TRACE(name);
        EXPECT_LE(name.size(), 255u);
        Xattr key = GetXattr(P("keys/" + name), "user.mooncake.key");
        ASSERT_EQ(key.err, 0);
        EXPECT_EQ(key.value, k);
        FileRead desc = ReadFile(P("keys/" + name));
        ASSERT_EQ(desc.err, 0);
        EXPECT_EQ(desc.data.rfind("key: " + name_codec::EscapeKey(k) + "\n", 0), 0u);
        EXPECT_EQ(GetXattr(P("MEMORY/" + name), "user.mooncake.key").value, k);
    }
    // Only the canonical name of a key resolves.
    struct stat st;
    Put("abc", 10);
    EXPECT_EQ(stat(P("keys/abc").c_str(), &st), 0);
    EXPECT_EQ(stat(P("keys/%61bc").c_str(), &st), -1);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_EQ(stat(P("keys/a%2fb%25c").c_str(), &st), -1);
}

TEST_F(TierFsMountTest, HashedNameResolvesWithoutAListing) {
    const std::string key = std::string(200, 'h') + "/" + std::string(200, 'x');
    const std::string sibling = std::string(200, 'h') + "/" + std::string(200, 'y');
    Put(key, 10);
    Put(sibling, 10);
    Mount();
    std::string name = Encode(key);
    ASSERT_TRUE(name_codec::IsHashedName(name));
    // No readdir first: the lookup finds the key by listing the name's prefix.
    EXPECT_EQ(GetXattr(P("keys/" + name), "user.mooncake.key").value, key);
    EXPECT_EQ(GetXattr(P("MEMORY/" + name), "user.mooncake.key").value, key);
    EXPECT_EQ(GetXattr(P("keys/" + Encode(sibling)), "user.mooncake.key").value, sibling);
    struct stat st;
    EXPECT_EQ(stat(P("LOCAL_DISK/" + name).c_str(), &st), -1);
    EXPECT_EQ(errno, ENOENT);
    std::string wrong = name.substr(0, name.size() - 1) + (name.back() == '0' ? "1" : "0");
    EXPECT_EQ(stat(P("keys/" + wrong).c_str(), &st), -1);
    EXPECT_EQ(errno, ENOENT);
}

TEST_F(TierFsMountTest, ReadOnlyRefusesWrites) {
    Put("ro-key");
    Mount();
    std::string key_file = P("keys/ro-key");
    EXPECT_EQ(WriteFile(key_file, "x"), EROFS);
    EXPECT_EQ(WriteFile(P("config/promotion_admission_threshold"), "5\n"), EROFS);
    EXPECT_EQ(WriteFile(P("keys/new-key"), "x", O_WRONLY | O_CREAT), EROFS);
    EXPECT_EQ(WriteFile(P("stats"), "x"), EROFS);
    EXPECT_EQ(unlink(key_file.c_str()), -1);
    EXPECT_EQ(errno, EROFS);
    EXPECT_EQ(mkdir(P("keys/d").c_str(), 0755), -1);
    EXPECT_EQ(errno, EROFS);
    EXPECT_EQ(rename(key_file.c_str(), P("keys/other").c_str()), -1);
    EXPECT_EQ(errno, EROFS);
    EXPECT_EQ(truncate(key_file.c_str(), 0), -1);
    EXPECT_EQ(errno, EROFS);
    EXPECT_EQ(setxattr(key_file.c_str(), "user.mooncake.tiers", "MEMORY", 6, 0), -1);
    EXPECT_EQ(errno, EROFS);
    EXPECT_EQ(chmod(key_file.c_str(), 0777), -1);
    EXPECT_TRUE(client_->Stat("ro-key").ok());
    auto knobs = client_->TuneGet();
    ASSERT_TRUE(knobs.ok());
    for (const KnobInfo& k : *knobs) {
        if (k.name == "promotion_admission_threshold") {
            EXPECT_EQ(k.value, "2");
        }
    }
}

std::string KnobValue(Client& client, const std::string& name) {
    auto knobs = client.TuneGet();
    if (!knobs.ok()) return "<" + knobs.status().ToString() + ">";
    for (const KnobInfo& k : *knobs) {
        if (k.name == name) return k.value;
    }
    return "<missing>";
}

TEST_F(TierFsMountTest, ConfigWritesWithRw) {
    Put("rw-key");
    Mount(/*rw=*/true);
    const std::string knob = P("config/promotion_admission_threshold");
    struct stat st;
    ASSERT_EQ(stat(knob.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644u);
    ASSERT_EQ(stat(P("config/dram_size").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0444u);  // start-only

    // Valid: applied through the master, read back through the view.
    EXPECT_EQ(WriteFile(knob, "5\n"), 0);
    EXPECT_EQ(KnobValue(*client_, "promotion_admission_threshold"), "5");
    EXPECT_EQ(ReadFile(knob).data, "5\n");
    // The shell's way: open with O_TRUNC, one write.
    std::string cmd = "echo 7 > '" + knob + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    EXPECT_EQ(KnobValue(*client_, "promotion_admission_threshold"), "7");
    EXPECT_EQ(WriteFile(P("config/eviction_high_watermark_ratio"), "0.9"), 0);
    EXPECT_EQ(std::stod(KnobValue(*client_, "eviction_high_watermark_ratio")), 0.9);

    // Invalid values: EINVAL, nothing changes.
    EXPECT_EQ(WriteFile(knob, "999\n"), EINVAL);
    EXPECT_EQ(WriteFile(knob, "many\n"), EINVAL);
    EXPECT_EQ(WriteFile(knob, "\n"), EINVAL);
    EXPECT_EQ(KnobValue(*client_, "promotion_admission_threshold"), "7");
    cmd = "echo 999 > '" + knob + "' 2>/dev/null";
    EXPECT_NE(std::system(cmd.c_str()), 0);
    // Start-only knob: refused (EPERM), unchanged.
    std::string dram = KnobValue(*client_, "dram_size");
    int err = WriteFile(P("config/dram_size"), "1GiB\n");
    EXPECT_TRUE(err == EPERM || err == EINVAL) << strerror(err);
    EXPECT_EQ(KnobValue(*client_, "dram_size"), dram);

    // Still no writes to keys, no new files.
    EXPECT_EQ(WriteFile(P("keys/rw-key"), "x"), EACCES);
    EXPECT_NE(WriteFile(P("keys/new"), "x", O_WRONLY | O_CREAT), 0);
    EXPECT_NE(WriteFile(P("config/new_knob"), "x", O_WRONLY | O_CREAT), 0);
    EXPECT_EQ(unlink(P("keys/rw-key").c_str()), -1);
    EXPECT_TRUE(client_->Stat("rw-key").ok());
}

TEST_F(TierFsMountTest, DaemonStoppedAndRestartedUnderALiveMount) {
    Put("before");
    Mount();
    ASSERT_EQ(ListDir(P("keys")).names.count("before"), 1u);
    ASSERT_EQ(ReadFile(P("keys/before")).err, 0);
    client_.reset();
    EXPECT_EQ(daemon_->Stop(SIGKILL, 5s), 128 + SIGKILL);

    auto failed = [](int err) { return err == EIO || err == ENOTCONN; };
    auto start = Clock::now();
    Listing keys = ListDir(P("keys"));
    EXPECT_TRUE(failed(keys.err)) << strerror(keys.err);
    FileRead desc = ReadFile(P("keys/before"));
    EXPECT_TRUE(failed(desc.err)) << strerror(desc.err);
    FileRead stats = ReadFile(P("stats"));
    EXPECT_TRUE(failed(stats.err)) << strerror(stats.err);
    EXPECT_TRUE(failed(GetXattr(P("keys/before"), "user.mooncake.tiers").err));
    EXPECT_LT(Clock::now() - start, 2s);
    // The fixed part of the tree still answers.
    EXPECT_EQ(ListDir(mnt_).err, 0);
    EXPECT_TRUE(tierfs_->Running());

    StartDaemon();  // same port, same disk directory
    Put("after");
    bool recovered = WaitFor(
        [&] {
            Listing l = ListDir(P("keys"));
            return l.err == 0 && l.names.count("after") == 1;
        },
        3s);
    EXPECT_TRUE(recovered);
    EXPECT_EQ(ReadFile(P("keys/after")).err, 0);
    EXPECT_EQ(GetXattr(P("keys/after"), "user.mooncake.key").value, "after");
    EXPECT_EQ(ReadFile(P("stats")).err, 0);
}

std::string MetricLine(const std::string& exposition, const std::string& series) {
    std::istringstream in(exposition);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(series + " ", 0) == 0 || line.rfind("mooncake_" + series + " ", 0) == 0) {
            return line;
        }
    }
    return "";
}

TEST_F(TierFsMountTest, LookingIsNotAnAccess) {
    Put("cold-key");
    MoveToDisk("cold-key");
    Mount();
    ObjectInfo before = StatKey("cold-key");
    auto metrics_before = client_->MetricsText();
    ASSERT_TRUE(metrics_before.ok());
    for (int i = 0; i < 100; ++i) {
        FileRead desc = ReadFile(P("keys/cold-key"));
        ASSERT_EQ(desc.err, 0);
        ASSERT_NE(desc.data.find("tiers: LOCAL_DISK\n"), std::string::npos);
    }
    for (int i = 0; i < 10; ++i) {
        ASSERT_EQ(ReadFile(P("LOCAL_DISK/cold-key")).err, 0);
        ASSERT_EQ(GetXattr(P("keys/cold-key"), "user.mooncake.tiers").value, "LOCAL_DISK");
        ASSERT_EQ(ListDir(P("LOCAL_DISK")).names.count("cold-key"), 1u);
    }
    std::this_thread::sleep_for(200ms);  // room for a (wrongly) queued promotion to show
    ObjectInfo after = StatKey("cold-key");
    EXPECT_EQ(TiersText(after.object), "LOCAL_DISK");
    EXPECT_EQ(after.object.sketch_estimate, before.object.sketch_estimate);
    EXPECT_FALSE(after.object.promotion_in_flight);
    EXPECT_EQ(after.object.recency, before.object.recency);
    auto metrics_after = client_->MetricsText();
    ASSERT_TRUE(metrics_after.ok());
    EXPECT_EQ(MetricLine(*metrics_after, "promotion_attempts_total"),
              MetricLine(*metrics_before, "promotion_attempts_total"));
}

TEST_F(TierFsMountTest, ListingPagesThroughManyKeys) {
    // TIERFS_TEST_MANY_KEYS=100000 (with TIERFS_TEST_DRAM=1GiB: every key takes 4 KiB of DRAM)
    // for the full-size check; the default keeps the suite short.
    const char* many = std::getenv("TIERFS_TEST_MANY_KEYS");
    const int kKeys = many != nullptr ? std::atoi(many) : 10000;
    std::vector<std::string> keys;
    for (int i = 0; i < kKeys; ++i) keys.push_back("many/" + std::to_string(100000 + i));
    const std::string value = "v";
    for (int from = 0; from < kKeys; from += 2000) {
        std::vector<std::pair<std::string, std::span<const std::byte>>> items;
        for (int i = from; i < std::min(kKeys, from + 2000); ++i) {
            items.emplace_back(keys[i], std::as_bytes(std::span(value.data(), value.size())));
        }
        for (const Status& st : client_->BatchPut(items)) ASSERT_TRUE(st.ok()) << st.ToString();
    }
    Mount();
    auto start = Clock::now();
    Listing listing = ListDir(P("keys"));
    auto took = Clock::now() - start;
    ASSERT_EQ(listing.err, 0);
    EXPECT_EQ(listing.names.size(), static_cast<size_t>(kKeys));
    EXPECT_EQ(listing.names, MasterNames(std::nullopt));
    EXPECT_LT(took, 5s);
    std::fprintf(stderr, "listed %d keys in %lld ms\n", kKeys,
                 static_cast<long long>(
                     std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
    EXPECT_EQ(ListDir(P("MEMORY")).names.size(), static_cast<size_t>(kKeys));
}

// Lookups raise inode counts; the kernel's forget (forget_multi when it drops many) brings
// them back to zero and the view drops the inodes. statvfs's f_files counts live inodes.
TEST_F(TierFsMountTest, ForgetDropsInodes) {
    for (int i = 0; i < 40; ++i) Put("inode-" + std::to_string(i), 10);
    Mount();
    auto live = [&] {
        struct statvfs sv;
        return statvfs(mnt_.c_str(), &sv) == 0 ? static_cast<long>(sv.f_files) : -1L;
    };
    const long fixed = live();
    EXPECT_EQ(fixed, 6);
    for (int i = 0; i < 40; ++i) {
        struct stat st;
        ASSERT_EQ(stat(P("keys/inode-" + std::to_string(i)).c_str(), &st), 0);
        ASSERT_EQ(stat(P("MEMORY/inode-" + std::to_string(i)).c_str(), &st), 0);
    }
    EXPECT_EQ(live(), fixed + 80);
    // Ask the kernel to drop its dentries and inodes: it sends forgets for all of them.
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
    if (fd < 0 || write(fd, "2\n", 2) != 2) {
        if (fd >= 0) close(fd);
        GTEST_SKIP() << "cannot write /proc/sys/vm/drop_caches here";
    }
    close(fd);
    EXPECT_TRUE(WaitFor([&] { return live() == fixed; }, 3s)) << live() << " inodes left";
    // Looked up again, a key gets a fresh inode and answers as before.
    EXPECT_EQ(GetXattr(P("keys/inode-7"), "user.mooncake.key").value, "inode-7");
    EXPECT_EQ(live(), fixed + 1);
}

TEST_F(TierFsMountTest, SigtermUnmountsCleanly) {
    Mount();
    ASSERT_EQ(ListDir(P("keys")).err, 0);
    EXPECT_EQ(tierfs_->Stop(SIGTERM, 5s), 0);
    tierfs_.reset();
    EXPECT_FALSE(IsMounted(mnt_));
}

}  // namespace
}  // namespace mooncake::tierfs

namespace mooncake::tierfs {
namespace {

// The mount's options and its super block's options, from /proc/self/mountinfo ("" if absent).
std::string MountInfoLine(const std::string& path) {
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string id, parent, dev, root, mount_point;
        fields >> id >> parent >> dev >> root >> mount_point;
        if (mount_point == path) return line;
    }
    return "";
}

bool HasMountOption(const std::string& line, const std::string& option) {
    std::string padded = line;
    for (char& c : padded) {
        if (c == ',') c = ' ';
    }
    std::istringstream words(padded);
    for (std::string w; words >> w;) {
        if (w == option) return true;
    }
    return false;
}

// Security defaults (DESIGN.md, issue #13): read-only, no allow_other unless asked; against a
// daemon with a token, the view without one reads but cannot tune; with the token from a file
// or either environment variable it can.
TEST_F(TierFsMountTest, SecurityDefaultsAndTheToken) {
    client_.reset();
    ASSERT_EQ(daemon_->Stop(SIGTERM, 5s), 0);
    const std::string token_file = dir_ + "/token";
    std::ofstream(token_file) << "fuse-test-token\n";
    daemon_extra_ = {"--auth_token_file", token_file};
    client_token_ = "fuse-test-token";
    StartDaemon();
    Put("sec-key");
    const std::string knob = P("config/promotion_admission_threshold");
    auto remount = [&](bool rw, const std::vector<std::string>& extra) {
        if (tierfs_) tierfs_->Stop(SIGTERM, 3s);
        Unmount();
        ASSERT_TRUE(WaitFor([&] { return !IsMounted(mnt_); }, 5s));
        Mount(rw, extra);
    };

    // Default: read-only, only this user sees it.
    Mount();
    std::string info = MountInfoLine(mnt_);
    EXPECT_TRUE(HasMountOption(info, "ro")) << info;
    EXPECT_FALSE(HasMountOption(info, "allow_other")) << info;
    EXPECT_EQ(ReadFile(P("keys/sec-key")).err, 0);  // reads need no token
    EXPECT_EQ(WriteFile(knob, "5\n"), EROFS);

    // -o rw without a token: reads work, a knob write is refused by the daemon (EACCES).
    remount(true, {});
    info = MountInfoLine(mnt_);
    EXPECT_FALSE(HasMountOption(info, "ro")) << info;
    EXPECT_FALSE(HasMountOption(info, "allow_other")) << info;
    EXPECT_EQ(ReadFile(P("keys/sec-key")).err, 0);
    EXPECT_EQ(WriteFile(knob, "5\n"), EACCES);
    EXPECT_EQ(KnobValue(*client_, "promotion_admission_threshold"), "2");

    // The token from --auth_token_file.
    remount(true, {"--auth_token_file", token_file});
    EXPECT_EQ(WriteFile(knob, "5\n"), 0);
    EXPECT_EQ(KnobValue(*client_, "promotion_admission_threshold"), "5");

    // From $MOONCAKE_AUTH_TOKEN_FILE, then from $MOONCAKE_AUTH_TOKEN (the child inherits them).
    setenv("MOONCAKE_AUTH_TOKEN_FILE", token_file.c_str(), 1);
    remount(true, {});
    unsetenv("MOONCAKE_AUTH_TOKEN_FILE");
    EXPECT_EQ(WriteFile(knob, "6\n"), 0);
    EXPECT_EQ(KnobValue(*client_, "promotion_admission_threshold"), "6");
    setenv("MOONCAKE_AUTH_TOKEN", "fuse-test-token", 1);
    remount(true, {});
    unsetenv("MOONCAKE_AUTH_TOKEN");
    EXPECT_EQ(WriteFile(knob, "7\n"), 0);
    EXPECT_EQ(KnobValue(*client_, "promotion_admission_threshold"), "7");

    // allow_other only when asked for.
    remount(false, {"-o", "allow_other"});
    info = MountInfoLine(mnt_);
    EXPECT_TRUE(HasMountOption(info, "allow_other")) << info;
    EXPECT_TRUE(HasMountOption(info, "ro")) << info;

    // An unreadable token file is a usage error before anything is mounted.
    if (tierfs_) tierfs_->Stop(SIGTERM, 3s);
    Unmount();
    Process bad({kTierFsBin, mnt_, "--master", master_, "-f", "--auth_token_file",
                 dir_ + "/no-such-token"},
                dir_ + "/tierfs-bad.log");
    ASSERT_TRUE(bad.Start());
    ASSERT_TRUE(WaitFor([&] { return !bad.Running(); }, 5s));
    EXPECT_NE(ReadWhole(dir_ + "/tierfs-bad.log").find("no-such-token"), std::string::npos);
    EXPECT_FALSE(IsMounted(mnt_));
    // The token is never taken from argv: there is no such option.
    Process argv_token({kTierFsBin, mnt_, "--master", master_, "-f", "--auth_token",
                        "fuse-test-token"},
                       dir_ + "/tierfs-argv.log");
    ASSERT_TRUE(argv_token.Start());
    ASSERT_TRUE(WaitFor([&] { return !argv_token.Running(); }, 5s));
    EXPECT_NE(ReadWhole(dir_ + "/tierfs-argv.log").find("unknown option"), std::string::npos);
}

// The FUSE rows of the bad-input matrix (docs/BAD_INPUT.md): odd names get a clear errno and
// break nothing.
TEST_F(TierFsMountTest, OddNamesGetClearErrnos) {
    Put("good-key", 100);
    Mount();
    auto stat_errno = [](const std::string& path) {
        struct stat st;
        return ::stat(path.c_str(), &st) == 0 ? 0 : errno;
    };
    // Undecodable or non-canonical escapes: no such file.
    for (const char* name : {"%ZZ", "%2", "abc%", "%", "%g0", "%2f", "good%2Dkey"}) {
        SCOPED_TRACE(name);
        EXPECT_EQ(stat_errno(P(std::string("keys/") + name)), ENOENT);
        EXPECT_EQ(stat_errno(P(std::string("MEMORY/") + name)), ENOENT);
    }
    // Longer than any name this view makes (over 255 bytes, keys get hashed names).
    EXPECT_EQ(stat_errno(P("keys/" + std::string(256, 'n'))), ENAMETOOLONG);
    EXPECT_EQ(stat_errno(P("MEMORY/" + std::string(300, 'n'))), ENAMETOOLONG);
    EXPECT_EQ(stat_errno(P("config/" + std::string(2000, 'n'))), ENAMETOOLONG);
    EXPECT_EQ(stat_errno(P("keys/" + std::string(255, 'n'))), ENOENT);
    // "." and ".." are the directories themselves, never keys.
    struct stat dot, keys_dir;
    ASSERT_EQ(::stat(P("keys/.").c_str(), &dot), 0);
    ASSERT_EQ(::stat(P("keys").c_str(), &keys_dir), 0);
    EXPECT_EQ(dot.st_ino, keys_dir.st_ino);
    EXPECT_TRUE(S_ISDIR(dot.st_mode));
    struct stat dotdot, root;
    ASSERT_EQ(::stat(P("keys/..").c_str(), &dotdot), 0);
    ASSERT_EQ(::stat(mnt_.c_str(), &root), 0);
    EXPECT_EQ(dotdot.st_ino, root.st_ino);
    // Unknown top-level names and files under files.
    EXPECT_EQ(stat_errno(P("SSD")), ENOENT);
    EXPECT_EQ(stat_errno(P("keys/good-key/x")), ENOTDIR);
    EXPECT_EQ(stat_errno(P("config/no_such_knob")), ENOENT);
    // Writes on the read-only mount (more in ReadOnlyRefusesWrites).
    EXPECT_EQ(WriteFile(P("keys/%ZZ"), "x", O_WRONLY | O_CREAT), EROFS);
    // Nothing broke: the key is still listed, described and stored.
    EXPECT_EQ(ListDir(P("keys")).names.count("good-key"), 1u);
    EXPECT_EQ(ReadFile(P("keys/good-key")).err, 0);
    EXPECT_TRUE(client_->Stat("good-key").ok());
}

}  // namespace
}  // namespace mooncake::tierfs
