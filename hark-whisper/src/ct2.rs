//! Reads a CTranslate2 model file (`model.bin`): the format faster-whisper and the tools
//! built on it ship Whisper in. Only what a Whisper spec holds is needed: named tensors of
//! float32, float16, bfloat16 or int8 (with a per-row `_scale`), a few scalars and aliases.
//!
//! The layout (CTranslate2 `src/models/model.cc`, binary version 6): `u32` version, the
//! spec's name and `u32` revision, `u32` variable count, then per variable its name, `u8`
//! rank, `u32` dims, `u8` type and `u32` byte count before the data; then `u32` alias count
//! and `(alias, target)` name pairs. Strings are a `u16` length counting a final NUL.

use std::collections::HashMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The newest binary version this reader knows (CTranslate2 4.x writes 6).
const MAX_VERSION: u32 = 6;

/// What makes a file one this reader cannot read, or a variable one it cannot give.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {}: {source}", path.display())]
    Open { path: PathBuf, source: io::Error },
    /// The same error, said of the file it was found in.
    #[error("{}: {source}", path.display())]
    In { path: PathBuf, source: Box<Error> },
    #[error("not a CTranslate2 model file (binary version {0}; 2 to {MAX_VERSION} are read)")]
    Version(u32),
    #[error("at byte {at}: {source}")]
    Read { at: usize, source: io::Error },
    #[error("truncated at byte {at} (wanted {wanted} more)")]
    Truncated { at: usize, wanted: usize },
    #[error("empty string at byte {0}")]
    EmptyString(usize),
    #[error("{name}: data type {code} is not supported")]
    DataType { name: String, code: u8 },
    #[error("{name}: item size {item} is not supported")]
    ItemSize { name: String, item: u8 },
    #[error("{name}: {bytes} bytes for {elements} values of {item} bytes")]
    Size {
        name: String,
        bytes: usize,
        elements: usize,
        item: usize,
    },
    #[error("the model has no variable {0}")]
    Missing(String),
    #[error("{0} is not an integer scalar")]
    NotScalar(String),
    /// CTranslate2 quantizes int8 weights with one scale per row.
    #[error("{name}: {scales} scales for {values} int8 values, not one per row")]
    Scales {
        name: String,
        scales: usize,
        values: usize,
    },
}

impl Error {
    fn of(self, path: &Path) -> Self {
        Self::In {
            path: path.to_owned(),
            source: Box::new(self),
        }
    }
}

fn open(path: &Path) -> Result<std::fs::File, Error> {
    std::fs::File::open(path).map_err(|source| Error::Open {
        path: path.to_owned(),
        source,
    })
}

/// One tensor as stored.
#[derive(Debug, Clone)]
pub struct Variable {
    pub shape: Vec<usize>,
    pub data: Data,
}

#[derive(Debug, Clone)]
pub enum Data {
    F32(Vec<f32>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    F16(Vec<u16>),
    Bf16(Vec<u16>),
}

/// The variables of a model file by name (aliases resolved).
#[derive(Debug, Default)]
pub struct ModelFile {
    pub spec: String,
    variables: HashMap<String, Variable>,
    aliases: HashMap<String, String>,
}

impl ModelFile {
    /// Reads the file a variable at a time: loading base held the whole file and its
    /// decoded variables at once, a 145 MB file's worth more than the variables alone.
    pub fn open(path: &Path) -> Result<Self, Error> {
        Self::read(io::BufReader::new(open(path)?)).map_err(|e| e.of(path))
    }

    /// The spec's name from the file's header, read without the variables: what
    /// `check-config` reads to tell a model file from anything else at that path.
    pub fn spec_of(path: &Path) -> Result<String, Error> {
        let mut r = Reader {
            input: io::BufReader::new(open(path)?).take(4096),
            at: 0,
        };
        let header = (|| {
            r.version()?;
            r.string()
        })();
        header.map_err(|e| e.of(path))
    }

    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        Self::read(bytes)
    }

    fn read(input: impl Read) -> Result<Self, Error> {
        let mut r = Reader { input, at: 0 };
        let version = r.version()?;
        let spec = r.string()?;
        let _revision = r.u32()?;
        let count = r.u32()?;
        let mut variables = HashMap::new();
        for _ in 0..count {
            let name = r.string()?;
            let rank = usize::from(r.u8()?);
            let mut shape = Vec::with_capacity(rank);
            for _ in 0..rank {
                shape.push(r.u32()? as usize);
            }
            let (kind, size) = if version >= 4 {
                let code = r.u8()?;
                let kind = DataType::from_code(code).ok_or(Error::DataType {
                    name: name.clone(),
                    code,
                })?;
                (kind, r.u32()? as usize)
            } else {
                // Before version 4 a variable gave its item size, not its type.
                let item = r.u8()?;
                let n = r.u32()? as usize;
                let kind = match item {
                    4 => DataType::F32,
                    2 => DataType::F16,
                    1 => DataType::I8,
                    _ => return Err(Error::ItemSize { name, item }),
                };
                (kind, n * usize::from(item))
            };
            let elements: usize = shape.iter().product();
            let raw = r.take(size)?;
            let data = decode(&name, kind, &raw, elements)?;
            variables.insert(name, Variable { shape, data });
        }
        let mut aliases = HashMap::new();
        if version >= 3 {
            let count = r.u32()?;
            for _ in 0..count {
                let alias = r.string()?;
                let target = r.string()?;
                aliases.insert(alias, target);
            }
        }
        Ok(Self {
            spec,
            variables,
            aliases,
        })
    }

    pub fn get(&self, name: &str) -> Option<&Variable> {
        self.variables
            .get(name)
            .or_else(|| self.variables.get(self.aliases.get(name)?))
    }

    /// A tensor as `f32`, row-major, with its shape; int8 tensors are scaled back by their
    /// `_scale` (one per row, as CTranslate2 quantizes).
    pub fn tensor(&self, name: &str) -> Result<(Vec<f32>, Vec<usize>), Error> {
        let v = self
            .get(name)
            .ok_or_else(|| Error::Missing(name.to_owned()))?;
        let values = match &v.data {
            Data::F32(x) => x.clone(),
            Data::F16(x) => x
                .iter()
                .map(|&h| half::f16::from_bits(h).to_f32())
                .collect(),
            Data::Bf16(x) => x
                .iter()
                .map(|&h| half::bf16::from_bits(h).to_f32())
                .collect(),
            Data::I8(x) => {
                let (scale, _) = self.tensor(&format!("{name}_scale"))?;
                if scale.is_empty() || x.len() % scale.len() != 0 {
                    return Err(Error::Scales {
                        name: name.to_owned(),
                        scales: scale.len(),
                        values: x.len(),
                    });
                }
                let per_row = x.len() / scale.len();
                x.chunks(per_row.max(1))
                    .zip(&scale)
                    .flat_map(|(row, s)| row.iter().map(move |&q| f32::from(q) / s))
                    .collect()
            }
            Data::I16(x) => x.iter().map(|&i| f32::from(i)).collect(),
            Data::I32(x) => x.iter().map(|&i| i as f32).collect(),
        };
        Ok((values, v.shape.clone()))
    }

    /// A scalar integer such as `encoder/num_heads`.
    pub fn scalar(&self, name: &str) -> Result<i64, Error> {
        let v = self
            .get(name)
            .ok_or_else(|| Error::Missing(name.to_owned()))?;
        let value = match &v.data {
            Data::I8(x) => x.first().map(|&i| i64::from(i)),
            Data::I16(x) => x.first().map(|&i| i64::from(i)),
            Data::I32(x) => x.first().map(|&i| i64::from(i)),
            Data::F32(x) => x.first().map(|&f| f as i64),
            Data::F16(_) | Data::Bf16(_) => None,
        };
        value.ok_or_else(|| Error::NotScalar(name.to_owned()))
    }

    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// CTranslate2's `DataType`, by the code `model.bin` stores (its `types.h`, in order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DataType {
    F32,
    I8,
    I16,
    I32,
    F16,
    Bf16,
}

impl DataType {
    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => Self::F32,
            1 => Self::I8,
            2 => Self::I16,
            3 => Self::I32,
            4 => Self::F16,
            5 => Self::Bf16,
            _ => return None,
        })
    }

    /// Bytes per value.
    fn size(self) -> usize {
        match self {
            Self::F32 | Self::I32 => 4,
            Self::I8 => 1,
            Self::I16 | Self::F16 | Self::Bf16 => 2,
        }
    }
}

fn decode(name: &str, kind: DataType, raw: &[u8], elements: usize) -> Result<Data, Error> {
    let item = kind.size();
    if Some(raw.len()) != elements.checked_mul(item) {
        return Err(Error::Size {
            name: name.to_owned(),
            bytes: raw.len(),
            elements,
            item,
        });
    }
    let u16s = || {
        raw.chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect::<Vec<_>>()
    };
    Ok(match kind {
        DataType::F32 => Data::F32(
            raw.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
        DataType::I8 => Data::I8(raw.iter().map(|&b| b as i8).collect()),
        DataType::I16 => Data::I16(u16s().into_iter().map(|u| u as i16).collect()),
        DataType::I32 => Data::I32(
            raw.chunks_exact(4)
                .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
        DataType::F16 => Data::F16(u16s()),
        DataType::Bf16 => Data::Bf16(u16s()),
    })
}

struct Reader<R> {
    input: R,
    at: usize,
}

impl<R: Read> Reader<R> {
    /// The next `n` bytes, grown as they arrive (a size read from a damaged file allocates
    /// no more than the file holds).
    fn take(&mut self, n: usize) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        (&mut self.input)
            .take(n as u64)
            .read_to_end(&mut out)
            .map_err(|source| Error::Read {
                at: self.at,
                source,
            })?;
        if out.len() != n {
            return Err(Error::Truncated {
                at: self.at,
                wanted: n,
            });
        }
        self.at += n;
        Ok(out)
    }

    /// The binary version, refused unless this reader knows it.
    fn version(&mut self) -> Result<u32, Error> {
        let version = self.u32()?;
        match (2..=MAX_VERSION).contains(&version) {
            true => Ok(version),
            false => Err(Error::Version(version)),
        }
    }

    fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, Error> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, Error> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn string(&mut self) -> Result<String, Error> {
        let n = usize::from(self.u16()?);
        if n == 0 {
            return Err(Error::EmptyString(self.at));
        }
        let raw = self.take(n)?;
        Ok(String::from_utf8_lossy(&raw[..n - 1]).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend(((s.len() + 1) as u16).to_le_bytes());
        out.extend(s.as_bytes());
        out.push(0);
    }

    #[test]
    fn reads_tensors_scalars_and_aliases_and_refuses_a_truncated_file() {
        let mut b = Vec::new();
        b.extend(6u32.to_le_bytes());
        string(&mut b, "WhisperSpec");
        b.extend(3u32.to_le_bytes());
        b.extend(2u32.to_le_bytes());
        string(&mut b, "w");
        b.push(2);
        b.extend(1u32.to_le_bytes());
        b.extend(2u32.to_le_bytes());
        b.push(4);
        b.extend(4u32.to_le_bytes());
        b.extend(half::f16::from_f32(1.5).to_bits().to_le_bytes());
        b.extend(half::f16::from_f32(-2.0).to_bits().to_le_bytes());
        string(&mut b, "heads");
        b.push(0);
        b.push(2);
        b.extend(2u32.to_le_bytes());
        b.extend(6i16.to_le_bytes());
        b.extend(1u32.to_le_bytes());
        string(&mut b, "alias");
        string(&mut b, "w");
        let m = ModelFile::parse(&b).unwrap();
        assert_eq!(m.spec, "WhisperSpec");
        assert_eq!(m.tensor("alias").unwrap(), (vec![1.5, -2.0], vec![1, 2]));
        assert_eq!(m.scalar("heads").unwrap(), 6);
        assert!(m.tensor("missing").is_err());
        assert!(ModelFile::parse(&b[..b.len() - 5]).is_err());
        assert!(ModelFile::parse(&b[..20]).is_err());
    }

    #[test]
    fn int8_is_scaled_back_by_row_and_a_scale_per_row_is_required() {
        let file = |scales: &[f32]| {
            let mut b = Vec::new();
            b.extend(6u32.to_le_bytes());
            string(&mut b, "WhisperSpec");
            b.extend(1u32.to_le_bytes());
            b.extend(2u32.to_le_bytes());
            string(&mut b, "q");
            b.push(2);
            b.extend(2u32.to_le_bytes());
            b.extend(2u32.to_le_bytes());
            b.push(1);
            b.extend(4u32.to_le_bytes());
            b.extend([10u8, 20, 30, 40]);
            string(&mut b, "q_scale");
            b.push(1);
            b.extend((scales.len() as u32).to_le_bytes());
            b.push(0);
            b.extend(((4 * scales.len()) as u32).to_le_bytes());
            scales.iter().for_each(|s| b.extend(s.to_le_bytes()));
            b.extend(0u32.to_le_bytes());
            ModelFile::parse(&b).unwrap()
        };
        let (values, shape) = file(&[10.0, 20.0]).tensor("q").unwrap();
        assert_eq!((values, shape), (vec![1.0, 2.0, 1.5, 2.0], vec![2, 2]));
        for wrong in [&[][..], &[1.0, 2.0, 3.0]] {
            let err = file(wrong).tensor("q").unwrap_err();
            assert!(matches!(err, Error::Scales { .. }), "{err}");
        }
    }
}
