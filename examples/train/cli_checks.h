#pragma once
// Range checks for kiln-train's numeric options, as CLI11 validators with short
// messages. CLI11's own (PositiveNumber, NonNegativeNumber, Range) print their
// bounds as doubles, so a positive-number check reads "Value 0 not in range
// 0.000000 to 1797...": 309 digits of DBL_MAX. These say what is expected instead;
// CLI11 prefixes the option's name:
//
//   app.add_option("--lr", a.lr)->check(kiln::train::positive_number());
//   $ kiln-train --lr 0
//   --lr: must be a positive number, got 0
//
// Each validator looks at the text as typed, before CLI11 converts it, and refuses
// text that is not a number of its kind (e.g. "--epochs: must be a positive integer,
// got '2.5'").

#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>

namespace kiln::train {

/// An integer in [min, max] (written as CLI11 reads it: decimal, or 0x hex); e.g. "must be a
/// positive integer, got 0" when min is 1, "must be a non-negative integer, got -1" when min is 0,
/// and "must be at most 18446744073709551615, got 18446744073709551616" above max.
CLI::Validator integer_in(
    int64_t min, uint64_t max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));

/// A finite number > 0: "must be a positive number, got 0".
CLI::Validator positive_number();

/// A finite number >= 0: "must be a non-negative number, got -0.5".
CLI::Validator non_negative_number();

/// A number in [low, high]: "must be a number from 0 to 0.99, got 1.5".
CLI::Validator number_in(double low, double high);

}  // namespace kiln::train
