#include "cli/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace evo::cli {
namespace {

bool numeric(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' || c == 'e' || c == '%' || c == 'x'))
      return false;
  return std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+';
}

}  // namespace

void Table::print(std::ostream& out) const {
  std::vector<std::size_t> w(header_.size());
  for (std::size_t i = 0; i < header_.size(); ++i) w[i] = header_[i].size();
  for (const auto& r : rows_)
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  auto line = [&](const std::vector<std::string>& r, bool head) {
    std::string s;
    for (std::size_t i = 0; i < w.size(); ++i) {
      std::string cell = i < r.size() ? r[i] : "";
      std::string pad(w[i] - std::min(w[i], cell.size()), ' ');
      s += (i ? "  " : "") + (!head && numeric(cell) ? pad + cell : cell + (i + 1 < w.size() ? pad : ""));
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << '\n';
  };
  line(header_, true);
  for (const auto& r : rows_) line(r, false);
}

void Table::print_markdown(std::ostream& out) const {
  auto line = [&](const std::vector<std::string>& r) {
    out << '|';
    for (std::size_t i = 0; i < header_.size(); ++i) out << ' ' << (i < r.size() ? r[i] : "") << " |";
    out << '\n';
  };
  line(header_);
  out << '|';
  for (std::size_t i = 0; i < header_.size(); ++i) out << " --- |";
  out << '\n';
  for (const auto& r : rows_) line(r);
}

std::string fmt_num(double v, int precision) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string fmt_us(double us) { return us > 0 ? fmt_num(us, us < 100 ? 2 : 1) : ""; }

std::string fmt_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) b /= 1000, ++u;
  return fmt_num(b, u ? 2 : 0) + " " + units[u];
}

}  // namespace evo::cli
