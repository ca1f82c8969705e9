//! The admission JWT's settings (docs/booking.md): the issuer, the audience, how long an
//! admission lives, the algorithm and the signing keys.

use chrono::Utc;

use super::error::{bad, ConfigError};
use super::jwt::{audience, issuer_url_is_usable};
use super::vars::Vars;
use crate::admission::{Issuer, KeySet, ALGORITHMS};
use crate::bounds::Bounds;

/// Reads `ADMISSION_ISSUER`, `ADMISSION_AUDIENCE`, `ADMISSION_TTL_SECONDS` (default 60),
/// `ADMISSION_ALGORITHM` (`RS256`, the default, `ES256` or `EdDSA`) and `ADMISSION_KEYS`
/// (a private JWK set; in AWS it comes from the secret `ADMISSION_KEYS_ARN` names). `None`
/// without `ADMISSION_ISSUER`: no admission is issued and the discovery routes are 404.
pub(super) fn read(vars: &Vars) -> Result<Option<Issuer>, ConfigError> {
    let Some(issuer) = vars.string("ADMISSION_ISSUER") else {
        for variable in [
            "ADMISSION_AUDIENCE",
            "ADMISSION_TTL_SECONDS",
            "ADMISSION_ALGORITHM",
            "ADMISSION_KEYS",
        ] {
            if vars.string(variable).is_some() {
                return Err(bad(variable, "is set, but ADMISSION_ISSUER is not"));
            }
        }
        return Ok(None);
    };
    let issuer = issuer.trim().to_owned();
    if !issuer_url_is_usable(&issuer) || issuer.ends_with('/') {
        return Err(bad(
            "ADMISSION_ISSUER",
            "must be the https:// base URL that serves /.well-known/openid-configuration \
             (http:// only on a loopback host), without a trailing slash, query or fragment",
        ));
    }
    let audience = audience(vars, "ADMISSION_AUDIENCE", "ADMISSION_ISSUER")?;
    let ttl = vars.seconds("ADMISSION_TTL_SECONDS", 60, Bounds::new(5, 3_600))?;
    let alg = vars.one_of("ADMISSION_ALGORITHM", ALGORITHMS)?;
    let keys = vars
        .string("ADMISSION_KEYS")
        .ok_or_else(|| {
            bad(
                "ADMISSION_KEYS",
                "is required with ADMISSION_ISSUER (in AWS, set ADMISSION_KEYS_ARN)",
            )
        })
        .and_then(|json| {
            KeySet::parse(&json, alg, Utc::now()).map_err(|reason| bad("ADMISSION_KEYS", reason))
        })?;
    Ok(Some(Issuer {
        issuer,
        audience,
        ttl,
        keys,
    }))
}
