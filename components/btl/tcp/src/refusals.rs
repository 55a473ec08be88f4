//! Rate-limited logging of refused connections. The first few refusals of
//! an interval are logged one by one; the rest are counted, with the
//! addresses they came from and the last reason, and summarized in one
//! line once the interval is over (or at finalize), so that a stranger
//! opening connections in a loop cannot flood the job's output.

use std::collections::HashSet;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Refusals logged one by one per interval.
pub const BURST: u32 = 10;

/// Length of an interval.
pub const INTERVAL: Duration = Duration::from_secs(10);

/// Most distinct addresses a summary names.
const NAMED_ADDRESSES: usize = 4;

/// Most further distinct addresses a summary counts.
const COUNTED_ADDRESSES: usize = 1024;

/// The refusal log of one component.
#[derive(Debug)]
pub struct RefusalLog {
    burst: u32,
    interval: Duration,
    window_start: Option<Instant>,
    logged: u32,
    suppressed: u64,
    addresses: Vec<IpAddr>,
    unknown_address: bool,
    more_addresses: HashSet<IpAddr>,
    last_reason: String,
}

impl Default for RefusalLog {
    fn default() -> RefusalLog {
        RefusalLog::new(BURST, INTERVAL)
    }
}

impl RefusalLog {
    /// A log that shows `burst` refusals per `interval` one by one.
    pub fn new(burst: u32, interval: Duration) -> RefusalLog {
        RefusalLog {
            burst,
            interval,
            window_start: None,
            logged: 0,
            suppressed: 0,
            addresses: Vec::new(),
            unknown_address: false,
            more_addresses: HashSet::new(),
            last_reason: String::new(),
        }
    }

    /// Notes a refusal at `now` of a connection from `remote` for `why`;
    /// returns the line to log now (`line()`), or None when the refusal
    /// is only counted for the summary.
    pub fn refused(
        &mut self,
        now: Instant,
        remote: Option<IpAddr>,
        why: &str,
        line: impl FnOnce() -> String,
    ) -> Option<String> {
        let fresh = self
            .window_start
            .is_none_or(|start| now.duration_since(start) >= self.interval);
        if fresh && self.suppressed == 0 {
            self.window_start = Some(now);
            self.logged = 0;
        }
        if self.logged < self.burst && self.suppressed == 0 {
            self.logged += 1;
            return Some(line());
        }
        self.suppressed += 1;
        match remote {
            Some(ip) if self.addresses.contains(&ip) => {}
            Some(ip) if self.addresses.len() < NAMED_ADDRESSES => self.addresses.push(ip),
            Some(ip) => {
                if self.more_addresses.len() < COUNTED_ADDRESSES {
                    self.more_addresses.insert(ip);
                }
            }
            None => self.unknown_address = true,
        }
        why.clone_into(&mut self.last_reason);
        None
    }

    /// Whether refusals wait to be summarized.
    pub fn pending(&self) -> bool {
        self.suppressed > 0
    }

    /// The summary line, once the interval in which refusals were counted
    /// is over at `now` (None before, or when nothing was counted). A new
    /// interval starts with it.
    pub fn summary_due(&mut self, now: Instant) -> Option<String> {
        let start = self.window_start?;
        if self.suppressed == 0 || now.duration_since(start) < self.interval {
            return None;
        }
        let line = self.summary(now.duration_since(start));
        self.window_start = Some(now);
        self.logged = 0;
        Some(line)
    }

    /// The summary of what was counted so far, whatever the time (at
    /// finalize); None when nothing was counted.
    pub fn flush(&mut self, now: Instant) -> Option<String> {
        let start = self.window_start?;
        (self.suppressed > 0).then(|| self.summary(now.duration_since(start)))
    }

    fn summary(&mut self, over: Duration) -> String {
        let mut from: Vec<String> = self.addresses.iter().map(IpAddr::to_string).collect();
        match self.more_addresses.len() {
            0 => {}
            COUNTED_ADDRESSES => from.push(format!("over {COUNTED_ADDRESSES} more addresses")),
            n => from.push(format!("{n} more addresses")),
        }
        if self.unknown_address {
            from.push("unknown addresses".into());
        }
        let line = format!(
            "refused {} more tcp connections in the last {:.1} s (after the {} logged one by one) \
             from {}, closing them without delivering anything; the last one because {}",
            self.suppressed,
            over.as_secs_f64(),
            self.logged,
            from.join(", "),
            self.last_reason
        );
        self.suppressed = 0;
        self.addresses.clear();
        self.more_addresses.clear();
        self.unknown_address = false;
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn ip(last: u8) -> Option<IpAddr> {
        Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)))
    }

    #[test]
    fn a_burst_is_logged_then_counted_then_summarized() {
        let t0 = Instant::now();
        let mut log = RefusalLog::new(3, Duration::from_secs(10));
        let mut shown = 0;
        for i in 0..300u32 {
            let at = t0 + Duration::from_millis(u64::from(i));
            let remote = ip((i % 6) as u8);
            if log
                .refused(at, remote, "it was silent", || format!("line {i}"))
                .is_some()
            {
                shown += 1;
            }
        }
        assert_eq!(shown, 3);
        assert!(log.pending());
        assert_eq!(log.summary_due(t0 + Duration::from_secs(5)), None);
        let s = log.summary_due(t0 + Duration::from_secs(10)).unwrap();
        assert!(
            s.starts_with("refused 297 more tcp connections in the last 10.0 s"),
            "{s}"
        );
        assert!(s.contains("after the 3 logged one by one"), "{s}");
        assert!(
            s.contains("from 10.0.0.3, 10.0.0.4, 10.0.0.5, 10.0.0.0, 2 more addresses"),
            "{s}"
        );
        assert!(s.ends_with("the last one because it was silent"), "{s}");
        assert!(!log.pending());
        assert_eq!(log.summary_due(t0 + Duration::from_secs(30)), None);
        // A new interval: logged one by one again.
        let later = t0 + Duration::from_secs(40);
        assert!(log.refused(later, ip(1), "x", || "again".into()).is_some());
    }

    #[test]
    fn quiet_intervals_log_every_refusal() {
        let t0 = Instant::now();
        let mut log = RefusalLog::new(2, Duration::from_secs(1));
        for i in 0..10u64 {
            let at = t0 + Duration::from_secs(2 * i);
            assert!(log.refused(at, ip(1), "x", || "line".into()).is_some());
            assert!(log.refused(at, None, "x", || "line".into()).is_some());
        }
        assert!(!log.pending());
        assert_eq!(log.flush(t0 + Duration::from_secs(100)), None);
    }

    #[test]
    fn finalize_flushes_what_was_counted() {
        let t0 = Instant::now();
        let mut log = RefusalLog::new(1, Duration::from_secs(10));
        assert!(log.refused(t0, ip(1), "a", || "l".into()).is_some());
        assert!(log.refused(t0, None, "b", || "l".into()).is_none());
        let s = log.flush(t0 + Duration::from_millis(1500)).unwrap();
        assert!(
            s.starts_with("refused 1 more tcp connections in the last 1.5 s"),
            "{s}"
        );
        assert!(s.contains("from unknown addresses"), "{s}");
    }
}
