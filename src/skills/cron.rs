//! Cron schedules (a skill's `:SCHEDULE:`) and the local civil time they are read against.
//!
//! Five fields, `minute hour day-of-month month day-of-week`, as Vixie cron reads them:
//!
//! | field        | values          | names                  |
//! |--------------+-----------------+------------------------|
//! | minute       | 0-59            |                        |
//! | hour         | 0-23            |                        |
//! | day-of-month | 1-31            |                        |
//! | month        | 1-12            | JAN-DEC (any case)     |
//! | day-of-week  | 0-7 (0, 7: Sun) | SUN-SAT (any case)     |
//!
//! Each field is a comma list of `*`, `N`, `A-B`, each optionally stepped: `*/15`, `1-10/2`,
//! `5/10` (from 5 to the field's end). When both day fields are restricted (neither starts
//! with `*`), a day matches when EITHER does: `0 9 1 * MON` runs on the 1st and on every
//! Monday. A day field that starts with `*` (`*/2` too) counts as unrestricted, as in Vixie
//! cron. The macros `@hourly`, `@daily` (`@midnight`), `@weekly`, `@monthly` and `@yearly`
//! (`@annually`) stand for their usual expressions.
//!
//! Times are local civil times ([`Civil`]), read through the C library so daylight saving is
//! the system's: a schedule names wall-clock minutes.

use crate::store::date;
use std::fmt;

/// A minute of local wall-clock time.
///
/// Build one with [`Civil::new`] (which works out the weekday), [`Civil::parse`] or
/// [`Civil::from_unix_local`]; the fields are public for reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Civil {
    pub year: i32,
    /// 1-12.
    pub month: u8,
    /// 1-31.
    pub day: u8,
    /// 0-23.
    pub hour: u8,
    /// 0-59.
    pub minute: u8,
    /// 0 = Sunday … 6 = Saturday.
    pub weekday: u8,
}

const DAY_NAMES: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];
const MONTH_NAMES: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];

fn days_in_month(year: i32, month: u8) -> u8 {
    date::days_in_month(i64::from(year), i64::from(month)) as u8
}

/// Days from 1970-01-01 to the date.
fn days_from_civil(year: i32, month: u8, day: u8) -> i64 {
    date::days_from_civil(i64::from(year), i64::from(month), i64::from(day))
}

fn weekday_of(year: i32, month: u8, day: u8) -> u8 {
    // 1970-01-01 was a Thursday.
    (days_from_civil(year, month, day) + 4).rem_euclid(7) as u8
}

impl Civil {
    /// The minute `year-month-day hour:minute`, or `None` when there is no such date.
    pub fn new(year: i32, month: u8, day: u8, hour: u8, minute: u8) -> Option<Civil> {
        let valid = (1..=12).contains(&month)
            && day >= 1
            && day <= days_in_month(year, month)
            && hour < 24
            && minute < 60;
        valid.then(|| Civil {
            year,
            month,
            day,
            hour,
            minute,
            weekday: weekday_of(year, month, day),
        })
    }

    /// The local time at `secs` since the epoch (`localtime_r`: the system's time zone and
    /// daylight saving rules).
    pub fn from_unix_local(secs: i64) -> Option<Civil> {
        let t = libc::time_t::try_from(secs).ok()?;
        // SAFETY: localtime_r writes only into the zeroed struct we own.
        let tm = unsafe {
            let mut tm: libc::tm = std::mem::zeroed();
            if libc::localtime_r(&t, &mut tm).is_null() {
                return None;
            }
            tm
        };
        Civil::new(
            tm.tm_year.checked_add(1900)?,
            u8::try_from(tm.tm_mon + 1).ok()?,
            u8::try_from(tm.tm_mday).ok()?,
            u8::try_from(tm.tm_hour).ok()?,
            u8::try_from(tm.tm_min).ok()?,
        )
    }

    /// Seconds since the epoch at the start of this local minute (`mktime`). A minute that a
    /// daylight-saving jump skips comes out as the instant the clocks jumped to, as `mktime`
    /// normalises it.
    pub fn to_unix_local(&self) -> Option<i64> {
        // SAFETY: mktime reads and normalises the struct we own.
        let t = unsafe {
            let mut tm: libc::tm = std::mem::zeroed();
            tm.tm_year = self.year - 1900;
            tm.tm_mon = i32::from(self.month) - 1;
            tm.tm_mday = i32::from(self.day);
            tm.tm_hour = i32::from(self.hour);
            tm.tm_min = i32::from(self.minute);
            tm.tm_isdst = -1;
            libc::mktime(&mut tm)
        };
        // time_t is narrower than i64 on some platforms.
        #[allow(clippy::useless_conversion)]
        (t != -1).then_some(i64::from(t))
    }

    /// `2026-11-27 16:00`, optionally with the day's name anywhere after the date
    /// (`2026-11-27 Fri 16:00`, `<2026-11-27 Fri 16:00>`); a day name must be the date's.
    pub fn parse(text: &str) -> Result<Civil, String> {
        let inner = text.trim().trim_matches(['<', '>', '[', ']']);
        let bad = || format!("{text:?} is not a time like 2026-11-27 16:00 Fri");
        let mut words = inner.split_whitespace();
        let date = words.next().ok_or_else(bad)?;
        let mut parts = date.split('-');
        let (Some(y), Some(mo), Some(d), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let (mut hour, mut minute, mut named) = (None, None, None);
        for word in words {
            if let Some((h, m)) = word.split_once(':') {
                hour = Some(h.parse::<u8>().map_err(|_| bad())?);
                minute = Some(m.parse::<u8>().map_err(|_| bad())?);
            } else {
                let upper = word.to_ascii_uppercase();
                let day = DAY_NAMES
                    .iter()
                    .position(|n| upper.starts_with(n))
                    .ok_or_else(bad)?;
                named = Some(day as u8);
            }
        }
        let (Some(hour), Some(minute)) = (hour, minute) else {
            return Err(format!("{text:?} has no time of day (HH:MM)"));
        };
        let civil = Civil::new(
            y.parse().map_err(|_| bad())?,
            mo.parse().map_err(|_| bad())?,
            d.parse().map_err(|_| bad())?,
            hour,
            minute,
        )
        .ok_or_else(|| format!("{text:?} is not a date and time that exists"))?;
        if let Some(named) = named.filter(|&n| n != civil.weekday) {
            return Err(format!(
                "{text:?}: {date} is a {}, not a {}",
                DAY_NAMES[civil.weekday as usize], DAY_NAMES[named as usize]
            ));
        }
        Ok(civil)
    }

    /// The next minute, across hours, days, months and years.
    fn plus_minute(&self) -> Option<Civil> {
        let (mut y, mut mo, mut d, mut h, mut mi) =
            (self.year, self.month, self.day, self.hour, self.minute + 1);
        if mi == 60 {
            mi = 0;
            h += 1;
        }
        if h == 24 {
            h = 0;
            d += 1;
        }
        if d > days_in_month(y, mo) {
            d = 1;
            mo += 1;
        }
        if mo == 13 {
            mo = 1;
            y = y.checked_add(1)?;
        }
        Civil::new(y, mo, d, h, mi)
    }
}

impl fmt::Display for Civil {
    /// Org's way: `2026-11-27 Fri 16:00`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let day = DAY_NAMES[usize::from(self.weekday % 7)];
        write!(
            f,
            "{:04}-{:02}-{:02} {}{} {:02}:{:02}",
            self.year,
            self.month,
            self.day,
            &day[..1],
            day[1..].to_ascii_lowercase(),
            self.hour,
            self.minute
        )
    }
}

/// A parsed cron expression: the set of minutes it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cron {
    source: String,
    /// Bit N set: minute N.
    minutes: u64,
    hours: u64,
    /// Bits 1-31.
    days: u64,
    /// Bits 1-12.
    months: u64,
    /// Bits 0-6 (Sunday is 0; a written 7 is folded into it).
    weekdays: u64,
    /// The day-of-month field starts with `*` (Vixie's DOM_STAR).
    any_day: bool,
    /// The day-of-week field starts with `*` (Vixie's DOW_STAR).
    any_weekday: bool,
}

struct Field {
    name: &'static str,
    lo: u32,
    hi: u32,
    names: &'static [&'static str],
    /// The value of `names[0]`.
    first_name: u32,
    kind: &'static str,
}

const FIELDS: [Field; 5] = [
    Field {
        name: "minute",
        lo: 0,
        hi: 59,
        names: &[],
        first_name: 0,
        kind: "minute",
    },
    Field {
        name: "hour",
        lo: 0,
        hi: 23,
        names: &[],
        first_name: 0,
        kind: "hour",
    },
    Field {
        name: "day-of-month",
        lo: 1,
        hi: 31,
        names: &[],
        first_name: 0,
        kind: "day of the month",
    },
    Field {
        name: "month",
        lo: 1,
        hi: 12,
        names: &MONTH_NAMES,
        first_name: 1,
        kind: "month (1-12 or JAN-DEC)",
    },
    Field {
        name: "day-of-week",
        lo: 0,
        hi: 7,
        names: &DAY_NAMES,
        first_name: 0,
        kind: "day (0-7 or SUN-SAT)",
    },
];

/// How many years ahead [`Cron::next_after`] looks: enough for 29 February across a
/// century year that is not leap (2096 → 2104).
const SEARCH_YEARS: i32 = 9;

impl Cron {
    /// Read a 5-field expression (or a macro such as `@daily`); an error names the field.
    pub fn parse(source: &str) -> Result<Cron, String> {
        let expanded = match source.trim() {
            "@hourly" => "0 * * * *",
            "@daily" | "@midnight" => "0 0 * * *",
            "@weekly" => "0 0 * * 0",
            "@monthly" => "0 0 1 * *",
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@reboot" => return Err("@reboot is not a schedule: use :ON: startup".into()),
            s if s.starts_with('@') => {
                return Err(format!(
                    "unknown cron macro {s:?} (@hourly, @daily, @weekly, @monthly, @yearly)"
                ))
            }
            s => s,
        };
        let texts: Vec<&str> = expanded.split_whitespace().collect();
        let [minute, hour, day, month, weekday] = texts[..] else {
            return Err(format!(
                "{source:?} is not a 5-field cron expression \
                 (minute hour day-of-month month day-of-week)"
            ));
        };
        let bits = |i: usize, text: &str| {
            field_bits(&FIELDS[i], text)
                .map_err(|m| format!("the {} field {text:?}: {m}", FIELDS[i].name))
        };
        let mut weekdays = bits(4, weekday)?;
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays | 1) & !(1 << 7);
        }
        Ok(Cron {
            source: source.trim().to_owned(),
            minutes: bits(0, minute)?,
            hours: bits(1, hour)?,
            days: bits(2, day)?,
            months: bits(3, month)?,
            weekdays,
            any_day: day.starts_with('*'),
            any_weekday: weekday.starts_with('*'),
        })
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the schedule names the minute `at`.
    pub fn matches(&self, at: &Civil) -> bool {
        self.minutes & (1 << at.minute) != 0
            && self.hours & (1 << at.hour) != 0
            && self.months & (1 << at.month) != 0
            && self.day_matches(at.day, at.weekday)
    }

    fn day_matches(&self, day: u8, weekday: u8) -> bool {
        let by_day = self.days & (1 << day) != 0;
        let by_weekday = self.weekdays & (1 << weekday) != 0;
        if self.any_day || self.any_weekday {
            by_day && by_weekday
        } else {
            by_day || by_weekday
        }
    }

    /// The first minute the schedule names strictly after `after`; `None` when there is
    /// none within nine years (a date that never comes, like `0 0 31 2 *`). Whole months,
    /// days and hours that cannot match are skipped.
    pub fn next_after(&self, after: &Civil) -> Option<Civil> {
        let start = after.plus_minute()?;
        for year in start.year..=start.year.saturating_add(SEARCH_YEARS) {
            let first_month = if year == start.year { start.month } else { 1 };
            for month in first_month..=12 {
                if self.months & (1 << month) == 0 {
                    continue;
                }
                let this_month = (year, month) == (start.year, start.month);
                let first_day = if this_month { start.day } else { 1 };
                for day in first_day..=days_in_month(year, month) {
                    if !self.day_matches(day, weekday_of(year, month, day)) {
                        continue;
                    }
                    let today = this_month && day == start.day;
                    if let Some((hour, minute)) = self.first_time(today.then_some(&start)) {
                        return Civil::new(year, month, day, hour, minute);
                    }
                }
            }
        }
        None
    }

    /// The first (hour, minute) of a day the schedule names, at or after `from`'s time of
    /// day when given.
    fn first_time(&self, from: Option<&Civil>) -> Option<(u8, u8)> {
        let first_hour = from.map_or(0, |c| c.hour);
        for hour in first_hour..24 {
            if self.hours & (1 << hour) == 0 {
                continue;
            }
            let first_minute = match from {
                Some(c) if c.hour == hour => c.minute,
                _ => 0,
            };
            let later = self.minutes >> first_minute;
            if later != 0 {
                return Some((hour, first_minute + later.trailing_zeros() as u8));
            }
        }
        None
    }
}

/// The bits one field names.
fn field_bits(field: &Field, text: &str) -> Result<u64, String> {
    let mut bits = 0u64;
    for item in text.split(',') {
        if item.is_empty() {
            return Err("an empty item in the list".into());
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("the step {step:?} is not a positive number"))?;
                (range, Some(step))
            }
            None => (item, None),
        };
        let (from, to) = if range == "*" {
            (field.lo, field.hi)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(field, a)?, value(field, b)?)
        } else {
            let a = value(field, range)?;
            // `5/10`: from 5 to the field's end, as cronie reads it.
            (a, if step.is_some() { field.hi } else { a })
        };
        if from > to {
            return Err(format!("the range {range} runs backwards"));
        }
        for v in (from..=to).step_by(step.unwrap_or(1) as usize) {
            bits |= 1 << v;
        }
    }
    Ok(bits)
}

fn value(field: &Field, text: &str) -> Result<u32, String> {
    let n = if text.bytes().all(|b| b.is_ascii_digit()) && !text.is_empty() {
        text.parse::<u32>().ok()
    } else {
        field
            .names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(text))
            .map(|i| i as u32 + field.first_name)
    };
    match n {
        Some(n) if (field.lo..=field.hi).contains(&n) => Ok(n),
        Some(n) => Err(format!("{n} is not within {}-{}", field.lo, field.hi)),
        None => Err(format!("{text:?} is not a {}", field.kind)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i32, mo: u8, d: u8, h: u8, mi: u8) -> Civil {
        Civil::new(y, mo, d, h, mi).expect("a real date")
    }

    fn cron(s: &str) -> Cron {
        Cron::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn next(s: &str, after: Civil) -> Option<Civil> {
        cron(s).next_after(&after)
    }

    #[test]
    fn civil_dates_know_their_weekday() {
        assert_eq!(at(2026, 11, 27, 16, 0).weekday, 5, "a Friday");
        assert_eq!(at(1970, 1, 1, 0, 0).weekday, 4, "a Thursday");
        assert_eq!(at(2000, 2, 29, 0, 0).weekday, 2, "a Tuesday");
        assert_eq!(at(1969, 12, 31, 0, 0).weekday, 3);
        assert!(Civil::new(2026, 2, 29, 0, 0).is_none(), "2026 is not leap");
        assert!(
            Civil::new(2100, 2, 29, 0, 0).is_none(),
            "century years are not leap"
        );
        assert!(
            Civil::new(2000, 2, 29, 0, 0).is_some(),
            "unless divisible by 400"
        );
        assert!(Civil::new(2026, 4, 31, 0, 0).is_none());
        assert!(Civil::new(2026, 1, 1, 24, 0).is_none());
        assert!(Civil::new(2026, 13, 1, 0, 0).is_none());
        assert_eq!(at(2026, 11, 27, 16, 5).to_string(), "2026-11-27 Fri 16:05");
    }

    #[test]
    fn civil_times_parse() {
        let friday = at(2026, 11, 27, 16, 0);
        for text in [
            "2026-11-27 16:00",
            "2026-11-27 16:00 Fri",
            "2026-11-27 Fri 16:00",
            "<2026-11-27 Fri 16:00>",
            "[2026-11-27 friday 16:00]",
        ] {
            assert_eq!(Civil::parse(text), Ok(friday), "{text}");
        }
        let e = Civil::parse("2026-11-27 16:00 Mon").unwrap_err();
        assert!(e.contains("is a FRI, not a MON"), "{e}");
        assert!(Civil::parse("2026-11-27").unwrap_err().contains("HH:MM"));
        assert!(Civil::parse("2026-02-30 10:00")
            .unwrap_err()
            .contains("exists"));
        assert!(Civil::parse("tomorrow 10:00").is_err());
        assert!(Civil::parse("2026-11-27 16:xx").is_err());
    }

    #[test]
    fn local_time_round_trips_through_the_c_library() {
        // Whatever the machine's zone, a local minute read from an instant maps back to it.
        let now = 1_790_000_000; // 2026-09-21
        let civil = Civil::from_unix_local(now).unwrap();
        assert_eq!(civil.year, 2026);
        assert_eq!(civil.to_unix_local(), Some(now - now % 60));
        let later = Civil::from_unix_local(now + 86_400).unwrap();
        assert_eq!(later.weekday, (civil.weekday + 1) % 7);
    }

    #[test]
    fn every_field_form() {
        let friday_4pm = at(2026, 11, 27, 16, 0);
        for (spec, hit) in [
            ("* * * * *", true),
            ("0 16 * * 5", true),
            ("0 16 * * FRI", true),
            ("0 16 * * fri", true),
            ("0 16 27 NOV *", true),
            ("0 16 27 nov *", true),
            ("0 16 * * 1-5", true),
            ("0 16 * * MON-FRI", true),
            ("0 16 * * 1,3,5", true),
            ("*/15 * * * *", true),
            ("0 */2 * * *", true),
            ("0 9-17/7 * * *", true), // 9, 16
            ("0 10-17/2 * * *", true),
            ("0 9-17/2 * * *", false), // 9, 11, 13, 15, 17
            ("0 4/12 * * *", true),    // 4, 16
            ("0 16 * * 6", false),
            ("0 16 * * 0", false),
            ("1 16 * * *", false),
            ("0 15 * * *", false),
            ("0 16 26 * *", false),
            ("0 16 * OCT *", false),
            ("0 16 * 1-10 *", false),
            ("0,30 16 * * *", true),
            ("30,0 16 * * *", true),
        ] {
            assert_eq!(cron(spec).matches(&friday_4pm), hit, "{spec}");
        }
        assert_eq!(cron("0 16 * * 5").source(), "0 16 * * 5");
    }

    #[test]
    fn sunday_is_0_and_7() {
        let sunday = at(2026, 11, 29, 8, 0);
        assert_eq!(sunday.weekday, 0);
        for spec in ["0 8 * * 0", "0 8 * * 7", "0 8 * * SUN", "0 8 * * 5-7"] {
            assert!(cron(spec).matches(&sunday), "{spec}");
        }
        assert!(!cron("0 8 * * 1-6").matches(&sunday));
        assert!(cron("0 8 * * 6-7").matches(&at(2026, 11, 28, 8, 0)));
    }

    #[test]
    fn both_day_fields_restricted_means_either() {
        // The 1st of the month, and every Monday (Vixie).
        let c = cron("0 9 1 * MON");
        assert!(c.matches(&at(2026, 12, 1, 9, 0)), "the 1st, a Tuesday");
        assert!(c.matches(&at(2026, 11, 30, 9, 0)), "a Monday, the 30th");
        assert!(!c.matches(&at(2026, 12, 2, 9, 0)), "neither");
        // A field starting with * counts as unrestricted: both must hold.
        let c = cron("0 9 */2 * MON");
        assert!(!c.matches(&at(2026, 11, 30, 9, 0)), "a Monday, but even");
        assert!(c.matches(&at(2026, 11, 23, 9, 0)), "a Monday, and odd");
        assert!(!c.matches(&at(2026, 11, 25, 9, 0)), "odd, not a Monday");
        assert_eq!(
            next("0 9 1 * MON", at(2026, 11, 27, 0, 0)),
            Some(at(2026, 11, 30, 9, 0))
        );
    }

    #[test]
    fn the_next_minute_strictly_after() {
        let friday_4pm = at(2026, 11, 27, 16, 0);
        assert_eq!(next("* * * * *", friday_4pm), Some(at(2026, 11, 27, 16, 1)));
        assert_eq!(
            next("0 16 * * 5", friday_4pm),
            Some(at(2026, 12, 4, 16, 0)),
            "not the matching minute itself"
        );
        assert_eq!(
            next("30 16 * * 5", friday_4pm),
            Some(at(2026, 11, 27, 16, 30))
        );
        assert_eq!(
            next("15 * * * *", at(2026, 11, 27, 16, 20)),
            Some(at(2026, 11, 27, 17, 15))
        );
        // Rollover of the hour, day, month and year.
        assert_eq!(
            next("0 * * * *", at(2026, 11, 27, 23, 59)),
            Some(at(2026, 11, 28, 0, 0))
        );
        assert_eq!(
            next("0 0 * * *", at(2026, 11, 30, 12, 0)),
            Some(at(2026, 12, 1, 0, 0))
        );
        assert_eq!(
            next("0 0 1 * *", at(2026, 12, 31, 23, 59)),
            Some(at(2027, 1, 1, 0, 0))
        );
        assert_eq!(
            next("@yearly", at(2026, 1, 1, 0, 0)),
            Some(at(2027, 1, 1, 0, 0))
        );
        assert_eq!(
            next("0 12 31 * *", at(2026, 4, 1, 0, 0)),
            Some(at(2026, 5, 31, 12, 0)),
            "April has no 31st"
        );
    }

    #[test]
    fn leap_days() {
        assert_eq!(
            next("0 0 29 2 *", at(2026, 3, 1, 0, 0)),
            Some(at(2028, 2, 29, 0, 0))
        );
        assert_eq!(
            next("0 0 29 FEB *", at(2096, 2, 29, 0, 0)),
            Some(at(2104, 2, 29, 0, 0)),
            "2100 is not a leap year"
        );
        assert_eq!(
            next("59 23 28 2 *", at(2028, 2, 28, 23, 59)),
            Some(at(2029, 2, 28, 23, 59))
        );
        assert_eq!(
            next("0 0 * * *", at(2028, 2, 28, 12, 0)),
            Some(at(2028, 2, 29, 0, 0))
        );
    }

    #[test]
    fn impossible_schedules_have_no_next() {
        for spec in ["0 0 31 2 *", "0 0 30 FEB *", "0 0 31 4,6,9,11 *"] {
            assert_eq!(next(spec, at(2026, 1, 1, 0, 0)), None, "{spec}");
        }
        // But the weekday rescues the day of month when both are restricted.
        assert_eq!(
            next("0 0 31 2 MON", at(2026, 1, 1, 0, 0)),
            Some(at(2026, 2, 2, 0, 0))
        );
    }

    #[test]
    fn bad_schedules_name_the_field() {
        for (spec, says) in [
            ("0 16 * *", "5-field"),
            ("0 16 * * 5 1", "5-field"),
            (
                "60 * * * *",
                "the minute field \"60\": 60 is not within 0-59",
            ),
            ("0 25 * * *", "the hour field \"25\": 25 is not within 0-23"),
            (
                "0 0 0 * *",
                "the day-of-month field \"0\": 0 is not within 1-31",
            ),
            ("0 0 32 * *", "day-of-month field"),
            ("0 0 * 13 *", "the month field \"13\""),
            ("0 0 * FOO *", "\"FOO\" is not a month"),
            (
                "0 0 * * 8",
                "the day-of-week field \"8\": 8 is not within 0-7",
            ),
            ("0 0 * * FUNDAY", "is not a day"),
            ("*/0 * * * *", "the minute field \"*/0\": the step \"0\""),
            ("*/x * * * *", "not a positive number"),
            (
                "0 17-9 * * *",
                "the hour field \"17-9\": the range 17-9 runs backwards",
            ),
            ("0 1,,2 * * *", "empty item"),
            ("0 -1 * * *", "the hour field"),
            ("0 9 * JAN-FOO *", "the month field"),
            ("@reboot", "startup"),
            ("@often", "unknown cron macro"),
        ] {
            let e = Cron::parse(spec).unwrap_err();
            assert!(e.contains(says), "{spec}: {e}");
        }
    }
}
