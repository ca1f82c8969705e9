//! Certificates for the `rediss://` suite: a CA made for the test run and a server
//! certificate from it, as files `redis-server` and `REDIS_CA_FILE` can name. The servers
//! that use them keep their plaintext port too, for the tests' own inspection.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

/// The host name the single server's certificate is for; its IP address is deliberately not
/// in it.
pub const CERTIFIED_HOST: &str = "localhost";

/// The files; deleted when dropped, so kept while a server may (re)start from them.
pub struct Certificates {
    _dir: tempfile::TempDir,
    /// The CA's certificate (PEM): what `REDIS_CA_FILE` names to trust the servers.
    pub ca_file: PathBuf,
    cert_file: PathBuf,
    key_file: PathBuf,
}

impl Certificates {
    /// A fresh CA, and a server certificate from it naming `names` (host names or IP
    /// addresses).
    pub fn issue(names: &[&str]) -> Certificates {
        let dir = tempfile::tempdir().expect("a directory for the certificates");
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca.distinguished_name
            .push(DnType::CommonName, "lineup test CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(ca, ca_key).expect("CA certificate");
        let server_key = KeyPair::generate().expect("server key");
        let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
        let server_cert = CertificateParams::new(names)
            .expect("server parameters")
            .signed_by(&server_key, &ca)
            .expect("server certificate");

        let ca_file = dir.path().join("ca.pem");
        let cert_file = dir.path().join("server.pem");
        let key_file = dir.path().join("server.key");
        std::fs::write(&ca_file, ca.pem()).expect("write ca.pem");
        std::fs::write(&cert_file, server_cert.pem()).expect("write server.pem");
        std::fs::write(&key_file, server_key.serialize_pem()).expect("write server.key");
        Certificates {
            _dir: dir,
            ca_file,
            cert_file,
            key_file,
        }
    }

    /// `redis-server` arguments that serve TLS on `tls_port` with this certificate (clients
    /// need none of their own).
    pub fn server_args(&self, tls_port: u16) -> Vec<String> {
        let mut args = vec!["--tls-port".to_string(), tls_port.to_string()];
        for (flag, file) in [
            ("--tls-cert-file", &self.cert_file),
            ("--tls-key-file", &self.key_file),
            ("--tls-ca-cert-file", &self.ca_file),
        ] {
            args.push(flag.to_string());
            args.push(path(file).to_string());
        }
        args.extend(["--tls-auth-clients".to_string(), "no".to_string()]);
        args
    }

    /// `REDIS_CA_FILE`'s value.
    pub fn ca_path(&self) -> &str {
        path(&self.ca_file)
    }
}

fn path(file: &Path) -> &str {
    file.to_str().expect("a UTF-8 temporary path")
}
