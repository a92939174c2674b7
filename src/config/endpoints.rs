//! What the broker connection is made from, checked the way it will be
//! used: `amqp.url` or `amqp.urls` parsed (heartbeat applied, shown with
//! the password masked), and the TLS material of the `amqp.tls_*` files
//! for `amqps://` addresses, read once and checked the way the TLS library
//! will use them, so a bad file stops the program at start with the key
//! named rather than failing every connection later.
//!
//! [`AmqpSettings::validate`] runs these checks; the broker builds its
//! connections from what they return.
//!
//! Verification itself is rustls's, through lapin: the chain must lead to
//! a CA of the system trust store or of `amqp.tls_ca_file`, and the
//! certificate must be valid for the host name (or IP address) of the URL.

use std::path::Path;

use lapin::tcp::{OwnedIdentity, OwnedTLSConfig, RustlsConnectorConfig};
use lapin::uri::{AMQPScheme, AMQPUri};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::{AmqpSettings, mask_password};

/// A setting the broker connection cannot work with; the message names
/// the key.
#[derive(Debug, thiserror::Error)]
#[error("invalid setting {key}: {reason}")]
pub struct SettingError {
    pub key: &'static str,
    pub reason: String,
}

impl SettingError {
    fn new(key: &'static str, reason: impl Into<String>) -> SettingError {
        SettingError {
            key,
            reason: reason.into(),
        }
    }
}

/// What the broker connects with: the addresses in the order of the
/// settings (at least one) and the TLS material for them; or the first
/// setting they cannot be made from.
pub(crate) fn endpoints(
    amqp: &AmqpSettings,
) -> Result<(Vec<Address>, OwnedTLSConfig), SettingError> {
    let addresses = parse_all(amqp)?;
    let tls = load_tls(amqp, &addresses)?;
    Ok((addresses, tls))
}

/// One broker node.
#[derive(Clone)]
pub(crate) struct Address {
    pub uri: AMQPUri,
    /// The URL as configured, password masked: for logs and errors.
    pub masked: String,
}

impl Address {
    pub fn is_tls(&self) -> bool {
        self.uri.scheme == AMQPScheme::AMQPS
    }
}

/// Every address in use, in the order of the settings; at least one.
fn parse_all(amqp: &AmqpSettings) -> Result<Vec<Address>, SettingError> {
    let key = amqp.addresses_key();
    amqp.addresses()
        .into_iter()
        .map(|url| {
            let masked = mask_password(url);
            // The parser's message may quote the URL: never show its password.
            let uri = amqp.parse_address(url).map_err(|e| {
                SettingError::new(key, format!("{masked}: {}", e.replace(url, &masked)))
            })?;
            Ok(Address { uri, masked })
        })
        .collect()
}

/// The TLS material for lapin, for `addresses`; empty (system CAs only, no client
/// certificate) when no `amqp.tls_*` file is set.
fn load_tls(amqp: &AmqpSettings, addresses: &[Address]) -> Result<OwnedTLSConfig, SettingError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_replace_url_and_keep_their_order() {
        let amqp = AmqpSettings {
            url: "amqp://a:secret@single/%2f".into(),
            urls: vec![
                "amqp://u:pw1@n1:5672/%2f".into(),
                "amqps://u:pw2@n2/%2f?heartbeat=5".into(),
            ],
            ..AmqpSettings::default()
        };
        let addresses = parse_all(&amqp).unwrap();
        let shown: Vec<&str> = addresses.iter().map(|a| a.masked.as_str()).collect();
        assert_eq!(
            shown,
            [
                "amqp://u:***@n1:5672/%2f",
                "amqps://u:***@n2/%2f?heartbeat=5"
            ]
        );
        assert!(!addresses[0].is_tls() && addresses[1].is_tls());
        assert_eq!(addresses[1].uri.authority.port, 5671);
        // The settings' heartbeat, unless the URL has its own.
        assert_eq!(addresses[0].uri.query.heartbeat, Some(30));
        assert_eq!(addresses[1].uri.query.heartbeat, Some(5));
        let single = parse_all(&AmqpSettings::default()).unwrap();
        assert_eq!(single.len(), 1);
        assert_eq!(single[0].masked, "amqp://guest:***@127.0.0.1:5672/%2f");
    }

    #[test]
    fn a_bad_address_is_named_without_its_password() {
        let amqp = AmqpSettings {
            urls: vec![
                "amqp://u:pw@n1/%2f".into(),
                "http://u:hunter2@n2/%2f".into(),
            ],
            ..AmqpSettings::default()
        };
        let Err(e) = parse_all(&amqp) else {
            panic!("http:// accepted")
        };
        assert_eq!(e.key, "amqp.urls");
        assert!(e.reason.contains("http://u:***@n2/%2f"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}
