use super::*;

const A: &str = "1111111111111111111111111111111111111111";
const B: &str = "2222222222222222222222222222222222222222";
const Z: &str = "0000000000000000000000000000000000000000";

fn one(line: &str) -> PushUpdate {
    let mut updates = parse_push_lines(line).expect("parses");
    assert_eq!(updates.len(), 1, "{updates:?}");
    updates.remove(0)
}

#[test]
fn new_branch_has_a_zero_remote_oid() {
    let u = one(&format!("refs/heads/feature {A} refs/heads/feature {Z}\n"));
    assert_eq!(u.kind, PushKind::NewBranch);
    assert_eq!(u.local_ref, "refs/heads/feature");
    assert_eq!(u.local_oid, A);
    assert_eq!(u.remote_ref, "refs/heads/feature");
    assert_eq!(u.remote_oid, Z);
}

#[test]
fn update_of_an_existing_branch() {
    let u = one(&format!("refs/heads/main {A} refs/heads/main {B}"));
    assert_eq!(u.kind, PushKind::Update);
}

#[test]
fn delete_has_a_zero_local_oid() {
    let u = one(&format!("(delete) {Z} refs/heads/old {B}"));
    assert_eq!(u.kind, PushKind::Delete);
    assert_eq!(u.local_ref, "(delete)");
}

#[test]
fn tags_are_recognised_on_either_side() {
    assert_eq!(
        one(&format!("refs/tags/v1 {A} refs/tags/v1 {Z}")).kind,
        PushKind::Tag
    );
    assert_eq!(
        one(&format!("refs/heads/x {A} refs/tags/v2 {Z}")).kind,
        PushKind::Tag
    );
    let deleted_tag = one(&format!("(delete) {Z} refs/tags/v1 {A}"));
    assert_eq!(deleted_tag.kind, PushKind::Delete);
}

#[test]
fn detached_head_and_raw_commits() {
    assert_eq!(
        one(&format!("HEAD {A} refs/heads/topic {Z}")).kind,
        PushKind::DetachedHead
    );
    assert_eq!(
        one(&format!("{A} {A} refs/heads/topic {B}")).kind,
        PushKind::DetachedHead
    );
    assert_eq!(
        one(&format!("refs/remotes/origin/x {A} refs/heads/x {B}")).kind,
        PushKind::DetachedHead
    );
}

#[test]
fn sha256_length_oids_are_accepted_and_zero_checked_by_content() {
    let local = "ab".repeat(32);
    let zero = "0".repeat(64);
    let u = one(&format!("refs/heads/f {local} refs/heads/f {zero}"));
    assert_eq!(u.kind, PushKind::NewBranch);
    assert_eq!(u.local_oid.len(), 64);
    let d = one(&format!("(delete) {zero} refs/heads/f {local}"));
    assert_eq!(d.kind, PushKind::Delete);
    assert!(is_zero_oid(&zero));
    assert!(is_zero_oid(Z));
    assert!(!is_zero_oid(""));
    assert!(!is_zero_oid("000a"));
}

#[test]
fn several_lines_and_blank_lines() {
    let input =
        format!("refs/heads/a {A} refs/heads/a {Z}\r\n\nrefs/heads/b {B} refs/heads/b {A}\n\n");
    let updates = parse_push_lines(&input).expect("parses");
    let kinds: Vec<_> = updates.iter().map(|u| u.kind).collect();
    assert_eq!(kinds, [PushKind::NewBranch, PushKind::Update]);
    assert_eq!(updates[0].remote_oid, Z, "CR is not part of the oid");
    assert!(parse_push_lines("").expect("empty input").is_empty());
}

#[test]
fn malformed_lines_name_their_line_number() {
    let input = format!("refs/heads/a {A} refs/heads/a {Z}\nrefs/heads/b {B} refs/heads/b\n");
    let error = parse_push_lines(&input).expect_err("three fields");
    assert_eq!(error.line(), Some(2));
    assert!(error.to_string().contains("line 2"), "{error}");
    assert!(error.to_string().contains("found 3 field(s)"), "{error}");

    let extra = parse_push_lines(&format!("refs/heads/a {A} refs/heads/a {Z} extra"));
    assert_eq!(extra.expect_err("five fields").line(), Some(1));

    let double_space = parse_push_lines(&format!("refs/heads/a  {A} refs/heads/a {Z}"));
    assert!(double_space.is_err());

    let bad =
        parse_push_lines(&format!("\n\nrefs/heads/a xyz refs/heads/a {Z}")).expect_err("bad oid");
    assert_eq!(bad.line(), Some(3));
    assert!(bad.to_string().contains("`xyz`"), "{bad}");
}

#[test]
fn reader_input_rejects_invalid_utf8_with_line() {
    let mut bytes = format!("refs/heads/a {A} refs/heads/a {Z}\n").into_bytes();
    bytes.extend_from_slice(b"refs/heads/\xff ");
    bytes.extend_from_slice(format!("{A} refs/heads/b {Z}\n").as_bytes());
    let error = read_push_updates(&bytes[..]).expect_err("not utf-8");
    assert_eq!(error.line(), Some(2));
    let ok = read_push_updates(format!("refs/heads/a {A} refs/heads/a {Z}\n").as_bytes())
        .expect("parses");
    assert_eq!(ok.len(), 1);
}
