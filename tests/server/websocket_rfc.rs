//! The websocket layer answers broken input as RFC 6455 section 7.4.1 says: a text message
//! that is not UTF-8 closes 1007, a message over the size limit 1009, broken framing 1002;
//! never a close frame without a code, before or after the start frame. Each case is sent
//! by hand over a raw TCP socket, and the server goes on serving other calls.

use std::time::Duration;

use hark::protocol::{CLOSE_INVALID_DATA, CLOSE_PROTOCOL, CLOSE_TOO_BIG};
use hark_bench::protocol::ServerMessage;
use hark_testkit::raw::{BINARY, CONTINUATION, FIN, PING, RSV1, RawWs, TEXT, frame};
use hark_testkit::{Call, TestServer, backends, config_with_default_backend, start_frame};

const PATH: &str = "/api/custom-transcriber";
const LIMIT: usize = 4096;

/// What a case sends after the upgrade (and, if `started`, after a good start frame).
struct Case {
    name: &'static str,
    started: bool,
    bytes: Vec<u8>,
    code: u16,
    error: &'static str,
}

fn cases() -> Vec<Case> {
    let not_utf8 = frame(FIN | TEXT, &[b'{', 0xff, 0xfe, b'}'], true);
    let too_big = frame(FIN | BINARY, &vec![0; LIMIT + 2], true);
    // Beyond the websocket layer's own cap: the header alone is refused, no payload needed.
    let mut beyond_cap = vec![FIN | BINARY, 0x80 | 127];
    beyond_cap.extend_from_slice(&(1u64 << 20).to_be_bytes());
    beyond_cap.extend_from_slice(&[1, 2, 3, 4]);
    let unmasked = frame(FIN | BINARY, &[0; 64], false);
    let reserved_bits = frame(FIN | RSV1 | BINARY, &[0; 64], true);
    let data_opcode = frame(FIN | 0x3, &[0; 8], true);
    let control_opcode = frame(FIN | 0xb, &[], true);
    let fragmented_ping = frame(PING, b"hi", true);
    let big_ping = frame(FIN | PING, &[0; 126], true);
    let lone_continuation = frame(FIN | CONTINUATION, &[0; 8], true);
    let mut interrupted = frame(BINARY, &[0; 8], true);
    interrupted.extend(frame(FIN | TEXT, b"{}", true));
    let case = |name, started, bytes: &Vec<u8>, code, error| Case {
        name,
        started,
        bytes: bytes.clone(),
        code,
        error,
    };
    vec![
        case(
            "not UTF-8 before start",
            false,
            &not_utf8,
            CLOSE_INVALID_DATA,
            "invalid-utf8",
        ),
        case(
            "not UTF-8 after start",
            true,
            &not_utf8,
            CLOSE_INVALID_DATA,
            "invalid-utf8",
        ),
        case(
            "over max_frame_bytes",
            true,
            &too_big,
            CLOSE_TOO_BIG,
            "frame-too-large",
        ),
        case(
            "beyond the hard cap, before start",
            false,
            &beyond_cap,
            CLOSE_TOO_BIG,
            "frame-too-large",
        ),
        case(
            "beyond the hard cap, after start",
            true,
            &beyond_cap,
            CLOSE_TOO_BIG,
            "frame-too-large",
        ),
        case(
            "unmasked before start",
            false,
            &unmasked,
            CLOSE_PROTOCOL,
            "protocol-violation",
        ),
        case(
            "unmasked after start",
            true,
            &unmasked,
            CLOSE_PROTOCOL,
            "protocol-violation",
        ),
        case(
            "reserved bits",
            true,
            &reserved_bits,
            CLOSE_PROTOCOL,
            "protocol-violation",
        ),
        case(
            "unknown data opcode",
            true,
            &data_opcode,
            CLOSE_PROTOCOL,
            "protocol-violation",
        ),
        case(
            "unknown control opcode",
            false,
            &control_opcode,
            CLOSE_PROTOCOL,
            "protocol-violation",
        ),
        case(
            "fragmented ping",
            true,
            &fragmented_ping,
            CLOSE_PROTOCOL,
            "protocol-violation",
        ),
        case(
            "ping over 125 bytes",
            true,
            &big_ping,
            CLOSE_PROTOCOL,
            "protocol-violation",
        ),
        case(
            "continuation without start",
            true,
            &lone_continuation,
            CLOSE_PROTOCOL,
            "protocol-violation",
        ),
        case(
            "new message inside a fragmented one",
            true,
            &interrupted,
            CLOSE_PROTOCOL,
            "protocol-violation",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_input_gets_the_rfc_close_code_and_the_server_carries_on() {
    let mut config = config_with_default_backend("recorder");
    config.max_frame_bytes = LIMIT;
    let server = TestServer::start(config, backends::registry()).await;
    for case in cases() {
        let mut ws = RawWs::connect(server.addr, PATH).await;
        if case.started {
            ws.send(TEXT, start_frame(16000, 2).as_bytes()).await;
            ws.send(BINARY, &[0; 1280]).await;
        }
        ws.send_raw(&case.bytes).await;
        let got = ws.read_until_close(Duration::from_secs(20)).await;
        let (code, reason) = got
            .close
            .clone()
            .unwrap_or_else(|| panic!("{}: no close frame with a code: {got:?}", case.name));
        assert_eq!(code, case.code, "{}: {got:?}", case.name);
        assert_eq!(reason, case.error, "{}", case.name);
        assert_eq!(
            got.error_code().as_deref(),
            Some(case.error),
            "{}: the error message comes before the close: {got:?}",
            case.name
        );
    }

    // A good call on the same server is served as ever.
    let mut call = Call::open(&server.ws_url(PATH), 16000, 2)
        .await
        .expect("call opens");
    call.bytes(vec![0; 1280]).await;
    assert!(
        call.wait_for(Duration::from_secs(20), |m| matches!(
            m,
            ServerMessage::TranscriberResponse { .. }
        ))
        .await,
        "a good call after the broken ones gets transcripts"
    );
    let got = call.hang_up().await;
    assert!(got.error().is_none(), "{:?}", got.error());
    server.shutdown().await.unwrap();
}
