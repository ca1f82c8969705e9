//! The buyer's identity: the JWT issuer and audience the authorizer checks, and how often it
//! fetches the issuer's keys.

use std::time::Duration;

use super::error::{bad, ConfigError};
use super::vars::Vars;
use crate::bounds::Bounds;
use crate::tls::read_root_bundle;

/// Who issues the buyers' JWTs, for the gatekeeper's check of the buyer (`JWT_ISSUER`,
/// `JWT_AUDIENCE`): the values the template's JWT authorizer is configured with.
#[derive(Debug, Clone)]
pub struct JwtSettings {
    /// The `iss` a JWT must carry, exactly; its keys are found through
    /// `<issuer>/.well-known/openid-configuration`. An `https://` URL, or `http://` on a
    /// loopback host (tests).
    pub issuer: String,
    /// The `aud` a JWT must carry (or its `client_id`, when it has no `aud`).
    pub audience: String,
    /// Most often the issuer's keys are fetched again for a key id not in hand
    /// (`JWT_KEYS_REFETCH_SECONDS`, default 60).
    pub keys_refetch: Duration,
    /// PEM roots the issuer's certificate must chain to (`JWT_CA_FILE`), in place of the
    /// bundled Amazon roots Cognito's chain to.
    pub ca_roots: Option<Vec<u8>>,
}

impl JwtSettings {
    /// `None` without `JWT_ISSUER`; then the other `JWT_` variables must be unset too.
    pub(super) fn read(vars: &Vars) -> Result<Option<Self>, ConfigError> {
        let Some(issuer) = vars.string("JWT_ISSUER") else {
            for variable in ["JWT_AUDIENCE", "JWT_KEYS_REFETCH_SECONDS", "JWT_CA_FILE"] {
                if vars.string(variable).is_some() {
                    return Err(bad(variable, "is set, but JWT_ISSUER is not"));
                }
            }
            return Ok(None);
        };
        let issuer = issuer.trim().to_owned();
        if !issuer_url_is_usable(&issuer) {
            return Err(bad(
                "JWT_ISSUER",
                "must be an https:// URL (http:// only on a loopback host) of up to 2048 \
                 characters, without query or fragment",
            ));
        }
        let audience = audience(vars, "JWT_AUDIENCE", "JWT_ISSUER")?;
        Ok(Some(JwtSettings {
            issuer,
            audience,
            keys_refetch: vars.seconds("JWT_KEYS_REFETCH_SECONDS", 60, Bounds::new(1, 3_600))?,
            ca_roots: match vars.string("JWT_CA_FILE") {
                Some(path) => {
                    Some(read_root_bundle(&path).map_err(|reason| bad("JWT_CA_FILE", reason))?)
                }
                None => None,
            },
        }))
    }
}

/// The audience `variable` names, required with `issuer_variable`: up to 256 characters, none
/// a control character.
pub(super) fn audience(
    vars: &Vars,
    variable: &'static str,
    issuer_variable: &str,
) -> Result<String, ConfigError> {
    let audience = vars
        .string(variable)
        .map(|audience| audience.trim().to_owned())
        .ok_or_else(|| bad(variable, format!("is required with {issuer_variable}")))?;
    if audience.len() > 256 || audience.chars().any(char::is_control) {
        return Err(bad(
            variable,
            "must be up to 256 characters, none a control character",
        ));
    }
    Ok(audience)
}

/// Whether `issuer` is a URL the gatekeeper may fetch keys below (and the admission issuer
/// serve them below): `https://`, or `http://` on
/// a loopback host; no user, query or fragment.
pub(super) fn issuer_url_is_usable(issuer: &str) -> bool {
    let Ok(url) = url::Url::parse(issuer) else {
        return false;
    };
    let loopback = match url.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return false,
    };
    issuer.len() <= 2048
        && (url.scheme() == "https" || (url.scheme() == "http" && loopback))
        && url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none()
}
