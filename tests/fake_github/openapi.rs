//! Checks requests against the subset of GitHub's OpenAPI description that itergate uses
//! (`tests/fixtures/github/openapi-subset.json`, extracted from `@octokit/openapi` by
//! `extract_openapi.py`): the route and method exist, path and query parameters are known
//! and match their schemas, and a JSON body matches the request body schema.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

const SUBSET: &str = include_str!("../fixtures/github/openapi-subset.json");

#[derive(Deserialize)]
struct SubsetFile {
    operations: Vec<OperationJson>,
}

#[derive(Deserialize)]
struct OperationJson {
    method: String,
    path: String,
    #[serde(rename = "operationId")]
    operation_id: String,
    parameters: Vec<ParamJson>,
    #[serde(rename = "requestBodyRequired")]
    body_required: bool,
    #[serde(rename = "requestBody")]
    body: Option<Value>,
    responses: Vec<String>,
}

#[derive(Deserialize)]
struct ParamJson {
    name: String,
    #[serde(rename = "in")]
    location: String,
    schema: Value,
}

pub struct Operation {
    pub method: String,
    pub operation_id: String,
    segments: Vec<String>,
    path_params: BTreeMap<String, jsonschema::Validator>,
    query_params: BTreeMap<String, jsonschema::Validator>,
    body_required: bool,
    body: Option<jsonschema::Validator>,
    pub responses: Vec<u16>,
}

/// A request matched to its operation, with its path parameters (percent-decoded).
pub struct Matched<'s> {
    pub operation: &'s Operation,
    pub params: BTreeMap<String, String>,
}

pub struct Spec {
    operations: Vec<Operation>,
}

fn compile(schema: &Value) -> jsonschema::Validator {
    match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => panic!("the OpenAPI subset has a schema the validator rejects: {e}"),
    }
}

fn param_value_ok(validator: &jsonschema::Validator, raw: &str) -> bool {
    if validator.is_valid(&Value::String(raw.to_string())) {
        return true;
    }
    raw.parse::<i64>()
        .is_ok_and(|n| validator.is_valid(&Value::from(n)))
        || raw
            .parse::<bool>()
            .is_ok_and(|b| validator.is_valid(&Value::Bool(b)))
}

impl Spec {
    pub fn load() -> Spec {
        let file: SubsetFile = match serde_json::from_str(SUBSET) {
            Ok(f) => f,
            Err(e) => panic!("openapi-subset.json is unreadable: {e}"),
        };
        let operations = file.operations.into_iter().map(Self::operation).collect();
        Spec { operations }
    }

    fn operation(op: OperationJson) -> Operation {
        let mut path_params = BTreeMap::new();
        let mut query_params = BTreeMap::new();
        for p in &op.parameters {
            let target = if p.location == "path" {
                &mut path_params
            } else {
                &mut query_params
            };
            target.insert(p.name.clone(), compile(&p.schema));
        }
        Operation {
            method: op.method,
            segments: op.path.split('/').map(String::from).collect(),
            operation_id: op.operation_id,
            path_params,
            query_params,
            body_required: op.body_required,
            body: op.body.as_ref().map(compile),
            responses: op.responses.iter().filter_map(|r| r.parse().ok()).collect(),
        }
    }

    /// The operation for `method` and `path`, or why there is none.
    pub fn route(&self, method: &str, path: &str) -> Result<Matched<'_>, String> {
        let segments: Vec<&str> = path.split('/').collect();
        let mut candidates: Vec<(usize, Matched<'_>)> = Vec::new();
        for op in &self.operations {
            if let Some(params) = match_segments(&op.segments, &segments) {
                let literals = op.segments.iter().filter(|s| !s.starts_with('{')).count();
                candidates.push((
                    literals,
                    Matched {
                        operation: op,
                        params,
                    },
                ));
            }
        }
        if candidates.is_empty() {
            return Err(format!(
                "{method} {path}: no such route in GitHub's REST API subset"
            ));
        }
        candidates.sort_by_key(|(literals, _)| std::cmp::Reverse(*literals));
        candidates
            .into_iter()
            .map(|(_, m)| m)
            .find(|m| m.operation.method.eq_ignore_ascii_case(method))
            .ok_or_else(|| format!("{method} {path}: route exists but not with method {method}"))
    }
}

fn match_segments(template: &[String], actual: &[&str]) -> Option<BTreeMap<String, String>> {
    // `{path}` (repository contents) is the last segment and takes the rest, slashes too.
    let actual: Vec<String> = match template.last().map(String::as_str) {
        Some("{path}") if actual.len() > template.len() => {
            let split = template.len() - 1;
            let mut joined: Vec<String> = actual[..split].iter().map(|s| s.to_string()).collect();
            joined.push(actual[split..].join("/"));
            joined
        }
        _ => actual.iter().map(|s| s.to_string()).collect(),
    };
    if template.len() != actual.len() {
        return None;
    }
    let mut params = BTreeMap::new();
    for (t, a) in template.iter().zip(&actual) {
        if let Some(name) = t.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            if a.is_empty() {
                return None;
            }
            let decoded = percent_encoding::percent_decode_str(a).decode_utf8_lossy();
            params.insert(name.to_string(), decoded.into_owned());
        } else if t != a {
            return None;
        }
    }
    Some(params)
}

impl Operation {
    /// Every way the request breaks the description (empty when it conforms).
    pub fn check(
        &self,
        params: &BTreeMap<String, String>,
        query: &[(String, String)],
        body: &[u8],
    ) -> Vec<String> {
        let id = &self.operation_id;
        let mut problems = Vec::new();
        for (name, value) in params {
            match self.path_params.get(name) {
                Some(v) if !param_value_ok(v, value) => problems.push(format!(
                    "{id}: path parameter {name}={value:?} does not match its schema"
                )),
                _ => {}
            }
        }
        for (name, value) in query {
            match self.query_params.get(name) {
                None => problems.push(format!("{id}: unknown query parameter `{name}`")),
                Some(v) if !param_value_ok(v, value) => problems.push(format!(
                    "{id}: query parameter {name}={value:?} does not match its schema"
                )),
                Some(_) => {}
            }
        }
        problems.extend(self.check_body(body));
        problems
    }

    fn check_body(&self, body: &[u8]) -> Vec<String> {
        let id = &self.operation_id;
        if body.is_empty() {
            return match self.body_required {
                true => vec![format!("{id}: the request body is required")],
                false => vec![],
            };
        }
        let Some(validator) = &self.body else {
            return vec![format!(
                "{id}: takes no request body, got {} bytes",
                body.len()
            )];
        };
        let value: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => return vec![format!("{id}: request body is not JSON: {e}")],
        };
        validator
            .iter_errors(&value)
            .map(|e| format!("{id}: request body at `{}`: {e}", e.instance_path))
            .collect()
    }
}
