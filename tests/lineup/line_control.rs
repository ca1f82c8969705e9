//! Who may write a striped line, and when it stops: the promoter's lease and its fence, a tick
//! whose reads have gone stale, a poll that finds the line stalled, and a halt (sold out,
//! paused, unhealthy) that stops every admission at once.

use std::time::Duration;

use lineup::ids::QueueId;
use lineup::line::{Joined, Lease, Line, Standing, Stripe, StripeKeys};
use lineup_tests::TestApp;

use super::line::{line, line_on, tick, user, SEAL_MS, SEGMENT_MS, STRIPES};

/// A clock that moves on by `step` ms each time it is read: a tick reading it finds its own
/// reads that much older when it comes to write.
struct Stepping {
    now: std::sync::atomic::AtomicI64,
    step: i64,
}

impl lineup::clock::Clock for Stepping {
    fn now_ms(&self) -> i64 {
        self.now
            .fetch_add(self.step, std::sync::atomic::Ordering::Relaxed)
    }
}

/// One promoter at a time: a second is refused the lease while the first holds it, takes it
/// once it lapses, and from then on every stripe refuses the first one's writes. A tick that
/// comes to write more than `DECIDED_FOR` after its reads writes nothing. A poll says how old
/// the line's state is once no tick has run for `STALE_AFTER`.
#[tokio::test]
async fn one_promoter_at_a_time_and_a_stale_tick_or_state_says_so() {
    use lineup::line::{TickRefused, DECIDED_FOR, STALE_AFTER};
    let app = TestApp::spawn(&[]).await;
    let (first, second) = (line(&app).await, line(&app).await);
    let t0 = chrono::Utc::now().timestamp_millis();
    for i in 0..40 {
        first.join(&user(i), t0).await.unwrap();
    }
    let now = t0 + SEGMENT_MS + SEAL_MS;
    // The lease's own expiry is Redis's clock: the test waits it out.
    let lease = Duration::from_millis(300);
    let Lease::Granted(old) = first.lease("first", lease).await.unwrap() else {
        panic!("a free lease");
    };
    assert!(matches!(
        second.lease("second", lease).await.unwrap(),
        Lease::Held { for_ms } if for_ms > 0
    ));
    assert_eq!(
        first.lease("first", lease).await.unwrap(),
        Lease::Granted(old),
        "renewed with the same fence"
    );
    let ticked = first.tick(old, &now, 10).await.unwrap();
    assert_eq!((ticked.admitted.len(), ticked.refused), (10, None));

    lineup_tests::sleep(lease + Duration::from_millis(100)).await;
    let Lease::Granted(new) = second.lease("second", lease).await.unwrap() else {
        panic!("a lapsed lease is taken");
    };
    assert!(new > old);
    let ticked = second.tick(new, &(now + 1), 20).await.unwrap();
    assert_eq!((ticked.admitted.len(), ticked.refused), (10, None));
    // The first promoter resumes as if it still held the lease: every stripe refuses it.
    let ticked = first.tick(old, &(now + 2), 40).await.unwrap();
    assert_eq!(ticked.refused, Some(TickRefused::Fenced { by: new }));
    assert!(ticked.admitted.is_empty());
    let Standing::Waiting { position } = first_waiting(&second, 40, now + 2000).await else {
        panic!("waiting");
    };
    assert!(position <= 20, "twenty wait: {position}");

    // A tick whose clock has moved on 2.5 s between its reads and its writes writes nothing.
    let clock = Stepping {
        now: (now + 3).into(),
        step: DECIDED_FOR.as_millis() as i64 + 500,
    };
    let ticked = second.tick(new, &clock, 40).await.unwrap();
    assert_eq!(
        ticked.refused,
        Some(TickRefused::Stale {
            age_ms: DECIDED_FOR.as_millis() as i64 + 500
        })
    );
    assert!(ticked.admitted.is_empty());

    // No tick since `now + 1`: past STALE_AFTER, a poll says how old the state is.
    let late = now + 1 + STALE_AFTER.as_millis() as i64 + 1;
    assert_eq!(
        first_waiting(&second, 40, late).await,
        Standing::Stalled {
            position: Some(position),
            age_ms: STALE_AFTER.as_millis() as i64 + 1
        }
    );
}

/// The standing at `now` of the first of `buyers` still in line, its score read back by joining
/// again.
async fn first_waiting(line: &Line, buyers: usize, now: i64) -> Standing {
    for i in 0..buyers {
        if let Joined::Already { score, .. } = line.join(&user(i), now).await.unwrap() {
            return line.poll(&user(i), score, now).await.unwrap();
        }
    }
    panic!("nobody waits");
}

/// The test line with 20 buyers joined 1 ms apart from `t0`, the start of this second, so
/// that all 20 are in one segment: the line, `t0`, and the first instant their segment is
/// sealed.
async fn twenty_waiting(app: &TestApp) -> (Line, i64, i64) {
    let line = line(app).await;
    let now = chrono::Utc::now().timestamp_millis();
    let t0 = now - now % SEGMENT_MS;
    for i in 0..20 {
        line.join(&user(i), t0 + i as i64).await.unwrap();
    }
    (line, t0, t0 + SEGMENT_MS + SEAL_MS)
}

/// Sold out, paused or unhealthy: once `halt` returns, no tick admits anyone, whatever the
/// room, and the places wait on; the published state says why. Resumed, the line admits in
/// order again.
#[tokio::test]
async fn a_halted_line_admits_nobody_until_it_resumes() {
    use lineup::line::Halt;
    let app = TestApp::spawn(&[]).await;
    let (line, _, now) = twenty_waiting(&app).await;
    let ticked = tick(&line, now, 5).await;
    assert_eq!(ticked.admitted.len(), 5);
    line.halt(Halt::SoldOut).await.unwrap();
    let ticked = tick(&line, now + 1, 100).await;
    assert!(ticked.admitted.is_empty());
    assert_eq!(ticked.halted, Some(Halt::SoldOut));
    let published: String = redis::cmd("GET")
        .arg(
            StripeKeys::new(
                &app.config.key_prefix,
                &QueueId::parse("sale").unwrap(),
                Stripe(0),
                STRIPES,
            )
            .published,
        )
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert!(published.contains(r#""halted":"sold-out""#), "{published}");
    let later = now + 1 + lineup::line::PUBLISHED_FOR.as_millis() as i64;
    let standing = first_waiting(&line, 20, later).await;
    assert!(matches!(standing, Standing::Waiting { .. }), "{standing:?}");
    line.resume().await.unwrap();
    let ticked = tick(&line, now + 2, 100).await;
    assert_eq!((ticked.admitted.len(), ticked.halted), (15, None));
}

/// A clock that stands at `now`, and the second time it is read (a tick's, after its reads and
/// before its writes) first halts the line as sold out, through another `Line` on another
/// connection, as an operator's call would.
struct HaltsBetween {
    now: i64,
    reads: std::sync::atomic::AtomicU32,
    redis: lineup::config::RedisSettings,
    prefix: String,
}

impl lineup::clock::Clock for HaltsBetween {
    fn now_ms(&self) -> i64 {
        if self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 1 {
            let (redis, prefix) = (self.redis.clone(), self.prefix.clone());
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    let operator = line_on(&redis, &prefix);
                    operator.halt(lineup::line::Halt::SoldOut).await.unwrap();
                });
            })
            .join()
            .unwrap();
        }
        self.now
    }
}

/// A halt that lands while a tick is between its reads and its writes: the tick chose its
/// buyers before the halt, yet admits none of them, says the line is halted, and still seals.
#[tokio::test]
async fn a_halt_during_a_tick_stops_its_admissions() {
    use lineup::line::Halt;
    let app = TestApp::spawn(&[]).await;
    let (line, t0, now) = twenty_waiting(&app).await;
    let clock = HaltsBetween {
        now,
        reads: Default::default(),
        redis: app.config.redis.clone(),
        prefix: app.config.key_prefix.clone(),
    };
    let Lease::Granted(fence) = line.lease("test", Duration::from_secs(60)).await.unwrap() else {
        panic!("the lease is the test's");
    };
    let ticked = line.tick(fence, &clock, 100).await.unwrap();
    assert_eq!(clock.reads.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(
        (ticked.admitted.len(), ticked.halted, ticked.refused),
        (0, Some(Halt::SoldOut), None)
    );
    let keys = StripeKeys::new(
        &app.config.key_prefix,
        &QueueId::parse("sale").unwrap(),
        line.stripe_of(&user(0)),
        STRIPES,
    );
    let (queued, sealed): (u64, Option<i64>) = redis::pipe()
        .cmd("ZCARD")
        .arg(&keys.line)
        .cmd("GET")
        .arg(&keys.sealed)
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert!(queued > 0, "the places wait on");
    assert!(sealed.is_some_and(|at| at > t0), "{sealed:?}");
    line.resume().await.unwrap();
    // A tick with no room walks nothing: the places the halted tick chose are not taken for
    // walked, and each still waits.
    assert!(tick(&line, now + 1, 0).await.admitted.is_empty());
    let later = now + 1 + lineup::line::PUBLISHED_FOR.as_millis() as i64;
    for i in 0..20 {
        let Joined::Already { score, .. } = line.join(&user(i), later).await.unwrap() else {
            panic!("buyer {i} holds a place");
        };
        let standing = line.poll(&user(i), score, later).await.unwrap();
        assert!(
            matches!(standing, Standing::Waiting { .. }),
            "buyer {i}: {standing:?}"
        );
    }
    let ticked = tick(&line, now + 1, 100).await;
    assert_eq!((ticked.admitted.len(), ticked.halted), (20, None));
}
