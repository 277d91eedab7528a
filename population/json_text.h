// Verdicts as JSON text, for the store's columns and the work queue's rows.
#pragma once
#include <cmath>
#include <nlohmann/json.hpp>

namespace evo {

// JSON has no NaN or infinity: nlohmann writes them as null, which does not read back into a
// double. A max error of inf or a NaN figure is stored as the string "NaN", "Infinity" or
// "-Infinity" and turned back into a number when the struct will not read otherwise.
inline nlohmann::json nonfinite_to_text(nlohmann::json j) {
  if (j.is_number_float() && !std::isfinite(j.get<double>())) {
    const double v = j.get<double>();
    return std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
  }
  if (j.is_structured())
    for (auto& item : j) item = nonfinite_to_text(std::move(item));
  return j;
}

inline nlohmann::json text_to_nonfinite(nlohmann::json j) {
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "NaN") return std::nan("");
    if (s == "Infinity") return INFINITY;
    if (s == "-Infinity") return -INFINITY;
  }
  if (j.is_structured())
    for (auto& item : j) item = text_to_nonfinite(std::move(item));
  return j;
}

}  // namespace evo
