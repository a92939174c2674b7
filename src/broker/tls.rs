//! TLS for `amqps://` addresses: the CA certificates of
//! `amqp.tls_ca_file` and the client certificate of `amqp.tls_cert_file`
//! and `amqp.tls_key_file`, read once at start and checked the way the
//! TLS library will use them, so a bad file stops the program at start
//! with the key named rather than failing every connection later.
//!
//! Verification itself is rustls's, through lapin: the chain must lead to
//! a CA of the system trust store or of `amqp.tls_ca_file`, and the
//! certificate must be valid for the host name (or IP address) of the URL.

use std::path::Path;

use lapin::tcp::{OwnedIdentity, OwnedTLSConfig, RustlsConnectorConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::SettingError;
use super::address::Address;
use crate::config::AmqpSettings;

/// The TLS material for lapin; empty (system CAs only, no client
/// certificate) when no `amqp.tls_*` file is set.
pub(super) fn load(
    amqp: &AmqpSettings,
    addresses: &[Address],
) -> Result<OwnedTLSConfig, SettingError> {
    let ca = amqp
        .tls_ca_file()
        .map(|path| read_certificates("amqp.tls_ca_file", path))
        .transpose()?;
    let identity = match (amqp.tls_cert_file(), amqp.tls_key_file()) {
        (None, None) => None,
        (Some(_), None) => {
            return Err(SettingError::new(
                "amqp.tls_key_file",
                "must be set when amqp.tls_cert_file is (the client certificate's private key)",
            ));
        }
        (None, Some(_)) => {
            return Err(SettingError::new(
                "amqp.tls_cert_file",
                "must be set when amqp.tls_key_file is (the client certificate)",
            ));
        }
        (Some(cert), Some(key)) => Some((
            read_certificates("amqp.tls_cert_file", cert)?,
            read_key("amqp.tls_key_file", key)?,
        )),
    };
    let uses_tls = addresses.iter().any(Address::is_tls);
    if (ca.is_some() || identity.is_some())
        && let Some(plain) = addresses.iter().find(|a| !a.is_tls())
    {
        // The operator meant TLS: never send this login in plain text.
        return Err(SettingError::new(
            amqp.addresses_key(),
            format!(
                "{} is not amqps:// while amqp.tls_* files are set: use amqps:// for every address",
                plain.masked
            ),
        ));
    }
    if uses_tls {
        check_with_rustls(amqp, ca.as_ref(), identity.as_ref())?;
    }
    Ok(OwnedTLSConfig {
        cert_chain: ca.map(|ca| ca.pem),
        identity: identity.map(|(cert, key)| OwnedIdentity::PKCS8 {
            pem: cert.pem.into_bytes(),
            key: key.pem,
        }),
    })
}

/// A PEM file of certificates, as read.
struct Certificates {
    pem: String,
    ders: Vec<CertificateDer<'static>>,
}

/// A PEM private key, as read.
struct Key {
    pem: Vec<u8>,
    der: PrivateKeyDer<'static>,
}

fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, SettingError> {
    std::fs::read(path)
        .map_err(|e| SettingError::new(key, format!("cannot read {}: {e}", path.display())))
}

fn read_certificates(key: &'static str, path: &Path) -> Result<Certificates, SettingError> {
    let bytes = read(key, path)?;
    let ders = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| SettingError::new(key, format!("{} is not valid PEM: {e}", path.display())))?;
    if ders.is_empty() {
        return Err(SettingError::new(
            key,
            format!(
                "{} holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\"; a DER file \
                 converts with `openssl x509 -inform der -in FILE -out FILE.pem`)",
                path.display()
            ),
        ));
    }
    let pem = String::from_utf8(bytes).map_err(|_| {
        SettingError::new(
            key,
            format!("{} is not valid PEM: not text", path.display()),
        )
    })?;
    Ok(Certificates { pem, ders })
}

fn read_key(key: &'static str, path: &Path) -> Result<Key, SettingError> {
    let pem = read(key, path)?;
    let der = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
        SettingError::new(
            key,
            format!(
                "{} holds no valid PEM private key (PKCS#8, PKCS#1 or SEC1, not encrypted): {e}",
                path.display()
            ),
        )
    })?;
    Ok(Key { pem, der })
}

/// Builds the TLS client configuration as each connection will, so what
/// rustls rejects (no usable CA certificate, a key that is not the
/// certificate's, no system CA store) is known now.
fn check_with_rustls(
    amqp: &AmqpSettings,
    ca: Option<&Certificates>,
    identity: Option<&(Certificates, Key)>,
) -> Result<(), SettingError> {
    if let Some(ca) = ca {
        RustlsConnectorConfig::default()
            .with_parsable_certificates(ca.ders.clone())
            .connector_with_no_client_auth()
            .map_err(|e| {
                SettingError::new(
                    "amqp.tls_ca_file",
                    format!("{}: no usable CA certificate: {e}", amqp.tls_ca_file),
                )
            })?;
    }
    let mut config = RustlsConnectorConfig::new_with_native_certs().map_err(|e| {
        SettingError::new(
            amqp.addresses_key(),
            format!(
                "amqps:// needs the system's CA certificates (even with amqp.tls_ca_file), \
                 and none could be loaded: {e} (install ca-certificates, or set SSL_CERT_FILE)"
            ),
        )
    })?;
    if let Some(ca) = ca {
        config.add_parsable_certificates(ca.ders.clone());
    }
    match identity {
        None => config.connector_with_no_client_auth().map(drop),
        Some((cert, key)) => config
            .connector_with_single_cert(cert.ders.clone(), key.der.clone_key())
            .map(drop),
    }
    .map_err(|e| {
        SettingError::new(
            if identity.is_some() {
                "amqp.tls_key_file"
            } else {
                "amqp.tls_ca_file"
            },
            if identity.is_some() {
                format!("rejected by TLS with amqp.tls_cert_file: {e}")
            } else {
                format!("rejected by TLS: {e}")
            },
        )
    })
}

/// A connection error whose cause is TLS said plainly, with the TLS
/// library's words for the problem (an unknown issuer, a certificate not
/// valid for the host, ...) and a hint; any other error as it is.
pub(super) fn explain(error: lapin::Error, address: &Address) -> anyhow::Error {
    let lapin::ErrorKind::IOError(io) = error.kind() else {
        return error.into();
    };
    if !address.is_tls() || io.kind() != std::io::ErrorKind::InvalidData {
        return error.into();
    }
    let problem = io.to_string();
    let host = &address.uri.authority.host;
    let hint = if problem.contains("peer certificate") {
        format!(
            "the broker's certificate must lead to a CA of the system or of amqp.tls_ca_file, \
             and be valid for {host}"
        )
    } else if problem.contains("CertificateRequired") {
        "the broker wants a client certificate: set amqp.tls_cert_file and amqp.tls_key_file"
            .to_string()
    } else if problem.contains("corrupt message") {
        "the broker did not answer in TLS: is the port its TLS port (5671 by convention)?"
            .to_string()
    } else {
        "the TLS handshake failed".to_string()
    };
    anyhow::anyhow!("TLS with {host} failed: {problem} ({hint})")
}
