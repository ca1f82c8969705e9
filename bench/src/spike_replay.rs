//! The opening spike's replay: its buyers, each carried by its next request, the counts they
//! keep, the scheduler that hands each request out when it falls due, and the containers
//! that send them as the functions do.

use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use lineup::ids::QueueId;
use lineup::queue::Departure;
use lineup::queue::{Standing, TokenState, WaitingRoom};
use lineup::token::TokenClaims;
use lineup::Error;
use tokio::sync::{mpsc, Mutex as Mutex2};
use tokio::time::Instant;

use crate::spike_plan::{CHECKS, TOLD, WINDOW};

/// What the containers and the promoter did, counted as they do it.
#[derive(Default)]
pub struct Counts([AtomicU64; KINDS]);

pub const KINDS: usize = 10;
#[derive(Clone, Copy)]
pub enum Kind {
    /// A pre-queue member's join (before the measured stretch).
    Join = 0,
    /// A new buyer's issue.
    Arrival,
    Status,
    Check,
    Leave,
    Tick,
    Reap,
    /// A pre-queue member's first poll at or after the opening.
    FirstPoll,
    /// A buyer who lost its place (dropped, or a token not found).
    Lost,
    /// A call that failed (Redis); the buyer tries again a second later, as the page does.
    Failed,
}

impl Counts {
    pub fn add(&self, kind: Kind) {
        self.0[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn read(&self) -> [u64; KINDS] {
        std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed))
    }
}

/// What a buyer sends next.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    Join,
    Poll,
    /// A gatekeeper check, and how many are left after it.
    Check(u8),
    Leave,
}

/// A buyer, carried by its next request: it has one at a time.
pub struct Buyer {
    /// Its row in the run's tables.
    pub id: u32,
    /// A pre-queue member (`m…`) or a new buyer (`n…`), and its number.
    pub arrival: bool,
    pub number: u32,
    pub claims: Option<TokenClaims>,
    pub prequeue: bool,
    pub polls: u32,
}

/// A request and when it falls due; the scheduler's heap gives the earliest first.
pub struct Due {
    pub at: Instant,
    pub seq: u64,
    pub step: Step,
    pub buyer: Buyer,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A first-poll row of a buyer that did not join the pre-queue, and of a pre-queue buyer
/// that has not polled since the opening.
pub const NOT_PREQUEUE: u32 = u32::MAX - 1;
pub const NOT_YET: u32 = u32::MAX;

/// What one scale's run shares with its containers.
pub struct Run {
    pub queue: QueueId,
    /// When the joins start (the zero of `last_join_ms`), the opening, and the measured
    /// stretch.
    pub epoch: Instant,
    pub opening: Instant,
    pub start: Instant,
    pub end: Instant,
    pub exact: bool,
    pub counts: Counts,
    pub seq: AtomicU64,
    /// Per buyer: its first poll at or after the opening, ms after it, or [`NOT_YET`], or
    /// [`NOT_PREQUEUE`].
    pub first_poll_ms: Vec<AtomicU32>,
    /// When the last pre-queue join answered, ms after `epoch`, + 1.
    pub last_join_ms: AtomicU64,
    /// The `pollAfterSeconds` of waiting replies after the opening, by [`TOLD`] bucket.
    pub told: [AtomicU64; TOLD.len()],
    pub lost: Mutex<Vec<String>>,
}

impl Run {
    /// What follows a call that failed: a buyer whose place is over stops, counted as lost
    /// unless it chose to go; after any other failure (Redis) the page tries again a second
    /// later.
    fn after_failure(&self, buyer: &Buyer, err: &Error, step: Step) -> Option<(Duration, Step)> {
        if lost_place(err) {
            self.lost(buyer, err);
            return None;
        }
        self.counts.add(Kind::Failed);
        Some((Duration::from_secs(1), step))
    }

    fn lost(&self, buyer: &Buyer, err: &Error) {
        // A departure the buyer chose is no loss.
        if matches!(err.refusal(), Some(Departure::Left | Departure::Paid)) {
            return;
        }
        self.counts.add(Kind::Lost);
        let mut lost = self.lost.lock().unwrap_or_else(PoisonError::into_inner);
        if lost.len() < 5 {
            lost.push(format!("{}: {err}", buyer.user()));
        }
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Buyer {
    fn user(&self) -> String {
        let kind = if self.arrival { 'n' } else { 'm' };
        format!("{kind}{:07}", self.number)
    }

    /// When to send the next poll after a reply telling `seconds`: as the waiting-room page
    /// does, up to 20 % sooner, never later (a fixed draw per buyer and poll).
    fn after(&mut self, seconds: u64, exact: bool) -> Duration {
        let told = seconds.max(1) as f64;
        self.polls += 1;
        let key = (u64::from(self.id) << 24) | u64::from(self.polls);
        let share = if exact {
            1.0
        } else {
            0.8 + 0.2 * (splitmix(key) >> 11) as f64 / (1u64 << 53) as f64
        };
        Duration::from_secs_f64(told * share)
    }
}

/// Hands each request to the containers when it falls due, and takes back each buyer's next
/// one, until the end of the stretch.
pub async fn scheduler(
    mut heap: BinaryHeap<Due>,
    mut back: mpsc::UnboundedReceiver<Due>,
    work: mpsc::UnboundedSender<Due>,
    end: Instant,
) {
    loop {
        let now = Instant::now();
        if now >= end {
            return;
        }
        while heap.peek().is_some_and(|due| due.at <= now) {
            if let Some(due) = heap.pop() {
                if work.send(due).is_err() {
                    return;
                }
            }
        }
        let next = heap.peek().map_or(end, |due| due.at.min(end));
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            Some(due) = back.recv() => heap.push(due),
        }
    }
}

/// One container: takes the next request that fell due, sends it, and gives the buyer's next
/// back to the scheduler. Returns how late it sent each request of the stretch, µs, with the
/// window it was sent in.
pub async fn container(
    room: WaitingRoom,
    work: Arc<Mutex2<mpsc::UnboundedReceiver<Due>>>,
    back: mpsc::UnboundedSender<Due>,
    run: Arc<Run>,
) -> Vec<(u16, u32)> {
    let mut late = Vec::new();
    loop {
        let next = work.lock().await.recv().await;
        let Some(Due {
            at,
            step,
            mut buyer,
            ..
        }) = next
        else {
            return late;
        };
        let sent = Instant::now();
        if sent >= run.start {
            let window = ((sent - run.start).as_secs_f64() / WINDOW.as_secs_f64()) as u16;
            late.push((
                window,
                (sent - at).as_micros().min(u128::from(u32::MAX)) as u32,
            ));
        }
        if let Some((after, step)) = serve(&room, &run, step, &mut buyer, sent).await {
            let due = Due {
                at: Instant::now() + after,
                seq: run.seq.fetch_add(1, Ordering::Relaxed),
                step,
                buyer,
            };
            if back.send(due).is_err() {
                return late;
            }
        }
    }
}

/// Sends `buyer`'s `step`; returns its next, and after how long.
async fn serve(
    room: &WaitingRoom,
    run: &Run,
    step: Step,
    buyer: &mut Buyer,
    sent: Instant,
) -> Option<(Duration, Step)> {
    let counts = &run.counts;
    let second = Duration::from_secs(1);
    let reply = match step {
        Step::Join => {
            counts.add(if buyer.arrival {
                Kind::Arrival
            } else {
                Kind::Join
            });
            let user = crate::util::user(&buyer.user());
            room.issue(&run.queue, &user, None).await.map(|issued| {
                buyer.prequeue = matches!(issued.state.standing, Standing::Prequeue { .. });
                if buyer.prequeue {
                    run.first_poll_ms[buyer.id as usize].store(NOT_YET, Ordering::Relaxed);
                }
                buyer.claims = Some(issued.claims);
                if !buyer.arrival {
                    let ms = (Instant::now() - run.epoch).as_millis() as u64 + 1;
                    run.last_join_ms.fetch_max(ms, Ordering::Relaxed);
                }
                issued.state
            })
        }
        Step::Poll => {
            if buyer.prequeue && sent >= run.opening {
                let ms = (sent - run.opening)
                    .as_millis()
                    .min(u128::from(NOT_PREQUEUE - 1)) as u32;
                let row = &run.first_poll_ms[buyer.id as usize];
                if row
                    .compare_exchange(NOT_YET, ms, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
                {
                    counts.add(Kind::FirstPoll);
                }
            }
            counts.add(Kind::Status);
            room.status(buyer.claims.as_ref()?).await
        }
        Step::Check(left) => {
            counts.add(Kind::Check);
            let next = match room.check(buyer.claims.as_ref()?).await {
                Ok(_) if left > 1 => Step::Check(left - 1),
                Ok(_) => Step::Leave,
                Err(_) => {
                    counts.add(Kind::Failed);
                    step
                }
            };
            return Some((second, next));
        }
        Step::Leave => {
            counts.add(Kind::Leave);
            return match room.leave(buyer.claims.as_ref()?).await {
                Ok(_) => None,
                Err(err) => run.after_failure(buyer, &err, step),
            };
        }
    };
    match reply {
        Ok(TokenState {
            standing: Standing::Active { .. },
            ..
        }) => Some((second, Step::Check(CHECKS))),
        Ok(state) => {
            let told = state.poll_after_seconds(chrono::Utc::now());
            if matches!(state.standing, Standing::Waiting { .. }) && sent >= run.opening {
                let bucket = TOLD.iter().position(|&b| told <= b).unwrap_or(0);
                run.told[bucket].fetch_add(1, Ordering::Relaxed);
            }
            Some((buyer.after(told, run.exact), Step::Poll))
        }
        Err(err) => run.after_failure(buyer, &err, step),
    }
}

/// Whether `err` says the buyer's place is over (a departure) or unknown.
fn lost_place(err: &Error) -> bool {
    err.refusal::<Departure>().is_some() || matches!(err, Error::NotFound(_))
}
