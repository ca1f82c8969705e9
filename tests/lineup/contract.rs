//! The contracts with the outside: `openapi.yaml`, the template's routes and the handlers'
//! route tables list the same routes, and every listed route is really served; in the
//! template, every payment event that cannot be applied is kept, two stacks can share an
//! account and region, and a deploy can name only a ranking zone the build carries.

use std::collections::BTreeSet;
use std::path::Path;

use lineup_tests::queue::join;
use lineup_tests::{api_request, Reply, TestApp};
use serde_yaml_ng::value::TaggedValue;
use serde_yaml_ng::Value;

fn read_repo_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name);
    std::fs::read_to_string(&path).unwrap()
}

fn read_yaml(name: &str) -> Value {
    serde_yaml_ng::from_str(&read_repo_file(name)).unwrap()
}

fn implemented() -> BTreeSet<(String, String)> {
    let pairs = queue_api::ROUTES
        .iter()
        .map(|r| r.pair())
        .chain(ranking_api::ROUTES.iter().map(|r| r.pair()))
        .chain(coupon_api::ROUTES.iter().map(|r| r.pair()));
    pairs
        .map(|(method, path)| (method.to_string(), path.to_string()))
        .collect()
}

/// docs/http-api.md shows each function's route list as it is, table for table.
#[test]
fn the_docs_show_each_functions_route_list() {
    let docs = read_repo_file("docs/http-api.md");
    for (function, table) in [
        ("queue-api", lineup::http::routes_table(queue_api::ROUTES)),
        (
            "ranking-api",
            lineup::http::routes_table(ranking_api::ROUTES),
        ),
        ("coupon-api", lineup::http::routes_table(coupon_api::ROUTES)),
    ] {
        let heading = format!("### {function}\n\n");
        let at = docs
            .find(&heading)
            .unwrap_or_else(|| panic!("docs/http-api.md has no {heading:?}"));
        let shown = &docs[at + heading.len()..];
        let shown = &shown[..shown.find("\n\n").map_or(shown.len(), |end| end + 1)];
        assert_eq!(shown, table, "docs/http-api.md, {function}");
    }
}

#[test]
fn openapi_lists_exactly_the_implemented_routes() {
    let spec = read_yaml("openapi.yaml");
    let mut documented = BTreeSet::new();
    for (path, item) in spec["paths"].as_mapping().unwrap() {
        for (method, _) in item.as_mapping().unwrap() {
            let method = method.as_str().unwrap();
            if ["get", "put", "post", "delete", "patch", "head", "options"].contains(&method) {
                documented.insert((method.to_uppercase(), path.as_str().unwrap().to_owned()));
            }
        }
    }
    assert_eq!(documented, implemented());
}

/// The template's condition that turns the admission JWT on: an admission issuer (and its
/// keys) are set.
const HAS_ADMISSION: &str = "HasAdmission";

/// The template as CloudFormation deploys it with [`HAS_ADMISSION`] `on` or not: each
/// `Fn::If` on it replaced by its branch (a branch `AWS::NoValue` drops the member), and the
/// resources and outputs under it dropped where it is false. Other conditions stay as written.
fn deployed(template: &Value, on: bool) -> Value {
    let mut out = resolved(template, on).expect("a template");
    for section in ["Resources", "Outputs"] {
        if let Some(items) = out.get_mut(section).and_then(Value::as_mapping_mut) {
            items.retain(|_, item| on || item["Condition"].as_str() != Some(HAS_ADMISSION));
        }
    }
    out
}

/// The three arguments of an `Fn::If` (`!If` or `Fn::If:`) on [`HAS_ADMISSION`].
fn if_admission(value: &Value) -> Option<&[Value]> {
    let arguments = match value {
        Value::Tagged(tagged) if tagged.tag == "If" => &tagged.value,
        Value::Mapping(mapping) if mapping.len() == 1 => mapping.get("Fn::If")?,
        _ => return None,
    };
    let arguments = arguments.as_sequence()?;
    (arguments.len() == 3 && arguments[0].as_str() == Some(HAS_ADMISSION))
        .then_some(arguments.as_slice())
}

fn is_no_value(value: &Value) -> bool {
    match value {
        Value::Tagged(tagged) => {
            tagged.tag == "Ref" && tagged.value.as_str() == Some("AWS::NoValue")
        }
        other => other["Ref"].as_str() == Some("AWS::NoValue"),
    }
}

/// `value` with each `Fn::If` on [`HAS_ADMISSION`] resolved; `None` where it is `AWS::NoValue`.
fn resolved(value: &Value, on: bool) -> Option<Value> {
    if let Some(arguments) = if_admission(value) {
        let branch = &arguments[if on { 1 } else { 2 }];
        return if is_no_value(branch) {
            None
        } else {
            resolved(branch, on)
        };
    }
    Some(match value {
        Value::Mapping(mapping) => Value::Mapping(
            mapping
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), resolved(v, on)?)))
                .collect(),
        ),
        Value::Sequence(items) => {
            Value::Sequence(items.iter().filter_map(|v| resolved(v, on)).collect())
        }
        Value::Tagged(tagged) => Value::Tagged(Box::new(TaggedValue {
            tag: tagged.tag.clone(),
            value: resolved(&tagged.value, on)?,
        })),
        other => other.clone(),
    })
}

/// A route of the template: method, path, and the authorizer it names (`None`: open).
type Route = (String, String, Option<String>);

/// The template's routes: the functions' HttpApi events, and the paths written in the
/// HttpApi's `DefinitionBody` (OpenAPI: the authorizer is the operation's `security`).
fn routes(template: &Value) -> BTreeSet<Route> {
    let mut routes = BTreeSet::new();
    for (_, resource) in template["Resources"].as_mapping().unwrap() {
        let Some(events) = resource["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for (_, event) in events {
            if event["Type"].as_str() == Some("HttpApi") {
                let properties = &event["Properties"];
                routes.insert((
                    properties["Method"].as_str().unwrap().to_uppercase(),
                    properties["Path"].as_str().unwrap().to_owned(),
                    properties
                        .get("Auth")
                        .map(|auth| auth["Authorizer"].as_str().unwrap().to_owned()),
                ));
            }
        }
    }
    let body = &template["Resources"]["HttpApi"]["Properties"]["DefinitionBody"];
    for (path, item) in body["paths"].as_mapping().into_iter().flatten() {
        for (method, operation) in item.as_mapping().unwrap() {
            let authorizer = operation["security"].as_sequence().map(|security| {
                assert_eq!(security.len(), 1, "{path:?} {method:?}: one authorizer");
                let (name, _) = security[0].as_mapping().unwrap().iter().next().unwrap();
                name.as_str().unwrap().to_owned()
            });
            routes.insert((
                method.as_str().unwrap().to_uppercase(),
                path.as_str().unwrap().to_owned(),
                authorizer,
            ));
        }
    }
    routes
}

#[test]
fn the_template_routes_exactly_the_implemented_routes() {
    let template = read_yaml("template.yaml");
    let routed = |on: bool| -> BTreeSet<(String, String)> {
        routes(&deployed(&template, on))
            .into_iter()
            .map(|(method, path, _)| (method, path))
            .collect()
    };
    assert_eq!(routed(true), implemented());
    // Without an admission issuer, all but the sample browse route behind the admission JWT.
    let without: BTreeSet<(String, String)> = implemented()
        .difference(&route_set(&ADMISSION_ROUTES))
        .cloned()
        .collect();
    assert_eq!(routed(false), without);
}

/// `openapi.yaml`, the template's HttpApi routes and the handlers' route tables list the same
/// routes (the two tests above). Here each route is served, and every other method gets 405.
#[tokio::test]
async fn every_listed_route_is_served_and_other_methods_get_405() {
    let app = TestApp::spawn(&[]).await;
    let token = join(&app, "show", "alice").await.token();
    for (method, template) in implemented() {
        let path = filled(&template, &token);
        let reply = app.http(&method, &path, Some(r#"{"userId":"bob"}"#)).await;
        let detail = reply.body["detail"].as_str().unwrap_or_default();
        assert!(
            reply.status != 405 && !detail.starts_with("no route"),
            "{method} {path}: {} {}",
            reply.status,
            reply.body
        );
        app.http("PATCH", &path, Some(r#"{"userId":"bob"}"#))
            .await
            .assert_problem(405);
    }
    // And an unlisted path is not served.
    app.queue_api(api_request("GET", "/queues/show/tokens/x/y", None))
        .await
        .assert_problem(404);
}

/// `template` (a route's path) with each parameter filled in with a valid value, `token` as
/// the token.
pub(crate) fn filled(template: &str, token: &str) -> String {
    template
        .replace("{queueId}", "show")
        .replace("{token}", token)
        .replace("{userId}", "bob")
        .replace("{period}", "daily")
        .replace("{concertId}", "c1")
        .replace("{couponId}", "spring")
        .replace("{poolId}", "main")
        .replace("{lang}", "ja")
        .replace(
            "{asset}",
            if template.starts_with("/rankings") {
                "rankings.js"
            } else {
                "wait.js"
            },
        )
}

/// Every path like `path` with one empty segment: `//` before each segment, each segment
/// emptied, and a trailing slash.
pub(crate) fn with_an_empty_segment(path: &str) -> Vec<String> {
    let parts: Vec<&str> = path.split('/').skip(1).collect();
    let mut paths = vec![format!("{path}/")];
    for i in 0..parts.len() {
        let mut doubled = parts.clone();
        doubled.insert(i, "");
        paths.push(format!("/{}", doubled.join("/")));
        let mut emptied = parts.clone();
        emptied[i] = "";
        paths.push(format!("/{}", emptied.join("/")));
    }
    paths.sort();
    paths.dedup();
    paths
}

/// Whether `path` got the 404 problem of a path no route matches; if not, what it got.
pub(crate) fn no_route_or(
    method: &str,
    path: &str,
    status: u16,
    content_type: &str,
    body: &str,
) -> Result<(), String> {
    let problem: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let no_route = status == 404
        && content_type.starts_with("application/problem+json")
        && problem["detail"]
            .as_str()
            .is_some_and(|detail| detail.starts_with("no route"));
    match no_route {
        true => Ok(()),
        false => Err(format!(
            "{method} {path}: {status} {content_type} {body:.120}"
        )),
    }
}

/// An empty segment (`//`) anywhere, or a trailing slash, matches no route: every route of
/// every API, sent as API Gateway sends it, answers the 404 problem of no route (never a 400
/// for an empty id, a 405, or another route's answer).
#[tokio::test]
async fn an_empty_segment_or_a_trailing_slash_matches_no_route() {
    let app = TestApp::spawn(&[]).await;
    let token = join(&app, "show", "alice").await.token();
    let (mut tried, mut wrong) = (0, Vec::new());
    for (method, template) in implemented() {
        for path in with_an_empty_segment(&filled(&template, &token)) {
            // To the function that owns the route, as API Gateway would send it.
            let request = api_request(&method, &path, Some(r#"{"userId":"bob"}"#));
            let reply = if template.starts_with("/rankings") {
                let response = ranking_api::handle(request, &app.stack.ranking_api).await;
                Reply::from(response.expect("infallible"))
            } else if template.starts_with("/coupons") {
                app.coupon_api(request).await
            } else {
                app.queue_api(request).await
            };
            let body = reply.body.to_string();
            wrong.extend(
                no_route_or(&method, &path, reply.status, &reply.content_type, &body).err(),
            );
            tried += 1;
        }
    }
    assert_every_path_matched_no_route(tried, &wrong);
}

/// Every one of `tried` paths (more than 50) answered no route: `wrong` lists those that did not.
pub(crate) fn assert_every_path_matched_no_route(tried: usize, wrong: &[String]) {
    assert!(
        wrong.is_empty(),
        "{} of {tried} paths:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(tried > 50, "{tried} paths");
}

/// `!GetAtt X.Arn` as written in the template, or anything else as YAML.
fn get_att(value: &Value) -> String {
    match value {
        Value::Tagged(tagged) => format!("{} {}", tagged.tag, tagged.value.as_str().unwrap_or("?")),
        other => format!("{other:?}"),
    }
}

#[test]
fn every_payment_event_that_cannot_be_applied_ends_in_the_dead_letter_queue() {
    let template = read_yaml("template.yaml");
    let resources = &template["Resources"];
    let dead_letters = "!GetAtt EventApplierDeadLetterQueue.Arn";
    let updater = &resources["EventApplierFunction"]["Properties"];
    // EventBridge could not invoke the function.
    let rule = &updater["Events"]["PaymentEvents"]["Properties"];
    assert_eq!(get_att(&rule["DeadLetterConfig"]["Arn"]), dead_letters);
    // Lambda accepted the event, and the function failed it on every attempt.
    assert_eq!(updater["DeadLetterQueue"]["Type"].as_str(), Some("SQS"));
    assert_eq!(
        get_att(&updater["DeadLetterQueue"]["TargetArn"]),
        dead_letters
    );
    // The SQS buffer received it too often.
    let redrive = &resources["PaymentEventsQueue"]["Properties"]["RedrivePolicy"];
    assert_eq!(get_att(&redrive["deadLetterTargetArn"]), dead_letters);
    // And the function may read the dead letters back, to replay them.
    let policies = format!("{:?}", updater["Policies"]);
    assert!(
        policies.contains("EventApplierDeadLetterQueue.QueueName"),
        "{policies}"
    );
}

#[test]
fn the_queues_the_event_applier_reads_hide_a_message_for_six_of_its_timeouts() {
    let template = read_yaml("template.yaml");
    let resources = &template["Resources"];
    let timeout = resources["EventApplierFunction"]["Properties"]["Timeout"]
        .as_u64()
        .unwrap();
    for queue in ["PaymentEventsQueue", "EventApplierDeadLetterQueue"] {
        let visibility = resources[queue]["Properties"]["VisibilityTimeout"]
            .as_u64()
            .unwrap_or(30);
        assert!(visibility >= 6 * timeout, "{queue}: {visibility} s");
    }
}

#[test]
fn every_name_that_must_be_unique_in_the_account_comes_from_the_stack_name() {
    // Properties that name a resource account- and region-wide; a fixed value would make a
    // second stack (staging beside production) fail to create.
    const NAMES: [&str; 9] = [
        "UserId",
        "UserGroupId",
        "ServerlessCacheName",
        "ReplicationGroupId",
        "CacheSubnetGroupName",
        "FunctionName",
        "QueueName",
        "RoleName",
        "Name",
    ];
    let template = read_yaml("template.yaml");
    let mut named = 0;
    for (resource, body) in template["Resources"].as_mapping().unwrap() {
        for property in NAMES {
            let Some(value) = body["Properties"].get(property) else {
                continue;
            };
            let written = get_att(value);
            if written.starts_with("!Ref ") || written.starts_with("!GetAtt ") {
                continue; // a reference to a resource named here
            }
            named += 1;
            assert!(
                written.starts_with("!Sub ") && written.contains("${AWS::StackName}"),
                "{resource:?}.{property} is {written}"
            );
        }
    }
    // The cache, its two users and their group.
    assert!(named >= 4, "{named} names found");
}

/// `RankingTimeZone` offers exactly the zones `.cargo/config.toml` has chrono-tz keep, and
/// this build has each of them, so no deploy can name a zone that would stop the ranking
/// functions at start-up, and no zone is carried that a deploy cannot name.
#[test]
fn the_template_offers_exactly_the_ranking_zones_the_build_carries() {
    let parameter = &read_yaml("template.yaml")["Parameters"]["RankingTimeZone"];
    let offered: BTreeSet<&str> = parameter["AllowedValues"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|zone| zone.as_str().unwrap())
        .collect();
    assert!(offered.contains(parameter["Default"].as_str().unwrap()));

    let config: toml::Table = toml::from_str(&read_repo_file(".cargo/config.toml")).unwrap();
    let filter = config["env"]["CHRONO_TZ_TIMEZONE_FILTER"].as_str().unwrap();
    let filter = regex::Regex::new(filter).unwrap();
    let carried: BTreeSet<&str> = chrono_tz::TZ_VARIANTS
        .iter()
        .map(|zone| zone.name())
        .filter(|name| filter.is_match(name))
        .collect();
    assert_eq!(offered, carried);
}

/// The spec's languages are the pages' (`pages::LANGUAGES`), in the same order.
#[test]
fn openapi_lists_exactly_the_pages_languages() {
    let spec = read_yaml("openapi.yaml");
    let documented: Vec<&str> = spec["components"]["parameters"]["Lang"]["schema"]["enum"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|lang| lang.as_str().unwrap())
        .collect();
    let served: Vec<&str> = lineup::pages::LANGUAGES
        .iter()
        .map(|(lang, _)| *lang)
        .collect();
    assert_eq!(documented, served);
}

/// The routes where the caller is a buyer. In AWS a buyer is who a verified JWT says, so
/// API Gateway checks the JWT before the function runs.
const BUYER_ROUTES: [(&str, &str); 6] = [
    ("GET", "/queues/{queueId}/challenge"),
    ("GET", "/coupons/{couponId}/challenge"),
    ("POST", "/queues/{queueId}/tokens"),
    ("POST", "/coupons/{couponId}/claims"),
    ("GET", "/queues/{queueId}/tokens/{token}"),
    ("DELETE", "/queues/{queueId}/tokens/{token}"),
];

/// The template's JWT authorizers, `(name, issuer, audiences, identity source)` as written:
/// SAM's (the HttpApi's `Auth`), and those in its `DefinitionBody` (OpenAPI).
fn jwt_authorizers(template: &Value) -> Vec<(String, String, Vec<String>, String)> {
    let api = &template["Resources"]["HttpApi"]["Properties"];
    let sam = api["Auth"]["Authorizers"]
        .as_mapping()
        .into_iter()
        .flatten()
        .filter(|(_, a)| a.get("JwtConfiguration").is_some())
        .map(|(name, a)| (name, &a["JwtConfiguration"], &a["IdentitySource"]));
    let openapi = api["DefinitionBody"]["components"]["securitySchemes"]
        .as_mapping()
        .into_iter()
        .flatten()
        .map(|(name, scheme)| (name, &scheme["x-amazon-apigateway-authorizer"]))
        .filter(|(_, a)| a["type"].as_str() == Some("jwt"))
        .map(|(name, a)| (name, &a["jwtConfiguration"], &a["identitySource"]));
    sam.chain(openapi)
        .map(|(name, jwt, source)| {
            (
                name.as_str().unwrap().to_owned(),
                get_att(&jwt["issuer"]),
                jwt["audience"]
                    .as_sequence()
                    .unwrap()
                    .iter()
                    .map(get_att)
                    .collect(),
                source.as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The template's JWT authorizer whose issuer is the parameter `issuer`: its name, after
/// checking that it takes the token from the Authorization header for the audience in the
/// parameter `audience`, and only that one; `None` where the template has none.
fn jwt_authorizer(template: &Value, issuer: &str, audience: &str) -> Option<String> {
    for parameter in [issuer, audience] {
        assert!(
            template["Parameters"].get(parameter).is_some(),
            "the template takes {parameter}"
        );
    }
    let (name, _, audiences, source) = jwt_authorizers(template)
        .into_iter()
        .find(|(_, by, _, _)| *by == format!("!Ref {issuer}"))?;
    assert_eq!(audiences, [format!("!Ref {audience}")]);
    assert_eq!(source, "$request.header.Authorization");
    Some(name)
}

/// The template's HttpApi routes whose authorizer is `auth` (`None`: routes without one).
fn routes_with_auth(template: &Value, auth: Option<&str>) -> BTreeSet<(String, String)> {
    routes(template)
        .into_iter()
        .filter(|(_, _, authorizer)| authorizer.as_deref() == auth)
        .map(|(method, path, _)| (method, path))
        .collect()
}

fn route_set(routes: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    routes
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect()
}

/// Checks that the spec's security scheme `name` (named as the template's authorizer) is a
/// bearer JWT, and that each of `routes` requires it and documents `statuses`.
fn spec_requires_jwt(spec: &Value, name: &str, routes: &[(&str, &str)], statuses: &[&str]) {
    let scheme = &spec["components"]["securitySchemes"][name];
    assert_eq!(scheme["type"].as_str(), Some("http"), "{name}");
    assert_eq!(scheme["scheme"].as_str(), Some("bearer"), "{name}");
    assert_eq!(scheme["bearerFormat"].as_str(), Some("JWT"), "{name}");
    for (method, path) in routes {
        let operation = &spec["paths"][*path][method.to_lowercase().as_str()];
        let security = operation["security"].as_sequence().unwrap();
        assert!(
            security.iter().any(|s| s.get(name).is_some()),
            "{method} {path}: {security:?}"
        );
        for status in statuses {
            assert!(
                operation["responses"].get(*status).is_some(),
                "{method} {path} documents {status}"
            );
        }
    }
}

#[test]
fn the_buyer_routes_need_a_verified_jwt_in_the_template_and_the_spec() {
    let written = read_yaml("template.yaml");
    for on in [true, false] {
        let template = deployed(&written, on);
        let name = jwt_authorizer(&template, "JwtIssuer", "JwtAudience").expect("BuyerJwt");
        assert_eq!(
            routes_with_auth(&template, Some(&name)),
            route_set(&BUYER_ROUTES),
            "exactly the buyer routes check the JWT"
        );
        spec_requires_jwt(&read_yaml("openapi.yaml"), &name, &BUYER_ROUTES, &["401"]);
    }
}

/// The routes behind the admission JWT lineup issues itself, verified by API Gateway
/// against lineup's own JWKS: no Lambda and no Redis per request.
const ADMISSION_ROUTES: [(&str, &str); 1] = [("GET", "/queues/{queueId}/seats")];

/// Where API Gateway and booking APIs fetch the admission issuer's keys: public.
const DISCOVERY_ROUTES: [(&str, &str); 2] = [
    ("GET", "/.well-known/jwks.json"),
    ("GET", "/.well-known/openid-configuration"),
];

#[test]
fn the_browse_route_needs_the_admission_jwt_and_its_keys_are_public() {
    let template = deployed(&read_yaml("template.yaml"), true);
    let name = jwt_authorizer(&template, "AdmissionIssuer", "AdmissionAudience")
        .expect("the admission JWT's authorizer");
    assert_eq!(
        routes_with_auth(&template, Some(&name)),
        route_set(&ADMISSION_ROUTES),
        "exactly the sample browse route checks the admission JWT"
    );
    // No default authorizer: a route without Auth is open.
    let auth = &template["Resources"]["HttpApi"]["Properties"]["Auth"];
    assert!(auth.get("DefaultAuthorizer").is_none(), "{auth:?}");
    let open = routes_with_auth(&template, None);
    for route in route_set(&DISCOVERY_ROUTES) {
        assert!(open.contains(&route), "{route:?} is public");
    }
    // The function signs for the issuer and audience the authorizer trusts, with the keys of
    // the secret it may read.
    let function = &template["Resources"]["QueueApiFunction"]["Properties"];
    let variables = &function["Environment"]["Variables"];
    for (variable, parameter) in [
        ("ADMISSION_ISSUER", "AdmissionIssuer"),
        ("ADMISSION_AUDIENCE", "AdmissionAudience"),
        ("ADMISSION_KEYS_ARN", "AdmissionKeysSecretArn"),
    ] {
        assert_eq!(
            get_att(&variables[variable]),
            format!("!Ref {parameter}"),
            "{variable}"
        );
    }
    let policies = format!("{:?}", function["Policies"]);
    assert!(policies.contains("AdmissionKeysSecretArn"), "{policies}");
    // API Gateway may invoke the function for the browse route, and booking APIs are told
    // where the keys are.
    let permission = &template["Resources"]["QueueApiFunctionSeatsPermission"]["Properties"];
    assert_eq!(permission["Principal"], "apigateway.amazonaws.com");
    assert!(
        get_att(&permission["SourceArn"]).ends_with("/*/GET/queues/*/seats"),
        "{permission:?}"
    );
    assert!(template["Outputs"].get("AdmissionJwksUrl").is_some());

    let spec = read_yaml("openapi.yaml");
    spec_requires_jwt(&spec, &name, &ADMISSION_ROUTES, &["401", "403"]);
    assert!(spec.get("security").is_none(), "no global security");
    for (method, path) in DISCOVERY_ROUTES {
        let operation = &spec["paths"][path][method.to_lowercase().as_str()];
        assert!(operation.get("security").is_none(), "{method} {path}");
        // No issuer configured: 404.
        assert!(
            operation["responses"].get("404").is_some(),
            "{method} {path}"
        );
    }
}

/// A stack deploys without an admission issuer: both its parameters accept empty, and are
/// empty by default; the rule holds them set or empty together. Then the stack has no
/// AdmissionJwt authorizer, no sample browse route behind it, no permission to invoke the
/// function for it, no policy to read the keys' secret, no `ADMISSION_*` variable (so
/// queue-api starts with admission off) and no JWKS output: each carries the condition
/// [`HAS_ADMISSION`]. The discovery routes stay, and answer 404.
#[test]
fn a_stack_without_an_admission_issuer_deploys_with_admission_off() {
    let written = read_yaml("template.yaml");
    let parameters = &written["Parameters"];
    for (parameter, example) in [
        ("AdmissionIssuer", "https://queue.example.com"),
        (
            "AdmissionKeysSecretArn",
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:lineup-admission-AbCdEf",
        ),
    ] {
        let declared = &parameters[parameter];
        assert_eq!(declared["Default"].as_str(), Some(""), "{parameter}");
        let pattern = regex::Regex::new(declared["AllowedPattern"].as_str().unwrap()).unwrap();
        assert!(pattern.is_match(""), "{parameter} accepts empty");
        assert!(pattern.is_match(example), "{parameter} accepts {example}");
        assert!(!pattern.is_match("x"), "{parameter} refuses x");
        // The condition and the rule both read it.
        let condition = format!("{:?}", written["Conditions"][HAS_ADMISSION]);
        assert!(condition.contains(parameter), "{condition}");
        let rule = format!("{:?}", written["Rules"]["AdmissionIssuerAndKeys"]);
        assert!(rule.contains(parameter), "{rule}");
    }

    // What only admission has is written under the condition.
    let api = &written["Resources"]["HttpApi"]["Properties"]["DefinitionBody"];
    let policies = written["Resources"]["QueueApiFunction"]["Properties"]["Policies"]
        .as_sequence()
        .unwrap();
    let conditional = [
        (
            "the AdmissionJwt authorizer",
            &api["components"]["securitySchemes"]["AdmissionJwt"],
        ),
        (
            "the sample browse route",
            &api["paths"]["/queues/{queueId}/seats"]["get"],
        ),
        (
            "the keys' GetSecretValue policy",
            policies
                .iter()
                .find(|p| format!("{p:?}").contains("AdmissionKeysSecretArn"))
                .unwrap(),
        ),
    ];
    for (what, written) in conditional {
        assert!(if_admission(written).is_some(), "{what}: {written:?}");
    }
    for (section, name) in [
        ("Resources", "QueueApiFunctionSeatsPermission"),
        ("Outputs", "AdmissionJwksUrl"),
    ] {
        assert_eq!(
            written[section][name]["Condition"].as_str(),
            Some(HAS_ADMISSION),
            "{name}"
        );
    }

    // Deployed without it.
    let template = deployed(&written, false);
    assert_eq!(
        jwt_authorizer(&template, "AdmissionIssuer", "AdmissionAudience"),
        None
    );
    assert!(
        routes(&template)
            .iter()
            .all(|(_, path, _)| !path.ends_with("/seats")),
        "no browse route"
    );
    let function = &template["Resources"]["QueueApiFunction"]["Properties"];
    let variables = function["Environment"]["Variables"].as_mapping().unwrap();
    let admission: Vec<&str> = variables
        .keys()
        .filter_map(Value::as_str)
        .filter(|name| name.starts_with("ADMISSION_"))
        .collect();
    assert_eq!(
        admission,
        Vec::<&str>::new(),
        "queue-api starts with admission off"
    );
    let policies = format!("{:?}", function["Policies"]);
    assert!(!policies.contains("AdmissionKeysSecretArn"), "{policies}");
    assert!(template["Resources"]
        .get("QueueApiFunctionSeatsPermission")
        .is_none());
    assert!(template["Outputs"].get("AdmissionJwksUrl").is_none());
    let open = routes_with_auth(&template, None);
    for route in route_set(&DISCOVERY_ROUTES) {
        assert!(open.contains(&route), "{route:?} stays, and answers 404");
    }
    // No resource or output of such a stack reads either parameter.
    let used = format!("{:?}{:?}", template["Resources"], template["Outputs"]);
    for parameter in ["AdmissionIssuer", "AdmissionKeysSecretArn"] {
        for reference in [format!("{parameter:?}"), format!("${{{parameter}}}")] {
            assert!(
                !used.contains(&reference),
                "{reference} without {HAS_ADMISSION}"
            );
        }
    }
}

/// The buyer's pages: HTML, script and styles from lineup's own origin under
/// `default-src 'self'`, cacheable; the return URL only from the queue's allow-list; the
/// theme as CSS custom properties; the waiting room's service worker, allowed the page's
/// path as its scope.
#[tokio::test]
async fn the_pages_are_served_under_their_csp_and_redirect_only_where_allowed() {
    let app = TestApp::spawn(&[]).await;
    for (path, content_type) in [
        ("/queues/show/wait", "text/html"),
        ("/queues/show/wait/wait.js", "text/javascript"),
        ("/queues/show/wait/page.css", "text/css"),
        ("/queues/show/wait/theme.css", "text/css"),
        ("/queues/show/wait/worker.js", "text/javascript"),
        ("/rankings", "text/html"),
        ("/rankings/assets/rankings.js", "text/javascript"),
        ("/rankings/assets/page.css", "text/css"),
        ("/rankings/assets/badge.js", "text/javascript"),
        ("/queues/show/wait/i18n/zh-Hant", "application/json"),
        ("/rankings/assets/i18n/ja", "application/json"),
    ] {
        let reply = app.http("GET", path, None).await;
        assert_eq!(reply.status, 200, "{path}: {:?}", reply.body);
        assert!(reply.content_type.starts_with(content_type), "{path}");
        let header = |name: &str| {
            reply
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        assert!(
            header("cache-control").starts_with("public, max-age="),
            "{path}"
        );
        assert!(header("content-security-policy").starts_with("default-src 'self';"));
        assert_eq!(header("x-content-type-options"), "nosniff");
        let scope = header("service-worker-allowed");
        match path.ends_with("/worker.js") {
            // Resolved against the worker's URL: /queues/show/wait, the page.
            true => assert_eq!(scope, "../wait"),
            false => assert_eq!(scope, "", "{path}"),
        }
    }
    // The JSON board beside the page still answers JSON.
    let board = app.http("GET", "/rankings/daily", None).await;
    assert_eq!(board.content_type, "application/json");
    app.http("GET", "/rankings/assets/other.js", None)
        .await
        .assert_problem(404);
    // A string table is one language's, by its exact tag; a page maps the browser's.
    let table = app.http("GET", "/rankings/assets/i18n/ja", None).await;
    assert_eq!(table.body["lang.name"], "日本語");
    assert_eq!(table.body["wait.title"], "待機室");
    for unknown in ["zh-TW", "zh", "fr", "JA"] {
        app.http("GET", &format!("/rankings/assets/i18n/{unknown}"), None)
            .await
            .assert_problem(404);
        app.http("GET", &format!("/queues/show/wait/i18n/{unknown}"), None)
            .await
            .assert_problem(404);
    }
    app.http("GET", "/queues/bad%20id/wait/i18n/ja", None)
        .await
        .assert_problem(400);

    let change = r##"{"page": {"theme": {"accent": "#aa0000", "logoUrl": "https://cdn.example.com/logo.png"},
        "returnUrls": ["https://tickets.example.com/book/"]}}"##;
    assert_eq!(
        app.http("PUT", "/queues/show/settings", Some(change))
            .await
            .status,
        200
    );
    let allowed = app
        .http(
            "GET",
            "/queues/show/wait?return=https%3A%2F%2Ftickets.example.com%2Fbook%2F42",
            None,
        )
        .await;
    assert_eq!(allowed.status, 200);
    let html = allowed.body.as_str().unwrap_or_default();
    assert!(
        html.contains(r#"data-return="https://tickets.example.com/book/42""#),
        "{html}"
    );
    assert!(html.contains(r#"<img src="https://cdn.example.com/logo.png""#));
    let csp = allowed.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("img-src 'self' https://cdn.example.com;"),
        "{csp}"
    );
    for refused in [
        "https%3A%2F%2Fevil.example.net%2Fbook%2F",
        "https%3A%2F%2Ftickets.example.com.evil.net%2Fbook%2F",
        "https%3A%2F%2Ftickets.example.com%2Fadmin",
    ] {
        app.http("GET", &format!("/queues/show/wait?return={refused}"), None)
            .await
            .assert_problem(400);
    }
    let theme = app.http("GET", "/queues/show/wait/theme.css", None).await;
    assert!(theme
        .body
        .as_str()
        .unwrap_or_default()
        .contains("--lineup-accent: #aa0000;"));
    app.http(
        "PUT",
        "/queues/show/settings",
        Some(r#"{"page": {"theme": {"accent": "red;}"}}}"#),
    )
    .await
    .assert_problem(400);
}
