#include "cli_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace kiln::train {

namespace {

// The text as typed, for a message: at most 40 characters, '' when empty.
std::string shown(const std::string& text) {
  if (text.empty()) return "''";
  return text.size() > 40 ? text.substr(0, 40) + "..." : text;
}

std::string number_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

// Parses text the way CLI11 converts it to a double (strtod, the whole text), so
// that what is checked is what the option will hold. False if it is no number.
bool parse_number(const std::string& text, double& value) {
  if (text.empty()) return false;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

CLI::Validator number_check(std::string expected, const std::string& description,
                            bool (*accepts)(double, double, double), double low, double high) {
  return CLI::Validator(
      [expected, accepts, low, high](std::string& text) -> std::string {
        double value = 0;
        if (parse_number(text, value) && std::isfinite(value) && accepts(value, low, high))
          return std::string();
        return "must be " + expected + ", got " + shown(text);
      },
      description);
}

}  // namespace

CLI::Validator integer_in(int64_t min, uint64_t max) {
  const std::string kind = min == 1   ? "a positive integer"
                           : min == 0 ? "a non-negative integer"
                                      : "an integer >= " + std::to_string(min);
  const std::string description = min == 1 ? "POSITIVE" : min == 0 ? "NONNEGATIVE" : "INT";
  return CLI::Validator(
      [kind, min, max](std::string& text) -> std::string {
        const std::string wrong = "must be " + kind + ", got " + shown(text);
        if (text.empty()) return wrong;
        // Base 0 like CLI11's own conversion (0x10 is 16), but with the range checked:
        // CLI11 turns "-1" into 18446744073709551615 for an unsigned option.
        char* end = nullptr;
        errno = 0;
        if (text.find('-') != std::string::npos) {
          long long value = std::strtoll(text.c_str(), &end, 0);
          if (end != text.c_str() + text.size() || errno == ERANGE || value < min) return wrong;
          return std::string();
        }
        unsigned long long value = std::strtoull(text.c_str(), &end, 0);
        if (end != text.c_str() + text.size()) return wrong;
        if (errno == ERANGE || value > max)
          return "must be at most " + std::to_string(max) + ", got " + shown(text);
        if (min > 0 && value < static_cast<uint64_t>(min)) return wrong;
        return std::string();
      },
      description);
}

CLI::Validator positive_number() {
  return number_check(
      "a positive number", "POSITIVE", [](double v, double, double) { return v > 0; }, 0, 0);
}

CLI::Validator non_negative_number() {
  return number_check(
      "a non-negative number", "NONNEGATIVE", [](double v, double, double) { return v >= 0; }, 0,
      0);
}

CLI::Validator number_in(double low, double high) {
  const std::string range = number_text(low) + " to " + number_text(high);
  return number_check(
      "a number from " + range, "in [" + number_text(low) + ", " + number_text(high) + "]",
      [](double v, double lo, double hi) { return v >= lo && v <= hi; }, low, high);
}

}  // namespace kiln::train
