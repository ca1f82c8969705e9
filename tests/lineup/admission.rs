//! The admission JWT (docs/booking.md): an active buyer's token answers carry a JWT the
//! booking API verifies by itself against lineup's JWKS. Each status poll renews it; nothing
//! renews it once the session has ended. PyJWT and Node's `jose` verify it against the JWKS
//! route over HTTP, refuse forgeries, and follow a key rotation with two keys live.

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, SecondsFormat, Utc};
use jsonwebtoken::Algorithm;
use lineup::admission::{Issuer, KeySet, Session};
use lineup::ids::{QueueId, UserId};
use lineup_tests::queue::{assert_kind, join, leave, put_settings, status};
use lineup_tests::verifiers::Verifier;
use lineup_tests::{
    api_request, api_request_with_claims, Reply, TestApp, ADMISSION_AUDIENCE, ADMISSION_ISSUER,
    ADMISSION_KEYS, STRANGER_KEYS,
};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::local_stack::send_with_headers;

/// A JWT's decoded header and payload, unverified: what the test inspects.
fn parts(jwt: &str) -> (Value, Value) {
    let mut segments = jwt.split('.');
    let mut decode = || -> Value {
        let bytes = URL_SAFE_NO_PAD
            .decode(segments.next().expect("a segment"))
            .expect("base64url");
        serde_json::from_slice(&bytes).expect("JSON")
    };
    let header = decode();
    (header, decode())
}

fn admission_of(reply: &Reply) -> String {
    reply.body["admission"]
        .as_str()
        .unwrap_or_else(|| panic!("an admission: {}", reply.body))
        .to_owned()
}

/// `activeUntil` of a token answer, in ms.
fn until_ms(reply: &Reply) -> i64 {
    DateTime::parse_from_rfc3339(reply.body["activeUntil"].as_str().expect("activeUntil"))
        .expect("RFC 3339")
        .timestamp_millis()
}

#[tokio::test]
async fn an_active_buyer_holds_an_admission_that_each_poll_renews_until_the_session_ends() {
    let app = TestApp::spawn(&[]).await;
    let session_ms = 600_000;
    put_settings(
        &app,
        "show",
        &json!({ "capacity": 1, "sessionSeconds": 600 }),
    )
    .await;
    let before = Utc::now().timestamp();
    let alice = join(&app, "show", "alice").await;
    let after = Utc::now().timestamp();
    assert_eq!(alice.status, 201, "{}", alice.body);
    assert_eq!(alice.body["status"], "active");
    let first = admission_of(&alice);
    let (header, claims) = parts(&first);
    assert_eq!(header["alg"], "RS256");
    assert_eq!(header["kid"], "test-1");
    assert_eq!(claims["iss"], ADMISSION_ISSUER);
    assert_eq!(claims["aud"], ADMISSION_AUDIENCE);
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["qid"], "show");
    let iat = claims["iat"].as_i64().unwrap();
    assert!((before..=after).contains(&iat), "iat {iat} is now");
    assert_eq!(claims["nbf"], iat);
    assert_eq!(
        claims["exp"],
        iat + 60,
        "ADMISSION_TTL_SECONDS, before the session ends"
    );
    // The session: its ticket and the ms it began (its end less the session's length).
    let ticket = alice.body["ticket"].as_u64().unwrap();
    let since = until_ms(&alice) - session_ms;
    assert_eq!(claims["sid"], format!("{ticket}:{since}"));
    let jti = claims["jti"].as_str().unwrap();
    assert_eq!(URL_SAFE_NO_PAD.decode(jti).unwrap().len(), 16, "128 bits");
    // A front end that polls as told renews it before it expires.
    assert!(alice.body["pollAfterSeconds"].as_u64().unwrap() <= 45);
    // The gateway's stand-in for API Gateway's JWT authorizer takes it.
    let issuer = app.stack.queue_api.admission.as_ref().unwrap();
    assert!(issuer.verify(&first, Utc::now()).is_some());

    // A waiter holds none.
    let bob = join(&app, "show", "bob").await;
    assert_eq!(bob.body["status"], "waiting");
    assert!(bob.body.get("admission").is_none(), "{}", bob.body);

    // A poll a second later renews it: a later iat and exp, a new jti, the same session.
    lineup_tests::sleep(Duration::from_millis(1_100)).await;
    let polled = status(&app, "show", &alice.token()).await;
    assert_eq!(polled.status, 200);
    let (_, renewed) = parts(&admission_of(&polled));
    assert!(renewed["iat"].as_i64().unwrap() > iat);
    assert!(renewed["exp"].as_i64().unwrap() > claims["exp"].as_i64().unwrap());
    assert_ne!(renewed["jti"], claims["jti"]);
    assert_eq!(renewed["sid"], claims["sid"]);
    // Re-issuing to the buyer who holds the session gives the same session.
    let again = join(&app, "show", "alice").await;
    assert_eq!(again.status, 200);
    assert_eq!(parts(&admission_of(&again)).1["sid"], claims["sid"]);

    // The session ends (alice leaves): nothing renews it. Bob, admitted in her place, holds
    // another session.
    assert_eq!(leave(&app, "show", &alice.token()).await.status, 204);
    let gone = status(&app, "show", &alice.token()).await;
    assert_kind(&gone, 410, "left");
    assert!(gone.body.get("admission").is_none(), "{}", gone.body);
    let bob = status(&app, "show", &bob.token()).await;
    assert_eq!(bob.body["status"], "active", "{}", bob.body);
    let (_, bobs) = parts(&admission_of(&bob));
    assert_eq!(bobs["sub"], "bob");
    assert_ne!(bobs["sid"], claims["sid"]);
}

#[tokio::test]
async fn an_admission_expires_with_a_session_that_ends_before_its_ttl() {
    let app = TestApp::spawn(&[]).await;
    put_settings(
        &app,
        "brief",
        &json!({ "capacity": 1, "sessionSeconds": 20 }),
    )
    .await;
    let alice = join(&app, "brief", "alice").await;
    let (_, claims) = parts(&admission_of(&alice));
    assert_eq!(claims["exp"], until_ms(&alice).div_euclid(1000));
    assert!(alice.body["pollAfterSeconds"].as_u64().unwrap() <= 5);
}

/// Every admission served has at least 2 s left (docs/booking.md): polls, and token requests
/// that find the buyer active, all through a short session's last seconds get none with less.
#[tokio::test]
async fn no_admission_is_served_with_less_than_two_seconds_left() {
    let app = TestApp::spawn(&[]).await;
    put_settings(
        &app,
        "brief",
        &json!({ "capacity": 1, "sessionSeconds": 4 }),
    )
    .await;
    let alice = join(&app, "brief", "alice").await;
    assert_eq!(alice.body["status"], "active", "{}", alice.body);
    let until = until_ms(&alice);
    let (mut served, mut withheld) = (0, 0);
    for poll in 0.. {
        // The answer is signed no earlier than the request is sent.
        let sent = Utc::now().timestamp_millis();
        let reply = if poll % 2 == 0 {
            status(&app, "brief", &alice.token()).await
        } else {
            join(&app, "brief", "alice").await
        };
        let received = Utc::now().timestamp_millis();
        if reply.body["status"] != "active" {
            assert!(received >= until, "active to its end: {}", reply.body);
            break;
        }
        match reply.body["admission"].as_str() {
            Some(jwt) => {
                served += 1;
                let exp = parts(jwt).1["exp"].as_i64().unwrap() * 1000;
                assert!(
                    exp - sent >= 2_000,
                    "an admission with {} ms left, sent {} ms before the session's end",
                    exp - sent,
                    until - sent
                );
            }
            None => {
                withheld += 1;
                // `exp` is the session's end in whole seconds, so up to 3 s before the end
                // an admission still has 2 s left.
                assert!(
                    received > until - 3_000,
                    "none {} ms before the session's end",
                    until - received
                );
            }
        }
        lineup_tests::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        served > 0 && withheld > 0,
        "{served} served, {withheld} withheld"
    );
}

#[tokio::test]
async fn the_discovery_documents_name_the_issuer_and_publish_only_public_keys() {
    let app = TestApp::spawn(&[]).await;
    let discovery = app
        .queue_api(api_request(
            "GET",
            "/.well-known/openid-configuration",
            None,
        ))
        .await;
    assert_eq!(discovery.status, 200);
    assert_eq!(discovery.body["issuer"], ADMISSION_ISSUER);
    assert_eq!(
        discovery.body["jwks_uri"],
        format!("{ADMISSION_ISSUER}/.well-known/jwks.json")
    );
    assert_eq!(
        discovery.body["id_token_signing_alg_values_supported"],
        json!(["RS256"])
    );
    let jwks = app
        .queue_api(api_request("GET", "/.well-known/jwks.json", None))
        .await;
    assert_eq!(jwks.status, 200);
    for reply in [&discovery, &jwks] {
        assert_eq!(
            reply.headers.get("cache-control").unwrap(),
            "public, max-age=300"
        );
    }
    let keys = jwks.body["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1);
    let key = keys[0].as_object().unwrap();
    let mut members: Vec<&str> = key.keys().map(String::as_str).collect();
    members.sort_unstable();
    assert_eq!(
        members,
        ["alg", "e", "kid", "kty", "n", "use"],
        "no private member"
    );
    assert_eq!(key["kid"], "test-1");
    let post = app
        .queue_api(api_request("POST", "/.well-known/jwks.json", Some("{}")))
        .await;
    post.assert_problem(405);

    // Without an issuer: no admission, and no documents.
    let off = TestApp::spawn(&[
        ("ADMISSION_ISSUER", ""),
        ("ADMISSION_AUDIENCE", ""),
        ("ADMISSION_KEYS", ""),
    ])
    .await;
    for path in [
        "/.well-known/jwks.json",
        "/.well-known/openid-configuration",
    ] {
        assert_kind(
            &off.queue_api(api_request("GET", path, None)).await,
            404,
            "not-found",
        );
    }
    let alice = join(&off, "show", "alice").await;
    assert_eq!(alice.body["status"], "active");
    assert!(alice.body.get("admission").is_none());
}

#[tokio::test]
async fn the_sample_browse_route_takes_the_admission_claims_of_its_own_queue() {
    let app = TestApp::spawn(&[]).await;
    let claims = json!({ "sub": "alice", "qid": "show", "sid": "1:1" });
    let ok = app
        .queue_api(api_request_with_claims(
            "GET",
            "/queues/show/seats",
            None,
            Some(claims.clone()),
        ))
        .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["qid"], "show");
    let other = app
        .queue_api(api_request_with_claims(
            "GET",
            "/queues/other/seats",
            None,
            Some(claims),
        ))
        .await;
    other.assert_problem(403);
    app.queue_api(api_request("GET", "/queues/show/seats", None))
        .await
        .assert_problem(401);
}

/// The settings the admission reads, bad in one way each, refused at start-up with the
/// variable named and no key material shown.
#[test]
fn bad_admission_settings_stop_the_function_at_start_up() {
    let d = serde_json::from_str::<Value>(ADMISSION_KEYS).unwrap()["keys"][0]["d"]
        .as_str()
        .unwrap()
        .to_owned();
    for (vars, variable) in [
        (
            vec![("ADMISSION_ISSUER", "https://queue.example")],
            "ADMISSION_AUDIENCE",
        ),
        (
            vec![
                ("ADMISSION_ISSUER", "https://queue.example"),
                ("ADMISSION_AUDIENCE", "b"),
            ],
            "ADMISSION_KEYS",
        ),
        (
            vec![
                ("ADMISSION_ISSUER", "http://queue.example"),
                ("ADMISSION_AUDIENCE", "b"),
                ("ADMISSION_KEYS", ADMISSION_KEYS),
            ],
            "ADMISSION_ISSUER",
        ),
        (
            vec![
                ("ADMISSION_ISSUER", "https://queue.example/"),
                ("ADMISSION_AUDIENCE", "b"),
                ("ADMISSION_KEYS", ADMISSION_KEYS),
            ],
            "ADMISSION_ISSUER",
        ),
        (
            vec![
                ("ADMISSION_ISSUER", "https://queue.example"),
                ("ADMISSION_AUDIENCE", "b"),
                ("ADMISSION_KEYS", ADMISSION_KEYS),
                ("ADMISSION_ALGORITHM", "ES256"),
            ],
            "ADMISSION_KEYS",
        ),
        (
            vec![
                ("ADMISSION_ISSUER", "https://queue.example"),
                ("ADMISSION_AUDIENCE", "b"),
                ("ADMISSION_KEYS", ADMISSION_KEYS),
                ("ADMISSION_TTL_SECONDS", "4"),
            ],
            "ADMISSION_TTL_SECONDS",
        ),
        (vec![("ADMISSION_KEYS", ADMISSION_KEYS)], "ADMISSION_KEYS"),
    ] {
        let vars: std::collections::HashMap<String, String> = vars
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let env = lineup::config::Environment::new(move |name| vars.get(name).cloned());
        let err = env.admission().err().expect("refused");
        assert_eq!(err.variable, variable, "{err}");
        assert!(!err.to_string().contains(&d));
    }
}

/// The fixture key set with its key retiring at `at`, and a new key `test-2` signing from
/// `at`: a rotation with two keys live.
fn rotating_at(at: DateTime<Utc>) -> String {
    let mut set: Value = serde_json::from_str(ADMISSION_KEYS).unwrap();
    set["keys"][0]["retiresAt"] = json!(at.to_rfc3339_opts(SecondsFormat::Millis, true));
    let (_, next) = KeySet::generate(Algorithm::RS256, "test-2", at, None).unwrap();
    let next: Value = serde_json::from_str(&next).unwrap();
    set["keys"]
        .as_array_mut()
        .unwrap()
        .push(next["keys"][0].clone());
    set.to_string()
}

/// An issuer signing with `keys` (a private JWK set) for `audience`: what a forger, or
/// lineup with another audience, would sign.
fn signer(keys: &str, audience: &str, issuer: &str) -> Issuer {
    Issuer {
        issuer: issuer.to_owned(),
        audience: audience.to_owned(),
        ttl: Duration::from_secs(60),
        keys: KeySet::parse(keys, Algorithm::RS256, Utc::now()).unwrap(),
    }
}

#[tokio::test]
async fn pyjwt_and_jose_verify_the_admission_against_the_jwks_route_through_a_key_rotation() {
    let verifiers: Vec<Verifier> = Verifier::ALL.into_iter().filter(|v| v.ready()).collect();
    if verifiers.is_empty() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let issuer = format!("http://{addr}");
    // test-1 retires, and test-2 starts signing, three seconds from now.
    let switch = Utc::now() + chrono::Duration::seconds(3);
    let keys = rotating_at(switch);
    let app = TestApp::spawn(&[
        ("ADMISSION_ISSUER", &issuer),
        ("ADMISSION_TTL_SECONDS", "30"),
        ("ADMISSION_KEYS", &keys),
    ])
    .await;
    tokio::spawn(lineup_local::serve(
        listener,
        app.stack.clone(),
        std::future::pending(),
    ));
    put_settings(
        &app,
        "show",
        &json!({ "capacity": 1, "sessionSeconds": 600 }),
    )
    .await;
    let alice = join(&app, "show", "alice").await;
    let before = admission_of(&alice);
    assert_eq!(parts(&before).0["kid"], "test-1");

    // Forgeries and a stale admission, signed for the same buyer's session.
    let queue = QueueId::parse("show").unwrap();
    let user = UserId::parse("alice").unwrap();
    let session = Session {
        queue: &queue,
        user: &user,
        ticket: 1,
        since: Utc::now(),
        until: Utc::now() + chrono::Duration::minutes(10),
    };
    let sign = |keys: &str, audience: &str, at: DateTime<Utc>| {
        signer(keys, audience, &issuer)
            .sign(&session, at)
            .unwrap()
            .unwrap()
    };
    let impostor = STRANGER_KEYS.replace("\"stranger\"", "\"test-1\"");
    let (header, payload) = {
        let mut segments = before.split('.');
        (segments.next().unwrap(), segments.next().unwrap())
    };
    let mut claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    claims["sub"] = json!("mallory");
    let tampered = format!(
        "{header}.{}.{}",
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        before.rsplit('.').next().unwrap()
    );

    // The switch passes while the buyer holds the session: the next poll signs with test-2,
    // and test-1's admission still verifies.
    lineup_tests::sleep((switch - Utc::now()).to_std().unwrap() + Duration::from_millis(300)).await;
    let polled = status(&app, "show", &alice.token()).await;
    let after = admission_of(&polled);
    assert_eq!(parts(&after).0["kid"], "test-2");
    assert!(parts(&after).1["exp"].as_i64() > parts(&before).1["exp"].as_i64());

    let tokens = json!({
        "before": before,
        "after": after,
        "stranger": sign(STRANGER_KEYS, ADMISSION_AUDIENCE, Utc::now()),
        "impostor": sign(&impostor, ADMISSION_AUDIENCE, Utc::now()),
        "audience": sign(ADMISSION_KEYS, "another-api", Utc::now() - chrono::Duration::seconds(5)),
        "expired": sign(ADMISSION_KEYS, ADMISSION_AUDIENCE, Utc::now() - chrono::Duration::seconds(120)),
        "tampered": tampered.clone(),
    });
    let jwks_uri = format!("{issuer}/.well-known/jwks.json");
    for verifier in verifiers {
        let verdicts = verifier
            .verify(&jwks_uri, &issuer, ADMISSION_AUDIENCE, &tokens)
            .await;
        let ok = |name: &str| verdicts[name]["ok"].as_bool() == Some(true);
        let error = |name: &str| verdicts[name]["error"].as_str().unwrap_or("").to_owned();
        assert!(ok("before"), "{verifier:?}: {verdicts}");
        assert!(ok("after"), "{verifier:?}: {verdicts}");
        assert_eq!(verdicts["before"]["kid"], "test-1");
        assert_eq!(verdicts["after"]["kid"], "test-2");
        assert_eq!(verdicts["after"]["claims"]["sub"], "alice");
        assert_eq!(verdicts["after"]["claims"]["qid"], "show");
        let expected = match verifier {
            Verifier::PyJwt => [
                ("stranger", "PyJWKClientError"),
                ("impostor", "InvalidSignatureError"),
                ("audience", "InvalidAudienceError"),
                ("expired", "ExpiredSignatureError"),
                ("tampered", "InvalidSignatureError"),
            ],
            Verifier::Jose => [
                ("stranger", "ERR_JWKS_NO_MATCHING_KEY"),
                ("impostor", "ERR_JWS_SIGNATURE_VERIFICATION_FAILED"),
                ("audience", "ERR_JWT_CLAIM_VALIDATION_FAILED"),
                ("expired", "ERR_JWT_EXPIRED"),
                ("tampered", "ERR_JWS_SIGNATURE_VERIFICATION_FAILED"),
            ],
        };
        for (name, kind) in expected {
            assert!(!ok(name), "{verifier:?} took {name}: {verdicts}");
            assert_eq!(error(name), kind, "{verifier:?} {name}: {verdicts}");
        }
    }

    // The local gateway, standing in for API Gateway's JWT authorizer, agrees.
    for (token, code) in [(&after, 200), (&before, 200), (&tampered, 401)] {
        let bearer = format!("Bearer {token}");
        let (status, _, body) = send_with_headers(
            addr,
            "GET",
            "/queues/show/seats",
            None,
            &[("authorization", &bearer)],
        )
        .await;
        assert_eq!(status, code, "{body}");
    }
    // Both keys are published while test-1's admissions may live.
    let (_, _, jwks) = send_with_headers(addr, "GET", "/.well-known/jwks.json", None, &[]).await;
    let jwks: Value = serde_json::from_str(&jwks).unwrap();
    let kids: Vec<&str> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap())
        .collect();
    assert_eq!(kids, ["test-1", "test-2"]);
}
