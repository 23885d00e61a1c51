//! Builds the named backends a config refers to. A new backend type gets its line here.

use std::sync::Arc;

use anyhow::anyhow;

use crate::backend::assemblyai::AssemblyAi;
use crate::backend::deepgram::Deepgram;
use crate::backend::riva::Riva;
use crate::backend::{ApiKey, Registry};
use crate::backend::{moonshine, whisper};
use crate::config::{BackendConfig, Config};

/// Creates the embedded backend and every `[backends.NAME]`. Backends that load models
/// start loading now, in the background, so the server can answer health checks meanwhile.
/// A network backend whose API key variable is unset is refused here, naming the variable.
pub fn from_config(config: &Config) -> anyhow::Result<Registry> {
    let mut registry = Registry::default();
    // An embedded engine loads (and is fetched on first use) only when a profile uses it.
    if config.uses(moonshine::NAME) {
        let turn_model = config.wants_turn_model(moonshine::NAME);
        let moonshine = moonshine::spawn(&config.moonshine, turn_model);
        registry.insert(moonshine::NAME, moonshine);
    }
    if config.uses(whisper::NAME) {
        let turn_model = config.wants_turn_model(whisper::NAME);
        registry.insert(whisper::NAME, whisper::spawn(&config.whisper, turn_model));
    }
    for (name, backend) in &config.backends {
        let key = backend
            .api_key_env()
            .map(ApiKey::from_env)
            .transpose()
            .map_err(|e| anyhow!("backend {name:?}: {e}"))?;
        let backend =
            network(name, backend.clone(), key).map_err(|e| anyhow!("backend {name:?}: {e}"))?;
        registry.insert(name.clone(), backend);
    }
    Ok(registry)
}

/// The backend names a config's profiles may use: the embedded ones and each `[backends]`.
pub fn names(config: &Config) -> Vec<&str> {
    [moonshine::NAME, whisper::NAME]
        .into_iter()
        .chain(config.backends.keys().map(String::as_str))
        .collect()
}

/// Every problem [`from_config`] and the server would refuse the config for, found without
/// building a backend or loading the engine: the config's own problems and each network
/// backend whose API key variable is unset.
pub fn problems(config: &Config) -> Vec<String> {
    let mut out = config.problems(&names(config));
    for (name, backend) in &config.backends {
        if let Some(Err(e)) = backend.api_key_env().map(ApiKey::from_env) {
            out.push(format!("backend {name:?}: {e}"));
        }
    }
    out
}

/// A network backend from its config section and key (which the cloud services need).
pub fn network(
    name: &str,
    config: BackendConfig,
    key: Option<ApiKey>,
) -> Result<Arc<dyn crate::backend::Backend>, String> {
    // An empty `api_key_env` was refused by `ApiKey::from_env` already.
    let needed = format!(
        "no API key: set {}",
        config.api_key_env().unwrap_or_default()
    );
    Ok(match config {
        BackendConfig::Deepgram(c) => Arc::new(Deepgram::new(name, c, key.ok_or(needed)?)),
        BackendConfig::Assemblyai(c) => Arc::new(AssemblyAi::new(name, c, key.ok_or(needed)?)),
        BackendConfig::Riva(c) => Arc::new(Riva::new(name, c, key)),
    })
}

/// The embedded engine a profile runs (the first of its chain, so a profile that relays to
/// a network backend with Whisper as its fallback decodes files with Whisper), started
/// loading, with the profile: what `hark transcribe` decodes files with. A profile whose
/// chain names no embedded engine is refused with what it runs.
pub fn profile_engine(
    config: &Config,
    profile: &str,
) -> anyhow::Result<(
    Arc<crate::backend::embedded::Embedded>,
    crate::config::Profile,
)> {
    let Some(p) = config.profile(profile) else {
        let mut known: Vec<&str> = config.profiles.keys().map(String::as_str).collect();
        if !known.contains(&crate::config::DEFAULT_PROFILE) {
            known.insert(0, crate::config::DEFAULT_PROFILE);
        }
        anyhow::bail!(
            "no profile {profile:?} in the config; its profiles: {}",
            known.join(", ")
        );
    };
    let engine = match p
        .chain()
        .find(|b| [whisper::NAME, moonshine::NAME].contains(b))
    {
        Some(whisper::NAME) => whisper::spawn_offline(&config.whisper),
        Some(_) => moonshine::spawn_offline(&config.moonshine),
        None => anyhow::bail!(
            "profile {profile:?} runs {} only: `hark transcribe` decodes with an embedded \
             engine ({} or {}); to hear a network backend, serve the profile and run \
             `hark bench --url ws://HOST/api/custom-transcriber/{profile}` against it",
            p.chain().collect::<Vec<_>>().join(", "),
            whisper::NAME,
            moonshine::NAME
        ),
    };
    Ok((engine, p))
}

/// What each embedded engine the profiles use runs, and which profiles use it: for
/// `hark check-config` (the start-up log says the same once the engine is loaded).
pub fn engines(config: &Config) -> Vec<String> {
    let users = |engine: &str| config.profiles_using(engine).join(", ");
    let mut out = Vec::new();
    if config.uses(moonshine::NAME) {
        let m = &config.moonshine;
        out.push(format!(
            "engine moonshine: tiny-en, onnxruntime float32, {} handle(s) of 2 threads; \
             profiles: {}",
            m.pool_size,
            users(moonshine::NAME)
        ));
    }
    if config.uses(whisper::NAME) {
        let w = &config.whisper;
        let model = match whisper::pinned_model(&w.model) {
            true => format!("{} (pinned, fetched on first use)", w.model),
            false => format!("{} (model directory)", w.model),
        };
        let model = match w.finals_model() {
            Some(f) => format!("{model}, finals from {f}"),
            None => model,
        };
        out.push(format!(
            "engine whisper: {model}, {} encoder layers{}, int8 decoder, short window, {}, \
             {} decoder(s) of 1 thread; profiles: {}",
            w.encoder.as_str(),
            match w.encoder {
                hark_whisper::EncoderProducts::Int8 => " (float32 on a CPU without AVX2)",
                hark_whisper::EncoderProducts::F32 => "",
            },
            w.search(),
            w.decoders,
            users(whisper::NAME)
        ));
        for name in config.profiles_using(whisper::NAME) {
            let language = config
                .profile(name)
                .and_then(|p| p.options.language)
                .filter(|l| !crate::backend::embedded::is_english(l));
            if let Some(language) = language {
                out.push(format!(
                    "profile {name}: whisper in {language} (a call's ?language= may say \
                     another): partials and finals from the multilingual model{}",
                    match w.finals_model() {
                        Some(f) if w.model.ends_with(".en") => format!(" ({f})"),
                        _ => String::new(),
                    }
                ));
            }
        }
    }
    out
}
