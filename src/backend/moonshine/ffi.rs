//! Safe binding over Moonshine's C API (`libmoonshine.so`).
//!
//! The library is opened at run time rather than linked, so hark builds and starts without
//! it and can fetch it on first use (see `fetch`). Everything the library hands back is
//! copied into owned Rust values before a call returns: the transcript memory belongs to the
//! library and is reused on the next call into the same handle.

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The C header version this binding was written against; the library checks it on load.
const HEADER_VERSION: i32 = 30000;

/// Makes `transcribe_stream` decode the open line now; without it the library waits until
/// enough new audio has arrived (its `transcription_interval` option) and otherwise returns
/// the previous text.
pub const FLAG_FORCE_UPDATE: u32 = 1;

/// Model architecture codes for `Transcriber::load`.
pub const ARCH_TINY: u32 = 0;
pub const ARCH_BASE: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("could not load the Moonshine library {}: {source}", path.display())]
    Open {
        path: PathBuf,
        source: libloading::Error,
    },

    #[error(
        "{} is not a usable Moonshine library (missing symbol {symbol}): {source}",
        path.display()
    )]
    Symbol {
        path: PathBuf,
        symbol: &'static str,
        source: libloading::Error,
    },

    /// A negative status code from the library, with its own description of it. The library
    /// reports nearly everything as -1 "Unknown error" and prints the real cause to stderr.
    #[error(
        "moonshine {call} failed with code {code} ({message}); the cause is in its log on stderr"
    )]
    Call {
        call: &'static str,
        code: i32,
        message: String,
    },

    #[error("invalid argument to moonshine: {0}")]
    InvalidArgument(String),
}

impl Error {
    /// The library's status code, for callers that want to tell bad handles from the rest.
    pub fn code(&self) -> Option<i32> {
        match self {
            Error::Call { code, .. } => Some(*code),
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

// ---- C layout (LP64). The sizes are the ones the wheel's own Python wrapper asserts. ----
// Fields we never read are kept so that the offsets of the ones we do read stay right.

#[repr(C)]
struct RawOption {
    name: *const c_char,
    value: *const c_char,
}

#[repr(C)]
#[allow(dead_code)]
struct RawWord {
    text: *const c_char,
    start: f32,
    end: f32,
    confidence: f32,
}

#[repr(C)]
#[allow(dead_code)]
struct RawSpeakerSpan {
    start_time: f32,
    duration: f32,
    speaker_id: u64,
    speaker_index: u32,
    start_char: u64,
    end_char: u64,
}

#[repr(C)]
#[allow(dead_code)]
struct RawLine {
    text: *const c_char,
    audio_data: *const f32,
    audio_data_count: usize,
    start_time: f32,
    duration: f32,
    id: u64,
    is_complete: i8,
    is_updated: i8,
    is_new: i8,
    has_text_changed: i8,
    have_speakers_changed: i8,
    speaker_spans: *const RawSpeakerSpan,
    speaker_span_count: u64,
    last_transcription_latency_ms: u32,
    words: *const RawWord,
    word_count: u64,
}

#[repr(C)]
struct RawTranscript {
    lines: *const RawLine,
    line_count: u64,
}

// A layout drift would make us walk the line array with the wrong stride: fail the build.
#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::size_of;
    assert!(size_of::<RawOption>() == 16);
    assert!(size_of::<RawWord>() == 24);
    assert!(size_of::<RawSpeakerSpan>() == 40);
    assert!(size_of::<RawLine>() == 88);
    assert!(size_of::<RawTranscript>() == 16);
};

type GetVersionFn = unsafe extern "C" fn() -> i32;
type ErrorToStringFn = unsafe extern "C" fn(i32) -> *const c_char;
type LoadTranscriberFn =
    unsafe extern "C" fn(*const c_char, u32, *const RawOption, u64, i32) -> i32;
type FreeTranscriberFn = unsafe extern "C" fn(i32);
type CreateStreamFn = unsafe extern "C" fn(i32, u32) -> i32;
type StreamFn = unsafe extern "C" fn(i32, i32) -> i32;
type AddAudioFn = unsafe extern "C" fn(i32, i32, *const f32, u64, i32, u32) -> i32;
type TranscribeStreamFn = unsafe extern "C" fn(i32, i32, u32, *mut *mut RawTranscript) -> i32;
type TranscribeBatchFn =
    unsafe extern "C" fn(i32, *const f32, u64, i32, u32, *mut *mut RawTranscript) -> i32;

/// The opened library and its resolved entry points.
///
/// Resolving every symbol up front turns a wrong or truncated file into one clear error at
/// start-up instead of a failure in the middle of a session.
pub struct Library {
    path: PathBuf,
    get_version: GetVersionFn,
    error_to_string: ErrorToStringFn,
    load_transcriber_from_files: LoadTranscriberFn,
    free_transcriber: FreeTranscriberFn,
    create_stream: CreateStreamFn,
    start_stream: StreamFn,
    stop_stream: StreamFn,
    free_stream: StreamFn,
    add_audio_to_stream: AddAudioFn,
    transcribe_stream: TranscribeStreamFn,
    transcribe_without_streaming: TranscribeBatchFn,
    // Keeps the code behind the pointers above mapped; only dropped with them.
    _lib: libloading::Library,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Library {
    /// Opens `libmoonshine.so`. Its onnxruntime is found through the library's own RPATH,
    /// so `path` must stay inside the unpacked wheel layout.
    pub fn load(path: &Path) -> Result<Arc<Library>> {
        // SAFETY: loading runs the library's initialisers; this is the pinned Moonshine
        // build, whose initialisers only set up its own state.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|source| Error::Open {
            path: path.to_owned(),
            source,
        })?;

        macro_rules! sym {
            ($name:literal) => {{
                // SAFETY: the function types above mirror moonshine-c-api.h (version 30000).
                let symbol = unsafe { lib.get(concat!($name, "\0").as_bytes()) };
                *symbol.map_err(|source| Error::Symbol {
                    path: path.to_owned(),
                    symbol: $name,
                    source,
                })?
            }};
        }

        Ok(Arc::new(Library {
            path: path.to_owned(),
            get_version: sym!("moonshine_get_version"),
            error_to_string: sym!("moonshine_error_to_string"),
            load_transcriber_from_files: sym!("moonshine_load_transcriber_from_files"),
            free_transcriber: sym!("moonshine_free_transcriber"),
            create_stream: sym!("moonshine_create_stream"),
            start_stream: sym!("moonshine_start_stream"),
            stop_stream: sym!("moonshine_stop_stream"),
            free_stream: sym!("moonshine_free_stream"),
            add_audio_to_stream: sym!("moonshine_transcribe_add_audio_to_stream"),
            transcribe_stream: sym!("moonshine_transcribe_stream"),
            transcribe_without_streaming: sym!("moonshine_transcribe_without_streaming"),
            _lib: lib,
        }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The library's own version number, for the start-up log line.
    pub fn version(&self) -> i32 {
        // SAFETY: takes no arguments and touches no state.
        unsafe { (self.get_version)() }
    }

    /// Turns a status code into an `Error`, or passes a non-negative one through.
    fn check(&self, call: &'static str, code: i32) -> Result<i32> {
        if code >= 0 {
            return Ok(code);
        }
        // SAFETY: returns a pointer to a static string (or null) for any code.
        let ptr = unsafe { (self.error_to_string)(code) };
        let message = if ptr.is_null() {
            "unknown error".to_owned()
        } else {
            // SAFETY: non-null, NUL-terminated, static.
            unsafe { CStr::from_ptr(ptr) }
                .to_string_lossy()
                .into_owned()
        };
        Err(Error::Call {
            call,
            code,
            message,
        })
    }
}

/// Opaque id of a stream inside one `Transcriber`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamId(i32);

/// One transcript line, copied out of the library.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub text: String,
    /// Stable across updates of the same line; unique within a transcriber.
    pub id: u64,
    /// Seconds from the start of the stream.
    pub start_time: f32,
    pub duration: f32,
    /// The voice-activity detector saw the end of this utterance (or the stream was
    /// stopped); the text is final.
    pub is_complete: bool,
    pub is_updated: bool,
    pub is_new: bool,
    pub has_text_changed: bool,
    pub last_transcription_latency_ms: u32,
    /// Filled only on a handle loaded with the `word_timestamps=true` option.
    pub words: Vec<Word>,
}

/// One word of a line, with when it is spoken.
#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    pub text: String,
    /// Seconds from the start of the audio decoded.
    pub start: f32,
    pub end: f32,
}

/// The text of a decode's lines, in order, blank lines left out.
pub fn joined_text(lines: &[Line]) -> String {
    lines
        .iter()
        .map(|l| l.text.trim())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// One loaded model.
///
/// The library allows only one call into a handle at a time, so this is `Send` but not
/// `Sync`: it belongs to exactly one worker thread, which may run several streams on it.
pub struct Transcriber {
    lib: Arc<Library>,
    handle: i32,
    /// Streams not yet freed, so that dropping the transcriber cannot leak them.
    streams: RefCell<Vec<i32>>,
    // RefCell already makes this !Sync; spelled out because the API relies on it.
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

impl std::fmt::Debug for Transcriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transcriber")
            .field("handle", &self.handle)
            .field("streams", &self.streams.borrow().len())
            .finish()
    }
}

impl Transcriber {
    /// Loads the model files in `model_dir` (encoder, decoder, tokenizer).
    ///
    /// `options` are the library's string options, e.g. `("vad_threshold", "0.5")`.
    pub fn load(
        lib: Arc<Library>,
        model_dir: &Path,
        arch: u32,
        options: &[(String, String)],
    ) -> Result<Transcriber> {
        // The library would only say "Unknown error" for this, the likeliest mistake.
        if !model_dir.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "model directory {} does not exist",
                model_dir.display()
            )));
        }
        let dir = path_to_cstring(model_dir)?;
        let owned = options
            .iter()
            .map(|(name, value)| Ok((to_cstring(name)?, to_cstring(value)?)))
            .collect::<Result<Vec<_>>>()?;
        let raw: Vec<RawOption> = owned
            .iter()
            .map(|(name, value)| RawOption {
                name: name.as_ptr(),
                value: value.as_ptr(),
            })
            .collect();
        let opts_ptr = if raw.is_empty() {
            std::ptr::null()
        } else {
            raw.as_ptr()
        };

        // SAFETY: all strings are NUL-terminated and outlive the call (`owned`, `dir`); the
        // library copies what it keeps.
        let code = unsafe {
            (lib.load_transcriber_from_files)(
                dir.as_ptr(),
                arch,
                opts_ptr,
                raw.len() as u64,
                HEADER_VERSION,
            )
        };
        let handle = lib.check("load_transcriber_from_files", code)?;
        Ok(Transcriber {
            lib,
            handle,
            streams: RefCell::new(Vec::new()),
            _not_sync: PhantomData,
        })
    }

    /// Creates a stream and starts it, ready for audio.
    pub fn create_stream(&self) -> Result<StreamId> {
        // SAFETY: plain integer arguments; the handle is live for as long as `self`.
        let code = unsafe { (self.lib.create_stream)(self.handle, 0) };
        let stream = self.lib.check("create_stream", code)?;
        // SAFETY: as above, `stream` was just created on this handle.
        let code = unsafe { (self.lib.start_stream)(self.handle, stream) };
        if let Err(e) = self.lib.check("start_stream", code) {
            // SAFETY: as above.
            unsafe { (self.lib.free_stream)(self.handle, stream) };
            return Err(e);
        }
        self.streams.borrow_mut().push(stream);
        Ok(StreamId(stream))
    }

    /// Appends audio (samples in -1..1) to a stream. The library resamples other rates
    /// itself; nothing is decoded until `transcribe_stream`.
    pub fn add_audio(&self, stream: StreamId, samples: &[f32], sample_rate: u32) -> Result<()> {
        if samples.is_empty() {
            return Ok(());
        }
        let rate = sample_rate_arg(sample_rate)?;
        // SAFETY: the pointer and length describe a live slice; the library copies it.
        let code = unsafe {
            (self.lib.add_audio_to_stream)(
                self.handle,
                stream.0,
                samples.as_ptr(),
                samples.len() as u64,
                rate,
                0,
            )
        };
        self.lib.check("transcribe_add_audio_to_stream", code)?;
        Ok(())
    }

    /// Decodes what the stream holds and returns all of its lines so far, including lines
    /// completed earlier (those come back with `is_updated == false`).
    ///
    /// Without `FLAG_FORCE_UPDATE` the open line is re-decoded only once enough new audio
    /// has arrived (about 0.5 s by default).
    pub fn transcribe_stream(&self, stream: StreamId, flags: u32) -> Result<Vec<Line>> {
        let mut out: *mut RawTranscript = std::ptr::null_mut();
        // SAFETY: `out` is a valid place for the library to store its pointer.
        let code = unsafe { (self.lib.transcribe_stream)(self.handle, stream.0, flags, &mut out) };
        self.lib.check("transcribe_stream", code)?;
        // SAFETY: on success `out` is null or points at a transcript the library keeps valid
        // until the next call into this handle, and `&self` (not Sync) rules that out.
        Ok(unsafe { copy_transcript(out) })
    }

    /// Marks the end of a stream's audio, so the next `transcribe_stream` completes the
    /// open line.
    ///
    /// Audio added since the last decode is dropped, not decoded: call `transcribe_stream`
    /// with `FLAG_FORCE_UPDATE` first, or use `finish_stream`. Adding audio to a stopped
    /// stream is an error.
    pub fn stop_stream(&self, stream: StreamId) -> Result<()> {
        // SAFETY: plain integer arguments.
        let code = unsafe { (self.lib.stop_stream)(self.handle, stream.0) };
        self.lib.check("stop_stream", code)?;
        Ok(())
    }

    /// Ends a stream without losing its tail: decodes all pending audio, stops, and returns
    /// the final lines (all complete).
    pub fn finish_stream(&self, stream: StreamId) -> Result<Vec<Line>> {
        self.transcribe_stream(stream, FLAG_FORCE_UPDATE)?;
        self.stop_stream(stream)?;
        self.transcribe_stream(stream, 0)
    }

    pub fn free_stream(&self, stream: StreamId) -> Result<()> {
        // SAFETY: plain integer arguments.
        let code = unsafe { (self.lib.free_stream)(self.handle, stream.0) };
        self.streams.borrow_mut().retain(|s| *s != stream.0);
        self.lib.check("free_stream", code)?;
        Ok(())
    }

    /// Transcribes a whole recording in one call (segmented into lines by the library).
    pub fn transcribe_without_streaming(
        &self,
        samples: &[f32],
        sample_rate: u32,
    ) -> Result<Vec<Line>> {
        if samples.is_empty() {
            return Ok(Vec::new());
        }
        let rate = sample_rate_arg(sample_rate)?;
        let mut out: *mut RawTranscript = std::ptr::null_mut();
        // SAFETY: the slice is live for the call; `out` is a valid place for the pointer.
        let code = unsafe {
            (self.lib.transcribe_without_streaming)(
                self.handle,
                samples.as_ptr(),
                samples.len() as u64,
                rate,
                0,
                &mut out,
            )
        };
        self.lib.check("transcribe_without_streaming", code)?;
        // SAFETY: as in `transcribe_stream`.
        Ok(unsafe { copy_transcript(out) })
    }
}

impl Drop for Transcriber {
    fn drop(&mut self) {
        // SAFETY: the handle and streams are ours and nothing else can call into them now.
        unsafe {
            for stream in self.streams.get_mut().drain(..) {
                (self.lib.free_stream)(self.handle, stream);
            }
            (self.lib.free_transcriber)(self.handle);
        }
    }
}

/// Copies a library-owned transcript into owned lines.
///
/// # Safety
/// `raw` must be null or point at a valid `transcript_t` whose line array and strings stay
/// valid for the duration of this call.
unsafe fn copy_transcript(raw: *const RawTranscript) -> Vec<Line> {
    // SAFETY: caller guarantees `raw` is null or valid.
    let Some(transcript) = (unsafe { raw.as_ref() }) else {
        return Vec::new();
    };
    // SAFETY: the library reports `line_count` lines at `lines`.
    unsafe { raw_slice(transcript.lines, transcript.line_count) }
        .iter()
        .map(|line| Line {
            // SAFETY: the library's line text is null or NUL-terminated, valid for this call.
            text: unsafe { owned_text(line.text) },
            id: line.id,
            start_time: line.start_time,
            duration: line.duration,
            is_complete: line.is_complete != 0,
            is_updated: line.is_updated != 0,
            is_new: line.is_new != 0,
            has_text_changed: line.has_text_changed != 0,
            last_transcription_latency_ms: line.last_transcription_latency_ms,
            // SAFETY: as for the line array, with the line's own word array and count.
            words: unsafe { raw_slice(line.words, line.word_count) }
                .iter()
                .map(|w| Word {
                    // SAFETY: as for a line's text.
                    text: unsafe { owned_text(w.text) },
                    start: w.start,
                    end: w.end,
                })
                .collect(),
        })
        .collect()
}

/// The library's array of `count` items at `items`; empty for a null pointer.
///
/// # Safety
/// `items` must be null or point at `count` valid items that outlive the returned slice.
unsafe fn raw_slice<'a, T>(items: *const T, count: u64) -> &'a [T] {
    match usize::try_from(count) {
        Ok(count) if !items.is_null() && count > 0 => {
            // SAFETY: non-null, and the caller guarantees the rest.
            unsafe { std::slice::from_raw_parts(items, count) }
        }
        _ => &[],
    }
}

/// # Safety
/// `text` must be null or a NUL-terminated string valid for the duration of this call.
unsafe fn owned_text(text: *const c_char) -> String {
    if text.is_null() {
        return String::new();
    }
    // SAFETY: non-null, and the caller guarantees the rest.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

fn sample_rate_arg(sample_rate: u32) -> Result<i32> {
    match i32::try_from(sample_rate) {
        Ok(rate) if rate > 0 => Ok(rate),
        _ => Err(Error::InvalidArgument(format!(
            "sample rate {sample_rate} Hz"
        ))),
    }
}

fn to_cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::InvalidArgument(format!("{s:?} contains a NUL byte")))
}

fn path_to_cstring(path: &Path) -> Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::InvalidArgument(format!("path {} contains a NUL byte", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_is_a_clear_error() {
        let err = Library::load(Path::new("/nonexistent/libmoonshine.so")).unwrap_err();
        assert!(matches!(err, Error::Open { .. }), "{err}");
        assert!(err.to_string().contains("/nonexistent/libmoonshine.so"));
    }

    #[test]
    fn transcriber_is_send() {
        fn is_send<T: Send>() {}
        fn is_send_sync<T: Send + Sync>() {}
        is_send::<Transcriber>();
        is_send_sync::<Library>();
    }

    #[test]
    fn null_transcript_is_empty() {
        // SAFETY: null is allowed.
        assert!(unsafe { copy_transcript(std::ptr::null()) }.is_empty());
        let raw = RawTranscript {
            lines: std::ptr::null(),
            line_count: 3,
        };
        // SAFETY: points at a valid transcript whose null line array must be ignored.
        assert!(unsafe { copy_transcript(&raw) }.is_empty());
    }
}
