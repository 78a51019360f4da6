//! Command-line definitions (clap derive). Parsing only; the work is in `commands`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const ABOUT: &str = "Score every commit of a branch or pull request as one iteration of the \
work, and decide: accept it, iterate again (with a revision prompt an agent can act on), or \
call a human.";

const AFTER_HELP: &str = "\
Examples:
  itergate run                                        score HEAD as the next iteration and decide
  itergate hook install                               do that on every git push
  itergate accept good enough for the release         a person accepts the branch's latest iteration
  itergate decide --history examples/history.yml      decide from a recorded history
  itergate analytics --history examples/history.yml   quality over iterations, as a chart
  itergate analytics --history h.json --format csv    export for a spreadsheet

Configuration is read from .itergate.yml (or .github/itergate.yml) in the repository;
`itergate config --default` prints every key with its default and what it means.";

#[derive(Debug, Parser)]
#[command(
    name = "itergate",
    version = env!("ITERGATE_LONG_VERSION"),
    about = ABOUT,
    after_help = format!("{AFTER_HELP}\n\n{}", crate::app::exit::table())
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Run as if started in DIR (like `git -C`).
    #[arg(short = 'C', value_name = "DIR", global = true)]
    pub directory: Option<PathBuf>,
    /// Configuration file to use instead of the repository's .itergate.yml.
    #[arg(long, value_name = "FILE", global = true, env = "ITERGATE_CONFIG")]
    pub config: Option<PathBuf>,
    /// When to colour the output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true, env = "ITERGATE_COLOR")]
    pub color: ColorChoice,
    /// More log output (-v info, -vv debug, -vvv trace) on stderr.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Only errors on stderr.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// At most N check commands at once, the base's and HEAD's together (default: the
    /// number of cores), the slowest of the last run first. With 1, the base's checks wait
    /// for HEAD's.
    #[arg(short = 'j', long, value_name = "N", global = true, env = "ITERGATE_JOBS",
          value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl GlobalArgs {
    /// The app layer's settings: it knows no CLI.
    pub fn settings(&self) -> crate::app::Settings {
        crate::app::Settings {
            directory: self.directory.clone(),
            config: self.config.clone(),
            color: match self.color {
                ColorChoice::Auto => crate::app::Color::Auto,
                ColorChoice::Always => crate::app::Color::Always,
                ColorChoice::Never => crate::app::Color::Never,
            },
            jobs: self.jobs.map(usize::from),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decide whether a task needs another iteration, from its recorded history.
    ///
    /// The history is a JSON or YAML list of iteration records, oldest first (see
    /// examples/history.yml). Prints the decision: the recommendation (iterate, accept,
    /// escalate, abort), the triggers, the strategy, the budget and the next steps.
    Decide(DecideArgs),
    /// Show quality over iterations, or export it as JSON or CSV.
    ///
    /// A bar per iteration, the deltas, the stopping reason and the per-dimension breakdown.
    Analytics(AnalyticsArgs),
    /// Score a commit against its base and print its iteration record.
    ///
    /// Runs the configured checks (or the auto-detected ones) on it and on the merge-base,
    /// and reads their reports and the commit's trailers. Only what the change did counts
    /// (`scoring.scope`).
    ///
    /// Every commit is checked in a temporary worktree of exactly that commit; your work
    /// tree is never touched. A tree already checked with the same checks is not checked again
    /// (--rescore does). With --report, existing reports are read and nothing is run.
    Score(ScoreArgs),
    /// Write a commented .itergate.yml for the toolchain detected here.
    Init(InitArgs),
    /// Score HEAD as the next iteration of the current branch, record it and decide
    ///
    /// Prints what to do next; the revision prompt goes to .git/itergate/revision-prompt.md.
    /// Works with no configuration: the checks are detected from the toolchain. A tree
    /// already checked with the same checks is not checked again; the change is judged
    /// against the base every time. A check that cannot run (command not found, no report)
    /// records nothing and exits with status 3.
    ///
    /// Examples:
    ///   itergate run              # check HEAD, decide, write the revision prompt
    ///   itergate run --rescore    # the environment changed: run the checks again
    #[command(verbatim_doc_comment)]
    Run(RunArgs),
    /// Drive a coding agent on the branch until its work is accepted or needs a person
    ///
    /// Each iteration starts the agent afresh with the prompt (the task, then the revision
    /// prompt), commits what it left as one iteration, runs the checks and decides.
    /// Exit 0 accepted, 20 escalated or out of budget, 30 aborted, 130 on Ctrl-C.
    ///
    ///   itergate loop --agent claude --agent-args "--permission-mode acceptEdits" \
    ///       --task "Make the failing parser tests pass"
    ///   itergate loop --agent "./my-agent.sh {prompt_file}" --task-file TASK.md
    ///   itergate loop --agent codex --agent-args "--sandbox workspace-write" \
    ///       --task-file TASK.md --format json      # JSON-lines events for a dashboard
    ///
    /// Presets: claude, codex, aider, gemini, opencode, goose. None is given a flag that
    /// lets it act without asking: add the one you want with --agent-args.
    #[command(verbatim_doc_comment)]
    Loop(LoopArgs),
    /// The current branch's decision from its recorded history; runs nothing.
    Status(DecisionOutput),
    /// Print the current revision prompt for the branch (for an agent to act on).
    Prompt,
    /// Accept the branch's latest recorded iteration as it is (`/iterate accept`).
    ///
    /// Remaining issues included. A new commit clears it.
    /// Recorded in git notes with the branch's history (it travels with `itergate notes
    /// push`), with your `git config user.name`.
    Accept(ReasonArgs),
    /// Call a human on the branch's latest recorded iteration (`/iterate escalate`).
    ///
    /// A new commit clears it.
    Escalate(ReasonArgs),
    /// Change the approach: guidance for the revision prompt (`/iterate adjust`).
    ///
    /// The revision count starts again after the latest recorded iteration.
    Adjust(TextArgs),
    /// Feedback quoted in the next revision prompt (`/iterate <feedback>`).
    ///
    /// Quoted as explicit feedback. A new commit answers it.
    Feedback(TextArgs),
    /// Allow up to N iterations on the branch (`/iterate budget N`).
    ///
    /// Instead of `iteration_limits.max`; it stays until another `itergate budget`.
    Budget(BudgetArgs),
    /// Answer an agent's CONTEXT_GAP_REPORT with exactly what it asks for
    ///
    /// The answer is a CONTEXT_DELIVERY, read at the branch's latest recorded iteration.
    ///
    /// The revision prompt is round 0. An agent that lacks something writes a report:
    ///
    ///   CONTEXT_GAP_REPORT
    ///   ------------------
    ///   NEEDS: src/parser.rs:40-80 | REASON: the failing test calls it | ALTERNATIVE: I can stub it
    ///   NEEDS: check tests | REASON: which assertion failed | ALTERNATIVE: none — required
    ///   READY_TO_EXECUTE: false
    ///
    /// A NEEDS item is a file (`path`, `path:START-END`), a directory (`dir/`) or glob (file
    /// names only), or a concept: `check NAME` (its full failure output), `test ID` (its
    /// assertion and source), `config`, `decision` (the reasoning) or `diff` (the
    /// iteration's change). Files are read from the iteration's commit, never from the work
    /// tree. Holdout checks (`aggregate_only`) and files matching `context.deny` are never
    /// delivered. Malformed lines are listed by number, not guessed at.
    ///
    /// Rounds are counted per iteration in the branch's notes: rounds before
    /// `context.max_rounds` (3) get a delivery; from then on the answer is "Execute with the
    /// context available. Document any assumptions made in your result." An item marked
    /// `none — required` that cannot be provided escalates the branch to a human.
    ///
    /// Examples:
    ///   itergate context gap.txt              # answer the report in gap.txt
    ///   agent-output | itergate context       # read it from standard input
    ///   itergate context --format json gap.txt
    #[command(verbatim_doc_comment)]
    Context(ContextArgs),
    /// Install, remove or run the git pre-push hook.
    #[command(subcommand)]
    Hook(HookCommand),
    /// Share the recorded history (refs/notes/itergate) with a remote.
    #[command(subcommand)]
    Notes(NotesCommand),
    /// Print the configuration in force here, its defaults, reference or schema.
    ///
    /// YAML; with --default every key with its default and what it means (a starting point
    /// for .itergate.yml), with --reference every key as a Markdown table, or with --schema
    /// its JSON Schema.
    Config(ConfigArgs),
    /// Print a shell completion script (bash, zsh, fish).
    ///
    /// `itergate completions bash > /etc/bash_completion.d/itergate`,
    /// `itergate completions zsh > "${fpath[1]}/_itergate"`, `itergate completions fish`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff).
    ///
    /// `itergate man > itergate.1; man ./itergate.1`.
    Man,
    /// Run as a GitHub Actions step on a pull request.
    ///
    /// Scores the pull request's head as its next iteration and updates its sticky comment,
    /// or answers `/iterate` commands and reviews.
    ///
    /// Reads the event from GITHUB_EVENT_NAME / GITHUB_EVENT_PATH; handles pull_request,
    /// issue_comment, pull_request_review and workflow_run (the fork-safe path).
    Ci(CiArgs),
    /// Run the GitHub App: every pull request's loop, from webhooks.
    ///
    /// It keeps the sticky comment, the label, `/iterate` commands and the `itergate` check
    /// run, and never runs pull-request code.
    ///
    /// Each delivery's signature is verified and the delivery is committed to the database
    /// before it is acknowledged (202; a delivery seen before gets 200). Workers then apply
    /// it: scores come from the iteration record the PR's workflow uploaded (`itergate ci
    /// --score-only` in a job that uploads `itergate-record/`), commands and reviews as in
    /// the Actions mode, the configuration from the PR's base commit. `/healthz` and
    /// `/readyz` are served beside the webhook; `/metrics` (Prometheus) only on
    /// --metrics-listen. SIGTERM stops
    /// accepting, lets running jobs finish (up to --drain-seconds) and leaves the rest
    /// queued for the next start.
    #[command(after_help = SERVE_AFTER_HELP)]
    Serve(ServeArgs),
    /// Runs a command in the agent sandbox (how `itergate loop` starts its agent).
    #[command(hide = true)]
    SandboxExec(SandboxExecArgs),
}

impl Command {
    /// The subcommand's name, as typed (`run`, `loop`): what a command's log span says.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Decide(_) => "decide",
            Command::Analytics(_) => "analytics",
            Command::Score(_) => "score",
            Command::Init(_) => "init",
            Command::Run(_) => "run",
            Command::Loop(_) => "loop",
            Command::Status(_) => "status",
            Command::Prompt => "prompt",
            Command::Accept(_) => "accept",
            Command::Escalate(_) => "escalate",
            Command::Adjust(_) => "adjust",
            Command::Feedback(_) => "feedback",
            Command::Budget(_) => "budget",
            Command::Context(_) => "context",
            Command::Hook(_) => "hook",
            Command::Notes(_) => "notes",
            Command::Config(_) => "config",
            Command::Completions { .. } => "completions",
            Command::Man => "man",
            Command::Ci(_) => "ci",
            Command::Serve(_) => "serve",
            Command::SandboxExec(_) => "sandbox-exec",
        }
    }
}

const SERVE_AFTER_HELP: &str = "\
Example (see app-manifest.json to register the App in one step):
  ITERGATE_APP_ID=123456 ITERGATE_PRIVATE_KEY_PATH=app.pem \\
  ITERGATE_WEBHOOK_SECRET=... itergate serve --listen 0.0.0.0:3000

GITHUB_API_URL selects GitHub Enterprise Server (https://HOST/api/v3).";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(
        long,
        env = "ITERGATE_LISTEN",
        default_value = "127.0.0.1:3000",
        value_name = "ADDR"
    )]
    pub listen: String,
    /// The inbox and the job queue: a SQLite file (created if missing; one process) or a
    /// PostgreSQL URL, postgres://USER:PASSWORD@HOST:5432/DB, shared by several replicas.
    /// Without it, DATABASE_URL, then itergate.db.
    #[arg(
        long,
        env = "ITERGATE_DATABASE",
        hide_env_values = true,
        value_name = "PATH|URL"
    )]
    pub database: Option<String>,
    /// Connections to the database this process opens at most [default: 4 on SQLite;
    /// --workers + 4 on PostgreSQL].
    #[arg(long, env = "ITERGATE_DATABASE_CONNECTIONS", value_name = "N")]
    pub database_connections: Option<u32>,
    /// The path GitHub posts webhooks to.
    #[arg(long, default_value = "/webhook", value_name = "PATH")]
    pub webhook_path: String,
    /// The App's id (from its settings page).
    #[arg(long, env = "ITERGATE_APP_ID", value_name = "ID")]
    pub app_id: u64,
    /// The App's private key (PEM), as downloaded from its settings page.
    #[arg(long, env = "ITERGATE_PRIVATE_KEY_PATH", value_name = "FILE")]
    pub private_key_path: PathBuf,
    /// The secret the sticky comment's state is signed with. Without it the state key is
    /// derived from the private key, and rotating that key needs
    /// `--previous-private-key` until every pull request's state was written again.
    #[arg(
        long,
        env = "ITERGATE_STATE_SECRET",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub state_secret: Option<String>,
    /// The App's previous private key while rotating it: states it signed still verify.
    #[arg(long, env = "ITERGATE_PREVIOUS_PRIVATE_KEY_PATH", value_name = "FILE")]
    pub previous_private_key: Option<PathBuf>,
    /// The webhook secret; several, comma-separated, while rotating (new,old).
    #[arg(
        long,
        env = "ITERGATE_WEBHOOK_SECRET",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub webhook_secret: String,
    /// Jobs run at once.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub workers: usize,
    /// On SIGTERM, how long running jobs may take to finish before the process exits (they
    /// stay queued and run again on the next start).
    #[arg(long, default_value_t = 20, value_name = "SECONDS")]
    pub drain_seconds: u64,
    /// How long a claimed job is a worker's before another may take it over (renewed every
    /// third of it while it runs; what a crashed replica held runs again after this).
    #[arg(long, default_value_t = 6, value_name = "SECONDS")]
    pub lease_seconds: u64,
    /// When a lease ran out while its worker had a write to GitHub in flight, how long the
    /// job is left alone before another worker takes it over: time for the write to land,
    /// so that it is not made twice (GitHub ends a request it takes over 10 s to serve).
    /// With no write in flight the job is taken over at once.
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    pub takeover_settle_seconds: u64,
    /// How often the App's recent deliveries are checked for ones GitHub could not hand
    /// over (they are redelivered), also done at start; and how long a pull request waits
    /// for CI's record before it is checked against GitHub (then after twice as long each
    /// time, at most 6 hours). Fractions are fine (0.5 is 30 seconds).
    #[arg(long, default_value_t = 5.0, value_name = "MINUTES", value_parser = positive_minutes)]
    pub sweep_minutes: f64,
    /// How long a finished delivery stays in the database before the sweep deletes it.
    /// Until then the same delivery again is answered 200 and not run twice, so it is at
    /// least 3 days: GitHub keeps deliveries, and may redeliver them, for 3 days.
    #[arg(long, env = "ITERGATE_KEEP_DAYS", default_value_t = 7, value_name = "DAYS",
          value_parser = keep_days)]
    pub keep_days: u32,
    /// Content writes (comments, labels, check runs) per installation and minute, under
    /// GitHub's secondary limit of about 80.
    #[arg(long, default_value_t = 60, value_name = "N")]
    pub writes_per_minute: u32,
    /// Connections open at once; over it, the one that waited longest without a request is
    /// closed, or the request in flight longest after a second. Keep it under the process's
    /// open-file limit.
    #[arg(long, default_value_t = crate::serve::limits::MAX_CONNECTIONS, value_name = "N",
          value_parser = clap::value_parser!(usize))]
    pub max_connections: usize,
    /// Connections open at once from one address: one sender cannot take the slots
    /// GitHub's deliveries need. Behind a reverse proxy (every connection from the proxy),
    /// raise it to --max-connections.
    #[arg(long, default_value_t = crate::serve::limits::MAX_CONNECTIONS_PER_PEER,
          value_name = "N", value_parser = clap::value_parser!(usize))]
    pub max_connections_per_peer: usize,
    /// Serve /metrics (Prometheus) and /readyz on this address, e.g. 127.0.0.1:9464.
    /// Without it /metrics is not served at all (never on the port the internet reaches)
    /// and /readyz answers on --listen; /healthz answers on both.
    #[arg(long, env = "ITERGATE_METRICS_LISTEN", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
}

impl ServeArgs {
    /// The server's settings: it knows no CLI.
    pub fn settings(&self) -> crate::serve::Settings {
        crate::serve::Settings {
            listen: self.listen.clone(),
            database: self.database.clone(),
            database_connections: self.database_connections,
            webhook_path: self.webhook_path.clone(),
            app_id: self.app_id,
            private_key_path: self.private_key_path.clone(),
            state_secret: self.state_secret.clone(),
            previous_private_key: self.previous_private_key.clone(),
            webhook_secret: self.webhook_secret.clone(),
            workers: self.workers,
            drain_seconds: self.drain_seconds,
            lease_seconds: self.lease_seconds,
            takeover_settle_seconds: self.takeover_settle_seconds,
            sweep_minutes: self.sweep_minutes,
            keep_days: self.keep_days,
            writes_per_minute: self.writes_per_minute,
            max_connections: self.max_connections,
            max_connections_per_peer: self.max_connections_per_peer,
            metrics_listen: self.metrics_listen.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct CiArgs {
    /// The event that started the workflow.
    #[arg(long, env = "GITHUB_EVENT_NAME", value_name = "NAME")]
    pub event_name: String,
    /// The event's JSON payload.
    #[arg(long, env = "GITHUB_EVENT_PATH", value_name = "FILE")]
    pub event_path: PathBuf,
    /// API token (GITHUB_TOKEN in Actions).
    #[arg(
        long,
        env = "GITHUB_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
    /// Where a fork pull request's record is written, for upload as an artifact.
    #[arg(
        long,
        default_value = "itergate-record/record.json",
        value_name = "FILE"
    )]
    pub record_out: PathBuf,
    /// Write to the pull request even when it comes from a fork (only with a token that is
    /// allowed to; never run untrusted code with a write token).
    #[arg(long)]
    pub write_on_fork: bool,
    /// Score the pull request's head and only write its record to `--record-out`: no write
    /// to GitHub. For the job that runs the PR's code with no write token.
    #[arg(long, conflicts_with = "publish_record")]
    pub score_only: bool,
    /// Publish the record a `--score-only` job of this workflow run wrote (downloaded from
    /// its artifact) instead of scoring: for the job that holds the write token and never
    /// runs the PR's code.
    #[arg(long, value_name = "FILE")]
    pub publish_record: Option<PathBuf>,
    /// The record's SHA-256 as the scoring step output it (`record-digest`): the record
    /// is published only if it is still what itergate wrote.
    #[arg(long, value_name = "HEX", requires = "publish_record")]
    pub record_digest: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Install the pre-push hook (respects core.hooksPath and worktrees). An existing hook
    /// is kept and run first with the same arguments and input.
    Install {
        /// Take the chained-hook slot even if another hook already holds it.
        #[arg(long)]
        force: bool,
    },
    /// Remove the hook and put back the one it chained.
    Uninstall,
    /// Run as git's pre-push hook: reads `<local ref> <local oid> <remote ref> <remote oid>`
    /// lines on stdin. Set ITERGATE_SKIP=1 to skip it once.
    PrePush {
        /// Name of the remote pushed to (under pre-commit: $PRE_COMMIT_REMOTE_NAME).
        #[arg(env = "PRE_COMMIT_REMOTE_NAME")]
        remote: String,
        /// Its URL.
        url: Option<String>,
        /// `--format json`: one Decision Report per pushed branch on stdout, a line each.
        /// `--exit-code`: exit with the most severe recommendation's status (10 iterate, 20
        /// escalate, 30 abort), which git takes as "stop the push" unless all are accepted.
        #[command(flatten)]
        output: DecisionOutput,
    },
}

#[derive(Debug, Subcommand)]
pub enum NotesCommand {
    /// Push refs/notes/itergate to REMOTE.
    Push {
        #[arg(default_value = "origin")]
        remote: String,
    },
    /// Fetch refs/notes/itergate from REMOTE and merge it into the local notes.
    Fetch {
        #[arg(default_value = "origin")]
        remote: String,
    },
}

/// `itergate context [FILE|-]`.
#[derive(Debug, Args)]
pub struct ContextArgs {
    /// The text holding the CONTEXT_GAP_REPORT (an agent's whole answer will do); `-` or
    /// nothing reads standard input.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: PathBuf,
    /// The branch whose iteration the report is about (default: the current branch).
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// `json`: the reply as JSON (items with content or the reason they were refused,
    /// malformed lines, the round, whether a human was called).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}

/// `itergate accept [reason]`, `itergate escalate [reason]`.
#[derive(Debug, Args)]
pub struct ReasonArgs {
    /// The branch to decide on (default: the current branch).
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// Why (optional; the words may be given unquoted).
    #[arg(value_name = "REASON", trailing_var_arg = true)]
    pub reason: Vec<String>,
}

/// `itergate adjust <guidance>`, `itergate feedback <text>`.
#[derive(Debug, Args)]
pub struct TextArgs {
    /// The branch to decide on (default: the current branch).
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// The words (they may be given unquoted).
    #[arg(value_name = "TEXT", required = true, trailing_var_arg = true)]
    pub text: Vec<String>,
}

/// `itergate budget <n>`.
#[derive(Debug, Args)]
pub struct BudgetArgs {
    /// The branch to decide on (default: the current branch).
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// The most iterations the branch may take.
    #[arg(value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: u32,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The documented defaults instead of the configuration in force.
    #[arg(long, conflicts_with_all = ["schema", "reference"])]
    pub default: bool,
    /// The JSON Schema of .itergate.yml (for editors: `# yaml-language-server: $schema=`).
    #[arg(long, conflicts_with = "reference")]
    pub schema: bool,
    /// Every key with its type, default and meaning, as Markdown (generated from the schema).
    #[arg(long)]
    pub reference: bool,
}

#[derive(Debug, Args)]
pub struct SandboxExecArgs {
    /// A directory the command may write, with everything beneath.
    #[arg(long = "write", value_name = "DIR")]
    pub write: Vec<PathBuf>,
    /// A directory inside a writable one that stays read-only.
    #[arg(long = "read-only", value_name = "DIR")]
    pub read_only: Vec<PathBuf>,
    /// A directory the command never sees.
    #[arg(long = "hide", value_name = "DIR")]
    pub hide: Vec<PathBuf>,
    /// The command's TMPDIR.
    #[arg(long = "tmp", value_name = "DIR")]
    pub tmp: Option<PathBuf>,
    /// The command's XDG_CACHE_HOME.
    #[arg(long = "cache", value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct LoopArgs {
    /// A preset (claude, codex, aider, gemini, opencode, goose), or a command run with
    /// `sh -c`: `{prompt_file}` in it names the prompt's file, else the prompt is on stdin.
    #[arg(long, value_name = "PRESET|COMMAND")]
    pub agent: String,
    /// Flags added to a preset's command line, as shell words (`--allowedTools "Edit
    /// Bash(npm test:*)"` is two), such as the permission flag it needs to edit files
    /// unattended.
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub agent_args: Option<String>,
    /// What the agent should do.
    #[arg(long, value_name = "TEXT", conflicts_with = "task_file")]
    pub task: Option<String>,
    /// The task, read from a file.
    #[arg(long, value_name = "FILE")]
    pub task_file: Option<PathBuf>,
    /// The file or module the task starts from, named in the first prompt.
    #[arg(long, value_name = "PATH")]
    pub entry: Option<String>,
    /// Where the task's specification or design is (a path the agent can read).
    #[arg(long, value_name = "PATH")]
    pub spec: Option<String>,
    /// Start with the work: no round 0 asking the agent what it needs (CONTEXT_GAP_REPORT).
    #[arg(long)]
    pub skip_context: bool,
    /// When a budget runs out: leave the branch at the best iteration (the last is kept as
    /// `refs/itergate/last/<branch>`), or at the last.
    #[arg(long, value_enum, default_value_t = OnExhaust::Best)]
    pub on_exhaust: OnExhaust,
    /// The most one agent run may take: 90s, 20m, 1h (default, and the most it may be:
    /// the base's loop.iteration_minutes).
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub iteration_timeout: Option<std::time::Duration>,
    /// `json`: one JSON object per line on stdout (iteration_started, agent_finished,
    /// judged, stopped).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// The tests failing where the loop starts are debt unrelated to the task, not its
    /// targets (by default the task is not done while one of them fails).
    #[arg(long)]
    pub ignore_start_failures: bool,
    /// At most this many iterations (only tightens the base's `iteration_limits.max`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: Option<u32>,
    /// At most this many dollars of the agent's reported spend (only tightens the base's
    /// `budget_limits.spend_usd`).
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// At most this many tokens (only tightens the base's `budget_limits.total_tokens`).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Print the plan (the agent's command line, the checks, the budgets, the targets and
    /// the first prompt) and run the checks on the start; no agent runs, nothing is
    /// committed or recorded.
    #[arg(long)]
    pub dry_run: bool,
    /// Start a new task on this branch from HEAD, though a loop for another task is in
    /// progress here (by default a different `--task` is refused and the same one continues).
    #[arg(long)]
    pub new_task: bool,
    /// Best of N: each iteration starts N fresh agents from the same commit, each in a
    /// worktree of its own (up to --jobs at once), judges each, and keeps the best measured
    /// one (ties: the smaller change); the others stay as refs/itergate/loop/attempts/…, and
    /// what all of them spent counts against the budgets.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub attempts: u32,
    /// What the agent may write: `workspace-write` (the work tree only; never `.git`, the
    /// project's virtualenvs, `node_modules` or the holdouts; Linux with Landlock) or `off`
    /// (whatever you can). Default: the base's `loop.sandbox`, itself `workspace-write`.
    #[arg(long, value_enum, value_name = "MODE")]
    pub sandbox: Option<SandboxArg>,
}

/// `--sandbox`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SandboxArg {
    WorkspaceWrite,
    Off,
}

/// `90s`, `20m`, `1h`: a whole number and its unit.
fn duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| {
        format!("`{text}`: expected a whole number and a unit, such as 90s, 20m or 1h")
    })?;
    let seconds = match unit {
        "s" => n,
        "m" | "" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        _ => return Err(format!("`{text}`: the unit is s, m or h (90s, 20m, 1h)")),
    };
    if seconds == 0 {
        return Err("the timeout must be at least 1s".into());
    }
    Ok(std::time::Duration::from_secs(seconds))
}

/// Where `itergate loop` leaves the branch when a budget runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnExhaust {
    Best,
    Last,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Run the checks again even if this tree was already checked with the same checks
    /// (after fixing the environment, or to re-check a flaky result).
    #[arg(long)]
    pub rescore: bool,
    #[command(flatten)]
    pub output: DecisionOutput,
}

/// How a decision is reported to a program driving itergate.
#[derive(Debug, Clone, Args)]
pub struct DecisionOutput {
    /// `json`: the Decision Report (camelCase, as `decide --format json`) on stdout; the
    /// terminal summary still goes to stderr unless -q.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Exit with the recommendation's status: 0 accept, 10 iterate, 20 escalate, 30 abort
    /// (errors keep theirs: 1, 2, 3), so a loop can branch without parsing text.
    #[arg(long)]
    pub exit_code: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// The commit to score.
    #[arg(long, value_name = "REV", default_value = "HEAD")]
    pub rev: String,
    /// Read an existing report instead of running checks, as FORMAT:PATH (repeatable).
    /// Formats: junit, tap, libtest, lcov, cobertura, clover, sarif, cargo-json,
    /// checkstyle, ruff-json, mypy-json, eslint-json, lizard, go-test-json, go-cover,
    /// go-vet, tsc, jest-json, istanbul-json.
    #[arg(long = "report", value_name = "FORMAT:PATH")]
    pub reports: Vec<String>,
    /// Base branch the task started from (default: the remote's HEAD branch, main, master).
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,
    #[arg(long, value_enum, default_value_t = DecideFormat::Text)]
    pub format: DecideFormat,
    /// Run the checks again even if this tree was already checked with the same checks.
    #[arg(long)]
    pub rescore: bool,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Overwrite an existing .itergate.yml.
    #[arg(long)]
    pub force: bool,
    /// Write the file without the first run of its tests checks (which shows they count
    /// the project's tests).
    #[arg(long)]
    pub no_verify: bool,
}

#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// JSON or YAML list of iteration records, oldest first ("-" reads standard input).
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Name of the task (branch or pull request) in the output.
    #[arg(long, value_name = "ID", default_value = "task")]
    pub task: String,
    /// A record to compare against, e.g. the base branch's score (JSON or YAML).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Decide as of this time (RFC 3339) instead of now; makes output reproducible.
    #[arg(long, value_name = "TIME", env = "ITERGATE_NOW")]
    pub now: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(Debug, Args)]
pub struct DecideArgs {
    #[command(flatten)]
    pub history: HistoryArgs,
    /// Output format: a text summary, or the decision report as YAML or JSON.
    #[arg(long, value_enum, default_value_t = DecideFormat::Text)]
    pub format: DecideFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DecideFormat {
    Text,
    Yaml,
    Json,
}

#[derive(Debug, Args)]
pub struct AnalyticsArgs {
    /// Branch whose recorded history (git notes) to show; default: the current branch.
    /// Ignored with --history.
    pub branch: Option<String>,
    #[command(flatten)]
    pub history: HistoryArgs,
    /// Output format: the text report, or the analytics result as JSON or CSV.
    #[arg(long, value_enum, default_value_t = AnalyticsFormat::Text)]
    pub format: AnalyticsFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnalyticsFormat {
    Text,
    Json,
    Csv,
}

/// A whole number of days, at least GitHub's 3 days of redelivery.
fn keep_days(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(days) if days >= 3 => Ok(days),
        Ok(_) => Err(
            "expected at least 3 days: GitHub may redeliver a delivery for 3 days, and a \
             delivery deleted before would run again"
                .into(),
        ),
        Err(_) => Err(format!("`{text}` is not a whole number of days (e.g. 7)")),
    }
}

/// A positive, finite number of minutes, at least one second.
/// A week: longer than any sweep interval is useful, and within what a `Duration` holds.
const MAX_SWEEP_MINUTES: f64 = 7.0 * 24.0 * 60.0;

fn positive_minutes(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(m) if m.is_finite() && m * 60.0 >= 1.0 && m <= MAX_SWEEP_MINUTES => Ok(m),
        Ok(_) => Err(format!(
            "expected a number of minutes from 1/60 (one second) to {MAX_SWEEP_MINUTES} (a week)"
        )),
        Err(_) => Err(format!(
            "`{text}` is not a number of minutes (e.g. 5 or 0.5)"
        )),
    }
}
