//! The admission JWT (docs/booking.md): what signing one costs the function, for each
//! algorithm, and what reading the key set costs at cold start.
//!
//! # Method
//!
//! On one core, in the release build: make a key set of one key for each algorithm, read it
//! as cold start does (`KeySet::parse`: the JWK's numbers into DER, the public half computed
//! from the private one), then sign 2 000 admissions (`Issuer::sign`: the claims, a
//! random `jti`, the signature). µs a signature is the mean. Signing adds no Redis round
//! trip: the status call it rides on already made its one.
//!
//! # What limits the figures
//!
//! - A Lambda with 256 MB has a fraction of a vCPU: multiply by about four for the time there.
//! - ring parses the DER key at each signature (jsonwebtoken 9 keeps the DER, not ring's
//!   key): that parse is in the figure.

use std::time::{Duration, Instant};

use chrono::Utc;
use jsonwebtoken::Algorithm;
use lineup::admission::{Issuer, KeySet, Session};
use lineup::ids::{QueueId, UserId};

use crate::measure::Bench;
use crate::report::Report;

const SIGNATURES: u32 = 2_000;

pub async fn run(_bench: &Bench, report: &mut Report) {
    report.section("The admission JWT: signing and key loading, one core");
    let queue = QueueId::parse("bench").expect("an id");
    let user = UserId::parse("buyer-1").expect("an id");
    let now = Utc::now();
    let session = Session {
        queue: &queue,
        user: &user,
        ticket: 42,
        since: now,
        until: now + chrono::Duration::minutes(10),
    };
    for (name, alg) in [
        ("RS256", Algorithm::RS256),
        ("ES256", Algorithm::ES256),
        ("EdDSA", Algorithm::EdDSA),
    ] {
        let (_, text) = KeySet::generate(alg, "bench", now, None).expect("a key");
        let started = Instant::now();
        let keys = KeySet::parse(&text, alg, now).expect("the key set");
        let loading = started.elapsed();
        let issuer = Issuer {
            issuer: "https://queue.example".into(),
            audience: "booking".into(),
            ttl: Duration::from_secs(60),
            keys,
        };
        let started = Instant::now();
        let mut bytes = 0;
        for _ in 0..SIGNATURES {
            let jwt = issuer
                .sign(&session, now)
                .expect("signed")
                .expect("a session");
            bytes = jwt.len();
        }
        let signing = started.elapsed() / SIGNATURES;
        report.row(
            &format!("{name}: µs a signature"),
            &format!("{:.0} µs", signing.as_secs_f64() * 1e6),
            &format!("mean of {SIGNATURES}; the JWT is {bytes} bytes"),
        );
        report.row(
            &format!("{name}: reading the key set at cold start"),
            &format!("{:.2} ms", loading.as_secs_f64() * 1e3),
            "one key: its numbers into DER, its public half computed",
        );
    }
}
