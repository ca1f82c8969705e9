//! Identifiers that reach Redis keys. Each is parsed once at the edge, so that code past
//! the edge never sees an unchecked id: `parse` is the only constructor.

use std::fmt;

use serde::Serialize;

use crate::error::Error;

/// Longest id accepted, in bytes.
pub const MAX_ID_LEN: usize = 64;

/// Ids are 1–64 characters of `[A-Za-z0-9._:-]`. The charset keeps `{` and `}` (hash-tag
/// delimiters) and whitespace out of Redis keys.
fn check(field: &'static str, raw: &str) -> Result<(), Error> {
    if raw.is_empty() || raw.len() > MAX_ID_LEN {
        return Err(Error::invalid(
            field,
            format!("must be 1 to {MAX_ID_LEN} characters long"),
        ));
    }
    if let Some(bad) = raw
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')))
    {
        return Err(Error::invalid(
            field,
            format!("contains {bad:?}; only letters, digits and . _ : - are allowed"),
        ));
    }
    Ok(())
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $field:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The JSON field or parameter name this id arrives in, used in error messages.
            pub const FIELD: &'static str = $field;

            pub fn parse(raw: &str) -> Result<Self, Error> {
                check(Self::FIELD, raw).map(|()| Self(raw.to_owned()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

id_type!(
    /// One waiting room, usually one on-sale.
    QueueId,
    "queueId"
);
id_type!(
    /// A capacity pool: queues that share one booking backend's capacity.
    PoolId,
    "poolId"
);
id_type!(
    /// A buyer, as the site's identity provider names them.
    UserId,
    "userId"
);

id_type!(
    /// A first-come coupon campaign.
    CouponId,
    "couponId"
);

id_type!(
    /// A concert on the rankings.
    ConcertId,
    "concertId"
);
id_type!(
    /// A genre board's name.
    Genre,
    "genre"
);
id_type!(
    /// A payment, the unit a sale is counted once by.
    PaymentId,
    "paymentId"
);
id_type!(
    /// A refund, the unit a refund is counted once by.
    RefundId,
    "refundId"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_charset_and_lengths() {
        assert!(QueueId::parse("concert-2026.seoul:day_1").is_ok());
        assert!(UserId::parse(&"a".repeat(64)).is_ok());
    }

    #[test]
    fn rejects_empty_long_and_foreign_characters() {
        for bad in ["", &"a".repeat(65), "a{b}", "a b", "ü", "a/b", "a%20"] {
            let err = UserId::parse(bad).unwrap_err();
            assert!(err.to_string().contains("userId"), "{bad:?}: {err}");
        }
    }
}
