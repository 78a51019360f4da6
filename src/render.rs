//! Rendering with minijinja (Jinja2 syntax): the built-in templates are embedded from
//! `templates/`, and a repository may override any of them by name from the directory
//! `templates.dir` names. Locally that directory is read from the work tree; on a pull
//! request the overrides come from the base commit's tree ([`TemplateFile`],
//! [`Renderer::with_files`]), so a PR cannot choose the words itergate publishes about it.
//!
//! Templates receive plain serialisable views; formatting numbers is done in Rust so the
//! templates stay declarative. The `paint` filter colours text for terminals and is the
//! identity when colour is off, so the same template serves both. minijinja rather than
//! tera: the hook renders a summary on every push, and tera's parser alone cost more than
//! a millisecond per template.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context as _, Result};
use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Kwargs, Serde};
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};
use serde::Serialize;

/// Built-in templates: (name, source).
pub const BUILTIN: [(&str, &str); 9] = [
    (
        "decision.txt.j2",
        include_str!("../templates/decision.txt.j2"),
    ),
    (
        "analytics.txt.j2",
        include_str!("../templates/analytics.txt.j2"),
    ),
    (
        "revision-prompt.md.j2",
        include_str!("../templates/revision-prompt.md.j2"),
    ),
    ("comment.md.j2", include_str!("../templates/comment.md.j2")),
    (
        "escalation.md.j2",
        include_str!("../templates/escalation.md.j2"),
    ),
    ("help.md.j2", include_str!("../templates/help.md.j2")),
    (
        "context-delivery.md.j2",
        include_str!("../templates/context-delivery.md.j2"),
    ),
    (
        "loop-seed.md.j2",
        include_str!("../templates/loop-seed.md.j2"),
    ),
    (
        "loop-task.md.j2",
        include_str!("../templates/loop-task.md.j2"),
    ),
];

/// An override read from somewhere other than a directory (a git tree).
pub struct TemplateFile {
    /// The file name (`comment.md.j2`).
    pub name: String,
    pub text: String,
    /// What an error names (`main:tpl/comment.md.j2`).
    pub origin: String,
}

pub struct Renderer {
    /// Template name → source: the built-ins, overridden by the repository's.
    sources: HashMap<String, Source>,
    env: Environment<'static>,
}

struct Source {
    text: String,
    /// What an error names: the override's path, or the built-in's name.
    origin: String,
}

impl Renderer {
    /// Built-in templates, overridden by `*.j2` files in `override_dir` when given.
    /// Templates are compiled when first rendered, so a command pays only for what it prints.
    pub fn new(override_dir: Option<&Path>, color: bool) -> Result<Renderer> {
        let files = match override_dir {
            Some(dir) => read_dir_files(dir)?,
            None => Vec::new(),
        };
        Renderer::with_files(files, color)
    }

    /// Built-in templates, overridden by `files` (those named `*.j2`; a `*.tera` is refused).
    pub fn with_files(files: Vec<TemplateFile>, color: bool) -> Result<Renderer> {
        let env = environment(color)?;
        let mut sources: HashMap<String, Source> = BUILTIN
            .iter()
            .map(|(name, text)| {
                let source = Source {
                    text: text.to_string(),
                    origin: format!("the built-in template {name}"),
                };
                (name.to_string(), source)
            })
            .collect();
        for file in files {
            add_override(&env, &mut sources, file)?;
        }
        Ok(Renderer { sources, env })
    }

    pub fn render(&self, name: &str, view: &impl Serialize) -> Result<String> {
        let source = self
            .sources
            .get(name)
            .with_context(|| format!("no template named {name}"))?;
        let template = self
            .env
            .template_from_named_str(name, &source.text)
            .map_err(|e| anyhow::anyhow!("{}: {}", source.origin, describe(&e)))?;
        template
            .render(Value::from(Serde(view)))
            .map_err(|e| anyhow::anyhow!("rendering {}: {}", source.origin, describe(&e)))
    }
}

/// Jinja2 defaults, except: a template's final newline is kept (it ends a line of
/// output), nothing is HTML-escaped (the output is text or Markdown, escaped by the views
/// where needed), and printing an undefined value is an error, so a misspelt name in an
/// override fails loudly instead of printing nothing (`{% if missing %}` is still false).
fn environment(color: bool) -> Result<Environment<'static>> {
    let mut env = Environment::new();
    let syntax = SyntaxConfig::builder()
        .keep_trailing_newline(true)
        .build()
        .map_err(|e| anyhow::anyhow!("template syntax: {e}"))?;
    env.set_syntax(syntax);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
    env.add_filter("paint", move |value: Value, kwargs: Kwargs| {
        let style: Option<String> = kwargs.get("style")?;
        kwargs.assert_all_used()?;
        Ok::<_, minijinja::Error>(paint(&value.to_string(), style.as_deref(), color))
    });
    Ok(env)
}

/// minijinja's message names the template and line; its detail and cause follow.
fn describe(e: &minijinja::Error) -> String {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

/// The regular files of `dir` as template files (the names are checked when added).
fn read_dir_files(dir: &Path) -> Result<Vec<TemplateFile>> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("reading the templates directory {}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !(name.ends_with(".j2") || name.ends_with(".tera")) {
            continue;
        }
        let text = if name.ends_with(".j2") {
            std::fs::read_to_string(&path)
                .with_context(|| format!("reading template {}", path.display()))?
        } else {
            String::new()
        };
        files.push(TemplateFile {
            name: name.to_string(),
            text,
            origin: path.display().to_string(),
        });
    }
    Ok(files)
}

fn add_override(
    env: &Environment<'static>,
    sources: &mut HashMap<String, Source>,
    file: TemplateFile,
) -> Result<()> {
    let TemplateFile { name, text, origin } = file;
    if let Some(stem) = name.strip_suffix(".tera") {
        // Overrides were tera templates once; ignoring one silently would be worse.
        anyhow::bail!(
            "template {origin}: templates are Jinja files named `*.j2` now: rename it to {stem}.j2 \
             (tera's `join(sep=\"...\")` becomes `join(\"...\")`)"
        );
    }
    if !name.ends_with(".j2") {
        return Ok(());
    }
    // Check it now, so a broken override is reported where it lives.
    env.template_from_named_str(&name, &text)
        .map_err(|e| anyhow::anyhow!("template {origin}: {}", describe(&e)))?;
    let origin = format!("template {origin}");
    sources.insert(name, Source { text, origin });
    Ok(())
}

/// `{{ text | paint(style="accept") }}`: ANSI colour by meaning.
fn paint(text: &str, style: Option<&str>, enabled: bool) -> String {
    let code = match style.filter(|_| enabled) {
        Some("accept" | "good") => "32",
        Some("iterate" | "warn") => "33",
        Some("escalate" | "abort" | "bad") => "31",
        Some("bold") => "1",
        Some("dim") => "2",
        _ => return text.to_string(),
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}
