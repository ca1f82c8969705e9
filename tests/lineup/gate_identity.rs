//! A place cannot be shared: where a JWT issuer is configured, the gatekeeper lets a request
//! through only with the buyer's own JWT, verified against the issuer's keys, whose `sub` is
//! the user the queue token was issued to. The issuer is real: discovery and JWKS over HTTP.

use std::time::Duration;

use lineup_tests::issuer::{SigningKey, TestIssuer, AUDIENCE};
use lineup_tests::queue::join;
use lineup_tests::{authorizer_request, authorizer_request_as, sleep, TestApp};
use serde_json::{json, Value};

async fn app_for(issuer: &TestIssuer, extra: &[(&str, &str)]) -> TestApp {
    let vars = issuer.vars();
    let mut all: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    all.extend_from_slice(extra);
    TestApp::spawn(&all).await
}

/// Whether the gatekeeper lets `token` through for `show` with this JWT, and its context.
async fn gate_as(app: &TestApp, jwt: Option<&str>, token: &str) -> (bool, Value) {
    app.authorize(authorizer_request_as(jwt, Some(token), Some("show"), None))
        .await
}

fn denied_for(answer: (bool, Value), reason: &str, case: &str) {
    assert!(!answer.0, "{case}: allowed");
    assert_eq!(answer.1, json!({"reason": reason}), "{case}");
}

#[tokio::test]
async fn only_the_buyer_the_token_was_issued_to_passes() {
    let rsa = SigningKey::rsa("rsa-1");
    let other_rsa = SigningKey::rsa("rsa-2");
    let ec = SigningKey::ec("ec-1");
    let issuer = TestIssuer::start(&[&rsa, &ec]).await;
    let app = app_for(&issuer, &[]).await;
    let token = join(&app, "show", "alice").await.token();

    let alices = rsa.sign(&issuer.claims("alice"));
    let (allowed, context) = gate_as(&app, Some(&alices), &token).await;
    assert!(allowed, "{context}");
    assert_eq!(context["userId"], "alice");
    assert!(
        !context.to_string().contains(&alices),
        "no JWT in the context"
    );
    assert!(
        gate_as(&app, Some(&ec.sign(&issuer.claims("alice"))), &token)
            .await
            .0,
        "ES256"
    );

    // A Cognito access token carries client_id instead of aud.
    let mut access = issuer.claims("alice");
    access.as_object_mut().unwrap().remove("aud");
    access["client_id"] = json!(AUDIENCE);
    assert!(
        gate_as(&app, Some(&rsa.sign(&access)), &token).await.0,
        "client_id"
    );
    let mut several = issuer.claims("alice");
    several["aud"] = json!(["elsewhere", AUDIENCE]);
    assert!(
        gate_as(&app, Some(&rsa.sign(&several)), &token).await.0,
        "aud list"
    );

    // Bob, signed in as himself, holding alice's token.
    let bobs = rsa.sign(&issuer.claims("bob"));
    denied_for(
        gate_as(&app, Some(&bobs), &token).await,
        "buyer-mismatch",
        "bob",
    );

    denied_for(
        app.authorize(authorizer_request(Some(&token), Some("show"), None))
            .await,
        "unauthenticated",
        "no JWT",
    );
    let now = chrono::Utc::now().timestamp();
    let altered = |change: &dyn Fn(&mut Value)| {
        let mut claims = issuer.claims("alice");
        change(&mut claims);
        claims
    };
    let cases: Vec<(&str, String)> = vec![
        (
            "expired beyond the leeway",
            rsa.sign(&altered(&|c| c["exp"] = json!(now - 120))),
        ),
        (
            "not valid before a minute from now",
            rsa.sign(&altered(&|c| c["nbf"] = json!(now + 60))),
        ),
        (
            "without exp",
            rsa.sign(&altered(&|c| {
                c.as_object_mut().unwrap().remove("exp");
            })),
        ),
        (
            "without sub",
            rsa.sign(&altered(&|c| {
                c.as_object_mut().unwrap().remove("sub");
            })),
        ),
        (
            "wrong aud",
            rsa.sign(&altered(&|c| c["aud"] = json!("elsewhere"))),
        ),
        (
            "client_id beside a wrong aud",
            rsa.sign(&altered(&|c| {
                c["aud"] = json!("elsewhere");
                c["client_id"] = json!(AUDIENCE);
            })),
        ),
        (
            "wrong iss",
            rsa.sign(&altered(&|c| c["iss"] = json!("https://auth.example.com"))),
        ),
        (
            "bad signature (another key under rsa-1's kid)",
            other_rsa.sign_as("rsa-1", &issuer.claims("alice")),
        ),
        ("unknown kid", other_rsa.sign(&issuer.claims("alice"))),
        ("tampered payload", {
            let genuine = rsa.sign(&issuer.claims("alice"));
            let bobs_payload = bobs.split('.').nth(1).unwrap();
            let parts: Vec<&str> = genuine.split('.').collect();
            format!("{}.{bobs_payload}.{}", parts[0], parts[2])
        }),
        ("not a JWT", "not-a-jwt".to_owned()),
    ];
    for (case, jwt) in &cases {
        denied_for(
            gate_as(&app, Some(jwt), &token).await,
            "unauthenticated",
            case,
        );
    }
    // Another scheme, or the JWT without one.
    for authorization in [format!("Basic {alices}"), alices.clone()] {
        let mut request = authorizer_request(Some(&token), Some("show"), None);
        request["headers"]["authorization"] = json!(authorization);
        denied_for(app.authorize(request).await, "unauthenticated", "scheme");
    }
    // The issuer's keys came once, at first need: verification is local.
    assert_eq!(issuer.jwks_fetches(), 1);
    assert!(gate_as(&app, Some(&alices), &token).await.0, "still alice");
}

#[tokio::test]
async fn a_new_key_is_fetched_at_most_once_a_period() {
    let first = SigningKey::rsa("rsa-1");
    let next = SigningKey::ec("ec-2");
    let issuer = TestIssuer::start(&[&first]).await;
    let app = app_for(&issuer, &[]).await;
    let token = join(&app, "show", "alice").await.token();
    assert!(
        gate_as(&app, Some(&first.sign(&issuer.claims("alice"))), &token)
            .await
            .0
    );
    assert_eq!(issuer.jwks_fetches(), 1);

    // The issuer rotates in a new key; once the refetch period (1 s here) has passed, the
    // first JWT naming it has the keys fetched again.
    issuer.publish(&[&first, &next]);
    sleep(Duration::from_millis(1_100)).await;
    let (allowed, context) = gate_as(&app, Some(&next.sign(&issuer.claims("alice"))), &token).await;
    assert!(allowed, "{context}");
    assert_eq!(issuer.jwks_fetches(), 2);

    // Forged kids right after: denied, and no fetch before the period is over.
    for n in 0..5 {
        let forged = first.sign_as(&format!("forged-{n}"), &issuer.claims("alice"));
        denied_for(
            gate_as(&app, Some(&forged), &token).await,
            "unauthenticated",
            "forged kid",
        );
    }
    assert_eq!(
        issuer.jwks_fetches(),
        2,
        "a forged kid made the gatekeeper refetch"
    );
}

#[tokio::test]
async fn with_the_issuer_down_at_first_need_it_denies_and_recovers_when_it_is_back() {
    let key = SigningKey::rsa("rsa-1");
    let mut issuer = TestIssuer::down_from_the_start(&[&key]).await;
    let app = app_for(&issuer, &[]).await;
    let token = join(&app, "show", "alice").await.token();
    let jwt = key.sign(&issuer.claims("alice"));
    denied_for(
        gate_as(&app, Some(&jwt), &token).await,
        "unauthenticated",
        "issuer down",
    );

    issuer.up().await;
    sleep(Duration::from_millis(1_100)).await;
    let (allowed, context) = gate_as(&app, Some(&jwt), &token).await;
    assert!(allowed, "{context}");
    assert_eq!(issuer.jwks_fetches(), 1);
}

/// Without an issuer (the local stack), the queue token alone decides, JWT or not.
#[tokio::test]
async fn without_an_issuer_the_token_alone_decides() {
    let app = TestApp::spawn(&[]).await;
    let token = join(&app, "show", "alice").await.token();
    assert!(gate_as(&app, None, &token).await.0);
    assert!(gate_as(&app, Some("not-a-jwt"), &token).await.0);
}
