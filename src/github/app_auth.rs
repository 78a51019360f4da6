//! GitHub App authentication: a JWT (RS256, octocrab's `create_jwt`: issued 60 s in the
//! past for clock skew, valid 9 minutes) signed with the App's private key authenticates
//! as the App; `POST /app/installations/{id}/access_tokens` trades it for an installation
//! token (valid one hour). [`Installations`] keeps one [`OctocrabForge`] per installation
//! with its token and mints a new one [`REFRESH_MARGIN`] before expiry. Concurrent callers
//! of one installation wait on one lock, so a cold start mints one token, not one per job.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use http::Method;
use jsonwebtoken::EncodingKey;
use secrecy::SecretString;
use serde::Deserialize;

use super::client::{Call, ForgeSettings, OctocrabForge};
use super::forge::ForgeError;

/// A token is replaced when less than this is left of it.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// The App's identity: its id and private key.
pub struct AppCredentials {
    pub app_id: u64,
    key: EncodingKey,
}

impl std::fmt::Debug for AppCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "AppCredentials {{ app_id: {}, key: [redacted] }}",
            self.app_id
        )
    }
}

impl AppCredentials {
    /// From the PEM text of the App's private key (PKCS#1 as GitHub hands it out, or
    /// PKCS#8).
    pub fn new(app_id: u64, pem: &[u8]) -> Result<AppCredentials, String> {
        let key = EncodingKey::from_rsa_pem(pem)
            .map_err(|e| format!("the private key is not an RSA key in PEM form: {e}"))?;
        Ok(AppCredentials { app_id, key })
    }

    /// A fresh JWT for calls as the App.
    pub fn jwt(&self) -> Result<SecretString, ForgeError> {
        octocrab::auth::create_jwt(octocrab::models::AppId(self.app_id), &self.key)
            .map(SecretString::from)
            .map_err(|e| ForgeError::Settings(format!("signing the App's JWT: {e}")))
    }
}

struct Minted {
    forge: Arc<OctocrabForge>,
    expires_at: DateTime<Utc>,
}

/// Installation clients, cached per installation.
pub struct Installations {
    settings: ForgeSettings,
    credentials: AppCredentials,
    slots: Mutex<HashMap<u64, Arc<tokio::sync::Mutex<Option<Minted>>>>>,
}

#[derive(Deserialize)]
struct TokenJson {
    token: String,
    expires_at: DateTime<Utc>,
}

#[derive(Deserialize)]
struct AppJson {
    slug: String,
}

impl Installations {
    /// `settings` gives the API URL, timeouts, retries and the bot login; its token is
    /// ignored.
    pub fn new(settings: ForgeSettings, credentials: AppCredentials) -> Installations {
        Installations {
            settings,
            credentials,
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// A client that authenticates as the App itself (JWT): for `/app/...` endpoints.
    pub fn app_client(&self) -> Result<OctocrabForge, ForgeError> {
        OctocrabForge::new(ForgeSettings {
            token: Some(self.credentials.jwt()?),
            ..self.settings.clone()
        })
    }

    /// The App's bot login, `SLUG[bot]` (`GET /app`).
    pub async fn bot_login(&self) -> Result<String, ForgeError> {
        let app: AppJson = self
            .app_client()?
            .send_json(Call {
                operation: "get the authenticated app",
                method: Method::GET,
                path: "/app".into(),
                body: None,
                authenticated: true,
            })
            .await?;
        Ok(format!("{}[bot]", app.slug))
    }

    /// The client of `installation`, minting a token if there is none or it is about to
    /// expire.
    pub async fn forge(&self, installation: u64) -> Result<Arc<OctocrabForge>, ForgeError> {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            slots.entry(installation).or_default().clone()
        };
        let mut minted = slot.lock().await;
        if let Some(m) = minted.as_ref() {
            let left = (m.expires_at - Utc::now()).to_std().unwrap_or_default();
            if left > REFRESH_MARGIN {
                return Ok(m.forge.clone());
            }
        }
        let fresh = self.mint(installation).await?;
        let forge = fresh.forge.clone();
        *minted = Some(fresh);
        Ok(forge)
    }

    /// Drops the cached token of `installation` (after a 401: revoked, or not valid yet).
    pub async fn forget(&self, installation: u64) {
        let slot = {
            let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            slots.get(&installation).cloned()
        };
        if let Some(slot) = slot {
            *slot.lock().await = None;
        }
    }

    async fn mint(&self, installation: u64) -> Result<Minted, ForgeError> {
        let body = serde_json::json!({});
        let token: TokenJson = self
            .app_client()?
            .send_json(Call {
                operation: "create an installation access token",
                method: Method::POST,
                path: format!("/app/installations/{installation}/access_tokens"),
                body: Some(&body),
                authenticated: true,
            })
            .await?;
        tracing::info!(
            installation,
            expires_at = %token.expires_at,
            "minted an installation token"
        );
        let forge = OctocrabForge::new(ForgeSettings {
            token: Some(SecretString::from(token.token)),
            ..self.settings.clone()
        })?;
        Ok(Minted {
            forge: Arc::new(forge),
            expires_at: token.expires_at,
        })
    }
}
