//! The striped line against a model: buyers spread over four stripes join at real instants a
//! test clock moves through, some leave, some stop polling; each tick must admit exactly the
//! model's next present buyers, and every poll must give exactly the model's position.

use std::sync::Arc;
use std::time::Duration;

use futures::{stream, StreamExt};
use lineup::ids::{QueueId, UserId};
use lineup::line::{
    Checked, Joined, Lease, Line, LineShape, Opening, Standing, Stripe, StripeKeys, Ticked,
};
use lineup::queue::schedule::DrawSeed;
use lineup_tests::TestApp;

pub(crate) const STRIPES: u16 = 4;
pub(crate) const SEGMENT_MS: i64 = 1000;
pub(crate) const SEAL_MS: i64 = 500;

pub(crate) fn shape() -> LineShape {
    LineShape {
        stripes: STRIPES,
        segment: Duration::from_millis(SEGMENT_MS as u64),
        seal: Duration::from_millis(SEAL_MS as u64),
        presence: Duration::from_secs(600),
        session: Duration::from_secs(600),
        keep: Duration::from_secs(3600),
        // 32 ranges of the test draw's 64 values: two values a range.
        draw_ranges: 8,
    }
}

pub(crate) async fn line(app: &TestApp) -> Line {
    line_on(&app.config.redis, &app.config.key_prefix)
}

/// The test line on its own connection to `redis`, its keys under `prefix`.
pub(crate) fn line_on(redis: &lineup::config::RedisSettings, prefix: &str) -> Line {
    let url = redis.url.clone().expect("REDIS_URL");
    let conn = lineup::store::connect(redis, &url).expect("connect");
    Line::new(conn, prefix, QueueId::parse("sale").unwrap(), shape())
}

/// One tick at `now`, as the promoter "test": it takes or renews the lease first.
pub(crate) async fn tick(line: &Line, now: i64, capacity: u64) -> Ticked {
    let Lease::Granted(fence) = line.lease("test", Duration::from_secs(60)).await.unwrap() else {
        panic!("the lease is the test's");
    };
    line.tick(fence, &now, capacity).await.unwrap()
}

pub(crate) fn user(i: usize) -> UserId {
    UserId::parse(&format!("buyer-{i}")).unwrap()
}

/// A place as the model orders it: segment, stripe, score, user id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    segment: i64,
    stripe: Stripe,
    score: i64,
    user: String,
}

/// Buyer `i`'s arrival place, as the model orders it.
fn arrival(stripe: Stripe, score: i64, i: usize) -> Place {
    Place {
        segment: score.div_euclid(SEGMENT_MS),
        stripe,
        score,
        user: user(i).to_string(),
    }
}

/// The model's line: every waiting place, in order.
struct Model(Vec<(Place, usize)>);

impl Model {
    fn position(&self, i: usize) -> Option<u64> {
        self.0
            .iter()
            .position(|(_, j)| *j == i)
            .map(|p| p as u64 + 1)
    }

    fn remove(&mut self, i: usize) {
        self.0.retain(|(_, j)| *j != i);
    }
}

async fn expect_positions(line: &Line, model: &Model, scores: &[i64], now: i64) {
    // At most 32 at once: a connection carries at most 64 requests in flight.
    let polls: Vec<(usize, Standing)> =
        stream::iter(model.0.iter().map(|(_, i)| async move {
            (*i, line.poll(&user(*i), scores[*i], now).await.unwrap())
        }))
        .buffer_unordered(32)
        .collect()
        .await;
    for (i, standing) in polls {
        let position = model.position(i).unwrap();
        assert_eq!(
            standing,
            Standing::Waiting { position },
            "buyer-{i}, stripe {:?}",
            line.stripe_of(&user(i))
        );
    }
}

#[tokio::test]
async fn the_striped_line_admits_and_places_every_buyer_as_the_model_does() {
    let app = TestApp::spawn(&[]).await;
    let line = line(&app).await;
    let t0 = chrono::Utc::now().timestamp_millis();
    // 200 buyers, one every 37 ms: eight segments, all four stripes, joining at once.
    let buyers = 200;
    let joined: Vec<Joined> = stream::iter((0..buyers).map(|i| {
        let line = &line;
        async move { line.join(&user(i), t0 + 37 * i as i64).await.unwrap() }
    }))
    .buffered(32)
    .collect()
    .await;
    let mut scores = vec![0; buyers];
    let mut model = Model(Vec::new());
    for (i, joined) in joined.into_iter().enumerate() {
        let Joined::New { stripe, score } = joined else {
            panic!("buyer-{i}: {joined:?}");
        };
        assert_eq!(score, t0 + 37 * i as i64);
        scores[i] = score;
        model.0.push((
            Place {
                segment: score.div_euclid(SEGMENT_MS),
                stripe,
                score,
                user: user(i).to_string(),
            },
            i,
        ));
    }
    model.0.sort();
    let stripes: std::collections::BTreeSet<Stripe> =
        model.0.iter().map(|(p, _)| p.stripe).collect();
    assert_eq!(stripes.len(), STRIPES as usize, "every stripe holds places");
    // A second join keeps the place.
    assert_eq!(
        line.join(&user(5), t0 + 9000).await.unwrap(),
        Joined::Already {
            stripe: line.stripe_of(&user(5)),
            score: scores[5]
        }
    );
    // Every seventh leaves before the first tick; a poll tells them they hold nothing.
    for i in (0..buyers).step_by(7) {
        line.leave(&user(i)).await.unwrap();
        model.remove(i);
    }
    let now = t0 + 37 * buyers as i64 + SEGMENT_MS + SEAL_MS;
    assert_eq!(
        line.poll(&user(7), scores[7], now).await.unwrap(),
        Standing::Left
    );
    assert_eq!(line.check(&user(7), now).await.unwrap(), Checked::Left);

    // The first tick admits the model's first 30. Polls read what it published once the
    // function's copy of the stripe's state is older than a second.
    let ticked = tick(&line, now, 30).await;
    let after = now + lineup::line::PUBLISHED_FOR.as_millis() as i64;
    let first: Vec<String> = model.0[..30].iter().map(|(p, _)| p.user.clone()).collect();
    assert_eq!(ticked.admitted, first);
    assert!(ticked.dropped.is_empty());
    let admitted: Vec<usize> = model.0[..30].iter().map(|(_, i)| *i).collect();
    for i in &admitted {
        model.remove(*i);
        assert!(matches!(
            line.check(&user(*i), after).await.unwrap(),
            Checked::Active { .. }
        ));
        assert!(matches!(
            line.poll(&user(*i), scores[*i], after).await.unwrap(),
            Standing::Active { .. }
        ));
    }
    expect_positions(&line, &model, &scores, after).await;

    // The next five stop polling: their marks lapse. Ten more places: the tick walks the next
    // ten, passes the five over and admits the five after them; the next tick admits five
    // more.
    let absent: Vec<usize> = model.0[..5].iter().map(|(_, i)| *i).collect();
    let mut redis = app.inspect.clone();
    for i in &absent {
        let keys = StripeKeys::new(
            &app.config.key_prefix,
            &QueueId::parse("sale").unwrap(),
            line.stripe_of(&user(*i)),
            STRIPES,
        );
        let _: () = redis::cmd("DEL")
            .arg(keys.mark(user(*i).as_str()))
            .query_async(&mut redis)
            .await
            .unwrap();
    }
    let next: Vec<String> = model.0[5..10].iter().map(|(p, _)| p.user.clone()).collect();
    let ticked = tick(&line, after, 40).await;
    let mut dropped = ticked.dropped.clone();
    dropped.sort();
    let mut expected: Vec<String> = absent.iter().map(|i| user(*i).to_string()).collect();
    expected.sort();
    assert_eq!(dropped, expected);
    assert_eq!(ticked.admitted, next);
    let next: Vec<String> = model.0[10..15]
        .iter()
        .map(|(p, _)| p.user.clone())
        .collect();
    let ticked = tick(&line, after + 1, 40).await;
    assert!(ticked.dropped.is_empty());
    assert_eq!(ticked.admitted, next);
    let after = after + lineup::line::PUBLISHED_FOR.as_millis() as i64;
    for i in model.0[..15].iter().map(|(_, i)| *i).collect::<Vec<_>>() {
        model.remove(i);
    }
    for i in &absent {
        assert_eq!(
            line.poll(&user(*i), scores[*i], after).await.unwrap(),
            Standing::Dropped
        );
        assert_eq!(
            line.check(&user(*i), after).await.unwrap(),
            Checked::Dropped
        );
    }
    expect_positions(&line, &model, &scores, after).await;
}

#[tokio::test]
async fn a_place_waits_for_its_segment_to_seal_and_no_late_clock_lands_ahead_of_it() {
    let app = TestApp::spawn(&[]).await;
    let line = line(&app).await;
    let t0 = chrono::Utc::now().timestamp_millis();
    let Joined::New { score: early, .. } = line.join(&user(1), t0).await.unwrap() else {
        panic!("a new place");
    };
    // Before its segment has sealed, the buyer has no position, and nobody is admitted.
    let ticked = tick(&line, t0 + 10, 5).await;
    assert!(ticked.admitted.is_empty());
    assert_eq!(
        line.poll(&user(1), early, t0 + 10).await.unwrap(),
        Standing::Unplaced {
            on_stripe: 1,
            placed_by: (early / SEGMENT_MS + 1) * SEGMENT_MS + SEAL_MS + 2_000
        }
    );
    // Sealed: placed, then admitted.
    let later = t0 + SEGMENT_MS + SEAL_MS;
    let ticked = tick(&line, later, 0).await;
    assert!(ticked.admitted.is_empty());
    assert_eq!(
        line.poll(&user(1), early, later).await.unwrap(),
        Standing::Waiting { position: 1 }
    );
    // A buyer whose clock runs behind the seal is placed at the seal, behind every place the
    // tick may admit from.
    let Joined::New { score, .. } = line.join(&user(2), t0).await.unwrap() else {
        panic!("a new place");
    };
    let sealed = (later - SEAL_MS).div_euclid(SEGMENT_MS) * SEGMENT_MS;
    assert_eq!(score, sealed.max(t0));
    let ticked = tick(&line, later + 1, 5).await;
    assert_eq!(ticked.admitted, vec![user(1).to_string()]);
    // The function still holds the state published before that tick: the buyer's mark tells it
    // of its admission.
    assert!(matches!(
        line.poll(&user(1), early, later + 2).await.unwrap(),
        Standing::Active { .. }
    ));
    // An admitted buyer who joins again is told of its session.
    assert!(matches!(
        line.join(&user(1), later + 2).await.unwrap(),
        Joined::Active { .. }
    ));
}

/// A buyer who comes back at `placed_by` has its position then, wherever in its segment it
/// joined, whenever the ticks fall and however old the state the function holds: one poll,
/// not one a second until it has one. Sixteen cases, each 10 s after the last.
#[tokio::test]
async fn a_buyer_back_at_placed_by_has_its_position() {
    let app = TestApp::spawn(&[]).await;
    let line = line(&app).await;
    let start = (chrono::Utc::now().timestamp_millis() / SEGMENT_MS + 1) * SEGMENT_MS;
    let mut unplaced_in_the_last_second = 0;
    for case in 0..16_i64 {
        let t0 = start + case * 10_000;
        let joined_at = t0 + (case % 4) * 240 + 10;
        let tick_phase = (case / 4) * 250 + 30;
        let u = user(case as usize);
        let Joined::New { score, .. } = line.join(&u, joined_at).await.unwrap() else {
            panic!("case {case}: a new place");
        };
        let placed_by = line.placed_by(score);
        assert!(
            placed_by - joined_at <= SEGMENT_MS + SEAL_MS + 2_000,
            "case {case}"
        );
        // Ticks once a second at the case's phase; the buyer polls every 100 ms meanwhile,
        // so the function holds the state as late as it may.
        let mut now = joined_at;
        while now < placed_by {
            if (now - t0 - tick_phase).rem_euclid(1000) < 100 {
                tick(&line, now, 0).await;
            }
            let standing = line.poll(&u, score, now).await.unwrap();
            if matches!(standing, Standing::Unplaced { .. }) && now >= placed_by - 1000 {
                unplaced_in_the_last_second += 1;
            }
            now += 100;
        }
        if (placed_by - t0 - tick_phase).rem_euclid(1000) < 100 {
            tick(&line, placed_by, 0).await;
        }
        assert!(
            matches!(
                line.poll(&u, score, placed_by).await.unwrap(),
                Standing::Waiting { .. }
            ),
            "case {case}"
        );
    }
    // The bound is not loose: some buyers had no position a second before it.
    assert!(unplaced_in_the_last_second > 0);
}

/// Joins and ticks race on a clock that moves 50 ms a step, one join in eight from a clock 2 s
/// behind: no tick admits past the free capacity, and every admitted place precedes, in the
/// line's order, every place still waiting.
#[tokio::test]
async fn ticks_racing_joins_admit_in_order_and_within_capacity() {
    let app = TestApp::spawn(&[]).await;
    let line = line(&app).await;
    let t0 = chrono::Utc::now().timestamp_millis();
    let capacity = 25;
    let mut admitted: Vec<Place> = Vec::new();
    let mut places = std::collections::HashMap::new();
    for step in 0..60_i64 {
        let now = t0 + 50 * step;
        let joins = stream::iter((0..8).map(|j| {
            let line = &line;
            async move {
                let i = (step * 8 + j) as usize;
                // One in eight joins through a container whose clock runs 2 s behind.
                let clock = if j == 0 { now - 2000 } else { now };
                (i, line.join(&user(i), clock).await.unwrap())
            }
        }))
        .buffer_unordered(8);
        let tick = tick(&line, now, capacity);
        let (joined, ticked): (Vec<(usize, Joined)>, _) = tokio::join!(joins.collect(), tick);
        for (i, joined) in joined {
            let Joined::New { stripe, score } = joined else {
                panic!("buyer-{i}: {joined:?}");
            };
            places.insert(
                user(i).to_string(),
                Place {
                    segment: score.div_euclid(SEGMENT_MS),
                    stripe,
                    score,
                    user: user(i).to_string(),
                },
            );
        }
        assert!(ticked.live <= capacity, "{} live", ticked.live);
        admitted.extend(ticked.admitted.iter().map(|u| places[u].clone()));
    }
    assert_eq!(
        admitted.len() as u64,
        capacity,
        "every place filled once sealed"
    );
    let mut sorted = admitted.clone();
    sorted.sort();
    assert_eq!(admitted, sorted, "admitted in the line's order");
    let last = admitted.last().unwrap();
    for place in places.values() {
        if !admitted.contains(place) {
            assert!(place > last, "{place:?} waits behind {last:?}");
        }
    }
}

/// A stripe whose head window fills with places, the last of them not yet sealed, does not hold
/// back the other stripes' sealed places behind its own.
#[tokio::test]
async fn a_full_head_window_holds_back_no_other_stripe() {
    let app = TestApp::spawn(&[]).await;
    let line = line(&app).await;
    let on = |stripe: u16, count: usize| -> Vec<UserId> {
        (0..)
            .map(|i| UserId::parse(&format!("w{stripe}-{i}")).unwrap())
            .filter(|u| line.stripe_of(u) == Stripe(stripe))
            .take(count)
            .collect()
    };
    let window = lineup::line::HEAD_WINDOW as usize;
    let (a, b) = (on(0, window + 10), on(1, 5));
    let t0 = chrono::Utc::now().timestamp_millis();
    // Stripe 0: a window's worth less ten in the first segment, ten in a late one. Stripe 1:
    // five in the second segment.
    let joins = a
        .iter()
        .enumerate()
        .map(|(i, u)| {
            (
                u,
                if i < window - 10 {
                    t0
                } else {
                    t0 + 10 * SEGMENT_MS
                },
            )
        })
        .chain(b.iter().map(|u| (u, t0 + SEGMENT_MS)));
    let _: Vec<Joined> = stream::iter(joins.map(|(u, at)| {
        let line = &line;
        async move { line.join(u, at).await.unwrap() }
    }))
    .buffer_unordered(32)
    .collect()
    .await;
    let now = t0 + 2 * SEGMENT_MS + SEAL_MS;
    let ticked = tick(&line, now, 10_000).await;
    assert_eq!(ticked.admitted.len(), window - 10 + 5);
    for u in &b {
        assert!(ticked.admitted.contains(&u.to_string()), "{u} admitted");
    }
}

/// Ticks 2 s apart from `now`, each with room for `capacity` more, until two in a row find
/// nobody to admit: the buyers admitted, in order.
async fn drain(line: &Line, mut now: i64, capacity: u64) -> Vec<String> {
    let mut admitted = Vec::new();
    let mut room = 0;
    let mut idle = 0;
    while idle < 2 {
        room += capacity;
        let ticked = tick(line, now, room).await;
        idle = if ticked.admitted.is_empty() && ticked.placed == 0 {
            idle + 1
        } else {
            0
        };
        admitted.extend(ticked.admitted);
        now += 2 * SEGMENT_MS;
    }
    admitted
}

/// A line with an opening: 240 members join before it, with coarse draw values so that many
/// share one (those go by arrival), over all four stripes, eight ranges of values each. The
/// draw is admitted in value order exactly, its front from every stripe, every member's
/// position is its place in that order, and those who come at or after the opening (a member
/// whose clock runs behind included) stand behind the whole draw.
#[tokio::test]
async fn the_draw_is_admitted_in_value_order_across_stripes() {
    let app = TestApp::spawn(&[]).await;
    let t0 = chrono::Utc::now().timestamp_millis();
    let opens = t0 + 60_000;
    let members = 240;
    // 64 values: the top six of the 28 bits, two to each of the 32 ranges. The seed is one
    // under which each of the first four ranges (one on each stripe) holds a member, as all
    // but about one in 500 do.
    let coarse = |seed: &DrawSeed, u: &UserId| ((seed.value(u) >> 24) as u32) & !((1 << 22) - 1);
    let seed = loop {
        let seed = DrawSeed::random();
        let ranges: std::collections::BTreeSet<u32> = (0..members)
            .map(|i| coarse(&seed, &user(i)) >> 23)
            .collect();
        if (0..4).all(|r| ranges.contains(&r)) {
            break Arc::new(seed);
        }
    };
    let value = move |u: &UserId| coarse(&seed, u);
    let line = line(&app).await.with_opening(Opening {
        at: opens,
        value: Arc::new(value.clone()),
    });
    let mut scores = Vec::new();
    let mut model = Model(Vec::new());
    for i in 0..members {
        let Joined::New { stripe, score } = line.join(&user(i), t0 + 100 * i as i64).await.unwrap()
        else {
            panic!("buyer-{i}: a new place");
        };
        assert!(score < 0, "a draw place");
        assert_eq!(stripe, line.stripe_of(&user(i)));
        scores.push(score);
        // The model orders the draw by value, below.
        let place = Place {
            segment: i64::MIN,
            stripe,
            score,
            user: user(i).to_string(),
        };
        model.0.push((place, i));
    }
    // The model's draw: by value, then by arrival.
    model.0.sort_by_key(|(_, i)| (value(&user(*i)), *i));
    let stripes: std::collections::BTreeSet<Stripe> =
        model.0.iter().map(|(p, _)| p.stripe).collect();
    assert_eq!(
        stripes.len(),
        STRIPES as usize,
        "every stripe holds members"
    );
    let ties = model
        .0
        .windows(2)
        .filter(|w| value(&user(w[0].1)) == value(&user(w[1].1)))
        .count();
    assert!(
        ties > 100,
        "{ties} members share a value with the one before"
    );
    // A member's mark lasts until the presence period after the opening (the join was at
    // t0 + 100 i, the opening is t0 + 60 s, the presence 600 s).
    let keys = StripeKeys::new(
        &app.config.key_prefix,
        &QueueId::parse("sale").unwrap(),
        line.stripe_of(&user(0)),
        STRIPES,
    );
    let left: i64 = redis::cmd("PTTL")
        .arg(keys.mark(user(0).as_str()))
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert!(left > 600_000 + 55_000, "{left} ms");
    // First polls come to every stripe at once, each stripe's front first.
    for stripe in 0..STRIPES {
        let mut shares: Vec<(u32, f64)> = model
            .0
            .iter()
            .filter(|(p, _)| p.stripe == Stripe(stripe))
            .map(|(_, i)| (value(&user(*i)), line.first_poll_share(&user(*i)).unwrap()))
            .collect();
        shares.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert!(
            shares.windows(2).all(|w| w[0].1 <= w[1].1),
            "stripe {stripe}"
        );
        assert!(shares.first().unwrap().1 < 0.3 && shares.last().unwrap().1 > 0.7);
    }
    // Joining again before the opening keeps the place.
    assert_eq!(
        line.join(&user(3), opens - 10).await.unwrap(),
        Joined::Already {
            stripe: line.stripe_of(&user(3)),
            score: scores[3]
        }
    );

    // Before the opening nobody is admitted, and a member has no position yet.
    let ticked = tick(&line, opens - 1000, 50).await;
    assert!(ticked.admitted.is_empty());
    assert!(matches!(
        line.poll(&user(0), scores[0], opens - 1000).await.unwrap(),
        Standing::Unplaced { .. }
    ));
    // Twenty arrive at and after the opening.
    let mut after = Vec::new();
    for i in members..members + 20 {
        let Joined::New { stripe, score } = line
            .join(&user(i), opens + 10 * (i - members) as i64)
            .await
            .unwrap()
        else {
            panic!("buyer-{i}: a new place");
        };
        assert!(score >= opens);
        scores.push(score);
        after.push((arrival(stripe, score, i), i));
    }
    // The first tick after the opening seals every stripe past it, and admits nobody yet.
    let ticked = tick(&line, opens + 100, 50).await;
    assert!(ticked.admitted.is_empty());
    // A new member whose clock runs 5 s behind now comes after the draw: at the opening.
    let late = members + 20;
    let Joined::New { stripe, score } = line.join(&user(late), opens - 5000).await.unwrap() else {
        panic!("a new place");
    };
    assert_eq!(score, opens);
    scores.push(score);
    after.push((arrival(stripe, score, late), late));
    after.sort();
    model.0.extend(after);

    // The next tick admits the draw's first 50, in value order, and every other buyer's
    // position is its place in the model.
    let now = opens + 2 * SEGMENT_MS;
    let ticked = tick(&line, now, 50).await;
    let first: Vec<String> = model.0[..50].iter().map(|(p, _)| p.user.clone()).collect();
    assert_eq!(ticked.admitted, first);
    // The draw's front is not one stripe's: its values' ranges go round the stripes, so the
    // first 50 of 240 come from every stripe. They hold the values below 6 (about 22 members)
    // and more, so they reach the fourth range: the first four lie on the four stripes.
    let fronts: std::collections::BTreeSet<Stripe> =
        model.0[..50].iter().map(|(p, _)| p.stripe).collect();
    assert_eq!(fronts.len(), STRIPES as usize, "{fronts:?}");
    for i in model.0[..50].iter().map(|(_, i)| *i).collect::<Vec<_>>() {
        model.remove(i);
    }
    let polled = now + lineup::line::PUBLISHED_FOR.as_millis() as i64;
    expect_positions(&line, &model, &scores, polled).await;
    // The rest, in the model's order.
    let rest: Vec<String> = model.0.iter().map(|(p, _)| p.user.clone()).collect();
    assert_eq!(drain(&line, polled, 37).await, rest);
}

/// Four stripes whose clocks disagree (one 400 ms behind, one 250 ms ahead, one 150 ms behind)
/// take 400 arrivals 7 ms apart while ticks run: a buyer is admitted before one who came
/// earlier only when it came less than δ later, δ = the segment + the clocks' spread (650 ms).
#[tokio::test]
async fn arrivals_swap_places_by_less_than_a_segment_and_the_clocks_spread() {
    let app = TestApp::spawn(&[]).await;
    let line = line(&app).await;
    let offsets: [i64; STRIPES as usize] = [0, -400, 250, -150];
    let spread = offsets.iter().max().unwrap() - offsets.iter().min().unwrap();
    let delta = SEGMENT_MS + spread;
    let t0 = chrono::Utc::now().timestamp_millis();
    let arrived = |i: usize| t0 + 7 * i as i64;
    let mut admitted = Vec::new();
    for batch in 0..20 {
        let joins = stream::iter((batch * 20..batch * 20 + 20).map(|i| {
            let line = &line;
            async move {
                let clock = arrived(i) + offsets[line.stripe_of(&user(i)).0 as usize];
                line.join(&user(i), clock).await.unwrap()
            }
        }))
        .buffer_unordered(20)
        .collect::<Vec<_>>();
        let tick = tick(&line, arrived(batch * 20), 15);
        let (_, ticked) = tokio::join!(joins, tick);
        admitted.extend(ticked.admitted);
    }
    admitted.extend(drain(&line, arrived(400), 15).await);
    assert_eq!(admitted.len(), 400);
    let index = |u: &str| -> usize { u.trim_start_matches("buyer-").parse().unwrap() };
    let mut latest = 0;
    let mut swapped = 0;
    for user in &admitted {
        let i = index(user);
        assert!(
            arrived(latest) - arrived(i) < delta,
            "{user} came {} ms before one admitted ahead of it",
            arrived(latest) - arrived(i)
        );
        if i < latest {
            swapped += 1;
        }
        latest = latest.max(i);
    }
    assert!(swapped > 0, "some arrivals within δ swap places");
}
