//! The replay's live boards: the rolling and trending boards after the ticks, against the
//! window and trending models.

use std::collections::BTreeMap;

use chrono::DateTime;
use lambda_runtime::{Context, LambdaEvent};
use lineup_tests::TestApp;
use serde_json::json;

use super::stream::*;

/// The server's clock (Redis `TIME`) in ms.
pub(crate) async fn server_ms(app: &TestApp) -> i64 {
    lineup_tests::rankings::server_now(app)
        .await
        .timestamp_millis()
}

/// After ticks until nothing is left: the rolling boards equal the window model at the
/// server's bucket, and the current trending generation the trending model within a
/// relative 10^-9. Read again if a bucket starts meanwhile. Returns the boards compared.
pub(crate) async fn compare_live_boards(app: &TestApp, stream: &Stream) -> (usize, usize) {
    loop {
        let before = server_ms(app).await;
        let (rolling, trending) = read_live_boards(app, stream, before).await;
        let after = server_ms(app).await;
        if after.div_euclid(300_000) == before.div_euclid(300_000) {
            for (path, got, want) in &rolling {
                assert_eq!(got, want, "{path}");
            }
            let rolling = rolling.len();
            for (what, got, want) in &trending {
                assert_eq!(
                    got.keys().collect::<Vec<_>>(),
                    want.keys().collect::<Vec<_>>(),
                    "{what}"
                );
                for (concert, score) in got {
                    let model = want[concert];
                    assert!(
                        (score - model).abs() <= model * 1e-9,
                        "{what} {concert}: {score} vs {model}"
                    );
                }
            }
            return (rolling, trending.len());
        }
    }
}

/// One board's path, what Redis holds and what the model says.
pub(crate) type Compared<T> = Vec<(String, BTreeMap<String, T>, BTreeMap<String, T>)>;

/// Ticks until nothing is left, then reads the rolling boards (asserting them) and the
/// trending boards (returned, for the caller to compare within the tolerance), modelled
/// at server time `before`, taken before the tick.
pub(crate) async fn read_live_boards(
    app: &TestApp,
    stream: &Stream,
    before: i64,
) -> (Compared<u64>, Compared<f64>) {
    let rankings = &app.stack.ranking_api.rankings;
    let half_life_ms = rankings.settings().trending_half_life.as_millis() as i64;
    loop {
        let tick = event_applier::handle(
            LambdaEvent::new(
                json!({"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}),
                Context::default(),
            ),
            &app.stack.event_applier,
        )
        .await
        .expect("the tick");
        if tick["more"] == json!(false) {
            break;
        }
    }
    let windows = window_model(stream, before.div_euclid(300_000));
    let details = details_model(stream);
    let now = DateTime::from_timestamp_millis(before).unwrap();
    let mut rolling = Vec::new();
    for period in ["last-24h", "last-7d"] {
        for genre in std::iter::once(None).chain(GENRES.iter().map(|g| Some(g.to_string()))) {
            let mut path = format!("/rankings/{period}?limit=100");
            if let Some(genre) = &genre {
                path.push_str(&format!("&genre={genre}"));
            }
            let got: BTreeMap<String, u64> =
                lineup_tests::rankings::items(&lineup_tests::rankings::read(app, &path).await)
                    .into_iter()
                    .map(|(concert, score, _)| (concert, score))
                    .collect();
            let want = windows
                .get(&(period, genre.clone()))
                .cloned()
                .unwrap_or_default();
            // Its rate board: the window's seats over the latest capacity, in millionths,
            // for the concerts whose capacity is known.
            let genre_id = genre
                .as_deref()
                .map(|g| lineup::ids::Genre::parse(g).unwrap());
            let board = rankings.board_at(
                lineup::ranking::Period::parse(period).unwrap(),
                now,
                genre_id,
            );
            let got_rates: BTreeMap<String, u64> = lineup_tests::rankings::rate_board(app, &board)
                .await
                .into_iter()
                .map(|(concert, rate)| (concert, rate as u64))
                .collect();
            let want_rates: BTreeMap<String, u64> = want
                .iter()
                .filter_map(|(concert, seats)| {
                    let (_, capacity, _) = details.get(concert)?;
                    Some((concert.clone(), seats * 1_000_000 / capacity))
                })
                .collect();
            rolling.push((path.clone(), got, want));
            rolling.push((format!("{path}&by=rate (stored)"), got_rates, want_rates));
        }
    }
    let generation = now.timestamp_millis().div_euclid(12 * half_life_ms);
    let expected = trending_model(stream, generation, half_life_ms);
    let mut trending = Vec::new();
    for genre in std::iter::once(None).chain(GENRES.iter().map(|g| Some(g.to_string()))) {
        let genre_id = genre
            .as_deref()
            .map(|g| lineup::ids::Genre::parse(g).unwrap());
        let board = rankings.board_at(lineup::ranking::Period::Trending, now, genre_id);
        let got: BTreeMap<String, f64> = lineup_tests::rankings::trending_scores(app, &board)
            .await
            .into_iter()
            .collect();
        let want = expected.get(&genre).cloned().unwrap_or_default();
        trending.push((format!("trending {genre:?}"), got, want));
    }
    (rolling, trending)
}
