//! `cargo run --release --bin lineup-admission-keys`: makes the admission JWT's private key
//! set for the secret `ADMISSION_KEYS_ARN` names (docs/booking.md), and its rotations. The
//! key set goes to stdout only; nothing is logged.

use chrono::{DateTime, Utc};
use lineup::admission::{KeySet, ALGORITHMS};

const HELP: &str = "\
lineup-admission-keys: the admission JWT's private key set (JSON) on stdout

  --algorithm RS256|ES256|EdDSA  the keys' algorithm (default: with --rotate, the set's
                                 own; else RS256, as API Gateway's JWT authorizer takes RSA
                                 only)
  --rotate FILE                  the key set in FILE, with a new key added and the key that
                                 would sign at its activeFrom retiring then
  --active-from RFC3339          when the new key starts signing (default: now for a new
                                 set; now + 2 h 5 min with --rotate, past API Gateway's
                                 two-hour JWKS cache)
  --kid NAME                     the new key's id (default: <algorithm>-<activeFrom, UTC>)
";

fn main() {
    if let Err(message) = run() {
        eprintln!("lineup-admission-keys: {message}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut algorithm, mut rotate, mut active_from, mut kid) = (None, None, None, None);
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            print!("{HELP}");
            return Ok(());
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n\n{HELP}"))?;
        match flag.as_str() {
            "--algorithm" => algorithm = Some(value),
            "--rotate" => rotate = Some(value),
            "--active-from" => {
                active_from = Some(
                    DateTime::parse_from_rfc3339(&value)
                        .map_err(|err| format!("--active-from {value:?}: {err}"))?
                        .with_timezone(&Utc),
                )
            }
            "--kid" => kid = Some(value),
            other => return Err(format!("unknown argument {other:?}\n\n{HELP}")),
        }
    }
    let current = match &rotate {
        Some(path) => Some(std::fs::read_to_string(path).map_err(|err| format!("{path}: {err}"))?),
        None => None,
    };
    // Rotating, the set's own algorithm (its keys' `alg`) unless one is named.
    let algorithm = algorithm
        .or_else(|| {
            let set: serde_json::Value = serde_json::from_str(current.as_deref()?).ok()?;
            Some(set["keys"][0]["alg"].as_str()?.to_owned())
        })
        .unwrap_or_else(|| "RS256".to_owned());
    let alg = ALGORITHMS
        .iter()
        .find(|(name, _)| *name == algorithm)
        .map(|(_, alg)| *alg)
        .ok_or_else(|| format!("--algorithm must be RS256, ES256 or EdDSA, not {algorithm:?}"))?;
    let now = Utc::now();
    let lead = chrono::Duration::minutes(125);
    let active_from = active_from.unwrap_or(if current.is_some() { now + lead } else { now });
    let kid = kid.unwrap_or_else(|| format!("{algorithm}-{}", active_from.format("%Y%m%dT%H%MZ")));
    let text = match current {
        None => KeySet::generate(alg, &kid, active_from, None)?.1,
        Some(current) => {
            if active_from < now + chrono::Duration::hours(2) {
                eprintln!(
                    "lineup-admission-keys: warning: the new key signs within two hours; \
                     API Gateway may not have fetched it by then"
                );
            }
            KeySet::rotate(&current, alg, &kid, active_from, now)?
        }
    };
    println!("{text}");
    Ok(())
}
