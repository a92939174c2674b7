//! The broker addresses: `amqp.urls`, or `amqp.url` alone when the list is
//! empty, each parsed with the heartbeat applied and shown with its
//! password masked; and where a process starts walking them.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

use lapin::uri::{AMQPScheme, AMQPUri};

use super::SettingError;
use crate::config::{AmqpSettings, mask_password};

/// One broker node.
#[derive(Clone)]
pub(super) struct Address {
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
pub(super) fn parse_all(amqp: &AmqpSettings) -> Result<Vec<Address>, SettingError> {
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

/// A random index below `count` (at least 1), different from process to
/// process: the standard library's per-process random hash keys, so no
/// extra dependency.
pub(super) fn random_start(count: usize) -> usize {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    (hasher.finish() % count.max(1) as u64) as usize
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

    #[test]
    fn the_start_is_an_index_of_the_list() {
        for count in 1..5 {
            assert!(random_start(count) < count);
        }
        assert_eq!(random_start(0), 0);
    }
}
