//! The bench's instruments: a private Redis with every function wired to it (the tests'
//! `TestApp`), calls through the real handlers, `INFO commandstats` readings and rates.
//! Redis CPU and the probe's readings are in `probe.rs`; the report is in `report.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use lambda_runtime::{Context, LambdaEvent};
use lineup::ids::QueueId;
use lineup::queue::keys::QueueKeys;
use lineup::queue::WaitingRoom;
use lineup::ranking::{Board, Order, Period, Rankings};
use lineup::token::TokenClaims;
use lineup_tests::{api_event_text, api_request, Reply, TestApp};
use serde_json::{json, Value};

pub struct Bench {
    pub app: TestApp,
}

impl Bench {
    /// Empties `INFO commandstats` (`CONFIG RESETSTAT`).
    pub async fn reset_commandstats(&self) {
        redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async::<()>(&mut self.app.inspect.clone())
            .await
            .unwrap();
    }

    pub async fn start() -> Result<Bench, Box<dyn std::error::Error>> {
        let app = TestApp::spawn(&[
            ("RATE_LIMIT_USER_PER_MINUTE", "0"),
            ("RATE_LIMIT_IP_PER_MINUTE", "0"),
            ("REDIS_RESPONSE_TIMEOUT_MS", "30000"),
            // Up to 512 calls in flight on the one connection; none is shed.
            ("REDIS_MAX_IN_FLIGHT", "100000"),
            ("RANKING_DAILY_RETENTION_DAYS", "3650"),
        ])
        .await;
        if app.redis.is_none() {
            return Err("lineup-bench starts its own redis-server; unset REDIS_URL".into());
        }
        Ok(Bench { app })
    }

    pub fn room(&self) -> &WaitingRoom {
        self.app.room()
    }

    pub fn url(&self) -> String {
        self.app.redis.as_ref().map(|r| r.url()).unwrap_or_default()
    }

    pub fn port(&self) -> u16 {
        self.app
            .redis
            .as_ref()
            .map(|r| r.port())
            .unwrap_or_default()
    }

    pub async fn redis_version(&self) -> String {
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut self.app.inspect.clone())
            .await
            .unwrap_or_default();
        info.lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("?")
            .trim()
            .to_owned()
    }

    async fn queue_api(&self, method: &str, path: &str, body: Option<&str>) -> Reply {
        self.app.queue_api(api_request(method, path, body)).await
    }

    /// Issues through the handler; returns the token.
    pub async fn issue(&self, queue: &str, user: &str) -> String {
        let body = json!({ "userId": user }).to_string();
        let reply = self
            .queue_api("POST", &format!("/queues/{queue}/tokens"), Some(&body))
            .await;
        assert!(reply.status < 300, "issue: {}", reply.body);
        reply.token()
    }

    pub async fn status(&self, queue: &str, token: &str) {
        let reply = self
            .queue_api("GET", &format!("/queues/{queue}/tokens/{token}"), None)
            .await;
        assert!(
            reply.status == 200 || reply.status == 404 || reply.status == 410,
            "status: {}",
            reply.body
        );
    }

    pub async fn leave(&self, queue: &str, token: &str) {
        self.queue_api("DELETE", &format!("/queues/{queue}/tokens/{token}"), None)
            .await;
    }

    pub async fn configure(&self, queue: &str, settings: Value) {
        let reply = self
            .queue_api(
                "PUT",
                &format!("/queues/{queue}/settings"),
                Some(&settings.to_string()),
            )
            .await;
        assert_eq!(reply.status, 200, "settings: {}", reply.body);
    }

    pub async fn promote_tick(&self) {
        queue_promoter::handle(
            LambdaEvent::new(json!({}), Context::default()),
            &self.app.stack.promoter,
        )
        .await
        .expect("promoter");
    }

    pub async fn reap_queue(&self, queue: &str) {
        self.room()
            .reap(&QueueId::parse(queue).unwrap())
            .await
            .expect("reap");
    }

    pub fn payment(&self, id: &str, concert: &str, genres: &[&str]) -> Value {
        json!({"version": "0", "id": id, "detail-type": "PaymentCompleted", "source": "lineup.payments",
               "account": "1", "time": chrono::Utc::now().to_rfc3339(), "region": "us-east-1", "resources": [],
               "detail": {"paymentId": id, "concertId": concert, "seats": 1, "genres": genres}})
    }

    /// A `ConcertScheduled` for `concert` with `capacity` seats, as of `updated_at`.
    pub fn concert(&self, concert: &str, capacity: u32, updated_at: &str) -> Value {
        json!({"version": "0", "id": concert, "detail-type": "ConcertScheduled", "source": "lineup.payments",
               "account": "1", "time": chrono::Utc::now().to_rfc3339(), "region": "us-east-1", "resources": [],
               "detail": {"concertId": concert, "title": format!("Concert {concert}"), "capacity": capacity,
                          "genres": ["rock", "pop"], "startsAt": "2027-03-01T19:00:00+09:00",
                          "venue": "Olympic Hall", "updatedAt": updated_at}})
    }

    pub async fn apply(&self, events: &[Value]) {
        event_applier::apply_events(events, &self.app.stack.event_applier).await;
    }

    /// Ticks until the fold queue is empty: every payment applied so far is on its boards.
    pub async fn settle(&self) -> lineup::ranking::Tick {
        let rankings = &self.app.stack.event_applier.rankings;
        let mut total = rankings
            .tick(&lineup::clock::SystemClock)
            .await
            .expect("tick");
        while total.more {
            let tick = rankings
                .tick(&lineup::clock::SystemClock)
                .await
                .expect("tick");
            total.folded += tick.folded;
            total.fold_left = tick.fold_left;
            total.processed += tick.processed;
            total.calls += tick.calls;
            total.more = tick.more;
        }
        total
    }

    pub async fn sqs_batch(&self, events: Vec<Value>) {
        let records: Vec<Value> = events
            .iter()
            .enumerate()
            .map(|(i, e)| json!({"messageId": format!("m{i}"), "receiptHandle": "h", "body": e.to_string(), "attributes": {}, "messageAttributes": {}, "eventSource": "aws:sqs"}))
            .collect();
        event_applier::handle(
            LambdaEvent::new(json!({"Records": records}), Context::default()),
            &self.app.stack.event_applier,
        )
        .await
        .expect("batch");
    }

    pub async fn top(&self, period: &str) {
        let event = Bench::event("GET", &format!("/rankings/{period}?limit=10"), None);
        self.invoke_ranking_api(&event).await;
    }

    /// An API Gateway event for the HTTP functions, as the JSON text the runtime delivers.
    /// The throughput section prepares these before it starts the clock, so that what it
    /// times is what a function does per invocation: deserialize the event, handle it.
    pub fn event(method: &str, path: &str, body: Option<&str>) -> String {
        api_event_text(method, path, body, None, "192.0.2.1")
    }

    /// One invocation of `queue-api` with a prepared event; the response status.
    pub async fn invoke_queue_api(&self, event: &str) -> u16 {
        let request = lambda_http::request::from_str(event).expect("API Gateway event");
        let response = queue_api::handle(request, &self.app.stack.queue_api).await;
        response.expect("infallible").status().as_u16()
    }

    /// One invocation of `coupon-api` with a prepared event; the response status.
    pub async fn invoke_coupon_api(&self, event: &str) -> u16 {
        let request = lambda_http::request::from_str(event).expect("API Gateway event");
        let response = coupon_api::handle(request, &self.app.stack.coupon_api).await;
        response.expect("infallible").status().as_u16()
    }

    /// One invocation of `ranking-api` with a prepared event; the response status.
    pub async fn invoke_ranking_api(&self, event: &str) -> u16 {
        let request = lambda_http::request::from_str(event).expect("API Gateway event");
        let response = ranking_api::handle(request, &self.app.stack.ranking_api).await;
        response.expect("infallible").status().as_u16()
    }

    pub async fn concert_rank(&self, period: &str, concert: &str) {
        let path = format!("/rankings/{period}/concerts/{concert}");
        self.invoke_ranking_api(&Bench::event("GET", &path, None))
            .await;
    }

    /// Issues tokens to users `w{from}`… up to `to`, through the issue script, 512 at once.
    pub async fn fill(&self, queue: &str, from: usize, to: usize) {
        let queue = QueueId::parse(queue).unwrap();
        stream::iter(from..to)
            .map(|i| {
                let queue = queue.clone();
                async move {
                    self.room()
                        .issue(&queue, &crate::util::user(&format!("w{i:07}")), None)
                        .await
                        .expect("issue");
                }
            })
            .buffer_unordered(512)
            .collect::<Vec<()>>()
            .await;
    }

    /// `count` random waiters of `queue`, as (user, ticket).
    pub async fn random_waiters(&self, queue: &str, count: usize) -> Vec<(String, u64)> {
        let keys = QueueKeys::new(&self.app.config.key_prefix, &QueueId::parse(queue).unwrap());
        redis::cmd("ZRANDMEMBER")
            .arg(&keys.waiting)
            .arg(count)
            .arg("WITHSCORES")
            .query_async(&mut self.app.inspect.clone())
            .await
            .expect("random waiters")
    }

    /// How long one status call took for each of `count` random waiters of `queue`, sorted.
    pub async fn status_latencies(&self, queue: &str, count: usize) -> Vec<Duration> {
        let tokens = self.tokens_for(queue, count).await;
        let mut samples = Vec::with_capacity(tokens.len());
        for token in &tokens {
            let t = Instant::now();
            self.status(queue, token).await;
            samples.push(t.elapsed());
        }
        samples.sort();
        samples
    }

    /// Tokens of `count` random waiters of `queue`.
    pub async fn tokens_for(&self, queue: &str, count: usize) -> Vec<String> {
        self.random_waiters(queue, count)
            .await
            .into_iter()
            .map(|(user, ticket)| {
                TokenClaims {
                    queue: QueueId::parse(queue).unwrap(),
                    user: crate::util::user(&user),
                    ticket,
                }
                .sign(&self.app.config.token_key)
            })
            .collect()
    }

    /// `command → (calls, usec)` from `INFO commandstats`.
    pub async fn commandstats(&self) -> HashMap<String, (u64, u64)> {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut self.app.inspect.clone())
            .await
            .unwrap();
        info.lines()
            .filter_map(|line| {
                let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
                let field = |key: &str| {
                    rest.split(',')
                        .find_map(|f| f.strip_prefix(key)?.parse::<u64>().ok())
                };
                Some((name.to_owned(), (field("calls=")?, field("usec=")?)))
            })
            .collect()
    }

    pub async fn used_memory(&self) -> i64 {
        self.app.info_number("memory", "used_memory").await
    }

    /// Runs `redis-benchmark` on this server; returns requests per second.
    pub async fn redis_benchmark(&self, args: &[String]) -> f64 {
        let output = tokio::process::Command::new("redis-benchmark")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port().to_string(),
                "-c",
                "64",
                "-n",
                "200000",
                "-r",
                "100000000",
                "-q",
            ])
            .args(args)
            .output()
            .await
            .expect("redis-benchmark (it comes with redis-server)");
        let text = String::from_utf8_lossy(&output.stdout);
        text.split(['\r', '\n'])
            .filter_map(|part| {
                part.split(" requests per second")
                    .next()?
                    .rsplit(' ')
                    .next()?
                    .parse::<f64>()
                    .ok()
            })
            .next_back()
            .unwrap_or(0.0)
    }

    /// `command` (a call the handlers make, from `lineup::bench_support`) as text arguments.
    fn text_args(command: Vec<Vec<u8>>) -> Vec<String> {
        command
            .into_iter()
            .map(|part| String::from_utf8(part).expect("a text argument"))
            .collect()
    }

    /// The issue script, raw: a random new user per call.
    pub async fn redis_benchmark_issue(&self, queue: &str) -> f64 {
        self.configure(queue, json!({"capacity": 1})).await;
        self.issue(queue, "holder").await;
        let args = Self::text_args(lineup::bench_support::issue_command(
            &self.app.stack.queue_api.room,
            &QueueId::parse(queue).unwrap(),
            &["raw-__rand_int__", "", "0", "0"],
        ));
        self.redis_benchmark(&args).await
    }

    /// The status script, raw: one waiter of `queue` polling (a status poll is a waiter's
    /// heartbeat, so it writes as well as reads, as the handler's does).
    pub async fn redis_benchmark_status(&self, queue: &str) -> f64 {
        let Some((user, ticket)) = self.random_waiters(queue, 1).await.into_iter().next() else {
            return 0.0;
        };
        let ticket = ticket.to_string();
        let args = Self::text_args(lineup::bench_support::status_command(
            &self.app.stack.queue_api.room,
            &QueueId::parse(queue).unwrap(),
            &[&user, &ticket],
        ));
        self.redis_benchmark(&args).await
    }

    pub async fn redis_benchmark_top(&self) -> f64 {
        let rankings = &self.app.stack.ranking_api.rankings;
        let board = Board::on(Period::Daily, rankings.today(), None);
        let args = Self::text_args(lineup::bench_support::top_command(
            rankings,
            &board,
            None,
            Order::Seats,
            10,
        ));
        self.redis_benchmark(&args).await
    }

    /// `concerts` concerts on `board` and its rate board, each with details, written directly
    /// in the formats the event applier writes (seats 1–5 000, capacities 1 000–50 999); the page
    /// cache deleted, as the event applier's writes delete it.
    pub async fn seed_board(&self, rankings: &Rankings, board: &Board, concerts: u64) {
        let mut seats_board = redis::cmd("ZADD");
        let mut rate_board = redis::cmd("ZADD");
        let mut details = redis::cmd("HSET");
        seats_board.arg(rankings.board_key(board));
        rate_board.arg(rankings.rate_key(board));
        details.arg(rankings.details_key());
        let now = chrono::Utc::now().timestamp_millis();
        for i in 0..concerts {
            let concert = format!("c{i}");
            let seats = 1 + i * 7_919 % 5_000;
            let capacity = 1_000 + i * 104_729 % 50_000;
            seats_board.arg(-(seats as i64)).arg(&concert);
            rate_board
                .arg(-((seats * 1_000_000 / capacity) as i64))
                .arg(&concert);
            let json = json!({"title": format!("Concert number {i} on tour"), "venue": format!("Arena {}", i % 300),
                              "startsAt": "2026-12-24T19:00:00+09:00", "capacity": capacity, "genres": ["k-pop", "ballad"]});
            details
                .arg(&concert)
                .arg(format!("{now} {capacity} {json}"));
        }
        // Written behind the writers' backs: the pages they would have dropped go too.
        let mut forget = redis::cmd("UNLINK");
        forget.arg(rankings.page_cache_key());
        let mut inspect = self.app.inspect.clone();
        for cmd in [seats_board, rate_board, details, forget] {
            cmd.query_async::<()>(&mut inspect).await.unwrap();
        }
    }

    pub async fn redis_benchmark_zadd(&self) -> f64 {
        self.redis_benchmark(&["-t".into(), "zadd".into()]).await
    }
}

/// Client commands (round trips, when not pipelined) between two readings: the commands
/// lineup sends, never the ones its scripts run.
pub fn client_commands(
    before: &HashMap<String, (u64, u64)>,
    after: &HashMap<String, (u64, u64)>,
) -> u64 {
    ["evalsha", "eval", "script|load", "smembers"]
        .iter()
        .map(|name| after.get(*name).map_or(0, |a| a.0) - before.get(*name).map_or(0, |b| b.0))
        .sum()
}

/// Commands run between two readings, client and in-script alike, leaving out `INFO` (the
/// readings themselves) and `EVALSHA` (the call that ran the others): `(all, writes)`.
pub fn commands_run(
    before: &HashMap<String, (u64, u64)>,
    after: &HashMap<String, (u64, u64)>,
) -> (u64, u64) {
    const READS: [&str; 12] = [
        "info", "evalsha", "eval", "hget", "hmget", "hvals", "hlen", "exists", "get", "zscore",
        "zrange", "type",
    ];
    let (mut all, mut writes) = (0, 0);
    for (name, (calls, _)) in after {
        let n = calls - before.get(name).map_or(0, |b| b.0);
        if !matches!(name.as_str(), "info" | "evalsha" | "eval") {
            all += n;
        }
        if !READS.contains(&name.as_str()) {
            writes += n;
        }
    }
    (all, writes)
}

pub fn usec_per_call(
    before: &HashMap<String, (u64, u64)>,
    after: &HashMap<String, (u64, u64)>,
    name: &str,
) -> f64 {
    let (c1, u1) = after.get(name).copied().unwrap_or_default();
    let (c0, u0) = before.get(name).copied().unwrap_or_default();
    (u1 - u0) as f64 / (c1 - c0).max(1) as f64
}

/// Calls per second of `op` from `callers` concurrent loops over `run`.
pub async fn rate<F, Fut>(callers: usize, run: Duration, op: F) -> f64
where
    F: Fn(u64) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let done = AtomicU64::new(0);
    let deadline = Instant::now() + run;
    let started = Instant::now();
    futures::future::join_all((0..callers).map(|caller| {
        let (done, op) = (&done, &op);
        async move {
            let mut n = caller as u64 * 1_000_000_000;
            while Instant::now() < deadline {
                op(n).await;
                n += 1;
                done.fetch_add(1, Ordering::Relaxed);
            }
        }
    }))
    .await;
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}
