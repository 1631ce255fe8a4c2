// Progress of a --prefix command over many keys: a bar redrawn in place when stdout is a
// terminal, nothing otherwise (the command then prints one summary line at the end).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace mooncake::cli {

class Progress {
  public:
    // `draw` false makes every call a no-op (stdout not a terminal, or --json).
    Progress(std::string label, size_t total, bool draw);
    ~Progress() { Finish(); }
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    void Advance(size_t done_now);
    // Draws the final state and ends the line; later calls do nothing.
    void Finish();

    // The bar for `done` of `total` in `width` cells, e.g. "[#####-----]  50/100 keys".
    static std::string Bar(size_t done, size_t total, size_t width);

  private:
    void Draw(bool force);

    std::string label_;
    size_t total_;
    size_t done_ = 0;
    bool draw_;
    bool finished_ = false;
    std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace mooncake::cli
