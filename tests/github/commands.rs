//! The `/iterate` grammar: where a command counts, what each parses to, the errors people
//! see and permission levels; the parsers never panic on any comment, a
//! `CONTEXT_GAP_REPORT` included (its format is tested in `tests/context.rs`).

use itergate::context::parse_gap_report;
use itergate::github::commands::{parse_comment, Command, CommandError, Permission};
use proptest::prelude::*;

use crate::redact;

fn commands(body: &str) -> Vec<Result<Command, CommandError>> {
    parse_comment(body)
}

fn ok(body: &str) -> Vec<Command> {
    commands(body)
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("{body:?}: {e}")))
        .collect()
}

#[test]
fn each_command_parses() {
    let feedback = |s: &str| Command::Feedback(s.into());
    let cases: Vec<(&str, Command)> = vec![
        ("/iterate", Command::Reevaluate),
        ("/iterate   ", Command::Reevaluate),
        ("/iterate accept", Command::Accept),
        ("/iterate ACCEPT", Command::Accept),
        ("/iterate status", Command::Status),
        ("/iterate help", Command::Help),
        ("/iterate budget 5", Command::Budget(5)),
        ("/iterate budget 100", Command::Budget(100)),
        ("/iterate escalate", Command::Escalate(None)),
        (
            "/iterate escalate the tests are flaky",
            Command::Escalate(Some("the tests are flaky".into())),
        ),
        (
            "/iterate adjust split the parser first",
            Command::Adjust("split the parser first".into()),
        ),
        (
            "/iterate please handle the empty input",
            feedback("please handle the empty input"),
        ),
        (
            "/iterate Fix the `unwrap` in main.rs",
            feedback("Fix the `unwrap` in main.rs"),
        ),
        ("/iterate retry", feedback("retry")),
    ];
    for (body, expected) in cases {
        assert_eq!(ok(body), [expected], "{body:?}");
    }
}

#[test]
fn commands_count_only_at_the_start_of_a_paragraph_line() {
    let not_commands = [
        "> /iterate accept",
        "> quoting you:\n> /iterate accept",
        "```\n/iterate accept\n```",
        "~~~md\n/iterate accept\n~~~",
        "    /iterate accept",
        "[/iterate accept](https://example.com)",
        "please run /iterate accept",
        "`/iterate accept`",
        "<!-- /iterate accept -->",
        "hello <!--\n/iterate accept\n-->",
        "- /iterate accept",
        "1. /iterate accept",
        "# /iterate accept",
        "*/iterate accept*",
        "/iterated accept",
        "/iterate:accept",
        "<details>\n/iterate accept\n</details>",
        "<details><summary>x</summary>\n\n/iterate accept\n\n</details>",
        "<details>\n<summary>notes</summary>\n\n<div>\n\n/iterate budget 100\n\n</div>\n\n</details>",
        "<div align=\"right\">\n\n/iterate accept\n\n</div>",
        "| a |\n| - |\n| /iterate accept |",
        "",
        "no command here",
    ];
    for body in not_commands {
        assert_eq!(commands(body), [], "{body:?} is not a command");
    }
}

#[test]
fn several_commands_and_multi_line_arguments() {
    let body = "Thanks!\n/iterate budget 6\n/iterate adjust use a streaming parser\nand keep memory flat\n\nsome prose\n\n/iterate status";
    assert_eq!(
        ok(body),
        [
            Command::Budget(6),
            Command::Adjust("use a streaming parser\nand keep memory flat".into()),
            Command::Status,
        ]
    );
    let after_quote = "> /iterate accept\n\n/iterate escalate not convinced";
    assert_eq!(
        ok(after_quote),
        [Command::Escalate(Some("not convinced".into()))]
    );
    let after_fence = "```\n/iterate accept\n```\n/iterate help";
    assert_eq!(ok(after_fence), [Command::Help]);
    let crlf = "hi\r\n/iterate accept\r\n";
    assert_eq!(ok(crlf), [Command::Accept]);
    let after_details =
        "<details><summary>x</summary>\n\n/iterate accept\n\n</details>\n\n/iterate status";
    assert_eq!(ok(after_details), [Command::Status]);
    let inline_html = "Some <b>bold</b> text<br>\n/iterate help";
    assert_eq!(ok(inline_html), [Command::Help]);
}

#[test]
fn error_messages_echo_arguments_only_escaped_and_cut() {
    let hostile = "/iterate budget x` @octo-org/admins [login](https://evil.example/login) <img src=x> #12 a/b#3";
    let message = parse_command_error(hostile).expect("an error");
    assert_eq!(commands(hostile).len(), 1);
    for live in ["@octo", "](", "https://", "<img", "#12", "`x`"] {
        assert!(!message.contains(live), "`{live}` in {message}");
    }
    insta::with_settings!({ filters => redact::invisible() }, {
        insta::assert_snapshot!(message, @r"`/iterate budget`: “x\` @[U+2060]octo\-org/admins \[login\]\(https\:[U+2060]//evil…” is not a whole number of iterations");
    });
    assert!(
        parse_command_error("/iterate frobnicate").is_none(),
        "a long unknown word is feedback"
    );
    let unknown = parse_command_error("/iterate #ccept").expect("error");
    insta::with_settings!({ filters => redact::invisible() }, {
        insta::assert_snapshot!(unknown, @r"“/iterate \#[U+2060]ccept” is not a command; did you mean `/iterate accept`? (`/iterate help` lists the commands)");
    });
}

fn parse_command_error(body: &str) -> Option<String> {
    commands(body)
        .into_iter()
        .find_map(|r| r.err())
        .map(|e| e.to_string())
}

#[test]
fn malformed_commands_explain_themselves() {
    let cases: Vec<(&str, CommandError)> = vec![
        ("/iterate budget", CommandError::BudgetMissing),
        (
            "/iterate budget many",
            CommandError::BudgetNotANumber("many".into()),
        ),
        (
            "/iterate budget 0",
            CommandError::BudgetOutOfRange("0".into()),
        ),
        (
            "/iterate budget -3",
            CommandError::BudgetOutOfRange("-3".into()),
        ),
        (
            "/iterate budget 101",
            CommandError::BudgetOutOfRange("101".into()),
        ),
        (
            "/iterate budget 99999999999999999999999",
            CommandError::BudgetOutOfRange("99999999999999999999999".into()),
        ),
        (
            "/iterate budget 5 more",
            CommandError::BudgetNotANumber("5 more".into()),
        ),
        (
            "/iterate budget 2.5",
            CommandError::BudgetNotANumber("2.5".into()),
        ),
        ("/iterate adjust", CommandError::AdjustWithoutGuidance),
        (
            "/iterate accept now please",
            CommandError::TakesNoArguments {
                keyword: "accept".into(),
            },
        ),
        (
            "/iterate acept",
            CommandError::UnknownSubcommand {
                word: "acept".into(),
                suggestion: "accept".into(),
            },
        ),
        (
            "/iterate stauts",
            CommandError::UnknownSubcommand {
                word: "stauts".into(),
                suggestion: "status".into(),
            },
        ),
    ];
    let mut messages = String::new();
    for (body, expected) in cases {
        let parsed = commands(body);
        assert_eq!(parsed, [Err(expected.clone())], "{body:?}");
        messages.push_str(&format!("{body}\n  {expected}\n"));
    }
    insta::assert_snapshot!(messages, @r"
        /iterate budget
          `/iterate budget` needs a number of iterations, e.g. `/iterate budget 5`
        /iterate budget many
          `/iterate budget`: “many” is not a whole number of iterations
        /iterate budget 0
          `/iterate budget`: “0” is not between 1 and 100 iterations
        /iterate budget -3
          `/iterate budget`: “\-3” is not between 1 and 100 iterations
        /iterate budget 101
          `/iterate budget`: “101” is not between 1 and 100 iterations
        /iterate budget 99999999999999999999999
          `/iterate budget`: “99999999999999999999999” is not between 1 and 100 iterations
        /iterate budget 5 more
          `/iterate budget`: “5 more” is not a whole number of iterations
        /iterate budget 2.5
          `/iterate budget`: “2\.5” is not a whole number of iterations
        /iterate adjust
          `/iterate adjust` needs guidance: `/iterate adjust <what to do differently>`
        /iterate accept now please
          `/iterate accept` takes no arguments; to send feedback, write `/iterate` followed by your text
        /iterate acept
          “/iterate acept” is not a command; did you mean `/iterate accept`? (`/iterate help` lists the commands)
        /iterate stauts
          “/iterate stauts” is not a command; did you mean `/iterate status`? (`/iterate help` lists the commands)
        ");
}

#[test]
fn state_changing_commands_are_the_ones_that_need_write_access() {
    let changing = [
        Command::Accept,
        Command::Adjust("x".into()),
        Command::Escalate(None),
        Command::Budget(3),
        Command::Feedback("x".into()),
    ];
    assert!(changing.iter().all(Command::changes_state));
    let reading = [Command::Reevaluate, Command::Status, Command::Help];
    assert!(!reading.iter().any(Command::changes_state));
    let loosening: Vec<&Command> = changing.iter().filter(|c| c.loosens_rules()).collect();
    assert_eq!(
        loosening,
        [
            &Command::Accept,
            &Command::Adjust("x".into()),
            &Command::Budget(3)
        ],
        "what the PR's author may not give"
    );
}

#[test]
fn permission_levels_are_ordered_and_parsed_from_github_values() {
    use Permission::{Admin, Maintain, Read, Triage, Write};
    assert!(
        Admin > Maintain
            && Maintain > Write
            && Write > Triage
            && Triage > Read
            && Read > Permission::None
    );
    assert_eq!(
        Permission::from_github(Some("maintain"), Some("write")),
        Maintain
    );
    assert_eq!(
        Permission::from_github(Some("triage"), Some("read")),
        Triage
    );
    assert_eq!(
        Permission::from_github(Some("custom-reviewer"), Some("write")),
        Write
    );
    assert_eq!(Permission::from_github(None, Some("admin")), Admin);
    assert_eq!(
        Permission::from_github(None, Some("none")),
        Permission::None
    );
    assert_eq!(Permission::from_github(None, None), Permission::None);
    assert_eq!("Write".parse::<Permission>(), Ok(Write));
    let error = "owner".parse::<Permission>().expect_err("not a level");
    insta::assert_snapshot!(error.to_string(), @"`owner` is not a permission level (admin, maintain, write, triage, read, none)");
}

proptest! {
    #[test]
    fn the_parser_never_panics(body in any::<String>()) {
        let _ = parse_comment(&body);
        let _ = parse_gap_report(&body);
    }

    #[test]
    fn markdown_around_commands_never_panics(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("/iterate".to_string()), Just(" accept".to_string()), Just("\n".to_string()),
                Just("> ".to_string()), Just("```".to_string()), Just("<!--".to_string()),
                Just("-->".to_string()), Just("[".to_string()), Just("](u)".to_string()),
                Just("    ".to_string()), Just(" budget ".to_string()), "[0-9a-z ]{0,6}",
                Just("CONTEXT_GAP_REPORT\n".to_string()), Just("NEEDS: a | REASON: b\n".to_string()),
            ],
            0..24,
        )
    ) {
        let body: String = parts.concat();
        for parsed in parse_comment(&body) {
            if let Ok(Command::Budget(n)) = parsed {
                prop_assert!((1..=100).contains(&n));
            }
        }
        let _ = parse_gap_report(&body);
    }

    #[test]
    fn a_quoted_command_is_never_a_command(line in "[a-z /]{0,30}") {
        let body = format!("> /iterate {line}");
        prop_assert_eq!(parse_comment(&body), vec![]);
    }
}
