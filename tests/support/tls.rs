//! A private `redis-server` that speaks TLS, with a certificate from a CA made for the test
//! run: the only server the `rediss://` suite talks to. It keeps a plaintext port too, for
//! the tests' own inspection.

use std::path::PathBuf;

use lineup::embedded_redis::EmbeddedRedis;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

/// The host name the server's certificate is for; its IP address is deliberately not in it.
pub const CERTIFIED_HOST: &str = "localhost";

/// The server, and the files its TLS port was started with.
pub struct TlsRedis {
    pub server: EmbeddedRedis,
    pub tls_port: u16,
    /// The CA's certificate (PEM): what `REDIS_CA_FILE` names to trust the server.
    pub ca_file: PathBuf,
    /// Holds the certificate files, which the server reads again when restarted.
    pub files: tempfile::TempDir,
}

impl TlsRedis {
    pub async fn start() -> TlsRedis {
        let files = tempfile::tempdir().expect("a directory for the certificates");
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca.distinguished_name
            .push(DnType::CommonName, "lineup test CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(ca, ca_key).expect("CA certificate");
        let server_key = KeyPair::generate().expect("server key");
        let server_cert = CertificateParams::new(vec![CERTIFIED_HOST.to_string()])
            .expect("server parameters")
            .signed_by(&server_key, &ca)
            .expect("server certificate");

        let ca_file = files.path().join("ca.pem");
        let cert_file = files.path().join("server.pem");
        let key_file = files.path().join("server.key");
        std::fs::write(&ca_file, ca.pem()).expect("write ca.pem");
        std::fs::write(&cert_file, server_cert.pem()).expect("write server.pem");
        std::fs::write(&key_file, server_key.serialize_pem()).expect("write server.key");

        let tls_port = free_port();
        let server = EmbeddedRedis::start_on_port(
            free_port(),
            &[
                "--tls-port",
                &tls_port.to_string(),
                "--tls-cert-file",
                path(&cert_file),
                "--tls-key-file",
                path(&key_file),
                "--tls-ca-cert-file",
                path(&ca_file),
                "--tls-auth-clients",
                "no",
            ],
        )
        .await
        .expect("redis-server with TLS (a build with TLS support)");
        TlsRedis {
            server,
            tls_port,
            ca_file,
            files,
        }
    }
}

fn path(file: &std::path::Path) -> &str {
    file.to_str().expect("a UTF-8 temporary path")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}
