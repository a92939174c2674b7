//! TLS failures of a connection, said plainly. The TLS material itself is
//! read and checked with the settings (`config`'s endpoints).

use crate::config::Address;

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
