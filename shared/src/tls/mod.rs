//! The TLS roots lineup trusts: the bundled Amazon Trust Services roots, which AWS endpoints
//! and ElastiCache's certificates chain to, and the reader of a PEM bundle that replaces them
//! (`AWS_CA_BUNDLE` for the AWS SDK, `REDIS_CA_FILE` for Redis, `JWT_CA_FILE` for the
//! gatekeeper's fetch of the buyers' JWT issuer keys).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

/// Amazon Root CA 1–4 and Starfield Services Root CA G2, from Mozilla's CA list: the roots
/// AWS endpoints and ElastiCache's certificates chain to.
pub(crate) const AMAZON_TRUST_SERVICES: &[u8] = include_bytes!("amazon-trust-services.pem");

/// A store of the roots in `pem`, or of the Amazon roots without one. `pem` was checked
/// when it was read ([`read_root_bundle`]).
pub fn root_store(pem: Option<&[u8]>) -> rustls::RootCertStore {
    let mut store = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_slice_iter(pem.unwrap_or(AMAZON_TRUST_SERVICES));
    store.add_parsable_certificates(certs.flatten());
    store
}

/// Reads the PEM file of trusted roots at `path`. A file without a usable certificate is
/// refused here, so the start stops with a reason rather than every TLS handshake failing
/// later (or, in the AWS SDK, panicking). The error is the reason, for the caller to put
/// beside the variable that named the file.
pub(crate) fn read_root_bundle(path: &str) -> Result<Vec<u8>, String> {
    let roots = std::fs::read(path).map_err(|err| format!("cannot read {path}: {err}"))?;
    check_roots(&roots)?;
    Ok(roots)
}

/// Whether `pem` holds at least one certificate and nothing but usable certificates.
fn check_roots(pem: &[u8]) -> Result<usize, String> {
    let mut store = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|err| format!("not a PEM certificate bundle ({err})"))?;
        store
            .add(cert)
            .map_err(|err| format!("holds an unusable certificate ({err})"))?;
    }
    match store.len() {
        0 => Err("holds no PEM certificate".into()),
        n => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_roots_are_the_five_amazon_trust_services_roots() {
        assert_eq!(check_roots(AMAZON_TRUST_SERVICES), Ok(5));
    }

    #[test]
    fn a_bundle_without_usable_certificates_is_refused() {
        assert!(check_roots(b"").is_err());
        assert!(check_roots(b"not a certificate").is_err());
        let mangled = String::from_utf8_lossy(AMAZON_TRUST_SERVICES).replacen("MII", "AAA", 1);
        assert!(check_roots(mangled.as_bytes()).is_err());
    }
}
