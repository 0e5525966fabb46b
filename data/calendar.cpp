#include "calendar.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/error.h"

namespace bg {
namespace {

constexpr int64_t kMicrosPerSecond = 1000000;

bool digits(const std::string& t, size_t at, size_t n, int64_t* v) {
  if (at + n > t.size()) return false;
  *v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (t[i] < '0' || t[i] > '9') return false;
    *v = *v * 10 + (t[i] - '0');
  }
  return true;
}

bool parse_step(const std::string& t, Stamp* out, std::string* why) {
  size_t i = (t[0] == '-' || t[0] == '+') ? 1 : 0;
  if (i == t.size()) return false;
  for (size_t j = i; j < t.size(); ++j)
    if (t[j] < '0' || t[j] > '9') return false;
  errno = 0;
  const long long v = std::strtoll(t.c_str(), nullptr, 10);
  if (errno == ERANGE) {
    *why = "step " + t + " is past the range of a 64-bit integer";
    return false;
  }
  out->kind = StampKind::step;
  out->at = v;
  return true;
}

bool fail_why(std::string* why, std::string text) {
  *why = std::move(text);
  return false;
}

// The clock part after the date: HH:MM[:SS[.ffffff]].
bool parse_clock(const std::string& t, Stamp* out, int64_t* micros, std::string* why) {
  int64_t h, mi, s = 0, frac = 0;
  const std::string clock = t.substr(11);
  if (!digits(t, 11, 2, &h) || t.size() < 16 || t[13] != ':' || !digits(t, 14, 2, &mi))
    return fail_why(why, "the time '" + clock + "' is not HH:MM, HH:MM:SS or HH:MM:SS.ffffff");
  size_t at = 16;
  if (at < t.size() && t[at] == ':') {
    if (!digits(t, at + 1, 2, &s))
      return fail_why(why, "the seconds of '" + clock + "' are not two digits");
    out->has_seconds = true;
    at += 3;
    if (at < t.size() && t[at] == '.') {
      size_t n = 0;
      while (at + 1 + n < t.size() && t[at + 1 + n] >= '0' && t[at + 1 + n] <= '9') ++n;
      if (n == 0 || n > 6)
        return fail_why(why, "the fraction of a second in '" + clock +
                                 "' must have 1 to 6 digits (microseconds)");
      digits(t, at + 1, n, &frac);
      for (size_t k = n; k < 6; ++k) frac *= 10;
      out->fraction_digits = int(n);
      at += 1 + n;
    }
  }
  if (at != t.size())
    return fail_why(why, "'" + t.substr(at) + "' after the time (a time zone or other text) is "
                         "not read: write local times without a zone");
  if (h > 23) return fail_why(why, "hour " + std::to_string(h) + " does not exist (00-23)");
  if (mi > 59) return fail_why(why, "minute " + std::to_string(mi) + " does not exist (00-59)");
  if (s > 59) return fail_why(why, "second " + std::to_string(s) + " does not exist (00-59)");
  out->has_time = true;
  *micros = ((h * 60 + mi) * 60 + s) * kMicrosPerSecond + frac;
  return true;
}

const char* kMonthNames[] = {"January", "February", "March",     "April",   "May",      "June",
                             "July",    "August",   "September", "October", "November", "December"};

}  // namespace

int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400, yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

void civil_from_days(int64_t z, int64_t* y, int64_t* m, int64_t* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097, doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp + (mp < 10 ? 3 : -9);
  *y = yoe + era * 400 + (*m <= 2);
}

int64_t days_in_month(int64_t y, int64_t m) {
  static const int64_t kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

int weekday(int64_t days) {  // 1970-01-01 was a Thursday (3)
  return int(((days % 7) + 7 + 3) % 7);
}

bool parse_stamp(const std::string& text, Stamp* out, std::string* why) {
  *out = Stamp{};
  why->clear();
  if (text.empty()) return fail_why(why, "ds is empty");
  if (parse_step(text, out, why)) return true;
  if (!why->empty()) return false;
  int64_t y, m, d;
  if (!(text.size() >= 10 && digits(text, 0, 4, &y) && text[4] == '-' && digits(text, 5, 2, &m) &&
        text[7] == '-' && digits(text, 8, 2, &d)))
    return fail_why(why, "'" + text + "' is neither a date (YYYY-MM-DD, optionally with a time "
                         "HH:MM[:SS]) nor a whole-number step");
  const std::string date = text.substr(0, 10);
  if (y < 1) return fail_why(why, "year 0000 of " + date + " does not exist (0001-9999)");
  if (m < 1 || m > 12)
    return fail_why(why, "month " + std::to_string(m) + " of " + date + " does not exist (01-12)");
  if (d < 1 || d > days_in_month(y, m))
    return fail_why(why, "day " + std::to_string(d) + " of " + date + " does not exist (" +
                             kMonthNames[m - 1] + " " + std::to_string(y) + " has " +
                             std::to_string(days_in_month(y, m)) + " days)");
  out->kind = StampKind::date;
  int64_t clock = 0;
  if (text.size() > 10) {
    if (text[10] != 'T' && text[10] != ' ')
      return fail_why(why, "'" + text.substr(10) + "' after the date " + date +
                               " is not a time ('T' or ' ' then HH:MM)");
    out->separator = text[10];
    if (!parse_clock(text, out, &clock, why)) {
      *why += " (in '" + text + "')";
      return false;
    }
  }
  out->at = days_from_civil(y, m, d) * kMicrosPerDay + clock;
  return true;
}

std::string format_stamp(const Stamp& style, int64_t at) {
  if (style.kind == StampKind::step) return std::to_string(at);
  const int64_t days = at >= 0 ? at / kMicrosPerDay : -((-at + kMicrosPerDay - 1) / kMicrosPerDay);
  const int64_t clock = at - days * kMicrosPerDay;
  int64_t y, m, d;
  civil_from_days(days, &y, &m, &d);
  BG_CHECK(y >= 1 && y <= 9999, "calendar", "a date in year ", y,
           " is outside what a stamp holds (0001-9999)");
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lld", (long long)y, (long long)m,
                        (long long)d);
  const int64_t frac = clock % kMicrosPerSecond, secs = clock / kMicrosPerSecond;
  const bool time = style.has_time || clock != 0;
  const bool seconds = style.has_seconds || secs % 60 != 0 || frac != 0;
  if (time)
    n += std::snprintf(buf + n, sizeof buf - size_t(n), "%c%02lld:%02lld",
                       style.has_time ? style.separator : ' ', (long long)(secs / 3600),
                       (long long)(secs / 60 % 60));
  if (time && seconds) n += std::snprintf(buf + n, sizeof buf - size_t(n), ":%02lld", (long long)(secs % 60));
  if (time && seconds && (style.fraction_digits > 0 || frac != 0)) {
    // The style's digits, or all six where the fraction is finer than they write.
    int places = std::clamp(style.fraction_digits, 1, 6);
    int64_t unit = 1;
    for (int k = places; k < 6; ++k) unit *= 10;
    if (frac % unit != 0) places = 6, unit = 1;
    std::snprintf(buf + n, sizeof buf - size_t(n), ".%0*lld", places & 7,
                  (long long)(frac / unit));
  }
  return buf;
}

std::string Cadence::describe(StampKind stamps) const {
  const auto plural = [](int64_t n, const char* unit) {
    return std::to_string(n) + " " + unit + (n == 1 ? "" : "s");
  };
  switch (kind) {
    case Kind::unknown: return "unknown";
    case Kind::business_days: return "business days (weekends skipped)";
    case Kind::months: return plural(step, "month") + (month_end ? " (month ends)" : "");
    case Kind::fixed: break;
  }
  if (stamps == StampKind::step) return plural(step, "step");
  if (step % kMicrosPerDay == 0)
    return step % (7 * kMicrosPerDay) == 0 ? plural(step / (7 * kMicrosPerDay), "week")
                                           : plural(step / kMicrosPerDay, "day");
  if (step % (3600 * kMicrosPerSecond) == 0) return plural(step / (3600 * kMicrosPerSecond), "hour");
  if (step % (60 * kMicrosPerSecond) == 0) return plural(step / (60 * kMicrosPerSecond), "minute");
  if (step % kMicrosPerSecond == 0) return plural(step / kMicrosPerSecond, "second");
  return plural(step, "microsecond");
}

Cadence series_cadence(const std::vector<Stamp>& stamps) {
  Cadence c;
  if (stamps.size() < 2) return c;
  const bool dates = stamps[0].kind == StampKind::date;
  if (dates) {  // whole months: every difference keeps the time of day and the day of month
    bool months = true, all_ends = true;
    std::map<int64_t, int64_t> month_steps;
    int64_t py = 0, pm = 0, pd = 0, pclock = 0;
    for (size_t i = 0; i < stamps.size() && months; ++i) {
      const int64_t days = stamps[i].at / kMicrosPerDay, clock = stamps[i].at % kMicrosPerDay;
      int64_t y, m, d;
      civil_from_days(days, &y, &m, &d);
      const bool end = d == days_in_month(y, m);
      all_ends = all_ends && end;
      if (i > 0) {
        const bool pend = pd == days_in_month(py, pm);
        months = clock == pclock && (d == pd || (end && pend));
        ++month_steps[(y - py) * 12 + (m - pm)];
      }
      py = y, pm = m, pd = d, pclock = clock;
    }
    if (months) {
      c.kind = Cadence::Kind::months;
      c.month_end = all_ends;
      int64_t best = 0;
      for (const auto& [step, count] : month_steps)
        if (count > best) best = count, c.step = step;
      return c;
    }
  }
  std::map<int64_t, int64_t> steps;
  for (size_t i = 1; i < stamps.size(); ++i) ++steps[stamps[i].at - stamps[i - 1].at];
  int64_t best = 0;
  for (const auto& [step, count] : steps)  // the most frequent; the smallest of a tie
    if (count > best) best = count, c.step = step;
  c.kind = Cadence::Kind::fixed;
  if (dates && c.step == kMicrosPerDay) {
    bool weekend = false, spans_weekend = false;
    for (size_t i = 0; i < stamps.size(); ++i) {
      const int64_t day = stamps[i].at / kMicrosPerDay;
      weekend = weekend || weekday(day) >= 5;
      if (i > 0) spans_weekend = spans_weekend || day - stamps[i - 1].at / kMicrosPerDay >= 3;
    }
    if (!weekend && spans_weekend) {
      c.kind = Cadence::Kind::business_days;
      c.step = 1;
    }
  }
  return c;
}

std::vector<std::string> stamps_after(const Stamp& last, const Cadence& cadence, int64_t count,
                                      const std::string& what) {
  BG_CHECK(cadence.kind != Cadence::Kind::unknown, "calendar", what,
           ": the cadence is unknown (one stamp, and no other series to take it from)");
  std::vector<std::string> out;
  const auto past_end = [&] {
    fail("calendar", what, ": the ", count, " stamps after ", format_stamp(last, last.at),
         " every ", cadence.describe(last.kind), " run past ",
         last.kind == StampKind::step ? "the range of a 64-bit step" : "the year 9999");
  };
  if (cadence.kind == Cadence::Kind::fixed) {
    int64_t at = last.at;
    for (int64_t t = 0; t < count; ++t) {
      if (__builtin_add_overflow(at, cadence.step, &at)) past_end();
      if (last.kind == StampKind::date && at >= days_from_civil(10000, 1, 1) * kMicrosPerDay)
        past_end();
      out.push_back(format_stamp(last, at));
    }
    return out;
  }
  const int64_t clock = last.at % kMicrosPerDay;
  int64_t day = last.at / kMicrosPerDay;
  int64_t y, m, d;
  civil_from_days(day, &y, &m, &d);
  const int64_t end_day = days_from_civil(10000, 1, 1);
  for (int64_t t = 1; t <= count; ++t) {
    if (cadence.kind == Cadence::Kind::business_days) {
      do ++day;
      while (weekday(day) >= 5);
    } else {
      const int64_t months = (y * 12 + (m - 1)) + cadence.step * t;
      if (months / 12 > 9999) past_end();
      const int64_t fy = months / 12, fm = months % 12 + 1;
      const int64_t fd = cadence.month_end ? days_in_month(fy, fm) : std::min(d, days_in_month(fy, fm));
      day = days_from_civil(fy, fm, fd);
    }
    if (day >= end_day) past_end();
    out.push_back(format_stamp(last, day * kMicrosPerDay + clock));
  }
  return out;
}

int64_t cadence_season(const Cadence& c, StampKind stamps) {
  switch (c.kind) {
    case Cadence::Kind::business_days:
      return c.step == 1 ? 5 : 0;
    case Cadence::Kind::months:
      return c.step <= 12 && 12 % c.step == 0 ? 12 / c.step : 0;
    case Cadence::Kind::fixed: {
      if (stamps == StampKind::step || c.step <= 0) return 0;
      if (c.step < kMicrosPerDay) return kMicrosPerDay % c.step == 0 ? kMicrosPerDay / c.step : 0;
      if (c.step == kMicrosPerDay) return 7;
      if (c.step == 7 * kMicrosPerDay) return 52;
      return 0;
    }
    case Cadence::Kind::unknown:
      break;
  }
  return 0;
}

}  // namespace bg
