//! Rendering with tera: the built-in templates are embedded from `templates/`, and a
//! repository may override any of them by name from the directory `templates.dir` names.
//!
//! Templates receive plain serialisable views; formatting numbers is done in Rust so the
//! templates stay declarative. The `paint` filter colours text for terminals and is the
//! identity when colour is off, so the same template serves both.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context as _, Result};
use serde::Serialize;
use tera::{Tera, Value};

/// Built-in templates: (name, source).
pub const BUILTIN: [(&str, &str); 6] = [
    (
        "decision.txt.tera",
        include_str!("../templates/decision.txt.tera"),
    ),
    (
        "analytics.txt.tera",
        include_str!("../templates/analytics.txt.tera"),
    ),
    (
        "revision-prompt.md.tera",
        include_str!("../templates/revision-prompt.md.tera"),
    ),
    (
        "comment.md.tera",
        include_str!("../templates/comment.md.tera"),
    ),
    (
        "escalation.md.tera",
        include_str!("../templates/escalation.md.tera"),
    ),
    ("help.md.tera", include_str!("../templates/help.md.tera")),
];

pub struct Renderer {
    /// Template name → source: the built-ins, overridden by the repository's.
    sources: HashMap<String, String>,
    color: bool,
}

impl Renderer {
    /// Built-in templates, overridden by `*.tera` files in `override_dir` when given.
    /// Templates are compiled when first rendered, so a command pays only for what it prints.
    pub fn new(override_dir: Option<&Path>, color: bool) -> Result<Renderer> {
        let mut sources: HashMap<String, String> = BUILTIN
            .iter()
            .map(|(name, source)| (name.to_string(), source.to_string()))
            .collect();
        if let Some(dir) = override_dir {
            add_overrides(&mut sources, dir)?;
        }
        Ok(Renderer { sources, color })
    }

    pub fn render(&self, name: &str, view: &impl Serialize) -> Result<String> {
        let source = self
            .sources
            .get(name)
            .with_context(|| format!("no template named {name}"))?;
        let mut tera = Tera::default();
        tera.autoescape_on(vec![]);
        tera.register_filter(
            "paint",
            Paint {
                enabled: self.color,
            },
        );
        tera.add_raw_template(name, source)
            .map_err(|e| anyhow::anyhow!("template {name}: {}", chain(&e)))?;
        let context = tera::Context::from_serialize(view)
            .with_context(|| format!("preparing data for template {name}"))?;
        tera.render(name, &context)
            .map_err(|e| anyhow::anyhow!("rendering template {name}: {}", chain(&e)))
    }
}

/// tera keeps the useful part of a message in the error's source chain.
fn chain(e: &tera::Error) -> String {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

fn add_overrides(sources: &mut HashMap<String, String>, dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("reading the templates directory {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.ends_with(".tera") {
            continue;
        }
        let source = std::fs::read_to_string(&path)
            .with_context(|| format!("reading template {}", path.display()))?;
        // Check it now, so a broken override is reported where it lives.
        Tera::default()
            .add_raw_template(name, &source)
            .map_err(|e| anyhow::anyhow!("template {}: {}", path.display(), chain(&e)))?;
        sources.insert(name.to_string(), source);
    }
    Ok(())
}

/// `{{ text | paint(style="accept") }}`: ANSI colour by meaning.
struct Paint {
    enabled: bool,
}

impl tera::Filter for Paint {
    fn filter(&self, value: &Value, args: &HashMap<String, Value>) -> tera::Result<Value> {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if !self.enabled {
            return Ok(Value::String(text));
        }
        let style = args.get("style").and_then(Value::as_str).unwrap_or("");
        let code = match style {
            "accept" | "good" => "32",
            "iterate" | "warn" => "33",
            "escalate" | "abort" | "bad" => "31",
            "bold" => "1",
            "dim" => "2",
            _ => return Ok(Value::String(text)),
        };
        Ok(Value::String(format!("\x1b[{code}m{text}\x1b[0m")))
    }

    fn is_safe(&self) -> bool {
        true
    }
}
