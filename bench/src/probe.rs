//! Readings of Redis under load: its main-thread CPU per request sent as AWS sends it
//! (containers, each one connection with one request in flight), a PING's as the floor, its
//! idle share, the machine's load, and the probe: the bench's own connection for `INFO`,
//! `MEMORY USAGE` and SLOWLOG.

use std::time::{Duration, Instant};

use crate::measure::Bench;
use crate::report::thousands;

/// A number field of an `INFO` reply (`name` with its colon), 0 when absent.
pub fn info_field(info: &str, name: &str) -> f64 {
    info.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// Main-thread CPU (user + sys) of the bench's Redis, in µs: what Redis spends reading
/// requests, running them and writing replies. commandstats counts only the running.
pub async fn main_thread_cpu_us(bench: &Bench) -> f64 {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(&mut bench.app.inspect.clone())
        .await
        .expect("INFO cpu");
    main_thread_cpu_of(&info)
}

/// Main-thread CPU (user + sys), in µs, from an `INFO cpu` reply.
pub fn main_thread_cpu_of(info: &str) -> f64 {
    (info_field(info, "used_cpu_user_main_thread") + info_field(info, "used_cpu_sys_main_thread"))
        * 1e6
}

/// EVALSHA's calls and µs from commandstats.
pub async fn evalsha(bench: &Bench) -> (u64, u64) {
    bench
        .commandstats()
        .await
        .get("evalsha")
        .copied()
        .unwrap_or((0, 0))
}

/// One measured kind: Redis main-thread µs per request, and the µs commandstats gives each
/// script run (0 without scripts).
pub struct Cost {
    pub per_request_us: f64,
    pub script_us: f64,
    /// The ratio to a PING of each round measured right after a round of PINGs, when the
    /// requests were sent in paired rounds (empty otherwise).
    pub ratios: Vec<f64>,
}

impl Cost {
    /// The figure as the report shows it: µs, and the ratio to a PING's `ping_us`; for paired
    /// rounds, the median of the rounds' ratios and their range.
    pub fn against(&self, ping_us: f64) -> String {
        let mut ratios = self.ratios.clone();
        if ratios.is_empty() {
            return format!(
                "{:.1} µs ({:.1}× PING)",
                self.per_request_us,
                self.per_request_us / ping_us
            );
        }
        ratios.sort_by(f64::total_cmp);
        format!(
            "{:.1} µs ({:.1}× PING, the median of {} rounds each beside its own PINGs; {:.1}–{:.1}×)",
            self.per_request_us,
            ratios[ratios.len() / 2],
            ratios.len(),
            ratios[0],
            ratios[ratios.len() - 1]
        )
    }
}

/// Runs `requests` over `lanes` tasks (containers), each taking the next request when its
/// last has answered; returns the Redis CPU they cost per request. `run` gets the lane.
pub async fn per_request<T, F, Fut>(bench: &Bench, lanes: usize, requests: Vec<T>, run: F) -> Cost
where
    T: Send,
    F: Fn(usize, T) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let count = requests.len().max(1) as f64;
    let mut queues: Vec<Vec<T>> = (0..lanes).map(|_| Vec::new()).collect();
    for (i, request) in requests.into_iter().enumerate() {
        queues[i % lanes].push(request);
    }
    let run = &run;
    let (calls_before, usec_before) = evalsha(bench).await;
    let before = main_thread_cpu_us(bench).await;
    futures::future::join_all(
        queues
            .into_iter()
            .enumerate()
            .map(|(lane, requests)| async move {
                for request in requests {
                    run(lane, request).await;
                }
            }),
    )
    .await;
    let after = main_thread_cpu_us(bench).await;
    let (calls_after, usec_after) = evalsha(bench).await;
    let calls = calls_after.saturating_sub(calls_before);
    Cost {
        per_request_us: (after - before) / count,
        ratios: Vec::new(),
        script_us: if calls == 0 {
            0.0
        } else {
            usec_after.saturating_sub(usec_before) as f64 / calls as f64
        },
    }
}

/// Runs `requests` over as many tasks as `pings` has connections (containers, one request in
/// flight each), in `rounds` rounds, each right after a round of as many PINGs on `pings`, so
/// a burst of load from elsewhere on the machine skews one round's ratio, not the figure;
/// returns the Redis CPU they cost and each round's ratio to its PINGs.
pub async fn paired<T, F, Fut>(
    bench: &Bench,
    pings: &[redis::aio::MultiplexedConnection],
    rounds: usize,
    requests: Vec<T>,
    run: F,
) -> Cost
where
    T: Send,
    F: Fn(usize, T) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let count = requests.len().max(1);
    let per_round = count.div_ceil(rounds.max(1));
    let mut requests = requests.into_iter().peekable();
    let (mut total_us, mut script_us, mut ratios) = (0.0, 0.0, Vec::new());
    let mut measured = 0.0_f64;
    while requests.peek().is_some() {
        let round: Vec<T> = requests.by_ref().take(per_round).collect();
        let size = round.len() as f64;
        let ping_us = ping_us(bench, pings, round.len()).await;
        let cost = per_request(bench, pings.len(), round, &run).await;
        total_us += cost.per_request_us * size;
        script_us += cost.script_us;
        ratios.push(cost.per_request_us / ping_us);
        measured += 1.0;
    }
    Cost {
        per_request_us: total_us / count as f64,
        script_us: script_us / measured.max(1.0),
        ratios,
    }
}

/// `lanes` connections of their own to the bench's Redis, for PING and GET sent as the
/// containers send their requests.
pub async fn plain_connections(
    bench: &Bench,
    lanes: usize,
) -> Vec<redis::aio::MultiplexedConnection> {
    let mut connections = Vec::new();
    for _ in 0..lanes {
        connections.push(connection(bench).await);
    }
    connections
}

/// A connection of the bench's own, which waits as long as the functions' do (the client's
/// default gives up after 0.5 s, which a loaded machine can exceed).
async fn connection(bench: &Bench) -> redis::aio::MultiplexedConnection {
    let config =
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(30)));
    redis::Client::open(bench.url())
        .expect("redis url")
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("connect")
}

/// Redis CPU per PING, `count` of them over `connections`, one in flight on each: the floor
/// of a request sent that way, its own I/O.
pub async fn ping_us(
    bench: &Bench,
    connections: &[redis::aio::MultiplexedConnection],
    count: usize,
) -> f64 {
    per_request(
        bench,
        connections.len(),
        (0..count).collect(),
        |lane, _| async move {
            let _: String = redis::cmd("PING")
                .query_async(&mut connections[lane].clone())
                .await
                .expect("PING");
        },
    )
    .await
    .per_request_us
    .max(f64::EPSILON)
}

/// The machine's load average over the last minute (0 where /proc has none).
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// Redis main-thread CPU with nothing sent, as a fraction of a core, over `over`: its
/// timers, which do not grow with the load.
pub async fn idle_share(bench: &Bench, over: Duration) -> f64 {
    let (before, started) = (main_thread_cpu_us(bench).await, Instant::now());
    tokio::time::sleep(over).await;
    (main_thread_cpu_us(bench).await - before) / 1e6 / started.elapsed().as_secs_f64()
}

/// The bench's own connection for readings (INFO, SLOWLOG), named so that its commands can
/// be told from lineup's in SLOWLOG.
pub struct Probe {
    conn: redis::aio::MultiplexedConnection,
}

/// The client name of [`Probe`]'s connection.
const PROBE_NAME: &str = "lineup-bench-probe";

/// The slowest of lineup's calls in a stretch of SLOWLOG.
#[derive(Debug, Clone, Default)]
pub struct Slowest {
    /// Calls logged (over the threshold), and of those over 1 ms.
    pub logged: u64,
    pub over_1ms: u64,
    /// The slowest: µs and its command (a script's SHA cut short).
    pub max_us: u64,
    pub max_call: String,
}

impl Slowest {
    pub fn add(&mut self, other: &Slowest) {
        self.logged += other.logged;
        self.over_1ms += other.over_1ms;
        if other.max_us > self.max_us {
            self.max_us = other.max_us;
            self.max_call = other.max_call.clone();
        }
    }

    /// The figure: the slowest call in ms, and how many were over 1 ms (and over the
    /// threshold, when it is lower).
    pub fn figure(&self, threshold_us: u64) -> String {
        if self.logged == 0 {
            return format!("none over {:.2} ms", threshold_us as f64 / 1000.0);
        }
        let mut figure = format!(
            "{:.3} ms ({}); {} over 1 ms",
            self.max_us as f64 / 1000.0,
            self.max_call,
            thousands(self.over_1ms)
        );
        if threshold_us < 1_000 {
            figure += &format!(
                ", {} over {:.2} ms",
                thousands(self.logged),
                threshold_us as f64 / 1000.0
            );
        }
        figure
    }
}

impl Probe {
    pub async fn open(bench: &Bench) -> Probe {
        let mut conn = connection(bench).await;
        redis::cmd("CLIENT")
            .arg("SETNAME")
            .arg(PROBE_NAME)
            .query_async::<()>(&mut conn)
            .await
            .expect("CLIENT SETNAME");
        Probe { conn }
    }

    /// `INFO` of `sections` (several at once, as Redis 7 allows).
    pub async fn info(&self, sections: &[&str]) -> String {
        let mut cmd = redis::cmd("INFO");
        for section in sections {
            cmd.arg(*section);
        }
        cmd.query_async(&mut self.conn.clone()).await.expect("INFO")
    }

    /// Main-thread CPU (user + sys) in µs, and `used_memory`, read at once.
    pub async fn cpu_and_memory(&self) -> (f64, i64) {
        let info = self.info(&["cpu", "memory"]).await;
        (
            (info_field(&info, "used_cpu_user_main_thread")
                + info_field(&info, "used_cpu_sys_main_thread"))
                * 1e6,
            info_field(&info, "used_memory") as i64,
        )
    }

    /// The keys matching `pattern` and the bytes each holds (`MEMORY USAGE`, every element
    /// counted).
    pub async fn key_bytes(&self, pattern: &str) -> Vec<(String, i64)> {
        let mut conn = self.conn.clone();
        let mut keys: Vec<String> = Vec::new();
        let mut cursor: u64 = 0;
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(1_000)
                .query_async(&mut conn)
                .await
                .expect("SCAN");
            keys.extend(batch);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        let mut bytes = Vec::new();
        for key in keys {
            let usage: Option<i64> = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(&key)
                .arg("SAMPLES")
                .arg(0)
                .query_async(&mut conn)
                .await
                .expect("MEMORY USAGE");
            bytes.push((key, usage.unwrap_or(0)));
        }
        bytes
    }

    /// How often the Redis process has been preempted (its nonvoluntary context switches,
    /// from /proc; 0 where there is none): a figure of how much the machine took Redis off
    /// its core, which SLOWLOG's wall-clock durations include.
    pub async fn preempted(&self) -> u64 {
        let info = self.info(&["server"]).await;
        let pid = info_field(&info, "process_id") as u64;
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|status| {
                status.lines().find_map(|line| {
                    line.strip_prefix("nonvoluntary_ctxt_switches:")?
                        .trim()
                        .parse()
                        .ok()
                })
            })
            .unwrap_or(0)
    }

    /// Logs every call slower than `threshold_us`, up to `max_len` of them, and empties the log.
    pub async fn slowlog_start(&self, threshold_us: u64, max_len: u64) {
        self.slowlog_config(threshold_us, max_len).await;
        redis::cmd("SLOWLOG")
            .arg("RESET")
            .query_async::<()>(&mut self.conn.clone())
            .await
            .expect("SLOWLOG RESET");
    }

    /// Back to the bench's usual SLOWLOG settings.
    pub async fn slowlog_stop(&self) {
        self.slowlog_config(10_000, 128).await;
    }

    async fn slowlog_config(&self, threshold_us: u64, max_len: u64) {
        redis::pipe()
            .cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(threshold_us)
            .ignore()
            .cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-max-len")
            .arg(max_len)
            .ignore()
            .query_async::<()>(&mut self.conn.clone())
            .await
            .expect("CONFIG SET slowlog");
    }

    /// Lineup's calls logged since the last reading (the probe's own left out), and empties
    /// the log.
    pub async fn slowlog_take(&self) -> Slowest {
        let (entries, ()): (Vec<redis::Value>, ()) = redis::pipe()
            .cmd("SLOWLOG")
            .arg("GET")
            .arg(-1)
            .cmd("SLOWLOG")
            .arg("RESET")
            .query_async(&mut self.conn.clone())
            .await
            .expect("SLOWLOG GET");
        let text = |value: Option<&redis::Value>| match value {
            Some(redis::Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
            Some(redis::Value::SimpleString(s)) => s.clone(),
            _ => String::new(),
        };
        let mut slowest = Slowest::default();
        // Each entry: id, timestamp, µs, the arguments, the client's address, its name.
        for entry in &entries {
            let redis::Value::Array(fields) = entry else {
                continue;
            };
            if text(fields.get(5)) == PROBE_NAME {
                continue;
            }
            let Some(redis::Value::Int(us)) = fields.get(2) else {
                continue;
            };
            let us = (*us).max(0) as u64;
            slowest.logged += 1;
            if us > 1_000 {
                slowest.over_1ms += 1;
            }
            if us > slowest.max_us {
                let call = match fields.get(3) {
                    Some(redis::Value::Array(args)) => {
                        let mut words: Vec<String> =
                            args.iter().take(2).map(|a| text(Some(a))).collect();
                        if let Some(sha) = words.get_mut(1) {
                            sha.truncate(8);
                        }
                        words.join(" ")
                    }
                    _ => String::new(),
                };
                slowest.max_us = us;
                slowest.max_call = call;
            }
        }
        slowest
    }
}
