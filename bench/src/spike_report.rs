//! The opening spike's figures, one scale's at a time, and how the report writes them.

use crate::probe::Slowest;
use crate::report::{met, thousands, Report};
use crate::spike_plan::{
    BYTES_GOAL, CPU_GOAL, FIRST_POLL_GOAL_S, FULL_ARRIVALS_PER_SECOND, FULL_CAPACITY, KEPT_UP_MS,
    SLOW_US, TOLD, WINDOW,
};
use crate::spike_replay::{Kind, KINDS};

/// One 5 s window of the measured stretch.
pub struct Window {
    /// Its start, s from the opening.
    pub from_s: f64,
    /// Its length as read, s, and Redis main-thread CPU over it, share of a core.
    pub seconds: f64,
    pub cpu: f64,
    pub counts: [u64; KINDS],
    pub slow: Slowest,
}

/// One scale's figures.
pub struct Scale {
    pub members: usize,
    pub f: f64,
    pub ping_us: f64,
    pub idle: f64,
    pub windows: Vec<Window>,
    /// used_memory's growth over the joins, per member.
    pub bytes_per_member: f64,
    pub first_polls: Vec<Option<u32>>,
    /// How late the bench sent each request, µs, by window.
    pub late_us: Vec<(u16, u32)>,
    pub joined_before_opening_s: f64,
    pub lost: Vec<String>,
    pub admitted: u64,
    pub told: [u64; TOLD.len()],
    /// The queue's keys at the start of the stretch (after the joins) and at its end, bytes,
    /// and the buyers holding a place at its end.
    pub key_bytes_joined: i64,
    pub key_bytes_end: Vec<(String, i64)>,
    pub holding_end: u64,
    /// Redis preempted (nonvoluntary context switches) over the stretch; the load average at
    /// its start and end.
    pub preempted: u64,
    pub load: (f64, f64),
}

impl Scale {
    /// A window's share of a core at the whole scale: Redis's idle share, plus what the
    /// calls cost over it times the calls at the whole scale (1 / f times as many).
    pub fn full(&self, window: &Window) -> f64 {
        self.idle + (window.cpu - self.idle).max(0.0) / self.f
    }

    pub fn total(&self, kinds: &[Kind]) -> u64 {
        self.windows
            .iter()
            .map(|w| kinds.iter().map(|k| w.counts[*k as usize]).sum::<u64>())
            .sum()
    }

    /// Requests the stretch sent: issues, polls, checks and leaves.
    pub fn calls(&self) -> u64 {
        self.total(&[
            Kind::Join,
            Kind::Arrival,
            Kind::Status,
            Kind::Check,
            Kind::Leave,
        ])
    }

    /// Redis CPU per request over the stretch, µs, beyond its idle share (the promoter's
    /// and reaper's calls counted in, not as requests).
    pub fn per_call_us(&self) -> f64 {
        let busy: f64 = self
            .windows
            .iter()
            .map(|w| (w.cpu - self.idle) * w.seconds * 1e6)
            .sum();
        busy / self.calls().max(1) as f64
    }
}

/// The window with the most CPU at the whole scale, and that share.
pub fn worst(scale: &Scale) -> (&Window, f64) {
    scale
        .windows
        .iter()
        .map(|w| (w, scale.full(w)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("windows")
}

pub fn report_scale(report: &mut Report, scale: &Scale, containers: usize, exact: bool) {
    let f = scale.f;
    let members = scale.members as u64;
    report.section(&format!(
        "The opening spike at f = 1/{:.0}: {} pre-queue members, {:.0} new buyers a second, \
         capacity {:.0}; {containers} containers with one request in flight each, rate limits \
         off; Redis main-thread CPU (INFO cpu) per 5 s window",
        1.0 / f,
        thousands(members),
        FULL_ARRIVALS_PER_SECOND * f,
        (FULL_CAPACITY * f).round().max(1.0),
    ));
    let (peak, peak_full) = worst(scale);
    report.row(
        "worst 5 s window, Redis CPU",
        &format!(
            "{} % of a core at the whole scale ({:.1} % at this scale)",
            percent(peak_full),
            peak.cpu * 100.0
        ),
        &format!(
            "the window from {:+.0} s; goal ≤ 70 % in every window from −10 s to +180 s: {}",
            peak.from_s,
            met(peak_full <= CPU_GOAL)
        ),
    );
    let over = scale
        .windows
        .iter()
        .filter(|w| scale.full(w) > CPU_GOAL)
        .count();
    report.row(
        "windows over 70 % at the whole scale",
        &format!("{over} of {}", scale.windows.len()),
        "the whole scale: Redis idle + (window − idle) ÷ f, i.e. CPU per call × the calls at 2 000 000",
    );
    let per_call = scale.per_call_us();
    report.row(
        "Redis CPU per request over the stretch",
        &format!("{per_call:.1} µs ({:.1}× PING)", per_call / scale.ping_us),
        &format!(
            "{} requests: {} issues, {} polls, {} checks, {} leaves; {} promotion ticks and {} \
             reaper runs counted in; Redis idle {:.2} % of a core left out",
            thousands(scale.calls()),
            thousands(scale.total(&[Kind::Arrival, Kind::Join])),
            thousands(scale.total(&[Kind::Status])),
            thousands(scale.total(&[Kind::Check])),
            thousands(scale.total(&[Kind::Leave])),
            scale.total(&[Kind::Tick]),
            scale.total(&[Kind::Reap]),
            scale.idle * 100.0
        ),
    );
    report.row(
        "PING, sent the same way in the same run",
        &format!("{:.1} µs", scale.ping_us),
        "the floor: a request's own I/O",
    );
    let peak_calls = scale
        .windows
        .iter()
        .map(|w| {
            [
                Kind::Join,
                Kind::Arrival,
                Kind::Status,
                Kind::Check,
                Kind::Leave,
            ]
            .iter()
            .map(|k| w.counts[*k as usize])
            .sum::<u64>()
        })
        .max()
        .unwrap_or(0);
    report.row(
        "requests a second at the whole scale, busiest window",
        &thousands((peak_calls as f64 / WINDOW.as_secs_f64() / f) as u64),
        &format!(
            "{} a second at this scale, ÷ f",
            thousands(peak_calls / WINDOW.as_secs())
        ),
    );
    let mut firsts: Vec<u32> = scale.first_polls.iter().flatten().copied().collect();
    firsts.sort_unstable();
    let missing = scale.first_polls.len() - firsts.len();
    let at = |p: f64| {
        firsts
            .get(((firsts.len().max(1) - 1) as f64 * p).round() as usize)
            .map_or(f64::NAN, |ms| *ms as f64 / 1000.0)
    };
    let last = at(1.0);
    report.row(
        "first poll after the opening, p50 / p90 / p99 / max",
        &format!(
            "{:.1} / {:.1} / {:.1} / {last:.1} s",
            at(0.5),
            at(0.9),
            at(0.99)
        ),
        &format!(
            "{} pre-queue buyers (members and new buyers before the opening), {missing} without \
             one by +180 s; polls {}; goal ≤ 60 s: {}",
            thousands(scale.first_polls.len() as u64),
            if exact {
                "exactly when told"
            } else {
                "as the page does: up to 20 % sooner than told"
            },
            met(missing == 0 && last <= FIRST_POLL_GOAL_S)
        ),
    );
    let slow = scale.windows.iter().fold(Slowest::default(), |mut all, w| {
        all.add(&w.slow);
        all
    });
    report.row(
        "slowest call of the stretch (SLOWLOG)",
        &slow.figure(SLOW_US),
        &format!(
            "every call, the promoter's and reaper's too; goal ≤ 1 ms: {}",
            met(slow.over_1ms == 0)
        ),
    );
    let per_member = scale.key_bytes_joined as f64 / members as f64;
    report.row(
        "Redis bytes per pre-queue member, after the joins",
        &format!("{per_member:.1} B"),
        &format!(
            "the queue's keys (MEMORY USAGE) ÷ members; used_memory grew {:.1} B a member over \
             the joins; goal ≤ 150 B: {}",
            scale.bytes_per_member,
            met(per_member <= BYTES_GOAL)
        ),
    );
    let holding = scale.holding_end.max(1) as f64;
    let end_bytes: i64 = scale.key_bytes_end.iter().map(|k| k.1).sum();
    report.row(
        "Redis bytes per buyer holding a place at +180 s",
        &format!("{:.1} B", end_bytes as f64 / holding),
        &format!(
            "the queue's keys ÷ {} buyers in line or active; by key: {}",
            thousands(scale.holding_end),
            scale
                .key_bytes_end
                .iter()
                .filter(|k| k.1 as f64 / holding >= 0.5)
                .map(|(kind, bytes)| format!("{kind} {:.1} B", *bytes as f64 / holding))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let replies = scale.told.iter().sum::<u64>().max(1) as f64;
    let share = |i: usize| scale.told[i] as f64 * 100.0 / replies;
    report.row(
        "pollAfterSeconds of waiting replies after the opening",
        &format!(
            "1 s {:.0} %, 2–4 s {:.0} %, 5–9 s {:.0} %, 10–39 s {:.0} %, 40 s {:.0} %, over 40 s {:.0} %",
            share(0), share(1), share(2), share(3), share(4), share(5)
        ),
        &format!("{} replies", thousands(replies as u64)),
    );
    let mut late: Vec<u32> = scale.late_us.iter().map(|l| l.1).collect();
    late.sort_unstable();
    let kept_up = percentile_ms(&late, 0.99) <= KEPT_UP_MS;
    report.row(
        "the bench's lateness against the schedule, p50 / p99 / max",
        &format!(
            "{:.1} / {:.1} / {:.1} ms",
            percentile_ms(&late, 0.5),
            percentile_ms(&late, 0.99),
            percentile_ms(&late, 1.0)
        ),
        &format!(
            "{}; when each request was sent against when it fell due; the pre-queue joins finished \
             {:.0} s before the opening; Redis preempted {} times over the stretch, load \
             average {:.1} at its start and {:.1} at its end (SLOWLOG's durations are wall time)",
            if kept_up {
                "the bench kept up (p99 ≤ 1 s)"
            } else {
                "**the bench fell behind** (p99 over 1 s): it sent fewer requests than the \
                 schedule, so the CPU figures understate"
            },
            scale.joined_before_opening_s,
            thousands(scale.preempted),
            scale.load.0,
            scale.load.1
        ),
    );
    report.row(
        "buyers who lost their place",
        &format!("{}", scale.total(&[Kind::Lost])),
        &if scale.lost.is_empty() {
            format!(
                "{} admitted by the promoter; {} calls failed and were retried",
                thousands(scale.admitted),
                scale.total(&[Kind::Failed])
            )
        } else {
            scale.lost.join("; ")
        },
    );
    for (i, w) in scale.windows.iter().enumerate() {
        let c = |k: Kind| thousands(w.counts[k as usize]);
        let mut late: Vec<u32> = scale
            .late_us
            .iter()
            .filter(|l| usize::from(l.0) == i)
            .map(|l| l.1)
            .collect();
        late.sort_unstable();
        report.row(
            &format!("{:+.0} s to {:+.0} s", w.from_s, w.from_s + w.seconds.round()),
            &format!("{:.1} % ({} % whole scale)", w.cpu * 100.0, percent(scale.full(w))),
            &format!(
                "{} polls ({} first after the opening), {} issues, {} checks, {} leaves, {} ticks; slowest {}; sent late p99 {:.0} ms",
                c(Kind::Status),
                c(Kind::FirstPoll),
                thousands(w.counts[Kind::Join as usize] + w.counts[Kind::Arrival as usize]),
                c(Kind::Check),
                c(Kind::Leave),
                c(Kind::Tick),
                if w.slow.logged == 0 {
                    format!("none over {SLOW_US} µs")
                } else {
                    format!("{} µs", w.slow.max_us)
                },
                percentile_ms(&late, 0.99)
            ),
        );
    }
}

/// The `p` quantile of sorted µs figures, in ms.
fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    sorted
        .get(((sorted.len().max(1) - 1) as f64 * p).round() as usize)
        .map_or(0.0, |us| f64::from(*us) / 1000.0)
}

/// Bytes by kind of key: a key's name after the queue's hash tag, without a slot number
/// (`gone:0` and `gone:1` are both `gone`), most first.
pub fn by_kind(keys: Vec<(String, i64)>) -> Vec<(String, i64)> {
    let mut kinds: Vec<(String, i64)> = Vec::new();
    for (key, bytes) in keys {
        let name = key.rsplit_once("}:").map_or(key.as_str(), |(_, name)| name);
        let kind = name
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .trim_end_matches(':')
            .to_owned();
        match kinds.iter_mut().find(|k| k.0 == kind) {
            Some(k) => k.1 += bytes,
            None => kinds.push((kind, bytes)),
        }
    }
    kinds.sort_by_key(|k| std::cmp::Reverse(k.1));
    kinds
}

/// A share of a core in whole percent, with a space between thousands.
pub fn percent(share: f64) -> String {
    thousands((share * 100.0).round().max(0.0) as u64)
}
