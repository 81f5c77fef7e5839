//! noq-peer: an hq-interop client and server on top of the `noq` crate (a
//! quinn fork with the QUIC multipath extension), so that mpq's tests can
//! check multipath interoperability against a stack nobody here wrote.
//!
//! ```text
//! noq-peer serve --addr 127.0.0.1:0 --root DIR [--cert PEM --key PEM] [common flags]
//! noq-peer get --addr HOST:PORT --path /x [--local IP:PORT]... [--out FILE]
//!              [--ca PEM | --insecure] [--server-name NAME]
//!              [--close-path-after BYTES] [common flags]
//! common flags: [--max-paths N] [--max-rate BYTES_PER_SECOND]
//! ```
//!
//! hq-interop: the client opens a bidirectional stream and sends
//! "GET /path\r\n" and a FIN; the server answers with the file and a FIN.
//!
//! Both commands print JSON lines on stdout. `serve` prints
//! `{"event":"listening","addr":...}` once bound, then one `"served"` line per
//! request once the peer acknowledged the whole response, with per-path
//! statistics. `get` prints one line with the byte count, the SHA-256 of the
//! body, timings, whether multipath was negotiated and per-path statistics.
//! Bad flags exit 2, other failures exit 1 (with `{"ok":false,...}`).
//!
//! `RUST_LOG` (e.g. `noq_proto=debug`) turns on noq's tracing output on
//! stderr; built with
//! `--features qlog`, `QLOGDIR` collects qlog traces.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use noq::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use noq::rustls;
use noq::rustls::pki_types::pem::PemObject;
use noq::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use noq::{Connection, FourTuple, PathError, PathId, PathStatus, TransportConfig, VarInt};

/// The application protocol of hq-interop.
const ALPN: &[u8] = b"hq-interop";
/// The stream error code of a missing file (as in mpq's internal/hq).
const ERROR_NOT_FOUND: u32 = 0x10;
/// Longest request line accepted.
const MAX_REQUEST: usize = 8 << 10;

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T> = std::result::Result<T, Error>;

fn main() {
    init_logging();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cmd = match Command::parse(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("noq-peer: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let res = rt.block_on(async {
        match cmd {
            Command::Serve(o) => serve(o).await,
            Command::Get(o) => get(o).await,
        }
    });
    if let Err(e) = res {
        println!("{{\"ok\":false,\"error\":{}}}", json_str(&e.to_string()));
        eprintln!("noq-peer: {e}");
        std::process::exit(1);
    }
}

/// Sends noq's tracing output to stderr when RUST_LOG is set, with
/// directives such as `debug` or `noq_proto=trace,noq=debug` (targets and
/// levels only: no span filters, which would need the regex engine).
fn init_logging() {
    use tracing_subscriber::prelude::*;
    let Ok(spec) = std::env::var("RUST_LOG") else {
        return;
    };
    let filter: tracing_subscriber::filter::Targets = match spec.parse() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("noq-peer: RUST_LOG={spec}: {e}");
            std::process::exit(2);
        }
    };
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(filter)
        .init();
}

const USAGE: &str = "usage:
  noq-peer serve --addr IP:PORT --root DIR [--cert PEM --key PEM] [common flags]
  noq-peer get --addr IP:PORT --path /x [--local IP:PORT]... [--out FILE]
               [--ca PEM | --insecure] [--server-name NAME]
               [--close-path-after BYTES] [common flags]
  --close-path-after  close the last path opened (PATH_ABANDON) after BYTES of the body
common flags:
  --max-paths N       concurrent paths allowed (initial_max_path_id N-1), default 4
  --max-rate BYTES    pacing limit of each path in bytes per second, default none";

/// Transport options of both commands.
#[derive(Clone, Copy)]
struct TransportOpts {
    /// Concurrent paths we allow (initial_max_path_id + 1).
    max_paths: u32,
    /// noq paces each path on its own; this caps every path's rate.
    max_rate: Option<u64>,
}

/// Options of `serve`.
struct ServeOpts {
    addr: SocketAddr,
    root: PathBuf,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    transport: TransportOpts,
}

/// Options of `get`.
struct GetOpts {
    addr: SocketAddr,
    path: String,
    locals: Vec<SocketAddr>,
    out: Option<PathBuf>,
    ca: Option<PathBuf>,
    insecure: bool,
    /// Close the last path opened (PATH_ABANDON) once this many bytes of
    /// the response arrived.
    close_path_after: Option<u64>,
    server_name: String,
    transport: TransportOpts,
}

enum Command {
    Serve(ServeOpts),
    Get(GetOpts),
}

impl Command {
    /// Parses `serve ...` or `get ...` (flags as `--name value`).
    fn parse(args: &[String]) -> std::result::Result<Command, String> {
        let (sub, rest) = args.split_first().ok_or("no command")?;
        let mut addr = None;
        let mut root = None;
        let mut cert = None;
        let mut key = None;
        let mut path = None;
        let mut locals = Vec::new();
        let mut out = None;
        let mut ca = None;
        let mut insecure = false;
        let mut close_path_after = None;
        let mut server_name = "localhost".to_string();
        let mut transport = TransportOpts {
            max_paths: 4,
            max_rate: None,
        };
        let mut it = rest.iter();
        while let Some(flag) = it.next() {
            if flag == "--insecure" {
                insecure = true;
                continue;
            }
            let val = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let addr_of = |v: &str| {
                v.parse::<SocketAddr>()
                    .map_err(|e| format!("{flag} {v}: {e}"))
            };
            match flag.as_str() {
                "--addr" => addr = Some(addr_of(val)?),
                "--root" => root = Some(PathBuf::from(val)),
                "--cert" => cert = Some(PathBuf::from(val)),
                "--key" => key = Some(PathBuf::from(val)),
                "--path" => path = Some(val.clone()),
                "--local" => locals.push(addr_of(val)?),
                "--out" => out = Some(PathBuf::from(val)),
                "--ca" => ca = Some(PathBuf::from(val)),
                "--server-name" => server_name = val.clone(),
                "--close-path-after" => {
                    close_path_after = Some(
                        val.parse()
                            .map_err(|e| format!("--close-path-after {val}: {e}"))?,
                    )
                }
                "--max-paths" => {
                    transport.max_paths = val
                        .parse()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| format!("--max-paths {val}: want an integer >= 1"))?
                }
                "--max-rate" => {
                    transport.max_rate = Some(
                        val.parse()
                            .ok()
                            .filter(|n| *n >= 1)
                            .ok_or_else(|| format!("--max-rate {val}: want an integer >= 1"))?,
                    )
                }
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        let addr = addr.ok_or("--addr is required")?;
        match sub.as_str() {
            "serve" => {
                if cert.is_some() != key.is_some() {
                    return Err("--cert and --key go together".into());
                }
                Ok(Command::Serve(ServeOpts {
                    addr,
                    root: root.ok_or("--root is required")?,
                    cert,
                    key,
                    transport,
                }))
            }
            "get" => {
                let path = path.ok_or("--path is required")?;
                if !path.starts_with('/') {
                    return Err("--path must start with /".into());
                }
                Ok(Command::Get(GetOpts {
                    addr,
                    path,
                    locals,
                    out,
                    ca,
                    insecure,
                    close_path_after,
                    server_name,
                    transport,
                }))
            }
            _ => Err(format!("unknown command {sub}")),
        }
    }
}

/// The transport configuration of both roles: multipath on, with up to
/// `max_paths` concurrent paths (initial_max_path_id = max_paths - 1).
fn transport(o: TransportOpts) -> Arc<TransportConfig> {
    let mut t = TransportConfig::default();
    t.max_concurrent_multipath_paths(o.max_paths);
    // noq's scheduler fills the lowest path ID first and moves to the next
    // path only while that one is blocked (congestion window or pacing):
    // on an unloaded loopback the first path takes almost everything. A
    // per-path rate limit spreads a bulk transfer over the paths.
    t.max_outgoing_bytes_per_second(o.max_rate);
    #[cfg(feature = "qlog")]
    t.qlog_from_env("noq-peer");
    Arc::new(t)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

// ---------------------------------------------------------------- server

async fn serve(o: ServeOpts) -> Result<()> {
    let (chain, key) = match (&o.cert, &o.key) {
        (Some(c), Some(k)) => (
            CertificateDer::pem_file_iter(c)
                .map_err(|e| format!("{}: {e}", c.display()))?
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| format!("{}: {e}", c.display()))?,
            PrivateKeyDer::from_pem_file(k).map_err(|e| format!("{}: {e}", k.display()))?,
        ),
        _ => {
            let c =
                rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])?;
            let key = PrivatePkcs8KeyDer::from(c.signing_key.serialize_der());
            (vec![c.cert.der().clone()], key.into())
        }
    };
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.key_log = Arc::new(rustls::KeyLogFile::new()); // only with SSLKEYLOGFILE
    let mut cfg = noq::ServerConfig::with_crypto(Arc::new(QuicServerConfig::try_from(tls)?));
    cfg.transport_config(transport(o.transport));

    let ep = noq::Endpoint::server(cfg, o.addr)?;
    println!(
        "{{\"event\":\"listening\",\"addr\":{}}}",
        json_str(&ep.local_addr()?.to_string())
    );
    let root = Arc::new(o.root);
    let max_paths = o.transport.max_paths;
    while let Some(inc) = ep.accept().await {
        let root = root.clone();
        tokio::spawn(async move {
            let conn = match inc.await {
                Ok(c) => c,
                Err(e) => return eprintln!("noq-peer: handshake: {e}"),
            };
            while let Ok((send, recv)) = conn.accept_bi().await {
                let (conn, root) = (conn.clone(), root.clone());
                tokio::spawn(async move {
                    if let Err(e) = answer(&conn, send, recv, &root, max_paths).await {
                        eprintln!("noq-peer: request: {e}");
                    }
                });
            }
        });
    }
    Ok(())
}

/// Answers one hq-interop request, then prints a `"served"` line once the
/// client acknowledged the whole response.
async fn answer(
    conn: &Connection,
    mut send: noq::SendStream,
    mut recv: noq::RecvStream,
    root: &Path,
    max_paths: u32,
) -> Result<()> {
    let req = recv.read_to_end(MAX_REQUEST).await?;
    let req = String::from_utf8(req)?;
    let line = req.trim_end_matches(['\r', '\n']);
    let Some(name) = line.strip_prefix("GET ").and_then(resolve(root)) else {
        send.reset(VarInt::from_u32(ERROR_NOT_FOUND))?;
        return Err(format!("bad request {line:?}").into());
    };
    let body = match std::fs::read(&name) {
        Ok(b) => b,
        Err(e) => {
            send.reset(VarInt::from_u32(ERROR_NOT_FOUND))?;
            return Err(format!("{}: {e}", name.display()).into());
        }
    };
    let start = Instant::now();
    send.write_all(&body).await?;
    send.finish()?;
    // Resolves once the peer acknowledged every byte of the stream.
    send.stopped().await?;
    let mut j = String::new();
    write!(
        j,
        "{{\"event\":\"served\",\"path\":{},\"bytes\":{},\"ms\":{:.1},\"multipath\":{},\"paths\":{}}}",
        json_str(line.trim_start_matches("GET ")),
        body.len(),
        start.elapsed().as_secs_f64() * 1e3,
        conn.is_multipath_enabled(),
        paths_json(conn, max_paths)
    )?;
    println!("{j}");
    Ok(())
}

/// Maps a request path to a file under root, refusing anything that would
/// leave it.
fn resolve(root: &Path) -> impl Fn(&str) -> Option<PathBuf> + '_ {
    move |p: &str| {
        let rel = Path::new(p.strip_prefix('/')?);
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return None;
        }
        Some(root.join(rel))
    }
}

// ---------------------------------------------------------------- client

/// Verifies nothing: for `--insecure` only.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> std::result::Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        msg: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            msg,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        msg: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            msg,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

async fn get(o: GetOpts) -> Result<()> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?;
    let mut tls = if o.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider())))
            .with_no_client_auth()
    } else {
        let ca = o.ca.as_ref().ok_or("need --ca PEM or --insecure")?;
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_file_iter(ca).map_err(|e| format!("{}: {e}", ca.display()))? {
            roots.add(c.map_err(|e| format!("{}: {e}", ca.display()))?)?;
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.key_log = Arc::new(rustls::KeyLogFile::new());
    let mut cfg = noq::ClientConfig::new(Arc::new(QuicClientConfig::try_from(tls)?));
    cfg.transport_config(transport(o.transport));

    // One socket serves every path: noq sends each path's datagrams with
    // that path's source IP (IP_PKTINFO) and only the IP of a path's local
    // address is used, so with several --local addresses the socket is
    // bound to the unspecified address (with the first one's port). The
    // first path's source address is the one the kernel picks towards the
    // server; each further --local opens a path from its IP.
    let bind = match o.locals.as_slice() {
        [] => SocketAddr::new(unspecified(o.addr.ip()), 0),
        [one] => *one,
        [first, ..] => SocketAddr::new(unspecified(first.ip()), first.port()),
    };
    let ep = noq::Endpoint::client(bind)?;
    let start = Instant::now();
    let conn = ep.connect_with(cfg, o.addr, &o.server_name)?.await?;
    let handshake = start.elapsed();
    let multipath = conn.is_multipath_enabled();

    let mut paths = Vec::new();
    for local in o.locals.iter().skip(1) {
        if !multipath {
            return Err("multipath not negotiated: cannot open more paths".into());
        }
        paths.push(open_path(&conn, FourTuple::new(o.addr, Some(local.ip()))).await?);
    }

    let (mut send, mut recv) = conn.open_bi().await?;
    send.write_all(format!("GET {}\r\n", o.path).as_bytes())
        .await?;
    send.finish()?;
    let mut file = match &o.out {
        Some(p) => Some(std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => None,
    };
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    let mut n = 0u64;
    let mut closed = false;
    while let Some(chunk) = recv.read_chunk(1 << 20).await? {
        hash.update(&chunk);
        n += chunk.len() as u64;
        if !closed && o.close_path_after.is_some_and(|at| n >= at) {
            // The Path handle stays alive, which keeps its statistics.
            let p: &noq::Path = paths
                .last()
                .ok_or("--close-path-after needs a second --local")?;
            p.close()?;
            closed = true;
        }
        if let Some(f) = file.as_mut() {
            std::io::Write::write_all(f, &chunk)?;
        }
    }
    let total = start.elapsed();
    let paths = paths_json(&conn, o.transport.max_paths);
    conn.close(VarInt::from_u32(0), b"done");
    // Let the CONNECTION_CLOSE go out, but do not linger for long.
    let _ = tokio::time::timeout(Duration::from_secs(2), ep.wait_idle()).await;

    let sum: String = hash
        .finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!(
        "{{\"ok\":true,\"bytes\":{n},\"sha256\":\"{sum}\",\"handshake_ms\":{:.1},\"total_ms\":{:.1},\"multipath\":{multipath},\"paths\":{paths}}}",
        handshake.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3,
    );
    Ok(())
}

/// Opens a path and waits until it is validated. The server's connection
/// IDs for the next path ID may still be on their way right after the
/// handshake, so RemoteCidsExhausted is retried for a few seconds.
async fn open_path(conn: &Connection, tuple: FourTuple) -> Result<noq::Path> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout(
            Duration::from_secs(10),
            conn.open_path(tuple, PathStatus::Available),
        )
        .await
        {
            Err(_) => return Err(format!("path from {tuple:?}: validation timed out").into()),
            Ok(Ok(p)) => return Ok(p),
            Ok(Err(PathError::RemoteCidsExhausted)) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Ok(Err(e)) => return Err(format!("path from {tuple:?}: {e}").into()),
        }
    }
}

fn unspecified(like: IpAddr) -> IpAddr {
    match like {
        IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
    }
}

// ---------------------------------------------------------------- output

/// Per-path statistics as a JSON array: UDP payload bytes and datagrams
/// sent and received on each path ID that still has state.
fn paths_json(conn: &Connection, max_paths: u32) -> String {
    let mut out = Vec::new();
    for id in 0..max_paths.saturating_add(8) {
        let id = PathId::from(id);
        let Some(s) = conn.path_stats(id) else {
            continue;
        };
        let (remote, local) = match conn.path(id) {
            Some(p) => (
                p.remote_address()
                    .map(|a| a.to_string())
                    .unwrap_or_default(),
                p.local_ip()
                    .ok()
                    .flatten()
                    .map(|a| a.to_string())
                    .unwrap_or_default(),
            ),
            None => (String::new(), String::new()),
        };
        out.push(format!(
            "{{\"id\":{id},\"local_ip\":{},\"remote\":{},\"tx_bytes\":{},\"tx_datagrams\":{},\"rx_bytes\":{},\"rx_datagrams\":{},\"lost_packets\":{},\"rtt_ms\":{:.3},\"cwnd\":{}}}",
            json_str(&local),
            json_str(&remote),
            s.udp_tx.bytes,
            s.udp_tx.datagrams,
            s.udp_rx.bytes,
            s.udp_rx.datagrams,
            s.lost_packets,
            s.rtt.as_secs_f64() * 1e3,
            s.cwnd,
        ));
    }
    format!("[{}]", out.join(","))
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}
