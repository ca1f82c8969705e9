//! The overload test's buyers: those who obey `pollAfterSeconds` and `Retry-After`, the
//! flood that does not, what each sends and what each was answered.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use futures::StreamExt;
use lineup_tests::{api_request_from, sleep, Reply, TestApp};
use serde_json::json;

/// The queue the buyers line up in.
pub(super) const QUEUE: &str = "surge";
/// The idle period: a waiter told to poll after a third of it (30 s) whom the surge starved
/// throughout would be dropped. With the default (120 s) nobody could be, within the surge.
pub(super) const IDLE: Duration = Duration::from_secs(90);
/// Buyers who follow `pollAfterSeconds` and `Retry-After`, and leave once they have booked.
/// They join first.
pub(super) const OBEDIENT: usize = 100;
/// Buyers whose polls make up the flood, with the arrivals it adds. They join next.
pub(super) const POOL: usize = 600;
/// The calm before the surge, and the surge (`AFTER`: the calm after it).
pub(super) const BEFORE: Duration = Duration::from_secs(15);
pub(super) const SURGE: Duration = Duration::from_secs(60);
/// All requests sent outside the surge, and in it, as multiples of what Redis serves.
pub(super) const CALM_LOAD: f64 = 0.4;
pub(super) const SURGE_LOAD: f64 = 3.0;
/// One flood request in this many is a new arrival; the others poll.
pub(super) const ARRIVAL_EVERY: u64 = 20;
/// How long an admitted obedient buyer books before it leaves: long enough that most of
/// them still wait when the test ends.
pub(super) const BOOKING: Duration = Duration::from_secs(10);

/// The request sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Call {
    Poll,
    Join,
    Leave,
}

/// One answer, as the client saw it.
pub(super) struct Answer {
    pub(super) call: Call,
    /// When it was sent, from the start of the calm before the surge.
    pub(super) sent: Duration,
    pub(super) took: Duration,
    pub(super) status: u16,
    pub(super) retry_after: Option<u64>,
}

/// Every answer, and every broken promise found on the way.
pub(super) struct Log {
    pub(super) start: Instant,
    pub(super) bound: Duration,
    /// Requests sent so far.
    pub(super) sent: AtomicU64,
    pub(super) answers: Mutex<Vec<Answer>>,
    pub(super) broken: Mutex<Vec<String>>,
}

impl Log {
    pub(super) fn broken(&self, what: String) {
        self.broken.lock().unwrap().push(what);
    }

    /// Sends `request` through the queue API and records its answer, which must be what the
    /// call gets when Redis keeps up, or 503 or 429 with `Retry-After`, within the bound.
    pub(super) async fn send(
        &self,
        app: &TestApp,
        call: Call,
        request: lambda_http::Request,
    ) -> Reply {
        self.sent.fetch_add(1, Ordering::Relaxed);
        let sent = Instant::now();
        let reply = app.queue_api(request).await;
        let took = sent.elapsed();
        let retry_after = retry_after(&reply);
        let normal = match call {
            // A poll's 410 is checked by its caller: only a buyer unseen for the idle period
            // may be dropped.
            Call::Poll => [200, 410].contains(&reply.status),
            Call::Join => [200, 201].contains(&reply.status),
            Call::Leave => reply.status == 204 || problem(&reply) == "left",
        };
        let refused = [503, 429].contains(&reply.status) && retry_after.is_some();
        if !(normal || refused) {
            self.broken(format!(
                "{call:?} answered {}: {}",
                reply.status, reply.body
            ));
        }
        if took >= self.bound {
            self.broken(format!(
                "{call:?} sent {:?} in took {took:?}, over {:?}",
                sent - self.start,
                self.bound
            ));
        }
        self.answers.lock().unwrap().push(Answer {
            call,
            sent: sent - self.start,
            took,
            status: reply.status,
            retry_after,
        });
        reply
    }
}

/// A place a buyer was told it holds.
pub(super) struct Held {
    pub(super) user: String,
    pub(super) token: String,
    pub(super) ticket: u64,
    /// When the test began.
    pub(super) epoch: Instant,
    /// When the last request that saw the buyer (its join, or a poll served) was sent, in ms
    /// from `epoch`: the server saw the buyer no earlier.
    pub(super) last_seen_ms: AtomicU64,
}

impl Held {
    pub(super) fn told(reply: &Reply, user: String, epoch: Instant, sent: Instant) -> Arc<Held> {
        Arc::new(Held {
            user,
            token: reply.token(),
            ticket: reply.body["ticket"].as_u64().expect("ticket"),
            epoch,
            last_seen_ms: AtomicU64::new(millis(sent - epoch)),
        })
    }

    pub(super) fn path(&self) -> String {
        format!("/queues/{QUEUE}/tokens/{}", self.token)
    }

    /// A request sent at `sent` was served: the server saw the buyer then or later.
    pub(super) fn seen(&self, sent: Instant) {
        self.last_seen_ms
            .fetch_max(millis(sent - self.epoch), Ordering::Relaxed);
    }

    /// How long before `at` the server last saw this buyer, at least.
    pub(super) fn unseen_for(&self, at: Instant) -> Duration {
        (at - self.epoch).saturating_sub(Duration::from_millis(
            self.last_seen_ms.load(Ordering::Relaxed),
        ))
    }
}

/// The buyers the flood polls, in turn.
pub(super) struct Pool {
    pub(super) epoch: Instant,
    pub(super) held: RwLock<Vec<Arc<Held>>>,
    pub(super) next: AtomicUsize,
}

impl Pool {
    pub(super) fn new(epoch: Instant) -> Self {
        Pool {
            epoch,
            held: RwLock::default(),
            next: AtomicUsize::new(0),
        }
    }

    pub(super) fn add(&self, held: Arc<Held>) {
        self.held.write().unwrap().push(held);
    }

    pub(super) fn next(&self) -> Arc<Held> {
        let held = self.held.read().unwrap();
        held[self.next.fetch_add(1, Ordering::Relaxed) % held.len()].clone()
    }

    pub(super) fn all(&self) -> Vec<Arc<Held>> {
        self.held.read().unwrap().clone()
    }
}

/// How an obedient buyer ended.
pub(super) enum End {
    /// Still waiting, or admitted and booking, when the test stopped.
    Holding,
    /// Admitted, then left.
    Left,
    /// Lost its place: what it was told.
    Lost(String),
}

/// `count` buyers named `{name}-{i}` join, 32 at a time, each from its own address: each
/// place told, with the answer.
pub(super) async fn join_all(
    app: &TestApp,
    name: &str,
    first: usize,
    count: usize,
    epoch: Instant,
) -> Vec<(Arc<Held>, Reply)> {
    futures::stream::iter(0..count)
        .map(|i| async move {
            let user = format!("{name}-{i}");
            let sent = Instant::now();
            let reply = app.queue_api(join_request(&user, first + i)).await;
            assert_eq!(reply.status, 201, "{user}: {}", reply.body);
            (Held::told(&reply, user, epoch, sent), reply)
        })
        .buffered(32)
        .collect()
        .await
}

pub(super) fn join_request(user: &str, n: usize) -> lambda_http::Request {
    let body = json!({ "userId": user }).to_string();
    api_request_from(
        "POST",
        &format!("/queues/{QUEUE}/tokens"),
        Some(&body),
        &ip(n),
    )
}

/// A distinct source address for buyer number `n`.
pub(super) fn ip(n: usize) -> String {
    format!("10.{}.{}.{}", (n >> 16) & 255, (n >> 8) & 255, n & 255)
}

/// The flood, open loop: requests sent whatever the answers, each on its own task, so that
/// all requests sent (the obedient buyers' too) keep up with the rate of the moment. Done
/// when the last is sent; the count gives those still in flight.
pub(super) fn flood(
    app: Arc<TestApp>,
    log: Arc<Log>,
    pool: Arc<Pool>,
    serves: f64,
    stop_at: Instant,
) -> tokio::task::JoinHandle<Arc<AtomicUsize>> {
    tokio::spawn(async move {
        let in_flight = Arc::new(AtomicUsize::new(0));
        let (calm, surge) = (CALM_LOAD * serves, SURGE_LOAD * serves);
        let due = |t: Duration| {
            let before = t.min(BEFORE).as_secs_f64();
            let during = t.saturating_sub(BEFORE).min(SURGE).as_secs_f64();
            let after = t.saturating_sub(BEFORE + SURGE).as_secs_f64();
            (calm * (before + after) + surge * during) as u64
        };
        let mut sent = 0u64;
        // Spawned, not yet counted in `log.sent`.
        let starting = Arc::new(AtomicU64::new(0));
        let mut tick = tokio::time::interval(Duration::from_millis(5));
        while Instant::now() < stop_at {
            tick.tick().await;
            let due = due(log.start.elapsed());
            while log.sent.load(Ordering::Relaxed) + starting.load(Ordering::Relaxed) < due {
                sent += 1;
                let (app, log, pool, in_flight, starting) = (
                    app.clone(),
                    log.clone(),
                    pool.clone(),
                    in_flight.clone(),
                    starting.clone(),
                );
                in_flight.fetch_add(1, Ordering::Relaxed);
                starting.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    starting.fetch_sub(1, Ordering::Relaxed);
                    if sent.is_multiple_of(ARRIVAL_EVERY) {
                        arrive(&app, &log, &pool, sent as usize).await;
                    } else {
                        poll(&app, &log, &pool.next()).await;
                    }
                    in_flight.fetch_sub(1, Ordering::Relaxed);
                });
            }
        }
        in_flight
    })
}

/// A new buyer joins; a place told joins the pool.
pub(super) async fn arrive(app: &TestApp, log: &Log, pool: &Pool, n: usize) {
    let user = format!("arrival-{n}");
    let sent = Instant::now();
    let reply = log
        .send(app, Call::Join, join_request(&user, OBEDIENT + POOL + n))
        .await;
    if [200, 201].contains(&reply.status) {
        pool.add(Held::told(&reply, user, pool.epoch, sent));
    }
}

/// One poll of `held` by the flood.
pub(super) async fn poll(app: &TestApp, log: &Log, held: &Held) {
    let sent = Instant::now();
    let reply = log
        .send(
            app,
            Call::Poll,
            api_request_from("GET", &held.path(), None, &ip(0)),
        )
        .await;
    match reply.status {
        200 => {
            held.seen(sent);
            if reply.body["ticket"] != held.ticket {
                log.broken(format!(
                    "{}'s ticket {} became {}",
                    held.user, held.ticket, reply.body["ticket"]
                ));
            }
        }
        410 => {
            let unseen = held.unseen_for(Instant::now());
            if problem(&reply) != "dropped-for-absence" || unseen < IDLE {
                log.broken(format!(
                    "{} (ticket {}) answered 410 {} after {unseen:?} unseen",
                    held.user, held.ticket, reply.body
                ));
            }
        }
        _ => {}
    }
}

/// How an obedient buyer fared: how it ended, the longest it went between two served polls,
/// and how late its latest-served poll due at or after the recovery window's start was served,
/// past the moment it was told to poll.
pub(super) struct Fared {
    pub(super) end: End,
    pub(super) longest: Duration,
    pub(super) late_after_surge: Duration,
}

/// A buyer who polls exactly when told (`pollAfterSeconds`, or `Retry-After` after a 503
/// or 429), books for two seconds once admitted and then leaves, until `stop_at`. Polls due
/// from `recovered_from` on count towards `late_after_surge`.
pub(super) async fn obey(
    app: &TestApp,
    log: &Log,
    held: &Held,
    joined: &Reply,
    recovered_from: Instant,
    stop_at: Instant,
) -> Fared {
    let mut state = joined.body.clone();
    let mut last_served = Instant::now();
    let mut longest = Duration::ZERO;
    let mut late_after_surge = Duration::ZERO;
    let fared = |end, longest, late_after_surge| Fared {
        end,
        longest,
        late_after_surge,
    };
    loop {
        if state["status"] == "active" {
            if !pause(BOOKING, stop_at).await {
                return fared(End::Holding, longest, late_after_surge);
            }
            let end = leave(app, log, held, stop_at).await;
            return fared(end, longest, late_after_surge);
        }
        let told = state["pollAfterSeconds"]
            .as_u64()
            .expect("pollAfterSeconds");
        let due = Instant::now() + Duration::from_secs(told);
        if !pause(Duration::from_secs(told), stop_at).await {
            return fared(End::Holding, longest, late_after_surge);
        }
        let position = state["position"].as_u64();
        loop {
            let sent = Instant::now();
            let reply = log
                .send(
                    app,
                    Call::Poll,
                    api_request_from("GET", &held.path(), None, &ip(0)),
                )
                .await;
            match reply.status {
                200 => {
                    held.seen(sent);
                    longest = longest.max(last_served.elapsed());
                    last_served = Instant::now();
                    if due >= recovered_from {
                        late_after_surge = late_after_surge.max(last_served - due);
                    }
                    if reply.body["ticket"] != held.ticket {
                        let now = &reply.body["ticket"];
                        let end = End::Lost(format!("ticket became {now}"));
                        return fared(end, longest, late_after_surge);
                    }
                    if let (Some(was), Some(now)) = (position, reply.body["position"].as_u64()) {
                        if now > was {
                            let end = End::Lost(format!("position {was} became {now}"));
                            return fared(end, longest, late_after_surge);
                        }
                    }
                    state = reply.body;
                    break;
                }
                503 | 429 => {
                    let told = Duration::from_secs(retry_after(&reply).unwrap_or(1));
                    if !pause(told, stop_at).await {
                        let longest = longest.max(last_served.elapsed());
                        return fared(End::Holding, longest, late_after_surge);
                    }
                }
                _ => {
                    let what = format!("{} {}", reply.status, reply.body);
                    return fared(End::Lost(what), longest, late_after_surge);
                }
            }
        }
    }
}

/// An admitted obedient buyer leaves, retrying as told.
pub(super) async fn leave(app: &TestApp, log: &Log, held: &Held, stop_at: Instant) -> End {
    loop {
        let reply = log
            .send(
                app,
                Call::Leave,
                api_request_from("DELETE", &held.path(), None, &ip(0)),
            )
            .await;
        match reply.status {
            204 => return End::Left,
            // A leave that timed out may have run: its retry finds the place given up.
            410 if problem(&reply) == "left" => return End::Left,
            503 | 429 => {
                if !pause(
                    Duration::from_secs(retry_after(&reply).unwrap_or(1)),
                    stop_at,
                )
                .await
                {
                    return End::Holding;
                }
            }
            _ => return End::Lost(format!("leave: {} {}", reply.status, reply.body)),
        }
    }
}

/// Sleeps `d`, unless `stop_at` comes first: whether it slept all of it.
pub(super) async fn pause(d: Duration, stop_at: Instant) -> bool {
    let now = Instant::now();
    if now + d >= stop_at {
        sleep(stop_at.saturating_duration_since(now)).await;
        return false;
    }
    sleep(d).await;
    true
}

pub(super) fn retry_after(reply: &Reply) -> Option<u64> {
    reply
        .headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

/// The last segment of a problem's type.
pub(super) fn problem(reply: &Reply) -> &str {
    reply.body["type"]
        .as_str()
        .and_then(|kind| kind.rsplit('/').next())
        .unwrap_or("")
}

pub(super) fn millis(d: Duration) -> u64 {
    d.as_millis() as u64
}
