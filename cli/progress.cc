#include "cli/progress.h"

#include <cstdio>

namespace mooncake::cli {

Progress::Progress(std::string label, size_t total, bool draw)
    : label_(std::move(label)), total_(total), draw_(draw) {
    Draw(true);
}

std::string Progress::Bar(size_t done, size_t total, size_t width) {
    size_t filled = total == 0 ? width : done * width / total;
    if (filled > width) filled = width;
    std::string bar = "[" + std::string(filled, '#') + std::string(width - filled, '-') + "]";
    std::string total_text = std::to_string(total);
    std::string done_text = std::to_string(done);
    if (done_text.size() < total_text.size()) {
        done_text.insert(0, total_text.size() - done_text.size(), ' ');
    }
    return bar + " " + done_text + "/" + total_text + " keys";
}

void Progress::Advance(size_t done_now) {
    done_ += done_now;
    Draw(false);
}

void Progress::Draw(bool force) {
    if (!draw_ || finished_) return;
    auto now = std::chrono::steady_clock::now();
    // Redraw at most 20 times a second: a terminal is slower than a fast batch loop.
    if (!force && now - last_draw_ < std::chrono::milliseconds(50) && done_ < total_) return;
    last_draw_ = now;
    std::string line = "\r" + label_ + " " + Bar(done_, total_, 30);
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
}

void Progress::Finish() {
    if (!draw_ || finished_) return;
    Draw(true);
    finished_ = true;
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

}  // namespace mooncake::cli
