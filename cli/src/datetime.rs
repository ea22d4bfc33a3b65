//! `--to-datetime`'s ISO 8601 form, as Kafka's tools take it: `2026-12-01T10:00:00`, with
//! optional milliseconds and an offset (`Z`, `+02:00`; none: UTC).

/// Milliseconds since the Unix epoch, or why the text is not a date and time.
pub fn parse_millis(text: &str) -> Result<i64, String> {
    let bad = || format!("'{text}' is not YYYY-MM-DDTHH:MM:SS[.mmm][Z|+HH:MM]");
    let (date, time) = text.split_once('T').ok_or_else(bad)?;
    let number = |s: &str| s.parse::<i64>().map_err(|_| bad());
    let date: Vec<&str> = date.split('-').collect();
    let [year, month, day] = date[..] else {
        return Err(bad());
    };
    let (year, month, day) = (number(year)?, number(month)?, number(day)?);
    let (clock, offset_minutes) = match time.find(['Z', '+', '-']) {
        Some(at) => {
            let (clock, zone) = time.split_at(at);
            let minutes = match zone {
                "Z" => 0,
                _ => {
                    let sign = if zone.starts_with('-') { -1 } else { 1 };
                    let (h, m) = zone[1..].split_once(':').ok_or_else(bad)?;
                    sign * (number(h)? * 60 + number(m)?)
                }
            };
            (clock, minutes)
        }
        None => (time, 0),
    };
    let (clock, millis) = match clock.split_once('.') {
        Some((c, ms)) if ms.len() == 3 => (c, number(ms)?),
        Some(_) => return Err(bad()),
        None => (clock, 0),
    };
    let clock: Vec<&str> = clock.split(':').collect();
    let [hour, minute, second] = clock[..] else {
        return Err(bad());
    };
    let (hour, minute, second) = (number(hour)?, number(minute)?, number(second)?);
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour < 24
        && minute < 60
        && second < 60;
    if !valid {
        return Err(bad());
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Ok(seconds * 1000 + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates_become_epoch_milliseconds() {
        assert_eq!(parse_millis("1970-01-01T00:00:00"), Ok(0));
        assert_eq!(parse_millis("2026-12-01T10:00:00Z"), Ok(1_796_119_200_000));
        assert_eq!(
            parse_millis("2026-12-01T12:00:00.250+02:00"),
            Ok(1_796_119_200_250)
        );
        assert_eq!(
            parse_millis("2000-02-29T00:00:00-01:30"),
            Ok(951_787_800_000)
        );
        for bad in [
            "2026-13-01T00:00:00",
            "yesterday",
            "2026-12-01",
            "2026-12-01T25:00:00",
        ] {
            assert!(parse_millis(bad).is_err(), "{bad}");
        }
    }
}
