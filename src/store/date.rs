//! Civil dates as days since 1970-01-01 (Howard Hinnant's algorithms): `Day` with its
//! weekday, the local "today" and the date part of Org timestamps; what the scans, the
//! budget's day ledger and cron count days with.

use super::query::timestamp_date;

/// A civil date, as days since 1970-01-01.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Day(pub i64);

impl Day {
    /// `YYYY-MM-DD`, or the date part of an Org timestamp (`<2026-11-24 Tue 10:00 +1w>`,
    /// `[2026-11-24 Tue]`); `None` when it is not a real date.
    pub fn parse(text: &str) -> Option<Day> {
        let date = if text.starts_with(['<', '[']) {
            timestamp_date(text)?
        } else {
            text.get(..10)?
        };
        let b = date.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        let y: i64 = date[..4].parse().ok()?;
        let m: i64 = date[5..7].parse().ok()?;
        let d: i64 = date[8..10].parse().ok()?;
        if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
            return None;
        }
        Some(Day(days_from_civil(y, m, d)))
    }

    /// Today in the system's time zone.
    pub fn local_today() -> Day {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let offset = utc_offset(secs);
        Day((secs + offset).div_euclid(86_400))
    }

    /// 0 = Monday … 6 = Sunday (1970-01-01 was a Thursday).
    pub fn weekday(self) -> u32 {
        (self.0 + 3).rem_euclid(7) as u32
    }

    pub fn weekday_name(self) -> &'static str {
        ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][self.weekday() as usize]
    }

    pub fn plus(self, days: i64) -> Day {
        Day(self.0 + days)
    }

    /// `<YYYY-MM-DD Www>` as Org writes an active date.
    pub fn org_active(self) -> String {
        format!("<{self} {}>", self.weekday_name())
    }
}

/// "1 day", "3 days": a count of days as a sentence says it.
pub fn days(n: i64) -> String {
    if n.abs() == 1 {
        format!("{n} day")
    } else {
        format!("{n} days")
    }
}

impl std::fmt::Display for Day {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (y, m, d) = civil_from_days(self.0);
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

pub fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

pub fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to year `y`, month `m` (1–12), day `d` (Hinnant's `days_from_civil`).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// Seconds east of UTC of the system's time zone at `secs`.
fn utc_offset(secs: i64) -> i64 {
    let t = secs as libc::time_t;
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: localtime_r writes only into the zeroed struct we own.
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    if ok {
        tm.tm_gmtoff
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_and_know_their_weekday() {
        let d = Day::parse("2026-11-24").unwrap();
        assert_eq!(d.to_string(), "2026-11-24");
        assert_eq!(d.weekday_name(), "Tue");
        assert_eq!(d.org_active(), "<2026-11-24 Tue>");
        assert_eq!(d.plus(7).to_string(), "2026-12-01");
        assert_eq!(
            Day::parse("<2024-02-29 Thu 10:00 +1w>")
                .unwrap()
                .to_string(),
            "2024-02-29"
        );
        assert_eq!(Day::parse("[1970-01-01 Thu]"), Some(Day(0)));
        assert_eq!(
            (days(1), days(2), days(0)),
            ("1 day".into(), "2 days".into(), "0 days".into())
        );
    }

    #[test]
    fn impossible_dates_are_not_days() {
        for bad in [
            "2025-02-29",
            "2026-13-01",
            "2026-04-31",
            "<2026-1-1>",
            "soon",
            "",
        ] {
            assert_eq!(Day::parse(bad), None, "{bad}");
        }
    }
}
