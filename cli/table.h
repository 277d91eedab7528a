// Plain-text tables for the terminal: columns sized to their widest cell, numbers right-aligned.
#pragma once
#include <ostream>
#include <string>
#include <vector>

namespace evo::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;
  // GitHub Markdown, for `evo compare` and docs/.
  void print_markdown(std::ostream& out) const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string fmt_num(double v, int precision = 2);  // "" for NaN/0-as-missing is the caller's choice
std::string fmt_us(double us);                      // "12.34"
std::string fmt_bytes(double b);                    // "1.5 MB"

}  // namespace evo::cli
