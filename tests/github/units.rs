//! The pure parts of the GitHub layer: retry decisions, check-run request bodies and output
//! limits, artifact unzipping, repository names, settings from the environment.

use std::time::Duration;

use http::{HeaderMap, HeaderValue};
use itergate::github::artifact::{extract_file, ArtifactError};
use itergate::github::checks::{
    check_run_bodies, cut_output, Annotation, AnnotationLevel, CheckConclusion, CheckRunSpec,
    CheckState, OUTPUT_LIMIT_CHARS,
};
use itergate::github::forge::{marked_reply, reply_marker, reply_marker_of};
use itergate::github::retry::{classify, classify_answer, RetryPolicy, Verdict};
use itergate::github::{ForgeSettings, RepoName};
use itergate::model::CommitSha;

const NOW: u64 = 1_700_000_000;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, HeaderValue::from_str(value).expect("header value"));
    }
    map
}

#[test]
fn server_errors_back_off_exponentially_up_to_the_attempt_limit() {
    let policy = RetryPolicy::default();
    let none = HeaderMap::new();
    assert_eq!(
        classify(&policy, 502, &none, NOW, 1),
        Verdict::RetryAfter(Duration::from_secs(1))
    );
    assert_eq!(
        classify(&policy, 503, &none, NOW, 2),
        Verdict::RetryAfter(Duration::from_secs(2))
    );
    assert_eq!(classify(&policy, 500, &none, NOW, 4), Verdict::GiveUp(None));
    assert_eq!(
        policy.backoff(30),
        Duration::from_millis(policy.max_delay_ms)
    );
}

#[test]
fn client_errors_are_not_retried_but_rate_limits_are() {
    let policy = RetryPolicy::default();
    for status in [400, 401, 404, 410, 422] {
        assert_eq!(
            classify(&policy, status, &HeaderMap::new(), NOW, 1),
            Verdict::GiveUp(None),
            "{status}"
        );
    }
    assert_eq!(
        classify(&policy, 403, &HeaderMap::new(), NOW, 1),
        Verdict::GiveUp(None),
        "a plain 403 is a permission problem"
    );
    let retry_after = headers(&[("retry-after", "7")]);
    assert_eq!(
        classify(&policy, 403, &retry_after, NOW, 1),
        Verdict::RetryAfter(Duration::from_secs(7))
    );
    assert_eq!(
        classify(&policy, 429, &retry_after, NOW, 1),
        Verdict::RetryAfter(Duration::from_secs(7))
    );
    let reset = (NOW + 30).to_string();
    let primary = headers(&[
        ("x-ratelimit-remaining", "0"),
        ("x-ratelimit-reset", &reset),
    ]);
    assert_eq!(
        classify(&policy, 403, &primary, NOW, 1),
        Verdict::RetryAfter(Duration::from_secs(31))
    );
    let secondary_without_time = HeaderMap::new();
    assert_eq!(
        classify(&policy, 429, &secondary_without_time, NOW, 1),
        Verdict::RetryAfter(Duration::from_millis(policy.secondary_rate_limit_wait_ms))
    );
}

#[test]
fn a_403_that_names_a_secondary_rate_limit_is_retried_without_headers() {
    let policy = RetryPolicy::default();
    let none = HeaderMap::new();
    let secondary = br#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}"#;
    assert_eq!(
        classify_answer(&policy, 403, &none, secondary, NOW, 1),
        Verdict::RetryAfter(Duration::from_secs(60))
    );
    assert_eq!(
        classify_answer(&policy, 403, &none, secondary, NOW, 2),
        Verdict::RetryAfter(Duration::from_secs(120)),
        "longer on each repeat"
    );
    let abuse = br#"{"message":"You have triggered an abuse detection mechanism."}"#;
    assert!(matches!(
        classify_answer(&policy, 403, &none, abuse, NOW, 1),
        Verdict::RetryAfter(_)
    ));
    let forbidden = br#"{"message":"Resource not accessible by integration"}"#;
    assert_eq!(
        classify_answer(&policy, 403, &none, forbidden, NOW, 1),
        Verdict::GiveUp(None)
    );
}

#[test]
fn reply_markers_cannot_end_their_comment() {
    assert_eq!(
        reply_marker("comment-12"),
        "<!-- itergate:reply comment_12 -->"
    );
    assert_eq!(
        reply_marker("x --> <b>"),
        "<!-- itergate:reply x______b_ -->"
    );
    let body = marked_reply("escalation:4", "Calling @team");
    assert_eq!(
        reply_marker_of(&body),
        Some("<!-- itergate:reply escalation:4 -->")
    );
    assert_eq!(reply_marker_of("no marker"), None);
}

#[test]
fn retry_after_may_be_an_http_date_and_a_far_reset_gives_up() {
    let policy = RetryPolicy::default();
    let date = chrono::DateTime::from_timestamp((NOW + 5) as i64, 0)
        .expect("date")
        .to_rfc2822();
    let dated = headers(&[("retry-after", &date)]);
    assert_eq!(
        classify(&policy, 429, &dated, NOW, 1),
        Verdict::RetryAfter(Duration::from_secs(5))
    );
    let far = (NOW + 3_600).to_string();
    let primary = headers(&[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", &far)]);
    match classify(&policy, 403, &primary, NOW, 1) {
        Verdict::GiveUp(Some(note)) => assert!(note.contains("3601s"), "{note}"),
        other => panic!("{other:?}"),
    }
}

fn spec(n: u32) -> CheckRunSpec {
    CheckRunSpec {
        name: "itergate".into(),
        head_sha: CommitSha("f".repeat(40)),
        state: CheckState::Completed(CheckConclusion::Success),
        title: "Accept".into(),
        summary: "s".into(),
        text: Some("t".into()),
        annotations: (0..n)
            .map(|i| Annotation {
                path: "a.rs".into(),
                start_line: 0,
                end_line: 0,
                level: AnnotationLevel::Notice,
                message: format!("m{i}"),
                title: None,
            })
            .collect(),
        details_url: Some("https://ci.example/run/1".into()),
        external_id: None,
    }
}

#[test]
fn check_run_bodies_batch_annotations_and_send_the_state_once() {
    let bodies = check_run_bodies(&spec(101), true);
    let counts: Vec<usize> = bodies
        .iter()
        .map(|b| b["output"]["annotations"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(counts, [50, 50, 1]);
    assert_eq!(bodies[0]["head_sha"], "f".repeat(40));
    assert_eq!(
        (
            bodies[0]["status"].as_str(),
            bodies[0]["conclusion"].as_str()
        ),
        (Some("completed"), Some("success"))
    );
    assert_eq!(
        bodies[0]["output"]["annotations"][0]["start_line"], 1,
        "lines start at 1"
    );
    assert!(bodies[1].get("status").is_none() && bodies[1]["output"].get("text").is_none());
    assert_eq!(bodies[1]["output"]["summary"], "s");
    let update = check_run_bodies(&spec(0), false);
    assert_eq!(update.len(), 1);
    assert!(update[0].get("head_sha").is_none());
    assert!(update[0]["output"].get("annotations").is_none());
}

#[test]
fn outputs_are_cut_to_the_limit_with_a_note() {
    assert_eq!(cut_output("short"), "short");
    let long = "é".repeat(OUTPUT_LIMIT_CHARS + 10);
    let cut = cut_output(&long);
    assert_eq!(cut.chars().count(), OUTPUT_LIMIT_CHARS);
    assert!(cut.ends_with("the full report is in the job log)"));
    let lines = "0123456789\n".repeat(7_000);
    assert!(
        cut_output(&lines).contains("0123456789\n\n…"),
        "cut at a line boundary"
    );
}

fn zip_with(name: &str, content: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    writer
        .start_file(name, zip::write::SimpleFileOptions::default())
        .expect("start");
    writer.write_all(content).expect("write");
    writer.finish().expect("finish").into_inner()
}

#[test]
fn an_archive_listing_too_many_entries_is_refused_before_its_directory_is_read() {
    use std::io::Write;
    let archive = |entries: u64| {
        let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for i in 0..entries {
            writer
                .start_file(format!("e{i}"), zip::write::SimpleFileOptions::default())
                .expect("start");
        }
        writer
            .start_file("record.json", zip::write::SimpleFileOptions::default())
            .expect("start");
        writer.write_all(b"{}").expect("write");
        writer.finish().expect("finish").into_inner()
    };
    let max = itergate::github::artifact::MAX_ENTRIES;
    assert!(extract_file(&archive(max - 1), "record.json", 10).is_ok());
    assert_eq!(
        extract_file(&archive(max), "record.json", 10),
        Err(ArtifactError::TooManyEntries(max + 1))
    );
    // Past 65,534 the end record says 0xFFFF (ZIP64): refused as well.
    let huge = archive(70_000);
    assert!(matches!(
        extract_file(&huge, "record.json", 10),
        Err(ArtifactError::TooManyEntries(_))
    ));
}

#[test]
fn artifact_files_are_read_with_a_size_bound() {
    let zip = zip_with("record.json", &[b'x'; 1000]);
    assert_eq!(
        extract_file(&zip, "record.json", 1000).expect("fits").len(),
        1000
    );
    assert_eq!(
        extract_file(&zip, "record.json", 999),
        Err(ArtifactError::TooLarge {
            name: "record.json".into(),
            limit: 999
        })
    );
    assert_eq!(
        extract_file(&zip, "other.json", 10),
        Err(ArtifactError::Missing("other.json".into()))
    );
    assert!(matches!(
        extract_file(b"not a zip", "x", 10),
        Err(ArtifactError::NotZip(_))
    ));
}

#[test]
fn repository_names_parse_and_compare_like_github() {
    let repo: RepoName = "Octo-Org/widgets.rs".parse().expect("valid");
    assert_eq!(repo.full_name(), "Octo-Org/widgets.rs");
    assert!(repo.same_as(&RepoName::new("octo-org", "WIDGETS.rs")));
    for bad in ["", "no-slash", "a/b/c", "/x", "x/", "a b/c"] {
        assert!(bad.parse::<RepoName>().is_err(), "{bad:?}");
    }
}

#[test]
fn settings_come_from_the_actions_environment_and_never_print_the_token() {
    let vars = |name: &str| match name {
        "GITHUB_API_URL" => Some("https://ghe.example/api/v3".to_string()),
        "GITHUB_TOKEN" => Some("ghs_secret_value".to_string()),
        "GITHUB_ACTIONS" => Some("true".to_string()),
        _ => None,
    };
    let settings = ForgeSettings::from_vars(vars);
    assert_eq!(settings.api_url, "https://ghe.example/api/v3");
    assert_eq!(settings.bot_login.as_deref(), Some("github-actions[bot]"));
    assert!(settings.token.is_some());
    assert!(!format!("{settings:?}").contains("ghs_secret_value"));
    let local = ForgeSettings::from_vars(|_| None);
    assert_eq!(
        (local.api_url.as_str(), local.bot_login),
        ("https://api.github.com", None)
    );
}

#[test]
fn a_rate_limit_says_how_long_it_lasts_whatever_else_the_headers_hold() {
    let policy = RetryPolicy::default();
    let mut headers = HeaderMap::new();
    // A proxy's own header before GitHub's.
    headers.append("x-ratelimit-remaining", HeaderValue::from_static("4999"));
    headers.append("x-ratelimit-remaining", HeaderValue::from_static("0"));
    headers.insert(
        "x-ratelimit-reset",
        HeaderValue::from_str(&(NOW + 1800).to_string()).unwrap(),
    );
    let wait = itergate::github::retry::rate_limit(&policy, 403, &headers, b"{}", NOW, 1);
    assert_eq!(wait, Some(Duration::from_secs(1801)));
    assert!(matches!(
        classify(&policy, 403, &headers, NOW, 1),
        Verdict::GiveUp(Some(_))
    ));
    // Not a rate limit: a 403 for want of permission.
    let none = HeaderMap::new();
    let denied = br#"{"message":"Resource not accessible by integration"}"#;
    assert_eq!(
        itergate::github::retry::rate_limit(&policy, 403, &none, denied, NOW, 1),
        None
    );
}
