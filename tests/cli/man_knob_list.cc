// Prints the knob list of mooncaked(8) in mdoc, from the knob table itself (core/base/knobs.def):
// the man page's section between the "BEGIN KNOBS" and "END KNOBS" comments must equal this
// output (ctest man_mooncaked_knobs checks it). To refresh the page after a knob changes:
//   cmake --build build --target update_man_knobs
#include <cctype>
#include <iostream>
#include <string>
#include <string_view>

#include "core/base/knobs.h"

namespace {

// mdoc text: backslashes and hyphens escaped ("--listen" must stay two minus signs).
std::string Escape(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '\\') {
            out += "\\e";
        } else if (c == '-') {
            out += "\\-";
        } else {
            out += c;
        }
    }
    return out;
}

// Fills `text` into lines of at most 78 bytes (mandoc's style check wants 80 at most).
void PrintFilled(const std::string& text) {
    std::string line;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find(' ', start);
        if (end == std::string::npos) end = text.size();
        std::string word = text.substr(start, end - start);
        start = end + 1;
        if (!line.empty() && line.size() + 1 + word.size() > 78) {
            std::cout << line << "\n";
            line.clear();
        }
        if (line.empty() && !word.empty() && (word[0] == '.' || word[0] == '\'')) {
            word.insert(0, "\\&");
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty()) std::cout << line << "\n";
}

const char* ArgName(mooncake::KnobType type) {
    switch (type) {
        case mooncake::KnobType::kBool:
            return nullptr;
        case mooncake::KnobType::kInt:
            return "N";
        case mooncake::KnobType::kDouble:
            return "RATIO";
        case mooncake::KnobType::kSize:
            return "SIZE";
        case mooncake::KnobType::kEnum:
            return "NAME";
        case mooncake::KnobType::kString:
            return "TEXT";
    }
    return "VALUE";
}

}  // namespace

int main() {
    for (bool tunable : {false, true}) {
        std::cout << ".Ss " << (tunable ? "Runtime-tunable knobs" : "Start-up knobs") << "\n";
        std::cout << ".Bl -tag -width Ds\n";
        for (const mooncake::KnobDef& def : mooncake::KnobTable()) {
            if (def.runtime_tunable != tunable) continue;
            std::cout << ".It Fl -" << def.name;
            if (const char* arg = ArgName(def.type)) std::cout << " Ns = Ns Ar " << arg;
            std::cout << "\n";
            std::string doc(def.doc);
            // A sentence starts with a capital, unless it starts with a unit ("ms a read...").
            if (doc.find(' ') > 2) {
                doc[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(doc[0])));
            }
            std::string def_text(def.default_text);
            PrintFilled(Escape(doc) + ".");
            PrintFilled("Range: " + Escape(def.RangeText()) +
                        "; default: " + (def_text.empty() ? "empty" : Escape(def_text)) + ".");
        }
        std::cout << ".El\n";
    }
    return 0;
}
