// test_calendar.cpp: data/calendar.h and the series files' stamps: impossible dates and steps
// refused, every cadence read off its stamps (minutes, hours, days, business days, weeks,
// month ends, months, quarters, years, steps) and continued in the series' own style, one gap
// not changing the cadence, the end of the calendar refused; data/csv.h's quoting round trip.
#include <fstream>

#include "data/calendar.h"
#include "data/csv.h"
#include "data/series.h"
#include "harness.h"

using namespace bg;

namespace {

std::string why_not(const std::string& text) {
  Stamp s;
  std::string why;
  return parse_stamp(text, &s, &why) ? "accepted" : why;
}

std::vector<Stamp> stamps_of(const std::vector<std::string>& texts) {
  std::vector<Stamp> out(texts.size());
  std::string why;
  for (size_t i = 0; i < texts.size(); ++i) REQUIRE(parse_stamp(texts[i], &out[i], &why));
  return out;
}

// The next `n` stamps after `texts` at the cadence read off them.
std::vector<std::string> next(const std::vector<std::string>& texts, int64_t n) {
  const std::vector<Stamp> s = stamps_of(texts);
  return stamps_after(s.back(), series_cadence(s), n, "test");
}

using Texts = std::vector<std::string>;

}  // namespace

TEST_CASE("cpu: calendar: impossible dates, times and steps are refused by what is wrong") {
  CHECK(why_not("2020-02-40").find("day 40 of 2020-02-40 does not exist") != std::string::npos);
  CHECK(why_not("2019-02-29").find("February 2019 has 28 days") != std::string::npos);
  CHECK(why_not("2020-02-29") == "accepted");
  CHECK(why_not("1900-02-29").find("does not exist") != std::string::npos);  // not a leap year
  CHECK(why_not("2000-02-29") == "accepted");                                // a leap year
  CHECK(why_not("2020-13-01").find("month 13") != std::string::npos);
  CHECK(why_not("2020-00-10").find("month 0") != std::string::npos);
  CHECK(why_not("0000-01-01").find("year 0000") != std::string::npos);
  CHECK(why_not("2020-01-01 24:00").find("hour 24") != std::string::npos);
  CHECK(why_not("2020-01-01 10:60").find("minute 60") != std::string::npos);
  CHECK(why_not("2020-01-01T10:00:61").find("second 61") != std::string::npos);
  CHECK(why_not("2020-01-01T10:00:00Z").find("time zone") != std::string::npos);
  CHECK(why_not("2020-01-01 10:00+02:00").find("time zone") != std::string::npos);
  CHECK(why_not("2020-01-01 10").find("not HH:MM") != std::string::npos);
  CHECK(why_not("2020-01-01 10:00:00.1234567").find("1 to 6 digits") != std::string::npos);
  CHECK(why_not("2020-01-01x").find("is not a time") != std::string::npos);
  CHECK(why_not("99999999999999999999").find("past the range of a 64-bit") != std::string::npos);
  CHECK(why_not("-12") == "accepted");
  CHECK(why_not("1.5").find("neither a date") != std::string::npos);
  CHECK(why_not("").find("empty") != std::string::npos);
}

TEST_CASE("cpu: calendar: civil days round trip, weekdays, month lengths") {
  for (int64_t z = days_from_civil(1, 1, 1); z <= days_from_civil(9999, 12, 31); z += 997) {
    int64_t y, m, d;
    civil_from_days(z, &y, &m, &d);
    CHECK(days_from_civil(y, m, d) == z);
    CHECK(d <= days_in_month(y, m));
  }
  CHECK(weekday(days_from_civil(2026, 11, 29)) == 6);  // a Sunday
  CHECK(weekday(days_from_civil(1970, 1, 1)) == 3);    // a Thursday
  CHECK(weekday(days_from_civil(1969, 12, 29)) == 0);  // a Monday, before the epoch
  CHECK(days_in_month(2024, 2) == 29);
  CHECK(days_in_month(2100, 2) == 28);
}

TEST_CASE("cpu: calendar: every cadence continues in the series' own style") {
  // Sub-daily: the time of day is kept and advances; days roll over.
  CHECK(next({"2020-01-01 22:00", "2020-01-01 23:00"}, 3) ==
        Texts{"2020-01-02 00:00", "2020-01-02 01:00", "2020-01-02 02:00"});
  CHECK(next({"2020-01-03T23:30:00", "2020-01-03T23:45:00"}, 2) ==
        Texts{"2020-01-04T00:00:00", "2020-01-04T00:15:00"});
  CHECK(next({"2020-01-01 00:00:00.250", "2020-01-01 00:00:00.500"}, 2) ==
        Texts{"2020-01-01 00:00:00.750", "2020-01-01 00:00:01.000"});
  // Daily, across a leap day; weekly.
  CHECK(next({"2020-02-27", "2020-02-28"}, 2) == Texts{"2020-02-29", "2020-03-01"});
  CHECK(next({"2020-12-17", "2020-12-24"}, 2) == Texts{"2020-12-31", "2021-01-07"});
  // Business days: no weekend stamp, a Friday -> Monday step seen: weekends skipped.
  CHECK(next({"2026-11-19", "2026-11-20", "2026-11-23", "2026-11-24", "2026-11-25",
              "2026-11-26", "2026-11-27"},
             3) == Texts{"2026-11-30", "2026-12-01", "2026-12-02"});
  // Months on a day, month ends, quarters, years.
  CHECK(next({"1990-11-01", "1990-12-01"}, 3) == Texts{"1991-01-01", "1991-02-01", "1991-03-01"});
  CHECK(next({"2019-12-31", "2020-01-31"}, 3) == Texts{"2020-02-29", "2020-03-31", "2020-04-30"});
  CHECK(next({"2020-03-31", "2020-06-30", "2020-09-30"}, 2) == Texts{"2020-12-31", "2021-03-31"});
  CHECK(next({"2018-01-01", "2019-01-01"}, 2) == Texts{"2020-01-01", "2021-01-01"});
  CHECK(next({"2020-01-15", "2020-04-15"}, 1) == Texts{"2020-07-15"});
  // Steps, negative ones included.
  CHECK(next({"10", "15"}, 2) == Texts{"20", "25"});
  CHECK(next({"-7", "-5"}, 3) == Texts{"-3", "-1", "1"});
}

TEST_CASE("cpu: calendar: the most frequent step, so one gap does not change the cadence") {
  // Hourly with a missing hour just before the end: still hourly, keyed strictly after the last.
  const Texts hourly = {"2020-01-01 00:00", "2020-01-01 01:00", "2020-01-01 02:00",
                        "2020-01-01 03:00", "2020-01-01 05:00"};
  CHECK(series_cadence(stamps_of(hourly)).describe(StampKind::date) == "1 hour");
  CHECK(next(hourly, 2) == Texts{"2020-01-01 06:00", "2020-01-01 07:00"});
  CHECK(series_cadence(stamps_of({"1", "2", "3", "10", "11"})).step == 1);
  // A month-based series with a missing month stays monthly.
  const Cadence monthly = series_cadence(stamps_of({"2020-01-01", "2020-02-01", "2020-04-01",
                                                    "2020-05-01"}));
  CHECK(monthly.kind == Cadence::Kind::months);
  CHECK(monthly.step == 1);
  CHECK(series_cadence(stamps_of({"2020-01-01"})).kind == Cadence::Kind::unknown);
}

// model.seasonal_lag reads each series' season off its cadence.
TEST_CASE("cpu: calendar: a cadence's season") {
  const auto season = [](const std::vector<std::string>& texts, StampKind kind = StampKind::date) {
    return cadence_season(series_cadence(stamps_of(texts)), kind);
  };
  CHECK(season({"2024-01-01 00:00", "2024-01-01 01:00", "2024-01-01 02:00"}) == 24);
  CHECK(season({"2024-01-01 00:00", "2024-01-01 00:30", "2024-01-01 01:00"}) == 48);
  CHECK(season({"2024-01-01 00:00", "2024-01-01 00:07", "2024-01-01 00:14"}) == 0);  // no day
  CHECK(season({"2024-01-01", "2024-01-02", "2024-01-03"}) == 7);
  CHECK(season({"2024-01-05", "2024-01-08", "2024-01-09", "2024-01-10"}) == 5);  // business
  CHECK(season({"2024-01-01", "2024-01-08", "2024-01-15"}) == 52);
  CHECK(season({"2024-01-01", "2024-02-01", "2024-03-01"}) == 12);
  CHECK(season({"2024-01-31", "2024-04-30", "2024-07-31"}) == 4);
  CHECK(season({"2020-01-01", "2021-01-01", "2022-01-01"}) == 1);
  CHECK(season({"1", "2", "3"}, StampKind::step) == 0);
}

TEST_CASE("cpu: calendar: stamps past the calendar or int64 are refused, not wrapped") {
  CHECK_THROWS_WITH(next({"9999-10-01", "9999-11-01"}, 3), doctest::Contains("past the year 9999"));
  CHECK_THROWS_WITH(next({"9999-12-30", "9999-12-31"}, 1), doctest::Contains("past the year 9999"));
  CHECK_THROWS_WITH(next({"9223372036854775800", "9223372036854775806"}, 2),
                    doctest::Contains("past the range of a 64-bit step"));
  CHECK_THROWS_WITH(stamps_after(stamps_of({"2020-01-01"})[0], Cadence{}, 1, "series 'x'"),
                    doctest::Contains("series 'x': the cadence is unknown"));
}

TEST_CASE("cpu: series files: stamps compared as instants; a lone stamp takes the file's cadence") {
  const std::string path = bg::test::scratch_path("calendar_series.csv");
  std::ofstream(path) << "unique_id,ds,y\na,2020-01-01 00:00,1\na,2020-01-01 01:00:00,2\n"
                         "a,2020-01-01T02:00,3\nb,2020-01-01 05:00,4\n";
  const SeriesSet set = read_series(path);
  const std::vector<Cadence> c = series_cadences(set);
  CHECK(c[0].describe(set.stamps) == "1 hour");
  CHECK(c[1].describe(set.stamps) == "1 hour");  // one stamp: the file's cadence
  CHECK(future_stamps(set.series[1], c[1], 2) == Texts{"2020-01-01 06:00", "2020-01-01 07:00"});
  std::ofstream(path) << "unique_id,ds,y\na,2020-01-01 01:00,1\na,2020-01-01T01:00:00,2\n";
  CHECK_THROWS_WITH(read_series(path), doctest::Contains("is not after its previous row's"));
  std::ofstream(path) << "unique_id,ds,y\na,2020-02-30,1\n";
  CHECK_THROWS_WITH(read_series(path), doctest::Contains(":2: ds: day 30 of 2020-02-30"));
}

TEST_CASE("cpu: csv: fields quoted on the way out read back whole") {
  for (const std::string& text : {std::string("plain"), std::string("x,y"), std::string("say \"hi\""),
                                  std::string(" edge "), std::string(""), std::string("a\"b,c")}) {
    const std::string line = csv_field(text) + "," + csv_field("second");
    CHECK(csv_fields(line, "t") == Texts{text, "second"});
  }
  CHECK(csv_field("x,y") == "\"x,y\"");
  CHECK(csv_fields(" a , \"b c\" ,d", "t") == Texts{"a", "b c", "d"});
  CHECK_THROWS_WITH(csv_fields("\"open,x", "f.csv", 3), doctest::Contains("f.csv:3: a quoted field"));
  for (const double v : {0.1, 1.0 / 3.0, 1e300, -2.5e-300, 65504.0, 0.5000001})
    CHECK(std::strtod(csv_number(v).c_str(), nullptr) == v);
  CHECK(csv_number(0.1) == "0.1");
  CHECK_THROWS_WITH(csv_number(INFINITY), doctest::Contains("non-finite"));
}
