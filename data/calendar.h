// calendar.h: the timestamps of series files, one place for all of them: read strictly (a date
// that does not exist, such as 2020-02-30 or 2020-13-01, a time past 23:59:59, or a step past
// int64 is refused), ordered by the instant they name (not their text), the cadence of a series
// read off its stamps, and the stamps after a series' last written in the series' own style.
//
// Stamps: whole-number steps ("17"), or dates YYYY-MM-DD with an optional time of day after 'T'
// or ' ' (HH:MM, HH:MM:SS, HH:MM:SS.ffffff), years 0001-9999, no time zone (a zone suffix is
// refused: the series' instants would be ambiguous across a daylight-saving change).
//
// Cadences (series_cadence): a fixed step in steps or microseconds (hourly, daily, weekly,
// 15-minute...); whole months (monthly, quarterly, yearly), kept on the day of month or on the
// month's end (2020-01-31, 2020-02-29, 2020-03-31); business days (daily stamps, none on a
// Saturday or Sunday, skipping weekends). The cadence is the most frequent difference between
// consecutive stamps, so one gap does not change it; a month-based series is one whose every
// difference is whole months.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace bg {

// How ds is written: whole-number steps, or dates (with or without a time of day).
enum class StampKind { step, date };

// A stamp read: its instant (a step, or microseconds since 1970-01-01T00:00:00) and, for a
// date, how it was written, so that the stamps after it are written alike.
struct Stamp {
  StampKind kind = StampKind::step;
  int64_t at = 0;           // the step, or microseconds since the epoch
  bool has_time = false;    // a time of day was written
  bool has_seconds = false; // ... with seconds
  int fraction_digits = 0;  // ... and this many digits of a fraction of a second
  char separator = ' ';     // between the date and the time: 'T' or ' '
};

// Reads `text` as a step or a date, or returns false with *why set ("month 13 of 2020-13-01").
bool parse_stamp(const std::string& text, Stamp* out, std::string* why);
// The stamp written in `style`'s form at instant `at` (a date: refused past year 9999).
std::string format_stamp(const Stamp& style, int64_t at);

// Civil dates: days since 1970-01-01 and back (H. Hinnant's algorithms), the month's length,
// the weekday (0 Monday .. 6 Sunday).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d);
void civil_from_days(int64_t z, int64_t* y, int64_t* m, int64_t* d);
int64_t days_in_month(int64_t y, int64_t m);
int weekday(int64_t days);

inline constexpr int64_t kMicrosPerDay = int64_t(86400) * 1000000;

struct Cadence {
  enum class Kind { unknown, fixed, months, business_days } kind = Kind::unknown;
  int64_t step = 0;        // fixed: steps or microseconds; months: months; business: days
  bool month_end = false;  // months: kept on the month's last day
  // What it is, for messages and docs: "1 hour", "3 months (month ends)", "business days".
  std::string describe(StampKind stamps) const;
};

// The cadence of `stamps` (one series', in order, at least two strictly increasing; fewer give
// Kind::unknown).
Cadence series_cadence(const std::vector<Stamp>& stamps);

// The season of a cadence, in steps: the cycle its series most often repeat. Sub-daily steps
// that divide a day: a day (24 hourly, 48 half-hourly, 96 quarter-hourly); daily 7; business
// days 5; weekly 52; monthly 12; quarterly 4; yearly 1. 0 where the stamps say none (steps,
// unknown, other periods).
int64_t cadence_season(const Cadence& cadence, StampKind stamps);

// The `count` stamps after `last` at `cadence`, written in last's style; refused in one line
// (naming `what`) when a step or a date runs past what the stamps can hold.
std::vector<std::string> stamps_after(const Stamp& last, const Cadence& cadence, int64_t count,
                                      const std::string& what);

}  // namespace bg
