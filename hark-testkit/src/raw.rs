//! A websocket client written by hand over a raw TCP socket, to send what a library client
//! never would: broken framing, half frames, unmasked frames (RFC 6455 section 5).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const FIN: u8 = 0x80;
pub const RSV1: u8 = 0x40;
pub const CONTINUATION: u8 = 0x0;
pub const TEXT: u8 = 0x1;
pub const BINARY: u8 = 0x2;
pub const CLOSE: u8 = 0x8;
pub const PING: u8 = 0x9;
pub const PONG: u8 = 0xa;

const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// One frame: `first` is the FIN, RSV and opcode byte; masked as a client must unless told.
pub fn frame(first: u8, payload: &[u8], masked: bool) -> Vec<u8> {
    let mut out = vec![first];
    let mask_bit = if masked { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(mask_bit | n as u8),
        n if n <= 0xffff => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    if masked {
        out.extend_from_slice(&MASK);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
    } else {
        out.extend_from_slice(payload);
    }
    out
}

/// What the server sent until it closed.
#[derive(Debug, Default)]
pub struct Closing {
    pub texts: Vec<String>,
    /// The close frame's code and reason; `None` if the connection ended without one.
    pub close: Option<(u16, String)>,
}

impl Closing {
    /// The `error` field of the first error message.
    pub fn error_code(&self) -> Option<String> {
        self.texts.iter().find_map(|t| {
            let v: serde_json::Value = serde_json::from_str(t).ok()?;
            (v["type"] == "error").then(|| v["error"].as_str().unwrap_or_default().to_string())
        })
    }
}

pub struct RawWs {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl RawWs {
    /// Connects and upgrades to a websocket by hand; panics unless the server answers 101.
    pub async fn connect(addr: SocketAddr, path: &str) -> Self {
        Self::try_connect(addr, path)
            .await
            .unwrap_or_else(|status| panic!("upgrade refused: {status}"))
    }

    /// Connects and upgrades; the response's status line if it is not 101.
    pub async fn try_connect(addr: SocketAddr, path: &str) -> Result<Self, String> {
        let stream = TcpStream::connect(addr).await.expect("connect");
        Self::upgrade(stream, addr, path).await
    }

    /// Upgrades an open connection (e.g. one with a small receive buffer).
    pub async fn upgrade(
        mut stream: TcpStream,
        addr: SocketAddr,
        path: &str,
    ) -> Result<Self, String> {
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut buf = Vec::new();
        let end = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            let mut chunk = [0u8; 1024];
            let n = stream.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                return Err(String::from_utf8_lossy(&buf).into_owned());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        if !head.starts_with("HTTP/1.1 101") {
            return Err(head.lines().next().unwrap_or_default().to_string());
        }
        buf.drain(..end);
        Ok(Self { stream, buf })
    }

    /// Writes bytes as they are; a write the server refuses (it closed) is not an error.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes).await;
    }

    /// Sends one whole, masked, final frame.
    pub async fn send(&mut self, opcode: u8, payload: &[u8]) {
        self.send_raw(&frame(FIN | opcode, payload, true)).await;
    }

    async fn fill(&mut self, want: usize) -> bool {
        while self.buf.len() < want {
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
        true
    }

    /// One frame from the server: (opcode, payload); `None` when the connection ended.
    async fn next_frame(&mut self) -> Option<(u8, Vec<u8>)> {
        if !self.fill(2).await {
            return None;
        }
        let opcode = self.buf[0] & 0x0f;
        let (len, head) = match self.buf[1] & 0x7f {
            126 => {
                if !self.fill(4).await {
                    return None;
                }
                (
                    usize::from(u16::from_be_bytes([self.buf[2], self.buf[3]])),
                    4,
                )
            }
            127 => {
                if !self.fill(10).await {
                    return None;
                }
                let mut b = [0u8; 8];
                b.copy_from_slice(&self.buf[2..10]);
                (u64::from_be_bytes(b) as usize, 10)
            }
            n => (usize::from(n), 2),
        };
        if !self.fill(head + len).await {
            return None;
        }
        let payload = self.buf[head..head + len].to_vec();
        self.buf.drain(..head + len);
        Some((opcode, payload))
    }

    /// Reads (bounded) until a pong with `payload`; false if the server closed first.
    pub async fn pong_within(&mut self, payload: &[u8], limit: Duration) -> bool {
        let read = async {
            while let Some((opcode, got)) = self.next_frame().await {
                match opcode {
                    PONG if got == payload => return true,
                    CLOSE => return false,
                    _ => {}
                }
            }
            false
        };
        tokio::time::timeout(limit, read).await.unwrap_or(false)
    }

    /// Reads (bounded) until the server's close frame or the end of the connection.
    pub async fn read_until_close(&mut self, limit: Duration) -> Closing {
        let mut got = Closing::default();
        let read = async {
            while let Some((opcode, payload)) = self.next_frame().await {
                match opcode {
                    TEXT => got
                        .texts
                        .push(String::from_utf8_lossy(&payload).into_owned()),
                    CLOSE => {
                        if payload.len() >= 2 {
                            let code = u16::from_be_bytes([payload[0], payload[1]]);
                            let reason = String::from_utf8_lossy(&payload[2..]).into_owned();
                            got.close = Some((code, reason));
                        }
                        return;
                    }
                    _ => {}
                }
            }
        };
        tokio::time::timeout(limit, read)
            .await
            .expect("server neither closed nor dropped the connection in time");
        got
    }
}
