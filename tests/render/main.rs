//! What itergate writes, in one test binary: PR comments, revision prompts on real
//! failures, YAML in prompts, and reports read into records (insta snapshots).

mod comments;
mod loop_prompts;
mod prompt_failures;
mod prompt_yaml;
mod reports;
