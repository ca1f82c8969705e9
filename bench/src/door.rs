//! The door's proof of work (docs/door.md): what one challenge costs its solver, and what
//! checking a solution costs the function.
//!
//! # Method
//!
//! With the `altcha` crate (the ALTCHA project's implementation, which lineup verifies with),
//! on one core: solve 40 challenges at the default floor cost (1 000 PBKDF2 iterations a try)
//! and 5 at the default ceiling (20 000). Derivations a second are the tries (the solution's
//! counter, plus one) over the time taken. Then check each solution as `queue-api` does
//! (`Proof::check`: the signature, the binding and one derivation): µs a check. From these,
//! the CPU a farm pays for 1 000 places at each cost.
//!
//! # What limits the figures
//!
//! - A buyer's browser derives through WebCrypto in a Web Worker. Its time to solve is
//!   measured in headless Chromium by `tests/browser/door-solve-time.mjs`.
//! - A solver tries 256 times on average (a one-byte key prefix), but any one solve varies
//!   widely around that: the figures are means over the solves.
//! - Many cores or GPUs shorten a farm's wall time, not the CPU it pays: the cost a place
//!   stays.

use std::time::Instant;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use lineup::door::{DoorKey, Proof, Scope, DEFAULT_COST_MAX, DEFAULT_COST_MIN};
use lineup::ids::{QueueId, UserId};
use lineup::token::TokenKey;

use crate::measure::Bench;
use crate::report::Report;

pub async fn run(_bench: &Bench, report: &mut Report) {
    report.section("The door's proof of work (ALTCHA PoW v2, PBKDF2/SHA-256), one core");
    for (cost, solves) in [(DEFAULT_COST_MIN, 40), (DEFAULT_COST_MAX, 5)] {
        let key = DoorKey::derive(&TokenKey::random());
        let queue = QueueId::parse("bench").expect("an id");
        let expires_at = chrono::Utc::now().timestamp() + 3600;
        let (mut tries, mut solving, mut checking) = (0u64, 0f64, 0f64);
        for i in 0..solves {
            let user = UserId::parse(&format!("b{i}")).expect("an id");
            let challenge = key
                .challenge(Scope::Queue(&queue), &user, Some(i), cost, expires_at)
                .expect("a challenge");
            let started = Instant::now();
            let solution = altcha::solve_challenge(altcha::SolveChallengeOptions::new(&challenge))
                .expect("a solve")
                .expect("a solution in time");
            solving += started.elapsed().as_secs_f64();
            tries += u64::from(solution.counter) + 1;
            let payload = altcha::Payload {
                challenge,
                solution,
            };
            let payload = STANDARD.encode(serde_json::to_vec(&payload).expect("JSON"));
            let started = Instant::now();
            let proof = Proof::check(Some(&payload), &key, Scope::Queue(&queue), &user);
            checking += started.elapsed().as_secs_f64();
            assert!(proof.solved(), "{proof:?}");
        }
        let rate = tries as f64 / solving;
        let per_place = solving / solves as f64;
        report.row(
            &format!("cost {cost}: derivations a second"),
            &format!("{rate:.0}"),
            &format!("{tries} tries over {solves} solves"),
        );
        report.row(
            &format!("cost {cost}: CPU per place (mean solve)"),
            &format!("{:.3} s", per_place),
            "a solver's time, one core",
        );
        report.row(
            &format!("cost {cost}: CPU per 1 000 places"),
            &format!("{:.0} s", per_place * 1000.0),
            "what a farm pays, however many cores",
        );
        report.row(
            &format!("cost {cost}: the function's check"),
            &format!("{:.0} µs", checking / solves as f64 * 1e6),
            "Proof::check: signature, binding, one derivation",
        );
    }
}
